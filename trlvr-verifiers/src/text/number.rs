//! The last number of a text, read as its script and its separators mean it.

use crate::normalize::ascii_digit;

/// The last number in the text (`-1,234.5`, `2,74`), as a plain decimal: groups of three
/// after commas are thousands (`1,234`), a single comma before other digits is a decimal
/// comma (`2,74` is `2.74`), and in a list (`1,2,3`) the last item counts.
pub fn last_number(s: &str) -> Option<String> {
    if s.chars().any(|c| ascii_digit(c) != c) {
        return last_number(&s.chars().map(ascii_digit).collect::<String>());
    }
    let b = s.as_bytes();
    let mut limit = b.len();
    let end = loop {
        let mut i = limit;
        while i > 0 && !b[i - 1].is_ascii_digit() {
            i -= 1;
        }
        if i == 0 {
            return None;
        }
        let start = i - b[..i].iter().rev().take_while(|c| c.is_ascii_digit()).count();
        // Digits glued to a word (`AZYUK2A`, `H2O`) are part of it, not a number.
        if start > 0 && b[start - 1].is_ascii_alphabetic() {
            limit = start;
            continue;
        }
        break i;
    };
    let mut i = end;
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(last_number("AZYUK2A"), None);
        assert_eq!(last_number("7 moles of H2O").as_deref(), Some("7"));
    }
}
