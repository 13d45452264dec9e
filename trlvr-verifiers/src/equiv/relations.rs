//! Equations and inequalities compared as relations: proportional sides, the same symbols.

use crate::eval::{close, points_needed, same, same_function, to_complex, value};
use crate::expr::Expr;
use crate::lexer::RelOp;
use crate::num::Complex;

/// Writes a relation with `<`/`\le` when it only uses `>`/`\ge`.
pub(super) fn oriented<'a>(exprs: &'a [Expr], ops: &[RelOp]) -> (Vec<&'a Expr>, Vec<RelOp>) {
    let greater = !ops.is_empty() && ops.iter().all(|o| matches!(o, RelOp::Gt | RelOp::Ge));
    if greater {
        (exprs.iter().rev().collect(), ops.iter().rev().map(|o| o.flip()).collect())
    } else {
        (exprs.iter().collect(), ops.to_vec())
    }
}

/// Whether two relations state the same thing: the same symbols (once oriented) and, for
/// one relation, proportional sides ([`proportional`]), for a chain, equal sides.
pub(super) fn relations_equal(e1: &[Expr], o1: &[RelOp], e2: &[Expr], o2: &[RelOp]) -> bool {
    // A chain of equalities states its first side equal to its last (`y = 2x + 2x = 4x` is
    // `y = 4x`), whatever its steps say, against a single equation.
    let equalities = |o: &[RelOp]| o.iter().all(|op| *op == RelOp::Eq);
    if equalities(o1) && equalities(o2) && e1.len() != e2.len() && e1.len().min(e2.len()) == 2 {
        let ends = |e: &[Expr]| [e[0].clone(), e[e.len() - 1].clone()];
        return relations_equal(&ends(e1), &[RelOp::Eq], &ends(e2), &[RelOp::Eq]);
    }
    let (e1, o1) = oriented(e1, o1);
    let (e2, o2) = oriented(e2, o2);
    if o1 != o2 || e1.len() != e2.len() {
        return false;
    }
    if e1.len() == 2 {
        let positive = matches!(o1[0], RelOp::Lt | RelOp::Le);
        return proportional(e1[0], e1[1], e2[0], e2[1], positive);
    }
    e1.iter().zip(&e2).all(|(x, y)| same_function(x, y))
}

/// Whether `r1 - l1 = k (r2 - l2)` for one constant `k` (non-zero; positive if asked) at
/// every sample point. Two identities (both sides always equal) also count.
fn proportional(l1: &Expr, r1: &Expr, l2: &Expr, r2: &Expr, positive: bool) -> bool {
    let mut ratio: Option<Complex> = None;
    let mut compared = 0;
    for k in 0..points_needed(&[l1, r1, l2, r2]) {
        let (Ok(a1), Ok(b1), Ok(a2), Ok(b2)) = (value(l1, k), value(r1, k), value(l2, k), value(r2, k))
        else {
            continue;
        };
        compared += 1;
        let (zero1, zero2) = (same(a1, b1), same(a2, b2));
        if zero1 != zero2 {
            return false;
        }
        if zero1 {
            continue;
        }
        let d1 = to_complex(b1) - to_complex(a1);
        let d2 = to_complex(b2) - to_complex(a2);
        let r = d1 / d2;
        match ratio {
            None => ratio = Some(r),
            Some(r0) if !close(r, r0) => return false,
            Some(_) => {}
        }
    }
    if compared == 0 {
        return false;
    }
    match ratio {
        Some(r) if positive => r.is_real() && r.re > 0.0,
        _ => true,
    }
}
