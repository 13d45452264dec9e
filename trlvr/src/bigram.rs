//! A bigram language model: the smallest real [`Policy`], so the core is testable (and
//! a new user can experiment) without `trlvr-models`.

use burn::module::Param;
use burn::prelude::*;

use crate::model::{Feed, Partner, Policy, Session, token_log_probs};
use crate::token::{TokenBatch, TokenId};
use crate::{Error, Result};

/// Next-token logits are a learned row of a `[vocab, vocab]` table, indexed by the last
/// token. Its "KV cache" is each row's last token.
#[derive(Module, Debug)]
pub struct BigramLm {
    /// `[vocab (previous), vocab (next)]` logits.
    pub table: Param<Tensor<2>>,
}

impl BigramLm {
    /// From an explicit table of logits.
    pub fn new<const V: usize>(table: &[[f32; V]], device: &Device) -> Self {
        let flat: Vec<f32> = table.iter().flatten().copied().collect();
        Self::from_tensor(Tensor::from_data(TensorData::new(flat, [table.len(), V]), device))
    }

    /// From a `[vocab, vocab]` tensor.
    pub fn from_tensor(table: Tensor<2>) -> Self {
        Self { table: Param::from_tensor(table) }
    }

    /// Random logits, normal with standard deviation `std`.
    pub fn random(vocab: usize, std: f64, device: &Device) -> Self {
        let t = Tensor::random([vocab, vocab], burn::tensor::Distribution::Normal(0.0, std), device);
        Self::from_tensor(t)
    }

    fn rows(&self, last: &[TokenId]) -> Result<Tensor<2>> {
        let vocab = self.vocab_size();
        if let Some(&bad) = last.iter().find(|&&t| t as usize >= vocab) {
            return Err(Error::Vocabulary(format!("token {bad} outside vocabulary of {vocab}")));
        }
        let device = self.table.val().device();
        let ids = Tensor::<1, Int>::from_data(
            TensorData::new(last.iter().map(|&t| t as i64).collect(), [last.len()]),
            &device,
        );
        Ok(self.table.val().select(0, ids))
    }

    fn logits(&self, batch: &TokenBatch) -> Result<Tensor<3>> {
        let vocab = self.vocab_size();
        if let Some(bad) = batch.rows().iter().flatten().find(|&&t| t as usize >= vocab) {
            return Err(Error::Vocabulary(format!("token {bad} outside vocabulary of {vocab}")));
        }
        let device = self.table.val().device();
        let ids = batch.ids(&device);
        let [b, t] = ids.dims();
        let flat = self.table.val().select(0, ids.reshape([b * t]));
        Ok(flat.reshape([b, t, vocab]))
    }
}

/// Each row's last token.
#[derive(Debug)]
struct LastToken(Vec<TokenId>);

impl Partner for BigramLm {
    fn vocab_size(&self) -> usize {
        self.table.dims()[0]
    }

    fn device(&self) -> Device {
        self.table.val().device()
    }

    fn start(&self, prompts: &[&[TokenId]], copies: usize) -> Result<(Session, Tensor<2>)> {
        if prompts.iter().any(|p| p.is_empty()) || copies == 0 {
            return Err(Error::Shape("prompts must be non-empty and copies at least 1".into()));
        }
        let last: Vec<TokenId> =
            prompts.iter().flat_map(|p| std::iter::repeat_n(p[p.len() - 1], copies)).collect();
        let read = prompts.iter().flat_map(|p| std::iter::repeat_n(p.len(), copies)).collect();
        let logits = self.rows(&last)?;
        Ok((Session::new(read, Box::new(LastToken(last))), logits))
    }

    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> Result<Tensor<2>> {
        let (rows, vocab) = (session.rows(), self.vocab_size());
        let mut picked = Vec::with_capacity(feeds.len());
        for feed in feeds {
            let (Some(&last), true) = (feed.tokens.last(), feed.row < rows) else {
                return Err(Error::Shape(format!("feed for row {} is empty or out of range", feed.row)));
            };
            if let Some(&bad) = feed.tokens.iter().find(|&&t| t as usize >= vocab) {
                return Err(Error::Vocabulary(format!("token {bad} outside vocabulary of {vocab}")));
            }
            if feed.predict {
                picked.push(last);
            }
        }
        let logits =
            if picked.is_empty() { Tensor::zeros([0, vocab], &self.device()) } else { self.rows(&picked)? };
        for feed in feeds {
            session.state_mut::<LastToken>()?.0[feed.row] = feed.tokens[feed.tokens.len() - 1];
            session.advance(feed.row, feed.tokens.len());
        }
        Ok(logits)
    }

    fn score(&self, batch: &TokenBatch, temperature: f32) -> Result<Tensor<2>> {
        Ok(token_log_probs(self.logits(batch)?, batch, temperature).detach())
    }

    fn logits(&self, batch: &TokenBatch) -> Result<Tensor<3>> {
        Ok(BigramLm::logits(self, batch)?.detach())
    }
}

impl Policy for BigramLm {
    fn log_probs(&self, batch: &TokenBatch, temperature: f32) -> Result<Tensor<2>> {
        Ok(token_log_probs(self.logits(batch)?, batch, temperature))
    }
}
