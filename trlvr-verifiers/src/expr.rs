//! Scalar expressions: the syntax tree. The parser is in [`crate::parser`]; it reads the
//! LaTeX dialect left by [`crate::normalize()`].
//!
//! Supported: numbers (decimal, `.5`, `1.5e3`), one-letter variables with subscripts,
//! Greek-letter variables, `e`, `i`, `\pi`, `\infty`, `+ - * / ^`, `\cdot`, `\times`,
//! `\div`, implicit multiplication, `\frac`, `\sqrt`, `\sqrt[n]`, `\binom`, `!`, `|x|`,
//! `\lfloor`/`\lceil`, trig, inverse trig, hyperbolic functions, `\ln`, `\log`, `\log_b`,
//! `\exp`, and mixed numbers `2\frac{1}{2}` (an integer directly followed by a numeric
//! fraction means their sum).
//!
//! Recursion is capped at [`MAX_DEPTH`] and input length by the tokeniser, so hostile
//! input fails fast with an error instead of overflowing the stack.

use crate::num::Rational;

/// Maximum nesting depth of the parser.
pub const MAX_DEPTH: usize = 64;

/// A one-argument function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Func {
    Sin,
    Cos,
    Tan,
    Cot,
    Sec,
    Csc,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Ln,
    Exp,
    Abs,
    Floor,
    Ceil,
}

/// A scalar expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal: exact when it fits an `i128` rational, always approximated.
    Num {
        /// The exact value, when representable.
        exact: Option<Rational>,
        /// The nearest double.
        approx: f64,
        /// Digits written after the decimal point (`0.50` has 2; 0 in e-notation): the
        /// precision a decimal states.
        places: u8,
    },
    /// A free variable (`x`, `x_1`, `theta`).
    Var(String),
    /// `\pi`
    Pi,
    /// Euler's number `e`.
    E,
    /// The imaginary unit `i`.
    I,
    /// `\infty`
    Inf,
    /// `-a`
    Neg(Box<Expr>),
    /// `a + b + ...`
    Add(Vec<Expr>),
    /// `a * b * ...`
    Mul(Vec<Expr>),
    /// `a / b`
    Div(Box<Expr>, Box<Expr>),
    /// `a ^ b`
    Pow(Box<Expr>, Box<Expr>),
    /// `\sqrt[n]{a}` as `Root(n, a)`.
    Root(Box<Expr>, Box<Expr>),
    /// `\log_b a` as `Log(b, a)`.
    Log(Box<Expr>, Box<Expr>),
    /// A function applied to one argument.
    Func(Func, Box<Expr>),
    /// `a!`
    Factorial(Box<Expr>),
    /// `\binom{n}{k}`
    Binom(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// An integer literal.
    pub fn int(n: i128) -> Self {
        Self::Num { exact: Some(Rational::int(n)), approx: n as f64, places: 0 }
    }

    /// Whether the expression has a free variable anywhere.
    pub fn has_vars(&self) -> bool {
        match self {
            Self::Var(_) => true,
            Self::Num { .. } | Self::Pi | Self::E | Self::I | Self::Inf => false,
            Self::Neg(a) | Self::Func(_, a) | Self::Factorial(a) => a.has_vars(),
            Self::Add(xs) | Self::Mul(xs) => xs.iter().any(Self::has_vars),
            Self::Div(a, b) | Self::Pow(a, b) | Self::Root(a, b) | Self::Log(a, b) | Self::Binom(a, b) => {
                a.has_vars() || b.has_vars()
            }
        }
    }

    /// The variable's name when the expression is a lone variable.
    pub fn as_var(&self) -> Option<&str> {
        match self {
            Self::Var(v) => Some(v),
            _ => None,
        }
    }

    pub(crate) fn literal_int(&self) -> Option<Rational> {
        match self {
            Self::Num { exact: Some(q), .. } if q.is_integer() => Some(*q),
            _ => None,
        }
    }
}
