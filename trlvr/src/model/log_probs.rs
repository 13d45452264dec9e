//! Teacher-forced log-probabilities from logits or hidden states, and [`Scored`]: the
//! values now, their gradient once the loss's is known. Shared by every model's scoring
//! path, so a model implements [`Partner`](super::Partner) without redoing the math.

use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::DType;

use crate::mask::AttentionMask;
use crate::token::TokenBatch;
use crate::{Error, Result};

/// Log-probs `[batch, width]` computed without a graph, and how to get their gradient:
/// [`Scored::gradients`] takes `dL/dlog_probs` and returns `dL/dθ` for every parameter.
/// The trainer runs the objective on a leaf made from [`Scored::values`], reads the leaf's
/// gradient, and hands it back here.
pub struct Scored<'a> {
    /// The log-probs, no graph.
    pub values: Tensor<2>,
    backward: Backward<'a>,
}

/// How a [`Scored`] turns `dL/dlog_probs` into parameter gradients.
enum Backward<'a> {
    /// A scalar whose gradient is `Σ upstream · dlog_probs/dθ`, backpropagated once.
    Surrogate(Box<dyn FnOnce(Tensor<2>) -> Tensor<1> + 'a>),
    /// The model forms the gradients itself (several backward passes, e.g. a layer at a
    /// time).
    Gradients(Box<dyn FnOnce(Tensor<2>) -> Result<GradientsParams> + 'a>),
}

impl std::fmt::Debug for Scored<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scored").field("values", &self.values.dims()).finish_non_exhaustive()
    }
}

impl<'a> Scored<'a> {
    /// Values and the function from `dL/dlog_probs` to a scalar whose gradient with
    /// respect to the parameters is `Σ upstream · dlog_probs/dθ` (its value is
    /// meaningless).
    pub fn new(values: Tensor<2>, surrogate: impl FnOnce(Tensor<2>) -> Tensor<1> + 'a) -> Self {
        Self { values, backward: Backward::Surrogate(Box::new(surrogate)) }
    }

    /// Values and the function from `dL/dlog_probs` straight to the parameters' gradients.
    pub fn with_gradients(
        values: Tensor<2>,
        gradients: impl FnOnce(Tensor<2>) -> Result<GradientsParams> + 'a,
    ) -> Self {
        Self { values, backward: Backward::Gradients(Box::new(gradients)) }
    }

    /// A scalar whose gradient with respect to the parameters is `Σ upstream ·
    /// dlog_probs/dθ`, to backpropagate once.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the model forms its gradients itself
    /// ([`Scored::with_gradients`]): use [`Scored::gradients`].
    pub fn surrogate(self, upstream: Tensor<2>) -> Result<Tensor<1>> {
        match self.backward {
            Backward::Surrogate(surrogate) => Ok(surrogate(upstream)),
            Backward::Gradients(_) => {
                Err(Error::Unsupported("these log-probs form their gradients in several passes".into()))
            }
        }
    }

    /// `dL/dθ` for the parameters of `module` (the model these log-probs came from),
    /// given `upstream = dL/dlog_probs`.
    ///
    /// # Errors
    /// Model-specific.
    pub fn gradients<M: Module>(self, upstream: Tensor<2>, module: &M) -> Result<GradientsParams> {
        match self.backward {
            Backward::Surrogate(surrogate) => {
                Ok(GradientsParams::from_grads(surrogate(upstream).backward(), module))
            }
            Backward::Gradients(gradients) => gradients(upstream),
        }
    }
}

/// Checks that `from` has one entry per row of `batch`.
///
/// # Errors
/// [`Error::Shape`] otherwise.
pub fn check_from(batch: &TokenBatch, from: &[usize]) -> Result<()> {
    if from.len() == batch.rows().len() {
        Ok(())
    } else {
        Err(Error::Shape(format!("{} `from` positions for {} rows", from.len(), batch.rows().len())))
    }
}

/// `scored` (`[rows, width]`) with row `r`'s slots before `from[r]` set to 0.
pub fn zeroed_before(scored: Tensor<2>, from: &[usize]) -> Tensor<2> {
    let [b, t] = scored.dims();
    let keep: Vec<f32> =
        from.iter().flat_map(|&f| (0..t).map(move |p| f32::from(u8::from(p >= f)))).collect();
    let keep = Tensor::<2>::from_data(TensorData::new(keep, [b, t]), (&scored.device(), DType::F32));
    scored * keep
}

/// Log-probabilities `[b, t]` of `ids[:, t]` under `logits[:, t - 1, :] / temperature`;
/// column 0 and padded slots are 0. Shared by the models' scoring paths. Computed and
/// returned in f32 whatever the logits' dtype (half-precision log-softmax is too coarse
/// for PPO ratios).
///
/// # Shapes
/// - `logits`: `[batch, width, vocab]`, logits at position `t` predict token `t + 1`
/// - `batch`: `[batch, width]`
pub fn token_log_probs(logits: Tensor<3>, batch: &TokenBatch, temperature: f32) -> Tensor<2> {
    let [b, t, v] = logits.dims();
    let device = logits.device();
    let ids = batch.ids(&device);
    let logits = logits.slice([0..b, 0..t - 1, 0..v]).cast(DType::F32);
    let log_p = burn::tensor::activation::log_softmax(logits / temperature, 2);
    let next = ids.slice([0..b, 1..t]).unsqueeze_dim::<3>(2); // [b, t-1, 1]
    let picked = log_p.gather(2, next).squeeze_dim::<2>(2); // [b, t-1]
    let scored = Tensor::cat(vec![Tensor::zeros([b, 1], (&device, DType::F32)), picked], 1);
    let pad = AttentionMask::from_batch(batch, &device).tensor().clone().bool_not();
    scored.mask_fill(pad, 0.0)
}

/// Positions scored per chunk by [`chunked_token_log_probs`]: at the Qwen3 vocabulary a
/// chunk's logits take `256 × 151,936 × 4` bytes ≈ 0.16 GB, whatever the batch; the
/// backward pass briefly holds about three of them (see `benches/memory.rs`).
pub const LOG_PROB_CHUNK: usize = 256;

/// As [`token_log_probs`], but from the hidden states before the LM head, chunk by chunk,
/// so that the full `[batch, width, vocab]` logits never exist; positions before
/// `from[r]` in row `r` are skipped (left at 0), so a caller that only needs the response
/// does not pay for the prompt.
///
/// Each chunk of up to `chunk` scored positions (across rows) is its own graph branch
/// computing `logit[y] - logsumexp(logits)` with the max taken outside the graph: the
/// chunk's logits are freed after its forward, and backward keeps only one
/// `[chunk, vocab]` tensor per chunk (the `exp`, which its gradient needs) instead of
/// the logits, their scaled copy and their log-softmax. The log-sum-exp and the result
/// are f32 even when the head runs in half precision.
///
/// # Shapes
/// - `hidden`: `[batch, width, hidden]`, position `t` predicting token `t + 1`
/// - `head`: `[positions, hidden]` -> `[positions, vocab]`
/// - returns `[batch, width]`
///
/// # Panics
/// If `from` does not have one entry per row or `chunk` is 0.
pub fn chunked_token_log_probs(
    hidden: Tensor<3>,
    head: impl Fn(Tensor<2>) -> Tensor<2>,
    batch: &TokenBatch,
    temperature: f32,
    from: &[usize],
    chunk: usize,
) -> Tensor<2> {
    let [b, t, d] = hidden.dims();
    assert_eq!(from.len(), b, "one `from` per row");
    assert!(chunk > 0, "chunk must be positive");
    let device = hidden.device();
    // 1. The scored slots and their tokens.
    let (slots, targets) = scored_slots(batch, t, from);
    let mut scored = Tensor::<1>::zeros([b * t], (&device, DType::F32));
    if slots.is_empty() {
        return scored.reshape([b, t]);
    }
    let int = |v: &[i64]| Tensor::<1, Int>::from_data(TensorData::new(v.to_vec(), [v.len()]), &device);
    // 2. Per chunk: the LM head on the predicting positions (`slot - 1`), then the
    //    selected logit minus the log-sum-exp.
    let hidden = hidden.reshape([b * t, d]);
    let mut previous: Option<Tensor<2>> = None;
    for (slots, targets) in slots.chunks(chunk).zip(targets.chunks(chunk)) {
        let n = slots.len();
        let before: Vec<i64> = slots.iter().map(|s| s - 1).collect();
        let mut h = hidden.clone().select(0, int(&before)); // [n, hidden]
        // Burn's backward runs the graph depth by depth, so side-by-side chunks would have
        // their `[n, vocab]` gradients alive at once; a zero-valued link to the previous
        // chunk puts each chunk deeper than the last, and backward takes them one by one.
        if let Some(previous) = previous.take() {
            let dtype = h.dtype();
            h = h + (previous.sum().reshape([1, 1]) * 0.0).cast(dtype);
        }
        let logits = head(h).cast(DType::F32) / temperature; // [n, vocab]
        let max = logits.clone().detach().max_dim(1); // [n, 1]
        let lse = (logits.clone() - max.clone()).exp().sum_dim(1).log() + max;
        let picked = logits.gather(1, int(targets).reshape([n, 1])) - lse; // [n, 1]
        previous = Some(picked.clone());
        scored =
            scored.select_assign(0, int(slots), picked.reshape([n]), burn::tensor::IndexingUpdateOp::Add);
    }
    scored.reshape([b, t])
}

/// The scored slots `r * t + p` (`1 <= p < len`, `p >= from[r]`) and their tokens.
fn scored_slots(batch: &TokenBatch, t: usize, from: &[usize]) -> (Vec<i64>, Vec<i64>) {
    let mut slots = Vec::new();
    let mut targets = Vec::new();
    for (r, row) in batch.rows().iter().enumerate() {
        for (p, &token) in row.iter().enumerate().skip(from[r].max(1)) {
            slots.push((r * t + p) as i64);
            targets.push(i64::from(token));
        }
    }
    (slots, targets)
}

/// [`chunked_token_log_probs`] for training with an LM head that is one matrix
/// `weight` (`[hidden, vocab]`, logits = `h · weight`): the values are computed without a
/// graph, and [`Scored::surrogate`] forms the gradient by hand, chunk by chunk, once
/// `u = dL/dlog_probs` is known. With `z = h·W / T` and `q = u · (onehot(y) − softmax(z)) / T`
/// per scored position, `dL/dh = q·Wᵀ` and `dL/dW = Σ hᵀ·q`; the surrogate is
/// `Σ h ⊙ dL/dh + Σ W ⊙ dL/dW`, so backward keeps `[positions, hidden]` and one
/// `[hidden, vocab]` matrix, never a `vocab`-wide tensor per position. The head runs twice
/// per chunk (values, then gradient): the price of that memory.
///
/// # Shapes
/// - `hidden`: `[batch, width, hidden]`, recording gradients into the trunk
/// - `weight`: `[hidden, vocab]`, recording gradients (a parameter, or a transposed tied
///   embedding)
///
/// # Panics
/// If `from` does not have one entry per row or `chunk` is 0.
pub fn lean_token_log_probs<'a>(
    hidden: Tensor<3>,
    weight: Tensor<2>,
    batch: &TokenBatch,
    temperature: f32,
    from: &[usize],
    chunk: usize,
) -> Scored<'a> {
    let [b, t, d] = hidden.dims();
    assert_eq!(from.len(), b, "one `from` per row");
    assert!(chunk > 0, "chunk must be positive");
    let device = hidden.device();
    let (slots, targets) = scored_slots(batch, t, from);
    let hidden = hidden.reshape([b * t, d]);
    // Burn's `detach` keeps a parameter's `require_grad`; the values must carry no graph.
    let w = weight.clone().detach().set_require_grad(false);
    let int = {
        let device = device.clone();
        move |v: &[i64]| Tensor::<1, Int>::from_data(TensorData::new(v.to_vec(), [v.len()]), &device)
    };
    // A chunk's predicting positions (`slot − 1`), their hidden states and scaled logits.
    let logits = {
        let (h, w, int) = (hidden.clone().detach(), w.clone(), int.clone());
        move |slots: &[i64]| {
            let before: Vec<i64> = slots.iter().map(|s| s - 1).collect();
            let rows = h.clone().select(0, int(&before)); // [n, d]
            let z = rows.clone().matmul(w.clone()).cast(DType::F32) / temperature; // [n, vocab], f32
            (before, rows, z)
        }
    };
    let mut values = Tensor::<1>::zeros([b * t], (&device, DType::F32));
    for (slots, targets) in slots.chunks(chunk).zip(targets.chunks(chunk)) {
        let n = slots.len();
        let (_, _, z) = logits(slots);
        let lse = burn::tensor::activation::log_softmax(z, 1);
        let picked = lse.gather(1, int(targets).reshape([n, 1])).reshape([n]);
        values = values.select_assign(0, int(slots), picked, burn::tensor::IndexingUpdateOp::Add);
    }
    let values = values.reshape([b, t]);
    Scored::new(values, move |upstream: Tensor<2>| {
        // Gradients are formed in f32 and cast to the weights' dtype once.
        let upstream = upstream.detach().cast(DType::F32).reshape([b * t]);
        let vocab = w.dims()[1];
        let float32 = (&device, DType::F32);
        let mut d_hidden = Tensor::<2>::zeros([b * t, d], float32);
        let mut d_weight = Tensor::<2>::zeros([d, vocab], float32);
        // One f32 copy of Wᵀ for every chunk (a view when the weights are f32 already).
        let w_t = w.clone().transpose().cast(DType::F32);
        for (slots, targets) in slots.chunks(chunk).zip(targets.chunks(chunk)) {
            let n = slots.len();
            let (before, rows, z) = logits(slots);
            let u = upstream.clone().select(0, int(slots)).reshape([n, 1]) / temperature;
            // onehot(y) − softmax(z) without a dense one-hot: −softmax(z), plus 1 at y.
            let q = burn::tensor::activation::softmax(z, 1).neg().scatter(
                1,
                int(targets).reshape([n, 1]),
                Tensor::ones([n, 1], float32),
                burn::tensor::IndexingUpdateOp::Add,
            ) * u; // [n, vocab]
            d_hidden = d_hidden.select_assign(
                0,
                int(&before),
                q.clone().matmul(w_t.clone()),
                burn::tensor::IndexingUpdateOp::Add,
            );
            d_weight = d_weight + rows.transpose().cast(DType::F32).matmul(q);
        }
        let (hd, wd) = (hidden.dtype(), weight.dtype());
        (hidden * d_hidden.cast(hd)).sum().cast(DType::F32)
            + (weight * d_weight.cast(wd)).sum().cast(DType::F32)
    })
}
