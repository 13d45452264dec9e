//! Products of a few rows with a weight on the CPU: the projections of a decode step.
//!
//! A decode step multiplies one row per live sequence by every weight, so it is bound by
//! reading the weights from memory. The gemm under Burn's flex backend packs both operands
//! and runs on one thread below 192³, which leaves most of the bandwidth unused at 1-32
//! rows. Here each output is a dot product of a row of `x` with a row of the weight held
//! as `[out, in]` ([`decode_layout`]), four weight rows per load of `x` and up to four rows
//! of `x` per load of the weight (two where x86 has 16 vector registers, which sixteen
//! sums would overflow), split across Rayon's threads by output. The four weight rows
//! come from four quarters of a task's rows: one core keeps more reads from memory in
//! flight over four streams than over one (SmolLM2's decode on a 2-core AVX-512 Xeon:
//! batch 1 43-44 tokens/s from one, 47-49 from four; batch 8 207-215, 228-238).
//!
//! Each output element is summed in the same order whatever the number of rows or
//! threads, so a sequence's logits do not depend on the rest of its batch.

/// Rows of `x` up to which [`project`] takes a product (beyond, the gemm is faster).
pub(crate) const MAX_ROWS: usize = 32;

#[cfg(feature = "flex")]
pub(crate) use cpu::{Prefetch, decode_layout, flex_bias, flex_f32, in_decode_layout, on_flex, project};
#[cfg(not(feature = "flex"))]
pub(crate) use none::{decode_layout, in_decode_layout, on_flex, project};

#[cfg(feature = "flex")]
mod cpu {
    use super::MAX_ROWS;
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::prelude::*;
    use burn::tensor::{DType, TensorData};
    use pulp::{Arch, Simd, WithSimd};
    use rayon::prelude::*;

    /// Floats of weight from which [`project`] takes a product. The weights of a small
    /// model stay in cache, where the gemm computes faster (a 128 x 384 weight at 8 rows:
    /// 14 µs, here 24); a real model's stream from memory at every decode step, even its
    /// small key and value projections (576 x 192 in SmolLM2-135M).
    const MIN_FLOATS: usize = 1 << 16;

    /// Floats of weight per Rayon task: enough to amortise a task, small enough to share
    /// (SmolLM2's decode ran at the same rate with tasks of 128, 256 and 512 KiB).
    const TASK_FLOATS: usize = 1 << 15;

    /// `weight` (`[in, out]`) with the same values, stored `[out, in]` when it lives on the
    /// flex CPU backend in f32 and is large enough for [`project`] to take it. Other tensors
    /// come back unchanged.
    pub(crate) fn decode_layout(weight: Tensor<2>) -> Tensor<2> {
        match flex_f32(&weight) {
            Some(w) if !is_decode_layout(&w) && w.layout().num_elements() >= MIN_FLOATS => {
                Tensor::from_primitive::<Flex>(w.transpose(0, 1).to_contiguous().transpose(0, 1))
            }
            _ => weight,
        }
    }

    /// Whether `weight` is in [`decode_layout`] on the flex backend.
    pub(crate) fn in_decode_layout(weight: &Tensor<2>) -> bool {
        flex_f32(weight).is_some_and(|w| is_decode_layout(&w))
    }

    /// `x · weight + bias` when `x` has at most [`MAX_ROWS`] rows and `weight` has at least
    /// [`MIN_FLOATS`] and is in [`decode_layout`] on the flex backend, outside autodiff;
    /// `None` otherwise.
    ///
    /// # Shapes
    /// - `x`: `[rows, in]`, `weight`: `[in, out]`, `bias`: `[out]` -> `[rows, out]`
    pub(crate) fn project(x: &Tensor<2>, weight: &Tensor<2>, bias: Option<&Tensor<1>>) -> Option<Tensor<2>> {
        let [rows, d] = x.dims();
        if rows == 0 || rows > MAX_ROWS || d * weight.dims()[1] < MIN_FLOATS {
            return None;
        }
        let w = flex_f32(weight).filter(is_decode_layout)?;
        let x = flex_f32(x)?.to_contiguous();
        let bias = flex_bias(bias)?;
        let bias = match &bias {
            Some(b) => Some(b.as_slice::<f32>()?),
            None => None,
        };
        let out = w.layout().shape()[1];
        let y = product(x.as_slice::<f32>()?, &w.storage::<f32>()[..d * out], bias, rows, d, out);
        Some(Tensor::from_primitive::<Flex>(FlexTensor::from_data(TensorData::new(y, [rows, out]))))
    }

    /// The flex primitive of an f32 tensor outside autodiff.
    pub(crate) fn flex_f32<const D: usize>(t: &Tensor<D>) -> Option<FlexTensor> {
        if t.dtype() != DType::F32 {
            return None;
        }
        t.clone().try_into_primitive::<Flex>().ok()
    }

    /// A product's bias, contiguous: `Some(None)` without one, `None` if it is not an f32
    /// tensor on flex.
    pub(crate) fn flex_bias(bias: Option<&Tensor<1>>) -> Option<Option<FlexTensor>> {
        match bias {
            Some(b) => Some(Some(flex_f32(b)?.to_contiguous())),
            None => Some(None),
        }
    }

    /// Whether `t` is a tensor of the flex backend outside autodiff.
    pub(crate) fn on_flex<const D: usize>(t: &Tensor<D>) -> bool {
        t.clone().try_into_primitive::<Flex>().is_ok()
    }

    /// Whether a `[in, out]` tensor is stored `[out, in]`, from the start of its storage.
    fn is_decode_layout(w: &FlexTensor) -> bool {
        let layout = w.layout();
        layout.strides() == [1, layout.shape()[0] as isize] && layout.start_offset() == 0
    }

    /// `y = x · wᵀ + bias` with `x` `[rows, d]`, `w` `[out, d]`, all row-major.
    fn product(x: &[f32], w: &[f32], bias: Option<&[f32]>, rows: usize, d: usize, out: usize) -> Vec<f32> {
        // Each task writes its outputs' column of `yᵀ` (`[out, rows]`), then one pass transposes.
        let mut yt = vec![0.0f32; out * rows];
        // A multiple of the threads' count of tasks, of equal size: a step waits for the
        // slowest thread at every product.
        let tasks = (out * d).div_ceil(TASK_FLOATS).next_multiple_of(rayon::current_num_threads());
        let per_task = out.div_ceil(tasks).next_multiple_of(4).max(4);
        let task = |(i, yt): (usize, &mut [f32])| {
            let first = i * per_task;
            let n = yt.len() / rows;
            Arch::new().dispatch(Tile { x, w: &w[first * d..(first + n) * d], yt, rows, d });
        };
        yt.par_chunks_mut(per_task * rows).enumerate().for_each(task);
        let mut y = vec![0.0f32; rows * out];
        for (o, column) in yt.chunks_exact(rows).enumerate() {
            let b = bias.map_or(0.0, |b| b[o]);
            for (r, v) in column.iter().enumerate() {
                y[r * out + o] = v + b;
            }
        }
        y
    }

    /// One task: `yt[o][r] = w[o] · x[r]` for its weight rows `w` (`[n, d]`).
    struct Tile<'a> {
        x: &'a [f32],
        w: &'a [f32],
        yt: &'a mut [f32],
        rows: usize,
        d: usize,
    }

    impl WithSimd for Tile<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: Simd>(self, simd: S) {
            let Tile { x, w, yt, rows, d } = self;
            let n = w.len() / d;
            let tile = rows_per_tile::<S>();
            let prefetch = Prefetch::new();
            // Block `b` takes row `b` of each quarter of the task's weight rows, so four
            // streams read from memory at once; the 0-3 rows past the quarters go one by one.
            let part = n / 4;
            let blocks = (0..part).map(|b| (b, part)).chain((4 * part..n).map(|o| (o, 0)));
            for (o, stride) in blocks {
                let four = stride > 0;
                let mut r = 0;
                while r < rows {
                    let group = (rows - r).min(tile);
                    // The first group of rows asks for the weights ahead; later ones find them in cache.
                    let prefetch = if r == 0 { prefetch } else { Prefetch::none() };
                    let at = Block { o, stride, r, rows, d, prefetch };
                    match (four, group) {
                        (true, 4) => at.store(yt, dots::<S, 4, 4>(simd, w, x, &at)),
                        (true, 3) => at.store(yt, dots::<S, 4, 3>(simd, w, x, &at)),
                        (true, 2) => at.store(yt, dots::<S, 4, 2>(simd, w, x, &at)),
                        (true, _) => at.store(yt, dots::<S, 4, 1>(simd, w, x, &at)),
                        (false, 4) => at.store(yt, dots::<S, 1, 4>(simd, w, x, &at)),
                        (false, 3) => at.store(yt, dots::<S, 1, 3>(simd, w, x, &at)),
                        (false, 2) => at.store(yt, dots::<S, 1, 2>(simd, w, x, &at)),
                        (false, _) => at.store(yt, dots::<S, 1, 1>(simd, w, x, &at)),
                    }
                    r += group;
                }
            }
        }
    }

    /// Rows of `x` per block of four weight rows: four keep 16 sums in registers, which
    /// fits the 32 of AVX-512 and NEON; x86 below AVX-512 has 16, and the sums of four
    /// rows spilled to memory there (SmolLM2's MLP at 8 rows on AVX2: 34-38 ms a decode
    /// step, 25-26 ms with two). The order of each sum is the same either way.
    #[inline(always)]
    fn rows_per_tile<S: Simd>() -> usize {
        if cfg!(target_arch = "x86_64") && S::F32_LANES < 16 { 2 } else { 4 }
    }

    /// Where a block of dot products starts: weight rows `o`, `o + stride`, ..., row `r`
    /// of `x`.
    #[derive(Clone, Copy)]
    struct Block {
        o: usize,
        stride: usize,
        r: usize,
        rows: usize,
        d: usize,
        prefetch: Prefetch,
    }

    /// Floats of weight ahead of the sums that [`Prefetch`] asks for in each stream (4 KiB).
    /// The hardware prefetcher alone falls behind interleaved streams of short rows:
    /// SmolLM2's 576-float rows at 1-8 rows of `x` streamed at 13-19 GB/s in a scratch
    /// kernel, 21-25 with this hint, on a 2-core AVX-512 Xeon. With four streams a task,
    /// SmolLM2's decode ran 2-7% faster 4 KiB ahead than 8 KiB ahead.
    const AHEAD: usize = 1024;

    /// Asks the cache for weights before their loads need them (x86's `prefetcht0`, a hint
    /// that reads nothing and cannot fault); elsewhere it does nothing.
    #[derive(Clone, Copy)]
    pub(crate) struct Prefetch {
        #[cfg(target_arch = "x86_64")]
        sse: Option<pulp::core_arch::x86::Sse>,
    }

    impl Prefetch {
        pub(crate) fn new() -> Self {
            Self {
                #[cfg(target_arch = "x86_64")]
                sse: pulp::core_arch::x86::Sse::try_new(),
            }
        }

        fn none() -> Self {
            Self {
                #[cfg(target_arch = "x86_64")]
                sse: None,
            }
        }

        /// Asks for the line holding `w[at]`, which may lie past the end of `w`.
        #[inline(always)]
        pub(crate) fn line(self, w: &[f32], at: usize) {
            #[cfg(target_arch = "x86_64")]
            if let Some(sse) = self.sse {
                use core::arch::x86_64::_MM_HINT_T0;
                sse._mm_prefetch::<_MM_HINT_T0>(w.as_ptr().wrapping_add(at).cast());
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = (w, at);
        }
    }

    impl Block {
        #[inline(always)]
        fn store<const O: usize, const R: usize>(&self, yt: &mut [f32], sums: [[f32; R]; O]) {
            for (i, row) in sums.iter().enumerate() {
                let at = (self.o + i * self.stride) * self.rows + self.r;
                yt[at..at + R].copy_from_slice(row);
            }
        }
    }

    /// `O x R` dot products: weight rows `o..o + O` with rows `r..r + R` of `x`, each over
    /// SIMD lanes and then its tail, in one order whatever `O` and `R` are.
    ///
    /// Plain loops, no closures: a closure would not inherit the SIMD target features, and
    /// the vectors it returns would go through memory.
    #[inline(always)]
    fn dots<S: Simd, const O: usize, const R: usize>(
        simd: S,
        w: &[f32],
        x: &[f32],
        at: &Block,
    ) -> [[f32; R]; O] {
        let Block { o, stride, r, d, prefetch, .. } = *at;
        let row = |i: usize| (o + i * stride) * d;
        let lanes = d / S::F32_LANES;
        let zero = simd.splat_f32s(0.0);
        let mut wv: [&[S::f32s]; O] = [&[]; O];
        let mut xv: [&[S::f32s]; R] = [&[]; R];
        for i in 0..O {
            wv[i] = &S::as_simd_f32s(&w[row(i)..row(i) + d]).0[..lanes];
        }
        for j in 0..R {
            xv[j] = &S::as_simd_f32s(&x[(r + j) * d..(r + j + 1) * d]).0[..lanes];
        }
        let mut acc = [[zero; R]; O];
        for k in 0..lanes {
            for i in 0..O {
                prefetch.line(w, row(i) + k * S::F32_LANES + AHEAD);
            }
            let mut xk = [zero; R];
            for j in 0..R {
                xk[j] = xv[j][k];
            }
            for i in 0..O {
                let wk = wv[i][k];
                for j in 0..R {
                    acc[i][j] = simd.mul_add_e_f32s(wk, xk[j], acc[i][j]);
                }
            }
        }
        let tail = lanes * S::F32_LANES;
        let mut sums = [[0.0f32; R]; O];
        for i in 0..O {
            let wi = &w[row(i) + tail..row(i) + d];
            for j in 0..R {
                let xj = &x[(r + j) * d + tail..(r + j + 1) * d];
                let mut t = 0.0;
                for (a, b) in wi.iter().zip(xj) {
                    t += a * b;
                }
                sums[i][j] = simd.reduce_sum_f32s(acc[i][j]) + t;
            }
        }
        sums
    }

    #[cfg(test)]
    mod tests {
        use burn::tensor::Distribution;

        use super::*;
        use crate::kernels::few_rows::MAX_ROWS;

        fn values(t: Tensor<2>) -> Vec<f32> {
            t.into_data().try_to_vec::<f32>().unwrap()
        }

        /// Sizes around the tiles (4 weight rows, 4 rows of `x`) and the SIMD width (4-16
        /// lanes).
        #[test]
        fn products_match_the_gemm_at_every_tile_edge() {
            let device = Device::flex();
            for (rows, d, out) in [
                (1, 512, 512),
                (1, 521, 519),
                (2, 576, 1536),
                (3, 1031, 257),
                (5, 2048, 130),
                (9, 64, 4099),
                (32, 200, 1311),
            ] {
                let x = Tensor::<2>::random([rows, d], Distribution::Default, &device);
                let w = Tensor::<2>::random([d, out], Distribution::Default, &device);
                let bias = Tensor::<1>::random([out], Distribution::Default, &device);
                let want = values(x.clone().matmul(w.clone()) + bias.clone().unsqueeze_dim(0));
                let relaid = decode_layout(w.clone());
                assert_eq!(values(relaid.clone()), values(w), "the layout keeps the values");
                let got = values(project(&x, &relaid, Some(&bias)).expect("a decode-layout weight on flex"));
                for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                        "[{rows}, {d}] x [{d}, {out}] at {i}: {g} vs {e}"
                    );
                }
            }
        }

        /// A row's outputs are bit-identical whatever rows come with it.
        #[test]
        fn a_rows_product_does_not_depend_on_its_batch() {
            let device = Device::flex();
            let (d, out) = (72, 4099);
            let w = decode_layout(Tensor::<2>::random([d, out], Distribution::Default, &device));
            let x = Tensor::<2>::random([7, d], Distribution::Default, &device);
            let all = values(project(&x, &w, None).unwrap());
            for r in 0..7 {
                let alone = values(project(&x.clone().slice([r..r + 1, 0..d]), &w, None).unwrap());
                assert_eq!(alone, all[r * out..(r + 1) * out], "row {r}");
            }
        }

        #[test]
        fn other_layouts_and_many_rows_go_to_the_gemm() {
            let device = Device::flex();
            let w = Tensor::<2>::random([512, 512], Distribution::Default, &device);
            let x = Tensor::<2>::random([2, 512], Distribution::Default, &device);
            assert!(project(&x, &w, None).is_none(), "row-major weights are not streamed");
            let many = Tensor::<2>::random([MAX_ROWS + 1, 512], Distribution::Default, &device);
            assert!(project(&many, &decode_layout(w.clone()), None).is_none());
            let none = Tensor::<2>::zeros([0, 512], &device);
            assert!(project(&none, &decode_layout(w.clone()), None).is_none(), "no rows, no product");
            let small = Tensor::<2>::random([128, 384], Distribution::Default, &device);
            assert!(!in_decode_layout(&decode_layout(small)), "small weights keep the gemm's layout");
        }
    }
}

/// Without the flex backend, every product goes to the backend's matmul.
#[cfg(not(feature = "flex"))]
mod none {
    use burn::prelude::*;

    pub(crate) fn decode_layout(weight: Tensor<2>) -> Tensor<2> {
        weight
    }

    pub(crate) fn in_decode_layout(_: &Tensor<2>) -> bool {
        false
    }

    pub(crate) fn on_flex<const D: usize>(_: &Tensor<D>) -> bool {
        false
    }

    pub(crate) fn project(_: &Tensor<2>, _: &Tensor<2>, _: Option<&Tensor<1>>) -> Option<Tensor<2>> {
        None
    }
}
