//! Sampling a token from a row of logits: temperature, then top-k, then top-p; on the
//! host ([`Sampling::sample`]) or where the logits live ([`Sampling::sample_rows`]), by
//! the same inverse-CDF rule with the same uniform.
//!
//! Top-p after top-k measures the nucleus against the mass of the top-k set, as Hugging
//! Face's `TopKLogitsWarper` + `TopPLogitsWarper` and vLLM's sampler do (the top-p step
//! renormalises what top-k kept); `trlvr/tests/sampling_reference.rs` checks the kept
//! sets against transformers on fixed logits.

use burn::prelude::*;
use burn::tensor::activation::log_softmax;
use burn::tensor::{DType, FloatDType};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use crate::token::TokenId;
use crate::{Error, Result};

/// Sampling parameters, the same for senior and junior (method.md §2: T = 0.6, no
/// top-p/k for training; §5: T = 0.7, top-p 0.8, top-k 20 for evaluation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sampling {
    /// Logits are divided by this; 0 means greedy.
    pub temperature: f32,
    /// Keep the smallest set of tokens whose probability reaches this (1 = off).
    pub top_p: f32,
    /// Keep this many most likely tokens (0 = off).
    pub top_k: usize,
}

impl Default for Sampling {
    fn default() -> Self {
        Self::training()
    }
}

impl Sampling {
    /// The paper's training sampler: T = 0.6, no truncation.
    pub fn training() -> Self {
        Self { temperature: 0.6, top_p: 1.0, top_k: 0 }
    }

    /// The paper's evaluation sampler: T = 0.7, top-p 0.8, top-k 20.
    pub fn evaluation() -> Self {
        Self { temperature: 0.7, top_p: 0.8, top_k: 20 }
    }

    /// Greedy decoding (argmax).
    pub fn greedy() -> Self {
        Self { temperature: 0.0, top_p: 1.0, top_k: 0 }
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`Error::Config`] for a negative or NaN temperature or top-p outside (0, 1].
    pub fn validate(&self) -> Result<()> {
        if self.temperature.is_nan() || self.temperature < 0.0 {
            return Err(Error::Config(format!("temperature must be >= 0, got {}", self.temperature)));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::Config(format!("top_p must be in (0, 1], got {}", self.top_p)));
        }
        Ok(())
    }

    /// Draws a token from `logits` and returns it with its log-probability under the
    /// temperature-scaled, untruncated distribution (what teacher-forced scoring at the
    /// same temperature gives; for greedy, temperature 1).
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the logits hold NaN or no finite value.
    pub fn sample(&self, logits: &[f32], rng: &mut dyn RngCore) -> Result<(TokenId, f32)> {
        self.sample_at(logits, self.uniform(rng))
    }

    /// The uniform in `[0, 1)` a draw takes from `rng`: one per sampled token, none when
    /// greedy.
    pub fn uniform(&self, rng: &mut dyn RngCore) -> f64 {
        if self.temperature > 0.0 { rng.random::<f64>() } else { 0.0 }
    }

    /// As [`Sampling::sample`], with the uniform `u` in `[0, 1)` given (ignored when
    /// greedy): the token where `u` falls in the cumulative weights of the candidates.
    ///
    /// # Errors
    /// As [`Sampling::sample`].
    pub fn sample_at(&self, logits: &[f32], u: f64) -> Result<(TokenId, f32)> {
        if logits.iter().any(|x| x.is_nan()) {
            return Err(Error::NonFinite("NaN in logits".into()));
        }
        let t = if self.temperature > 0.0 { self.temperature } else { 1.0 };
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return Err(Error::NonFinite("no finite logit".into()));
        }
        // log p(id) = (x_id - max) / t - ln Σ exp((x - max) / t); weights in f32, sum in f64.
        let weights: Vec<f32> = logits.iter().map(|&x| ((x - max) / t).exp()).collect();
        let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        let log_prob = |id: usize| (f64::from((logits[id] - max) / t) - total.ln()) as f32;
        if self.temperature == 0.0 {
            let id = logits.iter().position(|&x| x == max).expect("max is one of the logits");
            return Ok((id as TokenId, log_prob(id)));
        }
        // Inverse CDF over the candidates (all ids when untruncated, without listing
        // them); rounding past the end lands on the last candidate that can be drawn.
        let draw = |ids: &mut dyn Iterator<Item = usize>, mass: f64| {
            let mut u = u * mass;
            let mut last = 0;
            for i in ids {
                let w = f64::from(weights[i]);
                if u < w {
                    return i;
                }
                u -= w;
                if w > 0.0 {
                    last = i;
                }
            }
            last
        };
        let chosen = if self.top_k == 0 && self.top_p >= 1.0 {
            draw(&mut (0..weights.len()), total)
        } else {
            let candidates = self.truncate(&weights);
            let mass: f64 = candidates.iter().map(|&i| f64::from(weights[i])).sum();
            draw(&mut candidates.into_iter(), mass)
        };
        Ok((chosen as TokenId, log_prob(chosen)))
    }

    /// Draws one token per row of `logits` where they live, row `r` at the uniform
    /// `draws[r]` in `[0, 1)` (see [`Sampling::uniform`]): the rule of
    /// [`Sampling::sample_at`], up to float rounding, with only ids and log-probs coming
    /// back to the host. The cumulative weights are summed in f64 so that no token's share
    /// is lost to rounding. With top-k or top-p the logits are read back and each row is
    /// drawn on the host, exactly as there (a device sort is not on every backend and
    /// would break ties differently).
    ///
    /// # Shapes
    /// - `logits`: `[rows, vocab]`, `draws`: `rows` values
    ///
    /// # Errors
    /// [`Error::NonFinite`] if a row's logits hold NaN or no finite value;
    /// [`Error::Shape`] if `draws` does not match the rows.
    pub fn sample_rows(&self, logits: Tensor<2>, draws: &[f64]) -> Result<Vec<(TokenId, f32)>> {
        let [rows, vocab] = logits.dims();
        if draws.len() != rows {
            return Err(Error::Shape(format!("{} draws for {rows} rows", draws.len())));
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        if self.temperature > 0.0 && (self.top_k > 0 || self.top_p < 1.0) {
            let host = logits.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))?;
            return host.chunks(vocab).zip(draws).map(|(row, &u)| self.sample_at(row, u)).collect();
        }
        let device = logits.device();
        let t = if self.temperature > 0.0 { self.temperature } else { 1.0 };
        let log_p = log_softmax(logits / f64::from(t), 1); // [rows, vocab]
        let chosen = if self.temperature == 0.0 {
            log_p.clone().argmax(1)
        } else {
            // Inverse CDF in f64: the first id whose cumulative weight passes u × total.
            let u = Tensor::<2>::from_data(TensorData::new(draws.to_vec(), [rows, 1]), (&device, DType::F64));
            let cdf = log_p.clone().exp().cast(FloatDType::F64).cumsum(1);
            let total = cdf.clone().slice([0..rows, vocab - 1..vocab]);
            let passed = cdf.lower_equal(u.mul(total).expand([rows, vocab]));
            passed.int().sum_dim(1).clamp_max((vocab - 1) as i64)
        }; // [rows, 1]
        let log_prob = log_p.gather(1, chosen.clone());
        let ids: Vec<i64> = chosen.try_into_vec_as::<i64>().map_err(|e| Error::Read(format!("{e:?}")))?;
        let lps: Vec<f32> = log_prob.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))?;
        if let Some(r) = lps.iter().position(|lp| !lp.is_finite()) {
            return Err(Error::NonFinite(format!("row {r}: NaN or no finite logit")));
        }
        Ok(ids.into_iter().zip(lps).map(|(id, lp)| (id as TokenId, lp)).collect())
    }

    /// The ids a draw from `logits` can return, most likely first (ties: lower id
    /// first): all ids when greedy is off and nothing truncates, the argmax when greedy.
    ///
    /// ```
    /// use trlvr::rollout::Sampling;
    ///
    /// // At T = 1 the probabilities are about [0.64, 0.24, 0.09, 0.03]. Top-k 3 keeps the
    /// // first three; renormalised over them they are [0.665, 0.245, 0.090], so top-p 0.9
    /// // is reached by the first two (against the whole vocabulary it would take three).
    /// let s = Sampling { temperature: 1.0, top_p: 0.9, top_k: 3 };
    /// assert_eq!(s.candidates(&[3.0, 2.0, 1.0, 0.0])?, vec![0, 1]);
    /// # Ok::<(), trlvr::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the logits hold NaN or no finite value.
    pub fn candidates(&self, logits: &[f32]) -> Result<Vec<TokenId>> {
        if logits.iter().any(|x| x.is_nan()) {
            return Err(Error::NonFinite("NaN in logits".into()));
        }
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return Err(Error::NonFinite("no finite logit".into()));
        }
        if self.temperature == 0.0 {
            let id = logits.iter().position(|&x| x == max).expect("max is one of the logits");
            return Ok(vec![id as TokenId]);
        }
        let weights: Vec<f32> = logits.iter().map(|&x| ((x - max) / self.temperature).exp()).collect();
        let mut ids = self.truncate(&weights);
        if self.top_k == 0 && self.top_p >= 1.0 {
            ids.retain(|&i| weights[i] > 0.0);
        }
        Ok(ids.into_iter().map(|i| i as TokenId).collect())
    }

    /// Candidate ids after top-k and top-p, most likely first. Top-p is measured against
    /// the mass of what top-k kept (renormalised), as transformers and vLLM do.
    fn truncate(&self, weights: &[f32]) -> Vec<usize> {
        let mut ids: Vec<usize> = (0..weights.len()).collect();
        let by_weight = |a: &usize, b: &usize| weights[*b].total_cmp(&weights[*a]).then(a.cmp(b));
        if self.top_k > 0 && self.top_k < ids.len() {
            ids.select_nth_unstable_by(self.top_k - 1, by_weight);
            ids.truncate(self.top_k);
        }
        ids.sort_unstable_by(by_weight);
        if self.top_p < 1.0 {
            let kept: f64 = ids.iter().map(|&i| f64::from(weights[i])).sum();
            let mut acc = 0.0;
            let keep = ids
                .iter()
                .position(|&i| {
                    acc += f64::from(weights[i]) / kept;
                    acc >= f64::from(self.top_p)
                })
                .map_or(ids.len(), |p| p + 1);
            ids.truncate(keep);
        }
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::row_rng;

    #[test]
    fn greedy_takes_the_argmax() {
        let (id, lp) = Sampling::greedy().sample(&[0.1, 3.0, -1.0], &mut row_rng(0, 0)).unwrap();
        assert_eq!(id, 1);
        assert!(lp < 0.0 && lp > -0.2);
    }

    #[test]
    fn top_k_one_is_greedy_and_frequencies_follow_probabilities() {
        let logits = [0.0f32, 1.0, 2.0, -5.0];
        let mut rng = row_rng(1, 0);
        let k1 = Sampling { temperature: 1.0, top_p: 1.0, top_k: 1 };
        assert!((0..50).all(|_| k1.sample(&logits, &mut rng).unwrap().0 == 2));
        let plain = Sampling { temperature: 1.0, top_p: 1.0, top_k: 0 };
        let mut counts = [0usize; 4];
        for _ in 0..20_000 {
            counts[plain.sample(&logits, &mut rng).unwrap().0 as usize] += 1;
        }
        let z: f64 = logits.iter().map(|&x| f64::from(x).exp()).sum();
        for (i, &c) in counts.iter().enumerate() {
            let p = f64::from(logits[i]).exp() / z;
            assert!((c as f64 / 20_000.0 - p).abs() < 0.015, "token {i}: {c} vs p {p}");
        }
    }

    #[test]
    fn top_p_keeps_the_smallest_sufficient_set() {
        // probabilities ~ [0.64, 0.24, 0.09, 0.03]: top-p 0.8 keeps the first two.
        let logits = [3.0f32, 2.0, 1.0, 0.0];
        let s = Sampling { temperature: 1.0, top_p: 0.8, top_k: 0 };
        let mut rng = row_rng(2, 0);
        assert!((0..500).all(|_| s.sample(&logits, &mut rng).unwrap().0 < 2));
    }

    #[test]
    fn sampling_on_the_device_agrees_with_the_host() {
        let device = Device::default();
        let (rows, vocab) = (64, 300);
        device.seed(5);
        let logits =
            Tensor::<2>::random([rows, vocab], burn::tensor::Distribution::Normal(0.0, 3.0), &device);
        let host: Vec<f32> = logits.clone().try_into_vec_as::<f32>().unwrap();
        for s in [
            Sampling::training(),
            Sampling::evaluation(),
            Sampling::greedy(),
            Sampling { top_k: 3, ..Sampling::training() },
        ] {
            let mut rngs: Vec<_> = (0..rows as u64).map(|r| row_rng(9, r)).collect();
            let want: Vec<(TokenId, f32)> = (0..rows)
                .map(|r| s.sample(&host[r * vocab..(r + 1) * vocab], &mut rngs[r]).unwrap())
                .collect();
            let mut rngs: Vec<_> = (0..rows as u64).map(|r| row_rng(9, r)).collect();
            let draws: Vec<f64> = rngs.iter_mut().map(|g| s.uniform(g)).collect();
            let got = s.sample_rows(logits.clone(), &draws).unwrap();
            for (r, (w, g)) in want.iter().zip(&got).enumerate() {
                assert_eq!(w.0, g.0, "{s:?} row {r}");
                assert!((w.1 - g.1).abs() < 1e-5, "{s:?} row {r}: {} vs {}", w.1, g.1);
            }
        }
        // The uniform keeps its f64 precision: just below the boundary between two equal
        // tokens is still the first one (an f32 uniform would round onto the boundary).
        let even = Tensor::<2>::from_floats([[0.0, 0.0]], &device);
        let u = 0.5 - 1e-12;
        assert_eq!(Sampling::training().sample_at(&[0.0, 0.0], u).unwrap().0, 0);
        assert_eq!(Sampling::training().sample_rows(even, &[u]).unwrap()[0].0, 0);
        // Ties under top-k/top-p go to the lower id, as on the host.
        let tied = Tensor::<2>::from_floats([[2.0, 2.0, 0.0]], &device);
        let eval = Sampling::evaluation();
        assert_eq!(
            eval.sample_rows(tied, &[0.25]).unwrap(),
            vec![eval.sample_at(&[2.0, 2.0, 0.0], 0.25).unwrap()]
        );
        assert!(Sampling::training().sample_rows(logits.clone(), &[0.5]).is_err(), "one draw per row");
        let nan = Tensor::<2>::from_floats([[0.0, f32::NAN, 1.0]], &device);
        assert!(Sampling::training().sample_rows(nan, &[0.5]).is_err());
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Sampling::default().sample(&[f32::NAN, 1.0], &mut row_rng(0, 0)).is_err());
        assert!(Sampling { temperature: -1.0, ..Sampling::default() }.validate().is_err());
        assert!(Sampling { top_p: 0.0, ..Sampling::default() }.validate().is_err());
    }
}
