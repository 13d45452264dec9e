//! The figures a study reads off an evaluation, each a ratio of two per-problem sums.
//!
//! Every figure of a [`Report`] is, per dataset, Σ over problems of a numerator over Σ of
//! a denominator (pass@1: the fraction of correct samples over one per problem; junior
//! CE: per-chain means over chains), and the macro figure is the mean over datasets.
//! Written that way a figure can be pooled over seeds and resampled over problems and
//! seeds alike ([`super::resample`]). A study may add columns of its own
//! ([`Evaluated::columns`]): the demo's shorthand share is one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::eval::{ProblemResult, Report, pass_at_k};

/// A figure of an evaluation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Figure {
    /// Solo pass@1, percent.
    Solo,
    /// Handoff pass@1, percent.
    Handoff,
    /// The communication tax, solo − handoff pass@1, points.
    Tax,
    /// The junior's cross-entropy on the senior's solo chains (mean of per-chain means),
    /// nats per token.
    JuniorCe,
    /// The junior's top-1 accuracy on those chains, percent (mean over chains).
    JuniorTop1,
    /// KL(senior ‖ junior) per token on the solo chains, exact over the vocabulary, nats.
    Kl,
    /// The same, k3 estimate, nats.
    KlK3,
    /// The share of handoff tokens the senior wrote, percent.
    SeniorShare,
    /// The junior's NLL of the senior-written handoff tokens, nats per token.
    JuniorNllHandoff,
    /// Mean solo response length, tokens.
    SoloLength,
    /// Mean handoff response length, tokens.
    HandoffLength,
    /// A column the study adds ([`Evaluated::columns`]), as a percentage of its sums.
    Column(String),
}

/// One side of a ratio: which per-problem sums, and the factor to the figure's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Sum {
    SoloPass,
    HandoffPass,
    Ones,
    ChainCe,
    ChainTop1,
    Chains,
    Kl,
    KlK3,
    ChainTokens,
    HandoffSenior,
    HandoffTokens,
    HandoffNll,
    SoloTokens,
    Samples,
}

impl Sum {
    fn of(self, p: &ProblemResult) -> f64 {
        match self {
            // pass@1 as the report computes it, so the figures agree to the bit.
            Sum::SoloPass => pass_at_k(p.n, p.solo_correct, 1).unwrap_or(f64::NAN),
            Sum::HandoffPass => pass_at_k(p.n, p.handoff_correct, 1).unwrap_or(f64::NAN),
            Sum::Ones => 1.0,
            Sum::ChainCe => p.legibility.chain_ce,
            Sum::ChainTop1 => p.legibility.chain_top1,
            Sum::Chains => p.legibility.chains as f64,
            Sum::Kl => p.legibility.kl_exact,
            Sum::KlK3 => p.legibility.kl_k3,
            Sum::ChainTokens => p.legibility.tokens as f64,
            Sum::HandoffSenior => p.handoff_senior_tokens as f64,
            Sum::HandoffTokens => p.handoff_tokens as f64,
            Sum::HandoffNll => p.handoff_junior_nll,
            Sum::SoloTokens => p.solo_tokens as f64,
            Sum::Samples => p.n as f64,
        }
    }
}

/// How a figure is computed: per dataset, a signed sum of ratios of per-problem sums
/// (one ratio; the tax: solo minus handoff); the mean over datasets; times `scale`. The
/// order of operations is the report's, so one evaluation's figure is its report's to the
/// bit.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Formula {
    /// `(sign, numerator, denominator)`.
    pub(super) terms: Vec<(f64, Part, Part)>,
    /// To the figure's unit (100 for percentages).
    pub(super) scale: f64,
}

/// A per-problem column: one of an evaluation's sums, or one the study added.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part {
    Sum(Sum),
    /// `(column, 0)`: a study column's numerator; `(column, 1)`: its denominator.
    Column(String, usize),
}

impl Figure {
    /// Every built-in figure, in table order.
    pub const BUILT_IN: [Figure; 11] = [
        Figure::Solo,
        Figure::Handoff,
        Figure::Tax,
        Figure::JuniorCe,
        Figure::JuniorTop1,
        Figure::Kl,
        Figure::KlK3,
        Figure::SeniorShare,
        Figure::JuniorNllHandoff,
        Figure::SoloLength,
        Figure::HandoffLength,
    ];

    /// The name a study file uses (`solo`, `tax`, `junior_ce`, ...; a study column's own name).
    pub fn name(&self) -> &str {
        match self {
            Figure::Solo => "solo",
            Figure::Handoff => "handoff",
            Figure::Tax => "tax",
            Figure::JuniorCe => "junior_ce",
            Figure::JuniorTop1 => "junior_top1",
            Figure::Kl => "kl",
            Figure::KlK3 => "kl_k3",
            Figure::SeniorShare => "senior_share",
            Figure::JuniorNllHandoff => "junior_nll_handoff",
            Figure::SoloLength => "solo_length",
            Figure::HandoffLength => "handoff_length",
            Figure::Column(name) => name,
        }
    }

    /// The figure named `name`: a built-in one, or one of `columns` (a study's own).
    pub fn parse(name: &str, columns: &[String]) -> Option<Self> {
        Self::BUILT_IN
            .iter()
            .find(|f| f.name() == name)
            .cloned()
            .or_else(|| columns.iter().any(|c| c == name).then(|| Figure::Column(name.to_string())))
    }

    /// What it measures, in words, with its unit (table headers).
    pub fn label(&self) -> String {
        match self {
            Figure::Solo => "solo pass@1 (%)".into(),
            Figure::Handoff => "handoff pass@1 (%)".into(),
            Figure::Tax => "tax (points)".into(),
            Figure::JuniorCe => "junior CE (nats/token)".into(),
            Figure::JuniorTop1 => "junior top-1 (%)".into(),
            Figure::Kl => "KL to the junior (nats/token)".into(),
            Figure::KlK3 => "KL k3 (nats/token)".into(),
            Figure::SeniorShare => "senior share of handoff tokens (%)".into(),
            Figure::JuniorNllHandoff => "junior NLL of senior handoff tokens (nats/token)".into(),
            Figure::SoloLength => "solo length (tokens)".into(),
            Figure::HandoffLength => "handoff length (tokens)".into(),
            Figure::Column(name) => format!("{name} (%)"),
        }
    }

    /// The unit of a difference of it ("points" for percentages).
    pub fn difference_unit(&self) -> &'static str {
        match self {
            Figure::Solo
            | Figure::Handoff
            | Figure::Tax
            | Figure::JuniorTop1
            | Figure::SeniorShare
            | Figure::Column(_) => "points",
            Figure::SoloLength | Figure::HandoffLength => "tokens",
            _ => "nats/token",
        }
    }

    /// Decimals worth printing.
    pub fn decimals(&self) -> usize {
        match self.difference_unit() {
            "nats/token" => 3,
            _ => 1,
        }
    }

    pub(super) fn formula(&self) -> Formula {
        let ratio = |numerator: Sum, denominator: Sum, scale: f64| Formula {
            terms: vec![(1.0, Part::Sum(numerator), Part::Sum(denominator))],
            scale,
        };
        match self {
            Figure::Solo => ratio(Sum::SoloPass, Sum::Ones, 100.0),
            Figure::Handoff => ratio(Sum::HandoffPass, Sum::Ones, 100.0),
            Figure::Tax => Formula {
                terms: vec![
                    (1.0, Part::Sum(Sum::SoloPass), Part::Sum(Sum::Ones)),
                    (-1.0, Part::Sum(Sum::HandoffPass), Part::Sum(Sum::Ones)),
                ],
                scale: 100.0,
            },
            Figure::JuniorCe => ratio(Sum::ChainCe, Sum::Chains, 1.0),
            Figure::JuniorTop1 => ratio(Sum::ChainTop1, Sum::Chains, 100.0),
            Figure::Kl => ratio(Sum::Kl, Sum::ChainTokens, 1.0),
            Figure::KlK3 => ratio(Sum::KlK3, Sum::ChainTokens, 1.0),
            Figure::SeniorShare => ratio(Sum::HandoffSenior, Sum::HandoffTokens, 100.0),
            Figure::JuniorNllHandoff => ratio(Sum::HandoffNll, Sum::HandoffSenior, 1.0),
            Figure::SoloLength => ratio(Sum::SoloTokens, Sum::Samples, 1.0),
            Figure::HandoffLength => ratio(Sum::HandoffTokens, Sum::Samples, 1.0),
            Figure::Column(name) => Formula {
                terms: vec![(1.0, Part::Column(name.clone(), 0), Part::Column(name.clone(), 1))],
                scale: 100.0,
            },
        }
    }
}

impl From<Figure> for String {
    fn from(f: Figure) -> Self {
        f.name().to_string()
    }
}

impl TryFrom<String> for Figure {
    type Error = String;

    /// A built-in figure by name; any other name is taken as a study column.
    fn try_from(name: String) -> Result<Self, String> {
        Ok(Self::parse(&name, &[]).unwrap_or(Figure::Column(name)))
    }
}

impl std::fmt::Display for Figure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one evaluation of one run gave: the report, with any per-problem columns the study
/// adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluated {
    /// The evaluation's report (per-problem results per dataset).
    pub report: Report,
    /// Study columns by name: `[dataset][problem] = [numerator, denominator]`, read as
    /// the percentage Σ numerator / Σ denominator ([`Figure::Column`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub columns: BTreeMap<String, Vec<Vec<[f64; 2]>>>,
}

impl From<Report> for Evaluated {
    fn from(report: Report) -> Self {
        Self { report, columns: BTreeMap::new() }
    }
}

impl Evaluated {
    /// Problems per dataset.
    pub fn sizes(&self) -> Vec<usize> {
        self.report.sets.iter().map(|s| s.problems.len()).collect()
    }

    /// Checks that every column covers every problem of every dataset.
    ///
    /// # Errors
    /// [`crate::Error::Shape`] naming the column.
    pub fn validate(&self) -> crate::Result<()> {
        let sizes = self.sizes();
        for (name, sets) in &self.columns {
            let shape: Vec<usize> = sets.iter().map(Vec::len).collect();
            if shape != sizes {
                return Err(crate::Error::Shape(format!(
                    "study column {name} has {shape:?} problems per dataset, the evaluation {sizes:?}"
                )));
            }
        }
        Ok(())
    }

    /// One part's per-problem values in dataset `d`.
    pub(super) fn part(&self, part: &Part, d: usize) -> Vec<f64> {
        match part {
            Part::Sum(sum) => self.report.sets[d].problems.iter().map(|p| sum.of(p)).collect(),
            Part::Column(name, side) => self
                .columns
                .get(name)
                .map(|sets| sets[d].iter().map(|pair| pair[*side]).collect())
                .unwrap_or_else(|| vec![f64::NAN; self.report.sets[d].problems.len()]),
        }
    }

    /// `figure` on this evaluation alone: the report's own figure, to the bit, for the
    /// built-in ones.
    pub fn figure(&self, figure: &Figure) -> f64 {
        value(&[self], &figure.formula())
    }
}

/// `formula` over every problem of every run (the point estimate). For one run, the
/// report's figure to the bit (the same order of sums).
pub(super) fn value(runs: &[&Evaluated], formula: &Formula) -> f64 {
    let datasets = runs.first().map_or(0, |r| r.report.sets.len());
    let stat = |d: usize| {
        let mut stat = 0.0;
        for (sign, num, den) in &formula.terms {
            let (mut n, mut m) = (0.0, 0.0);
            for run in runs {
                for (x, y) in run.part(num, d).iter().zip(run.part(den, d)) {
                    n += x;
                    m += y;
                }
            }
            stat += sign * if m == 0.0 { f64::NAN } else { n / m };
        }
        stat
    };
    // The report: the mean over datasets, then the unit.
    (0..datasets).map(stat).sum::<f64>() / datasets as f64 * formula.scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{ChainStats, EvalConfig, Throughput};

    fn problem(id: usize) -> ProblemResult {
        ProblemResult {
            id,
            n: 4,
            solo_correct: id % 5,
            handoff_correct: (id * 3) % 5,
            solo_tokens: 40 + id,
            handoff_tokens: 44 + 2 * id,
            handoff_senior_tokens: 20 + id,
            handoff_junior_nll: 3.0 + 0.1 * id as f64,
            legibility: ChainStats {
                chains: 4 - id % 2,
                chain_ce: 2.0 + 0.3 * id as f64,
                chain_top1: 1.5 + 0.05 * id as f64,
                tokens: 30 + id,
                junior_nll: 20.0 + id as f64,
                junior_top1: 10 + id,
                kl_k3: 0.2 * id as f64,
                kl_exact: 0.25 * id as f64,
            },
            prompt_hash: None,
        }
    }

    /// Each built-in figure on one evaluation is the report's figure, to the bit: two
    /// datasets, macro-averaged.
    #[test]
    fn built_in_figures_are_the_report_s() {
        let config = EvalConfig { n: 4, ks: vec![1], bootstrap: 10, ..EvalConfig::default() };
        let sets = vec![
            ("a".to_string(), (0..7).map(problem).collect()),
            ("b".to_string(), (3..12).map(problem).collect()),
        ];
        let report = Report::from_results(&config, sets, Throughput::default()).unwrap();
        let m = &report.macro_figures;
        let e = Evaluated::from(report.clone());
        let expected = [
            (Figure::Solo, m.solo[0].estimate.value),
            (Figure::Handoff, m.handoff[0].estimate.value),
            (Figure::Tax, m.tax.points.value),
            (Figure::JuniorCe, m.legibility.junior_ce.value),
            (Figure::JuniorTop1, m.legibility.junior_top1.value),
            (Figure::Kl, m.drift.kl_exact.value),
            (Figure::KlK3, m.drift.kl_k3.value),
            (Figure::JuniorNllHandoff, m.drift.junior_nll_handoff.value),
        ];
        for (figure, want) in expected {
            assert_eq!(e.figure(&figure).to_bits(), want.to_bits(), "{figure}");
        }
        // Share and lengths: the mean over datasets of each dataset's ratio.
        let share = |s: &crate::eval::SetReport| s.figures.handoff_senior_share * 100.0;
        let want = (share(&report.sets[0]) + share(&report.sets[1])) / 2.0;
        assert!((e.figure(&Figure::SeniorShare) - want).abs() < 1e-9);
        let solo_len = |s: &crate::eval::SetReport| s.figures.solo_mean_tokens;
        let want = (solo_len(&report.sets[0]) + solo_len(&report.sets[1])) / 2.0;
        assert!((e.figure(&Figure::SoloLength) - want).abs() < 1e-9);
    }

    #[test]
    fn names_round_trip_and_columns_are_checked() {
        for f in Figure::BUILT_IN {
            assert_eq!(Figure::parse(f.name(), &[]), Some(f.clone()));
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(serde_json::from_str::<Figure>(&json).unwrap(), f);
        }
        assert_eq!(Figure::parse("shorthand", &[]), None);
        assert_eq!(
            Figure::parse("shorthand", &["shorthand".into()]),
            Some(Figure::Column("shorthand".into()))
        );
        let config = EvalConfig { n: 4, ks: vec![1], bootstrap: 10, ..EvalConfig::default() };
        let report = Report::from_results(
            &config,
            vec![("a".into(), (0..3).map(problem).collect())],
            Throughput::default(),
        )
        .unwrap();
        let mut e = Evaluated::from(report);
        e.columns.insert("shorthand".into(), vec![vec![[1.0, 4.0], [0.0, 2.0], [3.0, 2.0]]]);
        e.validate().unwrap();
        // 4 of 8 steps: 50%.
        assert_eq!(e.figure(&Figure::Column("shorthand".into())), 50.0);
        e.columns.insert("short".into(), vec![vec![[1.0, 4.0]]]);
        assert!(e.validate().unwrap_err().to_string().contains("short"));
    }
}
