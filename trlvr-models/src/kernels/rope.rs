//! Rotary embeddings in one pass on flex: the rotation, the move to heads-first and the
//! attention's scale, where the tensor ops take six passes over memory and a copy.

use burn::backend::Flex;
use burn::backend::flex::FlexTensor;
use burn::prelude::*;
use burn::tensor::TensorData;
use rayon::prelude::*;

use super::few_rows::flex_f32;

/// Output floats up to which the rotation runs on the calling thread.
const SMALL: usize = 1 << 14;

/// [`crate::rope::Rope::apply_heads_first`] for contiguous f32 on flex: each output element
/// is `(x · cos + rotated · sin) · scale`, the tensor ops' products and sum in their
/// order; `None` otherwise.
pub(crate) fn apply_heads_first(
    x: &Tensor<4>,
    cos: &Tensor<4>,
    sin: &Tensor<4>,
    scale: Option<f64>,
) -> Option<Tensor<4>> {
    let [b, t, h, hd] = x.dims();
    let (xf, cf, sf) = (flex_f32(x)?, flex_f32(cos)?, flex_f32(sin)?);
    let (x, cos, sin) = (xf.as_slice::<f32>()?, cf.as_slice::<f32>()?, sf.as_slice::<f32>()?);
    if cos.len() != b * t * hd || hd % 2 != 0 {
        return None;
    }
    let half = hd / 2;
    // `v · 1` is `v`, bit for bit.
    let scale = scale.map_or(1.0, |s| s as f32);
    let mut out = vec![0.0f32; b * h * t * hd];
    // One task per row and head: `[t, hd]` of the output.
    let rotate = |(task, out): (usize, &mut [f32])| {
        let (r, head) = (task / h, task % h);
        for (i, y) in out.chunks_exact_mut(hd).enumerate() {
            let at = ((r * t + i) * h + head) * hd;
            let x = &x[at..at + hd];
            let (c, s) = (&cos[(r * t + i) * hd..][..hd], &sin[(r * t + i) * hd..][..hd]);
            let (x1, x2) = x.split_at(half);
            let (y1, y2) = y.split_at_mut(half);
            for j in 0..half {
                y1[j] = (x1[j] * c[j] + -x2[j] * s[j]) * scale;
                y2[j] = (x2[j] * c[half + j] + x1[j] * s[half + j]) * scale;
            }
        }
    };
    // A decode step's few rows stay on the calling thread: handing them to the pool
    // costs more than rotating them.
    if out.len() <= SMALL {
        out.chunks_mut(t * hd).enumerate().for_each(rotate);
    } else {
        out.par_chunks_mut(t * hd).enumerate().for_each(rotate);
    }
    let y = FlexTensor::from_data(TensorData::new(out, [b, h, t, hd]));
    Some(Tensor::from_primitive::<Flex>(y))
}
