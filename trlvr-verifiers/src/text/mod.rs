//! Answers in free text, for grading responses that do not box their answer: a "final
//! answer" anchor in many languages (and the part of its sentence that states the
//! answer), the last math environment, the last number of the prose, and multiple-choice
//! letters, also those a reasoning settles on ("not A, therefore B").
//!
//! Each stage is one small function returning the raw answer text (or `None`); the order
//! in which they are tried is [`crate::extract::Pipeline`]'s business. All are linear
//! scans, so long hostile texts stay cheap.
//!
//! The parts, each a small module: `anchor` finds the last anchor and `statement` the part
//! of its sentence that states the answer; `math_env` reads math environments, `number`
//! the last number and `options` option letters; `prose` tells formulas from prose, and
//! `phrases` finds the last of many phrases in one pass.

mod anchor;
mod math_env;
mod number;
mod options;
mod phrases;
mod prose;
mod statement;

pub use crate::normalize::ascii_digit;
pub use anchor::{after_anchor, anchored};
pub use math_env::{last_math_env, math_envs};
pub use number::last_number;
pub use options::choice;
pub(crate) use phrases::rfind_ci;
pub(crate) use prose::is_formula;
pub(crate) use statement::{prose_answer, sentence, stated_part};
