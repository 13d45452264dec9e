//! [`MathVerifier`], the reward function, and [`Verdict`], its explainable result.

use serde::Serialize;

use crate::equiv::matches_reference;
use crate::extract::{Extraction, Pipeline, boxed, extract};
use crate::normalize::normalize;
use crate::text::choice;

/// Everything one check found out, for logs and the command line (serialises to JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The answer extracted from the reference, if any.
    pub gold: Option<String>,
    /// The answer extracted from the response, if any.
    pub pred: Option<String>,
    /// The reference answer after normalisation.
    pub gold_normalized: Option<String>,
    /// The response's answer after normalisation.
    pub pred_normalized: Option<String>,
    /// Whether the two are equivalent.
    pub equal: bool,
    /// Why: `"equal"`, `"not equal"`, `"no answer found"` or `"no reference answer"`.
    pub reason: &'static str,
}

/// Checks a response against a reference with the default extraction: the reference is
/// taken whole ([`Extraction::Bare`]), the response MATH style ([`Extraction::Math`]).
///
/// ```
/// use trlvr_verifiers::check;
///
/// let v = check(r"\frac{1}{2}", r"Thus $x = \boxed{0.5}$.");
/// assert!(v.equal);
/// assert_eq!(v.pred.as_deref(), Some("0.5"));
/// assert_eq!(v.gold_normalized.as_deref(), Some(r"\frac{1}{2}"));
/// ```
pub fn check(gold: &str, pred: &str) -> Verdict {
    MathVerifier::default().check(gold, pred)
}

/// The math verifier: extracts, normalises and compares (see the crate docs).
///
/// The reward is binary by default: `1.0` when the response's answer is equivalent to the
/// reference, `0.0` otherwise. [`MathVerifier::with_format_reward`] adds a small reward
/// for wrong answers that were at least given in a well-formed `\boxed{}`.
///
/// ```
/// use trlvr_verifiers::MathVerifier;
///
/// let v = MathVerifier::default().with_format_reward(0.1);
/// assert_eq!(v.rate(r"so \boxed{42}", "42").value, 1.0);
/// assert_eq!(v.rate(r"so \boxed{41}", "42").value, 0.1);
/// assert_eq!(v.rate("so 41", "42").value, 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MathVerifier {
    response: Extraction,
    reference: Extraction,
    format_reward: f32,
}

impl Default for MathVerifier {
    fn default() -> Self {
        Self::new(Extraction::Math)
    }
}

impl MathVerifier {
    /// A verifier that extracts responses with `response` and takes references whole.
    pub fn new(response: Extraction) -> Self {
        Self { response, reference: Extraction::Bare, format_reward: 0.0 }
    }

    /// The strict training reward: the response's answer is the content of its last
    /// `\boxed{..}` and nothing else ([`Extraction::LastBox`]); no fall-backs, no format
    /// reward, so the policy is rewarded only for the final answer it commits to. The
    /// reference is taken whole; chain [`Self::with_reference_extraction`] for datasets
    /// whose references are solutions ([`Extraction::Gsm8k`], [`Extraction::Math`]).
    ///
    /// ```
    /// use trlvr_verifiers::{Extraction, MathVerifier};
    ///
    /// let v = MathVerifier::strict().with_reference_extraction(Extraction::Gsm8k);
    /// assert!(v.rate(r"3 + 4 = 7, so \boxed{7}", "She has 7.\n#### 7").correct);
    /// assert!(!v.rate("The answer is 7.", "#### 7").correct);
    /// ```
    pub fn strict() -> Self {
        Self::new(Extraction::LastBox)
    }

    /// The grader for evaluation and `trlvr verify`: both the reference and the response go
    /// through the whole free-text [`Pipeline`] (a box, `####`, a bare formula, a "final
    /// answer" phrase, the last math environment, the last number), and a multiple-choice
    /// reference reads the option the response chooses.
    ///
    /// ```
    /// use trlvr_verifiers::MathVerifier;
    ///
    /// let g = MathVerifier::grader();
    /// assert!(g.rate("... so she has 99 marbles.", "99").correct);
    /// assert!(g.rate(r"Hence \[ x = 5+5+1 = 11 \]", "11").correct);
    /// assert!(g.rate("D. it can't be A or B", "(D)").correct);
    /// ```
    pub fn grader() -> Self {
        Self::new(Extraction::FREE).with_reference_extraction(Extraction::FREE)
    }

    /// The GSM8K preset: `#### N` answers on both sides (so a full reference solution works
    /// as well as a bare number).
    pub fn gsm8k() -> Self {
        Self::new(Extraction::Gsm8k).with_reference_extraction(Extraction::Gsm8k)
    }

    /// Sets how the reference answer is extracted (default [`Extraction::Bare`]).
    #[must_use]
    pub fn with_reference_extraction(mut self, how: Extraction) -> Self {
        self.reference = how;
        self
    }

    /// Gives `reward` (clamped to `[0, 1]`) to wrong answers written in a well-formed
    /// `\boxed{..}`; correct answers still get `1.0`.
    #[must_use]
    pub fn with_format_reward(mut self, reward: f32) -> Self {
        self.format_reward = if reward.is_finite() { reward.clamp(0.0, 1.0) } else { 0.0 };
        self
    }

    /// Extracts, normalises and compares, keeping every intermediate form.
    pub fn check(&self, gold: &str, pred: &str) -> Verdict {
        let g = extract(gold, self.reference);
        let gn = g.as_deref().map(normalize);
        let letters = matches!(self.response, Extraction::Pipeline(Pipeline { letters: true, .. }));
        let p = match &gn {
            Some(letter) if letters && is_option(letter) => choice(pred).map(String::from),
            _ => extract(pred, self.response),
        };
        let pn = p.as_deref().map(normalize);
        let (equal, reason) = match (&gn, &pn) {
            (None, _) => (false, "no reference answer"),
            (_, None) => (false, "no answer found"),
            (Some(a), Some(b)) if matches_reference(a, b) => (true, "equal"),
            _ => (false, "not equal"),
        };
        Verdict { gold: g, pred: p, gold_normalized: gn, pred_normalized: pn, equal, reason }
    }
}

/// Whether a normalised gold answer is a multiple-choice option letter.
fn is_option(gold: &str) -> bool {
    matches!(gold.as_bytes(), [b'A'..=b'H' | b'J'])
}

impl MathVerifier {
    /// The reward of `response` against `reference`, without trlvr: what
    /// [`trlvr::verifier::Verifier::verify`] returns (feature `trlvr`).
    ///
    /// ```
    /// use trlvr_verifiers::MathVerifier;
    ///
    /// let r = MathVerifier::strict().rate(r"so \boxed{7}", "7");
    /// assert_eq!((r.value, r.correct, r.reason.as_str()), (1.0, true, "equal"));
    /// ```
    pub fn rate(&self, response: &str, reference: &str) -> Rating {
        let v = self.check(reference, response);
        if v.equal {
            return Rating { value: 1.0, correct: true, reason: v.reason.into() };
        }
        if self.format_reward > 0.0 && boxed(response).is_some_and(|b| !b.trim().is_empty()) {
            return Rating {
                value: self.format_reward,
                correct: false,
                reason: format!("{} (well-formed boxed answer)", v.reason),
            };
        }
        Rating { value: 0.0, correct: false, reason: v.reason.into() }
    }
}

/// A response's reward: its value, whether it is correct, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rating {
    /// 1 when correct; the format reward, or 0, otherwise.
    pub value: f32,
    /// Whether the answer equals the reference.
    pub correct: bool,
    /// Why, in a few words.
    pub reason: String,
}

#[cfg(feature = "trlvr")]
impl trlvr::verifier::Verifier for MathVerifier {
    fn verify(&self, response: &str, reference: &str) -> trlvr::verifier::Reward {
        let Rating { value, correct, reason } = self.rate(response, reference);
        trlvr::verifier::Reward { value, correct, reason }
    }
}
