//! Unicode math symbols and the digits of other scripts, in the ASCII spelling the parser
//! reads.

/// Unicode math symbols to their LaTeX commands (followed by a space so that a letter
/// after them does not glue onto the command name; spacing removes it when harmless).
pub(super) fn unicode(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            'π' => out.push_str("\\pi "),
            '∞' => out.push_str("\\infty "),
            '√' => out.push_str("\\sqrt "),
            '≤' => out.push_str("\\le "),
            '≥' => out.push_str("\\ge "),
            '≠' => out.push_str("\\ne "),
            '×' => out.push_str("\\times "),
            '·' => out.push_str("\\cdot "),
            '∪' => out.push_str("\\cup "),
            '∈' => out.push_str("\\in "),
            '±' => out.push_str("\\pm "),
            '−' | '–' => out.push('-'),
            '≈' => out.push_str("\\approx "),
            '²' => out.push_str("^2"),
            '³' => out.push_str("^3"),
            '°' | '€' | '£' | '¥' | '₹' => {}
            '\u{a0}' => out.push(' '),
            '\u{660}'..='\u{669}' | '\u{6f0}'..='\u{6f9}' | '\u{ff10}'..='\u{ff19}' => {
                out.push(ascii_digit(c));
            }
            _ => out.push(c),
        }
    }
    out
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
