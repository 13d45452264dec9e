//! Products of many rows with a weight in the decode layout (`[out, in]`, the layout of a
//! frozen model's projections) on AVX-512: the prefill of a prompt or a batch of prompts,
//! in tasks of 49 to 64 rows.
//!
//! The gemm kernels repack such a weight at every call, 17% of a 128-row product. Here
//! each task packs its rows of `x` instead, `out` times less work, into one panel
//! `[in, 64]`; blocks of six weight rows are broadcast against it, 24 sums in registers;
//! the sums come out `[out, rows]` and are transposed into `y`.
//!
//! The sums are taken in the kernels' order: over slices of [`SLICE`] inputs, each slice
//! summed from zero in order with one fused multiply-add per step, then added to the bias
//! and the earlier slices. Where that gives the kernels' bits (checked once per shape by
//! the caller, `many_rows::project`), a sequence's values do not depend on whether its
//! batch took this path or the kernels'.

use core::arch::x86_64::__m512;

use pulp::x86::V4;
use pulp::{Simd, WithSimd};
use rayon::prelude::*;

use crate::kernels::few_rows::Prefetch;

/// Values per panel: four vectors of 16.
const PANEL: usize = 64;

/// Weight rows per block: with four vectors per panel, 24 sums in registers of
/// AVX-512's 32.
const BLOCK: usize = 6;

/// Inputs per run of [`block`]'s loop: one cache line of each weight row.
const RUN: usize = 16;

/// Inputs per slice: the kernels' (`private-gemm-x86` 0.1.22 on a 2-core AVX-512 Xeon at
/// SmolLM2's shapes, found by matching their bits).
const SLICE: usize = 512;

/// Whether [`product`] pays for `rows` rows on `threads` threads: panels at least three
/// quarters full. Emptier panels waste their sums (64 rows on 2 threads: 115 GFLOP/s
/// against the kernels' 161); full ones beat the kernels' repacking at 128 rows and
/// still at 1024 (SmolLM2's projections at batch 8: 265-270 against 253-256 GFLOP/s).
pub(super) fn takes(rows: usize, threads: usize) -> bool {
    rows_per_task(rows, threads) > PANEL / 4 * 3
}

/// Rows per task: one panel each, as many tasks as panels rounded up to a multiple of the
/// threads, so that each thread takes the same share.
fn rows_per_task(rows: usize, threads: usize) -> usize {
    rows.div_ceil(rows.div_ceil(PANEL).next_multiple_of(threads.max(1))).max(1)
}

/// `y = x · wᵀ + bias` with `x` `[rows, d]` and `w` `[out, d]`, row-major; `y` is
/// `[rows, out]`. With a `gate` (`[rows, out]`), `y = silu(gate) ⊙ (x · wᵀ + bias)`, each
/// task's part while it is in cache. `threads` of Rayon's threads share its tasks, one
/// panel of rows each.
#[allow(clippy::too_many_arguments)]
pub(super) fn product(
    v4: V4,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    gate: Option<&[f32]>,
    d: usize,
    out: usize,
    threads: usize,
) -> Vec<f32> {
    let rows = x.len() / d;
    let mut y = vec![0.0f32; rows * out];
    let per_task = rows_per_task(rows, threads);
    let task = |(i, y): (usize, &mut [f32])| {
        let x = &x[i * per_task * d..][..y.len() / out * d];
        Simd::vectorize(v4, Task { v4, x, w, bias, y: &mut *y, d, out });
        if let Some(gate) = gate {
            crate::kernels::fused::swiglu_into(&gate[i * per_task * out..][..y.len()], y);
        }
    };
    match threads {
        1 => y.chunks_mut(per_task * out).enumerate().for_each(task),
        _ => y.par_chunks_mut(per_task * out).enumerate().for_each(task),
    }
    y
}

/// One task: its rows of `x` packed into one panel, all outputs summed transposed
/// (`[out, 64]`), then turned into `y`.
struct Task<'a> {
    v4: V4,
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    y: &'a mut [f32],
    d: usize,
    out: usize,
}

impl WithSimd for Task<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Task { v4, x, w, bias, y, d, out } = self;
        let rows = y.len() / out;
        // Taken out of the thread's buffers, not borrowed in a closure: a closure would not
        // inherit the SIMD target features.
        let (mut packed_buffer, mut sums_buffer) = (PACKED.take(), SUMS.take());
        let packed = cache_lines(&mut packed_buffer, d * PANEL);
        pack(v4, x, rows, d, packed);
        let sums = cache_lines(&mut sums_buffer, out * PANEL);
        sweep(simd, Prefetch::new(), w, out, packed, sums, d, bias);
        transpose(v4, sums, PANEL, out, rows, y, out);
        PACKED.set(packed_buffer);
        SUMS.set(sums_buffer);
    }
}

/// `len` floats of `buffer` from a cache line's start, grown as needed: a vector load
/// across two lines costs two (the sweep at 64 x 512 x 1536, one thread: 130-140 GFLOP/s
/// from a panel 16 bytes off a line, 156-157 from its start).
fn cache_lines(buffer: &mut Vec<f32>, len: usize) -> &mut [f32] {
    const LINE: usize = 64 / size_of::<f32>();
    if buffer.len() < len + LINE {
        buffer.resize(len + LINE, 0.0);
    }
    let start = buffer.as_ptr().align_offset(64).min(LINE);
    &mut buffer[start..start + len]
}

thread_local! {
    /// Each thread's panel of rows of `x`, kept between calls.
    static PACKED: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
    /// Each thread's transposed sums.
    static SUMS: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `rows` rows of `src` (stride `cols`) into the panel `dst` (`[cols, 64]`), the values
/// of rows past `rows` zero.
#[inline(always)]
fn pack(v4: V4, src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    transpose(v4, src, cols, rows, cols, dst, PANEL);
    for at in dst.chunks_exact_mut(PANEL) {
        at[rows..].fill(0.0);
    }
}

/// `sums[o][j] = bias[o] + Σ_k w[o][k] · panel[k][j]` for the `out` rows of `w`
/// (stride `d`), slice by slice of the input.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn sweep<S: Simd>(
    simd: S,
    prefetch: Prefetch,
    w: &[f32],
    out: usize,
    panel: &[f32],
    sums: &mut [f32],
    d: usize,
    bias: Option<&[f32]>,
) {
    let mut k0 = 0;
    while k0 < d {
        let depth = SLICE.min(d - k0);
        let slice = S::as_simd_f32s(&panel[k0 * PANEL..][..depth * PANEL]).0;
        let at = Slice { prefetch, k0, depth, d, bias };
        let mut o = 0;
        while o + BLOCK <= out {
            block::<S, BLOCK>(simd, w, o, slice, sums, &at);
            o += BLOCK;
        }
        match out - o {
            0 => {}
            1 => block::<S, 1>(simd, w, o, slice, sums, &at),
            2 => block::<S, 2>(simd, w, o, slice, sums, &at),
            3 => block::<S, 3>(simd, w, o, slice, sums, &at),
            4 => block::<S, 4>(simd, w, o, slice, sums, &at),
            _ => block::<S, 5>(simd, w, o, slice, sums, &at),
        }
        k0 += depth;
    }
}

/// Where [`block`] works: inputs `k0..k0 + depth` of `d`.
struct Slice<'a> {
    prefetch: Prefetch,
    k0: usize,
    depth: usize,
    d: usize,
    bias: Option<&'a [f32]>,
}

/// Weight rows `o..o + M` against the panel over one slice of the input: summed from
/// zero, then added to the bias (first slice) or to the earlier slices' sums.
#[inline(always)]
fn block<S: Simd, const M: usize>(
    simd: S,
    w: &[f32],
    o: usize,
    panel: &[S::f32s],
    sums: &mut [f32],
    at: &Slice<'_>,
) {
    const VECTORS: usize = PANEL / 16;
    let Slice { prefetch, k0, depth, d, bias } = *at;
    let mut rows: [&[f32]; M] = [&[]; M];
    for (m, row) in rows.iter_mut().enumerate() {
        *row = &w[(o + m) * d + k0..][..depth];
    }
    let mut acc = [[simd.splat_f32s(0.0); VECTORS]; M];
    // Plain loops: a closure would not inherit the SIMD target features. Each run of a
    // cache line per row asks for the next block's line: the weight comes from memory
    // (a model's projections do not fit in cache) in rows too short for the hardware
    // prefetchers (at 576 inputs, 128-row products with 40 weights in turn ran at
    // 164-178 GFLOP/s without, 191-213 with).
    let whole = depth / RUN * RUN;
    let (runs, rest) = panel.split_at(whole * VECTORS);
    for (r, run) in runs.as_chunks::<{ RUN * VECTORS }>().0.iter().enumerate() {
        let mut ws = [&[0.0f32; RUN]; M];
        for (m, w) in ws.iter_mut().enumerate() {
            *w = rows[m][r * RUN..][..RUN].try_into().unwrap();
        }
        for m in 0..M {
            prefetch.line(w, (o + BLOCK + m) * d + k0 + r * RUN);
        }
        for (k, b) in run.chunks_exact(VECTORS).enumerate() {
            step(simd, &mut acc, ws.map(|w| w[k]), b);
        }
    }
    for (k, b) in (whole..depth).zip(rest.chunks_exact(VECTORS)) {
        step(simd, &mut acc, rows.map(|w| w[k]), b);
    }
    for (m, acc) in acc.iter().enumerate() {
        let row = S::as_mut_simd_f32s(&mut sums[(o + m) * PANEL..][..PANEL]).0;
        for (at, v) in row.iter_mut().zip(acc) {
            *at = match (k0, bias) {
                (0, None) => *v,
                (0, Some(b)) => simd.add_f32s(simd.splat_f32s(b[o + m]), *v),
                _ => simd.add_f32s(*at, *v),
            };
        }
    }
}

/// One input: each weight value broadcast against the panel's row `b`, into its sums.
#[inline(always)]
fn step<S: Simd, const M: usize>(simd: S, acc: &mut [[S::f32s; PANEL / 16]; M], ws: [f32; M], b: &[S::f32s]) {
    let mut bk = [simd.splat_f32s(0.0); PANEL / 16];
    bk.copy_from_slice(b);
    for (acc, w) in acc.iter_mut().zip(ws) {
        let wm = simd.splat_f32s(w);
        for (acc, b) in acc.iter_mut().zip(bk) {
            *acc = simd.mul_add_e_f32s(wm, b, *acc);
        }
    }
}

/// `dst[c * dst_stride + r] = src[r * src_stride + c]` for `r < rows` and `c < cols`:
/// 16 x 16 blocks in registers, the edges one value at a time.
#[inline(always)]
fn transpose(
    v4: V4,
    src: &[f32],
    src_stride: usize,
    rows: usize,
    cols: usize,
    dst: &mut [f32],
    dst_stride: usize,
) {
    let (whole_rows, whole_cols) = (rows / 16 * 16, cols / 16 * 16);
    for r in (0..whole_rows).step_by(16) {
        for c in (0..whole_cols).step_by(16) {
            transpose16(
                v4,
                &src[r * src_stride + c..],
                src_stride,
                &mut dst[c * dst_stride + r..],
                dst_stride,
            );
        }
    }
    let one = |r: usize, c: usize, dst: &mut [f32]| dst[c * dst_stride + r] = src[r * src_stride + c];
    for r in 0..whole_rows {
        for c in whole_cols..cols {
            one(r, c, dst);
        }
    }
    for r in whole_rows..rows {
        for c in 0..cols {
            one(r, c, dst);
        }
    }
}

/// One 16 x 16 block of [`transpose`]: rows interleaved in pairs, then fours, then
/// 128-bit lanes twice.
#[inline(always)]
fn transpose16(v4: V4, src: &[f32], src_stride: usize, dst: &mut [f32], dst_stride: usize) {
    let f = v4.avx512f;
    let load = |s: &[f32]| -> __m512 { pulp::cast::<[f32; 16], __m512>(s[..16].try_into().unwrap()) };
    let mut r = [f._mm512_setzero_ps(); 16];
    for (i, r) in r.iter_mut().enumerate() {
        *r = load(&src[i * src_stride..]);
    }
    let mut t = r;
    for i in 0..8 {
        t[2 * i] = f._mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = f._mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    let mut u = t;
    for g in (0..16).step_by(4) {
        u[g] = f._mm512_shuffle_ps::<0x44>(t[g], t[g + 2]);
        u[g + 1] = f._mm512_shuffle_ps::<0xEE>(t[g], t[g + 2]);
        u[g + 2] = f._mm512_shuffle_ps::<0x44>(t[g + 1], t[g + 3]);
        u[g + 3] = f._mm512_shuffle_ps::<0xEE>(t[g + 1], t[g + 3]);
    }
    let mut v = u;
    for c in 0..4 {
        v[c] = f._mm512_shuffle_f32x4::<0x88>(u[c], u[4 + c]);
        v[4 + c] = f._mm512_shuffle_f32x4::<0xDD>(u[c], u[4 + c]);
        v[8 + c] = f._mm512_shuffle_f32x4::<0x88>(u[8 + c], u[12 + c]);
        v[12 + c] = f._mm512_shuffle_f32x4::<0xDD>(u[8 + c], u[12 + c]);
    }
    let mut columns = v;
    for c in 0..4 {
        columns[c] = f._mm512_shuffle_f32x4::<0x88>(v[c], v[8 + c]);
        columns[8 + c] = f._mm512_shuffle_f32x4::<0xDD>(v[c], v[8 + c]);
        columns[4 + c] = f._mm512_shuffle_f32x4::<0x88>(v[4 + c], v[12 + c]);
        columns[12 + c] = f._mm512_shuffle_f32x4::<0xDD>(v[4 + c], v[12 + c]);
    }
    for (j, c) in columns.into_iter().enumerate() {
        dst[j * dst_stride..][..16].copy_from_slice(&pulp::cast::<__m512, [f32; 16]>(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2000) as f32 / 1000.0 - 1.0).collect()
    }

    /// Against the order it promises, one value at a time (the same bits), at every edge:
    /// rows past 16 and a block, outputs past a block and 16, inputs past a slice and 16,
    /// several tasks a thread, one thread and two, with and without a bias.
    #[test]
    fn sums_in_the_promised_order() {
        let Some(v4) = V4::try_new() else { return };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for (rows, d, out) in [(128, 576, 192), (37, 1100, 70), (1, 17, 9), (100, 300, 129), (300, 600, 13)] {
            let x = values(rows * d, 1);
            let w = values(out * d, 2);
            let bias = values(out, 3);
            for b in [None, Some(&bias[..])] {
                let got = pool.install(|| product(v4, &x, &w, b, None, d, out, 2));
                let alone = product(v4, &x, &w, b, None, d, out, rows.div_ceil(PANEL));
                for r in 0..rows {
                    for o in 0..out {
                        let mut sum = b.map(|b| b[o]);
                        for k0 in (0..d).step_by(SLICE) {
                            let mut part = 0.0f32;
                            for k in k0..(k0 + SLICE).min(d) {
                                part = w[o * d + k].mul_add(x[r * d + k], part);
                            }
                            sum = Some(sum.map_or(part, |s| s + part));
                        }
                        let want = sum.unwrap().to_bits();
                        assert_eq!(got[r * out + o].to_bits(), want, "{rows} x {d} x {out} at [{r}, {o}]");
                        assert_eq!(alone[r * out + o].to_bits(), want);
                    }
                }
            }
        }
    }
}
