//! Products of many rows with a weight on x86-64 CPUs: the projections of a prefill, a
//! scoring pass and the LM head over whole sequences.
//!
//! These are gemm-bound (80% of a SmolLM2 prefill). The gemm under Burn's flex backend
//! reached 105-160 GFLOP/s on the SmolLM2-135M shapes on a 2-core AVX2 machine, where
//! `private-gemm-x86` (the x86 kernels of the faer crate) reached 140-175 in the same
//! runs, alternating. It is called directly, not through faer, which would add about
//! three minutes of compile time for its other kernels. Each output row is summed in the
//! same order whatever the number of rows or threads (test below), so a sequence's
//! values do not depend on the rest of its batch. A prefill's products with a frozen
//! model's weights (the decode layout, AVX-512, tasks of 49 to 64 rows) skip the kernels'
//! repacking of the weight (`avx512.rs`), in the same order.

#[cfg(all(feature = "flex", target_arch = "x86_64"))]
pub(crate) use cpu::{Matrix, multiply, project, project_gated};

#[cfg(all(feature = "flex", target_arch = "x86_64"))]
mod avx512;

/// Always `None` where the kernels are not built: the caller takes Burn's matmul.
#[cfg(not(all(feature = "flex", target_arch = "x86_64")))]
pub(crate) fn project(
    _: &burn::prelude::Tensor<2>,
    _: &burn::prelude::Tensor<2>,
    _: Option<&burn::prelude::Tensor<1>>,
) -> Option<burn::prelude::Tensor<2>> {
    None
}

/// Always `None` where the kernels are not built: the caller gates Burn's product.
#[cfg(not(all(feature = "flex", target_arch = "x86_64")))]
pub(crate) fn project_gated(
    _: &burn::prelude::Tensor<2>,
    _: &burn::prelude::Tensor<2>,
    _: &burn::prelude::Tensor<2>,
) -> Option<burn::prelude::Tensor<2>> {
    None
}

#[cfg(all(feature = "flex", target_arch = "x86_64"))]
mod cpu {
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::prelude::*;
    use burn::tensor::TensorData;
    use private_gemm_x86 as kernels;
    use rayon::prelude::*;

    use super::avx512;

    use crate::kernels::few_rows::{flex_bias, flex_f32};

    /// Multiply-adds from which [`project`] splits a product across the threads (192³,
    /// flex's threshold).
    const PARALLEL_WORK: usize = 192 * 192 * 192;

    /// Rows per thread from which a product's rows are split across the threads, each
    /// part on one thread; fewer rows are split by the kernels (by output columns). In a
    /// scratch bench of the kernels alone on a 2-core AVX-512 machine at SmolLM2's shapes,
    /// splitting 1024 rows by rows ran the layers' products 5-12% faster and the LM
    /// head's 50%; at 64 rows or fewer the kernels' own split won (the LM head 105-110
    /// against 83-88 GFLOP/s).
    const ROWS_PER_THREAD: usize = 64;

    /// The widest instruction set the kernels support on this CPU (`None`: neither).
    fn instructions() -> Option<kernels::InstrSet> {
        static SET: std::sync::OnceLock<Option<kernels::InstrSet>> = std::sync::OnceLock::new();
        *SET.get_or_init(|| {
            if std::arch::is_x86_feature_detected!("avx512f") {
                Some(kernels::InstrSet::Avx512)
            } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                Some(kernels::InstrSet::Avx256)
            } else {
                None
            }
        })
    }

    /// `x · weight + bias` for f32 tensors on flex outside autodiff, the weight in any
    /// 2-D layout (the decode layout included); `None` otherwise, or on a CPU without
    /// AVX2 and FMA.
    ///
    /// # Shapes
    /// - `x`: `[rows, in]`, `weight`: `[in, out]`, `bias`: `[out]` -> `[rows, out]`
    pub(crate) fn project(x: &Tensor<2>, weight: &Tensor<2>, bias: Option<&Tensor<1>>) -> Option<Tensor<2>> {
        let set = instructions()?;
        let w = flex_f32(weight)?;
        let x = flex_f32(x)?.to_contiguous();
        let [rows, depth] = x.layout().shape()[..] else { return None };
        let out = w.layout().shape()[1];
        let strides = w.layout().strides();
        if rows == 0 || out == 0 || strides.iter().any(|&s| s < 0) {
            return None;
        }
        let xs = x.as_slice::<f32>()?;
        let ws = w.storage::<f32>().get(w.layout().start_offset()..)?;
        let bias = flex_bias(bias)?;
        let bias = match &bias {
            Some(b) => Some(b.as_slice::<f32>()?),
            None => None,
        };
        let threads = threads(rows, depth, out);
        let tensor = |y: Vec<f32>| tensor(y, rows, out);
        let by_kernels = || {
            // The bias fills the output, which the product then adds to.
            let (mut y, accum) = match bias {
                Some(b) => (b.repeat(rows), kernels::Accum::Add),
                None => (vec![0.0f32; rows * out], kernels::Accum::Replace),
            };
            let lhs = Matrix { data: xs, rows, cols: depth, row_stride: depth, col_stride: 1 };
            let rhs = Matrix {
                data: ws,
                rows: depth,
                cols: out,
                row_stride: strides[0] as usize,
                col_stride: strides[1] as usize,
            };
            multiply_with(set, &mut y, lhs, rhs, accum, threads).map(|()| y)
        };
        // A prefill with a weight in the decode layout: read as stored on AVX-512
        // where that gives the kernels' bits for this shape (tried on its first product),
        // so that a row's values never depend on which path its batch took.
        if let Some(v4) = avx512_path(&w, rows, depth, threads) {
            let w = ws.get(..out * depth)?;
            let shape = (depth, out, bias.is_some());
            let ours = || avx512::product(v4, xs, w, bias, None, depth, out, threads);
            match avx512_agrees(shape) {
                Some(true) => return Some(tensor(ours())),
                Some(false) => {}
                None => {
                    let (ours, theirs) = (ours(), by_kernels()?);
                    let same = ours.iter().zip(&theirs).all(|(a, b)| a.to_bits() == b.to_bits());
                    AVX512_AGREES
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((shape, same));
                    return Some(tensor(theirs));
                }
            }
        }
        Some(tensor(by_kernels()?))
    }

    /// `silu(gate) ⊙ (x · weight)`, the MLP's gated product, each task's part gated while
    /// it is in cache (no pass of its own over the whole): where [`project`] takes the
    /// AVX-512 path and a first product of this shape has shown that path gives the
    /// kernels' bits, so that the values are `swiglu(gate, project(x, weight))`'s;
    /// `None` otherwise.
    ///
    /// # Shapes
    /// - `x`: `[rows, in]`, `weight`: `[in, out]`, `gate`: `[rows, out]` -> `[rows, out]`
    pub(crate) fn project_gated(x: &Tensor<2>, weight: &Tensor<2>, gate: &Tensor<2>) -> Option<Tensor<2>> {
        let w = flex_f32(weight)?;
        let x = flex_f32(x)?.to_contiguous();
        let gate = flex_f32(gate)?.to_contiguous();
        let [rows, depth] = x.layout().shape()[..] else { return None };
        let out = w.layout().shape()[1];
        let threads = threads(rows, depth, out);
        if gate.layout().shape()[..] != [rows, out] || avx512_agrees((depth, out, false)) != Some(true) {
            return None;
        }
        let v4 = avx512_path(&w, rows, depth, threads)?;
        let w = w.storage::<f32>().get(w.layout().start_offset()..)?.get(..out * depth)?;
        let y = avx512::product(v4, x.as_slice()?, w, None, Some(gate.as_slice()?), depth, out, threads);
        Some(tensor(y, rows, out))
    }

    /// AVX-512, where a product of `rows` rows with `w` on `threads` threads takes that
    /// path: the weight in the decode layout, the tasks' panels full enough.
    fn avx512_path(w: &FlexTensor, rows: usize, depth: usize, threads: usize) -> Option<pulp::x86::V4> {
        let decode_layout = w.layout().strides() == [1, depth as isize];
        (decode_layout && avx512::takes(rows, threads)).then(pulp::x86::V4::try_new).flatten()
    }

    /// Rayon's threads for a product; small ones (a tiny model's) stay on the calling
    /// thread, as flex's gemm's do.
    fn threads(rows: usize, depth: usize, out: usize) -> usize {
        match rows * depth * out >= PARALLEL_WORK {
            true => rayon::current_num_threads(),
            false => 1,
        }
    }

    fn tensor(y: Vec<f32>, rows: usize, out: usize) -> Tensor<2> {
        Tensor::from_primitive::<Flex>(FlexTensor::from_data(TensorData::new(y, [rows, out])))
    }

    /// A product's shape: inputs, outputs, whether it has a bias.
    type Shape = (usize, usize, bool);

    /// Per shape: whether [`avx512::product`] gave the kernels' bits.
    static AVX512_AGREES: std::sync::Mutex<Vec<(Shape, bool)>> = std::sync::Mutex::new(Vec::new());

    fn avx512_agrees(shape: Shape) -> Option<bool> {
        let known = AVX512_AGREES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        known.iter().find(|(s, _)| *s == shape).map(|(_, same)| *same)
    }

    /// A matrix read at strides (in elements) from a slice.
    #[derive(Clone, Copy)]
    pub(crate) struct Matrix<'a> {
        pub data: &'a [f32],
        pub rows: usize,
        pub cols: usize,
        pub row_stride: usize,
        pub col_stride: usize,
    }

    impl Matrix<'_> {
        /// Whether every element lies inside `data`.
        fn fits(&self) -> bool {
            self.rows == 0
                || self.cols == 0
                || (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride < self.data.len()
        }
    }

    /// `dst = lhs · rhs` (`dst` row-major `[lhs.rows, rhs.cols]`) on `threads` of Rayon's
    /// threads; `None` on a CPU without AVX2 and FMA, or if the shapes do not fit.
    pub(crate) fn multiply(dst: &mut [f32], lhs: Matrix<'_>, rhs: Matrix<'_>, threads: usize) -> Option<()> {
        multiply_with(instructions()?, dst, lhs, rhs, kernels::Accum::Replace, threads)
    }

    fn multiply_with(
        set: kernels::InstrSet,
        dst: &mut [f32],
        lhs: Matrix<'_>,
        rhs: Matrix<'_>,
        accum: kernels::Accum,
        threads: usize,
    ) -> Option<()> {
        let (rows, depth, cols) = (lhs.rows, lhs.cols, rhs.cols);
        if rhs.rows != depth || dst.len() != rows * cols || !lhs.fits() || !rhs.fits() {
            return None;
        }
        if rows == 0 || cols == 0 {
            return Some(());
        }
        if threads > 1 && rows >= ROWS_PER_THREAD * threads {
            let part = rows.div_ceil(threads);
            return dst.par_chunks_mut(part * cols).enumerate().try_for_each(|(i, dst)| {
                let data = lhs.data.get(i * part * lhs.row_stride..)?;
                let lhs = Matrix { data, rows: dst.len() / cols, ..lhs };
                multiply_with(set, dst, lhs, rhs, accum, 1)
            });
        }
        let alpha = 1.0f32;
        // SAFETY (the crate's one unsafe call: the kernels take raw pointers): `dst` holds
        // `[rows, cols]` row-major, both operands lie inside their slices at their strides
        // (checked above; strides are unsigned), the index pointers are null (no scatter)
        // and `alpha` outlives the call.
        #[allow(unsafe_code)]
        unsafe {
            kernels::gemm(
                kernels::DType::F32,
                kernels::IType::U64,
                set,
                rows,
                cols,
                depth,
                dst.as_mut_ptr().cast(),
                cols as isize,
                1,
                std::ptr::null(),
                std::ptr::null(),
                kernels::DstKind::Full,
                accum,
                lhs.data.as_ptr().cast(),
                lhs.row_stride as isize,
                lhs.col_stride as isize,
                false,
                std::ptr::null(),
                0,
                rhs.data.as_ptr().cast(),
                rhs.row_stride as isize,
                rhs.col_stride as isize,
                false,
                (&raw const alpha).cast(),
                threads.max(1),
            );
        }
        Some(())
    }

    #[cfg(test)]
    mod tests {
        use burn::tensor::Distribution;

        use super::*;
        use crate::kernels::few_rows::decode_layout;

        fn values(t: Tensor<2>) -> Vec<f32> {
            t.into_data().try_to_vec::<f32>().unwrap()
        }

        /// A prompt of 100 rows on two threads (the AVX-512 path, where it agrees with the
        /// kernels) has the bits of the same rows inside a batch of 160 (the kernels: its
        /// panels would be part empty), on its first product (the trial) and after.
        #[test]
        fn a_short_prompt_has_its_bits_in_a_batch() {
            if instructions().is_none() {
                return;
            }
            let device = Device::flex();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            assert!(avx512::takes(100, 2) && !avx512::takes(160, 2), "the test covers both paths");
            let x = Tensor::<2>::random([160, 576], Distribution::Default, &device);
            let w = decode_layout(Tensor::<2>::random([576, 192], Distribution::Default, &device));
            let bias = Tensor::<1>::random([192], Distribution::Default, &device);
            for bias in [None, Some(&bias)] {
                let batch = pool.install(|| values(project(&x, &w, bias).unwrap()));
                for _ in 0..2 {
                    let prompt = pool
                        .install(|| values(project(&x.clone().slice([0..100, 0..576]), &w, bias).unwrap()));
                    assert!(prompt.iter().zip(&batch).all(|(a, b)| a.to_bits() == b.to_bits()));
                }
                let shape = (576, 192, bias.is_some());
                assert!(pulp::x86::V4::try_new().is_none() || avx512_agrees(shape).is_some(), "tried");
            }
        }

        /// The gated product has the bits of SwiGLU over the plain product once a first
        /// product of its shape has shown the AVX-512 path agrees with the kernels, and
        /// declines before.
        #[test]
        fn a_gated_product_is_swiglu_of_the_product() {
            if instructions().is_none() {
                return;
            }
            let device = Device::flex();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let (rows, d, out) = (128, 576, 1536);
            let x = Tensor::<2>::random([rows, d], Distribution::Default, &device);
            let w = decode_layout(Tensor::<2>::random([d, out], Distribution::Default, &device));
            let gate = Tensor::<2>::random([rows, out], Distribution::Default, &device);
            pool.install(|| {
                let untried = avx512_agrees((d, out, false)).is_none();
                assert!(
                    !untried || project_gated(&x, &w, &gate).is_none(),
                    "no gated product before a trial"
                );
                let plain = project(&x, &w, None).unwrap();
                let want =
                    values(crate::fused::swiglu(gate.clone().unsqueeze(), plain.unsqueeze()).squeeze_dim(0));
                let agrees = avx512_agrees((d, out, false)) == Some(true);
                match project_gated(&x, &w, &gate) {
                    Some(got) => {
                        assert!(agrees, "gated only where the path agrees");
                        let got = values(got);
                        assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
                    }
                    None => assert!(!agrees, "the path agrees, so the gated product is taken"),
                }
            });
        }

        /// Against Burn's matmul (to rounding) in both weight layouts, with and without a
        /// bias; each row's bits the same at any row count and thread count.
        #[test]
        fn products_match_burn_and_rows_are_independent() {
            if instructions().is_none() {
                return;
            }
            let device = Device::flex();
            let x = Tensor::<2>::random([300, 96], Distribution::Default, &device);
            let stored = Tensor::<2>::random([96, 700], Distribution::Default, &device);
            let bias = Tensor::<1>::random([700], Distribution::Default, &device);
            let want = values(x.clone().matmul(stored.clone()) + bias.clone().unsqueeze_dim(0));
            let relaid = decode_layout(stored.clone());
            assert!(crate::kernels::few_rows::in_decode_layout(&relaid), "the test covers the decode layout");
            for weight in [stored, relaid] {
                let got = values(project(&x, &weight, Some(&bias)).unwrap());
                let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                assert!(worst < 1e-4, "{worst}");
                let plain = values(project(&x, &weight, None).unwrap());
                let unbiased = values(x.clone().matmul(weight.clone()));
                assert!(plain.iter().zip(&unbiased).all(|(a, b)| (a - b).abs() < 1e-4));
                // The first 37 rows alone, and on one thread: the same bits.
                let few = values(project(&x.clone().slice([0..37, 0..96]), &weight, Some(&bias)).unwrap());
                assert!(few.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()));
                let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
                let alone = pool.install(|| values(project(&x, &weight, Some(&bias)).unwrap()));
                assert!(alone.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
    }
}
