//! The hierarchical bootstrap of a study: problems resampled once per resample and shared
//! by every arm (paired: a hard problem is hard for every senior), each arm's seeds
//! resampled on their own (seeds are independent training runs).
//!
//! An arm's figure pools its seeds: per dataset, Σ over the drawn seeds and the drawn
//! problems of the numerator over the same of the denominator. With one seed the seed
//! draw is that seed every time, so the interval holds the problems' variance only. With
//! k seeds drawn with replacement the between-seed variance enters with the factor
//! (k − 1)/k of the plain bootstrap (two thirds at 3 seeds): the interval understates it
//! for few seeds, which [`seed_note`] says in the report.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::evaluated::{Evaluated, value};
use crate::eval::Estimate;
use crate::eval::figure::Formula;

/// Resampled problem indices, drawn once for a study and shared by every figure and arm.
#[derive(Debug, Clone)]
pub struct Resamples {
    seed: u64,
    /// `[resample][dataset]` -> problem indices, with replacement.
    problems: Vec<Vec<Vec<usize>>>,
}

impl Resamples {
    /// `count` draws of every dataset's problems (`sizes[d]` problems in dataset `d`).
    pub fn new(sizes: &[usize], count: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let problems = (0..count)
            .map(|_| sizes.iter().map(|&n| (0..n).map(|_| rng.random_range(0..n.max(1))).collect()).collect())
            .collect();
        Self { seed, problems }
    }

    /// Resamples drawn.
    pub fn count(&self) -> usize {
        self.problems.len()
    }

    /// The seed draws of an arm with `seeds` runs, `[resample]` -> run indices, from a
    /// stream of the arm's own (by name): an arm's draws do not depend on the other arms.
    pub fn seeds(&self, arm: &str, seeds: usize) -> Vec<Vec<usize>> {
        let key = crate::data::fnv1a(arm.bytes());
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ key.rotate_left(17));
        (0..self.count()).map(|_| (0..seeds).map(|_| rng.random_range(0..seeds.max(1))).collect()).collect()
    }

    /// The distribution of `formula` over an arm's runs (one per seed), with that arm's
    /// seed draws.
    pub(super) fn distribution(
        &self,
        runs: &[&Evaluated],
        seed_draws: &[Vec<usize>],
        formula: &Formula,
    ) -> Distribution {
        let value = value(runs, formula);
        let datasets = runs.first().map_or(0, |r| r.report.sets.len());
        // [dataset][term] -> per run (numerator, denominator) per problem.
        let columns: Vec<Vec<Vec<Sums>>> = (0..datasets)
            .map(|d| {
                formula
                    .terms
                    .iter()
                    .map(|(_, num, den)| runs.iter().map(|r| (r.part(num, d), r.part(den, d))).collect())
                    .collect()
            })
            .collect();
        let draws = self
            .problems
            .iter()
            .zip(seed_draws)
            .map(|(problems, seeds)| {
                let mut total = Vec::with_capacity(datasets);
                for (d, terms) in columns.iter().enumerate() {
                    let idx = &problems[d];
                    let mut stat = 0.0;
                    for ((sign, _, _), per_run) in formula.terms.iter().zip(terms) {
                        // Each run's sums over the drawn problems, then over the drawn runs.
                        let sums: Vec<(f64, f64)> = per_run
                            .iter()
                            .map(|(num, den)| {
                                idx.iter().fold((0.0, 0.0), |(n, m), &i| (n + num[i], m + den[i]))
                            })
                            .collect();
                        let (n, m) =
                            seeds.iter().fold((0.0, 0.0), |(n, m), &s| (n + sums[s].0, m + sums[s].1));
                        stat += sign * if m == 0.0 { f64::NAN } else { n / m };
                    }
                    total.push(stat);
                }
                total.iter().sum::<f64>() / datasets as f64 * formula.scale
            })
            .collect();
        Distribution { value, draws }
    }
}

/// One run's per-problem numerators and denominators of a term.
type Sums = (Vec<f64>, Vec<f64>);

/// A figure (or a difference of two) and its value on every resample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// On the runs and problems as they are.
    pub value: f64,
    /// On each resample, in resample order (NaN where undefined).
    pub draws: Vec<f64>,
}

/// Which side of a threshold a claim wants a figure on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Below the threshold.
    Below,
    /// Above it.
    Above,
}

impl Distribution {
    /// `self − other`, resample by resample: the problems were drawn once for both, so the
    /// difference stays paired over problems.
    #[must_use]
    pub fn minus(&self, other: &Distribution) -> Distribution {
        Distribution {
            value: self.value - other.value,
            draws: self.draws.iter().zip(&other.draws).map(|(a, b)| a - b).collect(),
        }
    }

    /// The defined draws, sorted.
    fn sorted(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.draws.iter().copied().filter(|x| !x.is_nan()).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The percentile interval covering `confidence` (a point at the value when no draw is
    /// defined).
    pub fn estimate(&self, confidence: f64) -> Estimate {
        let v = self.sorted();
        if v.is_empty() || self.value.is_nan() {
            return Estimate { value: self.value, low: self.value, high: self.value };
        }
        let tail = (1.0 - confidence) / 2.0;
        Estimate { value: self.value, low: quantile(&v, tail), high: quantile(&v, 1.0 - tail) }
    }

    /// The share of defined draws not strictly on `side` of `threshold`: about half the
    /// level at which a two-sided interval first clears the threshold (ranks claims for
    /// Holm's procedure; verdicts are read off the intervals themselves).
    pub fn share_against(&self, side: Side, threshold: f64) -> f64 {
        let v = self.sorted();
        if v.is_empty() {
            return 1.0;
        }
        let against = v
            .iter()
            .filter(|&&x| match side {
                Side::Below => x >= threshold,
                Side::Above => x <= threshold,
            })
            .count();
        against as f64 / v.len() as f64
    }
}

/// The `q`-quantile of sorted values, by linear interpolation between order statistics
/// (as the evaluation's intervals).
fn quantile(values: &[f64], q: f64) -> f64 {
    let pos = q * (values.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    values[lo] + (values[hi] - values[lo]) * (pos - lo as f64)
}

/// How the report words the seed-level variance of an arm with `seeds` runs.
pub fn seed_note(seeds: usize) -> String {
    match seeds {
        0 | 1 => "one run: its interval holds the problems' variance only, none between seeds".into(),
        k => format!(
            "{k} seeds resampled with replacement beside the problems: the between-seed variance enters \
             with the factor (k − 1)/k = {:.2} of the plain bootstrap, so with few seeds the interval is \
             somewhat narrower than the true spread between training runs",
            (k - 1) as f64 / k as f64
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::{ChainStats, EvalConfig, ProblemResult, Report, Throughput};
    use crate::study::Figure;

    fn run(correct: &[usize]) -> Evaluated {
        let problems = correct
            .iter()
            .enumerate()
            .map(|(id, &c)| ProblemResult {
                id,
                n: 4,
                solo_correct: c,
                handoff_correct: c / 2,
                solo_tokens: 10,
                handoff_tokens: 10,
                handoff_senior_tokens: 5,
                handoff_junior_nll: 1.0,
                legibility: ChainStats::default(),
                prompt_hash: None,
            })
            .collect();
        let config = EvalConfig { n: 4, ks: vec![1], bootstrap: 10, ..EvalConfig::default() };
        Report::from_results(&config, vec![("s".into(), problems)], Throughput::default()).unwrap().into()
    }

    /// Seeds pooled: the mean of equal-sized runs; one seed drawn `k` times is that seed.
    #[test]
    fn seeds_pool_and_resample_on_their_own() {
        let (a, b) = (run(&[4, 0, 2, 2]), run(&[0, 0, 2, 2]));
        let solo = Figure::Solo.formula();
        assert_eq!(value(&[&a, &b], &solo), (50.0 + 25.0) / 2.0);
        let r = Resamples::new(&[4], 2000, 3);
        let one = r.distribution(&[&a], &r.seeds("x", 1), &solo);
        let two = r.distribution(&[&a, &b], &r.seeds("x", 2), &solo);
        // The same problems drawn: a seed-only resample adds variance.
        let width = |d: &Distribution| {
            let e = d.estimate(0.95);
            e.high - e.low
        };
        assert!(width(&two) > 0.0 && width(&one) > 0.0);
        // Seeds drawn per arm, by name: the same for the same arm, independent otherwise.
        assert_eq!(r.seeds("grpo", 3), r.seeds("grpo", 3));
        assert_ne!(r.seeds("grpo", 3), r.seeds("trlvr", 3));
        assert!(r.seeds("grpo", 1).iter().all(|s| s == &[0]));
    }

    /// A paired difference of identical runs is exactly 0 on every resample.
    #[test]
    fn a_run_minus_itself_is_zero_everywhere() {
        let a = run(&[4, 0, 3, 1, 2]);
        let r = Resamples::new(&[5], 500, 9);
        let d = r.distribution(&[&a], &r.seeds("a", 1), &Figure::Tax.formula());
        let zero = d.minus(&d);
        assert!(zero.draws.iter().all(|&x| x == 0.0));
        let e = zero.estimate(0.95);
        assert_eq!((e.value, e.low, e.high), (0.0, 0.0, 0.0));
    }

    #[test]
    fn intervals_and_shares_read_the_draws() {
        let d = Distribution { value: 1.0, draws: (0..=100).map(f64::from).chain([f64::NAN]).collect() };
        let e = d.estimate(0.9);
        assert!((e.low - 5.0).abs() < 1e-9 && (e.high - 95.0).abs() < 1e-9, "{e:?}");
        assert!((d.share_against(Side::Above, 9.5) - 10.0 / 101.0).abs() < 1e-12);
        assert!((d.share_against(Side::Below, 90.0) - 11.0 / 101.0).abs() < 1e-12);
        let undefined = Distribution { value: f64::NAN, draws: vec![f64::NAN; 3] };
        assert!(undefined.estimate(0.95).low.is_nan());
        assert_eq!(undefined.share_against(Side::Below, 0.0), 1.0);
    }
}
