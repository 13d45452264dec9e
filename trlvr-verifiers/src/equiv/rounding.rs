//! math-verify's rounding: a decimal equals an exact value that rounds to it.

use crate::answer::Answer;
use crate::eval::{Value, to_complex, value};
use crate::expr::Expr;
use crate::num::{Complex, Rational};

/// Decimal places kept when a decimal is compared with an exact value (math-verify's
/// default `float_rounding`).
pub const ROUNDING_PLACES: i32 = 6;

/// math-verify's rounding: a decimal literal equals a constant that is not an integer when
/// both round to the same [`ROUNDING_PLACES`] decimal places (`0.083333` and
/// `0.0833333333333333` both equal `\frac{1}{12}`; `0.33` does not equal `\frac13`, nor
/// `3.0000001` equal `3`).
pub(super) fn rounds_alike(a: &Expr, b: &Expr) -> bool {
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

/// Fewest decimal places a matrix entry must state to be rounded like math-verify: one
/// place would let `0.3` stand for anything from `0.25` to `0.35`.
pub const MIN_STATED_PLACES: u32 = 2;

/// A matrix or vector entry written as a decimal answers an exact entry that rounds to it
/// at the precision the decimal states (math-verify's rule, per entry): `0.33` answers
/// `\frac13` and `0.67` answers `\frac23`, but `0.66` (cut off, not rounded) does not,
/// nor does `0.33` answer `\frac23`. At least [`MIN_STATED_PLACES`] places are needed.
pub(super) fn within_stated_precision(a: &Answer, b: &Answer) -> bool {
    let (Answer::Expr(x), Answer::Expr(y)) = (a, b) else { return false };
    within_stated_places(x, y, MIN_STATED_PLACES)
}

/// Fewest decimal places a decimal outside a matrix must state to stand for an exact value
/// that rounds to it (`0.3333` for `\frac13`, `2.6667` for `\frac83`): four places are an
/// answer rounded on purpose, while `0.33` or `3.14` may be a cruder estimate.
pub const MIN_SCALAR_PLACES: u32 = 4;

/// Whether either expression is a decimal literal with at least `min_places` places that
/// the other, an exact value, rounds to at those places.
pub(super) fn within_stated_places(x: &Expr, y: &Expr, min_places: u32) -> bool {
    rounds_to_literal(x, y, min_places) || rounds_to_literal(y, x, min_places)
}

/// Whether `exact` rounds to the decimal literal `lit` at the places `lit` states
/// (halves away from zero).
fn rounds_to_literal(lit: &Expr, exact: &Expr, min_places: u32) -> bool {
    let Some((q, places)) = decimal_literal(lit) else { return false };
    if decimal_literal(exact).is_some() || exact.has_vars() || !(min_places..=15).contains(&u32::from(places))
    {
        return false;
    }
    let Ok(v) = value(exact, 0) else { return false };
    let v = to_complex(v);
    let scale = 10f64.powi(i32::from(places));
    v.is_real() && (v.re * scale).round() == (q.to_f64() * scale).round()
}

/// The value and stated places of a literal with a fractional part (`0.33`, `-1.50`).
fn decimal_literal(e: &Expr) -> Option<(Rational, u8)> {
    match e {
        Expr::Num { exact: Some(q), places, .. } if !q.is_integer() => Some((*q, *places)),
        Expr::Neg(x) => decimal_literal(x).and_then(|(q, p)| Some((q.checked_neg()?, p))),
        _ => None,
    }
}
