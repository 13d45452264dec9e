//! Evaluation of [`Expr`] at deterministic sample points, exactly when possible.
//!
//! Two expressions are judged equal when they agree at [`POINTS`] sample points, each of
//! which gives every free variable a pseudo-random rational value in about `(0.2, 3.2)` (denominator 1009, so
//! never a "nice" number).
//! The value of a variable depends only on its name and the point index (a fixed hash, no
//! global random state), so both sides always see the same assignment and every run gives
//! the same verdict.
//!
//! At each point the evaluator first tries exact `i128` rational arithmetic (numbers,
//! `+ - * /`, integer powers, factorials, binomials, `|x|`, floor, ceiling). When both sides
//! are exact they must be identical, so `1000000` never equals `1000001`. Otherwise both
//! are evaluated in complex floating point and compared with a relative tolerance of
//! [`REL_TOL`] (`1e-6`) plus an absolute tolerance of [`ABS_TOL`] (`1e-9`) for values near
//! zero. Exponents beyond [`MAX_EXPONENT`], factorials beyond 170, overflow and division by
//! zero are errors, and an error on one side only means "not equal".

use crate::error::VerifyError;
use crate::expr::{Expr, Func};
use crate::num::{Complex, Rational};

/// Sample points per comparison.
pub const POINTS: usize = 4;
/// Relative tolerance of floating-point comparison.
pub const REL_TOL: f64 = 1e-6;
/// Absolute tolerance of floating-point comparison (matters only near zero).
pub const ABS_TOL: f64 = 1e-9;
/// Largest exponent magnitude evaluated in floating point.
pub const MAX_EXPONENT: f64 = 10_000.0;

const SEED: u64 = 0x7472_6c76_725f_6d61; // "trlvr_ma"

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The value of variable `name` at sample point `k`: `n/1009` with `200 <= n < 3200`.
pub fn sample(name: &str, k: usize) -> Rational {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let r = splitmix64(h ^ SEED ^ (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    Rational::new(200 + i128::from(r % 3000), 1009).unwrap_or(Rational::int(1))
}

/// Exact value at point `k`, or `None` when the expression leaves the rationals (or
/// overflows `i128`).
pub fn exact(e: &Expr, k: usize) -> Option<Rational> {
    Some(match e {
        Expr::Num { exact, .. } => (*exact)?,
        Expr::Var(v) => sample(v, k),
        Expr::Pi | Expr::E | Expr::I | Expr::Inf => return None,
        Expr::Neg(a) => exact(a, k)?.checked_neg()?,
        Expr::Add(xs) => {
            let mut acc = Rational::int(0);
            for x in xs {
                acc = acc.checked_add(exact(x, k)?)?;
            }
            acc
        }
        Expr::Mul(xs) => {
            let mut acc = Rational::int(1);
            for x in xs {
                acc = acc.checked_mul(exact(x, k)?)?;
            }
            acc
        }
        Expr::Div(a, b) => exact(a, k)?.checked_mul(exact(b, k)?.checked_recip()?)?,
        Expr::Pow(a, b) => {
            let p = exact(b, k)?;
            if !p.is_integer() {
                return None;
            }
            exact(a, k)?.checked_powi(p.numer())?
        }
        Expr::Factorial(a) => {
            let n = exact(a, k)?;
            if !n.is_integer() || !(0..=33).contains(&n.numer()) {
                return None;
            }
            Rational::int((1..=n.numer()).product())
        }
        Expr::Binom(n, r) => {
            let (n, r) = (exact(n, k)?, exact(r, k)?);
            if !n.is_integer() || !r.is_integer() || n.numer() < 0 || r.numer() < 0 || r.numer() > 200 {
                return None;
            }
            if r.numer() > n.numer() {
                return Some(Rational::int(0));
            }
            let mut acc = Rational::int(1);
            for j in 0..r.numer() {
                acc = acc.checked_mul(Rational::new(n.numer() - j, j + 1)?)?;
            }
            acc
        }
        Expr::Func(Func::Abs, a) => {
            let v = exact(a, k)?;
            if v.numer() < 0 { v.checked_neg()? } else { v }
        }
        Expr::Func(f @ (Func::Floor | Func::Ceil), a) => {
            let v = exact(a, k)?;
            let fl = v.numer().div_euclid(v.denom());
            let up = if *f == Func::Ceil && !v.is_integer() { 1 } else { 0 };
            Rational::int(fl + up)
        }
        Expr::Root(..) | Expr::Log(..) | Expr::Func(..) => return None,
    })
}

/// Floating-point value at point `k`.
///
/// # Errors
/// [`VerifyError::TooLarge`] for huge exponents and factorials or overflow,
/// [`VerifyError::NotFinite`] for division by zero and functions outside their domain.
pub fn float(e: &Expr, k: usize) -> Result<Complex, VerifyError> {
    let v = eval_f(e, k)?;
    if v.re.is_nan() || v.im.is_nan() {
        return Err(VerifyError::NotFinite("undefined"));
    }
    Ok(v)
}

fn real_arg(z: Complex, what: &'static str) -> Result<f64, VerifyError> {
    if z.is_real() { Ok(z.re) } else { Err(VerifyError::NotFinite(what)) }
}

fn checked(v: Complex, inputs_finite: bool) -> Result<Complex, VerifyError> {
    if inputs_finite && !v.is_finite() { Err(VerifyError::TooLarge) } else { Ok(v) }
}

fn integer(z: Complex) -> Option<i64> {
    if z.is_real() && z.re.fract() == 0.0 && z.re.abs() <= MAX_EXPONENT { Some(z.re as i64) } else { None }
}

/// Floating-point value at point `k`, before the check for undefined results.
fn eval_f(e: &Expr, k: usize) -> Result<Complex, VerifyError> {
    Ok(match e {
        Expr::Num { approx, .. } => Complex::real(*approx),
        Expr::Var(v) => Complex::real(sample(v, k).to_f64()),
        Expr::Pi => Complex::real(std::f64::consts::PI),
        Expr::E => Complex::real(std::f64::consts::E),
        Expr::I => Complex::I,
        Expr::Inf => Complex::real(f64::INFINITY),
        Expr::Neg(a) => -eval_f(a, k)?,
        Expr::Add(xs) => {
            let mut acc = Complex::real(0.0);
            for x in xs {
                acc = acc + eval_f(x, k)?;
            }
            acc
        }
        Expr::Mul(xs) => {
            let mut acc = Complex::real(1.0);
            for x in xs {
                acc = acc * eval_f(x, k)?;
            }
            acc
        }
        Expr::Div(a, b) => divide(eval_f(a, k)?, eval_f(b, k)?)?,
        Expr::Pow(a, b) => power(eval_f(a, k)?, eval_f(b, k)?)?,
        Expr::Root(n, a) => root(eval_f(n, k)?, eval_f(a, k)?)?,
        Expr::Log(b, a) => log(eval_f(b, k)?, eval_f(a, k)?)?,
        Expr::Factorial(a) => factorial(eval_f(a, k)?)?,
        Expr::Binom(n, r) => binomial(eval_f(n, k)?, eval_f(r, k)?)?,
        Expr::Func(f, a) => func(*f, eval_f(a, k)?)?,
    })
}

fn divide(a: Complex, b: Complex) -> Result<Complex, VerifyError> {
    if b.abs() == 0.0 {
        return Err(VerifyError::NotFinite("division by zero"));
    }
    Ok(a / b)
}

/// `a^b`, by squaring for whole exponents, so that a negative base stays real (`(-2)^3`).
fn power(a: Complex, b: Complex) -> Result<Complex, VerifyError> {
    if b.re.abs() > MAX_EXPONENT || b.im.abs() > MAX_EXPONENT {
        return Err(VerifyError::TooLarge);
    }
    let v = match integer(b) {
        Some(n) => a.powi(n),
        None => a.pow(b),
    };
    checked(v, a.is_finite())
}

/// The `n`th root of `a`; odd roots of negative reals are real (`\sqrt[3]{-8} = -2`).
fn root(n: Complex, a: Complex) -> Result<Complex, VerifyError> {
    Ok(match integer(n) {
        Some(2) => a.sqrt(),
        Some(m) if m % 2 != 0 && a.im == 0.0 && a.re < 0.0 => Complex::real(-(-a.re).powf(1.0 / m as f64)),
        _ if n.abs() == 0.0 => return Err(VerifyError::NotFinite("zeroth root")),
        _ => a.pow(Complex::real(1.0) / n),
    })
}

/// `\log_b a`.
fn log(b: Complex, a: Complex) -> Result<Complex, VerifyError> {
    if a.abs() == 0.0 || b.abs() == 0.0 {
        return Err(VerifyError::NotFinite("log of zero"));
    }
    Ok(a.ln() / b.ln())
}

/// `n!` for whole `n` up to 170 (the last that fits a double).
fn factorial(n: Complex) -> Result<Complex, VerifyError> {
    let n = real_arg(n, "factorial")?;
    if n.fract() != 0.0 || n < 0.0 {
        return Err(VerifyError::NotFinite("factorial"));
    }
    if n > 170.0 {
        return Err(VerifyError::TooLarge);
    }
    Ok(Complex::real((1..=n as u32).map(f64::from).product()))
}

/// `\binom{n}{r}` for whole `r` up to 1000 (any real `n`).
fn binomial(n: Complex, r: Complex) -> Result<Complex, VerifyError> {
    let n = real_arg(n, "binomial")?;
    let r = real_arg(r, "binomial")?;
    if r.fract() != 0.0 || !(0.0..=1000.0).contains(&r) {
        return Err(VerifyError::NotFinite("binomial"));
    }
    let mut acc = 1.0;
    for j in 0..r as u32 {
        acc = acc * (n - f64::from(j)) / f64::from(j + 1);
    }
    checked(Complex::real(acc), true)
}

fn func(f: Func, z: Complex) -> Result<Complex, VerifyError> {
    let one = Complex::real(1.0);
    let nonzero = |d: Complex| {
        if d.abs() < 1e-300 { Err(VerifyError::NotFinite("pole")) } else { Ok(d) }
    };
    let inverse = |g: fn(f64) -> f64, bounded: bool| -> Result<Complex, VerifyError> {
        let x = real_arg(z, "inverse trig")?;
        if bounded && !(-1.0..=1.0).contains(&x) {
            return Err(VerifyError::NotFinite("inverse trig"));
        }
        Ok(Complex::real(g(x)))
    };
    if z.re.abs() > 700.0 && matches!(f, Func::Exp | Func::Sinh | Func::Cosh | Func::Tanh) {
        return Err(VerifyError::TooLarge);
    }
    Ok(match f {
        Func::Sin => z.sin(),
        Func::Cos => z.cos(),
        Func::Tan => z.sin() / nonzero(z.cos())?,
        Func::Cot => z.cos() / nonzero(z.sin())?,
        Func::Sec => one / nonzero(z.cos())?,
        Func::Csc => one / nonzero(z.sin())?,
        Func::Asin => inverse(f64::asin, true)?,
        Func::Acos => inverse(f64::acos, true)?,
        Func::Atan => inverse(f64::atan, false)?,
        Func::Sinh => (z.exp() - (-z).exp()) / Complex::real(2.0),
        Func::Cosh => (z.exp() + (-z).exp()) / Complex::real(2.0),
        Func::Tanh => (z.exp() - (-z).exp()) / nonzero(z.exp() + (-z).exp())?,
        Func::Ln => z.ln(),
        Func::Exp => z.exp(),
        Func::Abs => Complex::real(z.abs()),
        Func::Floor => Complex::real(real_arg(z, "floor")?.floor()),
        Func::Ceil => Complex::real(real_arg(z, "ceiling")?.ceil()),
    })
}

/// Whether two floating-point values agree within the tolerances; infinities must match
/// exactly.
pub fn close(a: Complex, b: Complex) -> bool {
    if !a.is_finite() || !b.is_finite() {
        return a == b;
    }
    let diff = (a - b).abs();
    diff <= REL_TOL * a.abs().max(b.abs()) + ABS_TOL
}

/// The value of an expression at one point, exact when possible.
#[derive(Debug, Clone, Copy)]
pub enum Value {
    /// Exactly this rational.
    Exact(Rational),
    /// Approximately this complex number.
    Approx(Complex),
}

/// Evaluates at point `k`, exactly when possible.
///
/// # Errors
/// As [`float`].
pub fn value(e: &Expr, k: usize) -> Result<Value, VerifyError> {
    match exact(e, k) {
        Some(q) => Ok(Value::Exact(q)),
        None => float(e, k).map(Value::Approx),
    }
}

/// Whether two values agree: exactly if both are exact, within tolerance otherwise.
pub fn same(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Exact(x), Value::Exact(y)) => x == y,
        _ => close(to_complex(a), to_complex(b)),
    }
}

/// The value as a complex double.
pub fn to_complex(v: Value) -> Complex {
    match v {
        Value::Exact(q) => Complex::real(q.to_f64()),
        Value::Approx(z) => z,
    }
}

/// Whether `a` and `b` are the same function of their free variables: they agree at every
/// sample point where both are defined, and at least half of the points are defined for
/// both (a point where one side divides by zero is skipped, so removable singularities
/// do not matter; a constant that cannot be evaluated equals nothing).
pub fn same_function(a: &Expr, b: &Expr) -> bool {
    let points = points_needed(&[a, b]);
    let mut compared = 0;
    for k in 0..points {
        if let (Ok(x), Ok(y)) = (value(a, k), value(b, k)) {
            if !same(x, y) {
                return false;
            }
            compared += 1;
        }
    }
    compared * 2 >= points
}

/// How many sample points a comparison of `exprs` needs: [`POINTS`], or one when no
/// expression has a free variable (every point would give the same values).
pub fn points_needed(exprs: &[&Expr]) -> usize {
    if exprs.iter().any(|e| e.has_vars()) { POINTS } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(a: &str, b: &str) -> bool {
        same_function(&Expr::parse(a).unwrap(), &Expr::parse(b).unwrap())
    }

    #[test]
    fn identities() {
        assert!(eq("(x+1)^2", "x^2+2x+1"));
        assert!(eq(r"\sin^2 x + \cos^2 x", "1"));
        assert!(eq(r"\frac{x^2-1}{x-1}", "x+1"));
        assert!(eq(r"\sqrt{8}", r"2\sqrt{2}"));
        assert!(eq(r"\sin(\pi/6)", r"\frac{1}{2}"));
        assert!(eq(r"\sqrt[3]{-8}", "-2"));
        assert!(eq("1.5e3", "1500"));
        assert!(eq("i^2", "-1"));
        assert!(!eq("x+1", "x+2"));
        assert!(!eq("1000000", "1000001"));
        assert!(!eq("x", "y"));
    }

    #[test]
    fn huge_exponents_fail_fast() {
        assert!(!eq("10^{10^{10}}", "10^{10^{11}}"));
        assert!(!eq("1000!", "1001!"));
        assert!(float(&Expr::parse("2^{100000}").unwrap(), 0).is_err());
    }
}
