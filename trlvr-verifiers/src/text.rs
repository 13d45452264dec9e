//! Answers in free text, for grading responses that do not box their answer: a "final
//! answer" anchor in many languages (and the part of its sentence that states the
//! answer), the last math environment, the last number of the prose, and multiple-choice
//! letters, also those a reasoning settles on ("not A, therefore B").
//!
//! Each stage is one small function returning the raw answer text (or `None`); the order
//! in which they are tried is [`crate::extract::Pipeline`]'s business. All are linear
//! scans, so long hostile texts stay cheap.

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

/// ASCII-case-insensitive last occurrence of `needle` (lower case) in `hay`.
pub(crate) fn rfind_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len()).rev().find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
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

/// For each byte, the phrases of a list (as bits) that start with it in either ASCII
/// case, so that one pass over a text only stops where one of them may begin.
const fn first_byte_table(phrases: &[&str]) -> [u128; 256] {
    assert!(phrases.len() <= 128);
    let mut table = [0u128; 256];
    let mut k = 0;
    while k < phrases.len() {
        let first = phrases[k].as_bytes()[0];
        table[first.to_ascii_lowercase() as usize] |= 1 << k;
        table[first.to_ascii_uppercase() as usize] |= 1 << k;
        k += 1;
    }
    table
}

const ANCHORS_BY_FIRST_BYTE: [u128; 256] = first_byte_table(ANCHORS);

/// The anchor of `hay` that ends last (the longest among those ending there), ignoring
/// ASCII case: its start and length.
fn last_anchor(hay: &[u8]) -> Option<(usize, usize)> {
    last_phrase(hay, ANCHORS, &ANCHORS_BY_FIRST_BYTE, |_, _| true)
}

/// The phrase of `phrases` (with its [`first_byte_table`]) that ends last in `hay` (the
/// longest among those ending there), ignoring ASCII case and skipping occurrences that
/// `accept(start, end)` rejects: its start and length. One linear pass, with no setup per
/// phrase, however many phrases there are.
fn last_phrase(
    hay: &[u8],
    phrases: &[&str],
    table: &[u128; 256],
    accept: impl Fn(usize, usize) -> bool,
) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for i in 0..hay.len() {
        let mut bits = table[hay[i] as usize];
        while bits != 0 {
            let k = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let p = phrases[k].as_bytes();
            let found = hay.get(i..i + p.len()).is_some_and(|w| w.eq_ignore_ascii_case(p));
            if found
                && best.is_none_or(|(j, l)| (i + p.len(), p.len()) > (j + l, l))
                && accept(i, i + p.len())
            {
                best = Some((i, p.len()));
            }
        }
    }
    best
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
    if !crate::extract::is_formula(answer)
        && let Some(n) = last_number(answer)
    {
        return Some(n);
    }
    (!answer.is_empty()).then(|| answer.to_string())
}

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
    if s.is_empty() || crate::extract::is_formula(s) {
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
    if bracketed && crate::extract::is_formula(part) {
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
        if option_letter(c) && alone(k.checked_sub(1).and_then(|j| chars.get(j))) && alone(chars.get(k + 1)) {
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
        assert_eq!(choice("so it is not A, therefore B"), Some('B'));
        assert_eq!(choice("Thus it cannot be A or B but C."), Some('C'));
        assert_eq!(choice("Also, B holds."), Some('B'));
        assert_eq!(choice("It is not A. Not C either."), None);
    }
}
