//! Recursive-descent parser from tokens to [`Expr`].
//!
//! Precedence, loosest first: `+ -`; `* / \cdot \times` and implicit multiplication;
//! unary minus; `^` (right-associative, an unbraced numeric exponent is one digit as in
//! LaTeX: `x^23` is `x^2 \cdot 3`); postfix `!`; atoms. A function without parentheses
//! takes the implicit product after it (`\sin 2x` is `\sin(2x)`).

use crate::error::VerifyError;
use crate::expr::{Expr, Func, MAX_DEPTH};
use crate::lexer::{Tok, tokenize};
use crate::num::Rational;

// Here rather than in `expr`, so that the syntax tree does not depend on its parser.
impl Expr {
    /// Parses one scalar expression (no commas, relations or brackets around a list).
    ///
    /// # Errors
    /// [`VerifyError`] on unknown syntax, too many tokens or too deep nesting.
    ///
    /// ```
    /// use trlvr_verifiers::expr::Expr;
    /// assert!(Expr::parse(r"2\frac{1}{2} + \sqrt{x}").is_ok());
    /// assert!(Expr::parse("1 +").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, VerifyError> {
        parse_tokens(&tokenize(s)?)
    }
}

/// Parses a token slice as one scalar expression.
pub(crate) fn parse_tokens(toks: &[Tok]) -> Result<Expr, VerifyError> {
    let mut p = Parser { toks: toks.to_vec(), pos: 0, depth: 0 };
    let e = p.expr()?;
    if p.pos != p.toks.len() {
        return Err(VerifyError::Syntax(format!("unexpected {:?}", p.toks[p.pos])));
    }
    Ok(e)
}

fn syntax(msg: &str) -> VerifyError {
    VerifyError::Syntax(msg.to_string())
}

const GREEK: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Sigma",
    "Phi",
    "Psi",
    "Omega",
];

fn func_named(name: &str) -> Option<Func> {
    Some(match name {
        "sin" => Func::Sin,
        "cos" => Func::Cos,
        "tan" => Func::Tan,
        "cot" => Func::Cot,
        "sec" => Func::Sec,
        "csc" => Func::Csc,
        "arcsin" => Func::Asin,
        "arccos" => Func::Acos,
        "arctan" => Func::Atan,
        "sinh" => Func::Sinh,
        "cosh" => Func::Cosh,
        "tanh" => Func::Tanh,
        "ln" => Func::Ln,
        "exp" => Func::Exp,
        _ => return None,
    })
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: &Tok) -> Result<(), VerifyError> {
        if self.eat(t) { Ok(()) } else { Err(VerifyError::Syntax(format!("expected {t:?}"))) }
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, VerifyError>) -> Result<T, VerifyError> {
        if self.depth >= MAX_DEPTH {
            return Err(VerifyError::TooDeep(MAX_DEPTH));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn expr(&mut self) -> Result<Expr, VerifyError> {
        self.nested(|p| {
            let mut terms = vec![p.term()?];
            loop {
                if p.eat(&Tok::Plus) {
                    terms.push(p.term()?);
                } else if p.eat(&Tok::Minus) {
                    terms.push(Expr::Neg(Box::new(p.term()?)));
                } else {
                    break;
                }
            }
            Ok(if terms.len() == 1 { terms.remove(0) } else { Expr::Add(terms) })
        })
    }

    fn starts_factor(&self) -> bool {
        // Two numbers in a row (`3 4`) are not a product: the input is malformed.
        let after_number = matches!(self.toks.get(self.pos.wrapping_sub(1)), Some(Tok::Num(_)));
        match self.peek() {
            Some(Tok::Num(_)) if after_number => false,
            Some(Tok::Num(_) | Tok::Letter(_) | Tok::Word(_) | Tok::LParen | Tok::LBrace) => true,
            Some(Tok::Cmd(name)) => !matches!(name.as_str(), "rfloor" | "rceil" | "cup" | "in"),
            _ => false,
        }
    }

    fn term(&mut self) -> Result<Expr, VerifyError> {
        let first = self.unary()?;
        let mut factors = vec![first];
        let mut div: Option<Expr> = None;
        loop {
            if self.eat(&Tok::Star) {
                factors.push(self.unary()?);
            } else if self.eat(&Tok::Slash) {
                let d = self.unary()?;
                div = Some(match div {
                    None => d,
                    Some(prev) => Expr::Mul(vec![prev, d]),
                });
            } else if self.starts_factor() {
                let is_frac = matches!(self.peek(), Some(Tok::Cmd(n)) if n == "frac");
                let f = self.power()?;
                if factors.len() == 1
                    && div.is_none()
                    && is_frac
                    && let Some(mixed) = mixed_number(&factors[0], &f)
                {
                    factors[0] = mixed;
                    continue;
                }
                factors.push(f);
            } else {
                break;
            }
        }
        let num = if factors.len() == 1 { factors.remove(0) } else { Expr::Mul(factors) };
        Ok(match div {
            None => num,
            Some(d) => Expr::Div(Box::new(num), Box::new(d)),
        })
    }

    fn unary(&mut self) -> Result<Expr, VerifyError> {
        self.nested(|p| {
            if p.eat(&Tok::Minus) {
                Ok(Expr::Neg(Box::new(p.unary()?)))
            } else if p.eat(&Tok::Plus) {
                p.unary()
            } else {
                p.power()
            }
        })
    }

    fn power(&mut self) -> Result<Expr, VerifyError> {
        let base = self.postfix()?;
        if self.eat(&Tok::Caret) {
            let exp = self.exponent()?;
            let mut e = Expr::Pow(Box::new(base), Box::new(exp));
            while self.eat(&Tok::Bang) {
                e = Expr::Factorial(Box::new(e));
            }
            return Ok(e);
        }
        Ok(base)
    }

    /// An exponent: `{...}`, a signed exponent, a single digit (`x^23` is `x^2 3`) or an atom.
    fn exponent(&mut self) -> Result<Expr, VerifyError> {
        self.nested(|p| {
            if p.eat(&Tok::Minus) {
                return Ok(Expr::Neg(Box::new(p.exponent()?)));
            }
            if let Some(Tok::Num(n)) = p.peek()
                && n.len() > 1
                && n.as_bytes()[0].is_ascii_digit()
            {
                let (head, rest) = n.split_at(1);
                let (head, rest) = (head.to_string(), rest.to_string());
                p.toks[p.pos] = Tok::Num(rest);
                return number(&head);
            }
            p.atom()
        })
    }

    fn postfix(&mut self) -> Result<Expr, VerifyError> {
        let mut a = self.atom()?;
        while self.eat(&Tok::Bang) {
            a = Expr::Factorial(Box::new(a));
        }
        Ok(a)
    }

    /// A braced group `{...}` or, failing that, one atom (`\frac12` style arguments).
    fn group(&mut self) -> Result<Expr, VerifyError> {
        if self.eat(&Tok::LBrace) {
            let e = self.expr()?;
            self.expect(&Tok::RBrace)?;
            Ok(e)
        } else {
            self.atom()
        }
    }

    fn atom(&mut self) -> Result<Expr, VerifyError> {
        let Some(tok) = self.peek().cloned() else {
            return Err(syntax("unexpected end"));
        };
        self.pos += 1;
        self.nested(|p| match tok {
            Tok::Num(n) => {
                if p.peek() == Some(&Tok::Under) {
                    return Err(syntax("numbers in a base other than ten are compared as text"));
                }
                number(&n)
            }
            Tok::Letter(c) => p.letter(c),
            Tok::LParen => p.closed_by(&Tok::RParen),
            Tok::LBrace => p.closed_by(&Tok::RBrace),
            Tok::LBrack => p.closed_by(&Tok::RBrack),
            Tok::Bar => Ok(Expr::Func(Func::Abs, Box::new(p.closed_by(&Tok::Bar)?))),
            Tok::Cmd(name) => p.command(&name),
            other => Err(VerifyError::Syntax(format!("unexpected {other:?}"))),
        })
    }

    fn closed_by(&mut self, close: &Tok) -> Result<Expr, VerifyError> {
        let e = self.expr()?;
        self.expect(close)?;
        Ok(e)
    }

    fn letter(&mut self, c: char) -> Result<Expr, VerifyError> {
        if self.eat(&Tok::Under) {
            let sub = match self.peek().cloned() {
                Some(Tok::Num(n)) => {
                    self.pos += 1;
                    n
                }
                Some(Tok::Letter(l)) => {
                    self.pos += 1;
                    l.to_string()
                }
                Some(Tok::LBrace) => {
                    let start = self.pos;
                    self.pos += 1;
                    self.expr()?;
                    self.expect(&Tok::RBrace)?;
                    format!("{:?}", &self.toks[start + 1..self.pos - 1])
                }
                _ => return Err(syntax("bad subscript")),
            };
            return Ok(Expr::Var(format!("{c}_{sub}")));
        }
        Ok(match c {
            'e' => Expr::E,
            'i' => Expr::I,
            _ => Expr::Var(c.to_string()),
        })
    }

    fn command(&mut self, name: &str) -> Result<Expr, VerifyError> {
        match name {
            "frac" => {
                let n = self.group()?;
                let d = self.group()?;
                Ok(Expr::Div(Box::new(n), Box::new(d)))
            }
            "binom" => {
                let n = self.group()?;
                let k = self.group()?;
                Ok(Expr::Binom(Box::new(n), Box::new(k)))
            }
            "sqrt" => {
                let index = if self.eat(&Tok::LBrack) { self.closed_by(&Tok::RBrack)? } else { Expr::int(2) };
                let arg = self.group()?;
                Ok(Expr::Root(Box::new(index), Box::new(arg)))
            }
            "pi" => Ok(Expr::Pi),
            "infty" => Ok(Expr::Inf),
            "lfloor" => Ok(Expr::Func(Func::Floor, Box::new(self.closed_by(&Tok::Cmd("rfloor".into()))?))),
            "lceil" => Ok(Expr::Func(Func::Ceil, Box::new(self.closed_by(&Tok::Cmd("rceil".into()))?))),
            "log" => {
                let base = if self.eat(&Tok::Under) { self.group()? } else { Expr::int(10) };
                let (pow, arg) = self.func_tail()?;
                Ok(with_pow(Expr::Log(Box::new(base), Box::new(arg)), pow))
            }
            n if GREEK.contains(&n) => Ok(Expr::Var(n.to_string())),
            n => {
                let f = func_named(n).ok_or_else(|| VerifyError::Syntax(format!("unknown \\{n}")))?;
                let (pow, arg) = self.func_tail()?;
                Ok(with_pow(Expr::Func(f, Box::new(arg)), pow))
            }
        }
    }

    /// After a function name: an optional power (`\sin^2 x`) and the argument, either
    /// bracketed or the implicit product that follows (`\sin 2x`).
    fn func_tail(&mut self) -> Result<(Option<Expr>, Expr), VerifyError> {
        let pow = if self.eat(&Tok::Caret) { Some(self.exponent()?) } else { None };
        if matches!(self.peek(), Some(Tok::LParen | Tok::LBrace | Tok::LBrack)) {
            return Ok((pow, self.power()?));
        }
        let mut factors = vec![self.power()?];
        while self.starts_factor()
            && !matches!(self.peek(), Some(Tok::Cmd(n)) if func_named(n).is_some() || n == "log")
        {
            factors.push(self.power()?);
        }
        let arg = if factors.len() == 1 { factors.remove(0) } else { Expr::Mul(factors) };
        Ok((pow, arg))
    }
}

fn with_pow(e: Expr, pow: Option<Expr>) -> Expr {
    match pow {
        Some(p) => Expr::Pow(Box::new(e), Box::new(p)),
        None => e,
    }
}

/// A numeric literal.
fn number(s: &str) -> Result<Expr, VerifyError> {
    let approx: f64 = s.parse().map_err(|_| VerifyError::Syntax(format!("bad number {s}")))?;
    if !approx.is_finite() {
        return Err(VerifyError::TooLarge);
    }
    let exact = match s.find(['e', 'E']) {
        None => Rational::parse_decimal(s),
        Some(at) => {
            let mantissa = Rational::parse_decimal(&s[..at]);
            let exp: Option<i128> = s[at + 1..].parse().ok();
            match (mantissa, exp) {
                (Some(m), Some(e)) => Rational::int(10).checked_powi(e).and_then(|p| m.checked_mul(p)),
                _ => None,
            }
        }
    };
    let places = match s.split_once('.') {
        Some((_, frac)) if !s.contains(['e', 'E']) => u8::try_from(frac.len()).unwrap_or(u8::MAX),
        _ => 0,
    };
    Ok(Expr::Num { exact, approx, places })
}

/// `2` followed by `\frac{1}{2}` (both plain non-negative integers) is `2 + 1/2`; a negated
/// whole part negates the sum.
fn mixed_number(whole: &Expr, frac: &Expr) -> Option<Expr> {
    let Expr::Div(n, d) = frac else { return None };
    n.literal_int()?;
    d.literal_int()?;
    match whole {
        Expr::Neg(inner) => {
            inner.literal_int()?;
            Some(Expr::Neg(Box::new(Expr::Add(vec![(**inner).clone(), frac.clone()]))))
        }
        _ => {
            whole.literal_int()?;
            Some(Expr::Add(vec![whole.clone(), frac.clone()]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        for s in [
            r"\frac{1}{2}",
            "x^2+3x-6",
            r"\sin^2 x + \cos^2 x",
            r"\sqrt[3]{8}",
            "3!",
            "|x-1|",
            r"\log_2 8",
            r"2\frac{1}{2}",
            "(a+5)(b+2)",
            r"\alpha+\beta",
            "x_1 + x_{2}",
            r"\binom{5}{2}",
            r"1.5\times10^3",
            r"\lfloor 2.5 \rfloor",
            "-2+7i",
        ] {
            assert!(Expr::parse(s).is_ok(), "{s}");
        }
        for s in ["", "1+", "east", r"\foo", "(1", "2516_8"] {
            assert!(Expr::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let s = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert_eq!(Expr::parse(&s), Err(VerifyError::TooDeep(MAX_DEPTH)));
    }
}
