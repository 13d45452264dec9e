//! Tokeniser for the normalised LaTeX dialect that [`crate::expr`] parses.

use crate::error::VerifyError;

/// At most this many tokens per answer.
pub const MAX_TOKENS: usize = 2048;

/// A relation symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum RelOp {
    /// `=`
    Eq,
    /// `\ne`
    Ne,
    /// `<`
    Lt,
    /// `\le`
    Le,
    /// `>`
    Gt,
    /// `\ge`
    Ge,
}

impl RelOp {
    /// The same relation read right to left (`<` becomes `>`).
    pub fn flip(self) -> Self {
        match self {
            Self::Lt => Self::Gt,
            Self::Le => Self::Ge,
            Self::Gt => Self::Lt,
            Self::Ge => Self::Le,
            other => other,
        }
    }
}

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A decimal literal, possibly in e-notation (`12`, `0.5`, `1.5e3`).
    Num(String),
    /// One Latin letter (a variable, `e` or `i`).
    Letter(char),
    /// Three or more letters that are not a known function: ordinary text.
    Word(String),
    /// A command, without its backslash (`frac`, `pi`, `sin`, also bare `sin`).
    Cmd(String),
    /// `\begin{env}`.
    Begin(String),
    /// `\end{env}`.
    End(String),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBrack,
    /// `]`
    RBrack,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `\{`
    LSet,
    /// `\}`
    RSet,
    /// `,`
    Comma,
    /// `;`
    Semi,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`, `\cdot`, `\times`
    Star,
    /// `/`, `\div`
    Slash,
    /// `^`, `**`
    Caret,
    /// `_`
    Under,
    /// `!` (factorial)
    Bang,
    /// `|`
    Bar,
    /// `&` (matrix column separator)
    Amp,
    /// `\\` (matrix row separator)
    Row,
    /// `\pm`
    Pm,
    /// `\mp`
    Mp,
    /// A relation.
    Rel(RelOp),
}

impl Tok {
    /// Opening bracket of any kind (used for depth counting).
    pub fn opens(&self) -> bool {
        matches!(self, Self::LParen | Self::LBrack | Self::LBrace | Self::LSet | Self::Begin(_))
    }

    /// Closing bracket of any kind.
    pub fn closes(&self) -> bool {
        matches!(self, Self::RParen | Self::RBrack | Self::RBrace | Self::RSet | Self::End(_))
    }
}

/// Letter runs that name a function or constant even without a backslash.
const BARE_NAMES: &[&str] = &[
    "sin", "cos", "tan", "cot", "sec", "csc", "ln", "log", "exp", "sqrt", "pi", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh",
];

/// Whether a run of letters names a function or constant without a backslash (`sin`).
pub fn is_function_name(run: &str) -> bool {
    BARE_NAMES.contains(&run)
}

/// Splits `s` into tokens.
///
/// # Errors
/// [`VerifyError::TooLong`] past [`MAX_TOKENS`]; [`VerifyError::Syntax`] on characters
/// the dialect does not know.
pub fn tokenize(s: &str) -> Result<Vec<Tok>, VerifyError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if out.len() > MAX_TOKENS {
            return Err(VerifyError::TooLong { len: out.len(), max: MAX_TOKENS });
        }
        let c = b[i];
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let end = number_end(b, i);
            out.push(Tok::Num(s[i..end].to_string()));
            i = end;
        } else if c.is_ascii_alphabetic() {
            let end = i + b[i..].iter().take_while(|c| c.is_ascii_alphabetic()).count();
            letters(&s[i..end], &mut out);
            i = end;
        } else if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        } else if c == b'\\' {
            out.push(backslash(s, &mut i)?);
        } else {
            out.push(symbol(b, &mut i)?);
        }
    }
    Ok(out)
}

/// The end of the number starting at `i`: digits, a fractional part, and an exponent
/// (`1e3`, `2.5E-4`; but `2e+1` is `2e + 1`).
fn number_end(b: &[u8], mut i: usize) -> usize {
    let digits_from = |i: usize| i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    i = digits_from(i);
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i = digits_from(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(b.get(i + 1) == Some(&b'-'));
        if b.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
            i = digits_from(i + 1 + sign);
        }
    }
    i
}

/// A run of letters: a bare function name (`sin`), a word of three or more letters, or
/// one letter per variable (`xy` is `x y`).
fn letters(run: &str, out: &mut Vec<Tok>) {
    if BARE_NAMES.contains(&run) {
        out.push(Tok::Cmd(run.to_string()));
    } else if run.len() >= 3 {
        out.push(Tok::Word(run.to_string()));
    } else {
        out.extend(run.chars().map(Tok::Letter));
    }
}

/// The token of the one- or two-character symbol at `*i` (`+`, `**`, `<=`, `!=`), moving
/// `*i` past it.
fn symbol(b: &[u8], i: &mut usize) -> Result<Tok, VerifyError> {
    let c = b[*i];
    *i += 1;
    let mut then = |next: u8| {
        let found = b.get(*i) == Some(&next);
        *i += usize::from(found);
        found
    };
    Ok(match c {
        b'(' => Tok::LParen,
        b')' => Tok::RParen,
        b'[' => Tok::LBrack,
        b']' => Tok::RBrack,
        b'{' => Tok::LBrace,
        b'}' => Tok::RBrace,
        b',' => Tok::Comma,
        b';' => Tok::Semi,
        b'+' => Tok::Plus,
        b'-' => Tok::Minus,
        b'*' if then(b'*') => Tok::Caret,
        b'*' => Tok::Star,
        b'/' => Tok::Slash,
        b'^' => Tok::Caret,
        b'_' => Tok::Under,
        b'|' => Tok::Bar,
        b'&' => Tok::Amp,
        b'!' if then(b'=') => Tok::Rel(RelOp::Ne),
        b'!' => Tok::Bang,
        b'=' => Tok::Rel(RelOp::Eq),
        b'<' if then(b'=') => Tok::Rel(RelOp::Le),
        b'<' => Tok::Rel(RelOp::Lt),
        b'>' if then(b'=') => Tok::Rel(RelOp::Ge),
        b'>' => Tok::Rel(RelOp::Gt),
        _ => return Err(VerifyError::Syntax(format!("unexpected {:?}", c as char))),
    })
}

/// The token of the backslash sequence at `*i`: a command (`\frac`) or a one-character
/// one (`\{`, `\}`, the row break `\\`), moving `*i` past it.
fn backslash(s: &str, i: &mut usize) -> Result<Tok, VerifyError> {
    let b = s.as_bytes();
    let start = *i + 1;
    *i = start + b[start..].iter().take_while(|c| c.is_ascii_alphabetic()).count();
    if *i > start {
        return command(s, &s[start..*i], i);
    }
    let Some(&next) = b.get(start) else {
        return Err(VerifyError::Syntax("trailing backslash".into()));
    };
    *i += 1;
    match next {
        b'{' => Ok(Tok::LSet),
        b'}' => Ok(Tok::RSet),
        b'\\' => Ok(Tok::Row),
        _ => Err(VerifyError::Syntax(format!("unknown \\{}", next as char))),
    }
}

/// Turns a command name into a token; reads `{env}` after `\begin`/`\end`.
fn command(s: &str, name: &str, i: &mut usize) -> Result<Tok, VerifyError> {
    Ok(match name {
        "cdot" | "times" => Tok::Star,
        "div" => Tok::Slash,
        "pm" => Tok::Pm,
        "mp" => Tok::Mp,
        "le" | "leq" | "leqslant" => Tok::Rel(RelOp::Le),
        "ge" | "geq" | "geqslant" => Tok::Rel(RelOp::Ge),
        "ne" | "neq" => Tok::Rel(RelOp::Ne),
        "lt" => Tok::Rel(RelOp::Lt),
        "gt" => Tok::Rel(RelOp::Gt),
        "begin" | "end" => {
            let rest = &s[*i..];
            let env = rest
                .strip_prefix('{')
                .and_then(|r| r.split_once('}'))
                .map(|(env, _)| env.to_string())
                .ok_or_else(|| VerifyError::Syntax("\\begin without {env}".into()))?;
            *i += env.len() + 2;
            if name == "begin" { Tok::Begin(env) } else { Tok::End(env) }
        }
        _ => Tok::Cmd(name.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let t = tokenize(r"2x^2+\frac{1}{2}\le 1.5e3").unwrap();
        assert_eq!(t[0], Tok::Num("2".into()));
        assert_eq!(t[1], Tok::Letter('x'));
        assert_eq!(t[3], Tok::Num("2".into()));
        assert!(t.contains(&Tok::Rel(RelOp::Le)));
        assert_eq!(t.last(), Some(&Tok::Num("1.5e3".into())));
        assert_eq!(tokenize("xy").unwrap(), vec![Tok::Letter('x'), Tok::Letter('y')]);
        assert_eq!(tokenize("east").unwrap(), vec![Tok::Word("east".into())]);
        assert!(tokenize("@").is_err());
    }
}
