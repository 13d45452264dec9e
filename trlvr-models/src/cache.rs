//! The batched key/value cache of a session and the attention mask that goes with it.
//!
//! Every layer keeps one preallocated buffer of keys and one of values for all rows,
//! `[rows, kv_heads, capacity, head_dim]`. Row `r` holds `len(r)` valid slots (keys
//! already rotated by RoPE, so a slot never moves); rows may hold different numbers of
//! tokens and the mask hides each row's slots past its own length. New keys and values
//! are written in place at each row's length; the capacity doubles when a row runs out,
//! so a decode step copies nothing but the new slots.

use std::ops::Range;

use burn::prelude::*;
use burn::tensor::{DType, IndexingUpdateOp};

/// The smallest capacity a cache allocates, in slots.
const MIN_CAPACITY: usize = 64;

/// The keys and values of one row for every layer, as copied out by [`KvCache::row`].
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
}

/// The KV cache of a batch: per layer, keys and values of every row in one buffer.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    /// Per layer `(keys, values)`, each `[rows, kv_heads, capacity, head_dim]`; empty
    /// until the first forward pass.
    layers: Vec<(Tensor<4>, Tensor<4>)>,
    /// Valid slots per row.
    lens: Vec<usize>,
    /// Slots allocated per row.
    capacity: usize,
}

impl KvCache {
    /// An empty cache for `rows` rows.
    pub fn new(rows: usize) -> Self {
        Self { layers: Vec::new(), lens: vec![0; rows], capacity: 0 }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.lens.len()
    }

    /// Each row's length.
    pub fn lengths(&self) -> Vec<usize> {
        self.lens.clone()
    }

    /// Slots allocated per row; grows by doubling.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A copy of row `row`'s keys and values.
    ///
    /// # Panics
    /// If `row` is out of range.
    pub fn row(&self, row: usize) -> RowCache {
        let len = self.lens[row];
        if len == 0 {
            return RowCache::default();
        }
        let take = |x: &Tensor<4>| {
            let [_, kvh, _, hd] = x.dims();
            x.clone().slice([row..row + 1, 0..kvh, 0..len, 0..hd]).squeeze_dim::<3>(0)
        };
        RowCache { layers: self.layers.iter().map(|(k, v)| (take(k), take(v))).collect(), len }
    }

    /// Makes every row hold at least `slots` slots, doubling the capacity as needed.
    pub(crate) fn reserve(
        &mut self,
        slots: usize,
        layers: usize,
        kv_heads: usize,
        head_dim: usize,
        dtype: DType,
        device: &Device,
    ) {
        if slots <= self.capacity && self.layers.len() == layers {
            return;
        }
        let capacity = slots.max(2 * self.capacity).max(MIN_CAPACITY);
        let shape = [self.rows(), kv_heads, capacity, head_dim];
        let old = std::mem::take(&mut self.layers);
        let used = self.lens.iter().copied().max().unwrap_or(0);
        let grow = |x: Option<Tensor<4>>| {
            let fresh = Tensor::zeros(shape, (device, dtype));
            match x {
                Some(x) if used > 0 => {
                    let keep = x.slice([0..shape[0], 0..kv_heads, 0..used, 0..head_dim]);
                    fresh.slice_assign([0..shape[0], 0..kv_heads, 0..used, 0..head_dim], keep)
                }
                _ => fresh,
            }
        };
        let mut old = old.into_iter();
        self.layers = (0..layers)
            .map(|_| {
                let (k, v) = old.next().unzip();
                (grow(k), grow(v))
            })
            .collect();
        self.capacity = capacity;
    }

    /// Writes layer `layer`'s new keys and values at each row's length and returns every
    /// row's first `width` slots (views into the buffers, no copy).
    ///
    /// All `t` new slots of a row are written, padding included: slots past a row's
    /// real tokens are masked now and overwritten by its next tokens. Call
    /// [`Self::reserve`] for `max(len) + t` slots first.
    ///
    /// # Shapes
    /// - `keys`, `values`: `[rows, kv_heads, t, head_dim]`
    /// - returns `([rows, kv_heads, width, head_dim], same)`
    pub(crate) fn write_and_read(
        &mut self,
        layer: usize,
        keys: Tensor<4>,
        values: Tensor<4>,
        width: usize,
    ) -> (Tensor<4>, Tensor<4>) {
        let [b, kvh, t, hd] = keys.dims();
        debug_assert_eq!(b, self.rows());
        let (k_buf, v_buf) = &mut self.layers[layer];
        let first = self.lens[0];
        if self.lens.iter().all(|&p| p == first) {
            // One write for the whole batch.
            let at = [0..b, 0..kvh, first..first + t, 0..hd];
            write(k_buf, at.clone(), keys);
            write(v_buf, at, values);
        } else {
            // Rows of different lengths: one indexed write over the flattened slots.
            let cap = self.capacity;
            let index: Vec<i64> = (0..b)
                .flat_map(|r| {
                    let p = self.lens[r];
                    (0..kvh).flat_map(move |h| (0..t).map(move |i| ((r * kvh + h) * cap + p + i) as i64))
                })
                .collect();
            let index = Tensor::<1, Int>::from_data(TensorData::new(index, [b * kvh * t]), &keys.device());
            write_slots(k_buf, index.clone(), keys);
            write_slots(v_buf, index, values);
        }
        let view = [0..b, 0..kvh, 0..width, 0..hd];
        (k_buf.clone().slice(view.clone()), v_buf.clone().slice(view))
    }

    /// Records that row `r` read `lengths[r]` more tokens.
    pub(crate) fn advance(&mut self, lengths: &[usize]) {
        for (len, n) in self.lens.iter_mut().zip(lengths) {
            *len += n;
        }
    }

    /// A cache of rows `rows` of this one, in that order, with room for at least
    /// `slots` slots per row.
    pub(crate) fn gather(&self, rows: &[usize], slots: usize) -> Self {
        let lens: Vec<usize> = rows.iter().map(|&r| self.lens[r]).collect();
        if self.layers.is_empty() {
            return Self { layers: Vec::new(), lens, capacity: 0 };
        }
        let capacity = slots.min(self.capacity).max(lens.iter().copied().max().unwrap_or(0));
        let take = |x: &Tensor<4>| {
            let [_, kvh, _, hd] = x.dims();
            let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
            let index = Tensor::<1, Int>::from_data(TensorData::new(index, [rows.len()]), &x.device());
            let x = x.clone().slice([0..self.rows(), 0..kvh, 0..capacity, 0..hd]);
            x.select(0, index)
        };
        let layers = self.layers.iter().map(|(k, v)| (take(k), take(v))).collect();
        Self { layers, lens, capacity }
    }

    /// A cache whose row `i` is a copy of this one's row `rows[i]`.
    pub(crate) fn repeat_rows(&self, rows: &[usize]) -> Self {
        let slots = self.lens.iter().copied().max().unwrap_or(0);
        self.gather(rows, slots.max(self.capacity))
    }
}

/// `buffer[at] = value`, in place when `buffer` is the only handle to its storage.
fn write(buffer: &mut Tensor<4>, at: [Range<usize>; 4], value: Tensor<4>) {
    let device = buffer.device();
    let old = std::mem::replace(buffer, Tensor::empty([0, 0, 0, 0], &device));
    *buffer = old.slice_assign(at, value);
}

/// `buffer[.., slot, ..] = value` for the flattened `(row, head, slot)` slots in `index`,
/// in one operation.
///
/// # Shapes
/// - `buffer`: `[rows, kv_heads, capacity, head_dim]`; `value`: `[rows, kv_heads, t, head_dim]`
/// - `index`: `[rows * kv_heads * t]`, unique
fn write_slots(buffer: &mut Tensor<4>, index: Tensor<1, Int>, value: Tensor<4>) {
    let [b, kvh, cap, hd] = buffer.dims();
    let [_, _, t, _] = value.dims();
    let device = buffer.device();
    let old = std::mem::replace(buffer, Tensor::empty([0, 0, 0, 0], &device));
    let flat = old.reshape([b * kvh * cap, hd]);
    let value = value.reshape([b * kvh * t, hd]);
    *buffer = flat.select_assign(0, index, value, IndexingUpdateOp::Assign).reshape([b, kvh, cap, hd]);
}

/// Which key slots each query must not see, `true` = hidden.
///
/// Queries are arranged as the attention lays them out: `group` query heads share a
/// key/value head, and query `g * new + i` is new token `i` of head `g` in the group.
/// Row `r`'s new token `i` sits at position `past[r] + i` and sees slots up to and
/// including its own (causal); everything past it (later tokens, padding, stale slots)
/// is hidden. Slot 0 is always visible, so no softmax row is empty.
///
/// # Shapes
/// - returns `[batch, 1, group * new, width]`
pub fn attention_mask(
    past: &[usize],
    group: usize,
    new: usize,
    width: usize,
    device: &Device,
) -> Tensor<4, Bool> {
    let mut hidden = Vec::with_capacity(past.len() * group * new * width);
    for &p in past {
        for _ in 0..group {
            for i in 0..new {
                hidden.extend((0..width).map(|j| j > p + i));
            }
        }
    }
    Tensor::from_data(TensorData::new(hidden, [past.len(), 1, group * new, width]), device)
}

/// The causal mask of one forward pass, built a block of queries at a time so that no
/// `[new, width]` mask exists for a long prefill.
///
/// Row `r` has `past[r]` cached tokens; its new query `i` sees keys `0..=past[r] + i`.
#[derive(Debug, Clone)]
pub struct CausalMask {
    past: Vec<usize>,
    group: usize,
    new: usize,
    width: usize,
    /// The mask of all queries over all visible keys, built once when they fit one block
    /// (decode steps), so the layers share it.
    whole: Option<Tensor<4, Bool>>,
}

impl CausalMask {
    /// The mask for `new` queries per row over `width` key slots, with the query heads
    /// of each key/value head folded `group` at a time into the query rows.
    pub fn new(past: &[usize], group: usize, new: usize, width: usize) -> Self {
        Self { past: past.to_vec(), group, new, width, whole: None }
    }

    /// Builds the whole mask now if the queries fit one block of `block`, so every layer
    /// reuses it.
    #[must_use]
    pub fn with_whole(mut self, block: usize, device: &Device) -> Self {
        if self.new <= block {
            let rows = 0..self.new;
            let keys = self.visible_keys(&rows);
            self.whole = Some(self.block(rows, keys, device));
        }
        self
    }

    /// The same mask without the prebuilt whole one (a tensor on the caller's device),
    /// for work on another device or after the forward pass.
    pub fn host_only(&self) -> Self {
        Self { whole: None, ..self.clone() }
    }

    /// New queries per row.
    pub fn queries(&self) -> usize {
        self.new
    }

    /// Key slots query `i` of row `row` sees: its cached tokens and the new ones up to
    /// itself.
    pub fn visible_to(&self, row: usize, i: usize) -> usize {
        self.past[row] + i + 1
    }

    /// Key slots.
    pub fn width(&self) -> usize {
        self.width
    }

    /// How many key slots the queries `rows` of any row can see: keys past that are
    /// hidden from all of them.
    pub fn visible_keys(&self, rows: &Range<usize>) -> usize {
        let last = self.past.iter().max().copied().unwrap_or(0) + rows.end;
        last.min(self.width)
    }

    /// The mask of queries `rows` over the first `keys` slots, `true` = hidden.
    ///
    /// # Shapes
    /// - returns `[batch, 1, group * rows.len(), keys]`, group-major like [`attention_mask`]
    pub fn block(&self, rows: Range<usize>, keys: usize, device: &Device) -> Tensor<4, Bool> {
        if let Some(whole) = &self.whole
            && rows == (0..self.new)
            && keys == whole.dims()[3]
        {
            return whole.clone();
        }
        let n = rows.len();
        let mut hidden = Vec::with_capacity(self.past.len() * self.group * n * keys);
        for &p in &self.past {
            for _ in 0..self.group {
                for i in rows.clone() {
                    hidden.extend((0..keys).map(|j| j > p + i));
                }
            }
        }
        Tensor::from_data(TensorData::new(hidden, [self.past.len(), 1, self.group * n, keys]), device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_hides_the_future_of_each_row() {
        let device = Device::default();
        // Row 0 has 1 cached token, row 1 has 2; two new tokens each; 4 slots.
        let mask = attention_mask(&[1, 2], 1, 2, 4, &device);
        let got: Vec<bool> = mask.into_data().try_to_vec().unwrap();
        #[rustfmt::skip]
        let want = vec![
            false, false, true, true,
            false, false, false, true,
            false, false, false, true,
            false, false, false, false,
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn mask_blocks_tile_the_whole_mask() {
        let device = Device::default();
        let (past, group, new, width) = ([1, 3], 2, 5, 8);
        let full: Vec<bool> =
            attention_mask(&past, group, new, width, &device).into_data().try_to_vec().unwrap();
        let plan = CausalMask::new(&past, group, new, width);
        for rows in [0..2, 2..5, 0..5] {
            let keys = plan.visible_keys(&rows);
            let got: Vec<bool> = plan.block(rows.clone(), keys, &device).into_data().try_to_vec().unwrap();
            let mut want = Vec::new();
            for r in 0..past.len() {
                for g in 0..group {
                    for i in rows.clone() {
                        let at = ((r * group + g) * new + i) * width;
                        want.extend_from_slice(&full[at..at + keys]);
                        // Every key past `keys` is hidden from these queries.
                        assert!(full[at + keys..at + width].iter().all(|&h| h));
                    }
                }
            }
            assert_eq!(got, want, "{rows:?}");
        }
    }

    #[test]
    fn writes_land_at_each_row_length_and_capacity_doubles() {
        let device = Device::default();
        let mut cache = KvCache::new(2);
        let ones = |t| Tensor::<4>::ones([2, 1, t, 2], &device);
        cache.reserve(3, 1, 1, 2, DType::F32, &device);
        assert_eq!(cache.capacity(), MIN_CAPACITY);
        cache.write_and_read(0, ones(3), ones(3) * 2.0, 3);
        cache.advance(&[3, 1]);
        // Row 1 writes at slot 1, row 0 at slot 3.
        cache.reserve(MIN_CAPACITY + 1, 1, 1, 2, DType::F32, &device);
        assert_eq!(cache.capacity(), 2 * MIN_CAPACITY);
        let (k, _) = cache.write_and_read(0, ones(1) * 5.0, ones(1), 4);
        let k: Vec<f32> = k.slice([0..2, 0..1, 0..4, 0..1]).into_data().try_to_vec().unwrap();
        assert_eq!(k, vec![1.0, 1.0, 1.0, 5.0, 1.0, 5.0, 1.0, 0.0]);
        cache.advance(&[1, 1]);
        assert_eq!(cache.lengths(), vec![4, 2]);
        assert_eq!(cache.row(1).len(), 2);
    }
}
