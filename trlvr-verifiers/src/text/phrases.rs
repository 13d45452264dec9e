//! Finding the last of many phrases in one pass over a text, ignoring ASCII case.

/// ASCII-case-insensitive last occurrence of `needle` (lower case) in `hay`.
pub(crate) fn rfind_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len()).rev().find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// For each byte, the phrases of a list (as bits) that start with it in either ASCII
/// case, so that one pass over a text only stops where one of them may begin.
pub(super) const fn first_byte_table(phrases: &[&str]) -> [u128; 256] {
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

/// The phrase of `phrases` (with its [`first_byte_table`]) that ends last in `hay` (the
/// longest among those ending there), ignoring ASCII case and skipping occurrences that
/// `accept(start, end)` rejects: its start and length. One linear pass, with no setup per
/// phrase, however many phrases there are.
pub(super) fn last_phrase(
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
