//! Token ids, owners and right-padded token batches.

use burn::prelude::*;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A vocabulary id.
pub type TokenId = u32;

/// Who wrote a token: the trainable senior or the frozen junior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Owner {
    /// The policy being trained.
    Senior,
    /// The frozen partner.
    Junior,
}

impl Owner {
    /// The other model.
    #[must_use]
    pub fn other(self) -> Owner {
        match self {
            Owner::Senior => Owner::Junior,
            Owner::Junior => Owner::Senior,
        }
    }
}

/// Token sequences of different lengths, right-padded to a common width.
///
/// Padding is recorded by lengths, never by comparing ids with `pad_id`, so a pad id
/// equal to an EOS id cannot hide a real EOS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBatch {
    rows: Vec<Vec<TokenId>>,
    pad_id: TokenId,
}

impl TokenBatch {
    /// A batch of `rows`; `pad_id` fills the slots past each row's end.
    ///
    /// # Errors
    /// [`Error::Shape`] if there are no rows or a row is empty.
    pub fn new(rows: Vec<Vec<TokenId>>, pad_id: TokenId) -> Result<Self> {
        if rows.is_empty() || rows.iter().any(Vec::is_empty) {
            return Err(Error::Shape("a token batch needs at least one non-empty row".into()));
        }
        Ok(Self { rows, pad_id })
    }

    /// The rows, unpadded.
    pub fn rows(&self) -> &[Vec<TokenId>] {
        &self.rows
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Always false: a batch has at least one row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Length of the longest row.
    pub fn width(&self) -> usize {
        self.rows.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// Each row's length.
    pub fn lengths(&self) -> Vec<usize> {
        self.rows.iter().map(Vec::len).collect()
    }

    /// The padded ids as a `[batch, width]` tensor.
    pub fn ids(&self, device: &Device) -> Tensor<2, Int> {
        let width = self.width();
        let mut flat = Vec::with_capacity(self.rows.len() * width);
        for row in &self.rows {
            flat.extend(row.iter().map(|&t| t as i64));
            flat.extend(std::iter::repeat_n(self.pad_id as i64, width - row.len()));
        }
        Tensor::from_data(TensorData::new(flat, [self.rows.len(), width]), device)
    }
}
