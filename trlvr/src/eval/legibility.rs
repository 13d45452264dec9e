//! Legibility and drift (method.md §5): how well the junior reads the senior's chains.
//!
//! For each senior-written token `x_t` of a chain (teacher-forced after the chat
//! prefix, raw distributions at temperature 1; the closing EOS is not measured):
//!
//! | figure | per token |
//! |---|---|
//! | junior cross-entropy / NLL | `-log p_jun(x_t)` |
//! | junior top-1 | `argmax p_jun(·) == x_t` |
//! | KL, k3 estimate | `exp(d) - d - 1`, `d = log p_jun(x_t) - log p_sen(x_t)` |
//! | KL, exact | `Σ_v p_sen(v) (log p_sen(v) - log p_jun(v))` over the vocabulary |
//!
//! Both models' logits are computed on the model's device, reduced there to one number
//! per position, and only those come back. Rows go in chunks of at most
//! `budget` logits (`rows × width × vocab`), one row at least.

use burn::prelude::*;
use burn::tensor::activation::log_softmax;
use serde::{Deserialize, Serialize};

use crate::model::Partner;
use crate::token::{Owner, TokenBatch, TokenId};
use crate::{Error, Result};

/// Sums over the tokens of one chain (or of several: the sums add up).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChainStats {
    /// Chains measured (those with at least one token).
    #[serde(default)]
    pub chains: usize,
    /// Σ over chains of the chain's mean −log p_jun: legibility is the mean of per-chain
    /// means (method.md §5), so a long chain weighs as much as a short one.
    #[serde(default)]
    pub chain_ce: f64,
    /// Σ over chains of the chain's fraction of junior top-1 tokens.
    #[serde(default)]
    pub chain_top1: f64,
    /// Tokens measured.
    pub tokens: usize,
    /// Σ −log p_jun(token), nats.
    pub junior_nll: f64,
    /// Tokens that are the junior's most likely next token.
    pub junior_top1: usize,
    /// Σ k3 estimate of KL(senior ‖ junior).
    pub kl_k3: f64,
    /// Σ exact KL(senior ‖ junior) of the next-token distributions.
    pub kl_exact: f64,
}

impl ChainStats {
    /// Adds `other`'s sums to these.
    pub fn add(&mut self, other: &ChainStats) {
        self.chains += other.chains;
        self.chain_ce += other.chain_ce;
        self.chain_top1 += other.chain_top1;
        self.tokens += other.tokens;
        self.junior_nll += other.junior_nll;
        self.junior_top1 += other.junior_top1;
        self.kl_k3 += other.kl_k3;
        self.kl_exact += other.kl_exact;
    }
}

/// A chain to measure: the prompt (chat prefix), then the response, without its EOS
/// token (legibility is over the words of the chain, method.md §5).
#[derive(Debug, Clone, Copy)]
pub struct Chain<'a> {
    /// The prompt's ids (not measured).
    pub prompt: &'a [TokenId],
    /// The response's ids.
    pub response: &'a [TokenId],
}

/// [`ChainStats`] of each chain, over all its response tokens: the senior wrote them
/// (solo chains). The two models' logits are computed at once, on two threads.
///
/// # Errors
/// [`Error::Vocabulary`] if the vocabularies differ; [`Error::Unsupported`] if a model
/// gives no full logits; model errors.
pub fn compare(
    senior: &dyn Partner,
    junior: &dyn Partner,
    chains: &[Chain<'_>],
    budget: usize,
) -> Result<Vec<ChainStats>> {
    let vocab = senior.vocab_size();
    if junior.vocab_size() != vocab {
        return Err(Error::Vocabulary(format!(
            "senior has {vocab} ids, junior {}; legibility compares distributions over one vocabulary",
            junior.vocab_size()
        )));
    }
    let mut out = Vec::with_capacity(chains.len());
    for chunk in chunks(chains, vocab, budget) {
        out.extend(compare_chunk(senior, junior, &chains[chunk])?);
    }
    Ok(out)
}

/// Σ −log p_jun over the tokens of each chain that `owners` marks as the senior's (for
/// handoff chains, where the junior wrote the rest), with their count.
///
/// # Errors
/// [`Error::Shape`] if a chain's owners do not match its response; model errors.
pub fn junior_nll_of_senior_tokens(
    junior: &dyn Partner,
    chains: &[Chain<'_>],
    owners: &[&[Owner]],
    budget: usize,
) -> Result<Vec<(f64, usize)>> {
    if owners.len() != chains.len() || chains.iter().zip(owners).any(|(c, o)| c.response.len() != o.len()) {
        return Err(Error::Shape("one owner per response token is needed".into()));
    }
    let mut out = Vec::with_capacity(chains.len());
    for chunk in chunks(chains, junior.vocab_size(), budget) {
        let (batch, width) = batch_of(&chains[chunk.clone()])?;
        let from: Vec<usize> = chains[chunk.clone()].iter().map(|c| c.prompt.len()).collect();
        let lp = read(junior.score_from(&batch, 1.0, &from)?)?;
        for (r, i) in chunk.enumerate() {
            let p = chains[i].prompt.len();
            let row = &lp[r * width..(r + 1) * width];
            let (sum, n) = owners[i]
                .iter()
                .enumerate()
                .filter(|(_, o)| **o == Owner::Senior)
                .fold((0.0, 0), |(s, n), (t, _)| (s - f64::from(row[p + t]), n + 1));
            out.push((sum, n));
        }
    }
    Ok(out)
}

/// Index ranges of `chains` whose padded logits fit `budget` floats (one chain at least).
fn chunks(chains: &[Chain<'_>], vocab: usize, budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < chains.len() {
        let mut end = start + 1;
        let mut width = chains[start].prompt.len() + chains[start].response.len();
        while end < chains.len() {
            let w = width.max(chains[end].prompt.len() + chains[end].response.len());
            if (end + 1 - start) * w * vocab > budget {
                break;
            }
            width = w;
            end += 1;
        }
        ranges.push(start..end);
        start = end;
    }
    ranges
}

fn batch_of(chains: &[Chain<'_>]) -> Result<(TokenBatch, usize)> {
    if chains.iter().any(|c| c.prompt.is_empty()) {
        return Err(Error::Shape("a chain needs a non-empty prompt".into()));
    }
    let rows = chains.iter().map(|c| c.prompt.iter().chain(c.response).copied().collect()).collect();
    let batch = TokenBatch::new(rows, 0)?;
    let width = batch.width();
    Ok((batch, width))
}

fn read<const D: usize>(t: Tensor<D>) -> Result<Vec<f32>> {
    t.try_into_vec_as::<f32>().map_err(|e| Error::Read(format!("{e:?}")))
}

fn compare_chunk(
    senior: &dyn Partner,
    junior: &dyn Partner,
    chains: &[Chain<'_>],
) -> Result<Vec<ChainStats>> {
    let (batch, width) = batch_of(chains)?;
    let rows = chains.len();
    // 1. Both models' logits, [rows, width, vocab], at once; once when self-paired (the
    //    same model twice).
    let (s, j) = if std::ptr::addr_eq(senior, junior) {
        let s = senior.logits(&batch)?;
        (s.clone(), s)
    } else {
        let (s, j) = std::thread::scope(|scope| {
            let s = scope.spawn(|| senior.logits(&batch));
            let j = junior.logits(&batch);
            (s.join().expect("senior thread panicked"), j)
        });
        (s?, j?)
    };
    let [_, _, vocab] = s.dims();
    let device = s.device();
    let j = j.to_device(&device);
    // 2. Position t predicts token t + 1: keep positions 0..width-1.
    let t = width - 1;
    let ls = log_softmax(s.slice([0..rows, 0..t, 0..vocab]), 2);
    let lj = log_softmax(j.slice([0..rows, 0..t, 0..vocab]), 2);
    let next = batch.ids(&device).slice([0..rows, 1..width]).unsqueeze_dim::<3>(2); // [rows, t, 1]
    let lp_sen = ls.clone().gather(2, next.clone()).reshape([rows, t]);
    let lp_jun = lj.clone().gather(2, next).reshape([rows, t]);
    let top1 = lj.clone().argmax(2).reshape([rows, t]);
    let kl = (ls.clone().exp() * (ls - lj)).sum_dim(2).reshape([rows, t]);
    // 3. Back to the host: four numbers per position.
    let (lp_sen, lp_jun, kl) = (read(lp_sen)?, read(lp_jun)?, read(kl)?);
    let top1: Vec<i64> = top1.try_into_vec_as::<i64>().map_err(|e| Error::Read(format!("{e:?}")))?;
    Ok(chains
        .iter()
        .enumerate()
        .map(|(r, c)| {
            let mut stats = ChainStats::default();
            let p = c.prompt.len();
            for (k, &token) in c.response.iter().enumerate() {
                let at = r * t + p + k - 1; // the position before the token
                let d = f64::from(lp_jun[at]) - f64::from(lp_sen[at]);
                stats.tokens += 1;
                stats.junior_nll -= f64::from(lp_jun[at]);
                stats.junior_top1 += usize::from(top1[at] == i64::from(token));
                stats.kl_k3 += d.exp() - d - 1.0;
                stats.kl_exact += f64::from(kl[at]);
            }
            if stats.tokens > 0 {
                stats.chains = 1;
                stats.chain_ce = stats.junior_nll / stats.tokens as f64;
                stats.chain_top1 = stats.junior_top1 as f64 / stats.tokens as f64;
            }
            stats
        })
        .collect())
}
