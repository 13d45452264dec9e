//! The update half of a step: π_old, then PPO mini-batches of micro-batches, a global
//! gradient-norm clip (after unscaling, when the loss is scaled) and an optimizer step
//! per mini-batch.
//!
//! One micro-batch's objective batch and gradients are in `update/micro_batch.rs`, the
//! passes over the whole model's gradients (zeros, sum over ranks, clip) in
//! `update/gradients.rs`.

mod gradients;
mod micro_batch;

use std::time::Instant;

use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use rayon::prelude::*;

use self::gradients::{sum_over_ranks, unscale_and_clip, zero_grads};
pub use self::micro_batch::{MicroBatch, micro_batch_grads, objective_batch, sequences};
use super::config::TrainConfig;
use super::scaling::LossScale;
use crate::collective::{Collective, all_gather};
use crate::mask::Normalizer;
use crate::model::{Partner, Policy};
use crate::objective::{Metrics, Objective, host};
use crate::rollout::Rollout;
use crate::token::{Owner, TokenBatch, TokenId};
use crate::{Error, Result};

/// What the rollouts half of the step produced: this rank's rows, and every rank's.
pub(super) struct Inputs<'r> {
    pub prompts: &'r [Vec<TokenId>],
    pub rollouts: &'r [Rollout],
    pub advantages: &'r [f32],
    pub global: Global<'r>,
}

impl<'r> Inputs<'r> {
    /// This rank's rows without the collective, to share with the lanes' threads.
    fn local(&self) -> Local<'r> {
        Local { prompts: self.prompts, rollouts: self.rollouts, advantages: self.advantages }
    }
}

/// This rank's rows ([`Inputs`] without the collective).
#[derive(Clone, Copy)]
struct Local<'r> {
    prompts: &'r [Vec<TokenId>],
    rollouts: &'r [Rollout],
    advantages: &'r [f32],
}

/// The step's rows on every rank (all of them with one rank), in the step's row order:
/// the denominators and the "does this mini-batch carry loss" decisions are the same on
/// every rank, and gradients are summed over ranks.
pub(super) struct Global<'g> {
    pub collective: &'g dyn Collective,
    pub senior_tokens: &'g [usize],
    pub advantages: &'g [f32],
}

/// The models of the update: the senior that trains, its gradient-free copy of the same
/// weights (which wrote the rollouts; it scores π_old), the frozen junior.
pub(super) struct Models<'j, P> {
    pub senior: P,
    pub copy: P,
    pub junior: &'j dyn Partner,
}

/// What the updates measured.
#[derive(Debug, Default)]
pub(super) struct Report {
    pub rows: usize,
    pub loss: f64,
    pub clip_frac: f64,
    pub dual_clip_frac: f64,
    pub kl: Option<f64>,
    pub extra: std::collections::BTreeMap<String, f64>,
    pub grad_norm: f64,
    pub skipped: usize,
    pub empty: usize,
    pub zero_gradient: usize,
    pub time_old: f64,
    pub time_update: f64,
    /// Gradient bytes summed over ranks (0 with one rank), the time spent waiting for the
    /// slowest rank before each sum, and the sums' time.
    pub reduced_bytes: usize,
    pub time_wait: f64,
    pub time_reduce: f64,
}

/// Rows of one forward/backward pass, with their π_old (and junior) log-probs.
struct Micro {
    rows: Vec<usize>,
    /// `None` in the step's first mini-batch: no update has happened since the rollouts,
    /// so π_old is π_θ itself (its values, detached) and needs no pass of its own.
    old: Option<Vec<f32>>,
    reference: Option<Vec<f32>>,
}

/// One PPO mini-batch: its denominators, its micro-batches (this rank's rows, computed
/// `lanes` at a time, see [`TrainConfig::lanes`]) and how many rows carry loss on all
/// ranks.
struct MiniBatch {
    normalizer: Normalizer,
    micros: Vec<Micro>,
    carrying: usize,
}

/// π_old, then one optimizer update per mini-batch (skipped, with `loss_scale` halved,
/// when its scaled gradients overflow). On error the senior comes back unchanged by the
/// failing mini-batch.
pub(super) fn run<P: Policy>(
    c: &TrainConfig,
    models: Models<'_, P>,
    objective: &dyn Objective,
    optimizer: &mut ModuleOptimizer,
    inputs: &Inputs<'_>,
    lr: f64,
    mut loss_scale: Option<&mut LossScale>,
) -> std::result::Result<(P, Report), (P, Error)> {
    let start = Instant::now();
    let Models { mut senior, copy, junior } = models;
    let ranks = inputs.global.collective;
    let lanes = crate::device::lanes(c.lanes, &senior.device());
    let mut minis = plan(c, objective, inputs, lanes);
    let scored = old_log_probs(c, &copy, junior, objective, inputs, &mut minis, lanes);
    drop(copy);
    if let Err(e) = scored {
        return Err((senior, e));
    }
    let time_old = start.elapsed().as_secs_f64();

    let mut report = Report { time_old, ..Report::default() };
    let mut totals = Metrics::new();
    let mut updates = 0usize;
    for mini in &minis {
        if mini.carrying == 0 && c.skip_empty_updates {
            report.empty += 1;
            continue;
        }
        let scale = loss_scale.as_deref().map_or(1.0, |s| s.scale);
        let grads = mini_batch_or_zero_grads(c, &senior, objective, inputs, mini, scale, lanes);
        // Every rank's gradient summed (a rank without rows of its own adds zeros).
        let summed = grads.and_then(|(grads, metrics)| {
            Ok((sum_over_ranks_timed(&senior, grads, ranks, mini, &mut report)?, metrics))
        });
        let (grads, metrics) = match summed {
            Ok(done) => done,
            Err(e) => return Err((senior, e)),
        };
        let (grads, norm) = match unscale_and_clip(&senior, grads, scale, c.grad_clip) {
            Ok(done) => done,
            Err(e) => return Err((senior, e)),
        };
        match proceed(c, loss_scale.as_deref_mut(), norm) {
            Ok(true) => {}
            Ok(false) => {
                report.skipped += 1;
                continue;
            }
            Err(e) => return Err((senior, e)),
        }
        senior = optimizer.step(lr, senior, grads);
        if mini.carrying == 0 {
            report.empty += 1;
            continue;
        }
        updates += 1;
        if norm == 0.0 {
            // Rows carried loss, yet nothing reached the weights.
            tracing::warn!(
                "an update whose rows carry loss has an all-zero gradient: the loss does not reach the weights (or every token was clipped)"
            );
            report.zero_gradient += 1;
        }
        tally(&mut report, &mut totals, mini, norm, metrics);
    }
    if ranks.size() > 1 {
        totals = match sum_metrics(ranks, &totals) {
            Ok(sum) => sum,
            Err(e) => return Err((senior, e)),
        };
    }
    averages(&mut report, &totals, updates);
    report.time_update = start.elapsed().as_secs_f64() - time_old;
    Ok((senior, report))
}

/// A mini-batch's gradients (times `scale`) and metrics; zero gradients when no row
/// carries loss (here, or on any rank): AdamW still steps on them (its moments decay,
/// weight decay moves the weights), as verl and TRL do.
fn mini_batch_or_zero_grads<P: Policy>(
    c: &TrainConfig,
    senior: &P,
    objective: &dyn Objective,
    inputs: &Inputs<'_>,
    mini: &MiniBatch,
    scale: f64,
    lanes: usize,
) -> Result<(GradientsParams, Metrics)> {
    if mini.micros.is_empty() {
        Ok((zero_grads(senior), Metrics::new()))
    } else {
        mini_batch_grads(c, senior, objective, inputs, mini, scale, lanes)
    }
}

/// `grads` summed over ranks when there are several and the mini-batch carries loss,
/// the wait for the slowest rank and the sum itself timed apart into `report`.
fn sum_over_ranks_timed<P: Policy>(
    senior: &P,
    mut grads: GradientsParams,
    ranks: &dyn Collective,
    mini: &MiniBatch,
    report: &mut Report,
) -> Result<GradientsParams> {
    if ranks.size() > 1 && mini.carrying > 0 {
        // Waiting for the slowest rank, then the sum itself, timed apart.
        let start = Instant::now();
        ranks.barrier()?;
        report.time_wait += start.elapsed().as_secs_f64();
        let start = Instant::now();
        let (sum, bytes) = sum_over_ranks(senior, grads, ranks)?;
        grads = sum;
        report.reduced_bytes += bytes;
        report.time_reduce += start.elapsed().as_secs_f64();
    }
    Ok(grads)
}

/// Whether the optimizer steps on gradients of norm `norm`: with loss scaling, as the
/// scale's state says (false on an overflow); without, an error on a non-finite norm.
fn proceed(c: &TrainConfig, loss_scale: Option<&mut LossScale>, norm: f64) -> Result<bool> {
    match (loss_scale, &c.loss_scaling) {
        (Some(state), Some(scaling)) => state.record(norm, scaling.growth_interval),
        _ if norm.is_finite() => Ok(true),
        _ => Err(Error::NonFinite(format!("gradient norm is {norm}"))),
    }
}

/// Counts an update that carried loss: its gradient norm and rows into `report`, its
/// metrics into `totals`.
fn tally(report: &mut Report, totals: &mut Metrics, mini: &MiniBatch, norm: f64, metrics: Metrics) {
    report.grad_norm += norm;
    report.rows += mini.carrying;
    for (k, v) in metrics {
        *totals.entry(k).or_default() += v;
    }
}

/// The report's means: gradient norm and loss per update, the other metrics (token-weighted
/// sums, see `mini_batch_grads`) per senior token.
fn averages(report: &mut Report, totals: &Metrics, updates: usize) {
    let per_update = updates.max(1) as f64;
    report.grad_norm /= per_update;
    report.loss = totals.get("loss").copied().unwrap_or(0.0) / per_update;
    let tokens = totals.get("senior_tokens").copied().unwrap_or(0.0).max(1.0);
    // Token-weighted sums (see `mini_batch_grads`) back to means.
    report.clip_frac = totals.get("clip_frac").copied().unwrap_or(0.0) / tokens;
    report.dual_clip_frac = totals.get("dual_clip_frac").copied().unwrap_or(0.0) / tokens;
    report.kl = totals.get("kl").or_else(|| totals.get("junior_kl")).map(|k| k / tokens);
    const NAMED: [&str; 6] = ["loss", "senior_tokens", "clip_frac", "dual_clip_frac", "kl", "junior_kl"];
    report.extra = totals
        .iter()
        .filter(|(k, _)| !NAMED.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v / tokens))
        .collect();
}

/// Mini-batches of `mini_batch_prompts` prompts (G rows each; this rank's share of each),
/// and within each the rows that can carry loss, cut into micro-batches. A row without
/// senior tokens never carries loss; a row with zero advantage carries none either when
/// the objective has no reference term (and `skip_zero_advantage` is on). Denominators
/// count every row of the mini-batch, on every rank.
fn plan(c: &TrainConfig, objective: &dyn Objective, inputs: &Inputs<'_>, lanes: usize) -> Vec<MiniBatch> {
    let global = &inputs.global;
    let skip_zero = c.skip_zero_advantage && !objective.needs_reference();
    let carries = |tokens: usize, advantage: f32| tokens > 0 && !(skip_zero && advantage == 0.0);
    let all_rows = c.mini_batch_prompts * c.group_size;
    let my_rows = all_rows / global.collective.size();
    (0..inputs.rollouts.len())
        .step_by(my_rows)
        .enumerate()
        .map(|(m, first)| {
            let all = m * all_rows..((m + 1) * all_rows).min(global.senior_tokens.len());
            let counts = &global.senior_tokens[all.clone()];
            let normalizer = Normalizer {
                tokens: counts.iter().sum(),
                sequences: counts.iter().filter(|&&n| n > 0).count(),
            };
            let carrying = all.filter(|&g| carries(global.senior_tokens[g], global.advantages[g])).count();
            let kept: Vec<usize> = (first..(first + my_rows).min(inputs.rollouts.len()))
                .filter(|&i| carries(inputs.rollouts[i].senior_tokens(), inputs.advantages[i]))
                .collect();
            let micros = parts(&kept, c.micro_batch_rows, lanes)
                .into_iter()
                .map(|rows| Micro { rows, old: None, reference: None })
                .collect();
            MiniBatch { normalizer, micros, carrying }
        })
        .collect()
}

/// `rows` cut into micro-batches computed `lanes` at a time, each pass of `lanes` sharing
/// at most `micro_rows` rows: as few parts of at most `micro_rows / lanes` (rounded up)
/// as hold them, their count rounded up to a multiple of `lanes` (no part empty), sizes
/// differing by at most one, in row order.
fn parts(rows: &[usize], micro_rows: usize, lanes: usize) -> Vec<Vec<usize>> {
    if rows.is_empty() {
        return Vec::new();
    }
    let lanes = lanes.max(1);
    let part_rows = micro_rows.div_ceil(lanes).max(1);
    let count = rows.len().div_ceil(part_rows).next_multiple_of(lanes).min(rows.len());
    let (size, longer) = (rows.len() / count, rows.len() % count);
    let mut rest = rows;
    (0..count)
        .map(|i| {
            let (part, tail) = rest.split_at(size + usize::from(i < longer));
            rest = tail;
            part.to_vec()
        })
        .collect()
}

/// Metric totals summed over ranks (each rank's keys, merged in rank order).
fn sum_metrics(ranks: &dyn Collective, totals: &Metrics) -> Result<Metrics> {
    let mine = serde_json::to_vec(totals).map_err(|e| Error::Collective(e.to_string()))?;
    let mut sum = Metrics::new();
    for bytes in all_gather(ranks, &mine)? {
        let theirs: Metrics = serde_json::from_slice(&bytes).map_err(|e| Error::Collective(e.to_string()))?;
        for (k, v) in theirs {
            *sum.entry(k).or_default() += v;
        }
    }
    Ok(sum)
}

/// `prompt ++ response` of the given rows, and where each row's response starts.
fn token_batch(inputs: Local<'_>, rows: &[usize]) -> Result<(TokenBatch, Vec<usize>)> {
    let prompt = |i: usize| inputs.prompts[inputs.rollouts[i].prompt].as_slice();
    let rows: Vec<(&[TokenId], &Rollout)> = rows.iter().map(|&i| (prompt(i), &inputs.rollouts[i])).collect();
    Ok((sequences(&rows)?, rows.iter().map(|(p, _)| p.len()).collect()))
}

/// π_old for every mini-batch after the first (see [`Micro::old`]): the rollouts' recorded
/// log-probs, or the senior before any update (its gradient-free `copy`) scoring them
/// again ([`TrainConfig::recompute_old_log_probs`]); and the junior's log-probs when the
/// objective needs a reference; all at the sampling temperature.
fn old_log_probs<P: Policy>(
    c: &TrainConfig,
    copy: &P,
    junior: &dyn Partner,
    objective: &dyn Objective,
    inputs: &Inputs<'_>,
    minis: &mut [MiniBatch],
    lanes: usize,
) -> Result<()> {
    let t = c.sampling.temperature;
    // Greedy rollouts record log-probs at temperature 1, not 0.
    let recorded = !c.recompute_old_log_probs && t > 0.0;
    let needs_reference = objective.needs_reference();
    let inputs = inputs.local();
    let score = |m: usize, micro: &mut Micro| -> Result<()> {
        if m > 0 && recorded {
            micro.old = Some(recorded_log_probs(inputs, &micro.rows));
        }
        if (m == 0 || recorded) && !needs_reference {
            return Ok(());
        }
        let (batch, responses) = token_batch(inputs, &micro.rows)?;
        if m > 0 && !recorded {
            // Scored from the response on, like the update's log-probs: prompt slots are
            // 0 in both (and masked anyway).
            micro.old = Some(host(copy.log_probs_from(&batch, t, &responses)?.detach())?);
        }
        if needs_reference {
            // Prompt slots are outside the loss mask: the junior scores the responses.
            micro.reference = Some(host(junior.score_from(&batch, t, &responses)?)?);
        }
        Ok(())
    };
    for (m, mini) in minis.iter_mut().enumerate() {
        for pass in mini.micros.chunks_mut(lanes) {
            pass.par_iter_mut().try_for_each(|micro| score(m, micro))?;
        }
    }
    Ok(())
}

/// The senior's recorded log-prob of each senior-written token of `rows`, laid out as
/// [`Policy::log_probs_from`] lays out `prompt ++ response` (`[rows, width]`, flattened);
/// prompt and junior-written slots are 0 (outside the loss mask).
fn recorded_log_probs(inputs: Local<'_>, rows: &[usize]) -> Vec<f32> {
    let prompt = |r: &Rollout| inputs.prompts[r.prompt].len();
    let rollouts: Vec<&Rollout> = rows.iter().map(|&i| &inputs.rollouts[i]).collect();
    let width = rollouts.iter().map(|r| prompt(r) + r.tokens.len()).max().unwrap_or(0);
    let mut out = vec![0.0; rollouts.len() * width];
    for (row, r) in out.chunks_mut(width.max(1)).zip(&rollouts) {
        let slots = row[prompt(r)..].iter_mut();
        for ((slot, &lp), &owner) in slots.zip(&r.log_probs).zip(&r.owners) {
            if owner == Owner::Senior {
                *slot = lp;
            }
        }
    }
    out
}

/// Forward and backward over a mini-batch's micro-batches, with the mini-batch's
/// denominators, gradients accumulated (times `loss_scale`). Metrics: `loss` summed
/// (micro-batch losses add up), the others weighted by the micro-batch's senior tokens.
fn mini_batch_grads<P: Policy>(
    c: &TrainConfig,
    senior: &P,
    objective: &dyn Objective,
    inputs: &Inputs<'_>,
    mini: &MiniBatch,
    loss_scale: f64,
    lanes: usize,
) -> Result<(GradientsParams, Metrics)> {
    let inputs = inputs.local();
    let one = |senior: &P, micro: &Micro| {
        let rows: Vec<(&[TokenId], &Rollout)> = micro
            .rows
            .iter()
            .map(|&i| (inputs.prompts[inputs.rollouts[i].prompt].as_slice(), &inputs.rollouts[i]))
            .collect();
        let advantages: Vec<f32> = micro.rows.iter().map(|&i| inputs.advantages[i]).collect();
        let batch = MicroBatch {
            rows: &rows,
            advantages: &advantages,
            old: micro.old.as_deref(),
            reference: micro.reference.as_deref(),
            normalizer: mini.normalizer,
        };
        micro_batch_grads(senior, objective, c.sampling.temperature, &batch, loss_scale)
    };
    let mut accumulator = GradientsAccumulator::<P>::new();
    let mut metrics = Metrics::new();
    for pass in mini.micros.chunks(lanes) {
        let results = match pass {
            [micro] => vec![one(senior, micro)],
            // Each lane differentiates its own leaves of the same weights (`fork`: same
            // parameter ids, new autodiff nodes), so the lanes' graphs share no node and
            // Burn runs their backward passes apart; gradients are summed in row order.
            _ => {
                let device = senior.device();
                pass.par_iter().map(|micro| one(&senior.clone().fork(&device), micro)).collect()
            }
        };
        for (micro, result) in pass.iter().zip(results) {
            let (grads, micro_metrics) = result?;
            // Metrics are weighted by the micro-batch's senior tokens, counted here: an
            // objective need not report them (one that does not would otherwise zero them).
            let tokens = micro.rows.iter().map(|&i| inputs.rollouts[i].senior_tokens()).sum::<usize>() as f64;
            for (key, value) in micro_metrics.iter().filter(|(key, _)| *key != "senior_tokens") {
                let weighted = if key == "loss" { *value } else { value * tokens };
                *metrics.entry(key.clone()).or_default() += weighted;
            }
            *metrics.entry("senior_tokens".into()).or_default() += tokens;
            accumulator.accumulate(senior, grads);
        }
    }
    Ok((accumulator.grads(), metrics))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::parts;

    proptest! {
        /// Every row once, in order; no part empty or over its share of a pass; parts of
        /// near-equal size.
        #[test]
        fn parts_cover_the_rows_in_passes_of_bounded_size(
            n in 0usize..100, micro_rows in 1usize..20, lanes in 1usize..6,
        ) {
            let rows: Vec<usize> = (100..100 + n).collect();
            let cut = parts(&rows, micro_rows, lanes);
            prop_assert_eq!(cut.concat(), rows);
            let most = micro_rows.div_ceil(lanes);
            prop_assert!(cut.iter().all(|p| !p.is_empty() && p.len() <= most), "{:?}", cut);
            let sizes: Vec<usize> = cut.iter().map(Vec::len).collect();
            prop_assert!(sizes.iter().max().unwrap_or(&0) - sizes.iter().min().unwrap_or(&0) <= 1);
            // As many parts as the bound on their size requires, rounded up to a whole pass
            // where there are rows enough.
            let passes = n.div_ceil(most).next_multiple_of(lanes);
            prop_assert_eq!(cut.len(), passes.min(n), "{:?}", sizes);
        }
    }
}
