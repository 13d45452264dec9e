//! `sentence`: the paper's stochastic handoff (method.md §2) at sentence granularity.
//! The first author is drawn with P(senior) = `p_senior`; after each token that ends a
//! sentence ([`TokenClasses::is_sentence_end`]: `.`, `!`, `?` or a newline), or after
//! `max_gap` tokens without a redraw, a fresh coin picks the next author (the same author
//! may win again). Each model then writes whole sentences, between the word-level
//! training schedule and the paragraph-level evaluation schedule.
//!
//! Sentence ends are a token class the core computes from each token's text, as it does
//! word starts: a schedule only sees token ids and [`TokenClasses`].
//!
//! ```
//! use trlvr::prelude::*;
//! use trlvr::schedule::replay;
//! use trlvr_sentence_handoff::SentenceHandoff;
//!
//! let classes = TokenClasses::from_texts(&["Hi", ".", " yes", "<eos>"], &[3])?;
//! // p_senior = 1: every draw picks the senior.
//! let (owners, _) = replay(&SentenceHandoff::new(1.0, 64)?, &classes, &[0, 1, 2], 0, 0);
//! assert_eq!(owners, vec![Owner::Senior; 3]);
//! # Ok::<(), trlvr::Error>(())
//! ```
//!
//! Loaded at run time:
//!
//! ```sh
//! cargo build -p trlvr-sentence-handoff
//! trlvr plugins --load target/debug/libtrlvr_sentence_handoff.so
//! ```
#![warn(missing_docs)]

use rand::{Rng, RngCore};
use serde::Deserialize;
use trlvr::plugin::{Factory, Registration};
use trlvr::prelude::*;

/// Redraw the author after every sentence end, or after `max_gap` tokens without one.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SentenceHandoff {
    /// Probability that the senior wins a draw (default 0.5).
    pub p_senior: f64,
    /// Redraw after this many tokens without one (default 64: a long sentence, or a
    /// LaTeX run without sentence ends).
    pub max_gap: usize,
}

impl SentenceHandoff {
    /// A sentence schedule.
    ///
    /// # Errors
    /// [`Error::Config`] if `p_senior` is outside [0, 1] or `max_gap` is 0.
    pub fn new(p_senior: f64, max_gap: usize) -> Result<Self> {
        let rule = Self { p_senior, max_gap };
        rule.validate()?;
        Ok(rule)
    }

    fn draw(&self, rng: &mut dyn RngCore) -> Owner {
        if rng.random_bool(self.p_senior) { Owner::Senior } else { Owner::Junior }
    }
}

impl Default for SentenceHandoff {
    fn default() -> Self {
        Self { p_senior: 0.5, max_gap: 64 }
    }
}

#[derive(Debug)]
struct State {
    rule: SentenceHandoff,
    author: Owner,
    /// Tokens since the last draw.
    gap: usize,
}

impl HandoffSchedule for SentenceHandoff {
    fn name(&self) -> &str {
        "sentence"
    }
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        Box::new(State { rule: *self, author: self.draw(rng), gap: 0 })
    }
    fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.p_senior) {
            return Err(Error::Config(format!(
                "sentence: p_senior must be in [0, 1], got {}",
                self.p_senior
            )));
        }
        if self.max_gap == 0 {
            return Err(Error::Config("sentence: max_gap must be at least 1".into()));
        }
        Ok(())
    }
}

impl HandoffState for State {
    fn author(&self) -> Owner {
        self.author
    }
    fn after(&mut self, token: TokenId, classes: &TokenClasses, rng: &mut dyn RngCore) -> Next {
        self.gap += 1;
        if classes.is_sentence_end(token) || self.gap >= self.rule.max_gap {
            self.author = self.rule.draw(rng);
            self.gap = 0;
        }
        Next::Write(self.author)
    }
}

trlvr::inventory::submit! {
    Registration {
        name: "sentence",
        about: "Bernoulli(p_senior) redraws after sentence ends or max_gap tokens ({\"p_senior\": 0.5, \"max_gap\": 64})",
        crate_name: env!("CARGO_PKG_NAME"),
        version: env!("CARGO_PKG_VERSION"),
        factory: Factory::Schedule(|value| {
            let rule: SentenceHandoff = if value.is_null() {
                SentenceHandoff::default()
            } else {
                serde_json::from_value(value.clone()).map_err(|e| Error::Config(e.to_string()))?
            };
            rule.validate()?;
            Ok(Box::new(rule))
        }),
    }
}

trlvr::export_plugin!();
