//! Telling a formula from prose.

use crate::lexer::is_function_name;
use crate::normalize::normalize;

/// Whether a short answer reads as a formula rather than prose: after normalisation it
/// is ASCII (no `答案`) and has no run of two or more plain letters (a word such as `so`)
/// outside a command, an environment name or a function name.
pub(crate) fn is_formula(s: &str) -> bool {
    let n = normalize(s);
    if !n.is_ascii() {
        return false;
    }
    let b = n.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i] == b'\\' {
            i += 1;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            if matches!(&n[start..i], "\\begin" | "\\end") && b.get(i) == Some(&b'{') {
                i = n[i..].find('}').map_or(b.len(), |c| i + c + 1);
            }
            continue;
        }
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        if i - start >= 2 && !is_function_name(&n[start..i]) {
            return false;
        }
        i = i.max(start + 1);
    }
    !n.is_empty()
}

/// Whether two plain words (two or more ASCII letters, not a command) follow each other,
/// as in prose.
pub(super) fn reads_like_prose(body: &str) -> bool {
    let mut prev_word = false;
    for w in body.split_whitespace() {
        let word = w.len() >= 2 && w.bytes().all(|c| c.is_ascii_alphabetic());
        if word && prev_word {
            return true;
        }
        prev_word = word;
    }
    false
}
