//! The statistics of an evaluation: the unbiased pass@k estimator and percentile
//! bootstrap intervals over problems.
//!
//! Every figure of a report is a function of per-problem values of one or more datasets
//! (pass@k of each problem, token sums of its chains). [`Bootstrap`] draws problems with
//! replacement within each dataset, the same draws for every figure, so paired figures
//! (solo against handoff on the same problems: the communication tax) keep their pairing.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Unbiased pass@k from `c` correct samples out of `n`: the probability that a random
/// `k`-subset of the `n` samples holds at least one correct one,
/// `1 - C(n - c, k) / C(n, k)`, computed as a product so large `n` cannot overflow.
///
/// ```
/// use trlvr::eval::pass_at_k;
///
/// assert_eq!(pass_at_k(8, 0, 4)?, 0.0);
/// assert_eq!(pass_at_k(8, 2, 1)?, 0.25);
/// // 1 - C(2, 2) / C(4, 2) = 1 - 1/6
/// assert!((pass_at_k(4, 2, 2)? - 5.0 / 6.0).abs() < 1e-12);
/// assert_eq!(pass_at_k(8, 5, 4)?, 1.0); // every 4-subset meets a correct sample
/// # Ok::<(), trlvr::Error>(())
/// ```
///
/// # Errors
/// [`Error::Config`] if `k` is 0 or larger than `n`, or `c > n`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Result<f64> {
    if k == 0 || k > n || c > n {
        return Err(Error::Config(format!("pass@k needs 1 <= k <= n and c <= n, got n {n}, c {c}, k {k}")));
    }
    if n - c < k {
        return Ok(1.0);
    }
    // C(n-c, k) / C(n, k) = prod_{i = n-c+1}^{n} (1 - k / i)
    let miss: f64 = (n - c + 1..=n).map(|i| 1.0 - k as f64 / i as f64).product();
    Ok(1.0 - miss)
}

/// A figure and its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The figure on the problems as they are.
    #[serde(deserialize_with = "nan_if_null")]
    pub value: f64,
    /// Lower end of the interval.
    #[serde(deserialize_with = "nan_if_null")]
    pub low: f64,
    /// Upper end of the interval.
    #[serde(deserialize_with = "nan_if_null")]
    pub high: f64,
}

/// JSON has no NaN and serde_json writes one as `null` (a tax ratio when solo pass@1 is
/// 0, say): read `null` back as NaN, so a written report reads back.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

impl Estimate {
    /// `value ± half-width`-style text for tables: `71.3 [68.0, 74.5]`.
    pub fn show(&self, decimals: usize) -> String {
        if self.value.is_nan() {
            return "n/a".into();
        }
        format!("{:.d$} [{:.d$}, {:.d$}]", self.value, self.low, self.high, d = decimals)
    }

    /// Every number multiplied by `factor` (fractions to percent, say); a negative factor
    /// swaps the ends, so `low <= high` still holds.
    ///
    /// ```
    /// use trlvr::eval::Estimate;
    /// let e = Estimate { value: 3.0, low: -6.0, high: 0.0 }.scaled(-1.0);
    /// assert_eq!((e.value, e.low, e.high), (-3.0, 0.0, 6.0));
    /// ```
    #[must_use]
    pub fn scaled(self, factor: f64) -> Self {
        let (a, b) = (self.low * factor, self.high * factor);
        Self { value: self.value * factor, low: a.min(b), high: a.max(b) }
    }
}

/// Resamples of the problems of several datasets, drawn once and shared by every figure.
///
/// ```
/// use trlvr::eval::Bootstrap;
///
/// // One dataset of four problems; the statistic is the mean of per-problem values.
/// let values = [1.0, 0.0, 1.0, 1.0];
/// let boot = Bootstrap::new(&[4], 1000, 7, 0.95)?;
/// let mean = boot.estimate(|sets| sets[0].iter().map(|&i| values[i]).sum::<f64>() / sets[0].len() as f64);
/// assert_eq!(mean.value, 0.75);
/// assert!(mean.low < 0.75 && mean.high == 1.0);
/// # Ok::<(), trlvr::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Bootstrap {
    sizes: Vec<usize>,
    /// `[resample][dataset]` -> problem indices drawn with replacement.
    draws: Vec<Vec<Vec<usize>>>,
    confidence: f64,
}

impl Bootstrap {
    /// `resamples` draws of each dataset's problems (`sizes[d]` problems in dataset `d`),
    /// from `seed`; intervals cover `confidence` (0.95: the 2.5th to 97.5th percentile).
    ///
    /// # Errors
    /// [`Error::Config`] if `confidence` is not in (0, 1).
    pub fn new(sizes: &[usize], resamples: usize, seed: u64, confidence: f64) -> Result<Self> {
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(Error::Config(format!("confidence must be in (0, 1), got {confidence}")));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let draws = (0..resamples)
            .map(|_| sizes.iter().map(|&n| (0..n).map(|_| rng.random_range(0..n.max(1))).collect()).collect())
            .collect();
        Ok(Self { sizes: sizes.to_vec(), draws, confidence })
    }

    /// `statistic` on the problems as they are, with the percentile interval of its
    /// values over the resamples (resamples where it is NaN, say a ratio over zero, are
    /// left out). `statistic` gets the problem indices of each dataset.
    pub fn estimate(&self, statistic: impl Fn(&[&[usize]]) -> f64) -> Estimate {
        let identity: Vec<Vec<usize>> = self.sizes.iter().map(|&n| (0..n).collect()).collect();
        let refs: Vec<&[usize]> = identity.iter().map(Vec::as_slice).collect();
        let value = statistic(&refs);
        let mut values: Vec<f64> = self
            .draws
            .iter()
            .map(|sets| {
                let refs: Vec<&[usize]> = sets.iter().map(Vec::as_slice).collect();
                statistic(&refs)
            })
            .filter(|v| !v.is_nan())
            .collect();
        if values.is_empty() {
            return Estimate { value, low: value, high: value };
        }
        values.sort_by(f64::total_cmp);
        let tail = (1.0 - self.confidence) / 2.0;
        Estimate { value, low: quantile(&values, tail), high: quantile(&values, 1.0 - tail) }
    }
}

/// The `q`-quantile of sorted `values`, by linear interpolation between order statistics.
fn quantile(values: &[f64], q: f64) -> f64 {
    let pos = q * (values.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    values[lo] + (values[hi] - values[lo]) * (pos - lo as f64)
}

/// Σ `num[i]` / Σ `den[i]` over the problems `idx` (a token-weighted mean when `num`
/// holds per-problem sums and `den` token counts; a plain mean when `den` is all ones).
/// NaN when the denominator is 0.
pub fn ratio_of_sums(num: &[f64], den: &[f64], idx: &[usize]) -> f64 {
    let (n, d) = idx.iter().fold((0.0, 0.0), |(n, d), &i| (n + num[i], d + den[i]));
    if d == 0.0 { f64::NAN } else { n / d }
}

/// The 95% Wilson score interval of a proportion, `successes` of `trials`: exact enough
/// at 0% and 100%, where a percentile bootstrap collapses to a point.
///
/// ```
/// let (low, high) = trlvr::eval::wilson(10.0, 10.0);
/// assert!((low - 0.7225).abs() < 1e-4 && (high - 1.0).abs() < 1e-12);
/// ```
pub fn wilson(successes: f64, trials: f64) -> (f64, f64) {
    if trials <= 0.0 {
        return (0.0, 1.0);
    }
    let z2 = Z95 * Z95;
    let p = successes / trials;
    let centre = (p + z2 / (2.0 * trials)) / (1.0 + z2 / trials);
    let half = Z95 / (1.0 + z2 / trials) * (p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Newcombe's hybrid score interval (his method 10) of the difference of two proportions
/// `a − b`, each given as (successes, trials), from their [`wilson`] intervals.
///
/// ```
/// // Newcombe (1998), Statistics in Medicine 17: 56/70 − 48/80 = 0.200 [0.0524, 0.3339].
/// let (low, high) = trlvr::eval::newcombe((56.0, 70.0), (48.0, 80.0));
/// assert!((low - 0.0524).abs() < 1e-4 && (high - 0.3339).abs() < 1e-4);
/// ```
pub fn newcombe(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    let (pa, pb) = (a.0 / a.1.max(1.0), b.0 / b.1.max(1.0));
    let ((la, ua), (lb, ub)) = (wilson(a.0, a.1), wilson(b.0, b.1));
    let d = pa - pb;
    (d - ((pa - la).powi(2) + (ub - pb).powi(2)).sqrt(), d + ((ua - pa).powi(2) + (pb - lb).powi(2)).sqrt())
}

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 0.0);
        assert_eq!(quantile(&v, 0.5), 2.0);
        assert_eq!(quantile(&v, 0.625), 2.5);
        assert_eq!(quantile(&v, 1.0), 4.0);
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(pass_at_k(4, 1, 5).is_err());
        assert!(pass_at_k(4, 5, 1).is_err());
        assert!(pass_at_k(4, 1, 0).is_err());
        assert!(Bootstrap::new(&[3], 10, 0, 1.0).is_err());
    }

    #[test]
    fn an_undefined_estimate_reads_back_from_json() {
        let e = Estimate { value: f64::NAN, low: 1.0, high: f64::NAN };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"{"value":null,"low":1.0,"high":null}"#);
        let back: Estimate = serde_json::from_str(&json).unwrap();
        assert!(back.value.is_nan() && back.high.is_nan() && back.low == 1.0);
        assert!(serde_json::from_str::<Estimate>(r#"{"value":"x","low":1,"high":2}"#).is_err());
    }
}
