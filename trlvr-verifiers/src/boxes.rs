//! `\boxed{..}` answers: the last well-formed box, the boxes that together give one
//! answer (`\boxed{1}` and `\boxed{2}`), and the strict last box of training.

use crate::equiv::equivalent;
use crate::normalize::matching_brace;

/// Longest extracted answer, in bytes; longer candidates are rejected.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// The content of the last well-formed `\boxed{..}`, `\boxed X` or `\fbox{..}`.
pub fn boxed(s: &str) -> Option<String> {
    last_box_before(s, s.len()).map(|(_, content)| content)
}

/// The last well-formed box that starts before `end`: where it starts, and its content.
fn last_box_before(s: &str, mut end: usize) -> Option<(usize, String)> {
    // Try the last few occurrences only, so that a flood of broken boxes stays linear.
    for _ in 0..8 {
        let (at, name_len) = last_box_command(&s[..end])?;
        if let Some(content) = box_content(&s[at + name_len..]) {
            return Some((at, content));
        }
        end = at;
    }
    None
}

/// Most boxes read as one answer by [`boxed_group`] (the last ones of a longer run).
pub const MAX_BOXES: usize = 8;

/// Longest text between two boxes of one answer, in bytes.
const MAX_BOX_GAP: usize = 48;

/// Words that may join boxes of one answer (`$\boxed{1}$ and $\boxed{2}$`), in several
/// languages.
const BOX_JOINERS: &[&str] =
    &["and", "or", "und", "oder", "et", "ou", "y", "o", "e", "i", "и", "или", "和", "或", "、", "及", "以及"];

/// The answer in the last boxes of `s`: the last well-formed box, and with it the boxes
/// just before it when only punctuation, math delimiters, spacing and joining words such
/// as "and" stand between them (`x = \boxed{1}` and `\boxed{2}`); several boxes are
/// read as the list `1, 2` (an answer boxed twice, in any spelling, counts once). Boxes
/// separated by prose (`\boxed{12} is wrong, so \boxed{13}`) are separate answers, and the
/// last one wins as in [`boxed`].
///
/// ```
/// use trlvr_verifiers::extract::boxed_group;
///
/// assert_eq!(boxed_group(r"so $\boxed{1}$ and $\boxed{2}$.").as_deref(), Some("1, 2"));
/// assert_eq!(boxed_group(r"\boxed{1}, then we see \boxed{2}").as_deref(), Some("2"));
/// assert_eq!(boxed_group(r"\boxed{5} \boxed{5}").as_deref(), Some("5"));
/// ```
pub fn boxed_group(s: &str) -> Option<String> {
    let (mut start, last) = last_box_before(s, s.len())?;
    let mut group = vec![last];
    for _ in 1..MAX_BOXES {
        let Some((at, content)) = joined_box_before(s, start) else { break };
        // The same answer written twice (`15\frac{39}{40}` or `\frac{639}{40}`) counts once.
        if !group.iter().any(|g| equivalent(g, content)) {
            group.push(content.to_string());
        }
        start = at;
    }
    if group.len() == 1 {
        return group.pop();
    }
    group.reverse();
    Some(group.join(", "))
}

/// The box that ends shortly before `start` with only joiners after it: where it starts,
/// and its content. Looks back from `start` over at most [`MAX_BOX_GAP`] bytes for the box's
/// closing brace.
fn joined_box_before(s: &str, start: usize) -> Option<(usize, &str)> {
    let b = s.as_bytes();
    let lo = start.saturating_sub(MAX_BOX_GAP + 1);
    // From the nearest `}` back: once the text after one does not join, no earlier one can,
    // so prose before a box (`the answer is $\boxed`) stops this at once.
    for close in (lo..start).rev().filter(|&i| b[i] == b'}') {
        if !joins_boxes(&s[close + 1..start]) {
            return None;
        }
        let Some(open) = opening_brace(s, close) else { continue };
        let Some(name_len) = ["\\boxed", "\\fbox"].iter().find(|n| s[..open].ends_with(*n)).map(|n| n.len())
        else {
            continue;
        };
        // The braces must match read forwards too (escaped braces, `\\`).
        let content = &s[open + 1..close];
        if box_content(&s[open..]).is_some_and(|c| c.len() == content.len()) {
            return Some((open - name_len, content));
        }
    }
    None
}

/// The `{` that the `}` at `close` closes, looking back at most [`MAX_ANSWER_BYTES`].
fn opening_brace(s: &str, close: usize) -> Option<usize> {
    let b = s.as_bytes();
    let lo = close.saturating_sub(MAX_ANSWER_BYTES);
    let mut depth = 0usize;
    for i in (lo..=close).rev() {
        let escaped = i > 0 && b[i - 1] == b'\\';
        match b[i] {
            b'}' if !escaped => depth += 1,
            b'{' if !escaped => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether the text between two boxes (or math environments) only joins them:
/// punctuation, math delimiters, spacing commands, `\text{..}`, the words of
/// [`BOX_JOINERS`] and a label such as `x_2 =` before the next answer.
pub(crate) fn joins_boxes(gap: &str) -> bool {
    if gap.len() > MAX_BOX_GAP {
        return false;
    }
    let mut rest = gap;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() || matches!(c, '$' | ',' | ';' | '&' | '{' | '}') {
            rest = &rest[c.len_utf8()..];
        } else if let Some(command) = rest.strip_prefix('\\') {
            let name_len = command.bytes().take_while(u8::is_ascii_alphabetic).count();
            let name = &command[..name_len];
            let spacing = name.is_empty() && command.starts_with([',', ';', ' ', '(', ')', '[', ']']);
            if !spacing && !matches!(name, "text" | "mbox" | "textrm" | "quad" | "qquad") {
                return false;
            }
            rest = &command[name_len.max(1)..];
        } else if let Some(len) = label_len(rest) {
            rest = &rest[len..];
        } else {
            let len =
                rest.find(|c: char| !c.is_alphabetic() && c != '、').unwrap_or(rest.len()).max(c.len_utf8());
            let word = &rest[..len];
            if !BOX_JOINERS.iter().any(|j| j.eq_ignore_ascii_case(word)) {
                return false;
            }
            rest = &rest[len..];
        }
    }
    true
}

/// The length of a label that names the next answer (`x_2 =`, `AB=`, `y_{1} =`): one or
/// two ASCII letters, a subscript, spaces and `=`; `None` if `s` does not open with one.
fn label_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    if !(1..=2).contains(&i) {
        return None;
    }
    if b.get(i) == Some(&b'_') {
        i += 1 + b[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'{' | b'}'))
            .count();
    }
    i += b[i..].iter().take_while(|c| **c == b' ').count();
    (b.get(i) == Some(&b'=')).then_some(i + 1)
}

/// The content of the last `\boxed`/`\fbox` occurrence, or `None` when there is none or it
/// is malformed (unbalanced braces, nothing after it). Never looks at an earlier box.
///
/// ```
/// use trlvr_verifiers::extract::last_box;
///
/// assert_eq!(last_box(r"\boxed{1} then \boxed{2}").as_deref(), Some("2"));
/// assert_eq!(last_box(r"\boxed{1} then \boxed{2"), None);
/// ```
pub fn last_box(s: &str) -> Option<String> {
    let (at, name_len) = last_box_command(s)?;
    box_content(&s[at + name_len..])
}

/// Where the last `\boxed` or `\fbox` of `hay` starts, and the command's length. An
/// `\fbox` only matters after the last `\boxed`, so it is looked for there alone.
fn last_box_command(hay: &str) -> Option<(usize, usize)> {
    const BOXED: &str = "\\boxed";
    const FBOX: &str = "\\fbox";
    match hay.rfind(BOXED) {
        Some(at) => Some(hay[at..].rfind(FBOX).map_or((at, BOXED.len()), |f| (at + f, FBOX.len()))),
        None => hay.rfind(FBOX).map(|at| (at, FBOX.len())),
    }
}

/// What follows a `\boxed` command: a braced group, or one space-separated token.
fn box_content(rest: &str) -> Option<String> {
    if let Some(inner) = rest.strip_prefix('{') {
        let close = matching_brace(rest, 0)?;
        return Some(inner[..close - 1].to_string());
    }
    let token = rest.strip_prefix(' ')?.trim_start();
    let end = token.find(|c: char| c.is_whitespace() || c == '$').unwrap_or(token.len());
    let t = token[..end].trim_end_matches(['.', ',']);
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes() {
        assert_eq!(boxed(r"\boxed{\frac{1}{2}}").as_deref(), Some(r"\frac{1}{2}"));
        assert_eq!(boxed(r"a \boxed{1} b \boxed{\{1,2\}}").as_deref(), Some(r"\{1,2\}"));
        assert_eq!(boxed(r"\boxed 5$.").as_deref(), Some("5"));
        assert_eq!(boxed(r"\fbox{7}").as_deref(), Some("7"));
        assert_eq!(boxed(r"\boxed{2} then \boxed{3").as_deref(), Some("2"));
        assert_eq!(boxed("nothing"), None);
    }
}
