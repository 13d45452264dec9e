//! Mixed precision: an f32 checkpoint computing in bf16 (`Decoder::with_compute_dtype`)
//! keeps f32 weights, gradients and AdamW moments (master weights) while its logits move
//! by bf16's rounding only; its frozen copy holds bf16 weights and gives the same logits
//! bit for bit; an update of 1e-6 moves the f32 weights where bf16 weights would not move;
//! in f16 the gradients of a realistically small loss need it scaled.
//!
//! The device comes from `TRLVR_TEST_DEVICE` (default `tch` with that feature, else
//! `flex`); it keeps its default f32 dtype.

mod common;

use burn::module::{ModuleVisitor, Param};
use burn::optim::{AdamWConfig, GradientsParams};
use burn::prelude::*;
use burn::tensor::DType;
use common::{fixture, reference, to_vec};
use trlvr::device::parse_device;
use trlvr::model::{Partner, Policy};
use trlvr::token::TokenBatch;
use trlvr_models::{Decoder, load_hf_dir};

/// As in `tests/half.rs`: bf16 moves these logits (±4) by at most ~0.2, mean ~0.02.
const MAX_TOLERANCE: f32 = 0.3;
const MEAN_TOLERANCE: f32 = 0.05;

/// Every float parameter's values and dtype, in visiting order.
struct Weights(Vec<(DType, Vec<f32>)>);

impl ModuleVisitor for Weights {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        self.0.push((t.dtype(), to_vec(t.cast(DType::F32).reshape([-1]))));
    }
}

fn weights(model: &Decoder) -> Vec<(DType, Vec<f32>)> {
    let mut w = Weights(Vec::new());
    model.visit(&mut w);
    w.0
}

fn device() -> (String, Device) {
    let default = if cfg!(feature = "tch") { "tch" } else { "flex" };
    let spec = std::env::var("TRLVR_TEST_DEVICE").unwrap_or_else(|_| default.into());
    let device = parse_device(&spec).unwrap();
    (spec, device)
}

/// Largest and mean |a - b|.
fn gaps(a: &[f32], b: &[f32]) -> (f32, f32) {
    let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    let mean = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
    (worst, mean)
}

#[test]
fn bf16_compute_on_f32_weights_stays_close_to_f32_and_its_frozen_copy_agrees() {
    let (spec, device) = device();
    let want = reference("qwen3-tiny-untied");
    let batch = TokenBatch::new(want.tokens.clone(), want.pad_id).unwrap();
    let model = load_hf_dir(fixture("qwen3-tiny-untied"), &device).unwrap().0.with_compute_dtype(DType::BF16);
    assert_eq!(model.compute_dtype(), Some(DType::BF16));
    assert!(weights(&model).iter().all(|(d, _)| *d == DType::F32), "the weights stay f32");

    // Logits (f32 out of the partner) against transformers' f32 logits.
    let logits = model.logits(&batch).unwrap();
    assert_eq!(logits.dtype(), DType::F32);
    let vocab = logits.dims()[2];
    let (mut got, mut expected) = (Vec::new(), Vec::new());
    for (r, rows) in want.logits.iter().enumerate() {
        let n = want.tokens[r].len();
        got.extend(to_vec(logits.clone().slice([r..r + 1, 0..n, 0..vocab])));
        expected.extend(rows.iter().flatten().copied());
    }
    let (worst, mean) = gaps(&got, &expected);
    eprintln!("{spec} bf16 compute on f32 weights: |logit - f32| max {worst:.3e} mean {mean:.3e}");
    assert!(worst > 1e-3, "logits equal to f32 ones: nothing was computed in bf16");
    assert!(worst < MAX_TOLERANCE && mean < MEAN_TOLERANCE, "max {worst}, mean {mean}");

    // The frozen copy (rollouts, π_old) holds bf16 weights and computes the same.
    let frozen = model.frozen();
    assert_eq!(frozen.compute_dtype(), None);
    assert!(weights(&frozen).iter().all(|(d, _)| *d == DType::BF16));
    assert_eq!(to_vec(frozen.logits(&batch).unwrap()), to_vec(logits.clone()));
    // Cached decoding in bf16 (a bf16 KV cache) gives the uncached logits of the last
    // prompt token.
    let prompt = &want.tokens[0];
    let (_, last) = frozen.start(&[prompt], 1).unwrap();
    let n = prompt.len();
    let uncached = logits.slice([0..1, n - 1..n, 0..vocab]).reshape([1, vocab]);
    let (worst, _) = gaps(&to_vec(last), &to_vec(uncached));
    assert!(worst < 1e-5, "cached and uncached bf16 logits differ by {worst}");
}

#[test]
fn master_weights_keep_updates_that_bf16_would_round_away() {
    let (_, device) = device();
    let device = device.autodiff();
    let want = reference("qwen3-tiny-untied");
    let batch = TokenBatch::new(want.tokens.clone(), want.pad_id).unwrap();
    let from: Vec<usize> = want.tokens.iter().map(|_| 1).collect();
    let gradients = |model: &Decoder| {
        let loss = model.log_probs_from(&batch, 0.6, &from).unwrap().sum().neg();
        assert_eq!(loss.dtype(), DType::F32);
        GradientsParams::from_grads(loss.backward(), model)
    };
    let plain = load_hf_dir(fixture("qwen3-tiny-untied"), &device).unwrap().0;
    let mixed = plain.clone().with_compute_dtype(DType::BF16);

    // Gradients: f32, and close to the f32 model's (bf16 rounding only).
    let (g32, g16) = (gradients(&plain), gradients(&mixed));
    let id = mixed.layers[0].self_attn.q_proj.weight.id;
    let (a, b) = (g32.get::<2>(id).unwrap(), g16.get::<2>(id).unwrap());
    assert_eq!(b.dtype(), DType::F32);
    let (a, b) = (to_vec(a), to_vec(b));
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
    let cosine = dot(&a, &b) / (dot(&a, &a) * dot(&b, &b)).sqrt();
    assert!(cosine > 0.99, "bf16-computed gradient against f32: cosine {cosine}");

    // An AdamW step of lr 1e-6 (the paper's) moves the f32 master weights; rounded to
    // bf16, nearly all of them would not have moved.
    let before = weights(&mixed);
    let stepped = AdamWConfig::new().init().step(1e-6, mixed, g16);
    assert_eq!(stepped.compute_dtype(), Some(DType::BF16), "the step keeps the compute dtype");
    let after = weights(&stepped);
    let (mut moved, mut moved_in_bf16, mut total) = (0usize, 0usize, 0usize);
    for ((d0, w0), (d1, w1)) in before.iter().zip(&after) {
        assert_eq!((*d0, *d1), (DType::F32, DType::F32), "weights stay f32 through the step");
        for (x, y) in w0.iter().zip(w1) {
            total += 1;
            moved += usize::from(x != y);
            moved_in_bf16 += usize::from(half::bf16::from_f32(*x) != half::bf16::from_f32(*y));
        }
    }
    eprintln!("lr 1e-6: {moved} of {total} f32 weights moved, {moved_in_bf16} would have in bf16");
    // Weights without a gradient (embeddings of tokens absent from the batch) move by
    // weight decay alone, below f32's resolution.
    assert!(moved as f64 > 0.5 * total as f64, "{moved} of {total} moved");
    assert!(moved > 50 * moved_in_bf16, "{moved_in_bf16} of {total} moved in bf16, {moved} in f32");
}

#[test]
fn f16_gradients_need_the_loss_scaled() {
    let (spec, device) = device();
    let device = device.autodiff();
    let want = reference("qwen3-tiny-untied");
    let batch = TokenBatch::new(want.tokens.clone(), want.pad_id).unwrap();
    let from: Vec<usize> = want.tokens.iter().map(|_| 1).collect();
    // A token's share of the loss at the paper's scale: ~1 / 400,000 tokens.
    let gradient = |model: &Decoder, scale: f32, id| {
        let loss = model.log_probs_from(&batch, 0.6, &from).unwrap().sum().neg() * (scale / 4e5);
        let grads = GradientsParams::from_grads(loss.backward(), model);
        to_vec(grads.get::<2>(id).unwrap()).iter().map(|g| g / scale).collect::<Vec<f32>>()
    };
    let plain = load_hf_dir(fixture("qwen3-tiny-untied"), &device).unwrap().0;
    let f16 = plain.clone().with_compute_dtype(DType::F16);
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
    let zeros = |x: &[f32]| x.iter().filter(|g| **g == 0.0).count();
    let id = f16.layers[0].mlp.down_proj.weight.id;
    let want = gradient(&plain, 1.0, id);
    assert_eq!(zeros(&want), 0);
    let mut cosines = Vec::new();
    for scale in [1.0, 65536.0] {
        let got = gradient(&f16, scale, id);
        let cosine = dot(&want, &got) / (dot(&want, &want) * dot(&got, &got)).sqrt();
        eprintln!(
            "{spec} f16, loss scale {scale}: cosine {cosine}, {} of {} entries zero",
            zeros(&got),
            got.len()
        );
        cosines.push((cosine, zeros(&got)));
    }
    // Unscaled, the smallest entries flush to zero; scaled by 2^16 they survive.
    let [(raw, raw_zeros), (scaled, scaled_zeros)] = cosines[..] else { unreachable!() };
    assert!(raw_zeros > 20 && scaled_zeros == 0, "zeros: {raw_zeros} unscaled, {scaled_zeros} scaled");
    assert!(raw < 0.999 && scaled > 0.9999, "cosine with f32: {raw} unscaled, {scaled} scaled");
}
