//! Linear layers and RMSNorm as the forward pass runs them: in the activations' dtype,
//! and with products oriented for the few rows of a decode step.
//!
//! Below both the attention and the decoder, which share them.

use burn::nn::{Linear, RmsNorm};
use burn::prelude::*;
use burn::tensor::DType;

use crate::kernels;

/// Row counts up to which the tied LM head multiplies as `(E · xᵀ)ᵀ`
/// ([`Decoder::lm_head`](crate::Decoder::lm_head)).
pub(crate) const FEW_ROWS: usize = 64;

/// Rows up to which [`project`] multiplies a weight in the decode layout as
/// `(weightᵀ · xᵀ)ᵀ`.
const FLIPPED_ROWS: usize = 256;

/// `x · weight + bias`, like [`Linear::forward`] but fast for the few rows of a decode
/// step.
///
/// On the CPU a weight in [`Decoder::with_decode_layout`] takes up to
/// [`kernels::STREAMED_ROWS`] rows through [`kernels::project`], and up to [`FLIPPED_ROWS`]
/// as `(weightᵀ · xᵀ)ᵀ`, where its `[out, in]` storage is the gemm's contiguous left
/// operand (a 1536 x 576 weight at 64 rows: 0.9 ms, 3.0 ms as `x · W`). Other weights
/// take one row as `(weightᵀ · xᵀ)ᵀ` (the gemm then streams the weight without packing
/// it, about 10% faster on the SmolLM2-135M shapes) and more as `x · W`. On x86-64,
/// more rows go to the kernels' gemm in any layout.
///
/// [`Decoder::with_decode_layout`]: crate::Decoder::with_decode_layout
///
/// # Shapes
/// - `x`: `[batch, seq, in]`, `weight`: `[in, out]`, `bias`: `[out]` -> `[batch, seq, out]`
pub(crate) fn project(x: Tensor<3>, weight: Tensor<2>, bias: Option<Tensor<1>>) -> Tensor<3> {
    let [b, t, d] = x.dims();
    let [_, out] = weight.dims();
    if let Some(y) = kernels::project(&x.clone().reshape([b * t, d]), &weight, bias.as_ref()) {
        return y.reshape([b, t, out]);
    }
    let flip = match b * t {
        1 => true,
        rows => rows <= FLIPPED_ROWS && kernels::in_decode_layout(&weight),
    };
    let x = x.reshape([b * t, d]);
    // In two dimensions: a weight in the decode layout is a transposed view, which the
    // gemm reads by its strides; `module::linear` would first copy it into a batch of one.
    let y = if flip { weight.transpose().matmul(x.transpose()).transpose() } else { x.matmul(weight) }; // [b * t, out]
    let y = match bias {
        Some(bias) => y + bias.unsqueeze_dim(0),
        None => y,
    };
    y.reshape([b, t, out])
}

/// [`Linear::forward`] as the decoder runs it: its weights cast to `x`'s dtype (a no-op
/// unless the decoder computes in another dtype than its weights'), few rows and many
/// rows taken by the CPU's own products. Public for heads built on a [`crate::Decoder`]
/// and for the decode bench, which times the products alone.
pub fn linear(layer: &Linear, x: Tensor<3>) -> Tensor<3> {
    let dtype = x.dtype();
    project(x, layer.weight.val().cast(dtype), layer.bias.as_ref().map(|b| b.val().cast(dtype)))
}

/// `silu(gate) ⊙ linear(layer, x)`, the MLP's hidden activation: on the CPU a prefill's
/// product is gated a part at a time while the part is in cache
/// ([`kernels::project_gated`]; SmolLM2's batch-8 prefill spent 4% of its time on the
/// SwiGLU's own pass), otherwise [`crate::fused::swiglu`] of the product; the same
/// values either way.
///
/// # Shapes
/// - `x`: `[batch, seq, in]`, `gate`: `[batch, seq, out]` -> `[batch, seq, out]`
pub(crate) fn gated_linear(layer: &Linear, x: Tensor<3>, gate: Tensor<3>) -> Tensor<3> {
    let [b, t, d] = x.dims();
    let out = gate.dims()[2];
    if layer.bias.is_none()
        && let Some(y) = kernels::project_gated(
            &x.clone().reshape([b * t, d]),
            &layer.weight.val(),
            &gate.clone().reshape([b * t, out]),
        )
    {
        return y.reshape([b, t, out]);
    }
    crate::fused::swiglu(gate, linear(layer, x))
}

/// [`RmsNorm::forward`] with the gain cast to `x`'s dtype: the mean square in f32, the
/// division and the gain in `x`'s dtype.
pub(crate) fn norm<const D: usize>(layer: &RmsNorm, x: Tensor<D>) -> Tensor<D> {
    let dtype = x.dtype();
    let rms = (x.clone().cast(DType::F32).square().mean_dim(D - 1) + layer.epsilon).sqrt();
    (x / rms.cast(dtype)) * layer.gamma.val().cast(dtype).unsqueeze()
}

#[cfg(test)]
mod tests {
    use burn::nn::LinearConfig;
    use burn::tensor::Distribution;

    use super::*;

    fn max_diff(a: Tensor<3>, b: Tensor<3>) -> f32 {
        (a - b).abs().max().into_scalar::<f32>()
    }

    #[test]
    fn few_row_projection_matches_linear() {
        let device = Device::default();
        let layer = LinearConfig::new(16, 24).with_bias(true).init(&device);
        for [b, t] in [[1, 1], [2, 3], [8, 1], [3, FEW_ROWS]] {
            let x = Tensor::<3>::random([b, t, 16], Distribution::Default, &device);
            let diff = max_diff(linear(&layer, x.clone()), layer.forward(x));
            assert!(diff < 1e-5, "[{b}, {t}]: {diff}");
        }
    }
}
