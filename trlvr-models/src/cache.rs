//! Per-row key/value caches and the attention mask that goes with them.
//!
//! Each row keeps its own keys and values (already rotated by RoPE), so rows of one
//! session can hold different numbers of tokens and be extended independently. A forward
//! pass over a set of rows pads their caches to the longest one and masks the padding.

use burn::prelude::*;

/// The keys and values of one row, for every layer.
#[derive(Debug, Clone, Default)]
pub struct RowCache {
    /// Per layer `(keys, values)`, each `[kv_heads, len, head_dim]`; empty while `len == 0`.
    layers: Vec<(Tensor<3>, Tensor<3>)>,
    len: usize,
}

impl RowCache {
    /// Number of tokens the row has read.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the row has read anything.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Layer `layer`'s `(keys, values)`, `[kv_heads, len, head_dim]`; `None` when empty.
    pub fn layer(&self, layer: usize) -> Option<&(Tensor<3>, Tensor<3>)> {
        self.layers.get(layer)
    }

    /// Appends `n` new keys and values to every layer.
    ///
    /// # Shapes
    /// - `new[layer]`: `([kv_heads, n, head_dim], [kv_heads, n, head_dim])`
    pub(crate) fn append(&mut self, new: Vec<(Tensor<3>, Tensor<3>)>, n: usize) {
        if self.layers.is_empty() {
            self.layers = new;
        } else {
            for ((k, v), (nk, nv)) in self.layers.iter_mut().zip(new) {
                *k = Tensor::cat(vec![k.clone(), nk], 1);
                *v = Tensor::cat(vec![v.clone(), nv], 1);
            }
        }
        self.len += n;
    }
}

/// The KV cache of a batch: one [`RowCache`] per batch row.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// The rows, in batch order.
    pub rows: Vec<RowCache>,
}

impl KvCache {
    /// An empty cache for `rows` rows.
    pub fn new(rows: usize) -> Self {
        Self { rows: vec![RowCache::default(); rows] }
    }

    /// Each row's length.
    pub fn lengths(&self) -> Vec<usize> {
        self.rows.iter().map(RowCache::len).collect()
    }

    /// Layer `layer`'s past keys and values for all rows, right-padded with zeros to
    /// `width` (the longest row); `None` when every row is empty.
    ///
    /// # Shapes
    /// - returns `([batch, kv_heads, width, head_dim], [batch, kv_heads, width, head_dim])`
    pub(crate) fn padded(
        &self,
        layer: usize,
        width: usize,
        kv_heads: usize,
        head_dim: usize,
        device: &Device,
    ) -> Option<(Tensor<4>, Tensor<4>)> {
        if width == 0 {
            return None;
        }
        let pad = |t: Option<&Tensor<3>>, len: usize| -> Tensor<3> {
            match t {
                Some(t) if len == width => t.clone(),
                Some(t) => {
                    Tensor::cat(vec![t.clone(), Tensor::zeros([kv_heads, width - len, head_dim], device)], 1)
                }
                None => Tensor::zeros([kv_heads, width, head_dim], device),
            }
        };
        let (ks, vs) = self
            .rows
            .iter()
            .map(|row| {
                let kv = row.layer(layer);
                (pad(kv.map(|p| &p.0), row.len), pad(kv.map(|p| &p.1), row.len))
            })
            .unzip();
        Some((Tensor::stack(ks, 0), Tensor::stack(vs, 0)))
    }
}

/// Which keys each query must not see, `true` = hidden.
///
/// Keys are the `past_width` cached slots followed by the `new_width` new tokens. Row
/// `r` sees its own `past[r]` cached keys and the new keys up to and including the
/// query's own slot (causal). Padded keys (past the row's cache, or new slots past the
/// row's length) are hidden from every real query; padded queries see at least the
/// first new key, so no softmax row is empty.
///
/// # Shapes
/// - returns `[batch, 1, new_width, past_width + new_width]`
pub fn attention_mask(
    past: &[usize],
    past_width: usize,
    new_width: usize,
    device: &Device,
) -> Tensor<4, Bool> {
    let keys = past_width + new_width;
    let mut hidden = Vec::with_capacity(past.len() * new_width * keys);
    for &p in past {
        for i in 0..new_width {
            for j in 0..keys {
                hidden.push(if j < past_width { j >= p } else { j - past_width > i });
            }
        }
    }
    Tensor::from_data(TensorData::new(hidden, [past.len(), 1, new_width, keys]), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_hides_padding_and_future() {
        let device = Device::default();
        // Row 0 has 1 cached token of a 2-slot past; row 1 has 2.
        let mask = attention_mask(&[1, 2], 2, 2, &device);
        let got: Vec<bool> = mask.into_data().try_to_vec().unwrap();
        #[rustfmt::skip]
        let want = vec![
            false, true, false, true,
            false, true, false, false,
            false, false, false, true,
            false, false, false, false,
        ];
        assert_eq!(got, want);
    }
}
