//! The model traits: [`Partner`] (a frozen causal LM that can extend rows) and
//! [`Policy`] (a partner that is also a trainable Burn module).
//!
//! Inference state lives outside the weights, in a [`Session`], so one immutable model
//! serves many rollouts and scoring needs no cache. The tandem engine keeps one session
//! per model and feeds each row only the tokens that model has not read yet (its own
//! last token when decoding, the other model's run when catching up).
//!
//! The log-probability math the models' scoring paths share is in `model/log_probs.rs`
//! (re-exported here).

mod log_probs;

use std::any::Any;

use burn::prelude::*;

pub use log_probs::{
    LOG_PROB_CHUNK, Scored, check_from, chunked_token_log_probs, lean_token_log_probs, token_log_probs,
    zeroed_before,
};

use crate::token::{TokenBatch, TokenId};
use crate::{Error, Result};

/// Per-row inference state of one model (its KV cache, say), opaque to the engine.
#[derive(Debug)]
pub struct Session {
    read: Vec<usize>,
    state: Box<dyn Any + Send>,
}

impl Session {
    /// A session whose row `i` has read `read[i]` tokens; `state` is the model's own.
    pub fn new(read: Vec<usize>, state: Box<dyn Any + Send>) -> Self {
        Self { read, state }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.read.len()
    }

    /// How many tokens row `row` has read (prompt included).
    pub fn read(&self, row: usize) -> usize {
        self.read[row]
    }

    /// Records that `row` read `n` more tokens.
    pub fn advance(&mut self, row: usize, n: usize) {
        self.read[row] += n;
    }

    /// The model's state, if this session was made by a model with state type `T`.
    ///
    /// # Errors
    /// [`Error::ForeignSession`] otherwise.
    pub fn state_mut<T: Any>(&mut self) -> Result<&mut T> {
        self.state.downcast_mut::<T>().ok_or(Error::ForeignSession { expected: std::any::type_name::<T>() })
    }
}

/// New tokens for one row of a session.
#[derive(Debug, Clone, Copy)]
pub struct Feed<'a> {
    /// The row.
    pub row: usize,
    /// Tokens the row has not read yet, oldest first; at least one.
    pub tokens: &'a [TokenId],
    /// Whether [`Partner::extend`] returns the next-token logits after this row's
    /// tokens. A row that only catches up (its next token comes from the other model)
    /// skips the LM head, the largest matmul of a small model.
    pub predict: bool,
}

impl<'a> Feed<'a> {
    /// `row` reads `tokens` and wants the logits after them.
    pub fn predict(row: usize, tokens: &'a [TokenId]) -> Self {
        Self { row, tokens, predict: true }
    }

    /// `row` reads `tokens` only.
    pub fn catch_up(row: usize, tokens: &'a [TokenId]) -> Self {
        Self { row, tokens, predict: false }
    }
}

/// A frozen causal language model that can extend a batch of token sequences.
///
/// Object-safe, so a plugin can supply one as `Box<dyn Partner>`. Logits are raw (no
/// temperature); samplers and scorers apply it.
///
/// ```
/// use burn::prelude::*;
/// use trlvr::prelude::*;
///
/// let device = Device::default();
/// let model = BigramLm::new(&[[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], &device);
/// // Two copies of one prompt share its prefill.
/// let (mut session, logits) = model.start(&[&[0, 1]], 2)?;
/// assert_eq!(logits.dims(), [2, 3]);
/// // Row 1 reads two more tokens; the logits follow its last one. Row 0 only reads.
/// let next = model.extend(&mut session, &[Feed::predict(1, &[2, 0]), Feed::catch_up(0, &[2])])?;
/// assert_eq!(next.dims(), [1, 3]);
/// assert_eq!((session.read(0), session.read(1)), (3, 4));
/// # Ok::<(), trlvr::Error>(())
/// ```
pub trait Partner: Send + Sync {
    /// Vocabulary size (width of the logits).
    fn vocab_size(&self) -> usize;

    /// The device the weights live on.
    fn device(&self) -> Device;

    /// Reads each prompt once and gives it `copies` rows (prompt-major: rows
    /// `p * copies .. (p + 1) * copies` belong to prompt `p`). Returns the session and
    /// the next-token logits at the end of every row, `[prompts * copies, vocab]`.
    ///
    /// # Errors
    /// Model-specific: empty prompt, out-of-range id, context too long.
    fn start(&self, prompts: &[&[TokenId]], copies: usize) -> Result<(Session, Tensor<2>)>;

    /// Feeds each listed row its unread tokens (a catch-up prefill and a decode step in
    /// one call) and returns the next-token logits after the last new token of each
    /// feed marked [`Feed::predict`], `[predicting feeds, vocab]`, in the order of `feeds`.
    ///
    /// # Errors
    /// [`Error::ForeignSession`] for another model's session; model-specific otherwise.
    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> Result<Tensor<2>>;

    /// Says that `rows` of `session` will never be fed again (their rollouts ended), so
    /// the model may stop computing them; a decoder drops them from its batch. The
    /// default keeps them, which is always correct.
    ///
    /// # Errors
    /// [`Error::ForeignSession`] for another model's session; model-specific otherwise.
    fn retire(&self, session: &mut Session, rows: &[usize]) -> Result<()> {
        let _ = (session, rows);
        Ok(())
    }

    /// Teacher-forced log-probabilities of every token given its prefix, from logits
    /// divided by `temperature`: `[batch, width]`, position 0 (no prefix) and padding
    /// are 0. No gradient is recorded.
    ///
    /// # Errors
    /// Model-specific.
    fn score(&self, batch: &TokenBatch, temperature: f32) -> Result<Tensor<2>>;

    /// [`Partner::score`] of row `r`'s slots from `from[r]` on (a response's start); the
    /// slots before are 0. A decoder then runs its LM head on those positions only. The
    /// default scores everything and zeroes the rest.
    ///
    /// # Errors
    /// [`Error::Shape`] if `from` does not have one entry per row; as [`Partner::score`].
    fn score_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> Result<Tensor<2>> {
        check_from(batch, from)?;
        Ok(zeroed_before(self.score(batch, temperature)?, from))
    }

    /// Raw next-token logits at every position of `batch` (teacher forcing, no
    /// gradient): `[batch, width, vocab]`, position `t` predicting token `t + 1`; padded
    /// positions hold anything. Evaluation needs the whole distribution (the exact KL
    /// between senior and junior, the junior's top-1 guess); a model that cannot give it
    /// keeps this default. Callers bound the memory (`batch × width × vocab` floats) by
    /// sending few rows at a time.
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default; model-specific otherwise.
    fn logits(&self, batch: &TokenBatch) -> Result<Tensor<3>> {
        let _ = batch;
        Err(Error::Unsupported("this model does not give full-vocabulary logits".into()))
    }
}

/// A boxed partner is a partner: wrappers (a tempered junior, a plugin's) take what the
/// host opened as a `Box<dyn Partner>`.
impl<P: Partner + ?Sized> Partner for Box<P> {
    fn vocab_size(&self) -> usize {
        (**self).vocab_size()
    }
    fn device(&self) -> Device {
        (**self).device()
    }
    fn start(&self, prompts: &[&[TokenId]], copies: usize) -> Result<(Session, Tensor<2>)> {
        (**self).start(prompts, copies)
    }
    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> Result<Tensor<2>> {
        (**self).extend(session, feeds)
    }
    fn retire(&self, session: &mut Session, rows: &[usize]) -> Result<()> {
        (**self).retire(session, rows)
    }
    fn score(&self, batch: &TokenBatch, temperature: f32) -> Result<Tensor<2>> {
        (**self).score(batch, temperature)
    }
    fn score_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> Result<Tensor<2>> {
        (**self).score_from(batch, temperature, from)
    }
    fn logits(&self, batch: &TokenBatch) -> Result<Tensor<3>> {
        (**self).logits(batch)
    }
}

/// A [`Partner`] that is also a trainable Burn module: the senior.
///
/// ```
/// use burn::prelude::*;
/// use trlvr::prelude::*;
///
/// let device = Device::default().autodiff();
/// let policy = BigramLm::random(4, 1.0, &device);
/// let batch = TokenBatch::new(vec![vec![0, 1, 2], vec![3, 1]], 0)?;
/// let log_probs = policy.log_probs(&batch, 0.6)?; // [2, 3]; position 0 and padding are 0
/// assert_eq!(log_probs.dims(), [2, 3]);
/// let grads = log_probs.sum().backward();
/// assert!(policy.table.val().grad(&grads).is_some());
/// # Ok::<(), trlvr::Error>(())
/// ```
pub trait Policy: Partner + Module {
    /// As [`Partner::score`], but recording gradients when the model lives on an
    /// autodiff device.
    ///
    /// # Errors
    /// Model-specific.
    fn log_probs(&self, batch: &TokenBatch, temperature: f32) -> Result<Tensor<2>>;

    /// As [`Policy::log_probs`], but positions before `from[r]` of row `r` are 0 too: a
    /// trainer that only needs the response passes where it starts, and a model that
    /// scores chunk by chunk skips the prompt. The default scores everything and masks.
    ///
    /// # Errors
    /// [`Error::Shape`] if `from` does not have one entry per row; model-specific otherwise.
    fn log_probs_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> Result<Tensor<2>> {
        check_from(batch, from)?;
        let log_probs = self.log_probs(batch, temperature)?;
        let [b, t] = log_probs.dims();
        let device = log_probs.device();
        let hidden: Vec<bool> = from.iter().flat_map(|&f| (0..t).map(move |p| p < f)).collect();
        let hidden = Tensor::<2, Bool>::from_data(TensorData::new(hidden, [b, t]), &device);
        Ok(log_probs.mask_fill(hidden, 0.0))
    }

    /// As [`Policy::log_probs_from`], split in two for training: the values now, the
    /// graph once the loss's gradient with respect to them is known ([`Scored`]). A model
    /// with an LM head forms that gradient chunk by chunk ([`lean_token_log_probs`]) and
    /// keeps no `vocab`-wide tensor per position for backward; the default records the
    /// whole graph of [`Policy::log_probs_from`].
    ///
    /// # Errors
    /// As [`Policy::log_probs_from`].
    fn scored_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> Result<Scored<'_>> {
        let log_probs = self.log_probs_from(batch, temperature, from)?;
        let values = log_probs.clone().detach();
        Ok(Scored::new(values, move |upstream| (log_probs * upstream).sum()))
    }

    /// A copy that records no gradients, to write rollouts and score π_old with. The
    /// default is [`Module::valid`]; a model that computes in a lower precision than its
    /// weights converts them here, once per step instead of at every decode step.
    fn frozen(&self) -> Self {
        self.valid()
    }
}
