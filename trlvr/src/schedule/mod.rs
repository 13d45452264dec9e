//! Handoff schedules: who writes the next token of a rollout.
//!
//! A [`HandoffSchedule`] makes one small state machine ([`HandoffState`]) per row. The
//! driver [`Handoff`] owns that state, the row's own random stream and the EOS rule, so a
//! schedule (a plugin's, say) decides authorship only and cannot forget to stop at EOS.
//! Each row draws from its own stream, keyed by `(seed, row key)`: a row's owners never
//! depend on the batch it is in, and [`replay`] reproduces them from the tokens alone.

mod builtin;

use std::fmt::Debug;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use builtin::{Boundary, MAX_GAP, P_SENIOR, Solo, StepAlternation, TokenBernoulli, WordBoundary};

use crate::token::{Owner, TokenId};
use crate::vocab::TokenClasses;

/// Why a row stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// An EOS id was written (by either model).
    Eos,
    /// The token budget ran out.
    Length,
    /// The schedule's round limit was reached (step alternation).
    Rounds,
}

/// What happens after a token is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// This model writes the next token.
    Write(Owner),
    /// The row is finished.
    Stop(Finish),
}

/// A rule for handing the pen between senior and junior. Object-safe, so plugins can
/// supply one as `Box<dyn HandoffSchedule>`.
///
/// ```
/// use trlvr::prelude::*;
/// use trlvr::schedule::replay;
///
/// let classes = TokenClasses::from_texts(&[" a", "b", "\n\n", "<eos>"], &[3])?;
/// // p_sen = 1: the senior writes everything.
/// let schedule = WordBoundary::new(1.0, 32)?;
/// let (owners, finish) = replay(&schedule, &classes, &[0, 1, 2, 3, 3], 7, 0);
/// assert_eq!(owners, vec![Owner::Senior; 4]); // stops at the first EOS
/// assert_eq!(finish, Some(Finish::Eos));
/// # Ok::<(), trlvr::Error>(())
/// ```
pub trait HandoffSchedule: Send + Sync + Debug {
    /// A short name for logs and configs.
    fn name(&self) -> &str;
    /// A fresh state machine for one row; it may draw the first author from `rng`.
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState>;

    /// Whether the senior writes every token of every row. Objectives that compare the
    /// senior with the junior on the senior's own samples (junior-KL, method.md §4) are
    /// defined on such rollouts only. Default `false`: a schedule that may hand over.
    fn senior_only(&self) -> bool {
        false
    }

    /// Checks the settings; the engine calls it before any row starts, so a bad value
    /// (a probability outside [0, 1], say) is an error instead of a panic mid-rollout.
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) naming the bad setting.
    fn validate(&self) -> crate::Result<()> {
        Ok(())
    }
}

/// The per-row state of a [`HandoffSchedule`].
pub trait HandoffState: Send + Sync + Debug {
    /// Who writes the next token.
    fn author(&self) -> Owner;
    /// `token` (not an EOS id: the driver handles those) was just written by
    /// [`author`](HandoffState::author). Update the state and say who writes next.
    fn after(&mut self, token: TokenId, classes: &TokenClasses, rng: &mut dyn RngCore) -> Next;
}

impl<S: HandoffSchedule + ?Sized> HandoffSchedule for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        (**self).begin(rng)
    }
    fn senior_only(&self) -> bool {
        (**self).senior_only()
    }
    fn validate(&self) -> crate::Result<()> {
        (**self).validate()
    }
}

impl<S: HandoffSchedule + ?Sized> HandoffSchedule for &S {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn begin(&self, rng: &mut dyn RngCore) -> Box<dyn HandoffState> {
        (**self).begin(rng)
    }
    fn senior_only(&self) -> bool {
        (**self).senior_only()
    }
    fn validate(&self) -> crate::Result<()> {
        (**self).validate()
    }
}

/// The random stream of one row: independent of every other row and of batch layout.
pub fn row_rng(seed: u64, row_key: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(row_key);
    rng
}

/// Drives one row's schedule: owns its state and random stream, and stops at any EOS id.
#[derive(Debug)]
pub struct Handoff {
    state: Box<dyn HandoffState>,
    rng: ChaCha8Rng,
    finished: Option<Finish>,
}

impl Handoff {
    /// Starts row `row_key` of a run seeded with `seed`.
    pub fn new(schedule: &dyn HandoffSchedule, seed: u64, row_key: u64) -> Self {
        let mut rng = row_rng(seed, row_key);
        let state = schedule.begin(&mut rng);
        Self { state, rng, finished: None }
    }

    /// Who writes the next token (meaningless once [`finished`](Handoff::finished)).
    pub fn author(&self) -> Owner {
        self.state.author()
    }

    /// Why the row stopped, if it has.
    pub fn finished(&self) -> Option<Finish> {
        self.finished
    }

    /// Records that the current author wrote `token`; returns what happens next.
    /// After a stop, further calls keep returning the same stop and change nothing.
    pub fn after(&mut self, token: TokenId, classes: &TokenClasses) -> Next {
        if let Some(finish) = self.finished {
            return Next::Stop(finish);
        }
        let next = if classes.is_eos(token) {
            Next::Stop(Finish::Eos)
        } else {
            self.state.after(token, classes, &mut self.rng)
        };
        if let Next::Stop(finish) = next {
            self.finished = Some(finish);
        }
        next
    }
}

/// Feeds `tokens` through a fresh row of `schedule` and returns the owner of each token
/// it consumed (up to and including the token that stopped it; later tokens, such as
/// padding, are ignored) and the stop reason, if any.
pub fn replay(
    schedule: &dyn HandoffSchedule,
    classes: &TokenClasses,
    tokens: &[TokenId],
    seed: u64,
    row_key: u64,
) -> (Vec<Owner>, Option<Finish>) {
    let mut handoff = Handoff::new(schedule, seed, row_key);
    let mut owners = Vec::with_capacity(tokens.len());
    for &token in tokens {
        owners.push(handoff.author());
        if let Next::Stop(finish) = handoff.after(token, classes) {
            return (owners, Some(finish));
        }
    }
    (owners, None)
}
