//! `tempered-junior`: a [`Partner`] that makes another model a weaker junior, for
//! studying how the junior's strength shapes what the senior learns (method.md §1 pairs
//! the senior with a frozen copy of itself; this degrades that copy by a knob).
//!
//! Its logits are the inner model's divided by a temperature `T`, plus a fixed
//! perturbation `σ·ε` with `ε ~ N(0, I)` over the vocabulary, drawn once from `seed`:
//! `logits' = logits / T + σ·ε`. The noise is fixed, not redrawn per call, so that the
//! partner's scoring ([`Partner::score`], [`Partner::logits`]) describes the same
//! distribution it samples from, and rollouts replay from their seed.
//!
//! Linked, [`Tempered::new`] wraps any partner. Registered as the partner
//! `tempered-junior`, its factory wraps the model its config names: a model file
//! (`{"temperature": 2.0, "noise": 0.5, "seed": 0, "model": "path/to/hf-dir-or.gguf"}`),
//! opened by the host ([`PartnerHost::model`]: the plugin links no model stack of its
//! own), or a bigram table for tests (`"bigram": [[...], ...]` instead of `"model"`).
//!
//! ```
//! use burn::prelude::*;
//! use trlvr::prelude::*;
//! use trlvr_tempered_junior::Tempered;
//!
//! let device = Device::default();
//! let inner = BigramLm::new(&[[0.0, 2.0], [1.0, 0.0]], &device);
//! let junior = Tempered::new(inner, 2.0, 0.0, 0)?;
//! let (_, logits) = junior.start(&[&[0]], 1)?;
//! assert_eq!(logits.try_into_vec_as::<f32>().unwrap(), vec![0.0, 1.0]);
//! # Ok::<(), trlvr::Error>(())
//! ```
#![warn(missing_docs)]

use burn::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use trlvr::model::{token_log_probs, zeroed_before};
use trlvr::plugin::PartnerHost;
use trlvr::prelude::*;

// Loaded at run time, the plugin must share the host's trlvr and Burn.
#[cfg(feature = "dynamic")]
use trlvr_dylib as _;

trlvr::export_plugin!();

/// A partner whose logits are `inner`'s divided by `temperature`, plus fixed noise.
pub struct Tempered<P> {
    inner: P,
    temperature: f32,
    /// `σ·ε`, `[vocab]`; `None` when σ = 0.
    noise: Option<Tensor<1>>,
}

impl<P> std::fmt::Debug for Tempered<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tempered")
            .field("temperature", &self.temperature)
            .field("noise", &self.noise.is_some())
            .finish()
    }
}

impl<P: Partner> Tempered<P> {
    /// Wraps `inner`: logits divided by `temperature` (> 1 flattens the distribution),
    /// plus `noise` · N(0, 1) per vocabulary id, drawn from `seed`.
    ///
    /// # Errors
    /// [`Error::Config`] unless `temperature > 0` and `noise >= 0`, both finite.
    pub fn new(inner: P, temperature: f32, noise: f32, seed: u64) -> Result<Self> {
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(Error::Config(format!(
                "tempered-junior: temperature must be > 0, got {temperature}"
            )));
        }
        if !(noise.is_finite() && noise >= 0.0) {
            return Err(Error::Config(format!("tempered-junior: noise must be >= 0, got {noise}")));
        }
        let noise = (noise > 0.0).then(|| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let normal = rand_distr_normal(&mut rng, inner.vocab_size());
            let values: Vec<f32> = normal.into_iter().map(|z| noise * z).collect();
            Tensor::<1>::from_data(TensorData::new(values, [inner.vocab_size()]), &inner.device())
        });
        Ok(Self { inner, temperature, noise })
    }

    /// The wrapped model.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// `[rows, vocab]` logits of the inner model, tempered.
    fn temper2(&self, logits: Tensor<2>) -> Tensor<2> {
        let logits = logits / self.temperature;
        match &self.noise {
            Some(noise) if logits.dims()[0] > 0 => logits + noise.clone().unsqueeze_dim::<2>(0),
            _ => logits,
        }
    }
}

/// `n` standard normal draws (Box-Muller), so the noise is a function of the seed alone.
fn rand_distr_normal(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    use rand::Rng;
    (0..n)
        .map(|_| {
            let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        })
        .collect()
}

impl<P: Partner> Partner for Tempered<P> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn device(&self) -> Device {
        self.inner.device()
    }

    fn start(&self, prompts: &[&[TokenId]], copies: usize) -> Result<(Session, Tensor<2>)> {
        let (session, logits) = self.inner.start(prompts, copies)?;
        Ok((session, self.temper2(logits)))
    }

    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> Result<Tensor<2>> {
        Ok(self.temper2(self.inner.extend(session, feeds)?))
    }

    fn retire(&self, session: &mut Session, rows: &[usize]) -> Result<()> {
        self.inner.retire(session, rows)
    }

    fn score(&self, batch: &TokenBatch, temperature: f32) -> Result<Tensor<2>> {
        if self.noise.is_none() {
            // log_softmax(logits / T / t): the inner model scores it without the full logits.
            return self.inner.score(batch, temperature * self.temperature);
        }
        Ok(token_log_probs(self.logits(batch)?, batch, temperature))
    }

    fn score_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> Result<Tensor<2>> {
        if self.noise.is_none() {
            return self.inner.score_from(batch, temperature * self.temperature, from);
        }
        Ok(zeroed_before(self.score(batch, temperature)?, from))
    }

    fn logits(&self, batch: &TokenBatch) -> Result<Tensor<3>> {
        let logits = self.inner.logits(batch)? / self.temperature;
        Ok(match &self.noise {
            Some(noise) => logits + noise.clone().unsqueeze_dim::<2>(0).unsqueeze_dim::<3>(0),
            None => logits,
        })
    }
}

/// The registered partner's JSON config.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// T (default 1).
    #[serde(default = "one")]
    temperature: f32,
    /// σ (default 0).
    #[serde(default)]
    noise: f32,
    /// Seed of the noise (default 0).
    #[serde(default)]
    seed: u64,
    /// The inner model: a Hugging Face folder or a GGUF file (feature `models`).
    #[serde(default)]
    model: Option<std::path::PathBuf>,
    /// Or a `[vocab, vocab]` table of bigram logits.
    #[serde(default)]
    bigram: Option<Vec<Vec<f32>>>,
}

fn one() -> f32 {
    1.0
}

fn make(value: &serde_json::Value, host: &PartnerHost<'_>) -> Result<Box<dyn Partner>> {
    let config: Config =
        serde_json::from_value(value.clone()).map_err(|e| Error::Config(format!("tempered-junior: {e}")))?;
    let (t, noise, seed) = (config.temperature, config.noise, config.seed);
    match (config.model, config.bigram) {
        (Some(path), None) => {
            let inner = host.model(&path).map_err(|e| Error::Config(format!("tempered-junior: {e}")))?;
            Ok(Box::new(Tempered::new(inner, t, noise, seed)?))
        }
        (None, Some(table)) => {
            let vocab = table.len();
            if vocab == 0 || table.iter().any(|row| row.len() != vocab) {
                return Err(Error::Config(format!(
                    "tempered-junior: bigram must be a square table, got {vocab} rows"
                )));
            }
            let flat: Vec<f32> = table.into_iter().flatten().collect();
            let table = Tensor::from_data(TensorData::new(flat, [vocab, vocab]), host.device());
            Ok(Box::new(Tempered::new(BigramLm::from_tensor(table), t, noise, seed)?))
        }
        _ => Err(Error::Config("tempered-junior: give the inner model as exactly one of \"model\" (a path) or \"bigram\" (a table)".into())),
    }
}

trlvr::register!(
    Partner,
    "tempered-junior",
    "a weaker junior: inner logits / temperature + fixed seeded noise ({\"temperature\", \"noise\", \"seed\", \"model\" | \"bigram\"})",
    make
);
