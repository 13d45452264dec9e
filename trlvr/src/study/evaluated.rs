//! One evaluation of one run as a study reads it: the report, with any per-problem
//! columns the study adds, and every figure of the figure table
//! ([`crate::eval::Figure`]) on it, or pooled over runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::eval::Report;
use crate::eval::figure::{Figure, Formula, Part};

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
    use crate::eval::{ChainStats, EvalConfig, ProblemResult, Throughput};

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
        // Share and lengths: the mean over datasets of each dataset's ratio, both ways.
        assert_eq!(e.figure(&Figure::SeniorShare).to_bits(), (m.handoff_senior_share * 100.0).to_bits());
        assert_eq!(e.figure(&Figure::SoloLength).to_bits(), m.solo_mean_tokens.to_bits());
        assert_eq!(e.figure(&Figure::HandoffLength).to_bits(), m.handoff_mean_tokens.to_bits());
        let share = |s: &crate::eval::SetReport| s.figures.handoff_senior_share;
        let want = (share(&report.sets[0]) + share(&report.sets[1])) / 2.0;
        assert!((m.handoff_senior_share - want).abs() < 1e-12);
    }

    #[test]
    fn names_round_trip_and_columns_are_checked() {
        for f in Figure::all() {
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
