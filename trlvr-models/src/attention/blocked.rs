//! Exact causal softmax attention, a block of queries at a time.
//!
//! Inference runs the blocks as plain tensor ops ([`attend`]). Under autodiff they run as
//! one custom operation whose backward recomputes each block's probabilities from the
//! queries, the keys and each query's saved log-sum-exp (the FlashAttention backward),
//! so training keeps `O(t)` floats per layer and head where autodiff through the blocks
//! would keep every block's probabilities, `O(t²)`. Burn 0.22's fused attention is not
//! used: under autodiff it runs as one full `[t, t]` score matrix.

use std::ops::Range;

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, DispatchKindConversion, DispatchTensor, backend_extension};
use burn::prelude::*;
use burn::tensor::{BackendPrimitive, DType, Float};

use crate::cache::CausalMask;
use crate::fused::{unwrap, wrap};

/// Queries per block of [`attend`]: a block's scores take `group × 256 × width` floats
/// per key/value head, so a long prefill's (and a training step's) transient memory
/// grows linearly with length.
pub const QUERY_BLOCK: usize = 256;

/// New tokens per row up to which a pass (not autodiff) takes [`super::decode::attend`]:
/// decode steps and a tandem handoff's catch-up of a few tokens.
const DECODE_QUERIES: usize = 8;

/// Causal softmax attention computed `block` queries at a time, each block over only the
/// keys some of its queries can see; every block is the exact softmax of its rows, so
/// values and gradients equal those of one `[t, width]` score matrix.
///
/// When an input is tracked by autodiff and there is more than one block, the blocks run
/// as one operation whose backward recomputes them (see the module doc), so backward
/// keeps no probabilities. One block (`t <= block`) runs as plain ops: its probabilities
/// take at most `block²` floats per head, and backward then needs no recomputation.
///
/// # Shapes
/// - `q`: `[batch, heads, t, hd]` (already scaled), `keys`/`values`:
///   `[batch, kv_heads, width, hd]`
/// - returns `[batch, heads, t, hd]`
pub fn attend(
    q: Tensor<4>,
    keys: Tensor<4>,
    values: Tensor<4>,
    mask: &CausalMask,
    block: usize,
) -> Tensor<4> {
    let [b, h, t, hd] = q.dims();
    if t > block && (q.is_tracked() || keys.is_tracked() || values.is_tracked()) {
        let out = <Dispatch as RecomputedAttention>::recomputed_attention(
            q.into_dispatch(),
            keys.into_dispatch(),
            values.into_dispatch(),
            Blocks::new(mask.host_only(), block),
        );
        return Tensor::from_dispatch(out);
    }
    let kvh = keys.dims()[1];
    let g = h / kvh;
    let device = q.device();
    // Each key/value head serves its group of query heads: fold the group into the query
    // rows so keys are never repeated. One block (a decode step) needs no slicing.
    let folded = q.clone().reshape([b, kvh, g * t, hd]);
    let own = match t <= DECODE_QUERIES {
        true => crate::kernels::attend_decode(&folded, &keys, &values, mask),
        false => crate::kernels::attend_prefill(&folded, &keys, &values, mask),
    };
    if let Some(out) = own {
        return out.reshape([b, h, t, hd]);
    }
    if t <= block {
        let s = keys.dims()[2];
        let q = folded;
        let hidden = mask.block(0..t, s, &device).expand([b, kvh, g * t, s]);
        let scores = q.matmul(keys.swap_dims(2, 3)).mask_fill(hidden, f32::NEG_INFINITY);
        return probabilities(scores, values.dtype()).matmul(values).reshape([b, h, t, hd]);
    }
    blocked(q, keys, values, &Blocks::new(mask.clone(), block), false).0
}

/// The softmax over keys, computed in f32 (half-precision scores lose the small
/// probabilities) and handed back in `dtype` for the product with the values. With f32
/// weights both casts are no-ops.
fn probabilities(scores: Tensor<4>, dtype: DType) -> Tensor<4> {
    crate::fused::softmax(scores.cast(DType::F32)).cast(dtype)
}

/// How the queries are cut: the mask and the queries per block. Host data only, so the
/// backward can rebuild each block's mask on whichever device it runs.
#[derive(Clone, Debug)]
pub struct Blocks {
    mask: CausalMask,
    block: usize,
}

impl Blocks {
    /// `mask` cut `block` queries at a time (at least 1).
    pub fn new(mask: CausalMask, block: usize) -> Self {
        Self { mask, block: block.max(1) }
    }

    /// Each block's query rows and the number of keys its queries can see.
    fn ranges(&self) -> impl Iterator<Item = (Range<usize>, usize)> + '_ {
        let t = self.mask.queries();
        (0..t).step_by(self.block).map(move |start| {
            let rows = start..(start + self.block).min(t);
            let s = self.mask.visible_keys(&rows);
            (rows, s)
        })
    }

    /// One block's masked scores in f32, `[b, kv_heads, group * n, s]`, from queries
    /// `[b, kv_heads, group, t, hd]`.
    fn scores(&self, q: &Tensor<5>, keys: &Tensor<4>, rows: Range<usize>, s: usize) -> Tensor<4> {
        let [b, kvh, g, _, hd] = q.dims();
        let n = rows.len();
        let q = fold(q, rows.clone());
        let k = keys.clone().slice([0..b, 0..kvh, 0..s, 0..hd]);
        let hidden = self.mask.block(rows, s, &q.device()).expand([b, kvh, g * n, s]);
        q.matmul(k.swap_dims(2, 3)).cast(DType::F32).mask_fill(hidden, f32::NEG_INFINITY)
    }
}

/// Rows `rows` of `[b, kv_heads, group, t, hd]`, the group folded into the rows:
/// `[b, kv_heads, group * n, hd]`.
fn fold(x: &Tensor<5>, rows: Range<usize>) -> Tensor<4> {
    let [b, kvh, g, _, hd] = x.dims();
    let n = rows.len();
    x.clone().slice([0..b, 0..kvh, 0..g, rows, 0..hd]).reshape([b, kvh, g * n, hd])
}

/// The blocks, one after the other: the output `[b, heads, t, hd]` (in the values' dtype)
/// and, with `lse`, each query's log-sum-exp of its scores, `[b, kv_heads, group, t, 1]`
/// in f32: what the recomputed attention's backward needs besides the inputs. Its
/// forward is thus the inference computation itself, bit for bit.
fn blocked(
    q: Tensor<4>,
    keys: Tensor<4>,
    values: Tensor<4>,
    blocks: &Blocks,
    lse: bool,
) -> (Tensor<4>, Option<Tensor<5>>) {
    let [b, h, t, hd] = q.dims();
    let kvh = keys.dims()[1];
    let g = h / kvh;
    let q = q.reshape([b, kvh, g, t, hd]);
    let (outs, lses): (Vec<Tensor<5>>, Vec<Option<Tensor<5>>>) = blocks
        .ranges()
        .map(|(rows, s)| {
            let n = rows.len();
            let scores = blocks.scores(&q, &keys, rows, s);
            let p = probabilities(scores.clone(), DType::F32);
            // The row's largest probability is exp(0) / Σ exp(s − max): the log-sum-exp
            // is read off the softmax, not computed with a second pass of exps.
            let lse =
                lse.then(|| (scores.max_dim(3) - p.clone().max_dim(3).log()).reshape([b, kvh, g, n, 1]));
            let v = values.clone().slice([0..b, 0..kvh, 0..s, 0..hd]);
            let out = p.cast(v.dtype()).matmul(v).reshape([b, kvh, g, n, hd]);
            (out, lse)
        })
        .unzip();
    let lse = lses.into_iter().collect::<Option<Vec<_>>>().map(|l| Tensor::cat(l, 3));
    (Tensor::cat(outs, 3).reshape([b, h, t, hd]), lse)
}

/// Gradients of the queries, keys and values given the output's gradient `grad`,
/// recomputing each block's probabilities `P = exp(S - lse)`: with `D = rowsum(dO ⊙ O)`,
/// `dS = P ⊙ (dO·Vᵀ - D)`, `dQ = dS·K`, `dK = dSᵀ·Q`, `dV = Pᵀ·dO`. The scores are
/// recomputed exactly as the forward computed them (the product in the inputs' dtype),
/// so `P` is the forward's; the rest is computed in f32 and returned in each input's dtype.
fn backward(state: &State<Tensor<4>, Tensor<5>>, grad: Tensor<4>) -> [Tensor<4>; 3] {
    let f32 = |x: &Tensor<4>| x.clone().cast(DType::F32);
    let [b, h, t, hd] = state.q.dims();
    let [_, kvh, width, _] = state.keys.dims();
    let g = h / kvh;
    let (q_in, keys_in) = (state.q.clone().reshape([b, kvh, g, t, hd]), &state.keys);
    let (q5, keys, values) = (q_in.clone().cast(DType::F32), f32(&state.keys), f32(&state.values));
    let d_out = f32(&grad).reshape([b, kvh, g, t, hd]);
    let delta = (d_out.clone() * f32(&state.out).reshape([b, kvh, g, t, hd])).sum_dim(4);
    let device = q5.device();
    let zeros = || Tensor::<4>::zeros([b, kvh, width, hd], (&device, DType::F32));
    let (mut d_keys, mut d_values) = (zeros(), zeros());
    let mut d_q = Vec::new();
    for (rows, s) in state.blocks.ranges() {
        let n = rows.len();
        let lse =
            state.lse.clone().slice([0..b, 0..kvh, 0..g, rows.clone(), 0..1]).reshape([b, kvh, g * n, 1]);
        let p = (state.blocks.scores(&q_in, keys_in, rows.clone(), s) - lse).exp();
        let d_o = fold(&d_out, rows.clone());
        let k = keys.clone().slice([0..b, 0..kvh, 0..s, 0..hd]);
        let v = values.clone().slice([0..b, 0..kvh, 0..s, 0..hd]);
        let delta = fold(&delta, rows.clone());
        let d_s = p.clone() * (d_o.clone().matmul(v.swap_dims(2, 3)) - delta);
        let at = [0..b, 0..kvh, 0..s, 0..hd];
        d_values = d_values
            .clone()
            .slice_assign(at.clone(), d_values.slice(at.clone()) + p.swap_dims(2, 3).matmul(d_o));
        d_keys = d_keys.clone().slice_assign(
            at.clone(),
            d_keys.slice(at) + d_s.clone().swap_dims(2, 3).matmul(fold(&q5, rows.clone())),
        );
        d_q.push(d_s.matmul(k).reshape([b, kvh, g, n, hd]));
    }
    let d_q = Tensor::cat(d_q, 3).reshape([b, h, t, hd]);
    [d_q.cast(state.q.dtype()), d_keys.cast(state.keys.dtype()), d_values.cast(state.values.dtype())]
}

/// What the backward keeps: the inputs and output (shared with the graph, no copies),
/// the per-query log-sum-exp and the cut.
#[derive(Clone, Debug)]
struct State<T, L> {
    q: T,
    keys: T,
    values: T,
    out: T,
    lse: L,
    blocks: Blocks,
}

pub use op::RecomputedAttention;

// Without a backend feature the generated dispatch has no arm to pass `blocks` to.
#[cfg_attr(not(any(feature = "flex", feature = "tch", feature = "cube")), allow(unused_variables))]
#[allow(deprecated)] // the generated LibTorch arm: burn-tch is deprecated in Burn 0.22
mod op {
    use super::{Backend, Blocks, FloatTensor, backend_extension};

    /// The blocked attention as a backend operation, so its backward can be written by
    /// hand.
    #[backend_extension(
        Flex: cfg(feature = "flex"),
        LibTorch: cfg(feature = "tch"),
        Cube: cfg(feature = "cube"),
        Autodiff
    )]
    pub trait RecomputedAttention: Backend {
        /// [`attend`](super::attend) under autodiff; see the module doc.
        fn recomputed_attention(
            q: FloatTensor<Self>,
            keys: FloatTensor<Self>,
            values: FloatTensor<Self>,
            blocks: Blocks,
        ) -> FloatTensor<Self>;
    }
}

macro_rules! forward_only {
    ($($backend:ty: $feature:literal),*) => {$(
        #[cfg(feature = $feature)]
        #[allow(deprecated)] // burn-tch is deprecated in Burn 0.22; LibTorch stays an option here
        impl RecomputedAttention for $backend {
            fn recomputed_attention(
                q: FloatTensor<Self>,
                keys: FloatTensor<Self>,
                values: FloatTensor<Self>,
                blocks: Blocks,
            ) -> FloatTensor<Self> {
                unwrap::<Self, 4>(blocked(wrap::<Self, 4>(q), wrap::<Self, 4>(keys), wrap::<Self, 4>(values), &blocks, false).0)
            }
        }
    )*};
}

forward_only!(burn::backend::Flex: "flex", burn::backend::LibTorch: "tch", burn::backend::Cube: "cube");

#[derive(Debug)]
struct AttentionBackward;

impl<B: Backend> Backward<B, 3> for AttentionBackward
where
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    type State = State<FloatTensor<B>, FloatTensor<B>>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let s = ops.state;
        let state = State {
            q: wrap::<B, 4>(s.q),
            keys: wrap::<B, 4>(s.keys),
            values: wrap::<B, 4>(s.values),
            out: wrap::<B, 4>(s.out),
            lse: wrap::<B, 5>(s.lse),
            blocks: s.blocks,
        };
        let d = backward(&state, wrap::<B, 4>(grad));
        for (parent, d) in ops.parents.into_iter().zip(d) {
            if let Some(node) = parent {
                grads.register::<B>(node.id, unwrap::<B, 4>(d));
            }
        }
    }
}

impl<B, C> RecomputedAttention for Autodiff<B, C>
where
    B: Backend + RecomputedAttention,
    C: CheckpointStrategy,
    Float: BackendPrimitive<B, Primitive = FloatTensor<B>>,
    DispatchTensor: DispatchKindConversion<B>,
{
    fn recomputed_attention(
        q: FloatTensor<Self>,
        keys: FloatTensor<Self>,
        values: FloatTensor<Self>,
        blocks: Blocks,
    ) -> FloatTensor<Self> {
        match AttentionBackward
            .prepare::<C>([q.node(), keys.node(), values.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let (q, keys, values) =
                    (q.primitive().clone(), keys.primitive().clone(), values.primitive().clone());
                let (out, lse) = blocked(
                    wrap::<B, 4>(q.clone()),
                    wrap::<B, 4>(keys.clone()),
                    wrap::<B, 4>(values.clone()),
                    &blocks,
                    true,
                );
                let lse = lse.expect("asked for");
                let out = unwrap::<B, 4>(out);
                let state = State { q, keys, values, out: out.clone(), lse: unwrap::<B, 5>(lse), blocks };
                prep.finish(state, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::recomputed_attention(
                q.into_primitive(),
                keys.into_primitive(),
                values.into_primitive(),
                blocks,
            )),
        }
    }
}
