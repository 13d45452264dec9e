//! Long: one training step reads as a single data flow beside the public types it fills;
//! the update, config, checkpoints, run folders and SFT are split out.
//!
//! The trainer: GRPO on senior-written tokens, with tandem (TRLVR) or solo (GRPO,
//! junior-KL) rollouts (method.md §2-4). Generic over the traits: any [`Policy`] as
//! senior, any [`Partner`] as junior, any schedule, objective and verifier.
//!
//! One [`Trainer::step`] reads as the data flow, one function per arrow:
//!
//! ```text
//! prompts (seeded, shuffled per epoch) -> rollouts (a gradient-free copy of the senior
//!   and the frozen junior) -> rewards (verifier) -> group advantages -> π_old (a pass of
//!   its own only for mini-batches after the first: before the first update π_old is π_θ)
//!   and the junior's log-probs if the objective asks -> for each PPO mini-batch: micro-batches
//!   (loss with the mini-batch's denominators, backward, accumulate) -> global-norm clip
//!   (after unscaling, with loss scaling: an overflowing update is skipped) -> AdamW step
//! ```
//!
//! With several ranks ([`Trainer::with_collective`], [`crate::collective`]), each rank
//! rolls out its share of every mini-batch's prompt groups, and gradients are summed over
//! ranks before the clip: N ranks train as one process would.
//!
//! Everything a resumed run needs is the senior's weights, the optimizer state and a
//! [`TrainState`]: the data order and every random stream are functions of the seed and
//! the step, so a resumed run repeats the uninterrupted one exactly. [`Trainer::fit`]
//! drives steps, validation and checkpoints in a [`RunDir`].
//!
//! ```
//! use burn::prelude::*;
//! use trlvr::prelude::*;
//! use trlvr::train::{Example, Task, TrainConfig, Trainer};
//!
//! // Toy task: the reward is 1 when the response ends with token 2 before EOS (3).
//! #[derive(Debug)]
//! struct EndsWith2;
//! impl Verifier for EndsWith2 {
//!     fn verify(&self, response: &str, _: &str) -> Reward {
//!         let correct = response.ends_with("2 3");
//!         Reward { value: f32::from(u8::from(correct)), correct, reason: String::new() }
//!     }
//! }
//! let text = |ids: &[TokenId]| ids.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" ");
//! let classes = TokenClasses::from_texts(&[" a", " b", " c", "<eos>"], &[3])?;
//! let device = Device::default().autodiff();
//! let senior = BigramLm::random(4, 0.5, &device);
//! let junior = BigramLm::random(4, 0.5, &Device::default());
//! let examples = vec![Example { prompt: vec![0], reference: String::new() }];
//! let task = Task { train: &examples, validation: &[], verifier: &EndsWith2,
//!     validation_verifier: &EndsWith2, text: &text, classes: &classes };
//! let config = TrainConfig { steps: 2, prompts_per_step: 2, mini_batch_prompts: 1, group_size: 4,
//!     max_new_tokens: 6, lr: 0.05, ..TrainConfig::default() };
//! let grpo = Grpo::new(GrpoConfig::default())?;
//! let schedule = WordBoundary::new(0.5, 32)?;
//! let mut trainer = Trainer::new(config, senior, &junior, &schedule, &grpo, task)?;
//! let out = trainer.step()?;
//! assert_eq!(out.metrics.step, 1);
//! assert!(out.metrics.reward_mean >= 0.0 && out.metrics.senior_share <= 1.0);
//! # Ok::<(), trlvr::Error>(())
//! ```

mod checkpoint;
mod config;
mod run;
mod scaling;
pub mod sft;
mod update;

use std::time::Instant;

use burn::optim::{AdamWConfig, ModuleOptimizer};
use burn::tensor::GradientCheckpointingStrategy;
use cpu_time::ProcessTime;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use checkpoint::verify as verify_checkpoint;
pub use config::{LrSchedule, TrainConfig};
pub use run::{RunDir, StepDir};
pub use scaling::{LossScale, LossScaling};
pub use sft::{SftConfig, SftExample, fit_sft, sft_loss};
pub use update::{MicroBatch, micro_batch_grads, objective_batch, sequences};

use crate::advantage::advantages;
use crate::collective::{Collective, Shard, Single, agree, weights_fingerprint};
use crate::model::{Partner, Policy};
use crate::objective::Objective;
use crate::reward::{RewardInput, Rewards, Scored};
use crate::rollout::{Progress, Rollout, RolloutConfig, RolloutEngine, streams};
use crate::schedule::{HandoffSchedule, Solo};
use crate::token::{Owner, TokenId};
use crate::verifier::Verifier;
use crate::vocab::TokenClasses;
use crate::{Error, Result};

/// Salts keeping the data order, rollouts and validation on separate streams.
const DATA_STREAM: u64 = 0x0D47_A5EE_D000_0001;
const ROLLOUT_STREAM: u64 = 0x2011_0075_EED0_0002;
const VALIDATION_STREAM: u64 = 0x7A11_DA7E_5EED_0003;

/// One training problem: the chat-formatted prompt's ids and the reference answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Prompt token ids (chat template applied).
    pub prompt: Vec<TokenId>,
    /// The reference answer, as the verifier expects it.
    pub reference: String,
}

/// The examples whose prompts have at most `max_tokens` tokens, and how many were longer:
/// the release drops overlong prompts when it loads the data (method.md §2).
///
/// ```
/// use trlvr::train::{Example, drop_long_prompts};
/// let e = |n: usize| Example { prompt: vec![0; n], reference: String::new() };
/// let (kept, dropped) = drop_long_prompts(vec![e(3), e(5), e(4)], 4);
/// assert_eq!((kept.len(), dropped), (2, 1));
/// ```
pub fn drop_long_prompts(examples: Vec<Example>, max_tokens: usize) -> (Vec<Example>, usize) {
    let before = examples.len();
    let kept: Vec<Example> = examples.into_iter().filter(|e| e.prompt.len() <= max_tokens).collect();
    let dropped = before - kept.len();
    (kept, dropped)
}

/// Token ids -> text, for the verifier and the logs.
pub trait Detokenize: Send + Sync {
    /// The text of `ids`.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when the ids cannot be decoded: an error, not an empty text
    /// that the verifier would silently grade 0.
    fn text(&self, ids: &[TokenId]) -> Result<String>;
}

impl<F: Fn(&[TokenId]) -> String + Send + Sync> Detokenize for F {
    fn text(&self, ids: &[TokenId]) -> Result<String> {
        Ok(self(ids))
    }
}

impl Detokenize for tokenizers::Tokenizer {
    /// Special tokens (EOS, chat markers) are left out.
    fn text(&self, ids: &[TokenId]) -> Result<String> {
        self.decode(ids, true).map_err(|e| Error::Tokenizer {
            path: "<decoding a response>".into(),
            message: format!("cannot decode ids {ids:?}: {e}"),
        })
    }
}

/// The problem side of training: data, how answers are judged and how ids read.
#[derive(Clone, Copy)]
pub struct Task<'a> {
    /// Training problems.
    pub train: &'a [Example],
    /// Held-out problems for validation (may be empty).
    pub validation: &'a [Example],
    /// The training reward (method.md §1: the last `\boxed{}` only).
    pub verifier: &'a dyn Verifier,
    /// The grader for validation (may be more lenient).
    pub validation_verifier: &'a dyn Verifier,
    /// Ids -> text.
    pub text: &'a dyn Detokenize,
    /// Word boundaries, paragraph ends and EOS ids of the shared vocabulary.
    pub classes: &'a TokenClasses,
}

impl std::fmt::Debug for Task<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("train", &self.train.len())
            .field("validation", &self.validation.len())
            .finish()
    }
}

/// What a resumed run needs besides weights and optimizer state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Steps completed.
    pub step: usize,
    /// The best validation so far: (step, pass@1).
    pub best: Option<(usize, f64)>,
    /// The loss scale, when the run scales its loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<LossScale>,
}

/// AdamW as `config` sets it, without state.
pub(crate) fn optimizer(config: &TrainConfig) -> ModuleOptimizer {
    AdamWConfig::new()
        .with_beta_1(config.adam_betas[0] as f32)
        .with_beta_2(config.adam_betas[1] as f32)
        .with_epsilon(config.adam_eps as f32)
        .with_weight_decay(config.weight_decay as f32)
        .init()
}

/// One line of `metrics.jsonl`: what a step did and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// The step just completed (1-based).
    pub step: usize,
    /// Passes over the training set started so far (1-based).
    pub epoch: usize,
    /// Mean reward of the step's rollouts (the weighted sum of the reward terms).
    pub reward_mean: f64,
    /// Each reward term's mean, unweighted, by name (`correct`, and any the recipe adds).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub rewards: std::collections::BTreeMap<String, f64>,
    /// Fraction of rollouts judged correct.
    pub accuracy: f64,
    /// Fraction of response tokens the senior wrote.
    pub senior_share: f64,
    /// Mean response length in tokens.
    pub response_len_mean: f64,
    /// Response tokens of the step's rollouts (every rank's), both authors.
    #[serde(default)]
    pub tokens: usize,
    /// ... of which the senior wrote (the rest are the junior's).
    #[serde(default)]
    pub senior_tokens: usize,
    /// Longest response.
    pub response_len_max: usize,
    /// Fraction of rollouts cut by the token budget.
    pub truncation_rate: f64,
    /// Rows that carried loss (non-zero advantage, or all rows when not skipping), in the
    /// updates made (not the skipped ones).
    pub rows_updated: usize,
    /// Mean over the updates made of the objective's loss (this and the other loss
    /// metrics are 0 when every update of the step was skipped).
    pub loss: f64,
    /// Fraction of senior tokens whose ratio was clipped.
    pub clip_frac: f64,
    /// Fraction of senior tokens hit by the dual clip.
    pub dual_clip_frac: f64,
    /// Mean KL estimate, when the objective has one (`kl` or `junior_kl`).
    pub kl: Option<f64>,
    /// The objective's other metrics, token means (`junior_kl_clamped`, say: the fraction
    /// of tokens at k3's clamp).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub objective: std::collections::BTreeMap<String, f64>,
    /// Global gradient norm before clipping (mean over the updates made).
    pub grad_norm: f64,
    /// Mini-batches in which no row carried loss: AdamW stepped on a zero gradient (or,
    /// with `skip_empty_updates`, not at all). The loss metrics leave them out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty_updates: usize,
    /// Mini-batches whose update was skipped: their gradients overflowed the loss scale.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_updates: usize,
    /// Mini-batches with rows carrying loss whose gradient was exactly zero: the loss
    /// does not reach the weights (an objective returning constants, say). Warned about.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zero_gradient_updates: usize,
    /// The loss scale after the step, when the run scales its loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<f64>,
    /// Learning rate of this step.
    pub lr: f64,
    /// Response tokens written per second of rollout.
    pub rollout_tokens_per_s: f64,
    /// Response tokens per second of the whole step.
    pub tokens_per_s: f64,
    /// Wall time of the step.
    pub time_s: f64,
    /// ... of which rollouts (and rewards).
    pub time_rollout_s: f64,
    /// ... π_old and reference log-probs.
    pub time_old_s: f64,
    /// ... forward, backward and optimizer updates.
    pub time_update_s: f64,
    /// Process CPU time (all threads) of the rollouts: over `time_rollout_s`, how many
    /// cores they kept busy.
    #[serde(default)]
    pub cpu_rollout_s: f64,
    /// ... and of π_old and the updates, against `time_old_s + time_update_s`.
    #[serde(default)]
    pub cpu_update_s: f64,
    /// Solo pass@1 on the validation set, on the steps that validate.
    pub validation_pass1: Option<f64>,
    /// With several ranks: bytes each rank summed with the others this step (gradients,
    /// and the rollouts' rewards and counts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reduced_bytes: usize,
    /// ... the seconds this rank waited for the slowest one before summing gradients
    /// (part of `time_update_s`),
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub time_wait_s: f64,
    /// ... and the seconds the sums took, host staging included (part of `time_update_s`).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub time_reduce_s: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// A rollout kept for `samples.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSample {
    /// The step.
    pub step: usize,
    /// The reference answer.
    pub reference: String,
    /// Its reward.
    pub reward: f32,
    /// Why.
    pub reason: String,
    /// The response with each author's run marked `[S]` / `[J]`.
    pub text: String,
}

/// What [`Trainer::fit`] is doing, for progress displays: validation takes minutes on a
/// CPU, so it reports as it goes, like the rollouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitProgress {
    /// The step's rollouts.
    Rollout(Progress),
    /// Validation: `done` of `problems` finished (`correct` of their samples right), and
    /// the rollouts of the problems under way.
    Validation {
        /// Problems finished.
        done: usize,
        /// Problems in all.
        problems: usize,
        /// Correct samples among the finished problems.
        correct: usize,
        /// The current batch's rollouts.
        rollout: Progress,
    },
}

/// What one step returns.
#[derive(Debug, Clone)]
pub struct StepOutput {
    /// The metrics line.
    pub metrics: StepMetrics,
    /// A few rollouts, marked by author.
    pub samples: Vec<StepSample>,
}

/// Trains a senior. See the [module docs](self).
pub struct Trainer<'a, P: Policy> {
    config: TrainConfig,
    /// Always `Some` between calls; taken while the optimizer consumes it.
    senior: Option<P>,
    junior: &'a dyn Partner,
    schedule: &'a dyn HandoffSchedule,
    objective: &'a dyn Objective,
    task: Task<'a>,
    rewards: Rewards,
    optimizer: ModuleOptimizer,
    state: TrainState,
    export: Option<Exporter<'a, P>>,
    collective: &'a dyn Collective,
}

/// Writes the senior in an interchange format (Hugging Face safetensors, say) into a
/// checkpoint folder.
pub type Exporter<'a, P> = Box<dyn Fn(&P, &std::path::Path) -> Result<()> + 'a>;

impl<P: Policy> std::fmt::Debug for Trainer<'_, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer").field("config", &self.config).field("state", &self.state).finish()
    }
}

impl<'a, P: Policy> Trainer<'a, P> {
    /// A trainer at step 0. `senior` must live on an autodiff device
    /// (`Device::default().autodiff()`); the junior is only ever read.
    ///
    /// # Errors
    /// [`Error::Config`] for bad settings, a senior without autodiff, an objective that
    /// needs the junior's log-probs under a non-solo schedule, or no training problems;
    /// [`Error::Vocabulary`] when senior and junior do not share a vocabulary.
    pub fn new(
        config: TrainConfig,
        senior: P,
        junior: &'a dyn Partner,
        schedule: &'a dyn HandoffSchedule,
        objective: &'a dyn Objective,
        task: Task<'a>,
    ) -> Result<Self> {
        config.validate()?;
        if !senior.device().is_autodiff() {
            return Err(Error::Config(
                "the senior must live on an autodiff device (Device::...().autodiff())".into(),
            ));
        }
        let checkpointing = senior.device().gradient_checkpointing_strategy();
        if config.gradient_checkpointing != (checkpointing == Some(GradientCheckpointingStrategy::Balanced)) {
            return Err(Error::Config(format!(
                "gradient_checkpointing = {} but the senior's device has {checkpointing:?}: load the senior \
                 on device.autodiff().gradient_checkpointing() exactly when the switch is on",
                config.gradient_checkpointing
            )));
        }
        if objective.needs_reference() && !schedule.senior_only() {
            return Err(Error::Config(format!(
                "objective {:?} needs the junior's log-probs of the senior's own samples, but schedule {:?} \
                 lets the junior write: use the solo schedule (method.md §4)",
                objective.name(),
                schedule.name()
            )));
        }
        if task.train.is_empty() || task.train.iter().any(|e| e.prompt.is_empty()) {
            return Err(Error::Config(
                "need at least one training problem, none with an empty prompt".into(),
            ));
        }
        let copy = rollout_copy(&senior)?;
        RolloutEngine::new(&copy, junior, task.classes, rollout_config(&config, 0))?;
        let optimizer = optimizer(&config);
        let loss_scale = config.loss_scaling.map(|s| s.start());
        Ok(Self {
            config,
            senior: Some(senior),
            junior,
            schedule,
            objective,
            task,
            rewards: Rewards::correct(),
            optimizer,
            state: TrainState { loss_scale, ..TrainState::default() },
            export: None,
            collective: &Single,
        })
    }

    /// Trains as one rank of `collective` (data parallelism; [`crate::collective`]): each
    /// rank rolls out its share of every mini-batch's prompt groups, gradients are summed
    /// over ranks before the clip, and every rank takes the same optimizer step. Every rank
    /// calls it, after any [`Trainer::resume`]; only rank 0 writes the run's files in
    /// [`Trainer::fit`].
    ///
    /// # Errors
    /// [`Error::Config`] unless the number of ranks divides `mini_batch_prompts`;
    /// [`Error::Collective`] on every rank when some rank's settings or senior weights
    /// differ from rank 0's.
    pub fn with_collective(mut self, collective: &'a dyn Collective) -> Result<Self> {
        let c = &self.config;
        Shard::new(
            c.prompts_per_step,
            c.mini_batch_prompts,
            c.group_size,
            collective.rank(),
            collective.size(),
        )?;
        let settings = serde_json::to_vec(c).map_err(|e| Error::Config(e.to_string()))?;
        agree(collective, "[train] settings", &settings)?;
        agree(collective, "senior weights", &weights_fingerprint(self.senior())?.to_le_bytes())?;
        self.collective = collective;
        Ok(self)
    }

    /// The ranks this trainer is one of ([`Single`] unless [`Trainer::with_collective`]).
    pub fn collective(&self) -> &dyn Collective {
        self.collective
    }

    /// Rewards rollouts with these weighted terms instead of the verifier's reward alone
    /// ([`crate::reward`]).
    #[must_use]
    pub fn with_rewards(mut self, rewards: Rewards) -> Self {
        self.rewards = rewards;
        self
    }

    /// Also writes each checkpoint's weights with `export` (e.g. Hugging Face safetensors).
    #[must_use]
    pub fn with_export(mut self, export: Exporter<'a, P>) -> Self {
        self.export = Some(export);
        self
    }

    /// The senior being trained.
    pub fn senior(&self) -> &P {
        self.senior.as_ref().expect("the senior is present between calls")
    }

    /// Where training stands.
    pub fn state(&self) -> &TrainState {
        &self.state
    }

    /// The settings.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// One training step. See the [module docs](self).
    ///
    /// # Errors
    /// Model and verifier errors; [`Error::NonFinite`] when the loss or the gradient norm
    /// is NaN or infinite, or with loss scaling when the gradients overflow at a scale
    /// below 2 (the senior keeps the updates of the mini-batches before the failing one).
    pub fn step(&mut self) -> Result<StepOutput> {
        self.step_with(&mut |_| {})
    }

    /// As [`Trainer::step`], calling `on_rollout` after every rollout token step.
    ///
    /// # Errors
    /// As [`Trainer::step`].
    pub fn step_with(&mut self, on_rollout: &mut dyn FnMut(Progress)) -> Result<StepOutput> {
        let c = self.config.clone();
        let step = self.state.step;
        let start = Instant::now();
        let cpu_start = ProcessTime::now();
        // 1. prompts: every rank draws the step's prompts and rolls out its share
        let ranks = self.collective;
        let shard =
            Shard::new(c.prompts_per_step, c.mini_batch_prompts, c.group_size, ranks.rank(), ranks.size())?;
        let picked = batch_indices(c.seed, step, c.prompts_per_step, self.task.train.len());
        let all: Vec<Vec<TokenId>> = picked.iter().map(|&i| self.task.train[i].prompt.clone()).collect();
        // Random streams keyed by the global prompt position: N ranks sample what one would.
        let all_streams = streams(&all);
        let prompts: Vec<Vec<TokenId>> = shard.prompts.iter().map(|&p| all[p].clone()).collect();
        let prompt_streams: Vec<u64> = shard.prompts.iter().map(|&p| all_streams[p]).collect();
        let reference = |r: &Rollout| &self.task.train[picked[shard.prompts[r.prompt]]].reference;
        // 2. rollouts, by a copy that cannot record gradients
        let copy = rollout_copy(self.senior())?;
        let rollouts = RolloutEngine::new(&copy, self.junior, self.task.classes, rollout_config(&c, step))?
            .generate_streams(&prompts, &prompt_streams, self.schedule, on_rollout)?;
        // 3. rewards: the verifier's verdict, then the weighted terms
        let texts: Vec<String> =
            rollouts.iter().map(|r| self.task.text.text(&r.tokens)).collect::<Result<_>>()?;
        let verdicts: Vec<_> = rollouts
            .iter()
            .zip(&texts)
            .map(|(r, text)| self.task.verifier.verify(text, reference(r)))
            .collect();
        let scored: Vec<Scored> = rollouts
            .iter()
            .zip(&texts)
            .zip(&verdicts)
            .map(|((r, text), verdict)| {
                self.rewards.score(&RewardInput {
                    text,
                    reference: reference(r),
                    verdict,
                    tokens: r.tokens.len(),
                    senior_tokens: r.senior_tokens(),
                    max_new_tokens: c.max_new_tokens,
                    truncated: r.finish == crate::schedule::Finish::Length,
                })
            })
            .collect::<Result<_>>()?;
        // Every rank learns every row's reward and counts: advantages (a batch-wide
        // normalisation too) and the loss denominators are the single process's.
        let total_rows = c.prompts_per_step * c.group_size;
        let n_terms = self.rewards.names().len();
        let rows = RowTable::gather(ranks, &shard, total_rows, &rollouts, &verdicts, (&scored, n_terms))?;
        let time_rollout = start.elapsed().as_secs_f64();
        let cpu_rollout = cpu_start.elapsed();
        // 4. advantages
        let all_advantages = advantages(&rows.rewards, c.group_size, c.advantage)?;
        let adv: Vec<f32> = shard.rows.iter().map(|&g| all_advantages[g]).collect();
        // 5-6. π_old, then the updates
        let lr = c.lr_schedule.at(step, c.steps, c.lr);
        let global = update::Global {
            collective: ranks,
            senior_tokens: &rows.senior_tokens,
            advantages: &all_advantages,
        };
        let inputs = update::Inputs { prompts: &prompts, rollouts: &rollouts, advantages: &adv, global };
        let senior = self.senior.take().expect("the senior is present between calls");
        // The rollout copy (the same weights) scores π_old, then goes.
        let models = update::Models { senior, copy, junior: self.junior };
        let result = update::run(
            &c,
            models,
            self.objective,
            &mut self.optimizer,
            &inputs,
            lr,
            self.state.loss_scale.as_mut(),
        );
        let (senior, report) = match result {
            Ok(done) => done,
            Err((senior, error)) => {
                self.senior = Some(senior);
                return Err(error);
            }
        };
        self.senior = Some(senior);
        self.state.step += 1;
        if ranks.size() > 1 && c.sync_check_every > 0 && self.state.step.is_multiple_of(c.sync_check_every) {
            let what = format!("senior weights after step {} (they drifted apart)", self.state.step);
            agree(ranks, &what, &weights_fingerprint(self.senior())?.to_le_bytes())?;
        }

        let clock = StepClock { start, cpu_start, rollout_s: time_rollout, cpu_rollout };
        let metrics = self.metrics(&c, step, &rows, report, lr, &clock);
        let references: Vec<&String> = rollouts.iter().map(reference).collect();
        let samples = self.samples(&c, step, &rollouts, &verdicts, &scored, &references)?;
        Ok(StepOutput { metrics, samples })
    }

    /// The step's figures for `metrics.jsonl`, from the rows of every rank and the update.
    fn metrics(
        &self,
        c: &TrainConfig,
        step: usize,
        rows: &RowTable,
        report: update::Report,
        lr: f64,
        clock: &StepClock,
    ) -> StepMetrics {
        let (time_rollout, cpu_rollout) = (clock.rollout_s, clock.cpu_rollout);
        let time = clock.start.elapsed().as_secs_f64();
        let cpu = clock.cpu_start.elapsed();
        let ranks = self.collective;
        let n = rows.rewards.len() as f64;
        let tokens: usize = rows.lengths.iter().sum();
        let senior_tokens: usize = rows.senior_tokens.iter().sum();
        StepMetrics {
            step: step + 1,
            epoch: step * c.prompts_per_step / self.task.train.len() + 1,
            reward_mean: rows.rewards.iter().map(|&v| f64::from(v)).sum::<f64>() / n,
            rewards: self
                .rewards
                .names()
                .into_iter()
                .zip(&rows.terms)
                .map(|(k, v)| (k, v.iter().sum::<f64>() / n))
                .collect(),
            accuracy: rows.correct.iter().filter(|&&c| c).count() as f64 / n,
            senior_share: senior_tokens as f64 / tokens.max(1) as f64,
            response_len_mean: tokens as f64 / n,
            tokens,
            senior_tokens,
            response_len_max: rows.lengths.iter().copied().max().unwrap_or(0),
            truncation_rate: rows.truncated.iter().filter(|&&t| t).count() as f64 / n,
            rows_updated: report.rows,
            loss: report.loss,
            clip_frac: report.clip_frac,
            dual_clip_frac: report.dual_clip_frac,
            kl: report.kl,
            objective: report.extra,
            grad_norm: report.grad_norm,
            empty_updates: report.empty,
            skipped_updates: report.skipped,
            zero_gradient_updates: report.zero_gradient,
            loss_scale: self.state.loss_scale.map(|s| s.scale),
            lr,
            rollout_tokens_per_s: tokens as f64 / time_rollout.max(1e-9),
            tokens_per_s: tokens as f64 / time.max(1e-9),
            time_s: time,
            time_rollout_s: time_rollout,
            time_old_s: report.time_old,
            time_update_s: report.time_update,
            cpu_rollout_s: cpu_rollout.as_secs_f64(),
            cpu_update_s: (cpu - cpu_rollout).as_secs_f64(),
            validation_pass1: None,
            reduced_bytes: if ranks.size() > 1 { report.reduced_bytes + rows.bytes } else { 0 },
            time_wait_s: report.time_wait,
            time_reduce_s: report.time_reduce,
        }
    }

    /// The first `samples_per_step` rollouts as text, with their rewards.
    fn samples(
        &self,
        c: &TrainConfig,
        step: usize,
        rollouts: &[Rollout],
        verdicts: &[crate::verifier::Reward],
        scored: &[Scored],
        references: &[&String],
    ) -> Result<Vec<StepSample>> {
        rollouts
            .iter()
            .zip(verdicts.iter().zip(scored))
            .zip(references)
            .take(c.samples_per_step)
            .map(|((r, (verdict, scored)), reference)| {
                Ok(StepSample {
                    step: step + 1,
                    reference: (*reference).clone(),
                    reward: scored.total,
                    reason: verdict.reason.clone(),
                    text: marked_text(r, self.task.text)?,
                })
            })
            .collect()
    }

    /// The senior alone on the validation problems: mean correctness of
    /// `validation_samples` samples per problem at the validation sampling (pass@1).
    /// `None` without validation problems.
    ///
    /// # Errors
    /// Model errors.
    pub fn validate(&self) -> Result<Option<f64>> {
        self.validate_with(&mut |_| {})
    }

    /// As [`Trainer::validate`], calling `on_progress` after every rollout token step
    /// ([`FitProgress::Validation`]).
    ///
    /// # Errors
    /// As [`Trainer::validate`].
    pub fn validate_with(&self, on_progress: &mut dyn FnMut(FitProgress)) -> Result<Option<f64>> {
        let c = &self.config;
        if self.task.validation.is_empty() {
            return Ok(None);
        }
        let copy = rollout_copy(self.senior())?;
        let config = RolloutConfig {
            group_size: c.validation_samples,
            max_new_tokens: c.validation_max_new_tokens.unwrap_or(c.max_new_tokens),
            sampling: c.validation_sampling,
            seed: c.seed ^ VALIDATION_STREAM,
            catch_up: c.catch_up,
            ..RolloutConfig::default()
        };
        let engine = RolloutEngine::solo(&copy, self.task.classes, config)?;
        let ranks = self.collective;
        let mut counts = [0.0f64; 2];
        let problems = self.task.validation.len();
        for (k, chunk) in self.task.validation.chunks(c.prompts_per_step).enumerate() {
            let prompts: Vec<Vec<TokenId>> = chunk.iter().map(|e| e.prompt.clone()).collect();
            let chunk_streams = streams(&prompts);
            // Each rank a contiguous share of the chunk, streams keyed as in one process.
            let mine =
                ranks.rank() * chunk.len() / ranks.size()..(ranks.rank() + 1) * chunk.len() / ranks.size();
            if mine.is_empty() {
                continue;
            }
            let done = k * c.prompts_per_step;
            let correct = counts[0] as usize;
            let mut report =
                |rollout| on_progress(FitProgress::Validation { done, problems, correct, rollout });
            let rollouts = engine.generate_streams(
                &prompts[mine.clone()],
                &chunk_streams[mine.clone()],
                &Solo::senior(),
                &mut report,
            )?;
            for r in rollouts {
                let text = self.task.text.text(&r.tokens)?;
                let reference = &chunk[mine.start + r.prompt].reference;
                counts[0] +=
                    f64::from(u8::from(self.task.validation_verifier.verify(&text, reference).correct));
                counts[1] += 1.0;
            }
        }
        ranks.sum_f64(&mut counts)?;
        let [correct, total] = counts;
        Ok(Some(correct / total.max(1.0)))
    }
}

/// The senior's gradient-free copy that writes rollouts: decoding through it can never
/// record an autodiff graph.
fn rollout_copy<P: Policy>(senior: &P) -> Result<P> {
    let copy = senior.frozen();
    if copy.device().is_autodiff() {
        return Err(Error::Config("the rollout copy of the senior still records gradients".into()));
    }
    Ok(copy)
}

/// The engine's settings for training step `step`: a fresh seed per step.
fn rollout_config(c: &TrainConfig, step: usize) -> RolloutConfig {
    RolloutConfig {
        group_size: c.group_size,
        max_new_tokens: c.max_new_tokens,
        sampling: c.sampling,
        seed: mix(c.seed ^ ROLLOUT_STREAM, step as u64),
        catch_up: c.catch_up,
        ..RolloutConfig::default()
    }
}

/// The problems of step `step`: a pass over the data in an order shuffled per epoch by
/// `seed`, `per_step` at a time, continuing into the next epoch's order at the end.
pub fn batch_indices(seed: u64, step: usize, per_step: usize, n: usize) -> Vec<usize> {
    let order = |epoch: usize| {
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(mix(seed ^ DATA_STREAM, epoch as u64)));
        order
    };
    let first = step * per_step;
    let mut out = Vec::with_capacity(per_step);
    let mut current = (usize::MAX, Vec::new());
    for k in first..first + per_step {
        let epoch = k / n;
        if current.0 != epoch {
            current = (epoch, order(epoch));
        }
        out.push(current.1[k % n]);
    }
    out
}

/// A 64-bit mix of two numbers (splitmix64 finaliser).
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Wall and process-CPU time of a step, split where its rollouts end.
struct StepClock {
    start: Instant,
    cpu_start: ProcessTime,
    rollout_s: f64,
    cpu_rollout: std::time::Duration,
}

/// Per-row figures of a step's rollouts on every rank, in the step's row order.
struct RowTable {
    /// The table's size in bytes.
    bytes: usize,
    rewards: Vec<f32>,
    /// Each reward term's value per row.
    terms: Vec<Vec<f64>>,
    correct: Vec<bool>,
    lengths: Vec<usize>,
    senior_tokens: Vec<usize>,
    truncated: Vec<bool>,
}

impl RowTable {
    /// Each rank fills its own rows, the rest stay 0, and a sum over ranks completes the
    /// table (adding zeros is exact).
    fn gather(
        ranks: &dyn Collective,
        shard: &Shard,
        total_rows: usize,
        rollouts: &[Rollout],
        verdicts: &[crate::verifier::Reward],
        (scored, n_terms): (&[Scored], usize),
    ) -> Result<Self> {
        if rollouts.len() != shard.rows.len() {
            return Err(Error::Shape(format!("{} rollouts for {} rows", rollouts.len(), shard.rows.len())));
        }
        // Every rank's table has the same columns, whatever rows it holds.
        let columns = 5 + n_terms;
        let mut table = vec![0.0f64; total_rows * columns];
        for (((r, verdict), scored), &g) in rollouts.iter().zip(verdicts).zip(scored).zip(&shard.rows) {
            let senior = r.senior_tokens();
            let row = &mut table[g * columns..(g + 1) * columns];
            row[..5].copy_from_slice(&[
                f64::from(scored.total),
                f64::from(u8::from(verdict.correct)),
                r.tokens.len() as f64,
                senior as f64,
                f64::from(u8::from(r.finish == crate::schedule::Finish::Length)),
            ]);
            for (cell, &v) in row[5..].iter_mut().zip(&scored.terms) {
                *cell = f64::from(v);
            }
        }
        ranks.sum_f64(&mut table)?;
        let column = |k: usize| table.chunks(columns).map(move |row| row[k]);
        Ok(Self {
            bytes: 8 * table.len(),
            terms: (0..n_terms).map(|t| column(5 + t).collect()).collect(),
            rewards: column(0).map(|v| v as f32).collect(),
            correct: column(1).map(|v| v > 0.0).collect(),
            lengths: column(2).map(|v| v as usize).collect(),
            senior_tokens: column(3).map(|v| v as usize).collect(),
            truncated: column(4).map(|v| v > 0.0).collect(),
        })
    }
}

/// The response with each author's run marked `[S]` or `[J]`.
fn marked_text(rollout: &Rollout, text: &dyn Detokenize) -> Result<String> {
    let mut out = String::new();
    let mut start = 0;
    while start < rollout.tokens.len() {
        let owner = rollout.owners[start];
        let end = (start..rollout.tokens.len())
            .find(|&t| rollout.owners[t] != owner)
            .unwrap_or(rollout.tokens.len());
        out.push_str(if owner == Owner::Senior { "[S]" } else { "[J]" });
        out.push_str(&text.text(&rollout.tokens[start..end])?);
        start = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_cover_each_epoch_once_in_a_seeded_order() {
        let n = 10;
        let steps: Vec<Vec<usize>> = (0..5).map(|s| batch_indices(7, s, 4, n)).collect();
        let flat: Vec<usize> = steps.concat();
        let mut first: Vec<usize> = flat[..n].to_vec();
        first.sort_unstable();
        assert_eq!(first, (0..n).collect::<Vec<_>>());
        let mut second: Vec<usize> = flat[n..2 * n].to_vec();
        second.sort_unstable();
        assert_eq!(second, (0..n).collect::<Vec<_>>());
        assert_ne!(flat[..n], flat[n..2 * n], "each epoch is shuffled anew");
        assert_eq!(batch_indices(7, 3, 4, n), steps[3], "a step's problems depend on the step alone");
        assert_ne!(batch_indices(8, 0, 4, n), steps[0]);
    }
}
