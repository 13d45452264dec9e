//! Studies: the paper's comparison as data. Arms (GRPO, TRLVR, KL-Reg, or any recipe) ×
//! seeds, each run evaluated on the same problems, and claims declared before anything
//! runs, judged with intervals that carry the spread between problems and between seeds.
//!
//! This module is the part that knows nothing of models or plotting:
//!
//! | part | where |
//! |---|---|
//! | an evaluation with the study's own columns, and the figures ([`crate::eval::Figure`]) on it | [`evaluated`] |
//! | the hierarchical bootstrap: problems paired across arms, seeds per arm | [`resample`] |
//! | claims as declared: tests, thresholds, margins, preconditions | [`claim`] |
//! | reading them: shown, contradicted, not shown, not testable; Holm | [`verdict`] |
//! | the plan of runs, what is done, what changed | [`plan`] |
//!
//! [`Analysis::new`] puts them together: from every run's evaluations, each arm's
//! figures with intervals and every claim read. `trlvr study` (the command line) trains
//! and evaluates the plan and writes the report; `trlvr demo` is one such study.
//!
//! ```
//! use std::collections::BTreeMap;
//! use trlvr::eval::{ChainStats, EvalConfig, ProblemResult, Report, Throughput};
//! use trlvr::study::{Analysis, AnalysisConfig, ArmResults, Names, Verdict, check_claims, claim::ClaimSpec};
//!
//! // Two arms, two seeds each, 40 problems; `b` solves one more sample in 4 of each.
//! let run = |extra: usize| -> trlvr::study::Evaluated {
//!     let problems = (0..40).map(|id| ProblemResult {
//!         id, n: 4, solo_correct: (id % 4 + extra).min(4), handoff_correct: id % 3,
//!         solo_tokens: 40, handoff_tokens: 40, handoff_senior_tokens: 20, handoff_junior_nll: 10.0,
//!         legibility: ChainStats::default(), prompt_hash: None,
//!     }).collect();
//!     let config = EvalConfig { n: 4, ks: vec![1], bootstrap: 10, ..EvalConfig::default() };
//!     Report::from_results(&config, vec![("toy".into(), problems)], Throughput::default()).unwrap().into()
//! };
//! let arm = |name: &str, extra| ArmResults {
//!     name: name.into(),
//!     seeds: vec![1, 2],
//!     evaluations: BTreeMap::from([("step".to_string(), vec![run(extra), run(extra)])]),
//! };
//! let spec: ClaimSpec = serde_json::from_value(serde_json::json!({
//!     "id": "gain", "statement": "b is more accurate alone than a",
//!     "figure": "solo", "a": "b", "b": "a", "above": 0.0,
//! })).unwrap();
//! let arms = ["a".to_string(), "b".to_string()];
//! let evaluations = ["step".to_string()];
//! let claims = check_claims(&[spec], Names { arms: &arms, evaluations: &evaluations, columns: &[] })?;
//! let analysis = Analysis::new(&[arm("a", 0), arm("b", 1)], &claims, &AnalysisConfig::default())?;
//! assert_eq!(analysis.claims[0].verdict, Verdict::Shown);
//! # Ok::<(), trlvr::Error>(())
//! ```

pub mod claim;
pub mod evaluated;
pub mod plan;
pub mod resample;
pub mod verdict;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::eval::Figure;
pub use claim::{Claim, ClaimSpec, Names, Rule, Test, Threshold, check_claims};
pub use evaluated::Evaluated;
pub use plan::{Cost, Plan, PlannedRun, RunKey, State};
pub use resample::{Distribution, Resamples, seed_note};
pub use verdict::{ClaimReading, Multiplicity, Reading, TestReading, Verdict};

use crate::eval::Estimate;
use crate::{Error, Result};

/// How a study reads its results (the study file's `[analysis]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalysisConfig {
    /// Coverage of the intervals before any correction (default 0.95).
    pub confidence: f64,
    /// Bootstrap resamples (default 2000).
    pub bootstrap: usize,
    /// Seed of the resamples.
    pub seed: u64,
    /// Across claims: Holm's procedure (default) or none.
    pub multiplicity: Multiplicity,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        Self { confidence: 0.95, bootstrap: 2000, seed: 0, multiplicity: Multiplicity::Holm }
    }
}

impl AnalysisConfig {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::Config`] naming the key.
    pub fn validate(&self) -> Result<()> {
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return Err(Error::Config(format!(
                "analysis.confidence = {} must lie in (0.5, 1)",
                self.confidence
            )));
        }
        if self.bootstrap < 100 {
            return Err(Error::Config(format!(
                "analysis.bootstrap = {}: at least 100 resamples (percentile intervals need them)",
                self.bootstrap
            )));
        }
        Ok(())
    }
}

/// One arm's results: its seeds' evaluations, by evaluation name, in seed order.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmResults {
    /// The arm.
    pub name: String,
    /// Its seeds (one entry, any value, for an arm evaluated once).
    pub seeds: Vec<u64>,
    /// Per evaluation, one result per seed.
    pub evaluations: BTreeMap<String, Vec<Evaluated>>,
}

/// An arm's figure in one evaluation: pooled over its seeds, with the interval of the
/// hierarchical bootstrap, and each seed's own value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmFigure {
    /// Pooled over seeds, with its interval.
    pub estimate: Estimate,
    /// Each seed's value, in seed order (NaN, written `null`, where undefined).
    #[serde(deserialize_with = "nan_if_null")]
    pub seeds: Vec<f64>,
}

/// JSON writes NaN as `null`: read it back as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<f64>, D::Error> {
    Ok(Vec::<Option<f64>>::deserialize(deserializer)?.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// One row of the study's table: an arm in one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The evaluation.
    pub evaluation: String,
    /// The arm.
    pub arm: String,
    /// Its seeds.
    pub seeds: Vec<u64>,
    /// Every figure.
    pub figures: BTreeMap<Figure, ArmFigure>,
}

/// The two arms of a precondition that compares them (`grpo − warm-up`: the drift the
/// claims need), on every figure it could move, in one evaluation: whether the
/// precondition's figure moved alone or with the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRow {
    /// The evaluation.
    pub evaluation: String,
    /// `a` of `a − b`.
    pub a: String,
    /// `b` of `a − b`.
    pub b: String,
    /// a − b, pooled over seeds, with its interval at the study's confidence.
    pub figures: BTreeMap<Figure, Estimate>,
}

/// The figures a precondition's pair is shown on.
pub const PAIR_FIGURES: [Figure; 6] =
    [Figure::Solo, Figure::Handoff, Figure::Tax, Figure::JuniorCe, Figure::Kl, Figure::SoloLength];

/// What a study's results say: the table and the claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// How it was read.
    pub config: AnalysisConfig,
    /// Per evaluation, per arm.
    pub rows: Vec<Row>,
    /// Each precondition's pair of arms on [`PAIR_FIGURES`], per evaluation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairRow>,
    /// Every claim, read.
    pub claims: Vec<ClaimReading>,
    /// How each arm's seed-level variance enters its intervals.
    pub seed_notes: BTreeMap<String, String>,
}

impl Analysis {
    /// Reads `arms`' results: every figure of every arm in every evaluation, and every
    /// claim.
    ///
    /// # Errors
    /// [`Error::Config`] for bad settings or an arm without results;
    /// [`Error::Incomparable`] when two results of one evaluation are on other problems.
    pub fn new(arms: &[ArmResults], claims: &[Claim], config: &AnalysisConfig) -> Result<Self> {
        config.validate()?;
        let evaluations: Vec<String> = arms
            .iter()
            .flat_map(|a| a.evaluations.keys().cloned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for a in arms {
            for (name, runs) in &a.evaluations {
                if runs.len() != a.seeds.len() {
                    return Err(Error::Config(format!(
                        "arm {}: {} results in evaluation {name} for {} seeds",
                        a.name,
                        runs.len(),
                        a.seeds.len()
                    )));
                }
                for run in runs {
                    run.validate()?;
                }
            }
        }
        let mut resamples = BTreeMap::new();
        for e in &evaluations {
            let first =
                arms.iter().find_map(|a| a.evaluations.get(e).and_then(|r| r.first())).expect("listed");
            same_problems(e, first, arms)?;
            let key = crate::data::fnv1a(e.bytes());
            resamples.insert(e.clone(), Resamples::new(&first.sizes(), config.bootstrap, config.seed ^ key));
        }
        let columns: Vec<String> = arms
            .iter()
            .flat_map(|a| a.evaluations.values().flatten().flat_map(|r| r.columns.keys().cloned()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut figures: Vec<Figure> = Figure::BUILT_IN.to_vec();
        figures.extend(columns.iter().map(|c| Figure::Column(c.clone())));
        let arm = |name: &str| arms.iter().find(|a| a.name == name);
        // One distribution per (evaluation, arm, figure), drawn once.
        let cache = std::cell::RefCell::new(BTreeMap::<(String, String, Figure), Distribution>::new());
        let distribution = |evaluation: &str, name: &str, figure: &Figure| -> Result<Distribution> {
            let key = (evaluation.to_string(), name.to_string(), figure.clone());
            if let Some(d) = cache.borrow().get(&key) {
                return Ok(d.clone());
            }
            let a = arm(name).ok_or_else(|| Error::Config(format!("no results for arm {name}")))?;
            let runs = a.evaluations.get(evaluation).ok_or_else(|| {
                Error::Config(format!("arm {name} was not evaluated in evaluation {evaluation}"))
            })?;
            let runs: Vec<&Evaluated> = runs.iter().collect();
            let r = &resamples[evaluation];
            let d = r.distribution(&runs, &r.seeds(name, runs.len()), &figure.formula());
            cache.borrow_mut().insert(key, d.clone());
            Ok(d)
        };
        // Every test's arms must have been evaluated where the test reads them.
        for t in claims.iter().flat_map(|c| c.alternatives.iter().flat_map(|a| &a.tests).chain(&c.requires)) {
            for name in std::iter::once(&t.a).chain(&t.b) {
                distribution(&t.evaluation, name, &t.figure)?;
            }
        }
        let dist = |t: &Test| -> Distribution {
            let a = distribution(&t.evaluation, &t.a, &t.figure).expect("checked above");
            match &t.b {
                Some(b) => a.minus(&distribution(&t.evaluation, b, &t.figure).expect("checked above")),
                None => a,
            }
        };
        let reading = Reading {
            confidence: config.confidence,
            multiplicity: config.multiplicity,
            several_evaluations: evaluations.len() > 1,
        };
        let readings = verdict::judge(claims, reading, &dist);
        let mut rows = Vec::new();
        for e in &evaluations {
            for a in arms.iter().filter(|a| a.evaluations.contains_key(e)) {
                let mut row = Row {
                    evaluation: e.clone(),
                    arm: a.name.clone(),
                    seeds: a.seeds.clone(),
                    figures: BTreeMap::new(),
                };
                for f in &figures {
                    let d = distribution(e, &a.name, f)?;
                    let seeds = a.evaluations[e].iter().map(|r| r.figure(f)).collect();
                    row.figures
                        .insert(f.clone(), ArmFigure { estimate: d.estimate(config.confidence), seeds });
                }
                rows.push(row);
            }
        }
        let pairs = pairs(claims, &evaluations, config.confidence, |e, name, f| {
            if arm(name).is_some_and(|a| a.evaluations.contains_key(e)) {
                distribution(e, name, f).map(Some)
            } else {
                Ok(None)
            }
        })?;
        let seed_notes = arms.iter().map(|a| (a.name.clone(), seed_note(a.seeds.len()))).collect();
        Ok(Self { config: *config, rows, pairs, claims: readings, seed_notes })
    }

    /// The row of `arm` in `evaluation`.
    pub fn row(&self, evaluation: &str, arm: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.evaluation == evaluation && r.arm == arm)
    }
}

/// Each precondition's pair `a − b` (once per pair) on [`PAIR_FIGURES`], in every
/// evaluation both arms have; `distribution` gives an arm's draws (`None`: not evaluated there).
fn pairs(
    claims: &[Claim],
    evaluations: &[String],
    confidence: f64,
    distribution: impl Fn(&str, &str, &Figure) -> Result<Option<Distribution>>,
) -> Result<Vec<PairRow>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    for t in claims.iter().flat_map(|c| &c.requires) {
        let Some(b) = &t.b else { continue };
        if !seen.insert((t.a.clone(), b.clone())) {
            continue;
        }
        for e in evaluations {
            let mut figures = BTreeMap::new();
            for f in &PAIR_FIGURES {
                if let (Some(x), Some(y)) = (distribution(e, &t.a, f)?, distribution(e, b, f)?) {
                    figures.insert(f.clone(), x.minus(&y).estimate(confidence));
                }
            }
            if !figures.is_empty() {
                rows.push(PairRow { evaluation: e.clone(), a: t.a.clone(), b: b.clone(), figures });
            }
        }
    }
    Ok(rows)
}

/// Every result of `evaluation` poses the problems `first` does: the same datasets, ids
/// and prompts.
fn same_problems(evaluation: &str, first: &Evaluated, arms: &[ArmResults]) -> Result<()> {
    // Per dataset: its name and each problem's (id, prompt hash).
    type Shape = Vec<(String, Vec<(usize, Option<u64>)>)>;
    let shape = |r: &Evaluated| -> Shape {
        r.report
            .sets
            .iter()
            .map(|s| (s.name.clone(), s.problems.iter().map(|p| (p.id, p.prompt_hash)).collect()))
            .collect()
    };
    let want = shape(first);
    for a in arms {
        for (k, r) in a.evaluations.get(evaluation).into_iter().flatten().enumerate() {
            if shape(r) != want {
                return Err(Error::Incomparable(format!(
                    "evaluation {evaluation}: arm {} (seed {}) was evaluated on other problems than the first \
                     arm: arms can only be compared on the same problems and prompts",
                    a.name,
                    a.seeds.get(k).copied().unwrap_or_default()
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
