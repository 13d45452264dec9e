//! Math answer checking for trlvr's verifiable rewards.
//!
//! A reward for a math problem needs three steps, and each is a module here:
//!
//! 1. **Extraction** ([`extract()`]): find the final answer in a free-form response. MATH
//!    style data puts it in the last `\boxed{..}`; GSM8K after `#### `; many models say
//!    "the answer is X"; others leave it in free text. [`Extraction`] picks the rules: the
//!    training reward ([`MathVerifier::strict`]) reads the last `\boxed{..}` only, while
//!    the evaluation grader ([`MathVerifier::grader`], behind `trlvr verify`) runs the
//!    free-text [`extract::Pipeline`] (a box, or boxes joined by "and", `####`, a bare
//!    formula, a "final answer" phrase in many languages, the last math environment, the
//!    last number) on both the reference and the response, and reads option letters,
//!    also the one a reasoning settles on ([`text::choice`]). LaTeX escaped twice
//!    (`\\frac`) is read as LaTeX.
//! 2. **Normalisation** ([`normalize()`]): remove what never changes meaning (`\left`,
//!    `\!`, `$`, `\text{}`, units after a number, degree and percent signs, thousands
//!    separators, a trailing period, doubled backslashes) and pick one spelling for what
//!    can be written several ways (`\dfrac` and `\frac12` become `\frac{1}{2}`, `(B)`
//!    becomes `B`). It is idempotent.
//! 3. **Equivalence** ([`equivalent()`]): after an exact-string shortcut, both answers are
//!    parsed into a shape ([`answer::Answer`]: scalar, tuple or interval, set, union,
//!    matrix, relation) whose parts are compared by value. Scalars are evaluated at four
//!    deterministic sample points for their free variables, exactly in `i128` rationals
//!    when possible and otherwise in complex floating point with a relative tolerance of
//!    `1e-6` (see [`eval`]). So `\frac{x^2-1}{x-1}` equals `x+1`, `\sin^2 x+\cos^2 x`
//!    equals `1`, and `10^9` does not equal `10^9 + 1`. The exact rules for tuples, sets,
//!    intervals, lists of solutions and relations are in [`equiv`]; [`MathVerifier`] uses
//!    [`equiv::matches_reference`], which lets the reference's shape settle what an
//!    ambiguous response means (`0,5` against `0.5`, a list against a tuple).
//!
//! [`MathVerifier`] ties the three together ([`MathVerifier::rate`]; behind
//! `trlvr::verifier::Verifier` with the feature `trlvr`), and [`check()`] returns a
//! serialisable [`Verdict`] with every intermediate form. Without that feature the crate
//! needs neither trlvr nor Burn.
//!
//! Hostile input is cheap: responses are scanned linearly, answers are capped in length
//! ([`extract::MAX_ANSWER_BYTES`], [`equiv::MAX_ANSWER_LEN`]), token count, nesting depth
//! and exponent size, and anything out of bounds is simply "not equal".
//!
//! No external algebra crate is used: none on crates.io reads LaTeX, and the general
//! expression evaluators are either unmaintained or under licences incompatible with
//! this workspace, while random-point evaluation needs only a few hundred lines.
//!
//! ```
//! use trlvr_verifiers::{Extraction, MathVerifier, equivalent, extract};
//!
//! let response = r"Adding the two parts gives $\boxed{2\frac{1}{2}\text{ cm}}$.";
//! assert_eq!(extract(response, Extraction::Math).as_deref(), Some(r"2\frac{1}{2}\text{ cm}"));
//! assert!(equivalent("5/2", r"2\frac{1}{2}\text{ cm}"));
//!
//! let reward = MathVerifier::default().rate(response, "2.5");
//! assert!(reward.correct);
//! assert_eq!(reward.value, 1.0);
//! assert_eq!(reward.reason, "equal");
//! ```

#![warn(missing_docs)]

pub mod answer;
mod boxes;
pub mod equiv;
pub mod error;
pub mod eval;
pub mod expr;
pub mod extract;
pub mod lexer;
pub mod normalize;
pub mod num;
pub mod parser;
pub mod text;
pub mod verifier;

pub use equiv::{equivalent, equivalent_normalized};
pub use error::VerifyError;
pub use extract::{Extraction, extract};
pub use normalize::normalize;
pub use verifier::{MathVerifier, Rating, Verdict, check};
