//! The two number types the evaluator works in: exact rationals over `i128` (checked, so
//! overflow means "fall back to floating point", never a wrong answer) and complex
//! doubles (so that `\sqrt{-4}`, `2+3i` and friends have a value).

use std::ops::{Add, Div, Mul, Neg, Sub};

/// An exact rational `num/den` in lowest terms with `den > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rational {
    num: i128,
    den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rational {
    /// `num/den` reduced, or `None` when `den == 0` or a sign flip would overflow.
    pub fn new(num: i128, den: i128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let (mut n, mut d) = (num / g, den / g);
        if d < 0 {
            n = n.checked_neg()?;
            d = d.checked_neg()?;
        }
        Some(Self { num: n, den: d })
    }

    /// The integer `n`.
    pub fn int(n: i128) -> Self {
        Self { num: n, den: 1 }
    }

    /// Parses a plain decimal literal such as `12`, `3.25` or `.5` exactly.
    pub fn parse_decimal(s: &str) -> Option<Self> {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.len() + frac.len() > 36 || (int.is_empty() && frac.is_empty()) {
            return None;
        }
        let digits = || int.bytes().chain(frac.bytes());
        if !digits().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let num = digits().fold(0i128, |acc, c| acc * 10 + i128::from(c - b'0'));
        let den = 10i128.checked_pow(u32::try_from(frac.len()).ok()?)?;
        Self::new(num, den)
    }

    /// Numerator (carries the sign).
    pub fn numer(self) -> i128 {
        self.num
    }

    /// Denominator (positive).
    pub fn denom(self) -> i128 {
        self.den
    }

    /// Whether the value is an integer.
    pub fn is_integer(self) -> bool {
        self.den == 1
    }

    /// Whether the value is zero.
    pub fn is_zero(self) -> bool {
        self.num == 0
    }

    /// The nearest double.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// Checked sum.
    pub fn checked_add(self, o: Self) -> Option<Self> {
        let g = gcd(self.den, o.den).max(1);
        let l = self.den / g;
        let num = self.num.checked_mul(o.den / g)?.checked_add(o.num.checked_mul(l)?)?;
        Self::new(num, self.den.checked_mul(o.den / g)?)
    }

    /// Checked product.
    pub fn checked_mul(self, o: Self) -> Option<Self> {
        let g1 = gcd(self.num, o.den).max(1);
        let g2 = gcd(o.num, self.den).max(1);
        let num = (self.num / g1).checked_mul(o.num / g2)?;
        let den = (self.den / g2).checked_mul(o.den / g1)?;
        Self::new(num, den)
    }

    /// Checked negation.
    pub fn checked_neg(self) -> Option<Self> {
        Some(Self { num: self.num.checked_neg()?, den: self.den })
    }

    /// Checked reciprocal (`None` for zero).
    pub fn checked_recip(self) -> Option<Self> {
        Self::new(self.den, self.num)
    }

    /// Checked integer power; `None` for `|exp| > 128`, overflow or `0^negative`.
    pub fn checked_powi(self, exp: i128) -> Option<Self> {
        if exp.abs() > 128 {
            return None;
        }
        let e = u32::try_from(exp.abs()).ok()?;
        let p = Self::new(self.num.checked_pow(e)?, self.den.checked_pow(e)?)?;
        if exp < 0 { p.checked_recip() } else { Some(p) }
    }
}

/// A complex double.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Complex {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}

impl Complex {
    /// The real number `re`.
    pub const fn real(re: f64) -> Self {
        Self { re, im: 0.0 }
    }

    /// The imaginary unit.
    pub const I: Self = Self { re: 0.0, im: 1.0 };

    /// Modulus.
    pub fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }

    /// Whether both parts are finite.
    pub fn is_finite(self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }

    /// Whether the imaginary part is negligible against the real part.
    pub fn is_real(self) -> bool {
        self.im.abs() <= 1e-12 * self.re.abs().max(1.0)
    }

    /// `e^z`.
    pub fn exp(self) -> Self {
        let r = self.re.exp();
        if self.im == 0.0 {
            return Self::real(r);
        }
        Self { re: r * self.im.cos(), im: r * self.im.sin() }
    }

    /// Principal natural logarithm.
    pub fn ln(self) -> Self {
        Self { re: self.abs().ln(), im: self.im.atan2(self.re) }
    }

    /// Principal square root.
    pub fn sqrt(self) -> Self {
        if self.im == 0.0 {
            return if self.re >= 0.0 {
                Self::real(self.re.sqrt())
            } else {
                Self { re: 0.0, im: (-self.re).sqrt() }
            };
        }
        let m = self.abs();
        let re = ((m + self.re) / 2.0).sqrt();
        let im = ((m - self.re) / 2.0).sqrt().copysign(self.im);
        Self { re, im }
    }

    /// `sin z`.
    pub fn sin(self) -> Self {
        Self { re: self.re.sin() * self.im.cosh(), im: self.re.cos() * self.im.sinh() }
    }

    /// `cos z`.
    pub fn cos(self) -> Self {
        Self { re: self.re.cos() * self.im.cosh(), im: -self.re.sin() * self.im.sinh() }
    }

    /// Integer power by repeated squaring (exact for small integers).
    pub fn powi(self, n: i64) -> Self {
        let mut base = self;
        let mut e = n.unsigned_abs();
        let mut acc = Self::real(1.0);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc * base;
            }
            base = base * base;
            e >>= 1;
        }
        if n < 0 { Self::real(1.0) / acc } else { acc }
    }

    /// Principal power `self^w`.
    pub fn pow(self, w: Self) -> Self {
        if self.re == 0.0 && self.im == 0.0 {
            return if w.re > 0.0 { Self::real(0.0) } else { Self::real(f64::NAN) };
        }
        if self.im == 0.0 && w.im == 0.0 && self.re > 0.0 {
            return Self::real(self.re.powf(w.re));
        }
        (w * self.ln()).exp()
    }
}

impl Add for Complex {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self { re: self.re + o.re, im: self.im + o.im }
    }
}

impl Sub for Complex {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self { re: self.re - o.re, im: self.im - o.im }
    }
}

impl Mul for Complex {
    type Output = Self;
    fn mul(self, o: Self) -> Self {
        if self.im == 0.0 && o.im == 0.0 {
            return Self::real(self.re * o.re);
        }
        Self { re: self.re * o.re - self.im * o.im, im: self.re * o.im + self.im * o.re }
    }
}

impl Div for Complex {
    type Output = Self;
    fn div(self, o: Self) -> Self {
        if self.im == 0.0 && o.im == 0.0 {
            return Self::real(self.re / o.re);
        }
        let d = o.re * o.re + o.im * o.im;
        Self { re: (self.re * o.re + self.im * o.im) / d, im: (self.im * o.re - self.re * o.im) / d }
    }
}

impl Neg for Complex {
    type Output = Self;
    fn neg(self) -> Self {
        Self { re: -self.re, im: -self.im }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rational_arithmetic() {
        let half = Rational::new(1, 2).unwrap();
        let third = Rational::new(2, 6).unwrap();
        assert_eq!(half.checked_add(third), Rational::new(5, 6));
        assert_eq!(half.checked_mul(third), Rational::new(1, 6));
        assert_eq!(Rational::parse_decimal("1.25"), Rational::new(5, 4));
        assert_eq!(Rational::parse_decimal(".5"), Rational::new(1, 2));
        assert_eq!(Rational::int(2).checked_powi(-2), Rational::new(1, 4));
        assert_eq!(Rational::int(10).checked_powi(40), None);
        assert_eq!(Rational::new(1, 0), None);
    }

    #[test]
    fn complex_arithmetic() {
        let z = Complex::real(-4.0).sqrt();
        assert_eq!(z, Complex { re: 0.0, im: 2.0 });
        assert_eq!(Complex::I.powi(2), Complex::real(-1.0));
        let w = Complex::real(8.0).pow(Complex::real(1.0 / 3.0));
        assert!((w.re - 2.0).abs() < 1e-12);
    }
}
