//! The three masks of a rollout batch, kept as distinct types, and the loss mask derived
//! from them in one place ([`RolloutMasks::loss_mask`]).
//!
//! Every mask is `[batch, width]` over token positions of right-padded rows laid out as
//! `prompt ++ response ++ padding`. Known bugs elsewhere came from reusing one of these as
//! another (a loss mask as an attention mask; padding found by `id == pad` when
//! `pad == eos`), hence one type each.

use burn::prelude::*;

use crate::token::{Owner, TokenBatch};
use crate::{Error, Result};

fn bool_tensor(flat: Vec<bool>, rows: usize, width: usize, device: &Device) -> Tensor<2, Bool> {
    Tensor::from_data(TensorData::new(flat, [rows, width]), device)
}

/// Which positions hold a real token (true) rather than padding.
#[derive(Debug, Clone)]
pub struct AttentionMask(Tensor<2, Bool>);

impl AttentionMask {
    /// Rows of the given lengths, right-padded to `width`.
    pub fn from_lengths(lengths: &[usize], width: usize, device: &Device) -> Self {
        let flat = lengths.iter().flat_map(|&n| (0..width).map(move |t| t < n)).collect();
        Self(bool_tensor(flat, lengths.len(), width, device))
    }

    /// Which slots of `batch` hold real tokens: its rows' lengths, never its pad id.
    pub fn from_batch(batch: &TokenBatch, device: &Device) -> Self {
        Self::from_lengths(&batch.lengths(), batch.width(), device)
    }

    /// The mask, `[batch, width]`.
    pub fn tensor(&self) -> &Tensor<2, Bool> {
        &self.0
    }
}

/// Which positions belong to the response (true) rather than the prompt.
#[derive(Debug, Clone)]
pub struct ResponseMask(Tensor<2, Bool>);

impl ResponseMask {
    /// Responses start at each row's prompt length and run to the end of the width;
    /// padding is excluded by the [`AttentionMask`], not here.
    pub fn from_prompt_lengths(prompt_lengths: &[usize], width: usize, device: &Device) -> Self {
        let flat = prompt_lengths.iter().flat_map(|&p| (0..width).map(move |t| t >= p)).collect();
        Self(bool_tensor(flat, prompt_lengths.len(), width, device))
    }

    /// The mask, `[batch, width]`.
    pub fn tensor(&self) -> &Tensor<2, Bool> {
        &self.0
    }
}

/// Which positions the senior wrote (true). Prompt and padding positions are false.
#[derive(Debug, Clone)]
pub struct Ownership(Tensor<2, Bool>);

impl Ownership {
    /// `owners[i]` lists who wrote each response token of row `i`, which starts at
    /// `prompt_lengths[i]`.
    ///
    /// # Errors
    /// [`Error::Shape`] if a row does not fit in `width`.
    pub fn from_owners(
        prompt_lengths: &[usize],
        owners: &[Vec<Owner>],
        width: usize,
        device: &Device,
    ) -> Result<Self> {
        if prompt_lengths.len() != owners.len() {
            return Err(Error::Shape(format!(
                "{} prompt lengths for {} owner rows",
                prompt_lengths.len(),
                owners.len()
            )));
        }
        let mut flat = vec![false; owners.len() * width];
        for (i, (&p, row)) in prompt_lengths.iter().zip(owners).enumerate() {
            if p + row.len() > width {
                return Err(Error::Shape(format!(
                    "row {i}: prompt {p} + response {} exceeds width {width}",
                    row.len()
                )));
            }
            for (t, owner) in row.iter().enumerate() {
                flat[i * width + p + t] = *owner == Owner::Senior;
            }
        }
        Ok(Self(bool_tensor(flat, owners.len(), width, device)))
    }

    /// The mask, `[batch, width]`.
    pub fn tensor(&self) -> &Tensor<2, Bool> {
        &self.0
    }
}

/// The positions that carry loss: real, response, senior-written tokens. Made only by
/// [`RolloutMasks::loss_mask`] (or [`LossMask::from_bools`] for hand-built tests).
#[derive(Debug, Clone)]
pub struct LossMask(Tensor<2, Bool>);

impl LossMask {
    /// A loss mask from explicit flags, `[rows, width]` row-major. Prefer
    /// [`RolloutMasks::loss_mask`]; this exists for callers that build masks themselves.
    ///
    /// # Errors
    /// [`Error::Shape`] if `flags.len() != rows * width`.
    pub fn from_bools(flags: Vec<bool>, rows: usize, width: usize, device: &Device) -> Result<Self> {
        if flags.len() != rows * width {
            return Err(Error::Shape(format!("{} flags for [{rows}, {width}]", flags.len())));
        }
        Ok(Self(bool_tensor(flags, rows, width, device)))
    }

    /// The mask, `[batch, width]`.
    pub fn tensor(&self) -> &Tensor<2, Bool> {
        &self.0
    }

    /// Rows `range` of this mask (for micro-batching).
    #[must_use]
    pub fn rows(&self, range: std::ops::Range<usize>) -> Self {
        Self(self.0.clone().slice([range]))
    }

    /// Counts for the denominators of a whole mini-batch. Compute it once on the full
    /// mini-batch and hand the same value to every micro-batch.
    ///
    /// # Errors
    /// [`Error::Read`] if the mask cannot be read back from the device.
    pub fn normalizer(&self) -> Result<Normalizer> {
        let [rows, width] = self.0.dims();
        let flags: Vec<bool> =
            self.0.clone().try_into_vec_as::<bool>().map_err(|e| Error::Read(format!("{e:?}")))?;
        let per_row: Vec<usize> =
            (0..rows).map(|i| flags[i * width..(i + 1) * width].iter().filter(|&&b| b).count()).collect();
        Ok(Normalizer { tokens: per_row.iter().sum(), sequences: per_row.iter().filter(|&&n| n > 0).count() })
    }
}

/// Global denominators of a mini-batch: loss tokens and sequences with at least one.
///
/// Junior, prompt and padding positions are in neither count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Normalizer {
    /// Senior-written response tokens in the mini-batch.
    pub tokens: usize,
    /// Rows with at least one such token.
    pub sequences: usize,
}

/// The three masks of one rollout batch.
#[derive(Debug, Clone)]
pub struct RolloutMasks {
    /// Real tokens vs padding.
    pub attention: AttentionMask,
    /// Response vs prompt.
    pub response: ResponseMask,
    /// Senior vs junior (or nobody, in the prompt).
    pub owner: Ownership,
}

impl RolloutMasks {
    /// Masks for rows `prompt ++ response`, where `owners[i]` covers row `i`'s response.
    ///
    /// # Errors
    /// [`Error::Shape`] if the lengths disagree or a row exceeds `width`.
    pub fn new(
        prompt_lengths: &[usize],
        owners: &[Vec<Owner>],
        width: usize,
        device: &Device,
    ) -> Result<Self> {
        let lengths: Vec<usize> = prompt_lengths.iter().zip(owners).map(|(p, o)| p + o.len()).collect();
        Ok(Self {
            owner: Ownership::from_owners(prompt_lengths, owners, width, device)?,
            attention: AttentionMask::from_lengths(&lengths, width, device),
            response: ResponseMask::from_prompt_lengths(prompt_lengths, width, device),
        })
    }

    /// The one place the loss weight is defined: attention AND response AND senior.
    pub fn loss_mask(&self) -> LossMask {
        LossMask(
            self.attention
                .tensor()
                .clone()
                .bool_and(self.response.tensor().clone())
                .bool_and(self.owner.tensor().clone()),
        )
    }
}
