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
            Some(_) => {}
        }
        i += 1;
    }
    out
}

/// The content of the last math environment; alignment marks `&` of a display are dropped
/// (those of a matrix inside are kept).
pub fn last_math_env(s: &str) -> Option<String> {
    let env = math_envs(s).pop()?;
    Some(if env.contains("\\begin{") { env.to_string() } else { env.replace('&', "") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments() {
        assert_eq!(last_math_env("Answer $ 9 $").as_deref(), Some("9"));
        assert_eq!(last_math_env("first $1$ then \\[ 2 \\] and \\( 3 \\)").as_deref(), Some("3"));
        assert_eq!(last_math_env("so\n$$\n4\n$$\nok").as_deref(), Some("4"));
        assert_eq!(last_math_env("she paid $5 and got $3 back"), None);
        assert_eq!(last_math_env(r"costs \$5, that is $x=5$").as_deref(), Some("x=5"));
        assert_eq!(last_math_env("unclosed $5"), None);
        let align = "at $C.$ so \\begin{align*}\nB &= 180 - 104 \\\\\n&= 76.\n\\end{align*}";
        assert_eq!(last_math_env(align).as_deref(), Some("= 76."));
    }
}
