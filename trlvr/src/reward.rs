//! Rewards: what a rollout earns. The paper's reward is the task's verifier alone (the
//! last `\boxed{}`, strict; the built-in `correct`). A recipe may add terms with weights
//! (a format or a length term, as TRL's `reward_funcs` and verl's custom rewards do), each
//! a plugin ([`crate::register!`] with kind `Reward`); the rollout's reward is the weighted
//! sum, and each term's mean is logged per step on its own. Accuracy stays the verifier's
//! verdict whatever the terms are.
//!
//! ```
//! use trlvr::reward::{RewardInput, Rewards};
//! use trlvr::prelude::*;
//!
//! let rewards = Rewards::correct();
//! let verdict = ExactMatch.verify("42", "42");
//! let input = RewardInput { text: "42", reference: "42", verdict: &verdict, tokens: 2,
//!     senior_tokens: 2, max_new_tokens: 8, truncated: false };
//! assert_eq!(rewards.score(&input)?.total, 1.0);
//! # Ok::<(), trlvr::Error>(())
//! ```

use crate::verifier::Reward;
use crate::{Error, Result};

/// What a reward term sees of one rollout.
#[derive(Debug, Clone, Copy)]
pub struct RewardInput<'a> {
    /// The response's text (both authors').
    pub text: &'a str,
    /// The reference answer.
    pub reference: &'a str,
    /// The task verifier's judgement of `text`.
    pub verdict: &'a Reward,
    /// Response tokens, both authors.
    pub tokens: usize,
    /// ... of which the senior wrote.
    pub senior_tokens: usize,
    /// The response cap of the rollout.
    pub max_new_tokens: usize,
    /// Whether the cap cut the response.
    pub truncated: bool,
}

/// One reward term. Object-safe; made by the registry from its recipe table.
pub trait RewardFunction: Send + Sync + std::fmt::Debug {
    /// The registered name (the recipe's and the log's).
    fn name(&self) -> &str;
    /// The term's value for one rollout; must be finite.
    fn score(&self, input: &RewardInput<'_>) -> f32;
}

impl<R: RewardFunction + ?Sized> RewardFunction for Box<R> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn score(&self, input: &RewardInput<'_>) -> f32 {
        (**self).score(input)
    }
}

/// The task's verifier as a term: its reward (1 correct, 0 not, for the strict grader).
#[derive(Debug, Clone, Copy, Default)]
pub struct Correct;

impl RewardFunction for Correct {
    fn name(&self) -> &str {
        "correct"
    }
    fn score(&self, input: &RewardInput<'_>) -> f32 {
        input.verdict.value
    }
}

/// `length`: costs the tokens a response spends beyond a free allowance, as a fraction of
/// what the cap leaves: `-(tokens - free)+ / (cap - free)`, in [-1, 0]. Weighted beside
/// `correct` it prefers the shorter of two right answers: the pressure under which RL
/// compresses its reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LengthCost {
    /// Tokens that cost nothing.
    pub free: usize,
    /// Count only the senior's tokens (the junior-written ones of a tandem rollout are
    /// not the senior's to shorten).
    pub senior_only: bool,
}

impl RewardFunction for LengthCost {
    fn name(&self) -> &str {
        "length"
    }
    fn score(&self, input: &RewardInput<'_>) -> f32 {
        let tokens = if self.senior_only { input.senior_tokens } else { input.tokens };
        let span = input.max_new_tokens.saturating_sub(self.free).max(1);
        -(tokens.saturating_sub(self.free) as f32 / span as f32).min(1.0)
    }
}

/// A term and its weight.
#[derive(Debug)]
pub struct RewardTerm {
    /// Multiplies the term's value in the sum.
    pub weight: f32,
    /// The term.
    pub function: Box<dyn RewardFunction>,
}

/// One rollout's reward: the weighted sum, and each term's own value (unweighted).
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Σ weight · value.
    pub total: f32,
    /// Each term's value, in the terms' order.
    pub terms: Vec<f32>,
}

/// The weighted terms a trainer rewards with.
#[derive(Debug)]
pub struct Rewards {
    terms: Vec<RewardTerm>,
}

impl Rewards {
    /// The paper's reward: the verifier's alone, weight 1.
    pub fn correct() -> Self {
        Self { terms: vec![RewardTerm { weight: 1.0, function: Box::new(Correct) }] }
    }

    /// Weighted terms, checked: at least one, finite weights, no name twice.
    ///
    /// # Errors
    /// [`Error::Config`] naming the term.
    pub fn new(terms: Vec<RewardTerm>) -> Result<Self> {
        if terms.is_empty() {
            return Err(Error::Config("rewards: give at least one term (`correct` is the paper's)".into()));
        }
        for (i, t) in terms.iter().enumerate() {
            if !t.weight.is_finite() {
                return Err(Error::Config(format!(
                    "reward {:?}: weight {} is not finite",
                    t.function.name(),
                    t.weight
                )));
            }
            if terms[..i].iter().any(|u| u.function.name() == t.function.name()) {
                return Err(Error::Config(format!("reward {:?} is listed twice", t.function.name())));
            }
        }
        Ok(Self { terms })
    }

    /// The terms' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.terms.iter().map(|t| t.function.name().to_string()).collect()
    }

    /// Scores one rollout.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming a term whose value is NaN or infinite: a silent NaN
    /// would poison every advantage of its group.
    pub fn score(&self, input: &RewardInput<'_>) -> Result<Scored> {
        let mut total = 0.0;
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let value = t.function.score(input);
            if !value.is_finite() {
                return Err(Error::NonFinite(format!(
                    "reward {:?} returned {value} for a rollout of {} tokens: rewards must be finite",
                    t.function.name(),
                    input.tokens
                )));
            }
            total += t.weight * value;
            terms.push(value);
        }
        Ok(Scored { total, terms })
    }
}

impl Default for Rewards {
    fn default() -> Self {
        Self::correct()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed(&'static str, f32);

    impl RewardFunction for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn score(&self, _: &RewardInput<'_>) -> f32 {
            self.1
        }
    }

    fn input(verdict: &Reward) -> RewardInput<'_> {
        sized(verdict, 10, 5)
    }

    fn sized(verdict: &Reward, tokens: usize, senior_tokens: usize) -> RewardInput<'_> {
        RewardInput {
            text: "t",
            reference: "r",
            verdict,
            tokens,
            senior_tokens,
            max_new_tokens: 100,
            truncated: false,
        }
    }

    #[test]
    fn length_costs_only_the_tokens_beyond_the_allowance() {
        let verdict = Reward { value: 1.0, correct: true, reason: String::new() };
        let cost = |c: LengthCost, tokens: usize, senior: usize| c.score(&sized(&verdict, tokens, senior));
        let free20 = LengthCost { free: 20, senior_only: false };
        assert_eq!(cost(free20, 10, 10), 0.0);
        assert_eq!(cost(free20, 20, 20), 0.0);
        assert_eq!(cost(free20, 60, 60), -0.5);
        assert_eq!(cost(free20, 100, 100), -1.0);
        // Past the cap (a junior's catch-up, say) it still costs at most 1.
        assert_eq!(cost(free20, 140, 140), -1.0);
        assert_eq!(cost(LengthCost { free: 0, senior_only: true }, 80, 30), -0.3);
    }

    fn term(weight: f32, function: impl RewardFunction + 'static) -> RewardTerm {
        RewardTerm { weight, function: Box::new(function) }
    }

    #[test]
    fn the_sum_is_weighted_and_each_term_kept_unweighted() {
        let verdict = Reward { value: 1.0, correct: true, reason: String::new() };
        let rewards = Rewards::new(vec![term(1.0, Correct), term(0.5, Fixed("length", -0.4))]).unwrap();
        let scored = rewards.score(&input(&verdict)).unwrap();
        assert_eq!(scored.terms, vec![1.0, -0.4]);
        assert!((scored.total - 0.8).abs() < 1e-6);
        assert_eq!(rewards.names(), ["correct", "length"]);
    }

    #[test]
    fn bad_terms_are_refused_by_name() {
        let verdict = Reward { value: 0.0, correct: false, reason: String::new() };
        let nan = Rewards::new(vec![term(1.0, Fixed("odd", f32::NAN))]).unwrap();
        assert!(nan.score(&input(&verdict)).unwrap_err().to_string().contains("\"odd\""));
        assert!(Rewards::new(vec![]).is_err());
        assert!(Rewards::new(vec![term(f32::INFINITY, Correct)]).unwrap_err().to_string().contains("weight"));
        let twice = Rewards::new(vec![term(1.0, Correct), term(2.0, Correct)]).unwrap_err();
        assert!(twice.to_string().contains("twice"));
    }
}
