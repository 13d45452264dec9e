//! The part of an anchored sentence that states the answer, without the subject before
//! it or an aside after it.

use super::math_env::math_envs;
use super::number::last_number;
use super::prose::is_formula;

/// Where an aside begins once the answer has been stated (`12 (check: 3*4 = 12)`,
/// `12, since 5 were left`): a later number in it is not the answer.
const ASIDES: &[&str] = &[
    " (",
    ", since",
    " since ",
    ", because",
    " because ",
    ", as ",
    "; ",
    " — ",
    ", which",
    " which ",
    ", check",
];

/// Words that join a subject to the answer it is said to be (`The largest $n$ is $34$`).
const COPULAS: &[&str] = &[
    " is ",
    " are ",
    " was ",
    " were ",
    " equals ",
    " = ",
    " est ",
    " sont ",
    " ist ",
    " sind ",
    " beträgt ",
    " es ",
    " son ",
    " é ",
    " são ",
    " è ",
    " sono ",
    " равно ",
    " равен ",
    " составляет ",
];

/// The part of an anchored sentence that states the answer. A sentence that reads as
/// prose loses an aside after its answer (`12 (check: 3*4 = 12, and 5 were left)` states
/// `12`) and, when it opens with words, the subject before its last copula whose rest
/// holds a number or math (`The largest $n$ is $34$` states `$34$`). A formula is kept.
/// Also says whether the sentence read as prose, whose answer is then its first math or
/// else its last number ([`prose_answer`]).
pub(crate) fn stated_part(sentence: &str) -> (&str, bool) {
    let s = sentence.trim();
    if s.is_empty() || is_formula(s) {
        return (s, false);
    }
    (after_copula(without_aside(s)), true)
}

/// The answer a prose sentence states: its first math, else a bracketed formula whole (a
/// point `(1, 2)`, an interval), else its last number (`64 m²` states `64`), else itself
/// (`Evelyn`).
pub(crate) fn prose_answer(part: &str) -> String {
    if let Some(env) = math_envs(part).into_iter().next() {
        return env.to_string();
    }
    let bracketed = part.starts_with(['(', '[']) || part.starts_with("\\{");
    if bracketed && is_formula(part) {
        return part.to_string();
    }
    last_number(part).unwrap_or_else(|| part.to_string())
}

/// `s` up to the first [`ASIDES`] marker outside math that follows a number or math.
fn without_aside(s: &str) -> &str {
    let b = s.as_bytes();
    let (mut stated, mut in_dollars, mut in_parens) = (false, false, false);
    for i in 0..b.len() {
        if stated && !in_dollars && !in_parens && ASIDES.iter().any(|m| b[i..].starts_with(m.as_bytes())) {
            return s[..i].trim_end();
        }
        match b[i] {
            b'$' => in_dollars = !in_dollars,
            b'(' if i > 0 && b[i - 1] == b'\\' => in_parens = true,
            b')' if i > 0 && b[i - 1] == b'\\' => in_parens = false,
            c if c.is_ascii_digit() => stated = true,
            _ => {}
        }
        // Closed math counts as a stated answer.
        if (b[i] == b'$' && !in_dollars) || (b[i] == b')' && !in_parens && i > 0 && b[i - 1] == b'\\') {
            stated = true;
        }
    }
    s
}

/// What follows the last copula of a sentence that opens with words, when that holds a
/// number or math; the whole sentence otherwise. A few copulas are tried, from the last.
fn after_copula(s: &str) -> &str {
    let opens_with_word = s.chars().next().is_some_and(|c| c.is_alphabetic())
        && s.split_whitespace().next().is_some_and(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2);
    if !opens_with_word {
        return s;
    }
    let holds_answer = |t: &str| t.bytes().any(|c| c.is_ascii_digit() || c == b'$') || t.contains("\\(");
    let mut end = s.len();
    for _ in 0..8 {
        let Some((at, len)) =
            COPULAS.iter().filter_map(|c| s[..end].rfind(c).map(|i| (i, c.len()))).max_by_key(|&(i, _)| i)
        else {
            break;
        };
        let rest = s[at + len..].trim();
        if holds_answer(rest) {
            return rest;
        }
        end = at;
    }
    s
}

/// Cuts a line at its first sentence end (a period followed by a space or the end, that is
/// not a decimal point, or an ideographic full stop).
pub(crate) fn sentence(line: &str) -> &str {
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'.' && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line.split('。').next().unwrap_or(line)
}
