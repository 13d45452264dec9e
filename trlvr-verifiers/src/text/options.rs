//! Multiple-choice option letters: the one a response chooses, also when its reasoning
//! rules others out first ("not A, therefore B").

use super::anchor::after_anchor;
use super::phrases::{first_byte_table, last_phrase, rfind_ci};
use crate::boxes::boxed;
use crate::normalize::normalize;

/// Whether `c` can name a multiple-choice option (`I` is left out: it is a pronoun).
fn option_letter(c: char) -> bool {
    matches!(c, 'A'..='H' | 'J')
}

/// The option letter a response chooses, for a multiple-choice gold: a boxed letter, the
/// letter after an anchor ("the answer is C", "答案是 C"), else a letter that opens the
/// response (`D. ...`, `(A) is ...`, `B。...`), else the letter a reasoning concludes with
/// ("not A, therefore B"), else the letter after "option"/"choice", else the only option
/// letter standing alone in the text that is not ruled out ("not A").
pub fn choice(s: &str) -> Option<char> {
    // `article`: an `A` followed by a lower-case word is the article, not an option.
    let lead = |t: &str, article: bool| -> Option<char> {
        let t = t.trim_start().trim_start_matches(['(', '*', '[']);
        let t = t.strip_prefix("\\text{").unwrap_or(t).trim_start_matches('(');
        let mut cs = t.chars();
        let c = cs.next().filter(|c| option_letter(*c))?;
        match cs.next() {
            None => Some(c),
            Some(n) if n.is_ascii_alphanumeric() => None,
            // `A good answer ...` is an article, not an option.
            Some(' ') if article && c == 'A' && cs.next().is_some_and(|n| n.is_ascii_lowercase()) => None,
            Some(_) => Some(c),
        }
    };
    let boxed = boxed(s).map(|b| normalize(&b));
    if let Some(c) = boxed.as_deref().and_then(|b| lead(b, false)) {
        return Some(c);
    }
    if let Some(c) = after_anchor(s).and_then(|t| lead(t, false)) {
        return Some(c);
    }
    if let Some(c) = lead(s, true) {
        return Some(c);
    }
    if let Some(c) = concluded_option(s) {
        return Some(c);
    }
    for word in ["option ", "choice "] {
        if let Some(c) = rfind_ci(s, word).and_then(|at| lead(&s[at + word.len()..], false)) {
            return Some(c);
        }
    }
    // The only option letter the text names without ruling it out.
    let mut found = None;
    let chars: Vec<char> = s.chars().collect();
    let mut last_negated = false;
    for (k, &c) in chars.iter().enumerate() {
        let alone = |j: Option<&char>| j.is_none_or(|n| !n.is_alphanumeric());
        let standalone = alone(k.checked_sub(1).and_then(|j| chars.get(j))) && alone(chars.get(k + 1));
        if option_letter(c) && standalone && !in_formula(&chars, k) {
            last_negated = ruled_out(&chars, k, last_negated);
            match found {
                _ if last_negated => {}
                None => found = Some(c),
                Some(f) if f != c => return None,
                Some(_) => {}
            }
        }
    }
    found
}

/// Whether the letter at `chars[k]` is a symbol in a formula (`\mathrm{E}*2`, `2E`,
/// `E^2`) rather than an option: an operator or a digit touches it (across braces).
fn in_formula(chars: &[char], k: usize) -> bool {
    let operator = |c: &&char| "*+/^=_<>".contains(**c) || c.is_ascii_digit();
    let after = chars[k + 1..].iter().find(|c| !matches!(c, '}' | ')'));
    let before = chars[..k].iter().rev().find(|c| !matches!(c, '{' | '('));
    after.is_some_and(|c| operator(&c)) || before.is_some_and(|c| operator(&c))
}

/// Words after which a response names the option it settles on ("so it is not A,
/// therefore B"), matched at word starts ignoring ASCII case.
const CONCLUSIONS: &[&str] = &[
    "therefore",
    "thus",
    "hence",
    "so",
    "must be",
    "it is",
    "it's",
    "donc",
    "daher",
    "deshalb",
    "por lo tanto",
    "portanto",
    "quindi",
    "dunque",
    "поэтому",
    "значит",
    "因此",
    "所以",
    "故",
    "따라서",
    "したがって",
    "よって",
];

const CONCLUSIONS_BY_FIRST_BYTE: [u128; 256] = first_byte_table(CONCLUSIONS);

/// Words that rule out the option letter after them (`not A`, `nicht B`).
const NEGATIONS: &[&str] = &[
    "not", "isn't", "wasn't", "can't", "cannot", "nor", "neither", "never", "except", "nicht", "kein", "pas",
    "non", "no", "não", "не",
];

/// Words that rule out the option letter before them (`A fails`, `B is wrong`).
const FAILURES: &[&str] = &[
    "fails",
    "fail",
    "failed",
    "is wrong",
    "is incorrect",
    "is false",
    "is impossible",
    "is not",
    "isn't",
    "is out",
    "doesn't",
    "does not",
    "cannot",
    "can't",
    "won't",
    "is eliminated",
    "is ruled out",
];

/// The option letter named right after the last conclusion word ([`CONCLUSIONS`]) and
/// not ruled out there: the first of its clause within a few words. A letter that the
/// reasoning rejects (`so it is not A`) is skipped, so "not A, therefore B" reads `B`.
fn concluded_option(s: &str) -> Option<char> {
    let b = s.as_bytes();
    // Whole words only: `so` is not the end of `also`.
    let word_byte = |i: Option<usize>| i.and_then(|i| b.get(i)).is_some_and(u8::is_ascii_alphanumeric);
    let bounded = |start: usize, end: usize| !word_byte(start.checked_sub(1)) && !word_byte(Some(end));
    let (at, len) = last_phrase(b, CONCLUSIONS, &CONCLUSIONS_BY_FIRST_BYTE, bounded)?;
    let rest = &s[at + len..];
    // The clause: to its sentence end, and not far.
    let clause: String =
        rest.chars().take_while(|&c| !matches!(c, '\n' | '。' | '!' | '?')).take(60).collect();
    let clause = clause.split(". ").next().unwrap_or("");
    let chars: Vec<char> = clause.chars().collect();
    let alone = |j: Option<&char>| j.is_none_or(|n| !n.is_ascii_alphanumeric());
    let mut last_negated = false;
    for (k, &c) in chars.iter().enumerate() {
        if !option_letter(c)
            || !alone(k.checked_sub(1).and_then(|j| chars.get(j)))
            || !alone(chars.get(k + 1))
        {
            continue;
        }
        if c == 'A' && is_article(&chars[k + 1..]) {
            continue;
        }
        last_negated = ruled_out(&chars, k, last_negated);
        if !last_negated {
            return Some(c);
        }
    }
    None
}

/// Whether an `A` followed by `after` is the article (`A good guess`) rather than the
/// option (`A or B`, `A fails`): a lower-case word follows that does not join or judge.
fn is_article(after: &[char]) -> bool {
    let [' ', rest @ ..] = after else { return false };
    let word: String = rest.iter().take_while(|c| c.is_alphabetic() || **c == '\'').collect();
    const JUDGING: &[&str] = &[
        "or", "and", "nor", "is", "was", "fails", "fail", "cannot", "can't", "isn't", "doesn't", "does",
        "must", "works", "holds",
    ];
    word.starts_with(|c: char| c.is_ascii_lowercase()) && !JUDGING.contains(&word.as_str())
}

/// Whether the option letter at `chars[k]` is ruled out: a negation just before it
/// (`not A`, `不是A`), a failure just after it (`A fails`), or, right after a ruled-out
/// letter, a joining `or`/`nor`/`and`/`,` (`not A or B`).
fn ruled_out(chars: &[char], k: usize, previous_ruled_out: bool) -> bool {
    let before: String = chars[k.saturating_sub(20)..k].iter().collect();
    let before = before.trim_end_matches([' ', '(', '[', '*', '"']).to_lowercase();
    if before.ends_with("不是") || before.ends_with('不') || before.ends_with('非') {
        return true;
    }
    // The last words before the letter: a negation, possibly before a verb or a noun such
    // as `be` or `option` (`cannot be A`, `not option A`).
    let mut words = before.rsplit(|c: char| !(c.is_alphabetic() || c == '\'')).filter(|w| !w.is_empty());
    let last_word = words.next().unwrap_or("");
    let filler = |w: &str| matches!(w, "be" | "is" | "was" | "option" | "choice" | "answer" | "the" | "sein");
    if NEGATIONS.contains(&last_word)
        || (filler(last_word) && words.next().is_some_and(|w| NEGATIONS.contains(&w)))
    {
        return true;
    }
    let joined = matches!(last_word, "or" | "nor" | "and") || before.ends_with([',', '/']);
    if previous_ruled_out && joined {
        return true;
    }
    let after: String = chars[k + 1..chars.len().min(k + 24)].iter().collect();
    let after = after.trim_start_matches([' ', ')', ']', '*', '"']).to_lowercase();
    FAILURES
        .iter()
        .any(|f| after.starts_with(f) && !after[f.len()..].chars().next().is_some_and(char::is_alphanumeric))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters() {
        assert_eq!(choice("thinking about it I think the correct answer is C"), Some('C'));
        assert_eq!(choice("D. it can't be A or B"), Some('D'));
        assert_eq!(choice("B。不是 A"), Some('B'));
        assert_eq!(choice("(A) is correct"), Some('A'));
        assert_eq!(choice("Option A works, since B and C fail."), Some('A'));
        assert_eq!(choice("A good guess: maybe B or C"), None);
        assert_eq!(choice("I think so"), None);
        assert_eq!(choice(r"A and B fail, so $\boxed{\text{(C)}}$"), Some('C'));
        assert_eq!(choice("so it is not A, therefore B"), Some('B'));
        assert_eq!(choice("Thus it cannot be A or B but C."), Some('C'));
        assert_eq!(choice("Also, B holds."), Some('B'));
        assert_eq!(choice("It is not A. Not C either."), None);
        assert_eq!(choice(r"$\mathrm{E}*2$"), None);
        assert_eq!(choice("$2E$"), None);
    }
}
