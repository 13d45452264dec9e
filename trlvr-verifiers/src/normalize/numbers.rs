//! How a number is written: thousands separators, repeating decimals, mixed numbers, and
//! angles in degrees.

/// `12,\!345` (MATH's thousands separator) to `12345`, also with spaces after the `\!`.
pub(super) fn thousands_bang(s: &str) -> String {
    if !s.contains(",\\!") {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b",\\!") && i > 0 && b[i - 1].is_ascii_digit() {
            let mut j = i + 3;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j + 3 <= b.len() && b[j..j + 3].iter().all(u8::is_ascii_digit) {
                i = j;
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// `1,000,000` or `1 000 000` (the whole answer, optionally signed and with decimals) to
/// `1000000`.
pub(super) fn thousands_plain(s: &str) -> String {
    let body = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = match body.split_once('.') {
        Some((a, f)) => (a, Some(f)),
        None => (body, None),
    };
    let Some(sep) = [',', ' '].into_iter().find(|c| int.contains(*c)) else {
        return s.to_string();
    };
    if frac.is_some_and(|f| f.is_empty() || !f.bytes().all(|c| c.is_ascii_digit())) {
        return s.to_string();
    }
    let groups: Vec<&str> = int.split(sep).collect();
    let first_ok = (1..=3).contains(&groups[0].len());
    let all_digits = groups.iter().all(|g| g.bytes().all(|c| c.is_ascii_digit()));
    let rest_ok = groups[1..].iter().all(|g| g.len() == 3);
    if first_ok && all_digits && rest_ok { s.replace(sep, "") } else { s.to_string() }
}

/// A repeating decimal becomes the fraction it equals: `0.\overline{3}` ->
/// `\frac{3}{9}`, `1.2\overline{34}` -> `\frac{1222}{990}` (`A.B` then the repeating
/// block `C`: `(ABC - AB) / (10^|B| (10^|C| - 1))`). Blocks too long for exact integers
/// are left alone.
pub(super) fn repeating_decimals(s: &str) -> String {
    const MARK: &str = r"\overline";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(MARK) {
        let (before, after) = rest.split_at(at);
        let after = &after[MARK.len()..];
        // The repeating block: `{digits}` or one digit.
        let block = match after.strip_prefix('{') {
            Some(inner) => inner.find('}').map(|end| (&inner[..end], &inner[end + 1..])),
            None => after.trim_start().get(..1).map(|d| (d, &after.trim_start()[1..])),
        };
        // The digits before it: `A.B` right at the end of `before`.
        let fixed_len = before.bytes().rev().take_while(u8::is_ascii_digit).count();
        let fixed = &before[before.len() - fixed_len..];
        let head = &before[..before.len() - fixed_len];
        let whole_len =
            head.strip_suffix('.').map_or(0, |h| h.bytes().rev().take_while(u8::is_ascii_digit).count());
        match block {
            Some((c, tail))
                if !c.is_empty()
                    && c.bytes().all(|b| b.is_ascii_digit())
                    && head.ends_with('.')
                    && whole_len + fixed_len + c.len() <= 30 =>
            {
                let start = head.len() - 1 - whole_len;
                let (a, b) = (&head[start..head.len() - 1], fixed);
                let number = |digits: &str| digits.parse::<u128>().unwrap_or(0);
                let num = number(&format!("{a}{b}{c}")) - number(&format!("{a}{b}"));
                let den = 10u128.pow(b.len() as u32) * (10u128.pow(c.len() as u32) - 1);
                out.push_str(&head[..start]);
                out.push_str(&format!("\\frac{{{num}}}{{{den}}}"));
                rest = tail;
            }
            _ => {
                out.push_str(before);
                out.push_str(MARK);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `2 1/2` (the whole answer) to the mixed number `2\frac{1}{2}`.
pub(super) fn mixed_slash(s: &str) -> String {
    let body = s.strip_prefix('-').unwrap_or(s);
    let Some((whole, frac)) = body.split_once(' ') else {
        return s.to_string();
    };
    let Some((num, den)) = frac.split_once('/') else {
        return s.to_string();
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    if digits(whole) && digits(num) && digits(den) {
        let sign = if body.len() < s.len() { "-" } else { "" };
        format!("{sign}{whole}\\frac{{{num}}}{{{den}}}")
    } else {
        s.to_string()
    }
}

/// A trigonometric function of a number of degrees becomes a function of radians
/// (`\sin 30^\circ` -> `\sin(30\pi/180)`), so that the degree sign can then be dropped
/// everywhere else (`90^\circ` -> `90`).
pub(super) fn trig_degrees(s: &str) -> String {
    const TRIG: [&str; 6] = ["\\sin", "\\cos", "\\tan", "\\sec", "\\csc", "\\cot"];
    if !s.contains("circ") || !TRIG.iter().any(|t| s.contains(t)) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some((at, name)) = TRIG.iter().filter_map(|t| rest.find(t).map(|i| (i, *t))).min() {
        out.push_str(&rest[..at + name.len()]);
        rest = &rest[at + name.len()..];
        // `\sin 30^\circ`, `\sin(30^\circ)`, `\sin{30^{\circ}}`
        let body = rest.trim_start();
        let open = body.chars().next().filter(|c| *c == '(' || *c == '{');
        let inner = if open.is_some() { &body[1..] } else { body };
        let digits = inner.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(inner.len());
        let after = &inner[digits..];
        let degree = ["^\\circ", "^{\\circ}"].iter().find(|d| after.starts_with(**d));
        if let (true, Some(d)) = (digits > 0, degree) {
            let mut tail = &after[d.len()..];
            if let Some(o) = open {
                let close = if o == '(' { ')' } else { '}' };
                match tail.strip_prefix(close) {
                    Some(t) => tail = t,
                    None => continue, // unbalanced: leave it alone
                }
            }
            out.push_str(&format!("({}\\pi/180)", &inner[..digits]));
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}
