//! What stands around an answer's value: units after it, an approximation of it, a
//! multiple-choice letter, and spacing.

/// `a \approx b` keeps the exact value `a` that was approximated, or `b` when `a` is only a
/// variable name (`x \approx 3.14`).
pub(super) fn approximation(s: &str) -> String {
    const MARK: &str = "\\approx";
    let Some(at) = s.find(MARK) else {
        return s.to_string();
    };
    let left = s[..at].trim();
    let lone_var = left.len() == 1 && left.bytes().all(|c| c.is_ascii_alphabetic());
    if left.is_empty() || lone_var {
        let right = &s[at + MARK.len()..];
        right.rsplit(MARK).next().unwrap_or(right).trim().to_string()
    } else {
        left.to_string()
    }
}

/// Collapses whitespace; keeps one space only between two alphanumeric characters (as in
/// `\cot x`, `north east` or `1 000`) and after a comma before a digit (`1, 234`), drops it
/// elsewhere.
pub(super) fn spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = false;
    for c in s.trim().chars() {
        if c.is_whitespace() {
            pending = true;
            continue;
        }
        if pending {
            let prev = out.chars().last();
            let prev_alnum = prev.is_some_and(|p| p.is_alphanumeric());
            // `1, 234` is a list of two numbers, unlike `1,234`: keep that space.
            let list_of_numbers = prev == Some(',') && c.is_ascii_digit();
            if (prev_alnum && c.is_alphanumeric()) || list_of_numbers {
                out.push(' ');
            }
            pending = false;
        }
        out.push(c);
    }
    out
}

/// Two-letter words that are units; other two-letter words are products of variables.
const SHORT_UNITS: &[&str] =
    &["cm", "mm", "km", "kg", "mg", "ft", "yd", "mi", "in", "oz", "lb", "hr", "ml", "cc", "sq"];

/// Drops words after a number: `5 cm`, `12 dollars`, `x=5 apples`, `15 cm^2`, `10 sq units`
/// (up to four words of three or more letters or known two-letter units, after a digit, `}`, `)` or a command
/// such as `\pi`).
pub(super) fn strip_units(s: &str) -> String {
    let mut cur = s;
    let mut best = s;
    for _ in 0..4 {
        let b = cur.as_bytes();
        let mut end = b.len();
        // An optional power on the unit: `^2`, `^{3}`.
        if end >= 2 && b[end - 2] == b'^' && b[end - 1].is_ascii_digit() {
            end -= 2;
        }
        let mut start = end;
        while start > 0 && b[start - 1].is_ascii_alphabetic() {
            start -= 1;
        }
        let word = &cur[start..end];
        let unit_like = word.len() >= 3 || SHORT_UNITS.contains(&word);
        if !unit_like || start == 0 || !b[start - 1].is_ascii_whitespace() {
            break;
        }
        cur = cur[..start].trim_end();
        let tail = cur.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let after_command = tail.len() < cur.len() && tail.ends_with('\\');
        let after_number = after_command
            || cur.as_bytes().last().is_some_and(|c| c.is_ascii_digit() || *c == b'}' || *c == b')');
        if after_number {
            best = cur;
        }
    }
    best.to_string()
}

/// `(B)` to `B`: a parenthesised capital letter is a multiple-choice answer; `(C) 12` (an
/// option A to E followed by its content) is also just `C`.
pub(super) fn choice_letter(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() >= 3 && b[0] == b'(' && b[1].is_ascii_uppercase() && b[2] == b')' {
        let rest = &b[3..];
        let option_with_content =
            (b'A'..=b'E').contains(&b[1]) && !matches!(rest.first(), Some(b'(' | b'^' | b'_' | b'\\'));
        if rest.is_empty() || option_with_content {
            return (b[1] as char).to_string();
        }
    }
    s.to_string()
}
