//! Finding the final answer in a model response.
//!
//! Every search here is a linear scan (at most a few passes over the input), so a
//! megabyte-long response costs milliseconds, and an answer is capped at
//! [`MAX_ANSWER_BYTES`].
//!
//! This module picks and orders the stages; boxes are read by a small module of their own
//! (re-exported here: [`boxed`], [`boxed_group`], [`last_box`]) and free text by
//! [`crate::text`].

use serde::{Deserialize, Serialize};

pub use crate::boxes::{MAX_ANSWER_BYTES, MAX_BOXES, boxed, boxed_group, last_box};
use crate::normalize::undouble_backslashes;
pub use crate::text::last_number;
use crate::text::{
    after_anchor, anchored, is_formula, last_math_env, prose_answer, rfind_ci, sentence, stated_part,
};

/// Longest input that [`Extraction::Bare`] (and the bare fall-back of
/// [`Extraction::Math`]) accepts as an answer in its entirety.
pub const MAX_BARE_BYTES: usize = 200;

/// Where a dataset puts its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Extraction {
    /// MATH style: the last `\boxed{..}`/`\fbox{..}` (with the boxes joined to it, see
    /// [`boxed_group`]), then the answer after the last "the answer is X" or "final
    /// answer: X" phrase ([`phrase`]), then the whole input if it is a short single line.
    #[default]
    Math,
    /// GSM8K style: the last `#### N`, then as [`Extraction::Math`] (without the bare
    /// fall-back), then the last number in the text.
    Gsm8k,
    /// The whole input is the answer (surrounding `$..$`, `\(..\)`, `\[..\]` or a lone
    /// `\boxed{..}` are removed). For reference answers.
    Bare,
    /// The strict training rule: the content of the last `\boxed`/`\fbox` of the whole
    /// response, and nothing else. A malformed last box means no answer, so a model cannot
    /// earn a reward from an earlier box it later abandoned.
    LastBox,
    /// Free text, for grading: the stages of the [`Pipeline`] in their order of priority.
    Pipeline(Pipeline),
}

impl Extraction {
    /// The grader's extraction: every stage of the [`Pipeline`].
    pub const FREE: Self = Self::Pipeline(Pipeline::FULL);

    /// How to read references written as a dataset says (`trlvr::data`; feature `trlvr`): after `####`,
    /// in the solution's last `\boxed{}`, or whole.
    #[cfg(feature = "trlvr")]
    pub fn for_references(format: trlvr::data::ReferenceFormat) -> Self {
        match format {
            trlvr::data::ReferenceFormat::Hashes => Self::Gsm8k,
            trlvr::data::ReferenceFormat::Boxed => Self::Math,
            trlvr::data::ReferenceFormat::Bare => Self::Bare,
        }
    }
}

/// Which stages of free-text extraction run. They are tried in the order of the fields;
/// the first that finds an answer wins:
///
/// 1. `boxed`: the last well-formed `\boxed{..}`/`\fbox{..}` (an earlier one when the last
///    is broken), with the boxes joined to it by "and", commas or the like
///    ([`boxed_group`]);
/// 2. `hashes`: the rest of the line after the last `####` (GSM8K);
/// 3. `formula`: the whole input when it is a short formula (one line of at most
///    [`MAX_BARE_BYTES`] without plain words), so a bare `x^2+1` is not read as its last
///    number;
/// 4. `anchor`: after the last "final answer" phrase that is not negated, in many
///    languages ([`crate::text::anchored`]);
/// 5. `math_env`: the last math environment `$..$`, `$$..$$`, `\(..\)`, `\[..\]`;
/// 6. `number`: the last number in the text (decimal commas and thousands separators
///    read as such);
/// 7. `text`: the whole input when it is one short line (a text answer such as `Evelyn`).
///
/// With `letters`, a gold that is a multiple-choice letter makes the grader read the
/// response's chosen option instead ([`crate::text::choice`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(clippy::struct_excessive_bools)]
pub struct Pipeline {
    /// The last well-formed box.
    pub boxed: bool,
    /// `#### N`.
    pub hashes: bool,
    /// A whole input that is a formula.
    pub formula: bool,
    /// After a "final answer" phrase.
    pub anchor: bool,
    /// The last math environment.
    pub math_env: bool,
    /// The last number.
    pub number: bool,
    /// A whole short single-line input.
    pub text: bool,
    /// Option letters for a multiple-choice gold.
    pub letters: bool,
}

impl Pipeline {
    /// Every stage.
    pub const FULL: Self = Self {
        boxed: true,
        hashes: true,
        formula: true,
        anchor: true,
        math_env: true,
        number: true,
        text: true,
        letters: true,
    };
    /// No stage (a starting point for choosing a few with struct update syntax).
    pub const NONE: Self = Self {
        boxed: false,
        hashes: false,
        formula: false,
        anchor: false,
        math_env: false,
        number: false,
        text: false,
        letters: false,
    };

    /// Runs the stages in order.
    pub fn run(&self, s: &str) -> Option<String> {
        let short_line = s.len() <= MAX_BARE_BYTES && !s.trim().contains('\n');
        let stages: [(bool, &dyn Fn() -> Option<String>); 7] = [
            (self.boxed, &|| boxed_group(s)),
            (self.hashes, &|| hashes(s)),
            (self.formula && short_line, &|| bare(s).filter(|b| is_formula(b))),
            (self.anchor, &|| anchored(s)),
            (self.math_env, &|| last_math_env(s)),
            (self.number, &|| last_number(s)),
            (self.text && short_line, &|| bare(s)),
        ];
        stages.iter().filter(|(on, _)| *on).find_map(|(_, stage)| stage())
    }
}

/// Extracts the answer from `response` the way `how` says; `None` when there is none.
///
/// ```
/// use trlvr_verifiers::{Extraction, extract};
///
/// let r = r"So $x = \boxed{\frac{1}{2}}$. Done.";
/// assert_eq!(extract(r, Extraction::Math).as_deref(), Some(r"\frac{1}{2}"));
/// assert_eq!(extract("... so 18 in total.\n#### 18", Extraction::Gsm8k).as_deref(), Some("18"));
/// assert_eq!(extract("The answer is 7.", Extraction::Math).as_deref(), Some("7"));
/// assert_eq!(extract("I am not sure what to say here.", Extraction::Gsm8k), None);
/// ```
pub fn extract(response: &str, how: Extraction) -> Option<String> {
    let undoubled = undouble_backslashes(response);
    let response = &*undoubled;
    let found = match how {
        Extraction::Math => boxed_group(response).or_else(|| phrase(response)).or_else(|| {
            let short = response.len() <= MAX_BARE_BYTES && !response.contains("\\boxed");
            bare(response).filter(|a| short && !a.contains('\n'))
        }),
        Extraction::Gsm8k => hashes(response)
            .or_else(|| boxed(response))
            .or_else(|| phrase(response))
            .or_else(|| last_number(response)),
        Extraction::Bare => bare(response),
        Extraction::LastBox => last_box(response),
        Extraction::Pipeline(p) => p.run(response),
    }?;
    let found = found.trim();
    (!found.is_empty() && found.len() <= MAX_ANSWER_BYTES).then(|| found.to_string())
}

/// The answer after the last "the answer is" / "final answer:" phrase (an anchor of
/// [`crate::text::after_anchor`], in any of its languages, and not negated), MATH style:
/// the math that opens what follows, else the part of its sentence that states the answer.
pub fn phrase(s: &str) -> Option<String> {
    let mut rest = after_anchor(s)?;
    // Minerva style: "Final Answer: The final answer is $5$. I hope it is correct."
    if let Some(i) = rfind_ci(rest, "i hope it is correct") {
        rest = &rest[..i];
    }
    let rest = rest.trim_start();
    let stated;
    let answer = if let Some(math) = rest.strip_prefix('$') {
        let math = math.trim_start_matches('$');
        &math[..math.find('$')?]
    } else if let Some(math) = rest.strip_prefix("\\(") {
        &math[..math.find("\\)")?]
    } else if let Some(math) = rest.strip_prefix("\\[") {
        &math[..math.find("\\]")?]
    } else {
        let line = rest.lines().next().unwrap_or("");
        let (part, prose) = stated_part(sentence(line));
        if prose {
            stated = prose_answer(part);
            &stated
        } else {
            part
        }
    };
    let answer = answer.trim().trim_end_matches('.').trim();
    (!answer.is_empty()).then(|| answer.to_string())
}

/// The rest of the line after the last `####`.
pub fn hashes(s: &str) -> Option<String> {
    let at = s.rfind("####")?;
    let line = s[at + 4..].lines().next().unwrap_or("").trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// The whole input, without surrounding math delimiters or a lone box.
pub fn bare(s: &str) -> Option<String> {
    let mut t = s.trim();
    loop {
        let before = t;
        for (open, close) in [("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")] {
            if t.len() >= open.len() + close.len() && t.starts_with(open) && t.ends_with(close) {
                t = t[open.len()..t.len() - close.len()].trim();
            }
        }
        if let Some(rest) = t.strip_prefix("\\boxed")
            && rest.starts_with('{')
            && crate::normalize::matching_brace(rest, 0) == Some(rest.len() - 1)
        {
            t = rest[1..rest.len() - 1].trim();
        }
        if t == before {
            break;
        }
    }
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_and_numbers() {
        assert_eq!(
            phrase("Final Answer: The final answer is $5$. I hope it is correct.").as_deref(),
            Some("5")
        );
        assert_eq!(phrase("So the answer is 3.5 meters. Yes.").as_deref(), Some("3.5 meters"));
        assert_eq!(phrase(r"the answer is \(x=2\)").as_deref(), Some("x=2"));
        assert_eq!(last_number("costs $1,234.50 total").as_deref(), Some("1234.50"));
        assert_eq!(last_number("it is -7.").as_deref(), Some("-7"));
        assert_eq!(last_number("the numbers 1,2,3").as_deref(), Some("3"));
        assert_eq!(last_number("-12,345 left").as_deref(), Some("-12345"));
        assert_eq!(hashes("x\n#### 1,000\n").as_deref(), Some("1,000"));
        assert_eq!(bare(r" $\boxed{4}$ ").as_deref(), Some("4"));
    }
}
