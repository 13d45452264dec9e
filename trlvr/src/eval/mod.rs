//! Long: sampling, measuring and gathering results across ranks are one pipeline over
//! private state; statistics, reports, comparison and the sample store are split out.
//!
//! Evaluation (method.md §5): solo and handoff pass@k, the communication tax, and how
//! legible the senior's chains are to the junior.
//!
//! For every problem of every dataset, [`Evaluation`] draws `n` samples (default 8) at
//! the evaluation sampler (T 0.7, top-p 0.8, top-k 20) twice, on the rollout engine,
//! batched across problems and samples (each prompt prefilled once):
//!
//! - **solo**: the senior alone ([`Solo`]);
//! - **handoff**: the senior starts, then senior and junior alternate one paragraph each
//!   ([`StepAlternation`]: a turn ends after `"\n\n"`, which is kept; one shared token
//!   budget; at most 150 rounds); the team's final text is graded.
//!
//! Each dataset's [`Verifier`] grades every sample. Then (each figure's name, unit and
//! reading written once, in the figure table [`Figure`]):
//!
//! | figure | how |
//! |---|---|
//! | pass@k, solo and handoff | unbiased estimator ([`pass_at_k`]) per problem, mean per dataset |
//! | communication tax | solo pass@1 − handoff pass@1 (points), and handoff / solo |
//! | legibility | the junior's mean per-token cross-entropy and top-1 accuracy on the senior's solo chains |
//! | drift | per-token KL(senior ‖ junior) on the senior's solo chains, k3 and exact; the junior's NLL of senior-written tokens |
//!
//! (see [`legibility`] for the per-token formulas). Every figure comes per dataset and
//! macro-averaged over datasets, with a percentile bootstrap interval over problems
//! ([`Bootstrap`]; paired: one set of resamples for all figures).
//!
//! Samples are kept per problem in a [`SampleStore`]: on disk, an interrupted
//! evaluation resumes where it stopped and a finished one is re-graded and re-measured
//! without sampling again. Solo and handoff rows use the same random streams, so the
//! handoff's first paragraph is the solo sample's (common random numbers: the tax is
//! measured with less noise, and is exactly 0 for a junior identical to the senior).
//!
//! A second evaluation of one senior under another handoff schedule takes the first's
//! solo samples and measures ([`SoloSource`]) and draws its handoff samples only.
//!
//! Two evaluations over the same problems (two seniors, say) are compared in [`compare`]:
//! B − A of every figure, with intervals from one set of resampled problems for both.
//!
//! ```
//! use burn::prelude::*;
//! use trlvr::eval::{EvalConfig, EvalProblem, EvalSet, Evaluation, SampleStore};
//! use trlvr::prelude::*;
//!
//! let device = Device::default();
//! device.seed(0); // a senior that writes some tokens: drift over none is undefined (NaN)
//! let classes = TokenClasses::from_texts(&[" a", " b", "\n\n", "<eos>"], &[3])?;
//! let senior = BigramLm::random(4, 1.0, &device);
//! let problems = vec![EvalProblem { id: 1, prompt: vec![0, 1], reference: " a".into() }];
//! let sets = vec![EvalSet::new("toy", problems, Box::new(ExactMatch))];
//! let texts = [" a", " b", "\n\n", ""];
//! let detokenize = |ids: &[TokenId]| ids.iter().map(|&i| texts[i as usize]).collect::<String>();
//! let config = EvalConfig { n: 4, ks: vec![1, 2, 4], max_new_tokens: 8, bootstrap: 100, ..EvalConfig::default() };
//! let eval = Evaluation::new(&senior, &senior, &classes, config, &detokenize)?;
//! let report = eval.run(&sets, &mut SampleStore::in_memory(), &mut |_| {})?;
//! assert_eq!(report.macro_figures.tax.points.value, 0.0); // self-paired
//! assert_eq!(report.macro_figures.drift.kl_exact.value, 0.0);
//! # Ok::<(), trlvr::Error>(())
//! ```

pub mod compare;
mod config;
pub(crate) mod figure;
pub mod legibility;
mod report;
mod reuse;
mod stats;
mod store;

use std::time::Instant;

use serde_json::Value;

pub use compare::{
    CompareConfig, Comparison, Difference, Differences, PassAtDifference, Run, SetComparison, Shown,
};
pub use config::EvalConfig;
pub use figure::{Figure, ProblemResult};
pub use legibility::{Chain, ChainStats};
pub use report::{Drift, Figures, Legibility, Report, SetReport, Tax, Throughput};
pub use reuse::SoloSource;
pub use stats::{Bootstrap, Estimate, newcombe, pass_at_k, ratio_of_sums, wilson};
pub use store::{Mode, ProblemSamples, Sample, SampleStore};

use crate::collective::{Collective, Single, all_gather};
use crate::model::Partner;
use crate::rollout::{Progress, RolloutConfig, RolloutEngine};
use crate::schedule::{Finish, HandoffSchedule, Solo, StepAlternation};
use crate::token::{Owner, TokenId};
use crate::verifier::Verifier;
use crate::vocab::TokenClasses;
use crate::{Error, Result};

/// One problem, ready for the models.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalProblem {
    /// Its id in the dataset (the line, say); the key of its stored samples.
    pub id: usize,
    /// The prompt's ids (chat template applied).
    pub prompt: Vec<TokenId>,
    /// The reference answer, as the dataset's verifier reads it.
    pub reference: String,
}

/// A dataset: its problems and the verifier that grades them.
pub struct EvalSet {
    /// A short name (tables, sample keys).
    pub name: String,
    /// The problems.
    pub problems: Vec<EvalProblem>,
    /// Grades a response against a problem's reference.
    pub verifier: Box<dyn Verifier>,
}

impl std::fmt::Debug for EvalSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalSet").field("name", &self.name).field("problems", &self.problems.len()).finish()
    }
}

impl EvalSet {
    /// A dataset named `name`.
    pub fn new(name: impl Into<String>, problems: Vec<EvalProblem>, verifier: Box<dyn Verifier>) -> Self {
        Self { name: name.into(), problems, verifier }
    }
}

/// Where an evaluation stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvalProgress {
    /// What is being done now.
    pub phase: Phase,
    /// Problem-modes sampled (found in the store or drawn now), out of `total`; when
    /// measuring, problems measured.
    pub done: usize,
    /// Problems × 2 modes; when measuring, problems.
    pub total: usize,
    /// Tokens drawn in this run so far.
    pub tokens: usize,
    /// Seconds spent drawing them.
    pub seconds: f64,
    /// The engine's progress within the current batch, if drawing.
    pub batch: Option<Progress>,
}

/// The phases of an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Drawing samples in a mode.
    Sampling(Mode),
    /// Grading and measuring legibility and drift.
    Measuring,
}

/// Text of response ids, for the verifier (special tokens as the tokenizer writes them).
pub type DetokenizeFn<'a> = &'a (dyn Fn(&[TokenId]) -> String + Sync);

/// An evaluation of one senior/junior pair.
pub struct Evaluation<'m> {
    senior: &'m dyn Partner,
    junior: &'m dyn Partner,
    classes: &'m TokenClasses,
    config: EvalConfig,
    detokenize: DetokenizeFn<'m>,
    ranks: &'m dyn Collective,
    /// The handoff mode's schedule, when not the paragraph alternation.
    handoff: Option<&'m dyn HandoffSchedule>,
    /// Solo measures taken from an earlier evaluation of the same samples.
    solo_source: Option<&'m SoloSource>,
}

impl std::fmt::Debug for Evaluation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluation").field("config", &self.config).finish()
    }
}

impl<'m> Evaluation<'m> {
    /// An evaluation of `senior` with `junior` (the same model twice: self-paired).
    ///
    /// # Errors
    /// [`Error::Vocabulary`] if the vocabulary sizes differ; [`Error::Config`] for bad
    /// settings (n 0, a k of 0 or above n, ...).
    pub fn new(
        senior: &'m dyn Partner,
        junior: &'m dyn Partner,
        classes: &'m TokenClasses,
        config: EvalConfig,
        detokenize: DetokenizeFn<'m>,
    ) -> Result<Self> {
        if senior.vocab_size() != junior.vocab_size() {
            return Err(Error::Vocabulary(format!(
                "senior has {} ids, junior {}: evaluation needs one vocabulary",
                senior.vocab_size(),
                junior.vocab_size()
            )));
        }
        if config.n == 0 || config.ks.is_empty() || config.ks.iter().any(|&k| k == 0 || k > config.n) {
            return Err(Error::Config(format!(
                "need n >= 1 and every k in 1..=n (n {}, k {:?})",
                config.n, config.ks
            )));
        }
        if config.batch_problems == 0 || config.max_rounds == 0 || config.max_new_tokens == 0 {
            return Err(Error::Config("batch_problems, max_rounds and max_new_tokens must be >= 1".into()));
        }
        config.sampling.validate()?;
        Ok(Self {
            senior,
            junior,
            classes,
            config,
            detokenize,
            ranks: &Single,
            handoff: None,
            solo_source: None,
        })
    }

    /// Evaluates as one rank of `ranks` (data parallelism; [`crate::collective`]): the
    /// batches of problems are dealt out in turn, each rank measures every `size`-th
    /// problem, and every rank ends with all samples and the whole report, the same as one
    /// process's. Every rank calls [`Evaluation::sample`] and [`Evaluation::measure`] with
    /// a store holding the same samples; only rank 0's needs to write its file.
    #[must_use]
    pub fn with_collective(mut self, ranks: &'m dyn Collective) -> Self {
        self.ranks = ranks;
        self
    }

    /// Draws the handoff samples with `schedule` instead of the paragraph alternation
    /// (method.md §5): the training schedule, say, which hands off at word boundaries
    /// and which no formatting of the senior's can dodge.
    ///
    /// # Errors
    /// [`Error::Config`] for a schedule that never hands over, or with bad settings.
    pub fn with_handoff(mut self, schedule: &'m dyn HandoffSchedule) -> Result<Self> {
        schedule.validate()?;
        if schedule.senior_only() {
            return Err(Error::Config(format!(
                "the handoff schedule {} never hands over to the junior: the handoff mode needs one that does",
                schedule.name()
            )));
        }
        self.handoff = Some(schedule);
        Ok(self)
    }

    /// Takes the legibility and drift of the solo samples `source` measured (with this
    /// junior) instead of measuring them again; [`SoloSource::adopt`] puts its samples in
    /// the store. Samples that are not the source's are measured as usual.
    #[must_use]
    pub fn with_solo_source(mut self, source: &'m SoloSource) -> Self {
        self.solo_source = Some(source);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &EvalConfig {
        &self.config
    }

    /// What the samples depend on (the store's settings line; add model identities).
    pub fn sample_settings(&self) -> Value {
        let mut settings = serde_json::json!({
            "n": self.config.n,
            "sampling": self.config.sampling,
            "max_new_tokens": self.config.max_new_tokens,
            "max_rounds": self.config.max_rounds,
            "seed": self.config.seed,
        });
        if let Some(schedule) = self.handoff {
            settings["handoff"] = Value::String(format!("{schedule:?}"));
        }
        settings
    }

    /// Samples, grades and measures everything: [`Evaluation::sample`], then
    /// [`Evaluation::measure`].
    ///
    /// # Errors
    /// As those two.
    pub fn run(
        &self,
        sets: &[EvalSet],
        store: &mut SampleStore,
        on_progress: &mut dyn FnMut(EvalProgress),
    ) -> Result<Report> {
        let throughput = self.sample(sets, store, on_progress)?;
        self.measure(sets, store, throughput, on_progress)
    }

    /// Draws the samples the store lacks, solo then handoff, batch by batch; each batch
    /// is in the store (and its file) before the next starts.
    ///
    /// # Errors
    /// [`Error::Config`] for an empty dataset or two problems with one id in a dataset;
    /// engine and store errors (samples already stored stay).
    pub fn sample(
        &self,
        sets: &[EvalSet],
        store: &mut SampleStore,
        on_progress: &mut dyn FnMut(EvalProgress),
    ) -> Result<Throughput> {
        check_sets(sets)?;
        let total = 2 * sets.iter().map(|s| s.problems.len()).sum::<usize>();
        let mut done = 0;
        let mut throughput = Throughput::default();
        for mode in [Mode::Solo, Mode::Handoff] {
            let (engine, built_in) = self.engine(mode)?;
            let schedule: &dyn HandoffSchedule = match (mode, self.handoff) {
                (Mode::Handoff, Some(schedule)) => schedule,
                _ => built_in.as_ref(),
            };
            let (todo, stored) = pending(sets, store, mode);
            done += stored;
            let phase = Phase::Sampling(mode);
            on_progress(between_batches(phase, done, total, &throughput));
            let batches: Vec<_> = todo.chunks(self.config.batch_problems).collect();
            // One batch per rank at a time, in order; every rank then stores them all.
            for round in batches.chunks(self.ranks.size()) {
                let start = Instant::now();
                let (base_tokens, base_seconds) = (throughput.tokens(), throughput.seconds());
                let (records, tokens) = match round.get(self.ranks.rank()) {
                    Some(batch) => self.draw_batch(&engine, schedule, mode, batch, &mut |step| {
                        on_progress(EvalProgress {
                            phase,
                            done,
                            total,
                            tokens: base_tokens + step.tokens,
                            seconds: base_seconds + start.elapsed().as_secs_f64(),
                            batch: Some(step),
                        });
                    })?,
                    None => (Vec::new(), 0),
                };
                let (records, tokens, seconds) =
                    self.gather_round(records, tokens, start.elapsed().as_secs_f64())?;
                throughput.add(mode, tokens, seconds);
                store.append(records)?;
                done += round.iter().map(|b| b.len()).sum::<usize>();
                on_progress(between_batches(phase, done, total, &throughput));
            }
        }
        Ok(throughput)
    }

    /// The engine and the schedule that draw `mode`'s samples: the senior alone, or
    /// senior and junior alternating paragraphs.
    fn engine(&self, mode: Mode) -> Result<(RolloutEngine<'m>, Box<dyn HandoffSchedule>)> {
        let rollout = RolloutConfig {
            group_size: self.config.n,
            max_new_tokens: self.config.max_new_tokens,
            sampling: self.config.sampling,
            seed: self.config.seed,
            catch_up: self.config.catch_up,
            host_sampling: self.config.host_sampling,
            ..RolloutConfig::default()
        };
        let made: (RolloutEngine<'m>, Box<dyn HandoffSchedule>) = match mode {
            Mode::Solo => {
                (RolloutEngine::solo(self.senior, self.classes, rollout)?, Box::new(Solo::senior()))
            }
            Mode::Handoff => (
                RolloutEngine::new(self.senior, self.junior, self.classes, rollout)?,
                Box::new(StepAlternation { first: Owner::Senior, max_rounds: self.config.max_rounds }),
            ),
        };
        Ok(made)
    }

    /// Draws one batch's samples (this rank's batch of a round); its records for the
    /// store and the tokens drawn. `on_step` hears the engine's progress.
    fn draw_batch(
        &self,
        engine: &RolloutEngine<'_>,
        schedule: &dyn HandoffSchedule,
        mode: Mode,
        batch: &[Pending<'_>],
        on_step: &mut dyn FnMut(Progress),
    ) -> Result<(Vec<ProblemSamples>, usize)> {
        let prompts: Vec<Vec<TokenId>> = batch.iter().map(|(_, p, _)| p.prompt.clone()).collect();
        let streams: Vec<u64> = batch.iter().map(|(_, _, s)| *s).collect();
        let rollouts = engine.generate_streams(&prompts, &streams, schedule, on_step)?;
        let tokens = rollouts.iter().map(|r| r.tokens.len()).sum();
        let records = batch
            .iter()
            .enumerate()
            .map(|(i, (set, p, _))| ProblemSamples {
                set: (*set).to_string(),
                id: p.id,
                mode,
                prompt_hash: prompt_hash(&p.prompt),
                samples: rollouts
                    .iter()
                    .filter(|r| r.prompt == i)
                    .map(|r| Sample {
                        tokens: r.tokens.clone(),
                        owners: Sample::letters(&r.owners),
                        finish: r.finish,
                    })
                    .collect(),
            })
            .collect();
        Ok((records, tokens))
    }

    /// Grades every stored sample and measures legibility and drift; the figures with
    /// their intervals. `throughput` is carried into the report; `on_progress` hears
    /// after each problem ([`Phase::Measuring`], `done` out of `total` problems).
    ///
    /// # Errors
    /// [`Error::Config`] if a problem has no samples in the store (run
    /// [`Evaluation::sample`] first); model errors.
    pub fn measure(
        &self,
        sets: &[EvalSet],
        store: &SampleStore,
        throughput: Throughput,
        on_progress: &mut dyn FnMut(EvalProgress),
    ) -> Result<Report> {
        check_sets(sets)?;
        let total = sets.iter().map(|s| s.problems.len()).sum();
        let mut done = 0;
        let (tokens, seconds) = (throughput.tokens(), throughput.seconds());
        // Rank r measures every size-th problem; the results are then shared in order.
        let mut mine = Vec::new();
        let all = sets.iter().flat_map(|set| set.problems.iter().map(move |p| (set, p)));
        for (index, (set, p)) in all.enumerate() {
            if index % self.ranks.size() != self.ranks.rank() {
                continue;
            }
            let get = |mode| {
                store.get(&set.name, p.id, mode, prompt_hash(&p.prompt)).ok_or_else(|| {
                    Error::Config(format!("{}, problem {}: no {mode:?} samples in the store", set.name, p.id))
                })
            };
            let (solo, handoff) = (get(Mode::Solo)?, get(Mode::Handoff)?);
            mine.push(self.measure_problem(set, p, solo, handoff)?);
            done += 1;
            on_progress(EvalProgress { phase: Phase::Measuring, done, total, tokens, seconds, batch: None });
        }
        let mut dealt = self.gather_results(mine)?.into_iter();
        let mut results = Vec::with_capacity(sets.len());
        for set in sets {
            let problems = dealt.by_ref().take(set.problems.len()).collect();
            results.push((set.name.clone(), problems));
        }
        Report::from_results(&self.config, results, throughput)
    }

    /// Every rank's records of a round of batches (in rank order: batch order), the
    /// round's tokens over all ranks and its slowest rank's seconds.
    fn gather_round(
        &self,
        records: Vec<ProblemSamples>,
        tokens: usize,
        seconds: f64,
    ) -> Result<(Vec<ProblemSamples>, usize, f64)> {
        if self.ranks.size() == 1 {
            return Ok((records, tokens, seconds));
        }
        let bytes = serde_json::to_vec(&records).map_err(|e| Error::Collective(e.to_string()))?;
        let mut all = Vec::new();
        for theirs in all_gather(self.ranks, &bytes)? {
            let theirs: Vec<ProblemSamples> =
                serde_json::from_slice(&theirs).map_err(|e| Error::Collective(e.to_string()))?;
            all.extend(theirs);
        }
        let (mut tokens, mut seconds) = ([tokens as f64], [seconds]);
        self.ranks.sum_f64(&mut tokens)?;
        self.ranks.max_f64(&mut seconds)?;
        Ok((all, tokens[0] as usize, seconds[0]))
    }

    /// The problems' results in evaluation order, from the ranks' dealt shares (rank r
    /// holds problems r, r + size, ...).
    fn gather_results(&self, mine: Vec<ProblemResult>) -> Result<Vec<ProblemResult>> {
        if self.ranks.size() == 1 {
            return Ok(mine);
        }
        let bytes = serde_json::to_vec(&mine).map_err(|e| Error::Collective(e.to_string()))?;
        let shares: Vec<Vec<ProblemResult>> = all_gather(self.ranks, &bytes)?
            .iter()
            .map(|b| serde_json::from_slice(b).map_err(|e| Error::Collective(e.to_string())))
            .collect::<Result<_>>()?;
        let total: usize = shares.iter().map(Vec::len).sum();
        let size = shares.len();
        let mut shares: Vec<_> = shares.into_iter().map(Vec::into_iter).collect();
        Ok((0..total).filter_map(|i| shares[i % size].next()).collect())
    }

    fn measure_problem(
        &self,
        set: &EvalSet,
        p: &EvalProblem,
        solo: &ProblemSamples,
        handoff: &ProblemSamples,
    ) -> Result<ProblemResult> {
        let correct = |samples: &ProblemSamples| {
            samples
                .samples
                .iter()
                .filter(|s| {
                    set.verifier.verify(&(self.detokenize)(&s.tokens[..shown(s)]), &p.reference).correct
                })
                .count()
        };
        let (solo_correct, handoff_correct) = (correct(solo), correct(handoff));
        let budget = self.config.logits_budget;
        let legibility = match self.solo_source.and_then(|s| s.legibility(&set.name, solo)) {
            Some(measured) => measured,
            None => self.solo_legibility(p, solo)?,
        };
        let owners: Vec<Vec<Owner>> = handoff
            .samples
            .iter()
            .filter(|s| shown(s) > 0)
            .map(|s| s.owner_list()[..shown(s)].to_vec())
            .collect();
        let chains: Vec<Chain<'_>> = handoff
            .samples
            .iter()
            .filter(|s| shown(s) > 0)
            .map(|s| Chain { prompt: &p.prompt, response: &s.tokens[..shown(s)] })
            .collect();
        let owner_refs: Vec<&[Owner]> = owners.iter().map(Vec::as_slice).collect();
        let (mut handoff_nll, mut handoff_senior_tokens) = (0.0, 0);
        if !chains.is_empty() {
            for (sum, count) in
                legibility::junior_nll_of_senior_tokens(self.junior, &chains, &owner_refs, budget)?
            {
                handoff_nll += sum;
                handoff_senior_tokens += count;
            }
        }
        Ok(ProblemResult {
            id: p.id,
            n: solo.samples.len(),
            solo_correct,
            handoff_correct,
            solo_tokens: solo.samples.iter().map(|s| s.tokens.len()).sum(),
            handoff_tokens: handoff.samples.iter().map(|s| s.tokens.len()).sum(),
            handoff_senior_tokens,
            handoff_junior_nll: handoff_nll,
            legibility,
            prompt_hash: Some(prompt_hash(&p.prompt)),
        })
    }

    /// Legibility and drift of one problem's solo chains.
    fn solo_legibility(&self, p: &EvalProblem, solo: &ProblemSamples) -> Result<ChainStats> {
        let chains: Vec<Chain<'_>> = solo
            .samples
            .iter()
            .filter(|s| shown(s) > 0)
            .map(|s| Chain { prompt: &p.prompt, response: &s.tokens[..shown(s)] })
            .collect();
        let mut legibility = ChainStats::default();
        if !chains.is_empty() {
            for stats in legibility::compare(self.senior, self.junior, &chains, self.config.logits_budget)? {
                legibility.add(&stats);
            }
        }
        Ok(legibility)
    }
}

/// A sample's text tokens: without the EOS that closed it.
fn shown(s: &Sample) -> usize {
    s.tokens.len() - usize::from(s.finish == Finish::Eos && !s.tokens.is_empty())
}

fn check_sets(sets: &[EvalSet]) -> Result<()> {
    let mut names = std::collections::HashSet::new();
    for set in sets {
        if set.problems.is_empty() {
            return Err(Error::Config(format!("dataset {} has no problems", set.name)));
        }
        if !names.insert(set.name.as_str()) {
            return Err(Error::Config(format!("two datasets are named {}", set.name)));
        }
        let mut ids = std::collections::HashSet::new();
        if let Some(p) = set.problems.iter().find(|p| !ids.insert(p.id)) {
            return Err(Error::Config(format!("dataset {}: problem id {} appears twice", set.name, p.id)));
        }
        if let Some(p) = set.problems.iter().find(|p| p.prompt.is_empty()) {
            return Err(Error::Config(format!("dataset {}: problem {} has an empty prompt", set.name, p.id)));
        }
    }
    if sets.is_empty() {
        return Err(Error::Config("no datasets to evaluate".into()));
    }
    Ok(())
}

/// A problem whose samples are yet to be drawn: its dataset, itself, its random stream.
type Pending<'a> = (&'a str, &'a EvalProblem, u64);

/// The problems whose `mode` samples the store lacks, each with its stream, and how many
/// the store holds already. Streams are numbered over the whole evaluation: a problem's
/// samples do not depend on its batch, and a prompt in two sets (or twice in one) gets
/// two draws.
fn pending<'a>(sets: &'a [EvalSet], store: &SampleStore, mode: Mode) -> (Vec<Pending<'a>>, usize) {
    let all: Vec<(&str, &EvalProblem)> =
        sets.iter().flat_map(|s| s.problems.iter().map(move |p| (s.name.as_str(), p))).collect();
    let prompts: Vec<Vec<TokenId>> = all.iter().map(|(_, p)| p.prompt.clone()).collect();
    let mut todo = Vec::new();
    let mut stored = 0;
    for ((set, p), stream) in all.into_iter().zip(crate::rollout::streams(&prompts)) {
        if store.get(set, p.id, mode, prompt_hash(&p.prompt)).is_some() {
            stored += 1;
        } else {
            todo.push((set, p, stream));
        }
    }
    (todo, stored)
}

/// Where sampling stands between two batches (no batch being drawn).
fn between_batches(phase: Phase, done: usize, total: usize, throughput: &Throughput) -> EvalProgress {
    EvalProgress {
        phase,
        done,
        total,
        tokens: throughput.tokens(),
        seconds: throughput.seconds(),
        batch: None,
    }
}

/// FNV-1a over the prompt's ids: the key of a problem's samples in a [`SampleStore`].
pub fn prompt_hash(tokens: &[TokenId]) -> u64 {
    crate::data::fnv1a(tokens.iter().flat_map(|t| t.to_le_bytes()))
}
