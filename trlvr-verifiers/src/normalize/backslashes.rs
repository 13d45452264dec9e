//! LaTeX escaped twice, as a JSON string escaped once more leaves it.

use std::borrow::Cow;

/// LaTeX escaped twice (`\\frac{1}{2}`, as when a JSON string is escaped again), with its
/// backslashes halved; any other text unchanged. It counts as doubled when every run of
/// backslashes has an even length and one of them starts a command or a bracket
/// (`\\frac`, `\\{`, `\\(`). That is safe on real LaTeX: it writes its commands with one
/// backslash (one is enough to leave the text alone), and its row breaks `\\` stand before
/// spaces, digits or newlines.
///
/// ```
/// use trlvr_verifiers::normalize::undouble_backslashes;
///
/// assert_eq!(undouble_backslashes(r"\\frac{1}{2}"), r"\frac{1}{2}");
/// assert_eq!(undouble_backslashes(r"\begin{pmatrix}1\\2\end{pmatrix}"), r"\begin{pmatrix}1\\2\end{pmatrix}");
/// assert_eq!(undouble_backslashes(r"1 \\ 2"), r"1 \\ 2");
/// ```
pub fn undouble_backslashes(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    let mut doubled = false;
    let mut i = 0;
    // `find` jumps to the next backslash with a fast byte search; most LaTeX stops at its
    // first command.
    while let Some(next) = s[i..].find('\\') {
        i += next;
        let start = i;
        while i < b.len() && b[i] == b'\\' {
            i += 1;
        }
        if (i - start) % 2 == 1 {
            return Cow::Borrowed(s);
        }
        doubled |= b.get(i).is_some_and(|c| c.is_ascii_alphabetic() || b"{}()[]".contains(c));
    }
    if !doubled {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() / 2 + 1);
    let mut skip = false;
    for c in s.chars() {
        if c == '\\' {
            if !skip {
                out.push(c);
            }
            skip = !skip;
        } else {
            skip = false;
            out.push(c);
        }
    }
    Cow::Owned(out)
}
