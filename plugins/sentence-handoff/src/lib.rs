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
//! `trlvr` links it (`trlvr tandem --schedule sentence`); another host links the crate
//! or loads it at run time (`cargo build -p trlvr-sentence-handoff`, then
//! `Registry::load` of `target/debug/libtrlvr_sentence_handoff.so`).
#![warn(missing_docs)]

use rand::RngCore;
use serde::Deserialize;
use trlvr::plugin::schedule_from_config;
use trlvr::prelude::*;

/// Redraw the author after every sentence end, or after `max_gap` tokens without one:
/// [`WordBoundary`]'s draw, gap cap and checks at another boundary.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SentenceHandoff {
    /// Probability that the senior wins a draw (default: the word schedule's).
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
        WordBoundary::new(p_senior, max_gap)?;
        Ok(Self { p_senior, max_gap })
    }

    /// The word schedule's rule with these settings.
    fn rule(&self) -> WordBoundary {
        WordBoundary { p_senior: self.p_senior, max_gap: self.max_gap }
    }
}

impl Default for SentenceHandoff {
    fn default() -> Self {
        Self { p_senior: WordBoundary::default().p_senior, max_gap: 64 }
    }
}

impl HandoffSchedule for SentenceHandoff {
    fn name(&self) -> &str {
        "sentence"
    }
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        self.rule().begin_at(TokenClasses::is_sentence_end, rng)
    }
    fn validate(&self) -> Result<()> {
        self.rule().validate()
    }
}

trlvr::register!(
    Schedule,
    "sentence",
    "Bernoulli(p_senior) redraws after sentence ends or max_gap tokens ({\"p_senior\": 0.5, \"max_gap\": 64})",
    schedule_from_config::<SentenceHandoff>
);

trlvr::export_plugin!();
