//! The trainer's settings ([`TrainConfig`]) and the learning-rate schedule.

use serde::{Deserialize, Serialize};

use super::scaling::LossScaling;
use crate::advantage::AdvantageNorm;
use crate::rollout::{CatchUp, Sampling};
use crate::{Error, Result};

/// How the learning rate moves over the run.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LrSchedule {
    /// The base rate throughout (the release's default).
    #[default]
    Constant,
    /// Linear warm-up from 0 over `warmup_steps`, then constant.
    Warmup {
        /// Steps to reach the base rate.
        warmup_steps: usize,
    },
    /// Linear warm-up, then a cosine decay to `min_ratio` × the base rate at the last step.
    Cosine {
        /// Steps to reach the base rate.
        #[serde(default)]
        warmup_steps: usize,
        /// Floor of the decay, as a fraction of the base rate.
        #[serde(default)]
        min_ratio: f64,
    },
}

impl LrSchedule {
    /// The rate for `step` (0-based) of `total`, from the base rate `lr`.
    ///
    /// ```
    /// use trlvr::train::LrSchedule;
    /// let s = LrSchedule::Cosine { warmup_steps: 2, min_ratio: 0.1 };
    /// assert_eq!(s.at(0, 10, 1.0), 0.5); // warm-up: (step + 1) / warmup
    /// assert_eq!(s.at(1, 10, 1.0), 1.0);
    /// assert!((s.at(9, 10, 1.0) - 0.1).abs() < 1e-12); // the floor at the last step
    /// ```
    pub fn at(&self, step: usize, total: usize, lr: f64) -> f64 {
        let warm = |w: usize| if step < w { (step + 1) as f64 / w as f64 } else { 1.0 };
        match *self {
            LrSchedule::Constant => lr,
            LrSchedule::Warmup { warmup_steps } => lr * warm(warmup_steps),
            LrSchedule::Cosine { warmup_steps, min_ratio } => {
                if step < warmup_steps {
                    return lr * warm(warmup_steps);
                }
                let span = total.saturating_sub(warmup_steps + 1).max(1) as f64;
                let progress = ((step - warmup_steps) as f64 / span).min(1.0);
                let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
                lr * (min_ratio + (1.0 - min_ratio) * cosine)
            }
        }
    }
}

/// Everything the training loop needs besides the models, data and objective. Defaults
/// are the release's (method.md §3), with the response cap for a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Training steps (one rollout batch each).
    pub steps: usize,
    /// Prompts per step (16).
    pub prompts_per_step: usize,
    /// G: rollouts per prompt (8).
    pub group_size: usize,
    /// Prompts per PPO mini-batch (8: two optimizer updates per step).
    pub mini_batch_prompts: usize,
    /// Rows per forward/backward pass; bounds memory, never changes the result beyond
    /// float summation order.
    pub micro_batch_rows: usize,
    /// Parts of each micro-batch computed at once, each on a thread of its own (0: one
    /// per thread of Rayon's pool on the flex CPU backend, whose elementwise ops run on
    /// one thread each; 1 on other backends, which parallelise inside each op). Memory
    /// stays bounded by `micro_batch_rows`: the parts share its rows.
    pub lanes: usize,
    /// Response cap in tokens ([`MAX_NEW_TOKENS`](crate::rollout::MAX_NEW_TOKENS)).
    pub max_new_tokens: usize,
    /// Rollout sampling (T 0.6, no truncation); π_old and the loss use its temperature.
    pub sampling: Sampling,
    /// When a model reads the other's tokens during rollouts.
    pub catch_up: CatchUp,
    /// Base learning rate (1e-6).
    pub lr: f64,
    /// How the rate moves.
    pub lr_schedule: LrSchedule,
    /// AdamW weight decay (0.01).
    pub weight_decay: f64,
    /// AdamW β1, β2 and ε.
    pub adam_betas: [f64; 2],
    /// AdamW ε.
    pub adam_eps: f64,
    /// Global gradient-norm clip (1.0; 0 = off).
    pub grad_clip: f64,
    /// Rewards -> advantages.
    pub advantage: AdvantageNorm,
    /// Rows whose advantage is 0 add exactly nothing to a loss without a reference term,
    /// so their forward and backward passes are skipped (the denominators still count
    /// them). Turn off to do the full work anyway (benchmarks).
    pub skip_zero_advantage: bool,
    /// Skip the optimizer step of a mini-batch in which no row carries loss (every
    /// advantage 0, or no senior token). Off by default: such a mini-batch steps AdamW on
    /// a zero gradient, as verl and TRL do, so the moments decay and weight decay moves
    /// the weights on every mini-batch.
    pub skip_empty_updates: bool,
    /// π_old of a step's later mini-batches. Off (default): the log-probs the rollouts
    /// recorded, the same quantity (the senior's untruncated log-probs at the sampling
    /// temperature, from the weights that wrote them) up to the rounding between cached
    /// decoding and a full pass. On: a full pass scores them again, as the release does;
    /// the safer choice when rollouts decode in bf16 or f16 (coarser rounding) or a
    /// senior's recorded log-probs are not exact.
    pub recompute_old_log_probs: bool,
    /// Seed of the data order and of every rollout.
    pub seed: u64,
    /// Validate the senior solo every this many steps (0 = never); also after the last.
    pub validate_every: usize,
    /// Samples per validation problem (pass@1 is their mean correctness).
    pub validation_samples: usize,
    /// Sampling for validation (the evaluation settings).
    pub validation_sampling: Sampling,
    /// Response cap for validation (default: `max_new_tokens`).
    pub validation_max_new_tokens: Option<usize>,
    /// Write a checkpoint every this many steps (0 = only after the last step).
    pub checkpoint_every: usize,
    /// Checkpoints kept besides the best by validation.
    pub keep_last: usize,
    /// Rollouts per step written to `samples.jsonl` (rank 0's, with several ranks).
    pub samples_per_step: usize,
    /// Burn's activation checkpointing for the senior's backward pass: memory-bound ops
    /// (norms, activations, softmax, elementwise) are recomputed from their inputs instead
    /// of kept, compute-bound ones (matmuls) keep their outputs. Same gradients, less
    /// memory (docs/memory.md). Burn sets it on the device, so the senior must live on
    /// `device.autodiff().gradient_checkpointing()`; `trlvr train` does that.
    pub gradient_checkpointing: bool,
    /// With several ranks ([`Trainer::with_collective`](super::Trainer::with_collective)):
    /// compare a fingerprint of the senior's weights across ranks every this many steps
    /// (0 = never); weights that drifted apart stop the run with an error.
    pub sync_check_every: usize,
    /// Dynamic loss scaling ([`LossScaling`]): needed by a senior computing in f16, whose
    /// small activation gradients would otherwise underflow. Off by default.
    pub loss_scaling: Option<LossScaling>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            steps: 200,
            prompts_per_step: 16,
            group_size: 8,
            mini_batch_prompts: 8,
            micro_batch_rows: 8,
            lanes: 0,
            max_new_tokens: crate::rollout::MAX_NEW_TOKENS,
            sampling: Sampling::training(),
            catch_up: CatchUp::default(),
            lr: 1e-6,
            lr_schedule: LrSchedule::Constant,
            weight_decay: 0.01,
            adam_betas: [0.9, 0.999],
            adam_eps: 1e-8,
            grad_clip: 1.0,
            advantage: AdvantageNorm::GroupStd,
            skip_zero_advantage: true,
            skip_empty_updates: false,
            recompute_old_log_probs: false,
            seed: 0,
            validate_every: 20,
            validation_samples: 1,
            validation_sampling: Sampling::evaluation(),
            validation_max_new_tokens: None,
            checkpoint_every: 20,
            keep_last: 2,
            samples_per_step: 2,
            gradient_checkpointing: false,
            sync_check_every: 10,
            loss_scaling: None,
        }
    }
}

impl TrainConfig {
    /// Checks the ranges.
    ///
    /// # Errors
    /// [`Error::Config`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("steps", self.steps),
            ("prompts_per_step", self.prompts_per_step),
            ("group_size", self.group_size),
            ("mini_batch_prompts", self.mini_batch_prompts),
            ("micro_batch_rows", self.micro_batch_rows),
            ("max_new_tokens", self.max_new_tokens),
            ("validation_samples", self.validation_samples),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(Error::Config(format!("{name} must be at least 1")));
        }
        if !self.prompts_per_step.is_multiple_of(self.mini_batch_prompts) {
            return Err(Error::Config(format!(
                "mini_batch_prompts ({}) must divide prompts_per_step ({})",
                self.mini_batch_prompts, self.prompts_per_step
            )));
        }
        if self.group_size < 2 {
            return Err(Error::Config(
                "group_size must be at least 2: a group of one rollout has every advantage 0 (its reward minus \
                 its own mean), so nothing could be learned"
                    .into(),
            ));
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(Error::Config(format!(
                "lr must be finite and > 0 (0 learns nothing), got {}",
                self.lr
            )));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(Error::Config(format!("weight_decay must be >= 0, got {}", self.weight_decay)));
        }
        if !(self.grad_clip.is_finite() && self.grad_clip >= 0.0) {
            return Err(Error::Config(format!("grad_clip must be >= 0, got {}", self.grad_clip)));
        }
        if self.adam_betas.iter().any(|b| !(0.0..1.0).contains(b)) {
            return Err(Error::Config(format!("adam_betas must lie in [0, 1), got {:?}", self.adam_betas)));
        }
        // The optimizer's state is f32 (master weights stay f32 under mixed precision): an
        // ε that rounds to 0 there turns the first zero-gradient step into 0/0 = NaN.
        if !(self.adam_eps.is_finite() && (self.adam_eps as f32) > 0.0) {
            return Err(Error::Config(format!(
                "adam_eps must be > 0 and representable in f32 (the optimizer's state), got {}",
                self.adam_eps
            )));
        }
        if let LrSchedule::Cosine { min_ratio, .. } = self.lr_schedule
            && !(0.0..=1.0).contains(&min_ratio)
        {
            return Err(Error::Config(format!("lr_schedule.min_ratio must lie in [0, 1], got {min_ratio}")));
        }
        if let Some(scaling) = &self.loss_scaling {
            scaling.validate()?;
        }
        self.sampling.validate()?;
        self.validation_sampling.validate()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn rates_stay_between_the_floor_and_the_base(
            warmup in 0usize..20, total in 1usize..200, min_ratio in 0.0f64..=1.0, lr in 1e-8f64..1.0,
        ) {
            let schedules = [
                LrSchedule::Constant,
                LrSchedule::Warmup { warmup_steps: warmup },
                LrSchedule::Cosine { warmup_steps: warmup, min_ratio },
            ];
            for s in schedules {
                let rates: Vec<f64> = (0..total).map(|step| s.at(step, total, lr)).collect();
                prop_assert!(rates.iter().all(|&r| r >= 0.0 && r <= lr * (1.0 + 1e-12)), "{s:?}: {rates:?}");
                // Rising during warm-up, never rising after it.
                let w = match s { LrSchedule::Constant => 0, LrSchedule::Warmup { warmup_steps } | LrSchedule::Cosine { warmup_steps, .. } => warmup_steps };
                for k in 1..total {
                    if k < w { prop_assert!(rates[k] > rates[k - 1]); } else if k > w { prop_assert!(rates[k] <= rates[k - 1] * (1.0 + 1e-12)); }
                }
                if let LrSchedule::Cosine { .. } = s && total > w + 1 {
                    // The floor is reached at the last step.
                    prop_assert!((rates[total - 1] - lr * min_ratio).abs() <= 1e-12, "{rates:?}");
                }
            }
        }
    }
}
