//! [`Decoder`] as a [`Partner`] and [`Policy`]: prefill, per-row incremental decoding
//! and teacher-forced scoring.
//!
//! A session's state is one batched [`KvCache`] with a row per session row. `start`
//! prefills each distinct prompt once and copies its slots to that prompt's rows.
//! `extend` runs one padded forward pass over the fed rows' new tokens (rows may get
//! different numbers): straight on the session's cache when the feeds are rows
//! `0..n` in order (a decode step over every live row), otherwise on a gathered copy of
//! the fed rows whose new slots are then written back. Only the last position of each
//! row goes through the LM head.

use std::collections::HashSet;

use burn::prelude::*;
use trlvr::model::{Feed, Partner, Policy, Session, token_log_probs};
use trlvr::token::{TokenBatch, TokenId};

use crate::cache::KvCache;
use crate::decoder::Decoder;
use crate::{Error, Result};

impl Decoder {
    /// Checks ids against the vocabulary and right-pads `rows` with id 0.
    ///
    /// # Shapes
    /// - returns `[rows, longest]` and each row's length
    fn padded_ids(&self, rows: &[&[TokenId]], device: &Device) -> Result<(Tensor<2, Int>, Vec<usize>)> {
        let vocab = self.config.vocab_size;
        let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
        let width = lengths.iter().copied().max().unwrap_or(0);
        if rows.is_empty() || lengths.contains(&0) {
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
        let [b, t, d] = hidden.dims();
        let last = if t == 1 {
            hidden
        } else {
            let device = hidden.device();
            let index: Vec<i64> = lengths.iter().enumerate().map(|(r, &n)| (r * t + n - 1) as i64).collect();
            let index = Tensor::<1, Int>::from_data(TensorData::new(index, [b]), &device);
            hidden.reshape([b * t, d]).select(0, index).reshape([b, 1, d])
        };
        self.lm_head(last).reshape([b, self.config.vocab_size])
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

    fn weights_device(&self) -> Device {
        self.embed_tokens.weight.val().device()
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
        if copies == 0 {
            return Err(Error::Input("copies must be at least 1".into()).into());
        }
        // 1. Prefill every prompt once, as one padded batch.
        let (ids, lengths) = self.padded_ids(prompts, &self.weights_device())?;
        let mut cache = KvCache::new(prompts.len());
        let hidden = self.hidden(ids, &lengths, Some(&mut cache))?;
        let last = self.last_logits(hidden, &lengths); // [prompts, vocab]
        if copies == 1 {
            return Ok((Session::new(lengths, Box::new(cache)), last));
        }

        // 2. Give each prompt `copies` rows, prompt-major.
        let owner: Vec<usize> = (0..prompts.len()).flat_map(|p| std::iter::repeat_n(p, copies)).collect();
        let index: Vec<i64> = owner.iter().map(|&p| p as i64).collect();
        let index = Tensor::<1, Int>::from_data(TensorData::new(index, [owner.len()]), &last.device());
        let read = owner.iter().map(|&p| lengths[p]).collect();
        let session = Session::new(read, Box::new(cache.repeat_rows(&owner)));
        Ok((session, last.select(0, index)))
    }

    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> trlvr::Result<Tensor<2>> {
        // 1. Check the feeds: rows in range, each at most once. No feeds, no logits.
        if feeds.is_empty() {
            return Ok(Tensor::zeros([0, self.config.vocab_size], &self.weights_device()));
        }
        let total = session.rows();
        let mut seen = HashSet::new();
        if let Some(bad) = feeds.iter().find(|f| f.row >= total || !seen.insert(f.row)) {
            return Err(Error::Input(format!(
                "feed for row {} is out of range ({total} rows) or repeated",
                bad.row
            ))
            .into());
        }
        let tokens: Vec<&[TokenId]> = feeds.iter().map(|f| f.tokens).collect();
        let (ids, lengths) = self.padded_ids(&tokens, &self.weights_device())?;

        // 2. Run the fed rows as one batch: in place when they are rows 0..n in order,
        // else on a copy of their caches whose new slots are written back.
        let state = session.state_mut::<KvCache>()?;
        let hidden = if feeds.len() == state.rows() && feeds.iter().enumerate().all(|(i, f)| f.row == i) {
            self.hidden(ids, &lengths, Some(state))?
        } else {
            let rows: Vec<usize> = feeds.iter().map(|f| f.row).collect();
            let width = lengths.iter().copied().max().unwrap_or(0);
            let past = state.lengths();
            let slots = rows.iter().map(|&r| past[r] + width).max().unwrap_or(0);
            let mut part = state.gather(&rows, slots);
            let hidden = self.hidden(ids, &lengths, Some(&mut part))?;
            state.scatter(&rows, &part);
            hidden
        };
        for (feed, &n) in feeds.iter().zip(&lengths) {
            session.advance(feed.row, n);
        }
        Ok(self.last_logits(hidden, &lengths))
    }

    fn score(&self, batch: &TokenBatch, temperature: f32) -> trlvr::Result<Tensor<2>> {
        Ok(token_log_probs(self.batch_logits(batch)?, batch, temperature).detach())
    }
}

impl Policy for Decoder {
    fn log_probs(&self, batch: &TokenBatch, temperature: f32) -> trlvr::Result<Tensor<2>> {
        Ok(token_log_probs(self.batch_logits(batch)?, batch, temperature))
    }
}
