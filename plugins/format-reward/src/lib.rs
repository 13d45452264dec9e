//! `boxed-once`: a format reward, 1 when the response puts exactly one answer in
//! `\boxed{}` and 0 otherwise (none, or several for the grader to choose between). The
//! example of a reward plugin loaded at run time by a recipe:
//!
//! ```toml
//! plugins = ["target/release/libtrlvr_format_reward.so"]
//! [[rewards]]
//! name = "correct"
//! [[rewards]]
//! name = "boxed-once"
//! weight = 0.1
//! ```
#![warn(missing_docs)]

use serde::Deserialize;
use trlvr::plugin::config;
use trlvr::prelude::*;

/// The format reward; no settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxedOnce {}

impl RewardFunction for BoxedOnce {
    fn name(&self) -> &str {
        "boxed-once"
    }
    fn score(&self, input: &RewardInput<'_>) -> f32 {
        if input.text.matches("\\boxed{").count() == 1 { 1.0 } else { 0.0 }
    }
}

fn make(value: &serde_json::Value) -> Result<Box<dyn RewardFunction>> {
    Ok(Box::new(config::<BoxedOnce>(value)?))
}

trlvr::register!(Reward, "boxed-once", "1 when the response boxes exactly one answer, else 0", make);

trlvr::export_plugin!();

#[cfg(test)]
mod tests {
    use super::*;

    fn score(text: &str) -> f32 {
        let verdict = Reward { value: 0.0, correct: false, reason: String::new() };
        let input = RewardInput {
            text,
            reference: "4",
            verdict: &verdict,
            tokens: 9,
            senior_tokens: 9,
            max_new_tokens: 16,
            truncated: false,
        };
        BoxedOnce {}.score(&input)
    }

    #[test]
    fn one_boxed_answer_earns_it_none_or_two_do_not() {
        assert_eq!(score("2 + 2 = 4. The answer is \\boxed{4}."), 1.0);
        assert_eq!(score("The answer is 4."), 0.0);
        assert_eq!(score("\\boxed{3} or \\boxed{4}"), 0.0);
        // The format is rewarded whether or not the answer is right.
        assert_eq!(score("\\boxed{5}"), 1.0);
    }

    #[test]
    fn its_config_is_checked() {
        assert_eq!(make(&serde_json::Value::Null).unwrap().name(), "boxed-once");
        assert!(make(&serde_json::json!({ "weight": 1 })).unwrap_err().to_string().contains("weight"));
    }
}
