//! The schedules trlvr ships: solo, the paper's word-boundary Bernoulli with a gap cap,
//! token-level Bernoulli, and paragraph (step) alternation for evaluation.

use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use super::{Finish, HandoffSchedule, HandoffState, Next};
use crate::token::{Owner, TokenId};
use crate::vocab::TokenClasses;
use crate::{Error, Result};

/// P(senior) of a draw unless told otherwise: the paper's even split (method.md §2).
pub const P_SENIOR: f64 = 0.5;
/// K, the word schedule's gap cap unless told otherwise (method.md §2).
pub const MAX_GAP: usize = 32;

/// What ends a run in a [`WordBoundary`]-style schedule: a class of tokens after which
/// the author is drawn again.
pub type Boundary = fn(&TokenClasses, TokenId) -> bool;

fn draw(p_senior: f64, rng: &mut dyn RngCore) -> Owner {
    if rng.random_bool(p_senior) { Owner::Senior } else { Owner::Junior }
}

fn check_probability(p: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(Error::Config(format!("p_senior must be in [0, 1], got {p}")))
    }
}

/// One model writes everything: plain GRPO (senior) or the junior alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Solo {
    /// Who writes.
    pub owner: Owner,
}

impl Solo {
    /// The senior alone (vanilla GRPO rollouts, solo evaluation).
    pub fn senior() -> Self {
        Self { owner: Owner::Senior }
    }
    /// The junior alone.
    pub fn junior() -> Self {
        Self { owner: Owner::Junior }
    }
}

impl Default for Solo {
    fn default() -> Self {
        Self::senior()
    }
}

impl HandoffSchedule for Solo {
    fn name(&self) -> &str {
        "solo"
    }
    fn begin(&self, _rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        Box::new(*self)
    }
    fn senior_only(&self) -> bool {
        self.owner == Owner::Senior
    }
}

impl HandoffState for Solo {
    fn author(&self) -> Owner {
        self.owner
    }
    fn after(&mut self, _: TokenId, _: &TokenClasses, _: &mut dyn RngCore) -> Next {
        Next::Write(self.owner)
    }
}

/// The paper's training schedule (method.md §2): the first author is drawn with
/// P(senior) = `p_senior`; after each token that starts a word (B), or after `max_gap`
/// tokens without a redraw, a fresh coin picks the next author. The redraw comes *after*
/// the boundary token, so a handoff can fall inside a multi-token word.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WordBoundary {
    /// Probability that the senior wins a draw (default 0.5).
    pub p_senior: f64,
    /// K: redraw after this many tokens without one (default 32).
    pub max_gap: usize,
}

impl WordBoundary {
    /// A word schedule.
    ///
    /// # Errors
    /// [`Error::Config`] if `p_senior` is outside [0, 1] or `max_gap` is 0.
    pub fn new(p_senior: f64, max_gap: usize) -> Result<Self> {
        if max_gap == 0 {
            return Err(Error::Config("max_gap (K) must be at least 1".into()));
        }
        Ok(Self { p_senior: check_probability(p_senior)?, max_gap })
    }

    /// A row's state with the same draw and gap cap at another boundary: a fresh coin
    /// after each token `boundary` marks (word starts in the paper's schedule), or after
    /// `max_gap` tokens without a draw. Schedules at other granularities reuse it.
    pub fn begin_at(&self, boundary: Boundary, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        Box::new(WordState { rule: *self, boundary, author: draw(self.p_senior, rng), gap: 0 })
    }
}

impl Default for WordBoundary {
    fn default() -> Self {
        Self { p_senior: P_SENIOR, max_gap: MAX_GAP }
    }
}

#[derive(Debug)]
struct WordState {
    rule: WordBoundary,
    boundary: Boundary,
    author: Owner,
    gap: usize,
}

impl HandoffSchedule for WordBoundary {
    fn name(&self) -> &str {
        "word"
    }
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        self.begin_at(TokenClasses::is_word_start, rng)
    }
    fn validate(&self) -> Result<()> {
        Self::new(self.p_senior, self.max_gap).map(|_| ())
    }
}

impl HandoffState for WordState {
    fn author(&self) -> Owner {
        self.author
    }
    fn after(&mut self, token: TokenId, classes: &TokenClasses, rng: &mut dyn RngCore) -> Next {
        self.gap += 1;
        if (self.boundary)(classes, token) || self.gap >= self.rule.max_gap {
            self.author = draw(self.rule.p_senior, rng);
            self.gap = 0;
        }
        Next::Write(self.author)
    }
}

/// Original tandem training: a fresh coin before every token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokenBernoulli {
    /// Probability that the senior writes a given token (default 0.5).
    pub p_senior: f64,
}

impl Default for TokenBernoulli {
    fn default() -> Self {
        Self { p_senior: P_SENIOR }
    }
}

impl TokenBernoulli {
    /// A token-level schedule.
    ///
    /// # Errors
    /// [`Error::Config`] if `p_senior` is outside [0, 1].
    pub fn new(p_senior: f64) -> Result<Self> {
        Ok(Self { p_senior: check_probability(p_senior)? })
    }
}

#[derive(Debug)]
struct TokenState {
    p_senior: f64,
    author: Owner,
}

impl HandoffSchedule for TokenBernoulli {
    fn name(&self) -> &str {
        "token"
    }
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        Box::new(TokenState { p_senior: self.p_senior, author: draw(self.p_senior, rng) })
    }
    fn validate(&self) -> Result<()> {
        check_probability(self.p_senior).map(|_| ())
    }
}

impl HandoffState for TokenState {
    fn author(&self) -> Owner {
        self.author
    }
    fn after(&mut self, _: TokenId, _: &TokenClasses, rng: &mut dyn RngCore) -> Next {
        self.author = draw(self.p_senior, rng);
        Next::Write(self.author)
    }
}

/// The evaluation schedule (method.md §5): the senior starts; a turn ends once the text
/// written in that turn ends with `"\n\n"` (kept), and the other model takes the next
/// paragraph; at most `max_rounds` turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StepAlternation {
    /// Who writes the first paragraph (default senior).
    pub first: Owner,
    /// Turns before the row stops (default 150).
    pub max_rounds: usize,
}

impl Default for StepAlternation {
    fn default() -> Self {
        Self { first: Owner::Senior, max_rounds: 150 }
    }
}

#[derive(Debug)]
struct StepState {
    author: Owner,
    max_rounds: usize,
    /// Turns completed so far.
    rounds: usize,
    /// Newlines ending the text written in the current turn.
    run: usize,
}

impl HandoffSchedule for StepAlternation {
    fn name(&self) -> &str {
        "step"
    }
    fn begin(&self, _rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        Box::new(StepState { author: self.first, max_rounds: self.max_rounds, rounds: 0, run: 0 })
    }
    fn validate(&self) -> Result<()> {
        if self.max_rounds == 0 {
            return Err(Error::Config("max_rounds must be at least 1".into()));
        }
        Ok(())
    }
}

impl HandoffState for StepState {
    fn author(&self) -> Owner {
        self.author
    }
    fn after(&mut self, token: TokenId, classes: &TokenClasses, _: &mut dyn RngCore) -> Next {
        let (trailing, only_newlines) = classes.newlines(token);
        self.run = if only_newlines { self.run + trailing as usize } else { trailing as usize };
        if self.run >= 2 {
            self.rounds += 1;
            self.run = 0;
            if self.rounds >= self.max_rounds {
                return Next::Stop(Finish::Rounds);
            }
            self.author = self.author.other();
        }
        Next::Write(self.author)
    }
}
