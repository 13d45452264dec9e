//! One micro-batch as the objective sees it, and its gradients: the public face of the
//! update, which benches and tests drive without a whole step.

use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::DType;

use crate::mask::{Normalizer, RolloutMasks};
use crate::model::Policy;
use crate::objective::{Metrics, Objective, ObjectiveBatch};
use crate::rollout::Rollout;
use crate::token::{Owner, TokenBatch, TokenId};
use crate::{Error, Result};

/// One micro-batch's rows and what the step computed for them, laid out as [`sequences`]
/// lays out the rows (`[rows, width]` row-major).
#[derive(Debug, Clone, Copy)]
pub struct MicroBatch<'a> {
    /// `(prompt, rollout)` of each row.
    pub rows: &'a [(&'a [TokenId], &'a Rollout)],
    /// One advantage per row.
    pub advantages: &'a [f32],
    /// π_old (`None`: the current log-probs, detached).
    pub old: Option<&'a [f32]>,
    /// The reference's (the junior's) log-probs, if the objective needs them.
    pub reference: Option<&'a [f32]>,
    /// The denominators of the mini-batch it belongs to.
    pub normalizer: Normalizer,
}

/// One micro-batch's parameter gradients and the objective's metrics, as a training step
/// computes them: the senior's log-probs of `rows` from each response's start
/// ([`Policy::scored_from`]), the objective on a leaf holding their values (laid out as
/// [`objective_batch`] does), and the leaf's gradient, times `loss_scale` (1 = off; see
/// [`LossScaling`](crate::train::LossScaling)), handed back to the senior, so a decoder keeps no
/// vocabulary-wide tensor per position for backward.
///
/// # Errors
/// Model and objective errors; [`Error::NonFinite`] for a NaN or infinite loss.
pub fn micro_batch_grads<P: Policy>(
    senior: &P,
    objective: &dyn Objective,
    temperature: f32,
    micro: &MicroBatch<'_>,
    loss_scale: f64,
) -> Result<(GradientsParams, Metrics)> {
    let (tokens, prompt_lengths) = token_rows(micro.rows)?;
    let scored = senior.scored_from(&tokens, temperature, &prompt_lengths)?;
    let leaf = scored.values.clone().require_grad();
    let batch = batch_around(leaf.clone(), micro)?;
    let out = objective.loss(&batch)?;
    let loss = out.metrics.get("loss").copied().unwrap_or(f64::NAN);
    if !loss.is_finite() {
        return Err(Error::NonFinite(format!("loss is {loss}")));
    }
    // Every micro-batch row carries senior tokens under the loss mask: a loss that does
    // not reach the log-probs is a broken objective, not a zero gradient to step on.
    let unreached = || {
        Error::Plugin(format!(
            "objective `{}`: its loss does not depend on the log-probs, so no gradient reaches the senior",
            objective.name()
        ))
    };
    if !out.loss.is_tracked() {
        return Err(unreached());
    }
    let mut upstream = leaf.grad(&out.loss.backward()).ok_or_else(unreached)?;
    if loss_scale != 1.0 {
        upstream = upstream * loss_scale;
    }
    let grads = scored.gradients(upstream, senior)?;
    Ok((grads, out.metrics))
}

/// `prompt ++ response` of each `(prompt, rollout)` row, right-padded.
///
/// # Errors
/// [`Error::Shape`] for no rows.
pub fn sequences(rows: &[(&[TokenId], &Rollout)]) -> Result<TokenBatch> {
    TokenBatch::new(rows.iter().map(|(p, r)| p.iter().chain(&r.tokens).copied().collect()).collect(), 0)
}

/// What the objective sees of `micro`: the senior's log-probs with gradients at
/// `temperature`, scored from each response's start only (prompt slots are 0 and outside
/// the loss mask, so the LM head never runs over the prompt), π_old, the reference, the
/// advantages, the loss mask from each rollout's owners (junior tokens carry no loss) and
/// the mini-batch's normalizer.
///
/// # Errors
/// Model errors; [`Error::Shape`] if `old` or `reference` do not fit.
pub fn objective_batch<P: Policy>(
    senior: &P,
    temperature: f32,
    micro: &MicroBatch<'_>,
) -> Result<ObjectiveBatch> {
    let (tokens, prompt_lengths) = token_rows(micro.rows)?;
    let log_probs = senior.log_probs_from(&tokens, temperature, &prompt_lengths)?;
    batch_around(log_probs, micro)
}

/// The rows as [`sequences`] and where each response starts.
fn token_rows(rows: &[(&[TokenId], &Rollout)]) -> Result<(TokenBatch, Vec<usize>)> {
    Ok((sequences(rows)?, rows.iter().map(|(p, _)| p.len()).collect()))
}

/// [`objective_batch`] around given log-probs `[rows, width]` (with a graph, or a leaf).
fn batch_around(log_probs: Tensor<2>, micro: &MicroBatch<'_>) -> Result<ObjectiveBatch> {
    let MicroBatch { rows, advantages, old, reference, normalizer } = *micro;
    let prompt_lengths: Vec<usize> = rows.iter().map(|(p, _)| p.len()).collect();
    let device = log_probs.device();
    let [n, width] = log_probs.dims();
    let table = |v: &[f32]| {
        if v.len() != n * width {
            return Err(Error::Shape(format!("{} log-probs for [{n}, {width}]", v.len())));
        }
        Ok(Tensor::<2>::from_data(TensorData::new(v.to_vec(), [n, width]), (&device, DType::F32)))
    };
    let owners: Vec<Vec<Owner>> = rows.iter().map(|(_, r)| r.owners.clone()).collect();
    let masks = RolloutMasks::new(&prompt_lengths, &owners, width, &device)?;
    Ok(ObjectiveBatch {
        old_log_probs: match old {
            Some(old) => table(old)?,
            None => log_probs.clone().detach(),
        },
        ref_log_probs: reference.map(table).transpose()?,
        log_probs,
        advantages: Tensor::from_data(TensorData::new(advantages.to_vec(), [n]), (&device, DType::F32)),
        loss_mask: masks.loss_mask(),
        normalizer,
    })
}
