//! Equivalence of two answers.
//!
//! The rules, in order:
//!
//! 1. Both answers are [normalised](crate::normalize()); identical strings are equal, and an
//!    empty answer equals nothing.
//! 2. Answers longer than [`MAX_ANSWER_LEN`] bytes after normalisation are only equal
//!    when identical (step 1): nothing that long is parsed.
//! 3. Both are parsed into an [`Answer`]. If either cannot be parsed (plain text such as
//!    `Evelyn`, numbers in another base such as `2516_8`), the normalised strings are
//!    compared ignoring case.
//! 4. Shapes are compared structurally:
//!    - scalars are the same function of their free variables (see [`crate::eval`]: exact
//!      rationals where possible, otherwise relative tolerance `1e-6` at four sample points);
//!    - bracketed lists need the same brackets on both ends and equal items in order, so the
//!      tuple `(1,2)` differs from `(2,1)` and the interval `(1,2]` from `[1,2]`;
//!    - sets `\{..\}`, bare lists such as `1, 2` (a list of solutions) and unions of
//!      intervals are unordered and ignore repeats: every item of one side must equal some
//!      item of the other; a one-item set equals its item;
//!    - matrices need the same shape and equal cells;
//!    - equations (`=`, `\ne`) are equal when `lhs - rhs` of one is a non-zero constant
//!      multiple of the other's (`y = 2x+1` equals `2x + 1 = y` and `2y = 4x + 2`);
//!    - inequalities are first written with `<`/`\le` (`x > 3` becomes `3 < x`), then need
//!      the same symbol and `rhs - lhs` a *positive* multiple of the other's; chains
//!      (`1 < x \le 2`) need the same symbols and equal sides;
//!    - `x = 5` equals `5` (an equation with a lone variable on one side equals its other
//!      side), and a one-variable inequality equals the interval it describes (`x \ge 2` is
//!      `[2, \infty)`).
//!
//!    - a chain of equalities whose last side is a value answers that value
//!      (`x = 5+5+1 = 11` equals `11`);
//!    - a decimal literal equals a constant that is not an integer when both round alike
//!      to [`ROUNDING_PLACES`] decimals, as math-verify rounds (`0.083333` equals
//!      `\frac{1}{12}`, `0.33` does not equal `\frac13`);
//! 5. A whole answer `2,74` is read as `2.74` when the other answer is a single number
//!    (it cannot be a list there).
//!
//! Deliberate choices: a percent sign is dropped, so `50\%` equals `50` but not `0.5`; a
//! whole answer `1,234` is one thousand two hundred and thirty-four (a list needs a space
//! or more than three digits after the comma to be read as two numbers); an ordered pair
//! `(1,2)` does not equal the bare list `1, 2`; and `a \approx b` is read as its exact
//! side `a` by normalisation.

use crate::answer::Answer;
use crate::eval::{Value, close, points_needed, same, same_function, to_complex, value};
use crate::expr::{Expr, MAX_DEPTH};
use crate::lexer::RelOp;
use crate::normalize::normalize;
use crate::num::Complex;

/// Longest normalised answer (in bytes) that is parsed at all.
pub const MAX_ANSWER_LEN: usize = 2000;

/// Whether two extracted answers are mathematically the same (see the [module
/// docs](self) for the rules). Symmetric, reflexive for non-empty answers, and never
/// panics; pathological input is simply "not equal".
///
/// ```
/// use trlvr_verifiers::equivalent;
///
/// assert!(equivalent(r"\frac{1}{2}", "0.5"));
/// assert!(equivalent(r"\{1,2\}", r"\{2,1\}"));
/// assert!(!equivalent("(1,2)", "(2,1)"));
/// assert!(!equivalent("(1,2]", "[1,2]"));
/// assert!(equivalent("y = 2x+1", "y = 1+2x"));
/// ```
pub fn equivalent(gold: &str, pred: &str) -> bool {
    equivalent_normalized(&normalize(gold), &normalize(pred))
}

/// [`equivalent`] for answers that are already normalised.
pub fn equivalent_normalized(gold: &str, pred: &str) -> bool {
    if gold.is_empty() || pred.is_empty() {
        return false;
    }
    if gold == pred {
        return true;
    }
    if gold.len() > MAX_ANSWER_LEN || pred.len() > MAX_ANSWER_LEN {
        return false;
    }
    match (Answer::parse(gold), Answer::parse(pred)) {
        (Ok(a), Ok(b)) => answers_equal(&a, &b, 0) || decimal_comma(pred, &a) || decimal_comma(gold, &b),
        _ => text_equal(gold, pred) || last_side_equal(gold, pred),
    }
}

/// When one answer is a derivation that does not parse (`9\&2 = \frac{\sqrt{27}}{4}`,
/// `\Rightarrow x = 3`) and the other has no relation, the derivation's last side (after
/// its last top-level `=`, `\Rightarrow` or `\implies`) is compared instead.
fn last_side_equal(gold: &str, pred: &str) -> bool {
    match (last_side(gold), last_side(pred)) {
        (Some(g), None) => !g.is_empty() && equivalent_normalized(g, pred),
        (None, Some(p)) => !p.is_empty() && equivalent_normalized(gold, p),
        _ => false,
    }
}

/// The text after the last top-level derivation step of `s`, if any.
fn last_side(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut cut = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth -= 1,
            b'=' if depth == 0 => cut = Some(i + 1),
            b'\\' if depth == 0 => {
                for step in ["\\Rightarrow", "\\implies"] {
                    if s[i..].starts_with(step) {
                        cut = Some(i + step.len());
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    cut.map(|c| s[c..].trim())
}

/// `2,74` against a scalar: a single comma between digits that is not a thousands
/// separator (normalisation has removed those) is a decimal comma when the other answer
/// is one number, so cannot be a list.
fn decimal_comma(s: &str, other: &Answer) -> bool {
    let Answer::Expr(_) = other else { return false };
    let Some((int, frac)) = s.split_once(',') else { return false };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    if !digits(int.strip_prefix('-').unwrap_or(int)) || !digits(frac) {
        return false;
    }
    Answer::parse(&format!("{int}.{frac}")).is_ok_and(|d| answers_equal(&d, other, 0))
}

/// Decimal places kept when a decimal is compared with an exact value (math-verify's
/// default `float_rounding`).
pub const ROUNDING_PLACES: i32 = 6;

/// math-verify's rounding: a decimal literal equals a constant that is not an integer when
/// both round to the same [`ROUNDING_PLACES`] decimal places (`0.083333` and
/// `0.0833333333333333` both equal `\frac{1}{12}`; `0.33` does not equal `\frac13`, nor
/// `3.0000001` equal `3`).
fn rounds_alike(a: &Expr, b: &Expr) -> bool {
    let decimal = |e: &Expr| match e {
        Expr::Num { exact, .. } => exact.is_none_or(|q| !q.is_integer()),
        Expr::Neg(x) => matches!(&**x, Expr::Num { exact, .. } if exact.is_none_or(|q| !q.is_integer())),
        _ => false,
    };
    if !(decimal(a) || decimal(b)) || a.has_vars() || b.has_vars() {
        return false;
    }
    let (Ok(x), Ok(y)) = (value(a, 0), value(b, 0)) else { return false };
    let integer = |v: &Value| matches!(v, Value::Exact(q) if q.is_integer());
    if integer(&x) || integer(&y) {
        return false;
    }
    let (x, y) = (to_complex(x), to_complex(y));
    let scale = 10f64.powi(ROUNDING_PLACES);
    let round = |z: Complex| (z.re * scale).round();
    x.is_real() && y.is_real() && x.re.abs() < 1e9 && round(x) == round(y)
}

/// Case-insensitive text comparison (spaces are already canonical after normalisation).
fn text_equal(a: &str, b: &str) -> bool {
    a.to_lowercase() == b.to_lowercase()
}

/// Structural comparison of parsed answers.
pub fn answers_equal(a: &Answer, b: &Answer, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let d = depth + 1;
    match (a, b) {
        (Answer::Expr(x), Answer::Expr(y)) => same_function(x, y) || rounds_alike(x, y),
        (Answer::Set(x), Answer::Set(y)) | (Answer::Union(x), Answer::Union(y)) => same_members(x, y, d),
        (Answer::Set(x), other) if x.len() == 1 => answers_equal(&x[0], other, d),
        (other, Answer::Set(y)) if y.len() == 1 => answers_equal(other, &y[0], d),
        (
            Answer::Bracketed { open: o1, close: c1, items: i1 },
            Answer::Bracketed { open: o2, close: c2, items: i2 },
        ) => {
            o1 == o2
                && c1 == c2
                && i1.len() == i2.len()
                && i1.iter().zip(i2).all(|(x, y)| answers_equal(x, y, d))
        }
        (Answer::Matrix(r1), Answer::Matrix(r2)) => {
            r1.len() == r2.len()
                && r1
                    .iter()
                    .zip(r2)
                    .all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| answers_equal(p, q, d)))
        }
        (Answer::Relation { exprs: e1, ops: o1 }, Answer::Relation { exprs: e2, ops: o2 }) => {
            relations_equal(e1, o1, e2, o2)
        }
        (Answer::Relation { exprs, ops }, other) | (other, Answer::Relation { exprs, ops }) => {
            relation_vs_other(exprs, ops, other, d)
        }
        _ => false,
    }
}

/// Unordered comparison that ignores repeats.
fn same_members(x: &[Answer], y: &[Answer], d: usize) -> bool {
    let covered =
        |from: &[Answer], to: &[Answer]| from.iter().all(|p| to.iter().any(|q| answers_equal(p, q, d)));
    !x.is_empty() && !y.is_empty() && covered(x, y) && covered(y, x)
}

/// Writes a relation with `<`/`\le` when it only uses `>`/`\ge`.
fn oriented<'a>(exprs: &'a [Expr], ops: &[RelOp]) -> (Vec<&'a Expr>, Vec<RelOp>) {
    let greater = !ops.is_empty() && ops.iter().all(|o| matches!(o, RelOp::Gt | RelOp::Ge));
    if greater {
        (exprs.iter().rev().collect(), ops.iter().rev().map(|o| o.flip()).collect())
    } else {
        (exprs.iter().collect(), ops.to_vec())
    }
}

fn relations_equal(e1: &[Expr], o1: &[RelOp], e2: &[Expr], o2: &[RelOp]) -> bool {
    let (e1, o1) = oriented(e1, o1);
    let (e2, o2) = oriented(e2, o2);
    if o1 != o2 || e1.len() != e2.len() {
        return false;
    }
    if e1.len() == 2 {
        let positive = matches!(o1[0], RelOp::Lt | RelOp::Le);
        return proportional(e1[0], e1[1], e2[0], e2[1], positive);
    }
    e1.iter().zip(&e2).all(|(x, y)| same_function(x, y))
}

/// Whether `r1 - l1 = k (r2 - l2)` for one constant `k` (non-zero; positive if asked) at
/// every sample point. Two identities (both sides always equal) also count.
fn proportional(l1: &Expr, r1: &Expr, l2: &Expr, r2: &Expr, positive: bool) -> bool {
    let mut ratio: Option<Complex> = None;
    let mut compared = 0;
    for k in 0..points_needed(&[l1, r1, l2, r2]) {
        let (Ok(a1), Ok(b1), Ok(a2), Ok(b2)) = (value(l1, k), value(r1, k), value(l2, k), value(r2, k))
        else {
            continue;
        };
        compared += 1;
        let (zero1, zero2) = (same(a1, b1), same(a2, b2));
        if zero1 != zero2 {
            return false;
        }
        if zero1 {
            continue;
        }
        let d1 = to_complex(b1) - to_complex(a1);
        let d2 = to_complex(b2) - to_complex(a2);
        let r = d1 / d2;
        match ratio {
            None => ratio = Some(r),
            Some(r0) if !close(r, r0) => return false,
            Some(_) => {}
        }
    }
    if compared == 0 {
        return false;
    }
    match ratio {
        Some(r) if positive => r.is_real() && r.re > 0.0,
        _ => true,
    }
}

/// A relation against a non-relation: `x = 5` against `5`, `x > 3` against `(3, \infty)`.
fn relation_vs_other(exprs: &[Expr], ops: &[RelOp], other: &Answer, d: usize) -> bool {
    // A chain of equalities ending in a value answers that value (`x = 5+5+1 = 11`), and
    // an identity answers the expression it rewrites (`(x+1)^2 = x^2+2x+1`).
    if let (Answer::Expr(_), Some(last)) = (other, exprs.last())
        && ops.iter().all(|o| *o == RelOp::Eq)
    {
        let value = !last.has_vars() && (exprs.len() > 2 || exprs[0].as_var().is_some());
        let identity = exprs.windows(2).all(|w| same_function(&w[0], &w[1]));
        if (value || identity) && answers_equal(&Answer::Expr(last.clone()), other, d) {
            return true;
        }
    }
    if let ([l, r], [RelOp::Eq], Answer::Expr(_)) = (exprs, ops, other) {
        let side = if l.as_var().is_some() {
            r
        } else if r.as_var().is_some() {
            l
        } else {
            return false;
        };
        return answers_equal(&Answer::Expr(side.clone()), other, d);
    }
    if let Answer::Bracketed { .. } = other
        && let Some(interval) = as_interval(exprs, ops)
    {
        return answers_equal(&interval, other, d);
    }
    false
}

/// The interval described by `x < c`, `c \le x`, `a < x \le b` (after orientation).
fn as_interval(exprs: &[Expr], ops: &[RelOp]) -> Option<Answer> {
    let (e, o) = oriented(exprs, ops);
    if o.iter().any(|op| !matches!(op, RelOp::Lt | RelOp::Le)) {
        return None;
    }
    let bound = |e: &Expr| Answer::Expr(e.clone());
    let ends = |lo: Answer, hi: Answer, lo_closed: bool, hi_closed: bool| Answer::Bracketed {
        open: if lo_closed { '[' } else { '(' },
        close: if hi_closed { ']' } else { ')' },
        items: vec![lo, hi],
    };
    let minus_inf = Answer::Expr(Expr::Neg(Box::new(Expr::Inf)));
    match (e.as_slice(), o.as_slice()) {
        ([v, c], [op]) if v.as_var().is_some() => Some(ends(minus_inf, bound(c), false, *op == RelOp::Le)),
        ([c, v], [op]) if v.as_var().is_some() => {
            Some(ends(bound(c), Answer::Expr(Expr::Inf), *op == RelOp::Le, false))
        }
        ([a, v, b], [o1, o2]) if v.as_var().is_some() => {
            Some(ends(bound(a), bound(b), *o1 == RelOp::Le, *o2 == RelOp::Le))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relations() {
        assert!(equivalent("x > 3", "3 < x"));
        assert!(!equivalent("x > 3", "x < 3"));
        assert!(!equivalent("x > 3", r"x \ge 3"));
        assert!(equivalent(r"x \ge 2", r"[2, \infty)"));
        assert!(equivalent(r"1 < x \le 2", "(1,2]"));
        assert!(equivalent("x = 5", "5"));
        assert!(equivalent("5x - 7y + 11z + 4 = 0", "-5x+7y-11z-4=0"));
        assert!(!equivalent("y = 2x", "y = 3x"));
    }
}
