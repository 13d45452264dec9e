//! Long: the generation loop, its per-row state and the two models' sides share private
//! types and read best as one step loop; token sampling is in `sample.rs`.
//!
//! The tandem rollout engine (method.md §2): senior and junior co-write each rollout,
//! every token remembers its owner.
//!
//! Each model keeps its own [`Session`] (KV cache) per row and decodes only the rows it
//! is writing. When a row changes hands, the incoming model first reads the tokens it
//! missed: its next [`Partner::extend`] call gets them as a chunked prefill, fused with
//! the decode of its other rows ([`CatchUp`] says whether a model that runs anyway also
//! reads the other rows' new tokens on the way). A model with nothing to write does no
//! work, and a model whose turn never comes (the junior under
//! [`Solo`](crate::schedule::Solo)) is never started (except by [`CatchUp::Eager`], the
//! release's cost). Each prompt is prefilled once and shared by its G rollouts. The two
//! models' calls of a step run at once, on two threads.
//!
//! Determinism: each row owns two random streams (schedule, sampling) keyed by the seed,
//! the prompt's tokens, its occurrence and the copy index, so a row's tokens do not
//! depend on the batch around it. One caveat: under [`CatchUp::Piggyback`] whether a
//! model reads a row's tokens one by one or as a chunk depends on the other rows; the two
//! agree up to float rounding (bit for bit on the test models), so a token can differ
//! only where that rounding decides the draw.

mod sample;

use serde::{Deserialize, Serialize};

pub use sample::Sampling;

use burn::prelude::{Int, Tensor, TensorData};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::device::is_host;
use crate::model::{Feed, Partner, Session};
use crate::schedule::{Finish, Handoff, HandoffSchedule, Next, row_rng};
use crate::token::{Owner, TokenBatch, TokenId};
use crate::vocab::TokenClasses;
use crate::{Error, Result};

/// Logits (rows × vocabulary) from which host sampling splits rows across threads.
const PARALLEL_SAMPLING_FLOATS: usize = 1 << 16;

/// The release's response cap in tokens, one budget shared by both models: the default of
/// rollouts, training and evaluation.
pub const MAX_NEW_TOKENS: usize = 3000;

/// Salt separating a row's sampling stream from its schedule stream.
const SAMPLING_STREAM: u64 = 0x5A3D_0C1E_9B27_4F61;

/// How rollouts are generated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolloutConfig {
    /// G: rollouts per prompt (default 8).
    pub group_size: usize,
    /// Response cap in tokens, one budget shared by both models (default [`MAX_NEW_TOKENS`]).
    pub max_new_tokens: usize,
    /// Sampling parameters, the same for both models.
    pub sampling: Sampling,
    /// Seed of every random stream.
    pub seed: u64,
    /// Also record the non-author's log-prob of each token (analysis; one extra
    /// teacher-forced pass per model at the end).
    pub other_log_probs: bool,
    /// When a model reads the tokens the other one wrote (default: piggyback).
    pub catch_up: CatchUp,
    /// Run the senior's and the junior's calls of a step at once, on two threads
    /// (default). Off, they run one after the other, as the paper's release code does.
    pub concurrent: bool,
    /// Where tokens are drawn: `Some(true)` on the host from logits read back,
    /// `Some(false)` on the model's device (only ids and log-probs cross to the host,
    /// except with top-k/top-p: see [`Sampling::sample_rows`]); `None` (default) picks
    /// the host for CPU devices and the device otherwise.
    pub host_sampling: Option<bool>,
    /// Accept a senior and junior whose vocabulary sizes differ, sampling only from the
    /// shared prefix of ids. Off by default: a mismatch is an error.
    pub allow_vocab_prefix: bool,
}

impl Default for RolloutConfig {
    fn default() -> Self {
        Self {
            group_size: 8,
            max_new_tokens: MAX_NEW_TOKENS,
            sampling: Sampling::training(),
            seed: 0,
            other_log_probs: false,
            catch_up: CatchUp::default(),
            concurrent: true,
            host_sampling: None,
            allow_vocab_prefix: false,
        }
    }
}

/// When a model reads the tokens of rows it is not writing.
///
/// Every mode gives the same rollouts (the caches stay exact; on backends where a chunked
/// read rounds differently from one-token reads, up to that rounding); they differ in cost.
/// Every model must read every token of a row before it next writes there, so the
/// modes move the same tokens; what changes is how they are grouped into calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatchUp {
    /// A model reads a row's missed tokens only when its turn there comes, as one chunk
    /// fused into its call. Calls become ragged (some rows read one token, others
    /// many): fewest reads when rows end before the turn comes back.
    Lazy,
    /// As [`CatchUp::Lazy`], and a model that runs in a step (it writes some row) also
    /// reads the other rows' new tokens in that same call, so its calls stay uniform
    /// (about one token per row) and the catch-up costs no extra call. A model with
    /// nothing to write still does nothing. On CPU this is the cheapest (see
    /// `benches/rollout.rs`): ragged calls cost more per token than uniform ones.
    #[default]
    Piggyback,
    /// Both models read every token as it is written, every step, even a model with no
    /// row to write: the paper's release code, kept as a benchmark baseline.
    Eager,
}

/// Where a [`RolloutEngine::generate_with`] call stands, after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Steps taken; each live row writes one token per step.
    pub steps: usize,
    /// Rows still writing.
    pub live: usize,
    /// Rows in all (prompts × G).
    pub rows: usize,
    /// Tokens written so far, all rows together.
    pub tokens: usize,
}

/// One finished rollout: the response only (the prompt is `prompts[prompt]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// Index of its prompt in the batch.
    pub prompt: usize,
    /// The key of its random streams (for [`replay`](crate::schedule::replay)).
    pub row_key: u64,
    /// Response tokens, the stopping EOS included.
    pub tokens: Vec<TokenId>,
    /// Who wrote each token.
    pub owners: Vec<Owner>,
    /// The author's log-prob of each token at the sampling temperature.
    pub log_probs: Vec<f32>,
    /// The other model's log-prob of each token, if asked for.
    pub other_log_probs: Option<Vec<f32>>,
    /// Why it stopped.
    pub finish: Finish,
}

impl Rollout {
    /// Response tokens the senior wrote.
    pub fn senior_tokens(&self) -> usize {
        self.owners.iter().filter(|&&o| o == Owner::Senior).count()
    }

    /// Fraction of tokens written by the senior (0 for an empty response).
    pub fn senior_share(&self) -> f64 {
        let senior = self.senior_tokens();
        senior as f64 / self.owners.len().max(1) as f64
    }
}

/// Generates rollouts for batches of prompts with a senior, a junior and a schedule.
///
/// ```
/// use burn::prelude::*;
/// use trlvr::prelude::*;
/// use trlvr::rollout::{RolloutConfig, RolloutEngine};
///
/// let device = Device::default();
/// let classes = TokenClasses::from_texts(&[" a", " b", "c", "<eos>"], &[3])?;
/// let senior = BigramLm::random(4, 1.0, &device);
/// let junior = BigramLm::random(4, 1.0, &device);
/// let config = RolloutConfig { group_size: 2, max_new_tokens: 10, ..RolloutConfig::default() };
/// let engine = RolloutEngine::new(&senior, &junior, &classes, config)?;
/// let rollouts = engine.generate(&[vec![0, 1]], &WordBoundary::default())?;
/// assert_eq!(rollouts.len(), 2);
/// assert!(rollouts.iter().all(|r| r.tokens.len() == r.owners.len() && r.tokens.len() <= 10));
/// # Ok::<(), trlvr::Error>(())
/// ```
pub struct RolloutEngine<'m> {
    senior: &'m dyn Partner,
    junior: &'m dyn Partner,
    classes: &'m TokenClasses,
    config: RolloutConfig,
    /// Ids that may be sampled: the shared vocabulary.
    vocab: usize,
}

impl std::fmt::Debug for RolloutEngine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RolloutEngine").field("config", &self.config).field("vocab", &self.vocab).finish()
    }
}

impl<'m> RolloutEngine<'m> {
    /// An engine for `senior` and `junior` (the same model twice is fine: self-paired).
    ///
    /// # Errors
    /// [`Error::Vocabulary`] if the vocabulary sizes differ (unless allowed) or an EOS id
    /// is outside the shared vocabulary; [`Error::Config`] for bad settings.
    pub fn new(
        senior: &'m dyn Partner,
        junior: &'m dyn Partner,
        classes: &'m TokenClasses,
        config: RolloutConfig,
    ) -> Result<Self> {
        config.sampling.validate()?;
        if config.group_size == 0 || config.max_new_tokens == 0 {
            return Err(Error::Config("group_size and max_new_tokens must be at least 1".into()));
        }
        let (vs, vj) = (senior.vocab_size(), junior.vocab_size());
        if vs != vj && !config.allow_vocab_prefix {
            return Err(Error::Vocabulary(format!(
                "senior has {vs} ids, junior {vj}; they must share a vocabulary \
                 (set allow_vocab_prefix if they agree on the first {} ids)",
                vs.min(vj)
            )));
        }
        let vocab = vs.min(vj);
        if let Some(&eos) = classes.eos().iter().find(|&&e| e as usize >= vocab) {
            return Err(Error::Vocabulary(format!(
                "EOS id {eos} is outside the shared vocabulary of {vocab}"
            )));
        }
        Ok(Self { senior, junior, classes, config, vocab })
    }

    /// Senior alone: plain GRPO rollouts and solo evaluation (use with [`Solo`]).
    ///
    /// # Errors
    /// As [`RolloutEngine::new`].
    ///
    /// [`Solo`]: crate::schedule::Solo
    pub fn solo(senior: &'m dyn Partner, classes: &'m TokenClasses, config: RolloutConfig) -> Result<Self> {
        Self::new(senior, senior, classes, config)
    }

    /// The configuration.
    pub fn config(&self) -> &RolloutConfig {
        &self.config
    }

    /// `group_size` rollouts for each prompt, prompt-major.
    ///
    /// # Errors
    /// [`Error::Shape`] for an empty prompt list or an empty prompt; model errors; NaN
    /// logits.
    pub fn generate(&self, prompts: &[Vec<TokenId>], schedule: &dyn HandoffSchedule) -> Result<Vec<Rollout>> {
        self.generate_with(prompts, schedule, &mut |_| {})
    }

    /// As [`RolloutEngine::generate`], calling `on_step` after every step (for progress
    /// bars and logs: long rollouts take minutes on a CPU).
    ///
    /// # Errors
    /// As [`RolloutEngine::generate`].
    pub fn generate_with(
        &self,
        prompts: &[Vec<TokenId>],
        schedule: &dyn HandoffSchedule,
        on_step: &mut dyn FnMut(Progress),
    ) -> Result<Vec<Rollout>> {
        self.generate_streams(prompts, &streams(prompts), schedule, on_step)
    }

    /// As [`RolloutEngine::generate_with`], with each prompt's random stream numbered by
    /// the caller. A prompt's rollouts depend on its ids, its stream number and the seed
    /// alone; `generate` numbers identical prompts of one batch 0, 1, 2, ... ([`streams`]).
    /// A caller that splits a job into batches numbers them over the whole job, so that a
    /// prompt's rollouts do not depend on the batch it lands in, and two copies of one
    /// prompt in different batches do not draw the same samples.
    ///
    /// # Errors
    /// As [`RolloutEngine::generate`]; [`Error::Shape`] unless there is one stream per prompt.
    pub fn generate_streams(
        &self,
        prompts: &[Vec<TokenId>],
        streams: &[u64],
        schedule: &dyn HandoffSchedule,
        on_step: &mut dyn FnMut(Progress),
    ) -> Result<Vec<Rollout>> {
        if prompts.is_empty() || prompts.iter().any(Vec::is_empty) {
            return Err(Error::Shape("need at least one prompt, none empty".into()));
        }
        if streams.len() != prompts.len() {
            return Err(Error::Shape(format!("{} streams for {} prompts", streams.len(), prompts.len())));
        }
        schedule.validate()?;
        let mut rows = self.rows(prompts, streams, schedule);
        let mut sides = [self.senior, self.junior].map(|model| {
            Side::new(model, self.config.host_sampling.unwrap_or_else(|| is_host(&model.device())))
        });
        let prompt_refs: Vec<&[TokenId]> = prompts.iter().map(Vec::as_slice).collect();
        let mut progress = Progress { steps: 0, live: rows.len(), rows: rows.len(), tokens: 0 };
        let mut finished: Vec<usize> = Vec::new();

        loop {
            // 1. Each model's plan: the live rows it writes, and what every row it feeds
            //    reads (own rows first; see `CatchUp` for the others).
            let plans = [Owner::Senior, Owner::Junior].map(|owner| self.plan(&rows, owner));
            if plans.iter().all(|plan| plan.own.is_empty()) {
                break;
            }
            // 2. Both models read, predict and sample their own rows, at once (two
            //    threads) unless asked otherwise.
            let drawn = self.draw(&mut rows, &mut sides, &plans, &prompt_refs)?;
            // 3. Record what each model read, then append each row's token and advance
            //    its schedule.
            self.record(&mut rows, &plans, drawn, &mut finished);
            // 4. Finished rows leave both models' batches.
            for side in &mut sides {
                side.retire(&finished)?;
            }
            progress.steps += 1;
            progress.tokens += plans.iter().map(|plan| plan.own.len()).sum::<usize>();
            progress.live = rows.iter().filter(|r| r.finish.is_none()).count();
            on_step(progress);
        }

        let other =
            if self.config.other_log_probs { Some(self.other_log_probs(prompts, &rows)?) } else { None };
        Ok(rows
            .into_iter()
            .enumerate()
            .map(|(i, row)| Rollout {
                prompt: row.prompt,
                row_key: row.key,
                other_log_probs: other.as_ref().map(|o| o[i].clone()),
                finish: row.finish.unwrap_or(Finish::Length),
                tokens: row.tokens,
                owners: row.owners,
                log_probs: row.log_probs,
            })
            .collect())
    }

    /// Every row's state before its first token: `group_size` copies of each prompt,
    /// each with its schedule and sampling streams keyed by the prompt and its stream.
    fn rows(&self, prompts: &[Vec<TokenId>], streams: &[u64], schedule: &dyn HandoffSchedule) -> Vec<Row> {
        let g = self.config.group_size;
        let seed = self.config.seed;
        row_keys(prompts, streams, g)
            .into_iter()
            .enumerate()
            .map(|(i, key)| Row {
                handoff: Handoff::new(schedule, seed, key),
                sampler: row_rng(seed ^ SAMPLING_STREAM, key),
                tokens: Vec::new(),
                owners: Vec::new(),
                log_probs: Vec::new(),
                read: [0, 0],
                finish: None,
                prompt: i / g,
                key,
            })
            .collect()
    }

    /// One step of both models: each runs its plan (at once on two threads unless asked
    /// otherwise) and draws a token for each row it writes, with that row's sampler.
    fn draw(
        &self,
        rows: &mut [Row],
        sides: &mut [Side<'_>; 2],
        plans: &[Plan; 2],
        prompts: &[&[TokenId]],
    ) -> Result<[Vec<(TokenId, f32)>; 2]> {
        let g = self.config.group_size;
        let mut rngs: [Vec<&mut ChaCha8Rng>; 2] = [Vec::new(), Vec::new()];
        for row in rows.iter_mut().filter(|r| r.finish.is_none()) {
            rngs[slot(row.handoff.author())].push(&mut row.sampler);
        }
        let [senior_side, junior_side] = sides;
        let [senior_rngs, junior_rngs] = rngs;
        let [senior_plan, junior_plan] = plans;
        let sampling = &self.config.sampling;
        let vocab = self.vocab;
        let senior_step = || senior_side.step(prompts, g, senior_plan, senior_rngs, sampling, vocab);
        let junior_step = || junior_side.step(prompts, g, junior_plan, junior_rngs, sampling, vocab);
        let [senior_drawn, junior_drawn] = if self.config.concurrent {
            std::thread::scope(|scope| {
                let senior = scope.spawn(senior_step);
                let junior = junior_step();
                [senior.join().expect("senior thread panicked"), junior]
            })
        } else {
            [senior_step(), junior_step()]
        };
        Ok([senior_drawn?, junior_drawn?])
    }

    /// Records what each model read, appends each row's drawn token, advances its
    /// schedule and notes the rows that finished.
    fn record(
        &self,
        rows: &mut [Row],
        plans: &[Plan; 2],
        drawn: [Vec<(TokenId, f32)>; 2],
        finished: &mut Vec<usize>,
    ) {
        for (owner, plan) in [Owner::Senior, Owner::Junior].into_iter().zip(plans) {
            for feed in &plan.feeds {
                rows[feed.row].read[slot(owner)] = rows[feed.row].tokens.len();
            }
        }
        for ((owner, plan), drawn) in [Owner::Senior, Owner::Junior].into_iter().zip(plans).zip(drawn) {
            for (&i, (token, log_prob)) in plan.own.iter().zip(drawn) {
                let row = &mut rows[i];
                row.tokens.push(token);
                row.owners.push(owner);
                row.log_probs.push(log_prob);
                row.finish = match row.handoff.after(token, self.classes) {
                    Next::Stop(finish) => Some(finish),
                    Next::Write(_) if row.tokens.len() >= self.config.max_new_tokens => Some(Finish::Length),
                    Next::Write(_) => None,
                };
                if row.finish.is_some() {
                    finished.push(i);
                }
            }
        }
    }

    /// What `owner`'s model does in the next step: the live rows it writes and the
    /// unread tokens of the rows it feeds.
    fn plan(&self, rows: &[Row], owner: Owner) -> Plan {
        let live = || rows.iter().enumerate().filter(|(_, r)| r.finish.is_none());
        let own: Vec<usize> = live().filter(|(_, r)| r.handoff.author() == owner).map(|(i, _)| i).collect();
        // Others' rows: none (lazy, or nothing to write this step), read only
        // (piggyback), or read and predicted as the release does (eager).
        let (read_others, predict_others) = match self.config.catch_up {
            CatchUp::Lazy => (false, false),
            CatchUp::Piggyback => (!own.is_empty(), false),
            CatchUp::Eager => (true, true),
        };
        let unread = |r: &Row| r.tokens[r.read[slot(owner)]..].to_vec();
        let mut feeds: Vec<OwnedFeed> =
            own.iter().map(|&i| OwnedFeed { row: i, tokens: unread(&rows[i]), predict: true }).collect();
        if read_others {
            feeds.extend(live().filter(|(_, r)| r.handoff.author() != owner).map(|(i, r)| OwnedFeed {
                row: i,
                tokens: unread(r),
                predict: predict_others,
            }));
        }
        feeds.retain(|f| !f.tokens.is_empty());
        Plan { own, feeds }
    }

    /// Each token's log-prob under the model that did not write it, by one
    /// teacher-forced pass per model.
    fn other_log_probs(&self, prompts: &[Vec<TokenId>], rows: &[Row]) -> Result<Vec<Vec<f32>>> {
        let sequences: Vec<Vec<TokenId>> =
            rows.iter().map(|r| prompts[r.prompt].iter().chain(&r.tokens).copied().collect()).collect();
        let batch = TokenBatch::new(sequences, 0)?;
        let width = batch.width();
        let t = self.config.sampling.temperature;
        let t = if t > 0.0 { t } else { 1.0 };
        let read = |m: &dyn Partner| -> Result<Vec<f32>> {
            m.score(&batch, t)?.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))
        };
        let (senior, junior) = (read(self.senior)?, read(self.junior)?);
        Ok(rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let p = prompts[r.prompt].len();
                r.owners
                    .iter()
                    .enumerate()
                    .map(|(t, o)| match o {
                        Owner::Senior => junior[i * width + p + t],
                        Owner::Junior => senior[i * width + p + t],
                    })
                    .collect()
            })
            .collect())
    }
}

/// Generation state of one row.
#[derive(Debug)]
struct Row {
    handoff: Handoff,
    sampler: ChaCha8Rng,
    tokens: Vec<TokenId>,
    owners: Vec<Owner>,
    log_probs: Vec<f32>,
    /// Response tokens read so far by [senior, junior].
    read: [usize; 2],
    finish: Option<Finish>,
    prompt: usize,
    key: u64,
}

/// One model's side of the batch: its session, started on first use.
///
/// Each step both sides run, at once on two threads by default; a row's tokens do not
/// depend on that timing.
struct Side<'m> {
    model: &'m dyn Partner,
    session: Option<Session>,
    /// Next-token logits at the end of each prompt copy, `[rows, vocab]`, from `start`.
    start_logits: Option<Tensor<2>>,
    /// Sample on the host from logits read back (CPU devices), or where the logits are.
    on_host: bool,
    /// How many of the finished rows (in the order they finished) the model was told of.
    retired: usize,
}

impl<'m> Side<'m> {
    fn new(model: &'m dyn Partner, on_host: bool) -> Self {
        Self { model, session: None, start_logits: None, on_host, retired: 0 }
    }

    /// Tells the model of the rows that finished since it was last told, once its
    /// session has started.
    fn retire(&mut self, finished: &[usize]) -> Result<()> {
        if let Some(session) = self.session.as_mut()
            && self.retired < finished.len()
        {
            self.model.retire(session, &finished[self.retired..])?;
            self.retired = finished.len();
        }
        Ok(())
    }

    /// Runs `plan`: starts the session on first use, feeds the rows that read (one
    /// fused call) and samples a token for each own row, with that row's `rngs` entry.
    /// Own rows that read nothing (only right after the prompt) use the prefill's
    /// logits. A model with nothing to do does nothing.
    fn step(
        &mut self,
        prompts: &[&[TokenId]],
        g: usize,
        plan: &Plan,
        rngs: Vec<&mut ChaCha8Rng>,
        sampling: &Sampling,
        vocab: usize,
    ) -> Result<Vec<(TokenId, f32)>> {
        if plan.own.is_empty() && plan.feeds.is_empty() {
            return Ok(Vec::new());
        }
        if self.session.is_none() {
            let (session, logits) = self.model.start(prompts, g)?;
            self.start_logits = Some(logits);
            self.session = Some(session);
        }
        let fed = if plan.feeds.is_empty() {
            None
        } else {
            let feeds: Vec<Feed<'_>> = plan
                .feeds
                .iter()
                .map(|f| Feed { row: f.row, tokens: &f.tokens, predict: f.predict })
                .collect();
            Some(self.model.extend(self.session.as_mut().expect("started above"), &feeds)?)
        };
        if plan.own.is_empty() {
            return Ok(Vec::new());
        }
        // The own rows' logits, `[own, vocab]`. Before the first token they follow the
        // prefill; after it every own row has an unread token (at least the last one),
        // so its logits lead this call's, in order.
        let logits = match fed {
            Some(fed) => {
                debug_assert!(plan.own.iter().zip(&plan.feeds).all(|(&i, f)| f.row == i && f.predict));
                fed.slice([0..plan.own.len(), 0..vocab])
            }
            None => {
                let start = self.start_logits.clone().expect("started above");
                let rows: Vec<i64> = plan.own.iter().map(|&i| i as i64).collect();
                let rows =
                    Tensor::<1, Int>::from_data(TensorData::new(rows, [plan.own.len()]), &start.device());
                start.select(0, rows).slice([0..plan.own.len(), 0..vocab])
            }
        };
        // One uniform per row from its stream, then each row's draw.
        let draws: Vec<f64> = rngs.into_iter().map(|rng| sampling.uniform(rng)).collect();
        if self.on_host {
            let host = to_host(logits)?;
            let draw = |(row, u): (&[f32], f64)| sampling.sample_at(row, u);
            // A real vocabulary's softmax is 50k-150k exps a row: rows go to Rayon's
            // threads. A toy's few dozen stay on this one (a task would cost more).
            return if host.len() >= PARALLEL_SAMPLING_FLOATS {
                host.par_chunks(vocab).zip(draws).map(draw).collect()
            } else {
                host.chunks(vocab).zip(draws).map(draw).collect()
            };
        }
        // On an accelerator, sample there.
        sampling.sample_rows(logits, &draws)
    }
}

/// One model's work in one step of the engine.
#[derive(Debug)]
struct Plan {
    /// Live rows it writes, in order.
    own: Vec<usize>,
    /// Rows that read tokens, own rows first (in `own` order).
    feeds: Vec<OwnedFeed>,
}

/// A [`Feed`] with its tokens copied out, so the rows can change while models run.
#[derive(Debug)]
struct OwnedFeed {
    row: usize,
    tokens: Vec<TokenId>,
    predict: bool,
}

/// Index of `owner` in per-model arrays: senior 0, junior 1.
fn slot(owner: Owner) -> usize {
    match owner {
        Owner::Senior => 0,
        Owner::Junior => 1,
    }
}

fn to_host(logits: Tensor<2>) -> Result<Vec<f32>> {
    logits.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))
}

/// FNV-1a over the prompt's ids: a stable key that does not depend on batch position.
fn prompt_hash(tokens: &[TokenId]) -> u64 {
    tokens
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Each prompt's occurrence among the identical prompts before it (0 for the first
/// copy): the stream numbers [`RolloutEngine::generate`] uses.
///
/// ```
/// assert_eq!(trlvr::rollout::streams(&[vec![1, 2], vec![3], vec![1, 2], vec![1, 2]]), [0, 0, 1, 2]);
/// ```
pub fn streams(prompts: &[Vec<TokenId>]) -> Vec<u64> {
    let mut seen = std::collections::HashMap::new();
    prompts
        .iter()
        .map(|p| {
            let occurrence = seen.entry(prompt_hash(p)).or_insert(0u64);
            *occurrence += 1;
            *occurrence - 1
        })
        .collect()
}

/// Row keys from (prompt content, its stream number, copy index).
fn row_keys(prompts: &[Vec<TokenId>], streams: &[u64], g: usize) -> Vec<u64> {
    let mut keys = Vec::with_capacity(prompts.len() * g);
    for (p, &stream) in prompts.iter().zip(streams) {
        let h = prompt_hash(p);
        for copy in 0..g as u64 {
            keys.push(h ^ (stream << 32 | copy).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
    }
    keys
}
