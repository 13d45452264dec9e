//! "Final answer" anchors in many languages, and the answer stated after the last one.

use super::math_env::{DELIMS, math_envs};
use super::number::last_number;
use super::phrases::{first_byte_table, last_phrase};
use super::prose::is_formula;
use super::statement::{prose_answer, sentence, stated_part};

/// Phrases after which the final answer follows, lower case (matched ignoring ASCII case,
/// so other scripts list their capitalised forms too). The phrase that ends last wins, the
/// longest among those ending at the same place. A phrase such as "réponse est" also
/// covers "la réponse est" and "la bonne réponse est".
const ANCHORS: &[&str] = &[
    // English
    "final answer is",
    "final answer:",
    "final answer",
    "the answer is",
    "answer is:",
    "answer:",
    "correct answer is",
    "correct option is",
    // French
    "réponse est",
    "réponse finale :",
    "réponse finale:",
    "réponse :",
    "réponse:",
    // German
    "antwort ist",
    "antwort lautet",
    "antwort:",
    // Spanish
    "respuesta es",
    "respuesta correcta es",
    "respuesta final es",
    "respuesta:",
    // Portuguese
    "resposta é",
    "resposta correta é",
    "resposta final é",
    "resposta:",
    // Italian
    "risposta è",
    "risposta corretta è",
    "risposta finale è",
    "risposta:",
    // Dutch
    "antwoord is",
    "antwoord:",
    // Polish
    "odpowiedź to",
    "odpowiedź:",
    // Turkish
    "cevap:",
    "yanıt:",
    // Indonesian
    "jawabannya adalah",
    "jawaban:",
    // Vietnamese
    "đáp án là",
    "đáp án:",
    // Russian
    "ответ:",
    "Ответ:",
    "ответ равен",
    "Ответ равен",
    "ответ —",
    "Ответ —",
    // Chinese
    "答案是",
    "答案为",
    "答案：",
    "答案:",
    "最终答案",
    // Japanese
    "答えは",
    "答え：",
    "答え:",
    "正解は",
    "解答：",
    // Korean
    "답은",
    "답:",
    "답：",
    // Arabic
    "الإجابة هي",
    "الجواب هو",
    // Hindi
    "उत्तर है",
    "उत्तर:",
];

/// How many anchors followed by a negation ("the answer is not 5") are skipped, looking
/// further back each time; bounded so that a text of negated anchors stays linear.
const MAX_NEGATED_ANCHORS: usize = 4;

const ANCHORS_BY_FIRST_BYTE: [u128; 256] = first_byte_table(ANCHORS);

/// The anchor of `hay` that ends last (the longest among those ending there), ignoring
/// ASCII case: its start and length.
fn last_anchor(hay: &[u8]) -> Option<(usize, usize)> {
    last_phrase(hay, ANCHORS, &ANCHORS_BY_FIRST_BYTE, |_, _| true)
}

/// The text after the last anchor phrase ("the answer is", "答案是", ...), to the end of
/// the input; `None` without an anchor. An anchor that is negated ("the answer is not
/// 5", as in a check at the end of a response) does not state the answer, so an earlier
/// one is looked for.
pub fn after_anchor(s: &str) -> Option<&str> {
    let mut end = s.len();
    for _ in 0..MAX_NEGATED_ANCHORS {
        let (at, len) = last_anchor(&s.as_bytes()[..end])?;
        let rest = s[at + len..].trim_start_matches([' ', ':', '\t', '：', '*']);
        if !starts_negated(rest) {
            return Some(rest);
        }
        end = at;
    }
    None
}

/// Whether a statement opens with a negation (`not 5`, `n't 5`).
fn starts_negated(rest: &str) -> bool {
    let head = rest.get(..4).unwrap_or(rest).to_ascii_lowercase();
    head.starts_with("not ") || head.starts_with("not,") || head.starts_with("n't")
}

/// The answer after the last anchor, read from its line (or the next non-empty line, for a
/// heading such as `**Final Answer**`): math opening the line, else the first math in the
/// line's first sentence, else that sentence, or its last number when it reads as prose.
pub fn anchored(s: &str) -> Option<String> {
    let rest = after_anchor(s)?;
    let line = rest.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let at = rest.find(line).unwrap_or(0);
    let opens_math = DELIMS.iter().any(|(d, _)| line.trim_start().starts_with(d));
    // A display may span lines: from the line's start to the end of the input. Otherwise
    // the answer is the first math in the part of the anchor's sentence that states it,
    // or that part.
    let (scope, prose) = if opens_math { (&rest[at..], false) } else { stated_part(sentence(line)) };
    if prose {
        let answer = prose_answer(scope);
        let answer = answer.trim().trim_end_matches(['.', '。']).trim();
        return (!answer.is_empty()).then(|| answer.to_string());
    }
    let answer = match math_envs(scope).into_iter().next() {
        Some(env) => env,
        None => scope,
    };
    let answer = answer.trim().trim_end_matches(['.', '。']).trim();
    // A sentence such as `The area is 64 m²` answers with its number.
    if !is_formula(answer)
        && let Some(n) = last_number(answer)
    {
        return Some(n);
    }
    (!answer.is_empty()).then(|| answer.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors() {
        assert_eq!(anchored("So the answer is 3.5 meters. Yes.").as_deref(), Some("3.5 meters"));
        assert_eq!(anchored("the answer is clearly $x=2$.").as_deref(), Some("x=2"));
        assert_eq!(anchored("所以答案是 12。").as_deref(), Some("12"));
        assert_eq!(anchored("Donc la réponse est $7$.").as_deref(), Some("7"));
        assert_eq!(anchored("no anchor here"), None);
        assert_eq!(anchored("Answer: The area is 64 m².").as_deref(), Some("64"));
        assert_eq!(anchored("The answer is Evelyn.").as_deref(), Some("Evelyn"));
        assert_eq!(anchored("**Final Answer**\n\n$$ 5 $$").as_deref(), Some("5"));
        assert_eq!(anchored("**Final Answer**\n\\[\n\\frac{3}{4}\n\\]").as_deref(), Some(r"\frac{3}{4}"));
        assert_eq!(anchored("Final Answer: The largest $n$ is $34$.").as_deref(), Some("34"));
        assert_eq!(anchored("The answer is 12 (check: 3*4 = 12, 5 left).").as_deref(), Some("12"));
        assert_eq!(anchored("The answer is 12. Note: the answer is not 5.").as_deref(), Some("12"));
        assert_eq!(anchored("La risposta è 7, credo.").as_deref(), Some("7"));
        assert_eq!(anchored("The answer is (1, 2) (the center).").as_deref(), Some("(1, 2)"));
    }
}
