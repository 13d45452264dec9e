//! A fuzz target (its seeds and the format's structure) and the mutations drawn for it.

use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;

/// A parser under test: its name, its seed files, where its structure lies.
#[derive(Debug, Clone)]
pub struct Target {
    pub(super) name: String,
    pub(super) seeds: Vec<Vec<u8>>,
    header: usize,
    tokens: Vec<Vec<u8>>,
    pub(super) allocation_limit: usize,
    pub(super) slow: Duration,
}

impl Target {
    /// A target fed mutations of `seeds` (at least one).
    pub fn new(name: impl Into<String>, seeds: Vec<Vec<u8>>) -> Self {
        assert!(!seeds.is_empty(), "a fuzz target needs at least one seed");
        Self {
            name: name.into(),
            seeds,
            header: 0,
            tokens: Vec::new(),
            allocation_limit: 256 << 20,
            slow: Duration::from_secs(5),
        }
    }

    /// Half of the mutations land in the first `bytes` bytes: binary formats keep their
    /// structure up front and their bulk (tensor data) after it.
    pub fn header(mut self, bytes: usize) -> Self {
        self.header = bytes;
        self
    }

    /// Tokens of the format (keywords, key names) inserted besides the generic ones.
    pub fn tokens(mut self, tokens: &[&str]) -> Self {
        self.tokens.extend(tokens.iter().map(|t| t.as_bytes().to_vec()));
        self
    }

    /// The longest one input may take (default 5 s): longer fails, and ten times longer
    /// aborts the process with the input saved (a hang).
    pub fn slow(mut self, limit: Duration) -> Self {
        self.slow = limit;
        self
    }

    /// The largest single allocation one input may make (default 256 MiB): a size read
    /// from the input must be checked against the input before memory is reserved for it.
    pub fn allocation_limit(mut self, bytes: usize) -> Self {
        self.allocation_limit = bytes;
        self
    }
}
/// Generic tokens of text formats (JSON, TOML, JSONL) and values that stress number parsers.
const TOKENS: &[&str] = &[
    "\"",
    "'",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "\n",
    "\r\n",
    "\\",
    "\\u0000",
    "\\ud800",
    "#",
    ".",
    "-1",
    "0",
    "1e400",
    "-1e400",
    "NaN",
    "inf",
    "null",
    "true",
    "false",
    "18446744073709551616",
    "9223372036854775807",
    "4294967296",
    "0.5",
    "\u{FEFF}",
    "\u{1F600}",
    "[[",
    "]]",
    "\"\"\"",
];

/// Bytes and words that sit on format boundaries (sign bits, all ones, large counts).
const WORDS: &[u64] = &[
    0,
    1,
    2,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0xFFFF,
    0x7FFF_FFFF,
    0xFFFF_FFFF,
    1 << 20,
    1 << 32,
    1 << 40,
    i64::MAX as u64,
    u64::MAX,
];

/// Where a mutation lands: in the header region or anywhere.
#[derive(Debug, Clone)]
pub(super) struct Position {
    header: bool,
    at: Index,
}

impl Position {
    fn index(&self, len: usize, header: usize) -> usize {
        if self.header && header > 0 {
            self.at.index(len.min(header).max(1))
        } else {
            self.at.index(len.max(1))
        }
    }
}

/// One edit of an input; [`fuzz`](super::fuzz) draws lists of them.
#[derive(Debug, Clone)]
pub(super) enum Mutation {
    Flip { at: Position, bit: u8 },
    Byte { at: Position, word: Index },
    Word { at: Position, word: Index, width: u8 },
    Truncate { at: Position },
    Remove { at: Position, len: u8 },
    Insert { at: Position, token: Index },
    Random { at: Position, bytes: Vec<u8> },
    Copy { from: Position, to: Position, len: u16 },
    Splice { seed: Index, at: Position, from: Index },
}

fn position() -> impl Strategy<Value = Position> {
    (any::<bool>(), any::<Index>()).prop_map(|(header, at)| Position { header, at })
}

pub(super) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (position(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        2 => (position(), any::<Index>()).prop_map(|(at, word)| Mutation::Byte { at, word }),
        2 => (position(), any::<Index>(), prop_oneof![Just(2u8), Just(4), Just(8)])
            .prop_map(|(at, word, width)| Mutation::Word { at, word, width }),
        1 => position().prop_map(|at| Mutation::Truncate { at }),
        2 => (position(), 1u8..64).prop_map(|(at, len)| Mutation::Remove { at, len }),
        3 => (position(), any::<Index>()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        1 => (position(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Random { at, bytes }),
        1 => (position(), position(), 1u16..2048).prop_map(|(from, to, len)| Mutation::Copy { from, to, len }),
        1 => (any::<Index>(), position(), any::<Index>())
            .prop_map(|(seed, at, from)| Mutation::Splice { seed, at, from }),
    ]
}

impl Mutation {
    pub(super) fn apply(&self, bytes: &mut Vec<u8>, target: &Target) {
        let h = target.header;
        let len = bytes.len();
        match self {
            Mutation::Flip { at, bit } => {
                if len > 0 {
                    bytes[at.index(len, h)] ^= 1 << bit;
                }
            }
            Mutation::Byte { at, word } => {
                if len > 0 {
                    bytes[at.index(len, h)] = word.get(WORDS).to_le_bytes()[0];
                }
            }
            Mutation::Word { at, word, width } => {
                let width = usize::from(*width);
                if len >= width {
                    let i = at.index(len - width + 1, h);
                    bytes[i..i + width].copy_from_slice(&word.get(WORDS).to_le_bytes()[..width]);
                }
            }
            Mutation::Truncate { at } => bytes.truncate(at.index(len, h)),
            Mutation::Remove { at, len: n } => {
                let i = at.index(len, h).min(len);
                bytes.drain(i..(i + usize::from(*n)).min(len));
            }
            Mutation::Insert { at, token } => {
                let i = at.index(len + 1, h).min(len);
                let all = TOKENS.len() + target.tokens.len();
                let k = token.index(all);
                let token =
                    if k < TOKENS.len() { TOKENS[k].as_bytes() } else { &target.tokens[k - TOKENS.len()] };
                bytes.splice(i..i, token.iter().copied());
            }
            Mutation::Random { at, bytes: new } => {
                let i = at.index(len + 1, h).min(len);
                bytes.splice(i..i, new.iter().copied());
            }
            Mutation::Copy { from, to, len: n } => {
                if len > 0 {
                    let i = from.index(len, h);
                    let chunk = bytes[i..(i + usize::from(*n)).min(len)].to_vec();
                    let j = to.index(len + 1, h).min(len);
                    bytes.splice(j..j, chunk);
                }
            }
            Mutation::Splice { seed, at, from } => {
                let other = seed.get(&target.seeds);
                let i = at.index(len + 1, h).min(len);
                let j = from.index(other.len() + 1).min(other.len());
                bytes.truncate(i);
                bytes.extend_from_slice(&other[j..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;

    #[test]
    fn mutations_stay_in_bounds_on_empty_and_tiny_inputs() {
        let target = Target::new("t", vec![Vec::new(), vec![1]]).header(4).tokens(&["key"]);
        let mut runner = TestRunner::deterministic();
        for _ in 0..2000 {
            let m = mutation().new_tree(&mut runner).unwrap().current();
            for seed in &target.seeds {
                let mut bytes = seed.clone();
                m.apply(&mut bytes, &target);
            }
        }
    }
}
