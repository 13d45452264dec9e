//! Objectives: a batch of senior log-probs, advantages and the loss mask in, a scalar
//! loss (plus metrics) out. [`Grpo`] is the built-in; the junior-KL ablation is a plugin.
//!
//! The shared pieces ([`masked`], [`aggregate`], [`kl_per_token`]) apply the loss mask
//! before any `exp`, so NaN or infinities in junior, prompt or padding slots can never
//! reach the loss or its gradient.

mod grpo;
pub mod portable;

use std::collections::BTreeMap;
use std::fmt::Debug;

use burn::prelude::*;
use burn::tensor::DType;
use serde::{Deserialize, Serialize};

pub use grpo::{Grpo, GrpoConfig, KlPenalty};

use crate::mask::{LossMask, Normalizer};
use crate::{Error, Result};

/// Named scalar metrics (`clip_frac`, `ratio_mean`, `kl`, `senior_tokens`, ...).
pub type Metrics = BTreeMap<String, f64>;

/// What an objective sees of a (micro-)batch. All `[batch, width]` tensors are aligned
/// with token positions; only positions in `loss_mask` may influence the loss.
#[derive(Debug, Clone)]
pub struct ObjectiveBatch {
    /// log π_θ of each token, recording gradients.
    pub log_probs: Tensor<2>,
    /// log π_old of each token: the senior's before the step's first update (recorded by
    /// the rollouts, or scored again; see `TrainConfig::recompute_old_log_probs`).
    pub old_log_probs: Tensor<2>,
    /// log-probs under a reference model (the junior, for the junior-KL ablation), if the
    /// objective needs one.
    pub ref_log_probs: Option<Tensor<2>>,
    /// One advantage per row, `[batch]`.
    pub advantages: Tensor<1>,
    /// Real, response, senior-written positions.
    pub loss_mask: LossMask,
    /// Denominators of the whole mini-batch this micro-batch belongs to.
    pub normalizer: Normalizer,
}

impl ObjectiveBatch {
    /// Rows `range`, keeping the mini-batch's normalizer (for micro-batching).
    #[must_use]
    pub fn rows(&self, range: std::ops::Range<usize>) -> Self {
        let slice = |t: &Tensor<2>| t.clone().slice([range.clone()]);
        Self {
            log_probs: slice(&self.log_probs),
            old_log_probs: slice(&self.old_log_probs),
            ref_log_probs: self.ref_log_probs.as_ref().map(slice),
            advantages: self.advantages.clone().slice([range.clone()]),
            loss_mask: self.loss_mask.rows(range),
            normalizer: self.normalizer,
        }
    }
}

/// A loss and what was measured while computing it.
#[derive(Debug, Clone)]
pub struct ObjectiveOutput {
    /// The scalar loss, shape `[1]`. Losses of the micro-batches of a mini-batch add up
    /// to the loss of the mini-batch.
    pub loss: Tensor<1>,
    /// Metrics of this micro-batch.
    pub metrics: Metrics,
}

/// A training objective. Object-safe, so plugins can supply one as `Box<dyn Objective>`.
///
/// Contract (checked by `trlvr::testing::check_objective`): positions outside the loss
/// mask never change the loss or any gradient, and get exactly zero gradient; losses of
/// micro-batches sum to the mini-batch loss; zero advantages with a reference equal to
/// the policy give zero loss and gradient.
///
/// ```
/// use burn::prelude::*;
/// use trlvr::prelude::*;
///
/// let device = Device::default().autodiff();
/// let log_probs = Tensor::<2>::from_floats([[-1.0, -0.5, -2.0]], &device).require_grad();
/// let old = Tensor::<2>::from_floats([[-1.0, -0.7, -2.0]], &device);
/// // Token 0 is prompt, token 1 the senior's, token 2 the junior's.
/// let loss_mask = LossMask::from_bools(vec![false, true, false], 1, 3, &device)?;
/// let batch = ObjectiveBatch {
///     log_probs: log_probs.clone(),
///     old_log_probs: old,
///     ref_log_probs: None,
///     advantages: Tensor::from_floats([1.0], &device),
///     normalizer: loss_mask.normalizer()?,
///     loss_mask,
/// };
/// let out = Grpo::new(GrpoConfig::default())?.loss(&batch)?;
/// let grads = out.loss.backward();
/// let g = log_probs.grad(&grads).unwrap().try_into_vec_as::<f32>().unwrap();
/// assert_eq!(g[2], 0.0); // the junior's token gets no gradient
/// assert_eq!(out.metrics["senior_tokens"], 1.0);
/// # Ok::<(), trlvr::Error>(())
/// ```
pub trait Objective: Send + Sync + Debug {
    /// A short name for logs and configs.
    fn name(&self) -> &str;

    /// Whether [`ObjectiveBatch::ref_log_probs`] must be filled.
    fn needs_reference(&self) -> bool {
        false
    }

    /// The loss of one micro-batch.
    ///
    /// # Errors
    /// [`Error::Shape`] for inconsistent inputs; [`Error::Config`] for a missing reference.
    fn loss(&self, batch: &ObjectiveBatch) -> Result<ObjectiveOutput>;
}

impl<O: Objective + ?Sized> Objective for Box<O> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn needs_reference(&self) -> bool {
        (**self).needs_reference()
    }
    fn loss(&self, batch: &ObjectiveBatch) -> Result<ObjectiveOutput> {
        (**self).loss(batch)
    }
}

/// How per-token losses become one number (method.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    /// Sum over loss tokens / loss tokens of the whole mini-batch (default).
    #[default]
    TokenMean,
    /// Mean over sequences of each sequence's token mean.
    SeqMeanTokenMean,
    /// Mean over sequences of each sequence's token sum.
    SeqMeanTokenSum,
    /// Sum over tokens / `horizon`, a constant (Dr. GRPO, as verl's
    /// `seq-mean-token-sum-norm`): no denominator depends on the batch's lengths or on
    /// how many rows carry senior tokens.
    SeqMeanTokenSumNorm {
        /// The constant divisor, usually the response cap.
        horizon: usize,
    },
}

/// KL estimators of KL(π_θ ‖ π_ref) on the policy's samples, with δ = log π_ref − log π_θ
/// clamped to ±20.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KlEstimator {
    /// −δ.
    K1,
    /// δ² / 2.
    K2,
    /// exp(δ) − δ − 1, clamped to ±10 ("low-var KL").
    K3,
    /// k3's value (clamped as [`KlEstimator::K3`]) with k2's gradient (−δ per token with
    /// respect to log π_θ): the paper's penalty in the logs, and a gradient that does not
    /// vanish where the clamp bites, on tokens the reference finds far less likely than
    /// the policy (exp(δ) − δ − 1 > 10 once δ < −11).
    #[serde(rename = "k3+")]
    K3Plus,
}

/// The fraction of the masked tokens whose k3 reaches its clamp (10 nats), where
/// [`KlEstimator::K3`] stops growing and gives no gradient.
///
/// # Errors
/// As [`host`].
pub fn k3_clamped_fraction(log_probs: Tensor<2>, ref_log_probs: Tensor<2>, mask: &LossMask) -> Result<f64> {
    let delta = (masked(ref_log_probs, mask) - masked(log_probs, mask)).clamp(-20.0, 20.0).detach();
    let raw = delta.clone().exp() - delta - 1.0;
    let clamped = raw.greater_equal_elem(10.0).bool_and(mask.tensor().clone());
    let tokens = f64::from(host(mask.tensor().clone().int().sum().float())?[0]);
    let at_clamp = f64::from(host(clamped.int().sum().float())?[0]);
    Ok(if tokens > 0.0 { at_clamp / tokens } else { 0.0 })
}

/// Zero outside the loss mask. Use it on every input before `exp` or any other op that
/// could turn garbage into NaN.
pub fn masked(x: Tensor<2>, mask: &LossMask) -> Tensor<2> {
    x.mask_fill(mask.tensor().clone().bool_not(), 0.0)
}

/// Aggregates per-token values `[batch, width]` over the loss mask with the mini-batch's
/// denominators. Returns shape `[1]`.
pub fn aggregate(
    per_token: Tensor<2>,
    mask: &LossMask,
    normalizer: Normalizer,
    mode: Aggregation,
) -> Tensor<1> {
    let x = masked(per_token, mask);
    let tokens = normalizer.tokens.max(1) as f64;
    let sequences = normalizer.sequences.max(1) as f64;
    match mode {
        Aggregation::TokenMean => x.sum() / tokens,
        Aggregation::SeqMeanTokenMean => {
            let per_row = mask.tensor().clone().float().cast(DType::F32).sum_dim(1).clamp_min(1.0); // [b, 1]
            (x.sum_dim(1) / per_row).sum() / sequences
        }
        Aggregation::SeqMeanTokenSum => x.sum() / sequences,
        Aggregation::SeqMeanTokenSumNorm { horizon } => x.sum() / horizon.max(1) as f64,
    }
}

/// Per-token KL estimate; zero outside the loss mask.
pub fn kl_per_token(
    log_probs: Tensor<2>,
    ref_log_probs: Tensor<2>,
    mask: &LossMask,
    estimator: KlEstimator,
) -> Tensor<2> {
    let delta = (masked(ref_log_probs, mask) - masked(log_probs, mask)).clamp(-20.0, 20.0);
    match estimator {
        KlEstimator::K1 => -delta,
        KlEstimator::K2 => delta.square() * 0.5,
        KlEstimator::K3 => (delta.clone().exp() - delta - 1.0).clamp(-10.0, 10.0),
        KlEstimator::K3Plus => {
            let k3 = (delta.clone().exp() - delta.clone() - 1.0).clamp(-10.0, 10.0).detach();
            let k2 = delta.square() * 0.5;
            k3 + k2.clone() - k2.detach()
        }
    }
}

/// Checks that the batch's tensors agree in shape.
///
/// # Errors
/// [`Error::Shape`] naming the first disagreement.
pub fn check_shapes(batch: &ObjectiveBatch) -> Result<()> {
    let dims = batch.log_probs.dims();
    let mut named =
        vec![("old_log_probs", batch.old_log_probs.dims()), ("loss_mask", batch.loss_mask.tensor().dims())];
    if let Some(r) = &batch.ref_log_probs {
        named.push(("ref_log_probs", r.dims()));
    }
    for (name, d) in named {
        if d != dims {
            return Err(Error::Shape(format!("{name} is {d:?}, log_probs {dims:?}")));
        }
    }
    if batch.advantages.dims() != [dims[0]] {
        return Err(Error::Shape(format!(
            "advantages are {:?} for {} rows",
            batch.advantages.dims(),
            dims[0]
        )));
    }
    Ok(())
}

/// Reads a small tensor back to the host.
///
/// # Errors
/// [`Error::Read`] if the device read fails.
pub fn host<const D: usize>(t: Tensor<D>) -> Result<Vec<f32>> {
    t.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))
}

/// Reads a bool tensor back to the host.
///
/// # Errors
/// [`Error::Read`] if the device read fails.
pub fn host_bool<const D: usize>(t: Tensor<D, Bool>) -> Result<Vec<bool>> {
    t.try_into_vec_as::<bool>().map_err(|e| Error::Read(format!("{e:?}")))
}
