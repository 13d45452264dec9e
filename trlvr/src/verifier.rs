//! The [`Verifier`] trait: the team's final text and a reference answer in, a reward out.

use serde::{Deserialize, Serialize};

/// A verifier's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reward {
    /// The scalar reward (binary 0/1 by default).
    pub value: f32,
    /// Whether the answer was judged correct.
    pub correct: bool,
    /// Why, in a few words ("no boxed answer", "equal after normalisation", ...).
    pub reason: String,
}

/// Scores a response against a reference answer. Object-safe; `trlvr-verifiers` provides
/// the math verifier.
///
/// ```
/// use trlvr::prelude::*;
///
/// let exact = ExactMatch;
/// assert!(exact.verify("  42 ", "42").correct);
/// assert_eq!(exact.verify("41", "42").value, 0.0);
/// ```
pub trait Verifier: Send + Sync {
    /// Judges `response` (the whole generated text) against `reference`.
    fn verify(&self, response: &str, reference: &str) -> Reward;
}

impl<V: Verifier + ?Sized> Verifier for &V {
    fn verify(&self, response: &str, reference: &str) -> Reward {
        (**self).verify(response, reference)
    }
}

impl<V: Verifier + ?Sized> Verifier for Box<V> {
    fn verify(&self, response: &str, reference: &str) -> Reward {
        (**self).verify(response, reference)
    }
}

/// Reward 1 when the trimmed response equals the trimmed reference: for toy tasks.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExactMatch;

impl Verifier for ExactMatch {
    fn verify(&self, response: &str, reference: &str) -> Reward {
        let correct = response.trim() == reference.trim();
        Reward {
            value: if correct { 1.0 } else { 0.0 },
            correct,
            reason: if correct { "exact match" } else { "differs" }.into(),
        }
    }
}
