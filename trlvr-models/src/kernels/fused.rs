//! Flex's f32 SwiGLU and softmax. Flex takes one scalar `expf` per element, on one thread
//! for a sigmoid (SmolLM2's prefill ran 19% faster without that). Here the exponentials
//! are SIMD (`pulp`, the widest the CPU has) and the work is split across Rayon's threads.
//! Every element goes through the same lane code (a tail is loaded padded), so a value
//! does not depend on where it sits in its tensor.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::tensor::activation;
use burn::tensor::{DType, TensorData};
use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

use crate::fused::{Fused, Sigmoid as SwigluSigmoid, unwrap, wrap};

/// The fused operations on flex: these kernels where they take the tensor (f32,
/// contiguous), Burn's ops otherwise.
impl Fused for Flex {
    fn fused_softmax(x: FloatTensor<Self>) -> FloatTensor<Self> {
        softmax(&x).unwrap_or_else(|| unwrap::<Self, 4>(activation::softmax(wrap::<Self, 4>(x), 3)))
    }
    fn fused_swiglu(gate: FloatTensor<Self>, up: FloatTensor<Self>) -> FloatTensor<Self> {
        swiglu(&gate, &up).unwrap_or_else(|| {
            let gate = wrap::<Self, 3>(gate);
            let s = wrap::<Self, 3>(Self::swiglu_sigmoid(unwrap::<Self, 3>(gate.clone())));
            unwrap::<Self, 3>(gate * s * wrap::<Self, 3>(up))
        })
    }
}

impl SwigluSigmoid for Flex {
    fn swiglu_sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
        sigmoid_of(&x).unwrap_or_else(|| unwrap::<Self, 3>(activation::sigmoid(wrap::<Self, 3>(x))))
    }
}

/// Elements per Rayon task; a tensor of one task runs on the calling thread (a small
/// model's ops would otherwise wait on a hand-off to the pool).
const TASK: usize = 1 << 14;

/// `e^x` for `x ≤ 0`, the only arguments either kernel takes: `2ⁿ · eʳ` with
/// `n = round(x / ln 2)` and `|r| ≤ ln 2 / 2`, `eʳ` by the Cephes library's degree-6
/// polynomial, `2ⁿ` built from its exponent bits. Below ln 2⁻¹²⁶ (−87.34, where results
/// leave the normal floats) it gives 0; NaN stays NaN.
#[inline(always)]
fn exp<S: Simd>(s: S, x: S::f32s) -> S::f32s {
    const MIN: f32 = -87.336_55;
    // Adding 1.5 · 2²³ rounds to an integer, which the sum's low mantissa bits then hold.
    const ROUND: f32 = 12_582_912.0;
    const POLYNOMIAL: [f32; 6] =
        [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5];
    let clamped = s.max_f32s(x, s.splat_f32s(MIN));
    let t = s.mul_add_e_f32s(clamped, s.splat_f32s(std::f32::consts::LOG2_E), s.splat_f32s(ROUND));
    let n = s.sub_f32s(t, s.splat_f32s(ROUND));
    // r = x − n · ln 2, ln 2 in two parts so that n · ln 2's high part is exact.
    let r = s.mul_add_e_f32s(n, s.splat_f32s(-0.693_359_4), clamped);
    let r = s.mul_add_e_f32s(n, s.splat_f32s(2.121_944_4e-4), r);
    let p = POLYNOMIAL[1..]
        .iter()
        .fold(s.splat_f32s(POLYNOMIAL[0]), |p, &c| s.mul_add_e_f32s(p, r, s.splat_f32s(c)));
    let e_r = s.add_f32s(s.mul_add_e_f32s(p, s.mul_f32s(r, r), r), s.splat_f32s(1.0));
    let n = s.sub_u32s(s.transmute_u32s_f32s(t), s.transmute_u32s_f32s(s.splat_f32s(ROUND)));
    let two_n = s.mul_u32s(s.add_u32s(n, s.splat_u32s(127)), s.splat_u32s(1 << 23));
    let y = s.mul_f32s(e_r, s.transmute_f32s_u32s(two_n));
    let y = s.select_f32s(s.less_than_f32s(x, s.splat_f32s(MIN)), s.splat_f32s(0.0), y);
    s.select_f32s(s.equal_f32s(x, x), y, x)
}

/// σ(x) from `e = e^(−|x|)`: `1 / (1 + e)` for `x ≥ 0`, `e / (1 + e)` below, so that a
/// large negative `x` keeps its small value instead of `1 / ∞`.
#[inline(always)]
fn sigmoid<S: Simd>(s: S, x: S::f32s) -> S::f32s {
    let e = exp(s, s.neg_f32s(s.abs_f32s(x)));
    let r = s.div_f32s(s.splat_f32s(1.0), s.add_f32s(s.splat_f32s(1.0), e));
    s.select_f32s(s.greater_than_or_equal_f32s(x, s.splat_f32s(0.0)), r, s.mul_f32s(e, r))
}

/// An elementwise operation of `N` f32 inputs, a vector of lanes at a time.
trait Lanewise<const N: usize>: Sync {
    fn lanes<S: Simd>(&self, s: S, x: [S::f32s; N]) -> S::f32s;
}

struct Sigmoid;

impl Lanewise<1> for Sigmoid {
    #[inline(always)]
    fn lanes<S: Simd>(&self, s: S, [x]: [S::f32s; 1]) -> S::f32s {
        sigmoid(s, x)
    }
}

/// `(gate · σ(gate)) · up`: the products of the tracked forward, in its order.
struct Swiglu;

impl Lanewise<2> for Swiglu {
    #[inline(always)]
    fn lanes<S: Simd>(&self, s: S, [g, u]: [S::f32s; 2]) -> S::f32s {
        s.mul_f32s(s.mul_f32s(g, sigmoid(s, g)), u)
    }
}

/// One task of [`map`].
struct Task<'a, const N: usize, L> {
    op: &'a L,
    inputs: [&'a [f32]; N],
    out: &'a mut [f32],
}

impl<const N: usize, L: Lanewise<N>> WithSimd for Task<'_, N, L> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let (out, tail) = S::as_mut_simd_f32s(self.out);
        let inputs = self.inputs.map(S::as_simd_f32s);
        for (i, y) in out.iter_mut().enumerate() {
            *y = self.op.lanes(s, inputs.map(|x| x.0[i]));
        }
        let x = inputs.map(|x| s.partial_load_f32s(x.1));
        s.partial_store_f32s(tail, self.op.lanes(s, x));
    }
}

/// `op` of the inputs' elements across Rayon's threads.
fn map<const N: usize, L: Lanewise<N>>(op: &L, inputs: [&[f32]; N]) -> Vec<f32> {
    let mut out = vec![0.0f32; inputs[0].len()];
    let task = |(task, out): (usize, &mut [f32])| {
        let inputs = inputs.map(|x| &x[task * TASK..task * TASK + out.len()]);
        Arch::new().dispatch(Task { op, inputs, out });
    };
    if out.len() <= TASK {
        task((0, &mut out));
    } else {
        out.par_chunks_mut(TASK).enumerate().for_each(task);
    }
    out
}

/// `x`'s values when it is f32 and contiguous.
fn values(x: &FlexTensor) -> Option<&[f32]> {
    (x.dtype() == DType::F32).then(|| x.as_slice::<f32>()).flatten()
}

fn tensor(values: Vec<f32>, like: &FlexTensor) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, like.layout().shape().clone()))
}

/// σ(x); `None` unless `x` is f32 and contiguous.
fn sigmoid_of(x: &FlexTensor) -> Option<FlexTensor> {
    Some(tensor(map(&Sigmoid, [values(x)?]), x))
}

/// `silu(gate) ⊙ up`; `None` unless both are f32, contiguous and of one shape.
fn swiglu(gate: &FlexTensor, up: &FlexTensor) -> Option<FlexTensor> {
    if gate.layout().shape() != up.layout().shape() {
        return None;
    }
    Some(tensor(map(&Swiglu, [values(gate)?, values(up)?]), gate))
}

/// `up ← silu(gate) ⊙ up` on the calling thread, in [`swiglu`]'s lane code (the same
/// bits): for a product that computes `up` a part at a time and applies it while the
/// part is in cache (`many_rows::project_gated`).
pub(super) fn swiglu_into(gate: &[f32], up: &mut [f32]) {
    struct InPlace<'a> {
        gate: &'a [f32],
        up: &'a mut [f32],
    }
    impl WithSimd for InPlace<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let (up, up_tail) = S::as_mut_simd_f32s(self.up);
            let (gate, gate_tail) = S::as_simd_f32s(self.gate);
            for (u, g) in up.iter_mut().zip(gate) {
                *u = Swiglu.lanes(s, [*g, *u]);
            }
            let tail = Swiglu.lanes(s, [s.partial_load_f32s(gate_tail), s.partial_load_f32s(up_tail)]);
            s.partial_store_f32s(up_tail, tail);
        }
    }
    assert_eq!(gate.len(), up.len(), "a gate per value");
    Arch::new().dispatch(InPlace { gate, up });
}

/// Softmax over the last axis; `None` unless `x` is f32 and contiguous. Masked entries
/// (−∞) get 0; a row of only −∞ gets NaN, as in flex's.
fn softmax(x: &FlexTensor) -> Option<FlexTensor> {
    let input = values(x)?;
    let width = *x.layout().shape().last()?;
    if width == 0 {
        return None;
    }
    let mut out = vec![0.0f32; input.len()];
    let rows = (TASK / width).max(1) * width;
    let all = |_: usize| width;
    if input.len() <= rows {
        softmax_prefixes(input, &mut out, width, &all);
    } else {
        out.par_chunks_mut(rows)
            .zip(input.par_chunks(rows))
            .for_each(|(y, x)| softmax_prefixes(x, y, width, &all));
    }
    Some(tensor(out, x))
}

/// `y = softmax(x)` for one row.
#[inline(always)]
fn softmax_row<S: Simd>(s: S, x: &[f32], y: &mut [f32]) {
    let (xv, xt) = S::as_simd_f32s(x);
    let lanes_max = xv.iter().fold(s.splat_f32s(f32::NEG_INFINITY), |m, &v| s.max_f32s(m, v));
    let max = xt.iter().fold(s.reduce_max_f32s(lanes_max), |m, &v| m.max(v));
    let max = s.splat_f32s(max);
    let (yv, yt) = S::as_mut_simd_f32s(y);
    let mut sum = s.splat_f32s(0.0);
    for (y, &x) in yv.iter_mut().zip(xv) {
        *y = exp(s, s.sub_f32s(x, max));
        sum = s.add_f32s(sum, *y);
    }
    s.partial_store_f32s(yt, exp(s, s.sub_f32s(s.partial_load_f32s(xt), max)));
    let inv = 1.0 / yt.iter().fold(s.reduce_sum_f32s(sum), |a, &e| a + e);
    let inv_lanes = s.splat_f32s(inv);
    for y in yv.iter_mut() {
        *y = s.mul_f32s(*y, inv_lanes);
    }
    for y in yt.iter_mut() {
        *y *= inv;
    }
}

/// Softmax over rows of `width` scores, row `r` over its first `seen(r)` (a causal mask;
/// all of them for [`softmax`]), the rest of its probabilities 0. On the calling thread.
pub(super) fn softmax_prefixes(x: &[f32], y: &mut [f32], width: usize, seen: &dyn Fn(usize) -> usize) {
    struct Prefixes<'a> {
        x: &'a [f32],
        y: &'a mut [f32],
        width: usize,
        seen: &'a dyn Fn(usize) -> usize,
    }
    impl WithSimd for Prefixes<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let rows = self.x.chunks(self.width).zip(self.y.chunks_mut(self.width));
            for (r, (x, y)) in rows.enumerate() {
                let n = (self.seen)(r).min(self.width);
                softmax_row(s, &x[..n], &mut y[..n]);
                y[n..].fill(0.0);
            }
        }
    }
    Arch::new().dispatch(Prefixes { x, y, width, seen });
}
