//! A decode step's attention on the flex CPU backend, one pass per query row.
//!
//! A decode step has a few query rows per key/value head over a cache of a few hundred
//! slots: as tensor ops that is a batched product of `b × kv_heads` tiny matrices, a mask,
//! a softmax and a second product, each a pass over memory with its own overhead (9 ms of
//! a SmolLM2 step at 8 rows and 160 cached tokens). Here each query row reads its visible
//! keys and values once, one Rayon task per query row. Each output sums in one order
//! whatever the batch, so a row does not depend on its neighbours.

#[cfg(feature = "flex")]
pub(crate) use cpu::attend;
/// Shared with the prefill kernel (`attention/prefill.rs`, x86-64 only).
#[cfg(all(feature = "flex", target_arch = "x86_64"))]
pub(crate) use cpu::{Block, by_blocks};
#[cfg(not(feature = "flex"))]
pub(crate) use none::attend;

#[cfg(feature = "flex")]
mod cpu {
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::prelude::*;
    use burn::tensor::TensorData;
    use pulp::{Arch, Simd, WithSimd};
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    use crate::cache::CausalMask;
    use crate::kernels::few_rows::flex_f32;

    /// [`crate::kernels::attend_decode`] for untracked f32 tensors on flex; `None` otherwise.
    pub(crate) fn attend(
        q: &Tensor<4>,
        keys: &Tensor<4>,
        values: &Tensor<4>,
        mask: &CausalMask,
    ) -> Option<Tensor<4>> {
        // One Rayon task per query row: a batch-1 step of SmolLM2 has 3 key/value heads of 3
        // query heads, and 3 tasks left a core idle (its attention 2.6 -> 1.1 ms a step).
        by_blocks(q, keys, values, mask, q.dims()[2], |block| {
            Arch::new().dispatch(block);
            Some(())
        })
    }

    /// Cuts `q`'s rows of each row and key/value head into `parts` blocks of queries
    /// and runs `attend` on each, one Rayon task per block, into the output (shapes as
    /// [`attend`]); `None` where `attend` or the inputs fail.
    pub(crate) fn by_blocks(
        q: &Tensor<4>,
        keys: &Tensor<4>,
        values: &Tensor<4>,
        mask: &CausalMask,
        parts: usize,
        attend: impl Fn(Block<'_>) -> Option<()> + Sync,
    ) -> Option<Tensor<4>> {
        let [b, kvh, rows, hd] = q.dims();
        let (s, t) = (keys.dims()[2], mask.queries());
        if t == 0 || parts == 0 || rows % parts != 0 {
            return None;
        }
        let (q, k, v) = (flex_f32(q)?.to_contiguous(), rows_of(flex_f32(keys)?), rows_of(flex_f32(values)?));
        let (q, ks, vs) = (q.as_slice::<f32>()?, k.storage::<f32>(), v.storage::<f32>());
        let (k_at, v_at) = (Strides::of(&k), Strides::of(&v));
        let n = rows / parts;
        let mut out = vec![0.0f32; b * kvh * rows * hd];
        let failed = AtomicBool::new(false);
        out.par_chunks_mut(n * hd).enumerate().for_each(|(i, out)| {
            let (r, h, first) = (i / (kvh * parts), (i / parts) % kvh, (i % parts) * n);
            let q = &q[i * n * hd..(i + 1) * n * hd];
            let keys = &ks[k_at.start(r, h)..k_at.start(r, h) + s * hd];
            let values = &vs[v_at.start(r, h)..v_at.start(r, h) + s * hd];
            let seen = |query: usize| mask.visible_to(r, (first + query) % t).min(s);
            if attend(Block { q, keys, values, out, hd, seen: &seen }).is_none() {
                failed.store(true, Ordering::Relaxed);
            }
        });
        if failed.into_inner() {
            return None;
        }
        Some(Tensor::from_primitive::<Flex>(FlexTensor::from_data(TensorData::new(out, [b, kvh, rows, hd]))))
    }

    /// `t` with each `[s, hd]` matrix stored row after row (a cache's view already is).
    fn rows_of(t: FlexTensor) -> FlexTensor {
        let [_, _, _, hd] = t.layout().shape()[..] else { return t.to_contiguous() };
        let strides = t.layout().strides();
        if strides[3] == 1 && strides[2] == hd as isize && strides[0] >= 0 && strides[1] >= 0 {
            t
        } else {
            t.to_contiguous()
        }
    }

    /// Where the `[s, hd]` matrix of row `r` and key/value head `h` starts in storage.
    struct Strides {
        offset: usize,
        row: usize,
        head: usize,
    }

    impl Strides {
        fn of(t: &FlexTensor) -> Self {
            let layout = t.layout();
            let strides = layout.strides();
            Self { offset: layout.start_offset(), row: strides[0] as usize, head: strides[1] as usize }
        }

        fn start(&self, r: usize, h: usize) -> usize {
            self.offset + r * self.row + h * self.head
        }
    }

    /// A block of queries (`[n, hd]`) of one row and key/value head, that head's keys and
    /// values (`[s, hd]`), the block's output (`[n, hd]`, zeros) and how many keys each of
    /// its queries sees.
    pub(crate) struct Block<'a> {
        pub q: &'a [f32],
        pub keys: &'a [f32],
        pub values: &'a [f32],
        pub out: &'a mut [f32],
        pub hd: usize,
        pub seen: &'a dyn Fn(usize) -> usize,
    }

    impl WithSimd for Block<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) {
            let Block { q, keys, values, out, hd, seen } = self;
            let mut scores = Vec::new();
            for (query, (q, out)) in q.chunks_exact(hd).zip(out.chunks_exact_mut(hd)).enumerate() {
                let n = seen(query);
                scores.clear();
                scores.extend(keys.chunks_exact(hd).take(n).map(|k| dot(q, k)));
                let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0f32;
                for x in &mut scores {
                    *x = (*x - max).exp();
                    sum += *x;
                }
                for (p, v) in scores.iter().zip(values.chunks_exact(hd)) {
                    let p = p / sum;
                    for (o, v) in out.iter_mut().zip(v) {
                        *o += p * v;
                    }
                }
            }
        }
    }

    /// A dot product over eight interleaved partial sums (vectorised; one fixed order).
    #[inline(always)]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let mut acc = [0.0f32; 8];
        let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
        let tail: f32 = a8.remainder().iter().zip(b8.remainder()).map(|(x, y)| x * y).sum();
        for (x, y) in a8.zip(b8) {
            for l in 0..8 {
                acc[l] += x[l] * y[l];
            }
        }
        acc.iter().sum::<f32>() + tail
    }

    #[cfg(test)]
    mod tests {
        use burn::tensor::Distribution;
        use burn::tensor::activation::softmax;

        use super::*;
        use crate::cache::attention_mask;

        fn values(t: Tensor<4>) -> Vec<f32> {
            t.into_data().try_to_vec::<f32>().unwrap()
        }

        /// Against the tensor ops it replaces, for rows of different lengths, one and
        /// several new tokens, and keys read as a view of a wider cache.
        #[test]
        fn equals_the_masked_softmax_of_tensor_ops() {
            let device = Device::flex();
            let (kvh, g, hd, cap) = (2, 3, 20, 16);
            for (past, t) in [(vec![3, 9, 0], 1), (vec![5, 2], 2), (vec![0], 4)] {
                let b = past.len();
                let s = past.iter().max().unwrap() + t;
                let q = Tensor::<4>::random([b, kvh, g * t, hd], Distribution::Default, &device);
                let cache = |_| Tensor::<4>::random([b, kvh, cap, hd], Distribution::Default, &device);
                let (k, v) = (
                    cache(0).slice([0..b, 0..kvh, 0..s, 0..hd]),
                    cache(1).slice([0..b, 0..kvh, 0..s, 0..hd]),
                );
                let mask = CausalMask::new(&past, g, t, s);
                let hidden = attention_mask(&past, g, t, s, &device).expand([b, kvh, g * t, s]);
                let scores = q.clone().matmul(k.clone().swap_dims(2, 3)).mask_fill(hidden, f32::NEG_INFINITY);
                let want = values(softmax(scores, 3).matmul(v.clone()));
                let got = values(attend(&q, &k, &v, &mask).expect("f32 on flex"));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "past {past:?}, t {t}, at {i}: {g} vs {w}"
                    );
                }
            }
        }

        #[test]
        fn a_rows_output_does_not_depend_on_its_batch() {
            let device = Device::flex();
            let (b, kvh, g, hd, s) = (4, 2, 2, 24, 11);
            let q = Tensor::<4>::random([b, kvh, g, hd], Distribution::Default, &device);
            let k = Tensor::<4>::random([b, kvh, s, hd], Distribution::Default, &device);
            let v = Tensor::<4>::random([b, kvh, s, hd], Distribution::Default, &device);
            let past = [10, 4, 7, 0];
            let all = values(attend(&q, &k, &v, &CausalMask::new(&past, g, 1, s)).unwrap());
            let one = |t: &Tensor<4>, r: usize| t.clone().slice([r..r + 1]);
            for r in 0..b {
                let mask = CausalMask::new(&past[r..=r], g, 1, s);
                let alone = values(attend(&one(&q, r), &one(&k, r), &one(&v, r), &mask).unwrap());
                let n = kvh * g * hd;
                assert_eq!(alone, all[r * n..(r + 1) * n], "row {r}");
            }
        }
    }
}

/// Without the flex backend, the attention runs as tensor ops.
#[cfg(not(feature = "flex"))]
mod none {
    use burn::prelude::*;

    use crate::cache::CausalMask;

    pub(crate) fn attend(_: &Tensor<4>, _: &Tensor<4>, _: &Tensor<4>, _: &CausalMask) -> Option<Tensor<4>> {
        None
    }
}
