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
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            // e-notation: `1e3`, `2.5E-4` (but `2e+1` is `2e + 1`).
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && b[j] == b'-' {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            out.push(Tok::Num(s[start..i].to_string()));
            continue;
        }
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let run = &s[start..i];
            if BARE_NAMES.contains(&run) {
                out.push(Tok::Cmd(run.to_string()));
            } else if run.len() >= 3 {
                out.push(Tok::Word(run.to_string()));
            } else {
                out.extend(run.chars().map(Tok::Letter));
            }
            continue;
        }
        i += 1;
        let tok = match c {
            b' ' | b'\t' | b'\n' | b'\r' => continue,
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
            b'*' if b.get(i) == Some(&b'*') => {
                i += 1;
                Tok::Caret
            }
            b'*' => Tok::Star,
            b'/' => Tok::Slash,
            b'^' => Tok::Caret,
            b'_' => Tok::Under,
            b'|' => Tok::Bar,
            b'&' => Tok::Amp,
            b'!' if b.get(i) == Some(&b'=') => {
                i += 1;
                Tok::Rel(RelOp::Ne)
            }
            b'!' => Tok::Bang,
            b'=' => Tok::Rel(RelOp::Eq),
            b'<' | b'>' => {
                let or_equal = b.get(i) == Some(&b'=');
                if or_equal {
                    i += 1;
                }
                Tok::Rel(match (c, or_equal) {
                    (b'<', false) => RelOp::Lt,
                    (b'<', true) => RelOp::Le,
                    (_, false) => RelOp::Gt,
                    (_, true) => RelOp::Ge,
                })
            }
            b'\\' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                if i == start {
                    let Some(&next) = b.get(i) else {
                        return Err(VerifyError::Syntax("trailing backslash".into()));
                    };
                    i += 1;
                    match next {
                        b'{' => Tok::LSet,
                        b'}' => Tok::RSet,
                        b'\\' => Tok::Row,
                        _ => return Err(VerifyError::Syntax(format!("unknown \\{}", next as char))),
                    }
                } else {
                    command(s, &s[start..i], &mut i)?
                }
            }
            _ => return Err(VerifyError::Syntax(format!("unexpected {:?}", c as char))),
        };
        out.push(tok);
    }
    Ok(out)
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
