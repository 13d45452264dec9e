//! [`Decoder`] as a [`Partner`] and [`Policy`]: prefill, per-row incremental decoding
//! and teacher-forced scoring.
//!
//! A session's state is one batched [`KvCache`] with a row per live session row. `start`
//! prefills each distinct prompt once and copies its slots to that prompt's rows.
//! `extend` runs one padded forward pass, in place on the session's cache, over every
//! live row: fed rows with their new tokens (rows may get different numbers), the others
//! with none; `retire` drops finished rows from the batch. The token-wise layers see only real tokens; only the last position of each
//! predicting row goes through the LM head.

use std::collections::HashSet;

use burn::prelude::*;
use burn::tensor::DType;
use trlvr::model::{
    Feed, LOG_PROB_CHUNK, Partner, Policy, Scored, Session, check_from, chunked_token_log_probs,
    lean_token_log_probs,
};
use trlvr::token::{TokenBatch, TokenId};

use crate::cache::KvCache;
use crate::decoder::Decoder;
use crate::{Error, Result};

/// A decoder session's state: the batched cache, and where each session row sits in it
/// (`None` once retired).
struct Rows {
    cache: KvCache,
    at: Vec<Option<usize>>,
}

impl Rows {
    fn new(cache: KvCache) -> Self {
        Self { at: (0..cache.rows()).map(Some).collect(), cache }
    }
}

impl Decoder {
    /// Checks ids against the vocabulary and right-pads `rows` with id 0.
    ///
    /// # Shapes
    /// - returns `[rows, longest]` and each row's length
    pub(crate) fn padded_ids(
        &self,
        rows: &[&[TokenId]],
        device: &Device,
    ) -> Result<(Tensor<2, Int>, Vec<usize>)> {
        if rows.iter().any(|r| r.is_empty()) {
            return Err(Error::Input("every row needs at least one token".into()));
        }
        self.padded_rows(rows, device)
    }

    /// As [`Self::padded_ids`], but rows may be empty (rows of a session that read nothing
    /// in this call); at least one must not be.
    fn padded_rows(&self, rows: &[&[TokenId]], device: &Device) -> Result<(Tensor<2, Int>, Vec<usize>)> {
        let vocab = self.config.vocab_size;
        let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
        let width = lengths.iter().copied().max().unwrap_or(0);
        if width == 0 {
            return Err(Error::Input("every row needs at least one token".into()));
        }
        let mut flat = Vec::with_capacity(rows.len() * width);
        for row in rows {
            if let Some(&token) = row.iter().find(|&&t| t as usize >= vocab) {
                return Err(Error::Vocabulary { token, vocab });
            }
            flat.extend(row.iter().map(|&t| i64::from(t)));
            flat.extend(std::iter::repeat_n(0, width - row.len()));
        }
        let ids = Tensor::from_data(TensorData::new(flat, [rows.len(), width]), device);
        Ok((ids, lengths))
    }

    /// The logits at each row's last real position: the LM head on those positions only.
    ///
    /// # Shapes
    /// - `hidden`: `[batch, seq, hidden]` -> `[batch, vocab]`
    fn last_logits(&self, hidden: Tensor<3>, lengths: &[usize]) -> Tensor<2> {
        let rows: Vec<usize> = (0..lengths.len()).collect();
        self.last_logits_of(hidden, lengths, &rows)
    }

    /// Logits after the last real token of each of `rows`, in that order: `[rows, vocab]`.
    fn last_logits_of(&self, hidden: Tensor<3>, lengths: &[usize], rows: &[usize]) -> Tensor<2> {
        let [b, t, d] = hidden.dims();
        let last = if t == 1 && rows.len() == b && rows.iter().enumerate().all(|(i, &r)| i == r) {
            hidden
        } else {
            let device = hidden.device();
            let index: Vec<i64> = rows.iter().map(|&r| (r * t + lengths[r] - 1) as i64).collect();
            let index = Tensor::<1, Int>::from_data(TensorData::new(index, [rows.len()]), &device);
            hidden.reshape([b * t, d]).select(0, index).reshape([rows.len(), 1, d])
        };
        // Samplers take f32 logits whatever the weights' dtype.
        self.lm_head(last).reshape([rows.len(), self.config.vocab_size]).cast(DType::F32)
    }

    /// Full-sequence logits of a [`TokenBatch`].
    ///
    /// # Shapes
    /// - returns `[batch, width, vocab]`
    fn batch_logits(&self, batch: &TokenBatch) -> Result<Tensor<3>> {
        let rows: Vec<&[TokenId]> = batch.rows().iter().map(Vec::as_slice).collect();
        let (ids, lengths) = self.padded_ids(&rows, &self.weights_device())?;
        self.forward(ids, &lengths, None)
    }

    /// Log-probs of `batch` from position `from[r]` on, the LM head applied chunk by
    /// chunk ([`chunked_token_log_probs`]), so the full logits never exist.
    ///
    /// # Shapes
    /// - returns `[batch, width]`
    fn chunked_log_probs(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> Result<Tensor<2>> {
        let rows: Vec<&[TokenId]> = batch.rows().iter().map(Vec::as_slice).collect();
        let (ids, lengths) = self.padded_ids(&rows, &self.weights_device())?;
        let hidden = self.hidden(ids, &lengths, None)?;
        let head = |h: Tensor<2>| {
            let [n, d] = h.dims();
            self.lm_head(h.reshape([1, n, d])).reshape([n, self.config.vocab_size])
        };
        Ok(chunked_token_log_probs(hidden, head, batch, temperature, from, LOG_PROB_CHUNK))
    }

    pub(crate) fn weights_device(&self) -> Device {
        self.embed_tokens.weight.val().device()
    }

    /// Runs `work` on Rayon's pool ([`crate::pool::run`]) when the weights are untracked
    /// tensors of the flex CPU backend, whose kernels run there; elsewhere here.
    fn on_pool<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match crate::kernels::on_flex(&self.embed_tokens.weight.val()) {
            true => crate::pool::run(work),
            false => work(),
        }
    }

    /// [`Partner::start`], on the calling thread.
    fn prefill(&self, prompts: &[&[TokenId]], copies: usize) -> trlvr::Result<(Session, Tensor<2>)> {
        if copies == 0 {
            return Err(Error::Input("copies must be at least 1".into()).into());
        }
        // 1. Prefill every prompt once, as one padded batch.
        let (ids, lengths) = self.padded_ids(prompts, &self.weights_device())?;
        let mut cache = KvCache::new(prompts.len());
        let hidden = self.hidden(ids, &lengths, Some(&mut cache))?;
        let last = self.last_logits(hidden, &lengths); // [prompts, vocab]
        if copies == 1 {
            return Ok((Session::new(lengths, Box::new(Rows::new(cache))), last));
        }

        // 2. Give each prompt `copies` rows, prompt-major.
        let owner: Vec<usize> = (0..prompts.len()).flat_map(|p| std::iter::repeat_n(p, copies)).collect();
        let index: Vec<i64> = owner.iter().map(|&p| p as i64).collect();
        let index = Tensor::<1, Int>::from_data(TensorData::new(index, [owner.len()]), &last.device());
        let read = owner.iter().map(|&p| lengths[p]).collect();
        let session = Session::new(read, Box::new(Rows::new(cache.repeat_rows(&owner))));
        Ok((session, last.select(0, index)))
    }

    /// [`Partner::extend`], on the calling thread.
    fn feed(&self, session: &mut Session, feeds: &[Feed<'_>]) -> trlvr::Result<Tensor<2>> {
        // 1. Check the feeds: rows in range, each at most once. No feeds, no logits.
        let no_logits = || Tensor::zeros([0, self.config.vocab_size], (&self.weights_device(), DType::F32));
        if feeds.is_empty() {
            return Ok(no_logits());
        }
        let total = session.rows();
        let mut seen = HashSet::new();
        if feeds.iter().any(|f| f.tokens.is_empty()) {
            return Err(Error::Input("every fed row needs at least one token".into()).into());
        }
        if let Some(bad) = feeds.iter().find(|f| f.row >= total || !seen.insert(f.row)) {
            return Err(Error::Input(format!(
                "feed for row {} is out of range ({total} rows) or repeated",
                bad.row
            ))
            .into());
        }
        // 2. One padded call over every row still in the batch, in place on the cache:
        //    rows that read nothing now have length 0 (their padded slots land past their
        //    length, where nothing reads them), and only fed rows reach the LM head.
        let state = session.state_mut::<Rows>()?;
        let mut tokens: Vec<&[TokenId]> = vec![&[]; state.cache.rows()];
        for feed in feeds {
            let at = state.at[feed.row]
                .ok_or_else(|| Error::Input(format!("row {} was retired and cannot be fed", feed.row)))?;
            tokens[at] = feed.tokens;
        }
        let (ids, lengths) = self.padded_rows(&tokens, &self.weights_device())?;
        let hidden = self.hidden(ids, &lengths, Some(&mut state.cache))?;
        // 3. The LM head only for rows that predict.
        let rows: Vec<usize> = feeds.iter().filter(|f| f.predict).filter_map(|f| state.at[f.row]).collect();
        for feed in feeds {
            session.advance(feed.row, feed.tokens.len());
        }
        if rows.is_empty() {
            return Ok(no_logits());
        }
        Ok(self.last_logits_of(hidden, &lengths, &rows))
    }
}

impl Partner for Decoder {
    fn vocab_size(&self) -> usize {
        self.config.vocab_size
    }

    fn device(&self) -> Device {
        self.weights_device()
    }

    fn start(&self, prompts: &[&[TokenId]], copies: usize) -> trlvr::Result<(Session, Tensor<2>)> {
        self.on_pool(|| self.prefill(prompts, copies))
    }

    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> trlvr::Result<Tensor<2>> {
        self.on_pool(|| self.feed(session, feeds))
    }

    /// Once a quarter of the batch has retired, the cache keeps only the live rows (one
    /// copy of their slots): later steps compute no finished row.
    fn retire(&self, session: &mut Session, rows: &[usize]) -> trlvr::Result<()> {
        let state = session.state_mut::<Rows>()?;
        for &row in rows {
            *state
                .at
                .get_mut(row)
                .ok_or_else(|| Error::Input(format!("retired row {row} is out of range")))? = None;
        }
        let mut live: Vec<(usize, usize)> =
            state.at.iter().enumerate().filter_map(|(row, at)| at.map(|at| (at, row))).collect();
        if live.len() * 4 > state.cache.rows() * 3 {
            return Ok(());
        }
        live.sort_unstable();
        let kept: Vec<usize> = live.iter().map(|&(at, _)| at).collect();
        state.cache =
            if kept.is_empty() { KvCache::new(0) } else { state.cache.gather(&kept, state.cache.capacity()) };
        for (at, &(_, row)) in live.iter().enumerate() {
            state.at[row] = Some(at);
        }
        Ok(())
    }

    fn score(&self, batch: &TokenBatch, temperature: f32) -> trlvr::Result<Tensor<2>> {
        self.score_from(batch, temperature, &vec![0; batch.rows().len()])
    }

    fn score_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> trlvr::Result<Tensor<2>> {
        check_from(batch, from)?;
        self.on_pool(|| Ok(self.chunked_log_probs(batch, temperature, from)?.detach()))
    }

    fn logits(&self, batch: &TokenBatch) -> trlvr::Result<Tensor<3>> {
        self.on_pool(|| Ok(self.batch_logits(batch)?.detach().cast(DType::F32)))
    }
}

impl Policy for Decoder {
    /// With a compute dtype, the copy holds its weights in it
    /// ([`Decoder::with_weights_in_compute_dtype`]); on the CPU its projections are laid
    /// out for decoding ([`Decoder::with_decode_layout`]).
    fn frozen(&self) -> Self {
        self.valid().with_weights_in_compute_dtype().with_decode_layout()
    }

    fn log_probs(&self, batch: &TokenBatch, temperature: f32) -> trlvr::Result<Tensor<2>> {
        let from = vec![0; batch.rows().len()];
        Ok(self.chunked_log_probs(batch, temperature, &from)?)
    }

    fn log_probs_from(
        &self,
        batch: &TokenBatch,
        temperature: f32,
        from: &[usize],
    ) -> trlvr::Result<Tensor<2>> {
        check_from(batch, from)?;
        Ok(self.chunked_log_probs(batch, temperature, from)?)
    }

    /// The LM head's gradient formed chunk by chunk ([`lean_token_log_probs`]).
    fn scored_from(&self, batch: &TokenBatch, temperature: f32, from: &[usize]) -> trlvr::Result<Scored<'_>> {
        check_from(batch, from)?;
        if self.lm_head.as_ref().is_some_and(|head| head.bias.is_some()) {
            return Err(trlvr::Error::Unsupported("an LM head with a bias".into()));
        }
        if self.checkpoint_layers && self.weights_device().is_autodiff() {
            return Ok(self.layer_checkpointed_scored(batch, temperature, from)?);
        }
        let rows: Vec<&[TokenId]> = batch.rows().iter().map(Vec::as_slice).collect();
        let (ids, lengths) = self.padded_ids(&rows, &self.weights_device())?;
        let hidden = self.hidden(ids, &lengths, None)?;
        Ok(lean_token_log_probs(hidden, self.head_weight(), batch, temperature, from, LOG_PROB_CHUNK))
    }
}
