//! A prefill's attention on flex (f32, outside autodiff, x86-64), in causal blocks.
//!
//! As tensor ops a prefill's attention computes every query against every key, masks
//! the half a causal query cannot see, then a softmax and the product with the values:
//! four passes over `t²` scores per head. Here each block of [`ROWS`] queries of one
//! query head multiplies only the keys its last query can see ([`many_rows::multiply`]),
//! takes the softmax of each query's visible scores and multiplies those with the values,
//! one Rayon task per query head. Each output sums in one order whatever the batch.
//!
//! [`many_rows::multiply`]: crate::kernels::many_rows::multiply

#[cfg(all(feature = "flex", target_arch = "x86_64"))]
pub(crate) use cpu::attend;

/// Always `None` where the kernels are not built: the attention runs as tensor ops.
#[cfg(not(all(feature = "flex", target_arch = "x86_64")))]
pub(crate) fn attend(
    _: &burn::prelude::Tensor<4>,
    _: &burn::prelude::Tensor<4>,
    _: &burn::prelude::Tensor<4>,
    _: &crate::cache::CausalMask,
) -> Option<burn::prelude::Tensor<4>> {
    None
}

/// Queries per block: the scores of a block take `ROWS × keys` floats.
#[cfg(all(feature = "flex", target_arch = "x86_64"))]
const ROWS: usize = 32;

#[cfg(all(feature = "flex", target_arch = "x86_64"))]
mod cpu {
    use burn::prelude::*;

    use super::ROWS;
    use crate::cache::CausalMask;
    use crate::kernels::decode::{Block, by_blocks};
    use crate::kernels::fused::softmax_prefixes;
    use crate::kernels::many_rows::{Matrix, multiply};

    /// [`crate::kernels::attend_prefill`] for untracked f32 tensors on flex; `None` otherwise. One block per query head: `t` queries over its key/value head.
    pub(crate) fn attend(
        q: &Tensor<4>,
        keys: &Tensor<4>,
        values: &Tensor<4>,
        mask: &CausalMask,
    ) -> Option<Tensor<4>> {
        let (rows, t) = (q.dims()[2], mask.queries());
        if t == 0 || rows % t != 0 {
            return None;
        }
        by_blocks(q, keys, values, mask, rows / t, head)
    }

    /// One query head's `t` queries over its keys and values, [`ROWS`] at a time.
    fn head(Block { q, keys, values, out, hd, seen }: Block<'_>) -> Option<()> {
        let (mut scores, mut probabilities) = (Vec::new(), Vec::new());
        for (block, (q, out)) in q.chunks(ROWS * hd).zip(out.chunks_mut(ROWS * hd)).enumerate() {
            let (first, m) = (block * ROWS, q.len() / hd);
            let n = seen(first + m - 1);
            scores.resize(m * n, 0.0);
            probabilities.resize(m * n, 0.0);
            let queries = Matrix { data: q, rows: m, cols: hd, row_stride: hd, col_stride: 1 };
            // The keys `[n, hd]` read as their transpose `[hd, n]`.
            let keys_t = Matrix { data: keys, rows: hd, cols: n, row_stride: 1, col_stride: hd };
            multiply(&mut scores, queries, keys_t, 1)?;
            softmax_prefixes(&scores, &mut probabilities, n, &|row| seen(first + row));
            let p = Matrix { data: &probabilities, rows: m, cols: n, row_stride: n, col_stride: 1 };
            let values = Matrix { data: values, rows: n, cols: hd, row_stride: hd, col_stride: 1 };
            multiply(out, p, values, 1)?;
        }
        Some(())
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

        /// Against the tensor ops it replaces: rows with and without cached tokens, a
        /// length that is not a multiple of the block, and keys read as a view of a wider
        /// cache; then a row alone gives the same bits.
        #[test]
        fn equals_the_masked_softmax_of_tensor_ops() {
            let device = Device::flex();
            let (kvh, g, hd, cap) = (2, 3, 20, 128);
            for (past, t) in [(vec![0, 0], 70), (vec![5, 0, 17], 33), (vec![0], ROWS)] {
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
                let last = b - 1;
                let one = |x: &Tensor<4>| x.clone().slice([last..b]);
                let mask = CausalMask::new(&past[last..], g, t, s);
                let alone = values(attend(&one(&q), &one(&k), &one(&v), &mask).unwrap());
                let n = kvh * g * t * hd;
                assert!(alone.iter().zip(&got[last * n..]).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
    }
}
