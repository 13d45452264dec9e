//! Math environments (`$..$`, `\[..\]`, `align`, ...) and what they hold.

use super::prose::reads_like_prose;

/// Delimiters of math environments: opening, closing.
pub(super) const DELIMS: [(&str, &str); 12] = [
    ("$$", "$$"),
    ("\\[", "\\]"),
    ("\\(", "\\)"),
    ("$", "$"),
    ("\\begin{align*}", "\\end{align*}"),
    ("\\begin{align}", "\\end{align}"),
    ("\\begin{equation*}", "\\end{equation*}"),
    ("\\begin{equation}", "\\end{equation}"),
    ("\\begin{gather*}", "\\end{gather*}"),
    ("\\begin{gather}", "\\end{gather}"),
    ("\\begin{eqnarray*}", "\\end{eqnarray*}"),
    ("\\begin{eqnarray}", "\\end{eqnarray}"),
];

/// The contents of the complete math environments of `s` (`$..$`, `$$..$$`, `\(..\)`,
/// `\[..\]`, and the last row of `align`, `equation`, `gather`, `eqnarray`), in order. Escaped dollars (`\$`) are text; an environment that reads like a
/// sentence (two words in a row, as in `$5 and got $`) is currency, not math.
pub fn math_envs(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut open: Option<(usize, &str)> = None;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'$') {
            i += 2;
            continue;
        }
        // Byte-wise, as `i` may sit inside a multi-byte character; every delimiter is ASCII,
        // so the slices taken at its ends are on character boundaries.
        let rest = &b[i..];
        match open {
            None => {
                if let Some((o, c)) = DELIMS.iter().find(|(o, _)| rest.starts_with(o.as_bytes())) {
                    open = Some((i + o.len(), c));
                    i += o.len();
                    continue;
                }
            }
            Some((start, close)) if rest.starts_with(close.as_bytes()) => {
                let mut body = &s[start..i];
                if close.starts_with("\\end") {
                    // A multi-line display: its last non-empty row carries the result.
                    body = body.rsplit("\\\\").find(|r| !r.trim().is_empty()).unwrap_or("");
                }
                if !body.trim().is_empty() && !reads_like_prose(body) {
                    out.push(body.trim());
                }
                open = None;
                i += close.len();
                continue;
            }
            // Inline math (`$..$`, `\(..\)`) ends with its line, as math-verify reads it: a
            // line break inside it means the opening was not math.
            Some((_, close)) if b[i] == b'\n' && matches!(close, "$" | "\\)") => open = None,
            Some(_) => {}
        }
        i += 1;
    }
    out
}

/// The content of the last math environment, with the environments just before it that
/// a joining word (and punctuation) separates from it (`$1$, $2$ and $3$` is the list
/// `1, 2, 3`, as boxes are read); alignment marks `&` of a display are dropped (those of a
/// matrix inside are kept). A matrix written after the last environment without
/// delimiters (`the product is \begin{pmatrix}..\end{pmatrix}`) wins over it.
pub fn last_math_env(s: &str) -> Option<String> {
    let envs = math_envs(s);
    let offset = |e: &str| e.as_ptr() as usize - s.as_ptr() as usize;
    let after_last = envs.last().map_or(0, |e| offset(e) + e.len());
    if let Some(m) = bare_matrix_after(s, after_last) {
        return Some(m.to_string());
    }
    let mut group = vec![*envs.last()?];
    for (k, pair) in envs.windows(2).rev().take(MAX_JOINED_ENVS - 1).enumerate() {
        let gap = &s[offset(pair[0]) + pair[0].len()..offset(pair[1])];
        // Only a joining word before the last one makes a list (`$1$, $2$ and $3$`); a
        // comma alone (`since $x > 0$, $x = 3$`) goes on with the reasoning.
        let worded = k > 0 || gap.chars().any(char::is_alphabetic);
        if !worded || !crate::boxes::joins_boxes(gap) {
            break;
        }
        if !group.contains(&pair[0]) {
            group.push(pair[0]);
        }
    }
    group.reverse();
    let clean = |env: &str| if env.contains("\\begin{") { env.to_string() } else { env.replace('&', "") };
    Some(group.into_iter().map(clean).collect::<Vec<_>>().join(", "))
}

/// Most math environments read as one answer by [`last_math_env`].
const MAX_JOINED_ENVS: usize = 8;

/// The last matrix environment of `s` when all of it stands after byte `from`.
fn bare_matrix_after(s: &str, from: usize) -> Option<&str> {
    let end_at = s.rfind("\\end{").filter(|&e| e >= from)?;
    let rest = &s[end_at + 5..];
    let name = &rest[..rest.find('}')?];
    if !(name.ends_with("matrix") || name == "array") {
        return None;
    }
    let begin = s[from..end_at].rfind(&format!("\\begin{{{name}}}"))? + from;
    Some(&s[begin..end_at + 5 + name.len() + 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments() {
        assert_eq!(last_math_env("Answer $ 9 $").as_deref(), Some("9"));
        assert_eq!(last_math_env("first $1$ then \\[ 2 \\] so \\( 3 \\)").as_deref(), Some("3"));
        assert_eq!(last_math_env("so\n$$\n4\n$$\nok").as_deref(), Some("4"));
        assert_eq!(last_math_env("she paid $5 and got $3 back"), None);
        assert_eq!(last_math_env(r"costs \$5, that is $x=5$").as_deref(), Some("x=5"));
        assert_eq!(last_math_env("unclosed $5"), None);
        let align = "at $C.$ so \\begin{align*}\nB &= 180 - 104 \\\\\n&= 76.\n\\end{align*}";
        assert_eq!(last_math_env(align).as_deref(), Some("= 76."));
        assert_eq!(last_math_env("The values are $1$, $2$ and $3$.").as_deref(), Some("1, 2, 3"));
        assert_eq!(last_math_env("We get $3$ apples and then $4$.").as_deref(), Some("4"));
        assert_eq!(last_math_env("so $x = 1\nsince$ 5"), None);
        let prose = r"so $A$ times $v$ is \begin{pmatrix} 1 \\ 2 \end{pmatrix}.";
        assert_eq!(last_math_env(prose).as_deref(), Some(r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}"));
    }
}
