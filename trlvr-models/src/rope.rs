//! Rotary position embeddings in the Hugging Face layout ("rotate half").
//!
//! Burn's `RotaryEncoding` rotates adjacent pairs `(x0, x1), (x2, x3), ...`; Llama and
//! Qwen checkpoints expect the pairs `(x_i, x_{i + d/2})`, so this module computes the
//! angles itself. Positions are per row and per token, which is what right-padded
//! batches and per-row KV caches need.

use burn::prelude::*;

/// The cosines and sines for a `[batch, seq]` grid of positions.
#[derive(Debug, Clone)]
pub struct Rope {
    /// `[batch, 1, seq, head_dim]`
    cos: Tensor<4>,
    /// `[batch, 1, seq, head_dim]`
    sin: Tensor<4>,
}

impl Rope {
    /// Angles for `positions[row][i]`, every row of the same length `seq`.
    ///
    /// Frequency `k < head_dim / 2` is `theta^(-2k / head_dim)`; like transformers, the
    /// angle table is duplicated across the two halves of the head.
    pub fn new(positions: &[Vec<usize>], head_dim: usize, theta: f64, device: &Device) -> Self {
        let batch = positions.len();
        let seq = positions.first().map_or(0, Vec::len);
        let half = head_dim / 2;
        let inv_freq: Vec<f64> =
            (0..half).map(|k| 1.0 / theta.powf((2 * k) as f64 / head_dim as f64)).collect();
        // Each distinct position's angles once (a batch's rows share most positions),
        // then copied into the grid, both halves of the head.
        let mut distinct: Vec<usize> = positions.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let (mut cos_of, mut sin_of) =
            (Vec::with_capacity(distinct.len() * half), Vec::with_capacity(distinct.len() * half));
        for &p in &distinct {
            for f in &inv_freq {
                let angle = p as f64 * f;
                cos_of.push(angle.cos() as f32);
                sin_of.push(angle.sin() as f32);
            }
        }
        let mut cos = Vec::with_capacity(batch * seq * head_dim);
        let mut sin = Vec::with_capacity(batch * seq * head_dim);
        for row in positions {
            debug_assert_eq!(row.len(), seq);
            for p in row {
                let at = distinct.binary_search(p).expect("listed") * half;
                for _ in 0..2 {
                    cos.extend_from_slice(&cos_of[at..at + half]);
                    sin.extend_from_slice(&sin_of[at..at + half]);
                }
            }
        }
        let shape = [batch, 1, seq, head_dim];
        Self {
            cos: Tensor::from_data(TensorData::new(cos, shape), device),
            sin: Tensor::from_data(TensorData::new(sin, shape), device),
        }
    }

    /// The tables in `dtype`, for queries and keys computed in it.
    #[must_use]
    pub fn cast(self, dtype: burn::tensor::DType) -> Self {
        Self { cos: self.cos.cast(dtype), sin: self.sin.cast(dtype) }
    }

    /// Rotates queries or keys given sequence-first, `[batch, seq, heads, head_dim]`, and
    /// returns them heads first, `[batch, heads, seq, head_dim]`, times `scale`: what
    /// [`Self::apply`] of `x.swap_dims(1, 2)` then `* scale` gives, bit for bit. Untracked
    /// f32 on flex runs it as one pass (the tensor ops take six over memory, and a copy).
    pub fn apply_heads_first(&self, x: Tensor<4>, scale: Option<f64>) -> Tensor<4> {
        if let Some(y) = crate::kernels::rotate_heads_first(&x, &self.cos, &self.sin, scale) {
            return y;
        }
        let y = self.apply(x.swap_dims(1, 2));
        match scale {
            Some(scale) => y * scale,
            None => y,
        }
    }

    /// Rotates queries or keys: `x * cos + rotate_half(x) * sin`.
    ///
    /// # Shapes
    /// - `x`: `[batch, heads, seq, head_dim]`, returned in the same shape.
    pub fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        let [b, h, t, d] = x.dims();
        let half = d / 2;
        let x1 = x.clone().slice([0..b, 0..h, 0..t, 0..half]);
        let x2 = x.clone().slice([0..b, 0..h, 0..t, half..d]);
        let rotated = Tensor::cat(vec![x2.neg(), x1], 3); // rotate_half(x)
        x * self.cos.clone() + rotated * self.sin.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass rotation equals the tensor ops bit for bit, scaled or not, on
    /// positions that differ by row, on the calling thread and across the pool.
    #[test]
    fn heads_first_equals_the_tensor_ops() {
        let device = Device::default();
        for (b, t, h, hd) in [(3, 5, 4, 16), (2, 64, 8, 32)] {
            let x = Tensor::<4>::random([b, t, h, hd], burn::tensor::Distribution::Normal(0.0, 2.0), &device);
            let positions: Vec<Vec<usize>> = (0..b).map(|r| (7 * r..7 * r + t).collect()).collect();
            let rope = Rope::new(&positions, hd, 10_000.0, &device);
            for scale in [None, Some(1.0 / 3f64.sqrt())] {
                let ops = rope.apply(x.clone().swap_dims(1, 2));
                let ops = match scale {
                    Some(s) => ops * s,
                    None => ops,
                };
                let fused = rope.apply_heads_first(x.clone(), scale);
                assert_eq!(fused.dims(), [b, h, t, hd]);
                let bits = |y: Tensor<4>| {
                    y.into_data().try_to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                assert_eq!(bits(fused), bits(ops), "[{b}, {t}, {h}, {hd}], scale {scale:?}");
            }
        }
    }

    #[test]
    fn position_zero_is_identity_and_norms_are_kept() {
        let device = Device::default();
        let x = Tensor::<4>::random([1, 2, 3, 8], burn::tensor::Distribution::Default, &device);
        let rope = Rope::new(&[vec![0, 5, 9]], 8, 10_000.0, &device);
        let y = rope.apply(x.clone());
        let first = (y.clone().slice([0..1, 0..2, 0..1, 0..8]) - x.clone().slice([0..1, 0..2, 0..1, 0..8]))
            .abs()
            .max()
            .into_scalar::<f32>();
        assert!(first < 1e-6);
        let norm = |t: Tensor<4>| t.square().sum_dim(3);
        let diff = (norm(y) - norm(x)).abs().max().into_scalar::<f32>();
        assert!(diff < 1e-5);
    }
}
