//! Answers in free text, for grading responses that do not box their answer: a "final
//! answer" anchor in several languages, the last math environment, the last number of
//! the prose, and multiple-choice letters.
//!
//! Each stage is one small function returning the raw answer text (or `None`); the order
//! in which they are tried is [`crate::extract::Pipeline`]'s business. All are linear
//! scans, so long hostile texts stay cheap.

/// Phrases after which the final answer follows, lower case (matched ignoring ASCII case,
/// so other scripts list their capitalised forms too). The phrase that ends last wins, the
/// longest among those ending at the same place.
const ANCHORS: &[&str] = &[
    "final answer is",
    "final answer:",
    "final answer",
    "the answer is",
    "answer is:",
    "answer:",
    "correct answer is",
    "correct option is",
    "la réponse est",
    "réponse finale :",
    "réponse :",
    "die antwort ist",
    "antwort:",
    "la respuesta es",
    "respuesta:",
    "a resposta é",
    "ответ:",
    "Ответ:",
    "答案是",
    "答案为",
    "答案：",
    "答案:",
    "最终答案",
    "الإجابة هي",
    "الجواب هو",
];

/// ASCII-case-insensitive last occurrence of `needle` (lower case) in `hay`.
pub(crate) fn rfind_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len()).rev().find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The text after the last anchor phrase ("the answer is", "答案是", ...), to the end of
/// the input; `None` without an anchor.
pub fn after_anchor(s: &str) -> Option<&str> {
    // ASCII lower-casing keeps every byte offset, and lets the standard substring search
    // (linear, fast) do the work.
    let lower = s.to_ascii_lowercase();
    let (at, len) = ANCHORS
        .iter()
        .filter_map(|p| lower.rfind(p).map(|i| (i, p.len())))
        .max_by_key(|&(i, l)| (i + l, l))?;
    let rest = s[at + len..].trim_start_matches([' ', ':', '\t', '：', '*']);
    Some(rest)
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
    // the answer is the first math in the anchor's sentence, or that sentence.
    let scope = if opens_math { &rest[at..] } else { sentence(line) };
    let answer = match math_envs(scope).into_iter().next() {
        Some(env) => env,
        None => scope,
    };
    let answer = answer.trim().trim_end_matches(['.', '。']).trim();
    // A sentence such as `The area is 64 m²` answers with its number.
    if !crate::extract::is_formula(answer)
        && let Some(n) = last_number(answer)
    {
        return Some(n);
    }
    (!answer.is_empty()).then(|| answer.to_string())
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

/// Delimiters of math environments: opening, closing.
const DELIMS: [(&str, &str); 12] = [
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

/// Whether two plain words (two or more ASCII letters, not a command) follow each other,
/// as in prose.
fn reads_like_prose(body: &str) -> bool {
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

/// The last number in the text (`-1,234.5`, `2,74`), as a plain decimal: groups of three
/// after commas are thousands (`1,234`), a single comma before other digits is a decimal
/// comma (`2,74` is `2.74`), and in a list (`1,2,3`) the last item counts.
pub fn last_number(s: &str) -> Option<String> {
    if s.chars().any(|c| ascii_digit(c) != c) {
        return last_number(&s.chars().map(ascii_digit).collect::<String>());
    }
    let b = s.as_bytes();
    let mut i = b.len();
    while i > 0 && !b[i - 1].is_ascii_digit() {
        i -= 1;
    }
    if i == 0 {
        return None;
    }
    let end = i;
    while i > 0
        && (b[i - 1].is_ascii_digit()
            || (b[i - 1] == b'.' && i >= 2 && b[i - 2].is_ascii_digit())
            || (b[i - 1] == b',' && i >= 2 && b[i - 2].is_ascii_digit()))
    {
        i -= 1;
    }
    // Groups of three after spaces are thousands too (`1 000 000`).
    while i >= 2
        && b[i - 1] == b' '
        && b[i - 2].is_ascii_digit()
        && b[i..].iter().take_while(|c| c.is_ascii_digit()).count() == 3
        && !b[i..end].contains(&b',')
    {
        let group = b[..i - 1].iter().rev().take_while(|c| c.is_ascii_digit()).count();
        if group > 3 {
            break;
        }
        i -= 1 + group;
    }
    if i > 0 && b[i - 1] == b'-' {
        i -= 1;
    }
    let raw = s[i..end].replace(' ', "");
    let raw = raw.as_str();
    let (sign, digits) = raw.strip_prefix('-').map_or(("", raw), |d| ("-", d));
    let int_part = digits.split('.').next().unwrap_or("");
    let groups: Vec<&str> = int_part.split(',').collect();
    let thousands = groups.len() > 1 && groups[0].len() <= 3 && groups[1..].iter().all(|g| g.len() == 3);
    let n = if groups.len() == 1 || thousands {
        format!("{sign}{}", digits.replace(',', ""))
    } else if groups.len() == 2 && !digits.contains('.') {
        format!("{sign}{}.{}", groups[0], groups[1])
    } else {
        digits[digits.rfind(',').map_or(0, |c| c + 1)..].to_string()
    };
    let n = n.trim_end_matches('.').to_string();
    (!n.is_empty() && n != "-").then_some(n)
}

/// The ASCII digit for an Arabic-Indic, Persian or full-width digit (`٣`, `۳`, `３`); any
/// other character unchanged.
pub fn ascii_digit(c: char) -> char {
    let zero = match c {
        '\u{660}'..='\u{669}' => 0x660,
        '\u{6f0}'..='\u{6f9}' => 0x6f0,
        '\u{ff10}'..='\u{ff19}' => 0xff10,
        _ => return c,
    };
    char::from(b'0' + (u32::from(c) - zero) as u8)
}

/// Whether `c` can name a multiple-choice option (`I` is left out: it is a pronoun).
fn option_letter(c: char) -> bool {
    matches!(c, 'A'..='H' | 'J')
}

/// The option letter a response chooses, for a multiple-choice gold: a boxed letter, the
/// letter after an anchor ("the answer is C", "答案是 C"), else a letter that opens the response (`D. ...`,
/// `(A) is ...`, `B。...`), else the letter after "option"/"choice", else the only option
/// letter standing alone in the text.
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
    let boxed = crate::extract::boxed(s).map(|b| crate::normalize::normalize(&b));
    if let Some(c) = boxed.as_deref().and_then(|b| lead(b, false)) {
        return Some(c);
    }
    if let Some(c) = after_anchor(s).and_then(|t| lead(t, false)) {
        return Some(c);
    }
    if let Some(c) = lead(s, true) {
        return Some(c);
    }
    for word in ["option ", "choice "] {
        if let Some(c) = rfind_ci(s, word).and_then(|at| lead(&s[at + word.len()..], false)) {
            return Some(c);
        }
    }
    let mut found = None;
    let chars: Vec<char> = s.chars().collect();
    for (k, &c) in chars.iter().enumerate() {
        let alone = |j: Option<&char>| j.is_none_or(|n| !n.is_alphanumeric());
        if option_letter(c) && alone(k.checked_sub(1).and_then(|j| chars.get(j))) && alone(chars.get(k + 1)) {
            match found {
                None => found = Some(c),
                Some(f) if f != c => return None,
                Some(_) => {}
            }
        }
    }
    found
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
    }

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

    #[test]
    fn numbers() {
        assert_eq!(last_number("costs $1,234.50 total").as_deref(), Some("1234.50"));
        assert_eq!(last_number("it is -7.").as_deref(), Some("-7"));
        assert_eq!(last_number("the numbers 1,2,3").as_deref(), Some("3"));
        assert_eq!(last_number("Le prix est de 2,74 €.").as_deref(), Some("2.74"));
        assert_eq!(last_number("所以她一共有 18 个苹果。").as_deref(), Some("18"));
        assert_eq!(last_number("1,000.99 dollars").as_deref(), Some("1000.99"));
        assert_eq!(last_number("no digits"), None);
        assert_eq!(last_number("إذن لديها ١٢ كرة.").as_deref(), Some("12"));
        assert_eq!(last_number("答案是３５").as_deref(), Some("35"));
        assert_eq!(last_number("In total, 1 000 people came.").as_deref(), Some("1000"));
        assert_eq!(last_number("sizes 1 2 345").as_deref(), Some("2345"));
    }

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
    }
}
