//! The real tokens of a right-padded batch, gathered so the token-wise layers skip the
//! padding.

use burn::prelude::*;

/// Where the real tokens of a right-padded `[batch, seq]` batch sit, so that the
/// token-wise layers (projections, MLP, norms) run on them alone when rows have
/// different lengths; only the attention needs the padded layout.
#[derive(Debug, Clone)]
pub struct Packing {
    pub(crate) batch: usize,
    seq: usize,
    /// Padded position `r * seq + i` of each real token, in row order: `[tokens]`.
    pack: Tensor<1, Int>,
    /// For each padded position, the packed index of its token (a padded slot repeats
    /// its row's last real token): `[batch * seq]`.
    unpack: Tensor<1, Int>,
}

impl Packing {
    /// The packing of rows of `lengths` real tokens, `None` when no row is padded.
    pub fn new(lengths: &[usize], seq: usize, device: &Device) -> Option<Self> {
        let tokens: usize = lengths.iter().sum();
        if tokens == lengths.len() * seq {
            return None;
        }
        let mut pack = Vec::with_capacity(tokens);
        let mut unpack = Vec::with_capacity(lengths.len() * seq);
        for (r, &n) in lengths.iter().enumerate() {
            let first = pack.len();
            pack.extend((0..n).map(|i| (r * seq + i) as i64));
            // A row without tokens points at token 0: its outputs are never read.
            let last = if n == 0 { 0 } else { first + n - 1 };
            unpack.extend((0..seq).map(|i| if n == 0 { 0 } else { (first + i).min(last) } as i64));
        }
        let index = |v: Vec<i64>| {
            let n = v.len();
            Tensor::<1, Int>::from_data(TensorData::new(v, [n]), device)
        };
        Some(Self { batch: lengths.len(), seq, pack: index(pack), unpack: index(unpack) })
    }

    /// # Shapes
    /// - `x`: `[batch, seq, d]` -> `[1, tokens, d]`
    pub fn pack(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, t, d] = x.dims();
        x.reshape([b * t, d]).select(0, self.pack.clone()).unsqueeze_dim(0)
    }

    /// # Shapes
    /// - `x`: `[1, tokens, d]` -> `[batch, seq, d]`
    pub fn unpack(&self, x: Tensor<3>) -> Tensor<3> {
        let [_, n, d] = x.dims();
        x.reshape([n, d]).select(0, self.unpack.clone()).reshape([self.batch, self.seq, d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_keeps_real_tokens_and_repeats_the_last_into_padding() {
        let device = Device::default();
        assert!(Packing::new(&[2, 2], 2, &device).is_none());
        let packing = Packing::new(&[1, 3], 3, &device).unwrap();
        let x =
            Tensor::<3>::from_data(TensorData::new((0..6).map(|v| v as f32).collect(), [2, 3, 1]), &device);
        let packed = packing.pack(x);
        let got: Vec<f32> = packed.clone().into_data().try_to_vec().unwrap();
        assert_eq!(got, vec![0.0, 3.0, 4.0, 5.0]);
        let got: Vec<f32> = packing.unpack(packed).into_data().try_to_vec().unwrap();
        assert_eq!(got, vec![0.0, 0.0, 0.0, 3.0, 4.0, 5.0]);
    }
}
