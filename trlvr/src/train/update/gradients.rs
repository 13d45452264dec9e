//! Passes over every trainable parameter's gradient: zeros, the sum over ranks through
//! one flat buffer, and the global-norm clip. Burn's own clipping works per tensor.

use std::collections::HashSet;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::DType;

use crate::collective::Collective;
use crate::objective::host;
use crate::{Error, Result};

/// The sum over ranks of every parameter's gradient (zero where a rank has none), in one
/// flat host buffer, written back on the parameters' devices and dtypes; and the buffer's
/// bytes.
pub(super) fn sum_over_ranks<M: Module>(
    module: &M,
    grads: GradientsParams,
    ranks: &dyn Collective,
) -> Result<(GradientsParams, usize)> {
    let mut flat = Flatten { grads, seen: HashSet::new(), values: Vec::new(), error: None };
    module.visit(&mut flat);
    if let Some(e) = flat.error {
        return Err(e);
    }
    let Flatten { grads, mut values, .. } = flat;
    ranks.sum_f32(&mut values)?;
    let mut back = Unflatten { grads, seen: HashSet::new(), values: &values, at: 0 };
    module.visit(&mut back);
    Ok((back.grads, 4 * values.len()))
}
/// Divides gradients formed at `loss_scale` by it and scales them all together so their
/// global L2 norm is at most `max_norm` (0 = no clipping), in one pass; returns the
/// unscaled norm before clipping, and the gradients untouched when it is not finite.
/// Burn's own clipping works per tensor.
pub(super) fn unscale_and_clip<M: Module>(
    module: &M,
    mut grads: GradientsParams,
    loss_scale: f64,
    max_norm: f64,
) -> Result<(GradientsParams, f64)> {
    let mut squares = SquaredNorm { grads: &grads, seen: HashSet::new(), total: None };
    module.visit(&mut squares);
    let norm = match squares.total {
        Some(total) => f64::from(host(total)?[0]).sqrt() / loss_scale,
        None => 0.0,
    };
    if !norm.is_finite() {
        return Ok((grads, norm));
    }
    let clip = if max_norm > 0.0 && norm > max_norm { max_norm / (norm + 1e-6) } else { 1.0 };
    let factor = clip / loss_scale;
    if factor != 1.0 {
        module.visit(&mut Scale { grads: &mut grads, seen: HashSet::new(), factor });
    }
    Ok((grads, norm))
}

/// A zero gradient for every parameter that trains.
pub(super) fn zero_grads<M: Module>(module: &M) -> GradientsParams {
    let mut zeros = Zeros { grads: GradientsParams::new(), seen: HashSet::new() };
    module.visit(&mut zeros);
    zeros.grads
}

struct Zeros {
    grads: GradientsParams,
    seen: HashSet<ParamId>,
}

impl ModuleVisitor for Zeros {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val();
        if self.seen.insert(param.id) && value.is_require_grad() {
            self.grads.register(param.id, value.inner().zeros_like());
        }
    }
}

/// Every trainable parameter's gradient (zero where absent) appended to one f32 buffer,
/// in visiting order; the gradients are taken out.
struct Flatten {
    grads: GradientsParams,
    seen: HashSet<ParamId>,
    values: Vec<f32>,
    error: Option<Error>,
}

impl ModuleVisitor for Flatten {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val();
        if self.error.is_some() || !self.seen.insert(param.id) || !value.is_require_grad() {
            return;
        }
        let grad = self.grads.remove::<D>(param.id).unwrap_or_else(|| value.inner().zeros_like());
        match host(grad.cast(DType::F32)) {
            Ok(values) => self.values.extend(values),
            Err(e) => self.error = Some(e),
        }
    }
}

/// [`Flatten`] undone: each parameter's slice of the buffer as its gradient.
struct Unflatten<'v> {
    grads: GradientsParams,
    seen: HashSet<ParamId>,
    values: &'v [f32],
    at: usize,
}

impl ModuleVisitor for Unflatten<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val();
        if !self.seen.insert(param.id) || !value.is_require_grad() {
            return;
        }
        let shape = value.shape();
        let n = shape.num_elements();
        let data = TensorData::new(self.values[self.at..self.at + n].to_vec(), shape);
        self.at += n;
        let inner = value.inner();
        let grad = Tensor::<D>::from_data(data, (&inner.device(), DType::F32)).cast(inner.dtype());
        self.grads.register(param.id, grad);
    }
}

struct SquaredNorm<'g> {
    grads: &'g GradientsParams,
    seen: HashSet<ParamId>,
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if !self.seen.insert(param.id) {
            return;
        }
        if let Some(grad) = self.grads.get::<D>(param.id) {
            // Summed in f32 whatever the weights' dtype.
            let squares = grad.cast(DType::F32).square().sum();
            self.total = Some(match self.total.take() {
                Some(total) => total + squares,
                None => squares,
            });
        }
    }
}

struct Scale<'g> {
    grads: &'g mut GradientsParams,
    seen: HashSet<ParamId>,
    factor: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if !self.seen.insert(param.id) {
            return;
        }
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, grad * self.factor);
        }
    }
}
