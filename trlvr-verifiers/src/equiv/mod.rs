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
//!    - matrices need the same shape and equal cells; a cell written as a decimal with at
//!      least [`MIN_STATED_PLACES`] places also equals an exact cell that rounds to it at
//!      the places it states (`0.33` for `\frac13` in a vector, not `0.66` for `\frac23`);
//!    - equations (`=`, `\ne`) are equal when `lhs - rhs` of one is a non-zero constant
//!      multiple of the other's (`y = 2x+1` equals `2x + 1 = y` and `2y = 4x + 2`);
//!    - inequalities are first written with `<`/`\le` (`x > 3` becomes `3 < x`), then need
//!      the same symbol and `rhs - lhs` a *positive* multiple of the other's; chains
//!      (`1 < x \le 2`) need the same symbols and equal sides;
//!    - `x = 5` equals `5` (an equation with a lone variable on one side equals its other
//!      side; `f(x) = x + 1` names a function value and reads as such a variable);
//!    - an inequality in one variable, or in its distance from a point (`|x - 1| \le 3`,
//!      `1 \le |z| \le \frac32`), a list of inequalities (`x < -1 \text{ or } x > 2`),
//!      an interval and a union of intervals are compared as the intervals they describe,
//!      unmerged, with open and closed ends kept apart (`x \ge 2` is `[2, \infty)`);
//!    - a chain of equalities whose last side is a value answers that value
//!      (`x = 5+5+1 = 11` equals `11`), as does one that defines a variable
//!      (`y = 3x + 3x = 5x` answers `5x`, whatever its steps say), and against a single
//!      equation a chain stands for its first and last sides;
//!    - a decimal literal equals a constant that is not an integer when both round alike
//!      to [`ROUNDING_PLACES`] decimals, as math-verify rounds (`0.083333` equals
//!      `\frac{1}{12}`, `0.33` does not equal `\frac13`);
//!    - a decimal with at least [`MIN_SCALAR_PLACES`] places also equals an exact value
//!      that rounds to it at those places (`0.3333` is `\frac13`, `0.3333` rounded on
//!      purpose; `0.6666`, a cut-off, is not `\frac23`);
//!    - values labelled by names of letters answer the values (`AB = 4, CD = 5` is `4, 5`,
//!      `|AB| = 1` is `1`), and `p = 5, q = 2` answers the tuple `(5, 2)`;
//! 5. Against one value, commas between digits are decimal commas (`2,74` is `2.74`,
//!    `x = 0,5` is `x = 0.5`) unless exactly three digits follow one or several stand in
//!    one run of digits (`1,000` and `1,2,3` keep their meaning; see `decimal_comma`).
//!
//! [`matches_reference`], which [`crate::MathVerifier`] uses, knows which answer is the reference and
//! lets its shape settle a few ambiguities: a decimal comma is read in the response only;
//! a set or list answers a tuple (in its order) and a tuple answers a set in braces (in
//! any order) or a bare list (in its order); and a membership statement (`x \in (1, 2)`)
//! is not answered by an inequality.
//!
//! Deliberate choices: a percent sign is dropped, so `50\%` equals `50` but not `0.5`; a
//! whole answer `1,234` is one thousand two hundred and thirty-four (a list needs a space
//! or more than three digits after the comma to be read as two numbers); an ordered pair
//! `(1,2)` does not equal the bare list `1, 2` here (only [`matches_reference`] lets a
//! reference pair be answered by a list); and `a \approx b` is read as its exact side `a`
//! by normalisation.
//!
//! The structural rules are here; the intervals that relations describe are built in
//! `intervals`, relations are compared side by side in `relations`, and decimals are
//! rounded in `rounding`.

mod intervals;
mod relations;
mod rounding;

use intervals::{as_interval, intervals};
use relations::relations_equal;
pub use rounding::{MIN_SCALAR_PLACES, MIN_STATED_PLACES, ROUNDING_PLACES};
use rounding::{rounds_alike, within_stated_places, within_stated_precision};

use crate::answer::Answer;
use crate::eval::same_function;
use crate::expr::{Expr, Func, MAX_DEPTH};
use crate::lexer::RelOp;
use crate::normalize::normalize;

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
    compare(gold, pred, Roles::Either)
}

/// Whether the normalised response answer `pred` answers the normalised reference `gold`:
/// [`equivalent_normalized`], except where the reference's shape decides how to read an
/// ambiguous response, which needs to know which side is which (so it is not symmetric):
///
/// - a decimal comma (`0,5`) is read in the response only, when the reference is one
///   value; the reference's own commas stay a list or thousands separators, so a
///   reference `1,2` (two solutions) is never answered by `1.2`;
/// - a reference set `\{1, 2\}` is also answered by a tuple in any order, `(2, 1)`, as a
///   list of solutions in parentheses, and a reference tuple `(1, 2)` by a list in its
///   order (`\boxed{1}, \boxed{2}`), while [`equivalent`] keeps points and lists apart.
///
/// [`crate::MathVerifier`] (every preset) compares with this.
///
/// ```
/// use trlvr_verifiers::equiv::matches_reference;
///
/// assert!(matches_reference("0.5", "0,5"));
/// assert!(!matches_reference("1,2", "1.2"));
/// assert!(matches_reference(r"\{1,2\}", "(2,1)"));
/// assert!(matches_reference("(1,2)", "1, 2"));
/// assert!(!matches_reference("(1,2)", r"\{2,1\}"));
/// assert!(!matches_reference("[1,2]", "1, 2"));
/// ```
pub fn matches_reference(gold: &str, pred: &str) -> bool {
    compare(gold, pred, Roles::GoldThenPred)
}

/// Whether the comparison knows which answer is the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Roles {
    /// Either may be the reference: only symmetric rules apply.
    Either,
    /// The first answer is the reference, the second the response.
    GoldThenPred,
}

fn compare(gold: &str, pred: &str, roles: Roles) -> bool {
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
        (Ok(a), Ok(b)) => match roles {
            Roles::Either => answers_equal(&a, &b, 0) || decimal_comma(pred, &a) || decimal_comma(gold, &b),
            Roles::GoldThenPred => answers_reference(gold, &a, pred, &b),
        },
        _ => text_equal(gold, pred) || last_side_equal(gold, pred, roles),
    }
}

/// The rules of [`matches_reference`] for two parsed answers.
fn answers_reference(gold: &str, a: &Answer, pred: &str, b: &Answer) -> bool {
    // `x \in [1, 2]` asks for a set; an inequality that describes it is another answer.
    if is_membership(gold) && is_inequality(b) {
        return false;
    }
    // A list without braces keeps its order against a tuple, which states one.
    let unordered = gold.starts_with("\\{") || gold.starts_with('{') || gold.contains("\\pm");
    answers_equal(a, b, 0) || decimal_comma(pred, a) || set_answered_by_tuple(a, b, unordered)
}

/// `v \in S` (one variable, maybe with a subscript): a statement of membership.
fn is_membership(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first().is_some_and(u8::is_ascii_alphabetic));
    if i == 0 {
        return false;
    }
    if b.get(i) == Some(&b'_') {
        i += if b.get(i + 1) == Some(&b'{') { s[i..].find('}').map_or(b.len(), |c| c + 1) } else { 2 };
    }
    s.get(i..)
        .is_some_and(|r| r.starts_with("\\in") && !r[3..].starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// An inequality or chain of them (`1 < x \le 2`), or a list of such.
fn is_inequality(a: &Answer) -> bool {
    match a {
        Answer::Relation { ops, .. } => {
            ops.iter().any(|o| matches!(o, RelOp::Lt | RelOp::Le | RelOp::Gt | RelOp::Ge))
        }
        Answer::Set(items) => !items.is_empty() && items.iter().all(is_inequality),
        _ => false,
    }
}

/// When one answer is a derivation that does not parse (`9\&2 = \frac{\sqrt{27}}{4}`,
/// `\Rightarrow x = 3`) and the other has no relation, the derivation's last side (after
/// its last top-level `=`, `\Rightarrow` or `\implies`) is compared instead.
fn last_side_equal(gold: &str, pred: &str, roles: Roles) -> bool {
    match (last_side(gold), last_side(pred)) {
        (Some(g), None) => !g.is_empty() && compare(g, pred, roles),
        (None, Some(p)) => !p.is_empty() && compare(gold, p, roles),
        _ => false,
    }
}

/// A set or list against a tuple in parentheses with as many items (at least two), as the
/// reference's kind allows: a reference set `\{1, 2\}` is answered by the tuple's items in
/// any order (`(2, 1)`), a reference tuple `(1, 2)` by a list or set in its order
/// (`\boxed{1}, \boxed{2}`). Closed ends (`[1, 2]`) make an interval, which no list of
/// points answers.
fn set_answered_by_tuple(gold: &Answer, pred: &Answer, unordered: bool) -> bool {
    match (gold, pred) {
        (Answer::Set(x), Answer::Bracketed { open: '(', close: ')', items }) if x.len() == items.len() => {
            let in_order = || x.iter().zip(items).all(|(p, q)| answers_equal(p, q, 1));
            x.len() >= 2 && if unordered { same_members(x, items, 1) } else { in_order() }
        }
        (Answer::Bracketed { open: '(', close: ')', items }, Answer::Set(x)) if x.len() == items.len() => {
            x.len() >= 2 && items.iter().zip(x).all(|(p, q)| answers_equal(p, q, 1))
        }
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

/// `2,74` or `x = 0,5` against one value (a scalar or an equation): every comma between
/// digits reads as a decimal comma, unless a group of exactly three digits follows it or
/// it is one of several in one run of digits (`1,000`, `1,2,3` stay thousands and lists).
///
/// Why this is safe: against one value, an answer read as a list is never equal anyway,
/// so reading its comma as a decimal point can only turn "not equal" into "equal" when
/// its digits spell exactly that value; groups of three are ambiguous with thousands and
/// are left alone, so `1,000` never equals `1`. [`matches_reference`] reads commas this
/// way in the response only, so a reference list `1,2` still needs a list.
fn decimal_comma(s: &str, other: &Answer) -> bool {
    if !matches!(other, Answer::Expr(_) | Answer::Relation { .. }) {
        return false;
    }
    let Some(rewritten) = with_decimal_points(s) else { return false };
    Answer::parse(&rewritten).is_ok_and(|d| answers_equal(&d, other, 0))
}

/// `s` with its decimal commas written as points (see [`decimal_comma`]); `None` when it
/// has none, or a comma between digits that may be a thousands or list separator.
fn with_decimal_points(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let digits_at = |i: usize, forward: bool| {
        let run = |j: &usize| b[*j].is_ascii_digit();
        if forward { (i..b.len()).take_while(run).count() } else { (0..i).rev().take_while(run).count() }
    };
    let mut out = s.as_bytes().to_vec();
    let mut found = false;
    for i in 1..b.len().saturating_sub(1) {
        if b[i] != b',' || !b[i - 1].is_ascii_digit() || !b[i + 1].is_ascii_digit() {
            continue;
        }
        let (before, after) = (digits_at(i, false), digits_at(i + 1, true));
        let chained = |j: Option<usize>| j.is_some_and(|j| b.get(j) == Some(&b','));
        let in_run = chained((i - before).checked_sub(1)) || chained(Some(i + 1 + after));
        if after == 3 || in_run {
            return None;
        }
        out[i] = b'.';
        found = true;
    }
    found.then(|| String::from_utf8(out).unwrap_or_default())
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
        (Answer::Expr(x), Answer::Expr(y)) => {
            same_function(x, y) || rounds_alike(x, y) || within_stated_places(x, y, MIN_SCALAR_PLACES)
        }
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
            let cell = |p: &Answer, q: &Answer| answers_equal(p, q, d) || within_stated_precision(p, q);
            r1.len() == r2.len()
                && r1
                    .iter()
                    .zip(r2)
                    .all(|(x, y)| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| cell(p, q)))
        }
        (Answer::Relation { exprs: e1, ops: o1 }, Answer::Relation { exprs: e2, ops: o2 }) => {
            relations_equal(e1, o1, e2, o2) || same_intervals(a, b, d)
        }
        (Answer::Relation { exprs, ops }, other) | (other, Answer::Relation { exprs, ops }) => {
            relation_vs_other(exprs, ops, other, d) || same_intervals(a, b, d)
        }
        (Answer::Set(x), Answer::Bracketed { open: '(', close: ')', items })
        | (Answer::Bracketed { open: '(', close: ')', items }, Answer::Set(x)) => {
            labelled_tuple(x, items, d) || same_intervals(a, b, d)
        }
        _ => same_intervals(a, b, d),
    }
}

/// One side as a union of intervals, for answers that describe a set of reals in
/// different ways: an inequality (`x > 2`, `1 \le |z| \le \frac32`), a list of
/// inequalities joined by "or" (`x < -1, x > 2` after normalisation), an interval or a
/// union of intervals. Unions are compared as sets of intervals (not merged), so
/// `x \ge 2` answers `[2, \infty)` and `1 \le |z| \le \frac32` answers `[-\frac32, -1]
/// \cup [1, \frac32]`, while open and closed ends must still match.
fn same_intervals(a: &Answer, b: &Answer, d: usize) -> bool {
    let described = |x: &Answer| matches!(x, Answer::Relation { .. } | Answer::Set(_));
    if !described(a) && !described(b) {
        return false;
    }
    match (intervals(a), intervals(b)) {
        (Some((v1, i1)), Some((v2, i2))) => {
            (v1.is_none() || v2.is_none() || v1 == v2) && same_members(&i1, &i2, d)
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

/// `p = 5, q = 2` against the tuple `(5, 2)`: values labelled by variables, in the
/// tuple's order.
fn labelled_tuple(labelled: &[Answer], items: &[Answer], d: usize) -> bool {
    let value = |a: &Answer| match a {
        Answer::Relation { exprs, ops } if ops.as_slice() == [RelOp::Eq] && exprs[0].as_var().is_some() => {
            Some(Answer::Expr(exprs[1].clone()))
        }
        _ => None,
    };
    labelled.len() == items.len()
        && labelled.len() >= 2
        && labelled.iter().zip(items).all(|(l, i)| value(l).is_some_and(|v| answers_equal(&v, i, d)))
}

/// A name made of letters only (`x`, `AB`, `|AB|`, `x_1`): what labels a value in
/// `AB = 4`.
fn is_label(e: &Expr) -> bool {
    match e {
        Expr::Var(_) => true,
        Expr::Mul(xs) => xs.iter().all(|x| matches!(x, Expr::Var(_))),
        Expr::Func(Func::Abs, x) => is_label(x),
        _ => false,
    }
}

/// A relation against a non-relation: `x = 5` against `5`, `x > 3` against `(3, \infty)`.
fn relation_vs_other(exprs: &[Expr], ops: &[RelOp], other: &Answer, d: usize) -> bool {
    // A chain of equalities ending in a value answers that value (`x = 5+5+1 = 11`), and
    // an identity answers the expression it rewrites (`(x+1)^2 = x^2+2x+1`).
    if let (Answer::Expr(_), Some(last)) = (other, exprs.last())
        && ops.iter().all(|o| *o == RelOp::Eq)
    {
        let value = !last.has_vars() && (exprs.len() > 2 || is_label(&exprs[0]));
        // `y = 3x + 3x = 5x` defines `y` by its last side, whatever the steps before it say.
        let definition = exprs.len() > 2 && exprs[0].as_var().is_some();
        let identity = exprs.windows(2).all(|w| same_function(&w[0], &w[1]));
        if (value || definition || identity) && answers_equal(&Answer::Expr(last.clone()), other, d) {
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
