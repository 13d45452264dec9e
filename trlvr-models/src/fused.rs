//! The attention's softmax and the MLP's SwiGLU as single autodiff operations.
//!
//! Burn 0.22's autodiff runs a softmax as five tracked ops (max, subtract, exp, sum,
//! divide) and SwiGLU as a sigmoid and two products, and its `exp` and `sigmoid` backward
//! compute their exps a second time. On a small model's training step those passes over
//! memory, and the exps (a scalar `expf` per element on flex), take much of the time.
//! Here each is one operation: its forward is the inference computation itself, so a
//! tracked forward equals an untracked one bit for bit, and its backward reuses what the
//! forward kept instead of recomputing exps:
//!
//! - softmax `p`: `dx = p ⊙ (dp − rowsum(dp ⊙ p))`, keeping `p` (Burn keeps its input,
//!   its exps and their sum);
//! - SwiGLU `y = silu(g) ⊙ u` with `s = σ(g)`: `du = dy ⊙ silu(g)`,
//!   `dg = dy ⊙ u ⊙ (s + silu(g) ⊙ (1 − s))`, keeping `u`, `s` and `silu(g)` (Burn keeps
//!   `g` twice, `s`, `silu(g)` and `u`).
//!
//! The forwards: on flex in f32, this crate's kernels (`kernels/fused.rs`: SIMD exponentials
//! across Rayon's threads, where flex takes one scalar `expf` per element); elsewhere the
//! backend's softmax and `silu(gate) * up`.

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, DispatchKindConversion, DispatchTensor, backend_extension};
use burn::prelude::*;
#[cfg(any(feature = "tch", feature = "cube"))]
use burn::tensor::activation::sigmoid;
use burn::tensor::{BackendPrimitive, Float};

/// Softmax over the last axis of `x`, `[batch, heads, rows, keys]`. Untracked tensors
/// take the backend's softmax too (on an autodiff device Burn would decompose it), so a
/// row's probabilities do not depend on whether gradients are being taken.
pub(crate) fn softmax(x: Tensor<4>) -> Tensor<4> {
    Tensor::from_dispatch(<Dispatch as Fused>::fused_softmax(x.into_dispatch()))
}

/// `silu(gate) ⊙ up`, `[batch, seq, intermediate]` each.
pub(crate) fn swiglu(gate: Tensor<3>, up: Tensor<3>) -> Tensor<3> {
    Tensor::from_dispatch(<Dispatch as Fused>::fused_swiglu(gate.into_dispatch(), up.into_dispatch()))
}

#[allow(deprecated)] // the generated LibTorch arm: burn-tch is deprecated in Burn 0.22
mod op {
    use super::{Backend, FloatTensor, backend_extension};

    /// The two operations as backend operations, so their backward can be written by hand.
    #[backend_extension(
        Flex: cfg(feature = "flex"),
        LibTorch: cfg(feature = "tch"),
        Cube: cfg(feature = "cube"),
        Autodiff
    )]
    pub trait Fused: Backend {
        /// [`softmax`](super::softmax) of a rank-4 tensor.
        fn fused_softmax(x: FloatTensor<Self>) -> FloatTensor<Self>;
        /// [`swiglu`](super::swiglu) of two rank-3 tensors.
        fn fused_swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self>;
    }
}

pub(crate) use op::Fused;

/// A backend primitive as a tensor of the high-level API (on that backend's device,
/// outside autodiff), and back: the custom operations here and the blocked attention's
/// compute with tensor ops on the inner backend.
pub(crate) fn wrap<B: Backend, const D: usize>(x: FloatTensor<B>) -> Tensor<D>
where
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    Tensor::from_primitive::<B>(x)
}

pub(crate) fn unwrap<B: Backend, const D: usize>(x: Tensor<D>) -> FloatTensor<B>
where
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    x.try_into_primitive::<B>().expect("the tensor stays on its backend")
}

/// σ as each backend's SwiGLU forward computes it: a tracked forward keeps it for the
/// backward and must give the untracked forward's values bit for bit.
pub(crate) trait Sigmoid: Backend {
    fn swiglu_sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// Backends whose forwards are Burn's own ops.
macro_rules! burns_ops {
    ($($backend:ty: $feature:literal),*) => {$(
        #[cfg(feature = $feature)]
        #[allow(deprecated)] // burn-tch is deprecated in Burn 0.22; LibTorch stays an option here
        impl Fused for $backend {
            fn fused_softmax(x: FloatTensor<Self>) -> FloatTensor<Self> {
                unwrap::<Self, 4>(burn::tensor::activation::softmax(wrap::<Self, 4>(x), 3))
            }
            fn fused_swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self> {
                unwrap::<Self, 3>(burn::tensor::activation::silu(wrap::<Self, 3>(gate)) * wrap::<Self, 3>(up))
            }
        }

        #[cfg(feature = $feature)]
        #[allow(deprecated)]
        impl Sigmoid for $backend {
            fn swiglu_sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
                unwrap::<Self, 3>(sigmoid(wrap::<Self, 3>(x)))
            }
        }
    )*};
}

burns_ops!(burn::backend::LibTorch: "tch", burn::backend::Cube: "cube");

#[derive(Debug)]
struct SoftmaxBackward;

impl<B: Backend> Backward<B, 1> for SoftmaxBackward
where
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    /// The probabilities.
    type State = FloatTensor<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let d_p = wrap::<B, 4>(grads.consume::<B>(&ops.node));
        let p = wrap::<B, 4>(ops.state);
        let [parent] = ops.parents;
        if let Some(node) = parent {
            let dot = (d_p.clone() * p.clone()).sum_dim(3);
            grads.register::<B>(node.id, unwrap::<B, 4>(p * (d_p - dot)));
        }
    }
}

#[derive(Debug)]
struct SwigluBackward;

/// What SwiGLU's backward keeps: `up`, `σ(gate)` and `silu(gate)`.
#[derive(Clone, Debug)]
struct SwigluState<T> {
    up: T,
    sigmoid: T,
    silu: T,
}

impl<B: Backend> Backward<B, 2> for SwigluBackward
where
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    type State = SwigluState<FloatTensor<B>>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let d_y = wrap::<B, 3>(grads.consume::<B>(&ops.node));
        let (up, s, silu) =
            (wrap::<B, 3>(ops.state.up), wrap::<B, 3>(ops.state.sigmoid), wrap::<B, 3>(ops.state.silu));
        let [gate_node, up_node] = ops.parents;
        if let Some(node) = gate_node {
            let slope = s.clone() + silu.clone() * s.neg().add_scalar(1.0);
            grads.register::<B>(node.id, unwrap::<B, 3>(d_y.clone() * up * slope));
        }
        if let Some(node) = up_node {
            grads.register::<B>(node.id, unwrap::<B, 3>(d_y * silu));
        }
    }
}

impl<B, C> Fused for Autodiff<B, C>
where
    B: Backend + Fused + Sigmoid,
    C: CheckpointStrategy,
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    fn fused_softmax(x: FloatTensor<Self>) -> FloatTensor<Self> {
        match SoftmaxBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let p = B::fused_softmax(x.primitive().clone());
                prep.finish(p.clone(), p)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::fused_softmax(x.into_primitive())),
        }
    }

    fn fused_swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self> {
        match SwigluBackward.prepare::<C>([gate.node(), up.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let g = wrap::<B, 3>(gate.primitive().clone());
                let u = wrap::<B, 3>(up.primitive().clone());
                // `silu` is `g · σ(g)`: the same ops as the untracked forward.
                let s = wrap::<B, 3>(B::swiglu_sigmoid(gate.primitive().clone()));
                let silu = g * s.clone();
                let y = unwrap::<B, 3>(silu.clone() * u.clone());
                let state = SwigluState {
                    up: unwrap::<B, 3>(u),
                    sigmoid: unwrap::<B, 3>(s),
                    silu: unwrap::<B, 3>(silu),
                };
                prep.finish(state, y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::fused_swiglu(gate.into_primitive(), up.into_primitive()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Distribution;
    use burn::tensor::activation::silu;

    fn values<const D: usize>(x: Tensor<D>) -> Vec<f32> {
        x.into_data().try_to_vec::<f32>().unwrap()
    }

    fn worst(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    /// `x` on the autodiff device, tracked.
    fn tracked<const D: usize>(x: &Tensor<D>) -> Tensor<D> {
        Tensor::from_data(x.to_data(), &Device::flex().autodiff()).require_grad()
    }

    /// Values and gradients equal Burn's own ops; the tracked forward equals flex's
    /// softmax bit for bit; masked entries (−∞) get probability and gradient 0.
    #[test]
    fn softmax_equals_burns_ops() {
        let device = Device::flex();
        let x = Tensor::<4>::random([2, 3, 5, 7], Distribution::Normal(0.0, 2.0), &device);
        let hidden = Tensor::<1, Int>::arange(0..7, &device).reshape([1, 1, 1, 7]).greater_elem(4);
        let x = x.mask_fill(hidden.expand([2, 3, 5, 7]), f32::NEG_INFINITY);
        let w = Tensor::<4>::random([2, 3, 5, 7], Distribution::Normal(0.0, 1.0), &device);
        let run = |fused: bool| {
            let x = tracked(&x);
            let p = if fused { softmax(x.clone()) } else { burn::tensor::activation::softmax(x.clone(), 3) };
            let grads = (p.clone() * tracked(&w).detach()).sum().backward();
            (values(p), values(x.grad(&grads).unwrap()))
        };
        let ((p, dx), (p_ref, dx_ref)) = (run(true), run(false));
        assert_eq!(p, values(softmax(x.clone())));
        assert_eq!(p, values(softmax(tracked(&x).detach())), "untracked on the autodiff device");
        assert!(worst(&p, &p_ref) < 1e-6, "{}", worst(&p, &p_ref));
        assert!(worst(&dx, &dx_ref) < 1e-5, "{}", worst(&dx, &dx_ref));
        let masked: Vec<f32> = dx.chunks(7).flat_map(|row| row[5..].to_vec()).collect();
        assert!(masked.iter().all(|d| *d == 0.0), "{masked:?}");
    }

    /// Values and gradients equal `silu(gate) * up` through Burn's autodiff, the forward
    /// bit for bit.
    #[test]
    fn swiglu_equals_burns_ops() {
        let device = Device::flex();
        let gate = Tensor::<3>::random([2, 4, 6], Distribution::Normal(0.0, 3.0), &device);
        let up = Tensor::<3>::random([2, 4, 6], Distribution::Normal(0.0, 1.0), &device);
        let w = Tensor::<3>::random([2, 4, 6], Distribution::Normal(0.0, 1.0), &device);
        let run = |fused: bool| {
            let (g, u) = (tracked(&gate), tracked(&up));
            let y = if fused { swiglu(g.clone(), u.clone()) } else { silu(g.clone()) * u.clone() };
            let grads = (y.clone() * tracked(&w).detach()).sum().backward();
            (values(y), values(g.grad(&grads).unwrap()), values(u.grad(&grads).unwrap()))
        };
        let ((y, dg, du), (y_ref, dg_ref, du_ref)) = (run(true), run(false));
        assert_eq!(y, values(swiglu(gate.clone(), up.clone())));
        assert!(worst(&y, &y_ref) < 1e-5, "{}", worst(&y, &y_ref));
        assert!(worst(&dg, &dg_ref) < 1e-5, "{}", worst(&dg, &dg_ref));
        assert!(worst(&du, &du_ref) < 1e-5, "{}", worst(&du, &du_ref));
    }

    /// Flex's kernels against f64 over the whole range (σ saturates past ±88 and flushes
    /// below the normal floats), with lengths that leave a tail in a lane group and in a
    /// task: every element within a few units in the last place, and the same bits
    /// wherever it sits in the tensor.
    #[test]
    fn flex_kernels_match_f64() {
        let device = Device::flex();
        let n = 2 * (1 << 14) + 13;
        let g: Vec<f32> = (0..n).map(|i| ((i * 7919) % 20011) as f32 / 100.0 - 100.0).collect();
        let u: Vec<f32> = (0..n).map(|i| ((i * 104_729) % 997) as f32 / 500.0 - 1.0).collect();
        let run = |from: usize| {
            let t = |v: &[f32]| {
                Tensor::<3>::from_data(TensorData::new(v[from..].to_vec(), [1, 1, n - from]), &device)
            };
            values(swiglu(t(&g), t(&u)))
        };
        let (y, shifted) = (run(0), run(3));
        assert_eq!(y[3..], shifted[..], "an element's value depends on its place");
        for ((y, g), u) in y.iter().zip(&g).zip(&u) {
            let (g, u) = (f64::from(*g), f64::from(*u));
            let want = g / (1.0 + (-g).exp()) * u;
            let error = (f64::from(*y) - want).abs();
            assert!(
                error <= 4e-7 * want.abs() + (g * u).abs() * 1.2e-38,
                "swiglu({g}, {u}) = {y}, want {want}"
            );
        }
        // Softmax rows of 77 (a tail of 5 lanes), the last 7 entries masked.
        let (rows, width) = (600, 77);
        let x: Vec<f32> = (0..rows * width)
            .map(|i| if i % width >= 70 { f32::NEG_INFINITY } else { ((i * 31) % 1000) as f32 / 50.0 - 10.0 })
            .collect();
        let p =
            values(softmax(Tensor::<4>::from_data(TensorData::new(x.clone(), [2, 3, 100, width]), &device)));
        for (p, x) in p.chunks(width).zip(x.chunks(width)) {
            let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f64 = x.iter().map(|&v| f64::from(v - max).exp()).sum();
            for (p, x) in p.iter().zip(x) {
                let want = f64::from(x - max).exp() / sum;
                assert!((f64::from(*p) - want).abs() <= 1e-6 * want + 1e-12, "{p} against {want}");
            }
            assert!(p[70..].iter().all(|&p| p == 0.0));
        }
    }
}
