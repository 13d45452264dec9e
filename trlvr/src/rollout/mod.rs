//! The tandem rollout engine (method.md §2): senior and junior co-write each rollout,
//! every token remembers its owner.
//!
//! Each model keeps its own [`Session`] (KV cache) per row and decodes only the rows it
//! is writing. When a row changes hands, the incoming model first reads the tokens it
//! missed: its next [`Partner::extend`] call gets them as a chunked prefill, fused with
//! the decode of its other rows ([`CatchUp`] says whether a model that runs anyway also
//! reads the other rows' new tokens on the way). A model with nothing to write does no
//! work, and a model whose turn never comes (the junior under
//! [`Solo`](crate::schedule::Solo)) is never started. Each prompt is prefilled once and
//! shared by its G rollouts. The two models' calls of a step run at once, on two threads.
//!
//! Determinism: each row owns two random streams (schedule, sampling) keyed by the seed,
//! the prompt's tokens, its occurrence and the copy index, so a row's tokens never depend
//! on the batch around it.

mod sample;

use serde::{Deserialize, Serialize};

pub use sample::Sampling;

use crate::model::{Feed, Partner, Session};
use crate::schedule::{Finish, Handoff, HandoffSchedule, Next, row_rng};
use crate::token::{Owner, TokenBatch, TokenId};
use crate::vocab::TokenClasses;
use crate::{Error, Result};

/// Salt separating a row's sampling stream from its schedule stream.
const SAMPLING_STREAM: u64 = 0x5A3D_0C1E_9B27_4F61;

/// How rollouts are generated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolloutConfig {
    /// G: rollouts per prompt (default 8).
    pub group_size: usize,
    /// Response cap in tokens, one budget shared by both models (default 3000).
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
    /// Accept a senior and junior whose vocabulary sizes differ, sampling only from the
    /// shared prefix of ids. Off by default: a mismatch is an error.
    pub allow_vocab_prefix: bool,
}

impl Default for RolloutConfig {
    fn default() -> Self {
        Self {
            group_size: 8,
            max_new_tokens: 3000,
            sampling: Sampling::training(),
            seed: 0,
            other_log_probs: false,
            catch_up: CatchUp::default(),
            concurrent: true,
            allow_vocab_prefix: false,
        }
    }
}

/// When a model reads the tokens of rows it is not writing.
///
/// Every mode gives the same rollouts (the caches stay exact); they differ in cost.
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
    /// Fraction of tokens written by the senior (0 for an empty response).
    pub fn senior_share(&self) -> f64 {
        let senior = self.owners.iter().filter(|&&o| o == Owner::Senior).count();
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
        if prompts.is_empty() || prompts.iter().any(Vec::is_empty) {
            return Err(Error::Shape("need at least one prompt, none empty".into()));
        }
        let g = self.config.group_size;
        let seed = self.config.seed;
        let keys = row_keys(prompts, g);
        let mut rows: Vec<Row> = keys
            .iter()
            .enumerate()
            .map(|(i, &key)| Row {
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
            .collect();
        let mut sides = [Side::new(self.senior, Owner::Senior), Side::new(self.junior, Owner::Junior)];
        let prompt_refs: Vec<&[TokenId]> = prompts.iter().map(Vec::as_slice).collect();

        loop {
            // 1. Who writes next in each live row, and which of the other model's rows
            //    each model also reads in this step (see `CatchUp`).
            let live: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].finish.is_none()).collect();
            let mine = |owner: Owner| -> Vec<usize> {
                live.iter().copied().filter(|&i| rows[i].handoff.author() == owner).collect()
            };
            let work: [(Vec<usize>, Vec<usize>); 2] = [Owner::Senior, Owner::Junior].map(|owner| {
                let own = mine(owner);
                let others = match self.config.catch_up {
                    CatchUp::Lazy => Vec::new(),
                    CatchUp::Piggyback if own.is_empty() => Vec::new(),
                    CatchUp::Piggyback | CatchUp::Eager => mine(owner.other()),
                };
                (own, others)
            });
            if work.iter().all(|(own, _)| own.is_empty()) {
                break;
            }
            // 2. Both models read and predict, on their own rows, at once (two threads)
            //    unless asked otherwise.
            let [senior_side, junior_side] = &mut sides;
            let [(s_own, s_others), (j_own, j_others)] = &work;
            let rows_now = &rows;
            let mut senior_step = || senior_side.next_logits(&prompt_refs, g, rows_now, s_own, s_others);
            let mut junior_step = || junior_side.next_logits(&prompt_refs, g, rows_now, j_own, j_others);
            let (senior_out, junior_out) = if self.config.concurrent {
                std::thread::scope(|scope| {
                    let senior = scope.spawn(senior_step);
                    let junior = junior_step();
                    (senior.join().expect("senior thread panicked"), junior)
                })
            } else {
                (senior_step(), junior_step())
            };
            // 3. Record what each model read, then sample each row's token and advance
            //    its schedule.
            let outs = [senior_out?, junior_out?];
            for (side, (_, fed)) in sides.iter().zip(&outs) {
                for &i in fed {
                    rows[i].read[side.slot()] = rows[i].tokens.len();
                }
            }
            for ((side, (own, _)), (logits, _)) in sides.iter().zip(&work).zip(outs) {
                let width = side.model.vocab_size();
                for (k, &i) in own.iter().enumerate() {
                    let row = &mut rows[i];
                    let row_logits = &logits[k * width..k * width + self.vocab];
                    let (token, log_prob) = self.config.sampling.sample(row_logits, &mut row.sampler)?;
                    row.tokens.push(token);
                    row.owners.push(side.owner);
                    row.log_probs.push(log_prob);
                    row.finish = match row.handoff.after(token, self.classes) {
                        Next::Stop(finish) => Some(finish),
                        Next::Write(_) if row.tokens.len() >= self.config.max_new_tokens => {
                            Some(Finish::Length)
                        }
                        Next::Write(_) => None,
                    };
                }
            }
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
    sampler: rand_chacha::ChaCha8Rng,
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
    owner: Owner,
    session: Option<Session>,
    /// Next-token logits at the end of each prompt, `[rows * vocab]`, from `start`.
    start_logits: Vec<f32>,
}

impl<'m> Side<'m> {
    fn new(model: &'m dyn Partner, owner: Owner) -> Self {
        Self { model, owner, session: None, start_logits: Vec::new() }
    }

    fn slot(&self) -> usize {
        match self.owner {
            Owner::Senior => 0,
            Owner::Junior => 1,
        }
    }

    /// Next-token logits for `mine` (host, `[mine.len() * model vocab]`) and the rows
    /// that read tokens. Rows with unread tokens read them in one fused call (with the
    /// `others` rows, which only read); rows that have read everything (only right after
    /// the prompt) use the prefill's logits. A model with nothing to do does nothing.
    fn next_logits(
        &mut self,
        prompts: &[&[TokenId]],
        g: usize,
        rows: &[Row],
        mine: &[usize],
        others: &[usize],
    ) -> Result<(Vec<f32>, Vec<usize>)> {
        if mine.is_empty() && others.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let vocab = self.model.vocab_size();
        if self.session.is_none() {
            let (session, logits) = self.model.start(prompts, g)?;
            self.start_logits = logits.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))?;
            self.session = Some(session);
        }
        let slot = self.slot();
        let unread = |i: &usize| rows[*i].read[slot] < rows[*i].tokens.len();
        let fed_rows: Vec<usize> = mine.iter().chain(others).copied().filter(unread).collect();
        let feeds: Vec<Feed<'_>> = fed_rows
            .iter()
            .map(|&i| Feed { row: i, tokens: &rows[i].tokens[rows[i].read[slot]..] })
            .collect();
        let fed = if feeds.is_empty() {
            Vec::new()
        } else {
            let session = self.session.as_mut().expect("started above");
            let logits = self.model.extend(session, &feeds)?;
            logits.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))?
        };
        // `fed_rows` lists the fed rows of `mine` first, in order.
        let mut out = Vec::with_capacity(mine.len() * vocab);
        let mut k = 0;
        for i in mine {
            if unread(i) {
                out.extend_from_slice(&fed[k * vocab..(k + 1) * vocab]);
                k += 1;
            } else {
                out.extend_from_slice(&self.start_logits[i * vocab..(i + 1) * vocab]);
            }
        }
        Ok((out, fed_rows))
    }
}

/// FNV-1a over the prompt's ids: a stable key that does not depend on batch position.
fn prompt_hash(tokens: &[TokenId]) -> u64 {
    tokens
        .iter()
        .flat_map(|t| t.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Row keys from (prompt content, its occurrence among identical prompts, copy index).
fn row_keys(prompts: &[Vec<TokenId>], g: usize) -> Vec<u64> {
    let mut seen = std::collections::HashMap::new();
    let mut keys = Vec::with_capacity(prompts.len() * g);
    for p in prompts {
        let h = prompt_hash(p);
        let occurrence = seen.entry(h).or_insert(0u64);
        for copy in 0..g as u64 {
            keys.push(h ^ (*occurrence << 32 | copy).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        *occurrence += 1;
    }
    keys
}
