//! String-level normalisation of an extracted answer.
//!
//! [`normalize`] removes LaTeX noise that never changes an answer's meaning and rewrites
//! the notations that do into one canonical spelling, so that the exact-match shortcut of
//! [`crate::equivalent`] fires as often as possible and the parser sees a small dialect.
//! It is applied repeatedly until nothing changes, which makes it idempotent by
//! construction: `normalize(&normalize(s)) == normalize(s)`. (Input nested so deeply that
//! the rewrites do not settle within a few passes is returned trimmed but otherwise
//! unchanged, which keeps that promise.)
//!
//! The rewrites of one pass are grouped by what they read: `backslashes` (LaTeX escaped
//! twice), `unicode` (symbols and digits of other scripts), `numbers` (how a number is
//! written: separators, repeating decimals, mixed numbers, degrees), `commands` (LaTeX
//! commands and their arguments) and `words` (what stands around the value: units, an
//! approximation, an option letter, spacing).

mod backslashes;
mod commands;
mod numbers;
#[cfg(test)]
mod tests;
mod unicode;
mod words;

pub use backslashes::undouble_backslashes;
pub(crate) use commands::matching_brace;
use commands::{commands, unbrace_scripts};
use numbers::{mixed_slash, repeating_decimals, thousands_bang, thousands_plain, trig_degrees};
pub use unicode::ascii_digit;
use unicode::unicode;
use words::{approximation, choice_letter, spaces, strip_units};

/// Inputs longer than this (in bytes, after trimming) are returned trimmed but otherwise
/// untouched: no real answer is that long, and the rewriting passes are not free.
pub const MAX_NORMALIZE_LEN: usize = 4096;

/// Fixed-point iterations before giving up (each pass unwraps one level of nesting, so
/// real inputs settle in two or three).
const MAX_PASSES: usize = 16;

/// Normalises an extracted answer: doubled backslashes ([`undouble_backslashes`]), LaTeX
/// spacing, `\left`/`\right`, `$`, `\text{}` and
/// friends, degrees, percent and currency signs, thousands separators, units and words
/// after a number, `\dfrac`/`\tfrac`, `\frac12`/`\sqrt2` shorthands, the `2 1/2` mixed
/// number, repeating decimals `0.\overline{3}`, multiple-choice letters `(B)`, a trailing
/// period, and spaces.
///
/// ```
/// use trlvr_verifiers::normalize;
///
/// assert_eq!(normalize(r"\$1{,}000.\ "), "1000");
/// assert_eq!(normalize(r"\left( 3, \dfrac12 \right)"), r"(3,\frac{1}{2})");
/// assert_eq!(normalize(r"90^\circ"), "90");
/// assert_eq!(normalize(r"\text{(B)}"), "B");
/// assert_eq!(normalize("x = 5 apples"), "x=5");
/// ```
pub fn normalize(input: &str) -> String {
    let trimmed = input.trim();
    if trimmed.len() > MAX_NORMALIZE_LEN {
        return trimmed.to_string();
    }
    let mut cur = trimmed.to_string();
    for _ in 0..MAX_PASSES {
        let next = pass(&cur);
        if next == cur {
            return cur;
        }
        cur = next;
    }
    // Pathological nesting that does not settle: give the input back (trimmed), which keeps
    // `normalize` idempotent, as the same input never settles again.
    trimmed.to_string()
}

/// One round of every rewrite.
fn pass(s: &str) -> String {
    let s = approximation(&unicode(&undouble_backslashes(s)));
    let s = trig_degrees(&s);
    let s = s
        .replace("^{\\circ}", "")
        .replace("^\\circ", "")
        .replace("{,}", ",")
        .replace("\\$", "")
        .replace('$', "");
    let s = thousands_bang(&s);
    let s = repeating_decimals(&s);
    let s = commands(&s);
    let s = s.replace(['%', '~'], " ");
    let s = unbrace_scripts(&s);
    let s = s.replace(" or ", ",").replace(" and ", ",");
    let s = s.trim().trim_end_matches(['.', ',', ';', ' ']).to_string();
    let s = strip_units(&s);
    let s = spaces(&s);
    let s = s.trim_end_matches(['.', ',', ';']).to_string();
    let s = choice_letter(&s);
    let s = thousands_plain(&s);
    mixed_slash(&s)
}
