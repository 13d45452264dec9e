//! GRPO with a clipped surrogate on senior-written tokens only (method.md §3).

use serde::{Deserialize, Serialize};

use super::{
    Aggregation, KlEstimator, Metrics, Objective, ObjectiveBatch, ObjectiveOutput, aggregate, check_shapes,
    host, host_bool, kl_per_token, masked,
};
use crate::{Error, Result};

/// A KL penalty toward a reference: `coef · aggregate(kl)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KlPenalty {
    /// Which estimator.
    pub estimator: KlEstimator,
    /// β.
    pub coef: f64,
}

/// GRPO's knobs; defaults are the release's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrpoConfig {
    /// ε_low: the ratio is clipped below at 1 − ε_low (default 0.2).
    pub clip_low: f64,
    /// ε_high: the ratio is clipped above at 1 + ε_high (default 0.2).
    pub clip_high: f64,
    /// c of dual clip: for A < 0 the loss is capped at −c·A (default 3; `None` = off).
    pub dual_clip: Option<f64>,
    /// The log-ratio is clamped to ±this before `exp` (default 20).
    pub log_ratio_clamp: f64,
    /// How token losses are combined (default token-mean).
    pub aggregation: Aggregation,
    /// Optional KL to a reference (default none).
    pub kl: Option<KlPenalty>,
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self {
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: Some(3.0),
            log_ratio_clamp: 20.0,
            aggregation: Aggregation::TokenMean,
            kl: None,
        }
    }
}

impl GrpoConfig {
    /// Sets ε_low and ε_high.
    #[must_use]
    pub fn with_clip(mut self, low: f64, high: f64) -> Self {
        self.clip_low = low;
        self.clip_high = high;
        self
    }
    /// Sets (or disables, with `None`) dual clip.
    #[must_use]
    pub fn with_dual_clip(mut self, c: Option<f64>) -> Self {
        self.dual_clip = c;
        self
    }
    /// Sets the aggregation mode.
    #[must_use]
    pub fn with_aggregation(mut self, aggregation: Aggregation) -> Self {
        self.aggregation = aggregation;
        self
    }
    /// Adds a KL penalty.
    #[must_use]
    pub fn with_kl(mut self, estimator: KlEstimator, coef: f64) -> Self {
        self.kl = Some(KlPenalty { estimator, coef });
        self
    }
}

/// The GRPO objective.
#[derive(Debug, Clone)]
pub struct Grpo {
    config: GrpoConfig,
}

impl Grpo {
    /// Validates `config`.
    ///
    /// # Errors
    /// [`Error::Config`] for negative clip ranges, `ε_low >= 1`, dual clip `c <= 1`, a
    /// non-positive log-ratio clamp, a zero horizon or a negative KL coefficient.
    pub fn new(config: GrpoConfig) -> Result<Self> {
        let bad = |m: String| Err(Error::Config(m));
        if !(0.0..1.0).contains(&config.clip_low) || config.clip_high.is_nan() || config.clip_high < 0.0 {
            return bad(format!(
                "clip range must satisfy 0 <= ε_low < 1, ε_high >= 0; got {} / {}",
                config.clip_low, config.clip_high
            ));
        }
        if let Some(c) = config.dual_clip.filter(|c| c.is_nan() || *c <= 1.0) {
            return bad(format!("dual clip c must be > 1, got {c}"));
        }
        if config.log_ratio_clamp.is_nan() || config.log_ratio_clamp <= 0.0 {
            return bad(format!("log_ratio_clamp must be > 0, got {}", config.log_ratio_clamp));
        }
        if config.aggregation == (Aggregation::SeqMeanTokenSumNorm { horizon: 0 }) {
            return bad("seq-mean-token-sum-norm needs a horizon >= 1".into());
        }
        if let Some(kl) = config.kl.filter(|k| k.coef.is_nan() || k.coef < 0.0) {
            return bad(format!("KL coefficient must be >= 0, got {}", kl.coef));
        }
        Ok(Self { config })
    }

    /// The configuration.
    pub fn config(&self) -> &GrpoConfig {
        &self.config
    }
}

impl Objective for Grpo {
    fn name(&self) -> &str {
        "grpo"
    }

    fn needs_reference(&self) -> bool {
        self.config.kl.is_some()
    }

    fn loss(&self, batch: &ObjectiveBatch) -> Result<ObjectiveOutput> {
        check_shapes(batch)?;
        let c = &self.config;
        let mask = &batch.loss_mask;
        let [b, t] = batch.log_probs.dims();

        // 1. log-ratio, masked before exp and clamped
        let log_ratio = (masked(batch.log_probs.clone(), mask) - masked(batch.old_log_probs.clone(), mask))
            .clamp(-c.log_ratio_clamp, c.log_ratio_clamp);
        let ratio = log_ratio.exp();
        // 2. advantages broadcast over tokens, masked
        let adv = masked(batch.advantages.clone().unsqueeze_dim::<2>(1).expand([b, t]), mask);
        // 3. clipped surrogate
        let unclipped = -adv.clone() * ratio.clone();
        let clipped = -adv.clone() * ratio.clone().clamp(1.0 - c.clip_low, 1.0 + c.clip_high);
        let mut per_token = unclipped.clone().max_pair(clipped.clone());
        let clip_hit = clipped.greater(unclipped);
        // 4. dual clip: for A < 0, at most −c·A
        let mut dual_hit = None;
        if let Some(dual) = c.dual_clip {
            let cap = adv.clone() * -dual;
            let negative = adv.lower_elem(0.0);
            dual_hit = Some(per_token.clone().greater(cap.clone()).bool_and(negative.clone()));
            per_token = per_token.clone().mask_where(negative, per_token.min_pair(cap));
        }
        // 5. aggregate, plus KL
        let mut loss = aggregate(per_token, mask, batch.normalizer, c.aggregation);
        let mut kl_mean = None;
        if let Some(kl) = c.kl {
            let reference = batch
                .ref_log_probs
                .clone()
                .ok_or_else(|| Error::Config("GRPO with a KL penalty needs ref_log_probs".into()))?;
            let kl_tok = kl_per_token(batch.log_probs.clone(), reference, mask, kl.estimator);
            kl_mean = Some(kl_tok.clone().detach());
            loss = loss + aggregate(kl_tok, mask, batch.normalizer, c.aggregation) * kl.coef;
        }

        // Metrics, over this micro-batch's loss tokens.
        let flags = host_bool(mask.tensor().clone())?;
        let ratios = host(ratio.detach())?;
        let clip = host_bool(clip_hit)?;
        let n = flags.iter().filter(|&&f| f).count();
        let over =
            |v: &[bool]| flags.iter().zip(v).filter(|(f, x)| **f && **x).count() as f64 / n.max(1) as f64;
        let senior_ratios: Vec<f64> =
            flags.iter().zip(&ratios).filter(|(f, _)| **f).map(|(_, &r)| f64::from(r)).collect();
        let mut metrics = Metrics::new();
        metrics.insert("senior_tokens".into(), n as f64);
        metrics.insert("clip_frac".into(), over(&clip));
        if let Some(hit) = dual_hit {
            metrics.insert("dual_clip_frac".into(), over(&host_bool(hit)?));
        }
        if n > 0 {
            metrics.insert("ratio_mean".into(), senior_ratios.iter().sum::<f64>() / n as f64);
            metrics.insert("ratio_min".into(), senior_ratios.iter().copied().fold(f64::INFINITY, f64::min));
            metrics
                .insert("ratio_max".into(), senior_ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        }
        if let Some(kl) = kl_mean {
            let kl = host(kl)?;
            metrics.insert("kl".into(), kl.iter().map(|&k| f64::from(k)).sum::<f64>() / n.max(1) as f64);
        }
        metrics.insert("loss".into(), f64::from(host(loss.clone().detach())?[0]));
        Ok(ObjectiveOutput { loss, metrics })
    }
}
