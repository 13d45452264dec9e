//! The crate's single error type.
//!
//! Errors never escape the high-level API ([`crate::equivalent`], [`crate::check`],
//! [`crate::MathVerifier`]): there, anything that cannot be parsed or evaluated simply
//! counts as "not equal". They are visible through the lower-level [`crate::expr`] API.

use thiserror::Error;

/// Why an answer could not be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerifyError {
    /// The input is longer than the checker is willing to look at.
    #[error("input of {len} bytes exceeds the limit of {max} bytes")]
    TooLong {
        /// Length of the input in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// Brackets or operators are nested deeper than the recursion limit.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
    /// The text is not an expression the parser understands.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// An exponent (or factorial) is too large to evaluate safely.
    #[error("exponent or factorial too large")]
    TooLarge,
    /// The expression has no finite value at the sampled point (division by zero, overflow,
    /// a function outside its domain).
    #[error("not a finite number: {0}")]
    NotFinite(&'static str),
}
