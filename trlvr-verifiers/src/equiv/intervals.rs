//! The intervals that an inequality, an interval or a union of intervals describes.

use super::relations::oriented;
use crate::answer::Answer;
use crate::eval::{to_complex, value};
use crate::expr::{Expr, Func};
use crate::lexer::RelOp;

/// The intervals an answer describes and the variable it constrains, if any.
pub(super) fn intervals(a: &Answer) -> Option<(Option<&str>, Vec<Answer>)> {
    let interval = |x: &Answer| matches!(x, Answer::Bracketed { items, .. } if items.len() == 2);
    match a {
        Answer::Bracketed { .. } if interval(a) => Some((None, vec![a.clone()])),
        Answer::Union(parts) if parts.iter().all(interval) => Some((None, parts.clone())),
        Answer::Relation { exprs, ops } => inequality_intervals(exprs, ops),
        Answer::Set(items) if items.len() >= 2 => {
            let mut var = None;
            let mut out = Vec::new();
            for item in items {
                let Answer::Relation { exprs, ops } = item else { return None };
                let (v, parts) = inequality_intervals(exprs, ops)?;
                if var.is_some() && var != v {
                    return None;
                }
                var = v;
                out.extend(parts);
            }
            Some((var, out))
        }
        _ => None,
    }
}

/// The intervals of an inequality in one variable `v` (`v < c`, `a \le v < b`) or in its
/// distance from a point (`|v + c| < r`, `r \le |v - c|`, `a \le |v| \le b`).
fn inequality_intervals<'a>(exprs: &'a [Expr], ops: &[RelOp]) -> Option<(Option<&'a str>, Vec<Answer>)> {
    if let Some(interval) = as_interval(exprs, ops) {
        let (e, _) = oriented(exprs, ops);
        let var = e.iter().find_map(|x| x.as_var());
        return Some((var, vec![interval]));
    }
    let (e, o) = oriented(exprs, ops);
    if o.iter().any(|op| !matches!(op, RelOp::Lt | RelOp::Le)) {
        return None;
    }
    let closed = |op: RelOp| op == RelOp::Le;
    let inf = || Expr::Inf;
    let minus_inf = || Expr::Neg(Box::new(Expr::Inf));
    let piece = |lo: Expr, hi: Expr, lo_closed: bool, hi_closed: bool| Answer::Bracketed {
        open: if lo_closed { '[' } else { '(' },
        close: if hi_closed { ']' } else { ')' },
        items: vec![Answer::Expr(lo), Answer::Expr(hi)],
    };
    let positive = |x: &Expr, zero_ok: bool| {
        !x.has_vars()
            && value(x, 0).is_ok_and(|v| {
                let z = to_complex(v);
                z.is_real() && (z.re > 0.0 || (zero_ok && z.re == 0.0))
            })
    };
    match (e.as_slice(), o.as_slice()) {
        // |v + c| < r: one interval around -c.
        ([abs, r], [op]) if distance(abs).is_some() => {
            let (v, c) = distance(abs)?;
            positive(r, false).then_some(())?;
            Some((Some(v), vec![piece(shift(neg(r), c), shift((*r).clone(), c), closed(*op), closed(*op))]))
        }
        // r < |v + c|: two rays.
        ([r, abs], [op]) if distance(abs).is_some() => {
            let (v, c) = distance(abs)?;
            positive(r, true).then_some(())?;
            let left = piece(minus_inf(), shift(neg(r), c), false, closed(*op));
            let right = piece(shift((*r).clone(), c), inf(), closed(*op), false);
            Some((Some(v), vec![left, right]))
        }
        // a < |v + c| < b: two intervals, mirror images around -c.
        ([a, abs, b], [lo, hi]) => {
            let (v, c) = distance(abs)?;
            positive(a, true).then_some(())?;
            let left = piece(shift(neg(b), c), shift(neg(a), c), closed(*hi), closed(*lo));
            let right = piece(shift((*a).clone(), c), shift((*b).clone(), c), closed(*lo), closed(*hi));
            Some((Some(v), vec![left, right]))
        }
        _ => None,
    }
}

/// `|v + c|` (or `|v - c|`, `|c + v|`, `|v|`) as the variable and its shift `c`.
fn distance(e: &Expr) -> Option<(&str, Option<&Expr>)> {
    let Expr::Func(Func::Abs, inner) = e else { return None };
    match &**inner {
        Expr::Var(v) => Some((v, None)),
        Expr::Add(xs) if xs.len() == 2 => match (&xs[0], &xs[1]) {
            (Expr::Var(v), c) | (c, Expr::Var(v)) if !c.has_vars() => Some((v, Some(c))),
            _ => None,
        },
        _ => None,
    }
}

/// `-x`.
fn neg(x: &Expr) -> Expr {
    Expr::Neg(Box::new(x.clone()))
}

/// `x - c`: an end of `|v + c| ...` moved back by the shift.
fn shift(x: Expr, c: Option<&Expr>) -> Expr {
    match c {
        Some(c) => Expr::Add(vec![x, neg(c)]),
        None => x,
    }
}

/// The interval described by `x < c`, `c \le x`, `a < x \le b` (after orientation).
pub(super) fn as_interval(exprs: &[Expr], ops: &[RelOp]) -> Option<Answer> {
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
