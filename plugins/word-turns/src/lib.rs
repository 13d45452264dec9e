//! `word-turns`: senior and junior alternate deterministically, a turn ending right
//! after its `words`-th word-start token (as in the paper's schedule, the handoff comes
//! after a boundary token, so it can fall inside a word). A controlled
//! ablation between token-level and paragraph-level handoff, and the example of a
//! schedule plugin loadable at run time:
//!
//! ```sh
//! cargo build -p trlvr-word-turns
//! trlvr plugins --load target/debug/libtrlvr_word_turns.so
//! ```
#![warn(missing_docs)]

use rand::RngCore;
use serde::Deserialize;
use trlvr::plugin::schedule_from_config;
use trlvr::prelude::*;

/// Alternate turns of `words` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WordTurns {
    /// Words per turn (at least 1).
    pub words: usize,
    /// Who writes first.
    pub first: Owner,
}

impl Default for WordTurns {
    fn default() -> Self {
        Self { words: 8, first: Owner::Senior }
    }
}

#[derive(Debug)]
struct State {
    rule: WordTurns,
    author: Owner,
    /// Word-start tokens written in the current turn.
    seen: usize,
}

impl HandoffSchedule for WordTurns {
    fn name(&self) -> &str {
        "word-turns"
    }
    fn begin(&self, _rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        Box::new(State { rule: *self, author: self.first, seen: 0 })
    }
    fn validate(&self) -> Result<()> {
        if self.words == 0 {
            return Err(Error::Config("word-turns needs words >= 1".into()));
        }
        Ok(())
    }
}

impl HandoffState for State {
    fn author(&self) -> Owner {
        self.author
    }
    fn after(&mut self, token: TokenId, classes: &TokenClasses, _: &mut dyn RngCore) -> Next {
        if classes.is_word_start(token) {
            self.seen += 1;
            if self.seen >= self.rule.words {
                self.author = self.author.other();
                self.seen = 0;
            }
        }
        Next::Write(self.author)
    }
}

trlvr::register!(
    Schedule,
    "word-turns",
    "deterministic turns of `words` words each ({\"words\": 8, \"first\": \"senior\"})",
    schedule_from_config::<WordTurns>
);

trlvr::export_plugin!();
