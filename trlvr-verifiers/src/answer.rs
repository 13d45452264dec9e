//! The shape of an answer: a scalar, a tuple or interval, a set or list of solutions, a
//! union of intervals, a matrix, or a relation (equation, inequality, chain).

use crate::error::VerifyError;
use crate::expr::{Expr, MAX_DEPTH};
use crate::lexer::{RelOp, Tok, tokenize};
use crate::parser::parse_tokens;

/// At most this many `\pm` signs are expanded in one item (2^3 = 8 variants).
const MAX_PM: usize = 3;

/// A parsed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A scalar expression.
    Expr(Expr),
    /// `(a, b)`, `[a, b)`, `(1, 2, 3)`: ordered; the bracket kinds matter (so an interval's
    /// open and closed ends must match). A pair in parentheses is a point or an open
    /// interval; both read the same.
    Bracketed {
        /// `(` or `[`.
        open: char,
        /// `)` or `]`.
        close: char,
        /// The items, in order.
        items: Vec<Answer>,
    },
    /// `\{a, b\}` or a bare list `a, b`: unordered, and duplicates do not count.
    Set(Vec<Answer>),
    /// `A \cup B`: unordered.
    Union(Vec<Answer>),
    /// `\begin{pmatrix} .. \end{pmatrix}` (also bmatrix, matrix, vmatrix...): rows of cells.
    Matrix(Vec<Vec<Answer>>),
    /// `a = b`, `x > 3`, `1 < x \le 2`: expressions joined by relations.
    Relation {
        /// The `n + 1` sides.
        exprs: Vec<Expr>,
        /// The `n` relation symbols between them.
        ops: Vec<RelOp>,
    },
}

impl Answer {
    /// Parses a normalised answer string.
    ///
    /// # Errors
    /// [`VerifyError`] when any part is not understood; callers then compare text.
    ///
    /// ```
    /// use trlvr_verifiers::answer::Answer;
    /// assert!(matches!(Answer::parse(r"\{1,2\}"), Ok(Answer::Set(_))));
    /// assert!(matches!(Answer::parse("(1,2]"), Ok(Answer::Bracketed { .. })));
    /// ```
    pub fn parse(s: &str) -> Result<Self, VerifyError> {
        parse(&tokenize(s)?, 0)
    }
}

/// Splits at `sep` tokens outside any bracket.
fn split_top(toks: &[Tok], is_sep: impl Fn(&Tok) -> bool) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, t) in toks.iter().enumerate() {
        if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
        } else if depth == 0 && is_sep(t) {
            out.push(&toks[start..i]);
            start = i + 1;
        }
    }
    out.push(&toks[start..]);
    out
}

/// Whether the bracket opened by `toks[0]` closes exactly at the last token.
fn wraps_whole(toks: &[Tok]) -> bool {
    if toks.len() < 2 || !toks[0].opens() || !toks[toks.len() - 1].closes() {
        return false;
    }
    let mut depth = 0i32;
    for (i, t) in toks.iter().enumerate() {
        if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
            if depth == 0 {
                return i == toks.len() - 1;
            }
        }
    }
    false
}

fn parse(toks: &[Tok], depth: usize) -> Result<Answer, VerifyError> {
    if depth > MAX_DEPTH {
        return Err(VerifyError::TooDeep(MAX_DEPTH));
    }
    // `x \in [1, 2]` is the interval.
    let toks = match toks {
        [Tok::Letter(_), Tok::Cmd(c), rest @ ..] if c == "in" && !rest.is_empty() => rest,
        _ => toks,
    };
    if toks.is_empty() {
        return Err(VerifyError::Syntax("empty answer".into()));
    }
    let pieces = split_top(toks, |t| matches!(t, Tok::Cmd(c) if c == "cup"));
    if pieces.len() > 1 {
        let parts = pieces.into_iter().map(|p| parse(p, depth + 1)).collect::<Result<_, _>>()?;
        return Ok(union(parts));
    }
    if let Some(m) = matrix_env(toks, depth)? {
        return Ok(m);
    }
    let n = toks.len();
    if wraps_whole(toks) && toks[0] == Tok::LSet && toks[n - 1] == Tok::RSet {
        return Ok(Answer::Set(items(&toks[1..n - 1], depth, true)?));
    }
    // `{1, 2}`: suites write sets with plain braces too (a lone `{x}` stays a group).
    if wraps_whole(toks)
        && toks[0] == Tok::LBrace
        && toks[n - 1] == Tok::RBrace
        && split_top(&toks[1..n - 1], |t| *t == Tok::Comma).len() > 1
    {
        return Ok(Answer::Set(items(&toks[1..n - 1], depth, true)?));
    }
    if let Some(groups) = labelled_groups(toks, depth)? {
        return Ok(groups);
    }
    let bracket = |t: &Tok, a: Tok, b: Tok| *t == a || *t == b;
    if wraps_whole(toks)
        && bracket(&toks[0], Tok::LParen, Tok::LBrack)
        && bracket(&toks[n - 1], Tok::RParen, Tok::RBrack)
    {
        let inner = split_top(&toks[1..n - 1], |t| *t == Tok::Comma);
        if inner.len() > 1 {
            let items = inner.into_iter().map(|p| parse(p, depth + 1)).collect::<Result<_, _>>()?;
            let open = if toks[0] == Tok::LParen { '(' } else { '[' };
            let close = if toks[n - 1] == Tok::RParen { ')' } else { ']' };
            return Ok(Answer::Bracketed { open, close, items });
        }
    }
    let list = items(toks, depth, false)?;
    if list.len() == 1 {
        Ok(list.into_iter().next().unwrap_or(Answer::Set(Vec::new())))
    } else {
        Ok(Answer::Set(list))
    }
}

/// A union of finite sets is the set of their members (`\{1,3\} \cup \{2,4\}` is
/// `\{1,2,3,4\}`); other unions stay unions of their parts.
fn union(parts: Vec<Answer>) -> Answer {
    if parts.iter().all(|p| matches!(p, Answer::Set(_))) {
        let members = parts.into_iter().flat_map(|p| match p {
            Answer::Set(items) => items,
            other => vec![other],
        });
        return Answer::Set(members.collect());
    }
    Answer::Union(parts)
}

/// `p=5,q=2; p=7,q=2`: solutions separated by semicolons, each a list of labelled values,
/// read as a set of such lists (each compared with a tuple such as `(5,2)`). Only groups
/// that all hold a relation are read so; other semicolons separate items as commas do.
fn labelled_groups(toks: &[Tok], depth: usize) -> Result<Option<Answer>, VerifyError> {
    let groups = split_top(toks, |t| *t == Tok::Semi);
    let labelled = |g: &[Tok]| {
        split_top(g, |t| *t == Tok::Comma).len() > 1 && g.iter().any(|t| matches!(t, Tok::Rel(_)))
    };
    if groups.len() < 2 || !groups.iter().all(|g| labelled(g)) {
        return Ok(None);
    }
    let parts = groups.into_iter().map(|g| parse(g, depth + 1)).collect::<Result<_, _>>()?;
    Ok(Some(Answer::Set(parts)))
}

/// A matrix environment (`pmatrix`, `bmatrix`, ..., or `array` after its column
/// specification), also inside brackets that only wrap it (`\left[\begin{array}{cc} ..
/// \end{array}\right]`); `None` for anything else.
fn matrix_env(toks: &[Tok], depth: usize) -> Result<Option<Answer>, VerifyError> {
    let n = toks.len();
    if n > 2
        && matches!(toks[0], Tok::LParen | Tok::LBrack)
        && matches!(toks[1], Tok::Begin(_))
        && wraps_whole(toks)
        && wraps_whole(&toks[1..n - 1])
    {
        return matrix_env(&toks[1..n - 1], depth + 1);
    }
    let (Tok::Begin(env), Tok::End(_)) = (&toks[0], &toks[n - 1]) else { return Ok(None) };
    if !(env.ends_with("matrix") || env == "array") || !wraps_whole(toks) {
        return Ok(None);
    }
    let mut body = &toks[1..n - 1];
    if env == "array" && body.first() == Some(&Tok::LBrace) {
        let close = body.iter().position(|t| *t == Tok::RBrace).unwrap_or(0);
        body = &body[close + 1..];
    }
    matrix(body, depth).map(Some)
}

/// Comma- (or semicolon-) separated items, each with its `\pm` signs expanded. Inside set
/// braces every item may have any shape; at top level a lone item is a scalar.
fn items(toks: &[Tok], depth: usize, in_set: bool) -> Result<Vec<Answer>, VerifyError> {
    let mut out = Vec::new();
    for piece in split_top(toks, |t| matches!(t, Tok::Comma | Tok::Semi)) {
        if piece.iter().any(|t| matches!(t, Tok::Pm | Tok::Mp)) {
            for v in expand_pm(piece)? {
                out.push(scalar(&v)?);
            }
        } else if in_set || piece.len() < toks.len() {
            out.push(parse(piece, depth + 1)?);
        } else {
            out.push(scalar(piece)?);
        }
    }
    Ok(out)
}

/// All sign choices for the `\pm`/`\mp` tokens of `toks`.
fn expand_pm(toks: &[Tok]) -> Result<Vec<Vec<Tok>>, VerifyError> {
    let count = toks.iter().filter(|t| matches!(t, Tok::Pm | Tok::Mp)).count();
    if count == 0 {
        return Ok(vec![toks.to_vec()]);
    }
    if count > MAX_PM {
        return Err(VerifyError::TooLarge);
    }
    let mut out = Vec::with_capacity(1 << count);
    for mask in 0..(1u32 << count) {
        let mut bit = 0;
        let v = toks
            .iter()
            .map(|t| match t {
                Tok::Pm | Tok::Mp => {
                    let plus = (mask >> bit) & 1 == 0;
                    bit += 1;
                    if plus == (*t == Tok::Pm) { Tok::Plus } else { Tok::Minus }
                }
                other => other.clone(),
            })
            .collect();
        out.push(v);
    }
    Ok(out)
}

/// One expression or one relation chain.
fn scalar(toks: &[Tok]) -> Result<Answer, VerifyError> {
    let sides = split_top(toks, |t| matches!(t, Tok::Rel(_)));
    if sides.len() == 1 {
        return Ok(Answer::Expr(parse_tokens(toks)?));
    }
    let mut ops = Vec::new();
    let mut depth = 0i32;
    for t in toks {
        if t.opens() {
            depth += 1;
        } else if t.closes() {
            depth -= 1;
        } else if let (0, Tok::Rel(op)) = (depth, t) {
            ops.push(*op);
        }
    }
    // A side that names a function value (`f(x)`) reads as a variable wherever it stands,
    // so `0 < f(x) < 1` is the interval `(0, 1)`.
    let side = |t: &&[Tok]| match function_head(t) {
        Some(name) => Ok(Expr::Var(name.to_string())),
        None => parse_tokens(t),
    };
    let exprs: Vec<Expr> = sides.iter().map(side).collect::<Result<_, _>>()?;
    Ok(Answer::Relation { exprs, ops })
}

/// Letters that name functions even when applied to numbers (`f(2) = 5`).
const FUNCTION_LETTERS: &str = "fghpqFGHPQ";

/// The function's name when a relation's first side only names a function value: `f(x)`,
/// `g(t)`, `h(x, y)`, or `f(2)` for the usual function letters. Such a side reads as a
/// lone variable, so `f(x) = x + 1` answers `x + 1` as `y = x + 1` does. A product such as
/// `x(x+1)` has an argument that is not a lone letter or number and is left alone.
fn function_head(side: &[Tok]) -> Option<char> {
    let [Tok::Letter(name), Tok::LParen, args @ .., Tok::RParen] = side else { return None };
    let mut letters_only = true;
    for (i, t) in args.iter().enumerate() {
        match t {
            Tok::Letter(_) if i % 2 == 0 => {}
            Tok::Num(_) if i % 2 == 0 => letters_only = false,
            Tok::Comma if i % 2 == 1 => {}
            _ => return None,
        }
    }
    let well_formed = args.len() % 2 == 1;
    (well_formed && (letters_only || FUNCTION_LETTERS.contains(*name))).then_some(*name)
}

fn matrix(toks: &[Tok], depth: usize) -> Result<Answer, VerifyError> {
    let mut rows = Vec::new();
    for row in split_top(toks, |t| *t == Tok::Row) {
        if row.is_empty() {
            continue;
        }
        let cells = split_top(row, |t| *t == Tok::Amp)
            .into_iter()
            .map(|c| parse(c, depth + 1))
            .collect::<Result<Vec<_>, _>>()?;
        rows.push(cells);
    }
    if rows.is_empty() {
        return Err(VerifyError::Syntax("empty matrix".into()));
    }
    Ok(Answer::Matrix(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert!(matches!(Answer::parse("5"), Ok(Answer::Expr(_))));
        assert!(matches!(Answer::parse("1,2"), Ok(Answer::Set(v)) if v.len() == 2));
        assert!(matches!(Answer::parse(r"3\pm 2\sqrt{2}"), Ok(Answer::Set(v)) if v.len() == 2));
        assert!(matches!(Answer::parse(r"\{1\pm\sqrt{5},-2\}"), Ok(Answer::Set(v)) if v.len() == 3));
        assert!(matches!(Answer::parse(r"(-\infty,2)\cup(3,\infty)"), Ok(Answer::Union(v)) if v.len() == 2));
        assert!(matches!(Answer::parse(r"x\in[-2,7]"), Ok(Answer::Bracketed { open: '[', .. })));
        assert!(matches!(Answer::parse("y=2x+1"), Ok(Answer::Relation { .. })));
        assert!(matches!(Answer::parse("(a+5)(b+2)"), Ok(Answer::Expr(_))));
        let m = Answer::parse(r"\begin{pmatrix}1&2\\3&4\end{pmatrix}").unwrap();
        assert!(matches!(m, Answer::Matrix(r) if r.len() == 2 && r[0].len() == 2));
        let nested = Answer::parse(r"\{(1,2),(3,4)\}").unwrap();
        assert!(matches!(nested, Answer::Set(v) if matches!(v[0], Answer::Bracketed { .. })));
        assert!(matches!(Answer::parse(r"\{(1,2)\}"), Ok(Answer::Set(_))));
    }
}
