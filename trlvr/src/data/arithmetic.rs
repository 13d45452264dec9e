//! A verifiable task that trlvr writes itself: arithmetic with small whole numbers
//! (`What is 17 + 8?`, answer `25`), for training real small models on a CPU.
//!
//! Every problem of the space (each choice of operands and operators) belongs to one
//! split by a hash of its text, so the training and validation sets are disjoint by
//! construction, whatever the seeds and sizes; a seed only picks which problems of a
//! split are drawn, and in which order. Results are never negative: a subtraction's
//! running value stays at or above 0.
//!
//! ```
//! use trlvr::data::arithmetic::{Arithmetic, Split};
//!
//! let task = Arithmetic { operands: 2, max: 30, ops: "+-".into(), validation_percent: 10 };
//! let train = task.problems(Split::Train, 100, 0)?;
//! let validation = task.problems(Split::Validation, 20, 0)?;
//! assert!(train.iter().all(|t| validation.iter().all(|v| v.question != t.question)));
//! assert_eq!(train[0].question.split_whitespace().count(), 5); // "What is a + b?"
//! # Ok::<(), trlvr::Error>(())
//! ```

use std::collections::HashSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::Problem;
use crate::{Error, Result};

/// Which side of the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Problems to train on.
    Train,
    /// Held-out problems.
    Validation,
}

/// The task's shape: how many operands, how large, which operators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arithmetic {
    /// Numbers per problem (at least 2).
    pub operands: usize,
    /// Operands are drawn from `0..=max`.
    pub max: u32,
    /// The operators used, from `+`, `-` and `*`.
    pub ops: String,
    /// The share of the problem space held out for validation, in percent (1..=50).
    pub validation_percent: u32,
}

impl Default for Arithmetic {
    fn default() -> Self {
        Self { operands: 2, max: 30, ops: "+-".into(), validation_percent: 10 }
    }
}

impl Arithmetic {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::Config`] naming the bad setting.
    pub fn validate(&self) -> Result<()> {
        if self.operands < 2 {
            return Err(Error::Config(format!("operands must be at least 2, got {}", self.operands)));
        }
        if self.max == 0 || self.max > 1_000_000 {
            return Err(Error::Config(format!("max must lie in 1..=1000000, got {}", self.max)));
        }
        if self.ops.is_empty() || self.ops.chars().any(|c| !"+-*".contains(c)) {
            return Err(Error::Config(format!("ops must be some of \"+-*\", got {:?}", self.ops)));
        }
        if !(1..=50).contains(&self.validation_percent) {
            return Err(Error::Config(format!(
                "validation_percent must lie in 1..=50, got {}",
                self.validation_percent
            )));
        }
        Ok(())
    }

    /// The split a question belongs to: by an FNV-1a hash of its text.
    pub fn split_of(&self, question: &str) -> Split {
        let hash = super::fnv1a(question.bytes());
        // The top bits: FNV's low bits mix poorly.
        if (hash >> 32) % 100 < u64::from(self.validation_percent) { Split::Validation } else { Split::Train }
    }

    /// `count` distinct problems of `split`, drawn with `seed`. Problem `line`s are
    /// 1-based positions in the returned list.
    ///
    /// # Errors
    /// [`Error::Config`] for bad settings, or when the split holds fewer than `count`
    /// problems (it says how many it found).
    pub fn problems(&self, split: Split, count: usize, seed: u64) -> Result<Vec<Problem>> {
        self.validate()?;
        let ops: Vec<char> = self.ops.chars().collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ if split == Split::Train { 0x7EA1 } else { 0x5A11 });
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(count);
        // Draws until `count` are found; a small space runs dry, and the misses say so.
        let mut misses = 0usize;
        while out.len() < count {
            let (question, answer) = self.draw(&ops, &mut rng);
            if self.split_of(&question) != split || !seen.insert(question.clone()) {
                misses += 1;
                if misses > 200 * count.max(1000) {
                    return Err(Error::Config(format!(
                        "the {split:?} split of this task has only about {} distinct problems; asked for {count}",
                        out.len()
                    )));
                }
                continue;
            }
            out.push(Problem { line: out.len() + 1, question, reference: answer.to_string() });
        }
        Ok(out)
    }

    /// One problem: its question and answer.
    fn draw(&self, ops: &[char], rng: &mut ChaCha8Rng) -> (String, i64) {
        let mut value = i64::from(rng.random_range(0..=self.max));
        let mut question = format!("What is {value}");
        for _ in 1..self.operands {
            let op = ops[rng.random_range(0..ops.len())];
            // A subtraction never goes below 0: its operand is at most the running value.
            let limit = if op == '-' { value.min(i64::from(self.max)) } else { i64::from(self.max) };
            let x = rng.random_range(0..=limit);
            value = match op {
                '+' => value + x,
                '-' => value - x,
                _ => value * x,
            };
            question.push_str(&format!(" {op} {x}"));
        }
        question.push('?');
        (question, value)
    }
}

/// How a worked solution lays out its steps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// One line: `3 + 4 = 7. 7 - 2 = 5. The answer is \boxed{5}.`
    #[default]
    Line,
    /// Each step, and the answer, its own paragraph: a handoff that alternates at
    /// paragraph breaks then hands over one operation at a time.
    Paragraphs,
}

/// A worked solution of a question this task wrote (`What is 3 + 4 - 2?`), one step per
/// operation, left to right, ending in the boxed answer: `3 + 4 = 7. 7 - 2 = 5. The answer
/// is \boxed{5}.` It is what a supervised warm-up teaches (`trlvr sft`): the answer's
/// format, on the task's own problems. `None` for text of another shape.
pub fn solution(question: &str) -> Option<String> {
    worked(question, Layout::Line)
}

/// [`solution`] in `layout`.
pub fn worked(question: &str, layout: Layout) -> Option<String> {
    let body = question.strip_prefix("What is ")?.strip_suffix('?')?;
    let mut words = body.split(' ');
    let mut value: i64 = words.next()?.parse().ok()?;
    let mut steps = Vec::new();
    while let Some(op) = words.next() {
        let x: i64 = words.next()?.parse().ok()?;
        let next = match op {
            "+" => value.checked_add(x)?,
            "-" => value.checked_sub(x)?,
            "*" => value.checked_mul(x)?,
            _ => return None,
        };
        steps.push(format!("{value} {op} {x} = {next}."));
        value = next;
    }
    if steps.is_empty() {
        return None;
    }
    steps.push(format!("The answer is \\boxed{{{value}}}."));
    Some(steps.join(match layout {
        Layout::Line => " ",
        Layout::Paragraphs => "\n\n",
    }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Evaluates "What is a op b op c?" left to right.
    fn evaluate(question: &str) -> i64 {
        let body = question.strip_prefix("What is ").unwrap().strip_suffix('?').unwrap();
        let mut words = body.split(' ');
        let mut value: i64 = words.next().unwrap().parse().unwrap();
        while let Some(op) = words.next() {
            let x: i64 = words.next().unwrap().parse().unwrap();
            value = match op {
                "+" => value + x,
                "-" => value - x,
                "*" => value * x,
                other => panic!("operator {other}"),
            };
        }
        value
    }

    proptest! {
        #[test]
        fn answers_are_right_splits_disjoint_and_draws_seeded(
            operands in 2usize..4, max in 10u32..60, seed in 0u64..1000, mul in any::<bool>(),
        ) {
            let ops = if mul { "+-*" } else { "+-" };
            let task = Arithmetic { operands, max, ops: ops.into(), validation_percent: 20 };
            let train = task.problems(Split::Train, 30, seed).unwrap();
            let validation = task.problems(Split::Validation, 5, seed).unwrap();
            for p in train.iter().chain(&validation) {
                prop_assert_eq!(p.reference.parse::<i64>().unwrap(), evaluate(&p.question));
                prop_assert!(evaluate(&p.question) >= 0);
                let worked = solution(&p.question).unwrap();
                prop_assert!(worked.ends_with(&format!("\\boxed{{{}}}.", p.reference)), "{}", worked);
                prop_assert_eq!(worked.matches(" = ").count(), operands - 1);
            }
            let held: HashSet<&str> = validation.iter().map(|p| p.question.as_str()).collect();
            prop_assert!(train.iter().all(|p| !held.contains(p.question.as_str())));
            prop_assert!(train.iter().all(|p| task.split_of(&p.question) == Split::Train));
            let distinct: HashSet<&str> = train.iter().map(|p| p.question.as_str()).collect();
            prop_assert_eq!(distinct.len(), train.len());
            prop_assert_eq!(&task.problems(Split::Train, 30, seed).unwrap(), &train);
        }
    }

    #[test]
    fn paragraphs_hold_one_step_each_and_say_what_a_line_says() {
        let q = "What is 3 + 4 - 2 + 10?";
        let line = solution(q).unwrap();
        let paragraphs = worked(q, Layout::Paragraphs).unwrap();
        assert_eq!(paragraphs, "3 + 4 = 7.\n\n7 - 2 = 5.\n\n5 + 10 = 15.\n\nThe answer is \\boxed{15}.");
        assert_eq!(paragraphs.split("\n\n").collect::<Vec<_>>().join(" "), line);
        assert_eq!(worked("What is 3?", Layout::Paragraphs), None);
    }

    #[test]
    fn a_solution_works_left_to_right_and_boxes_the_answer() {
        assert_eq!(
            solution("What is 3 + 4 - 2?").unwrap(),
            "3 + 4 = 7. 7 - 2 = 5. The answer is \\boxed{5}."
        );
        assert_eq!(solution("What is 17 - 8?").unwrap(), "17 - 8 = 9. The answer is \\boxed{9}.");
        for other in ["What is 3?", "What is 3 / 4?", "Compute 3 + 4.", "What is 3 + ?"] {
            assert_eq!(solution(other), None, "{other}");
        }
    }

    #[test]
    fn a_small_space_runs_dry_with_a_clear_error() {
        let task = Arithmetic { operands: 2, max: 3, ops: "+".into(), validation_percent: 10 };
        let err = task.problems(Split::Validation, 50, 0).unwrap_err().to_string();
        assert!(err.contains("only about") && err.contains("asked for 50"), "{err}");
        let bad = Arithmetic { ops: "/".into(), ..Arithmetic::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("ops"));
    }

    #[test]
    fn the_validation_share_is_about_as_asked() {
        let task = Arithmetic::default();
        let (mut held, mut all) = (0, 0);
        for a in 0..=task.max {
            for b in 0..=task.max {
                for q in [format!("What is {a} + {b}?"), format!("What is {a} - {b}?")] {
                    all += 1;
                    held += usize::from(task.split_of(&q) == Split::Validation);
                }
            }
        }
        let share = held as f64 / all as f64;
        assert!((0.07..0.13).contains(&share), "{held} of {all}");
    }
}
