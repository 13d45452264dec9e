//! Finding the final answer in a model response.
//!
//! Every search here is a linear scan (at most a few passes over the input), so a
//! megabyte-long response costs milliseconds, and an answer is capped at
//! [`MAX_ANSWER_BYTES`].

use serde::{Deserialize, Serialize};

use crate::normalize::normalize;
pub use crate::text::last_number;
use crate::text::{anchored, last_math_env, rfind_ci};

/// Longest extracted answer, in bytes; longer candidates are rejected.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// Longest input that [`Extraction::Bare`] (and the bare fall-back of
/// [`Extraction::Math`]) accepts as an answer in its entirety.
pub const MAX_BARE_BYTES: usize = 200;

/// Where a dataset puts its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Extraction {
    /// MATH style: the last `\boxed{..}`/`\fbox{..}` (with the boxes joined to it, see
    /// [`boxed_group`]), then the last "the answer is X" or "final answer: X" phrase, then
    /// the whole input if it is a short single line.
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

    /// How to read references written as a dataset says (`trlvr::data`): after `####`,
    /// in the solution's last `\boxed{}`, or whole.
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
        if i - start >= 2 && !crate::lexer::is_function_name(&n[start..i]) {
            return false;
        }
        i = i.max(start + 1);
    }
    !n.is_empty()
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
    let undoubled = crate::normalize::undouble_backslashes(response);
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
        if !group.iter().any(|g| crate::equiv::equivalent(g, content)) {
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

/// Whether the text between two boxes only joins them: punctuation, math delimiters,
/// spacing commands, `\text{..}` and the words of [`BOX_JOINERS`].
fn joins_boxes(gap: &str) -> bool {
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
        let close = crate::normalize::matching_brace(rest, 0)?;
        return Some(inner[..close - 1].to_string());
    }
    let token = rest.strip_prefix(' ')?.trim_start();
    let end = token.find(|c: char| c.is_whitespace() || c == '$').unwrap_or(token.len());
    let t = token[..end].trim_end_matches(['.', ',']);
    (!t.is_empty()).then(|| t.to_string())
}

const PHRASES: &[&str] = &["final answer is", "final answer:", "the answer is", "answer:"];

/// The answer after the last "the answer is" / "final answer:" phrase.
pub fn phrase(s: &str) -> Option<String> {
    let (at, len) = PHRASES
        .iter()
        .filter_map(|p| rfind_ci(s, p).map(|i| (i, p.len())))
        .max_by_key(|&(i, l)| (i + l, l))?;
    let mut rest = s[at + len..].trim_start_matches([' ', ':', '\t']);
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
        let (part, prose) = crate::text::stated_part(sentence(line));
        if prose {
            stated = crate::text::prose_answer(part);
            &stated
        } else {
            part
        }
    };
    let answer = answer.trim().trim_end_matches('.').trim();
    (!answer.is_empty()).then(|| answer.to_string())
}

/// Cuts a line at its first sentence end (a period followed by a space or the end, that is
/// not a decimal point).
fn sentence(line: &str) -> &str {
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'.' && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
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
    fn boxes() {
        assert_eq!(boxed(r"\boxed{\frac{1}{2}}").as_deref(), Some(r"\frac{1}{2}"));
        assert_eq!(boxed(r"a \boxed{1} b \boxed{\{1,2\}}").as_deref(), Some(r"\{1,2\}"));
        assert_eq!(boxed(r"\boxed 5$.").as_deref(), Some("5"));
        assert_eq!(boxed(r"\fbox{7}").as_deref(), Some("7"));
        assert_eq!(boxed(r"\boxed{2} then \boxed{3").as_deref(), Some("2"));
        assert_eq!(boxed("nothing"), None);
    }

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
