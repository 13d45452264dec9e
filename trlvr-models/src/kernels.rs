//! The CPU kernels, behind one interface: the places where the flex backend's own ops
//! leave most of the CPU unused (a decode step reading its weights, a prefill's products,
//! exponentials one scalar at a time, attention as several passes over memory).
//!
//! Every function here returns `None` (or the tensor unchanged) where its kernel does not
//! apply, and the caller runs Burn's tensor ops: another backend, another dtype, a tracked
//! tensor, a shape the kernel does not take. The model files (layers, decoder, rope,
//! attention, fused) call only this file; the `cfg` gates on the backend and the CPU's
//! architecture, and the conversions to flex's own tensors, live below it.
//!
//! | Work | Kernel | Where it runs |
//! |------|--------|---------------|
//! | projection of up to [`STREAMED_ROWS`] rows (a decode step) | `few_rows.rs` | flex, f32, a weight of at least 64 Ki floats in [`decode_layout`]; any CPU (`pulp` SIMD) |
//! | projection of more rows (prefill, scoring, LM head) | `many_rows.rs` | flex, f32, x86-64 (`private-gemm-x86`); a frozen weight in the decode layout on AVX-512 skips the repacking (`many_rows/avx512.rs`) |
//! | gated projection, `silu(gate) ⊙ x · W` | `many_rows.rs` | as above, more than [`STREAMED_ROWS`] rows |
//! | attention of a decode step | `decode.rs` | flex, f32, untracked; any CPU |
//! | attention of a prefill, in causal blocks | `prefill.rs` | flex, f32, untracked, x86-64 |
//! | softmax and SwiGLU (the fused operations' forwards) | `fused.rs` | flex, f32 (SIMD exponentials) |
//! | rotary embedding, moved heads-first and scaled | `rope.rs` | flex, f32, contiguous |
//!
//! Why each exists is in its file's doc; the measured figures are in the performance
//! page (docs/performance.md). Each kernel sums every output in one order whatever the
//! batch or the threads, so a sequence's values do not depend on the rest of its batch,
//! and each file's tests compare it with Burn's ops (bit for bit where the order is the
//! same).

use burn::prelude::*;

use crate::cache::CausalMask;

mod decode;
mod few_rows;
#[cfg(feature = "flex")]
mod fused;
mod many_rows;
mod prefill;
#[cfg(feature = "flex")]
mod rope;

pub(crate) use few_rows::{decode_layout, in_decode_layout, on_flex};

/// Rows up to which a product streams its weight row by row ([`project`]); beyond, a
/// gemm is faster.
pub(crate) const STREAMED_ROWS: usize = few_rows::MAX_ROWS;

/// `x · weight + bias` by this crate's kernels: up to [`STREAMED_ROWS`] rows streaming
/// a weight in [`decode_layout`], more by the x86-64 gemm; `None` where neither takes it.
///
/// # Shapes
/// - `x`: `[rows, in]`, `weight`: `[in, out]`, `bias`: `[out]` -> `[rows, out]`
pub(crate) fn project(x: &Tensor<2>, weight: &Tensor<2>, bias: Option<&Tensor<1>>) -> Option<Tensor<2>> {
    match x.dims()[0] <= STREAMED_ROWS {
        true => few_rows::project(x, weight, bias),
        false => many_rows::project(x, weight, bias),
    }
}

/// `silu(gate) ⊙ (x · weight)`, gated a part at a time while the part is in cache; more
/// than [`STREAMED_ROWS`] rows on x86-64, `None` otherwise.
///
/// # Shapes
/// - `x`: `[rows, in]`, `weight`: `[in, out]`, `gate`: `[rows, out]` -> `[rows, out]`
pub(crate) fn project_gated(x: &Tensor<2>, weight: &Tensor<2>, gate: &Tensor<2>) -> Option<Tensor<2>> {
    match x.dims()[0] <= STREAMED_ROWS {
        true => None,
        false => many_rows::project_gated(x, weight, gate),
    }
}

/// A decode step's attention, one pass per query row: `softmax(q · keysᵀ, hidden
/// masked) · values`, or `None` where the kernel does not apply.
///
/// # Shapes
/// - `q`: `[batch, kv_heads, group * t, hd]` (scaled, group-major like the mask),
///   `keys`/`values`: `[batch, kv_heads, s, hd]` -> `[batch, kv_heads, group * t, hd]`
pub(crate) fn attend_decode(
    q: &Tensor<4>,
    keys: &Tensor<4>,
    values: &Tensor<4>,
    mask: &CausalMask,
) -> Option<Tensor<4>> {
    decode::attend(q, keys, values, mask)
}

/// A prefill's attention in causal blocks, shapes as [`attend_decode`]; `None` where the
/// kernel does not apply.
pub(crate) fn attend_prefill(
    q: &Tensor<4>,
    keys: &Tensor<4>,
    values: &Tensor<4>,
    mask: &CausalMask,
) -> Option<Tensor<4>> {
    prefill::attend(q, keys, values, mask)
}

/// Queries or keys given `[batch, seq, heads, head_dim]`, rotated by `cos`/`sin`
/// (`[batch, 1, seq, head_dim]`), returned `[batch, heads, seq, head_dim]` times `scale`
/// in one pass; `None` where the kernel does not apply.
pub(crate) fn rotate_heads_first(
    x: &Tensor<4>,
    cos: &Tensor<4>,
    sin: &Tensor<4>,
    scale: Option<f64>,
) -> Option<Tensor<4>> {
    #[cfg(feature = "flex")]
    return rope::apply_heads_first(x, cos, sin, scale);
    #[cfg(not(feature = "flex"))]
    {
        let _ = (x, cos, sin, scale);
        None
    }
}
