//! How an evaluation samples and summarises: the settings every part of an evaluation
//! (sampling, the report, comparisons) reads.

use serde::{Deserialize, Serialize};

use crate::rollout::{CatchUp, Sampling};

/// How an evaluation samples and summarises.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalConfig {
    /// Samples per problem and mode (default 8).
    pub n: usize,
    /// The k of pass@k (default 1, 2, 4, 8); each at most `n`.
    pub ks: Vec<usize>,
    /// The sampler (default T 0.7, top-p 0.8, top-k 20).
    pub sampling: Sampling,
    /// Response cap in tokens, one budget shared by both models (default
    /// [`MAX_NEW_TOKENS`](crate::rollout::MAX_NEW_TOKENS)).
    pub max_new_tokens: usize,
    /// Paragraph turns before a handoff chain stops (default 150).
    pub max_rounds: usize,
    /// Seed of every sampling stream.
    pub seed: u64,
    /// Problems per engine call (default 8: 64 rows at n 8).
    pub batch_problems: usize,
    /// Bootstrap resamples (default 1000).
    pub bootstrap: usize,
    /// Seed of the bootstrap draws.
    pub bootstrap_seed: u64,
    /// Coverage of the intervals (default 0.95).
    pub confidence: f64,
    /// Logits held at once when measuring legibility, per model (`rows × width ×
    /// vocab` floats; default 2^25, 128 MiB in f32). At least one chain goes at a time.
    pub logits_budget: usize,
    /// When a model reads the other's tokens (handoff; default piggyback).
    pub catch_up: CatchUp,
    /// Where tokens are drawn (see [`RolloutConfig::host_sampling`](crate::rollout::RolloutConfig::host_sampling)).
    pub host_sampling: Option<bool>,
}

impl Default for EvalConfig {
    fn default() -> Self {
        Self {
            n: 8,
            ks: vec![1, 2, 4, 8],
            sampling: Sampling::evaluation(),
            max_new_tokens: crate::rollout::MAX_NEW_TOKENS,
            max_rounds: 150,
            seed: 0,
            batch_problems: 8,
            bootstrap: 1000,
            bootstrap_seed: 0,
            confidence: 0.95,
            logits_budget: 1 << 25,
            catch_up: CatchUp::default(),
            host_sampling: None,
        }
    }
}
