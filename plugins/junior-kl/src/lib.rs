//! The junior-KL ablation ("KL-Reg", method.md §4) as an [`Objective`]: GRPO on the
//! senior's own (solo) rollouts plus β · token-mean of the k3 estimate of
//! KL(π_θ ‖ π_jun), the junior being the frozen starting checkpoint.
//!
//! It tests whether merely staying near the junior explains TRLVR's effect. Link the
//! crate and it registers itself as the objective `junior-kl` (config
//! `{"beta": 0.001, "kl": "k3", "grpo": {...}}`). `kl` is the estimator: `"k3"`, the
//! paper's (clamped at 10 nats per token, so tokens the junior finds far less likely than
//! the senior give no gradient), or `"k3+"` (the same value, k2's gradient, which does
//! not vanish there); the metric `junior_kl_clamped` is the fraction of tokens at the
//! clamp. The trainer
//! fills [`ObjectiveBatch::ref_log_probs`] with the junior's log-probs because
//! [`Objective::needs_reference`] says so.
//!
//! ```
//! use trlvr::prelude::*;
//! use trlvr_junior_kl::JuniorKl;
//!
//! let objective = JuniorKl::new(GrpoConfig::default(), 0.001)?;
//! assert!(objective.needs_reference());
//! # Ok::<(), trlvr::Error>(())
//! ```
#![warn(missing_docs)]

use serde::Deserialize;
use trlvr::objective::{
    Aggregation, KlEstimator, ObjectiveOutput, aggregate, host, k3_clamped_fraction, kl_per_token,
};
use trlvr::prelude::*;

// Loaded at run time, the plugin must share the host's trlvr and Burn.
#[cfg(feature = "dynamic")]
use trlvr_dylib as _;

trlvr::export_plugin!();

/// The paper's β (method.md §4). β = 0 would silently be plain GRPO, so it is never
/// the default.
pub const DEFAULT_BETA: f64 = 0.001;

/// The plugin's JSON config: `{"beta": 0.001, "kl": "k3", "grpo": {...}}`.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    beta: f64,
    kl: KlEstimator,
    grpo: GrpoConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self { beta: DEFAULT_BETA, kl: KlEstimator::K3, grpo: GrpoConfig::default() }
    }
}

trlvr::register!(
    Objective,
    "junior-kl",
    "GRPO + beta * token-mean k3 (or k3+) KL(pi_theta || pi_junior) (method.md §4)",
    |value| {
        let config: Config = trlvr::plugin::config(value)?;
        Ok(Box::new(JuniorKl::new(config.grpo, config.beta)?.with_estimator(config.kl)))
    }
);

/// GRPO plus a KL penalty toward the junior (k3 unless told otherwise).
#[derive(Debug, Clone)]
pub struct JuniorKl {
    pg: Grpo,
    beta: f64,
    estimator: KlEstimator,
}

impl JuniorKl {
    /// `pg` configures the policy-gradient part (its own KL must be off); `beta` is β.
    ///
    /// # Errors
    /// [`Error::Config`] if β is negative or NaN, `pg` has a KL term, or `pg` is invalid.
    pub fn new(pg: GrpoConfig, beta: f64) -> Result<Self> {
        if beta.is_nan() || beta < 0.0 {
            return Err(Error::Config(format!("junior-KL β must be >= 0, got {beta}")));
        }
        if pg.kl.is_some() {
            return Err(Error::Config("junior-KL adds its own KL term: leave GrpoConfig::kl empty".into()));
        }
        Ok(Self { pg: Grpo::new(pg)?, beta, estimator: KlEstimator::K3 })
    }

    /// The same with another KL estimator (`K3Plus`: k3's value, a gradient past the clamp).
    #[must_use]
    pub fn with_estimator(mut self, estimator: KlEstimator) -> Self {
        self.estimator = estimator;
        self
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The KL estimator.
    pub fn estimator(&self) -> KlEstimator {
        self.estimator
    }
}

impl Objective for JuniorKl {
    fn name(&self) -> &str {
        "junior-kl"
    }

    fn needs_reference(&self) -> bool {
        true
    }

    fn loss(&self, batch: &ObjectiveBatch) -> Result<ObjectiveOutput> {
        let junior = batch
            .ref_log_probs
            .clone()
            .ok_or_else(|| Error::Config("junior-KL needs the junior's log-probs in ref_log_probs".into()))?;
        let mut out = self.pg.loss(batch)?;
        let clamped = k3_clamped_fraction(batch.log_probs.clone(), junior.clone(), &batch.loss_mask)?;
        out.metrics.insert("junior_kl_clamped".into(), clamped);
        let per_token = kl_per_token(batch.log_probs.clone(), junior, &batch.loss_mask, self.estimator);
        // The metric is this batch's own token mean (zero off the mask), like GRPO's `kl`:
        // the trainer weights it by `senior_tokens` across micro-batches.
        let tokens = out.metrics.get("senior_tokens").copied().unwrap_or(0.0);
        let sum = f64::from(host(per_token.clone().detach().sum())?[0]);
        out.metrics.insert("junior_kl".into(), if tokens > 0.0 { sum / tokens } else { 0.0 });
        // The loss: always token-mean over the mini-batch, whatever the policy-gradient
        // aggregation (method.md §4).
        let kl = aggregate(per_token, &batch.loss_mask, batch.normalizer, Aggregation::TokenMean);
        out.loss = out.loss + kl * self.beta;
        out.metrics.insert("loss".into(), f64::from(host(out.loss.clone().detach())?[0]));
        Ok(out)
    }
}
