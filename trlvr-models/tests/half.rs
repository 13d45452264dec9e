//! Half precision: a bf16 checkpoint (`scripts/make_bf16_fixture.py` rounded
//! `qwen3-tiny-untied` to bf16) loaded onto a device configured for bf16 keeps its weights
//! bf16, bit for bit, and its logits and log-probs, which come out in f32, stay within a
//! stated tolerance of transformers' f32 logits of the unrounded checkpoint; gradients
//! and an AdamW step keep the weights bf16.
//!
//! The device comes from `TRLVR_TEST_DEVICE` (default `tch` with that feature, else
//! `flex`). Device settings are per process and can be set once, before any tensor, so
//! this binary holds this one test.

mod common;

use burn::module::{ModuleVisitor, Param};
use burn::optim::{AdamWConfig, GradientsParams};
use burn::prelude::*;
use burn::tensor::{DType, FloatDType};
use common::{fixture, reference, to_vec};
use trlvr::device::parse_device;
use trlvr::model::{Partner, Policy};
use trlvr::token::TokenBatch;
use trlvr_models::load_hf_dir;

/// Bounds on |bf16 logit - f32 logit| (logits here reach ±4, mean magnitude ~1). bf16
/// keeps 8 significant bits: measured 2026-11-30 on LibTorch CPU, rounding the weights
/// alone moves the logits by up to 0.09 and computing in bf16 by up to 0.13 more (max
/// 0.21 in all, mean 0.019; see the `eprintln!`). A bf16 op on f32 data, or a lost
/// cast, would show as a mean far below or far above these.
const MAX_TOLERANCE: f32 = 0.3;
const MEAN_TOLERANCE: f32 = 0.05;

/// Every float parameter's dtype.
struct Dtypes(Vec<DType>);

impl ModuleVisitor for Dtypes {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0.push(param.val().dtype());
    }
}

/// The bf16 bits of `name` in the fixture's safetensors file.
fn checkpoint_bits(name: &str) -> Vec<u16> {
    let bytes = std::fs::read(fixture("qwen3-tiny-bf16").join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let offsets = &header[name]["data_offsets"];
    let (start, end) = (offsets[0].as_u64().unwrap() as usize, offsets[1].as_u64().unwrap() as usize);
    bytes[8 + n + start..8 + n + end].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

#[test]
fn a_bf16_checkpoint_stays_bf16_and_its_logits_are_close_to_f32() {
    let default = if cfg!(feature = "tch") { "tch" } else { "flex" };
    let spec = std::env::var("TRLVR_TEST_DEVICE").unwrap_or_else(|_| default.into());
    let mut device = parse_device(&spec).unwrap();
    device.configure(FloatDType::BF16).expect("the device takes bf16 as its float dtype");

    // 1. Loaded as bf16, the bytes of the file unchanged.
    let (model, _) = load_hf_dir(fixture("qwen3-tiny-bf16"), &device).unwrap();
    let mut dtypes = Dtypes(Vec::new());
    model.visit(&mut dtypes);
    assert!(!dtypes.0.is_empty());
    assert!(dtypes.0.iter().all(|&d| d == DType::BF16), "{spec}: {:?}", dtypes.0);
    let embed = model.embed_tokens.weight.val().into_data();
    let bits: Vec<u16> = embed.as_slice::<half::bf16>().unwrap().iter().map(|v| v.to_bits()).collect();
    assert_eq!(bits, checkpoint_bits("model.embed_tokens.weight"));

    // 2. Logits (f32 out of the partner) against transformers' f32 logits.
    let want = reference("qwen3-tiny-untied");
    let batch = TokenBatch::new(want.tokens.clone(), want.pad_id).unwrap();
    let logits = model.logits(&batch).unwrap();
    assert_eq!(logits.dtype(), DType::F32);
    let [_, _, vocab] = logits.dims();
    let (mut worst, mut total, mut count) = (0.0f32, 0.0f32, 0usize);
    let mut log_prob_worst = 0.0f32;
    let log_probs = model.score(&batch, 1.0).unwrap();
    assert_eq!(log_probs.dtype(), DType::F32);
    for (r, rows) in want.logits.iter().enumerate() {
        let n = want.tokens[r].len();
        let got = to_vec(logits.clone().slice([r..r + 1, 0..n, 0..vocab]));
        let expected: Vec<f32> = rows.iter().flatten().copied().collect();
        for (a, b) in got.iter().zip(&expected) {
            worst = worst.max((a - b).abs());
            total += (a - b).abs();
            count += 1;
        }
        // Log-probs of the next token, from the reference logits by log-sum-exp.
        let scored = to_vec(log_probs.clone().slice([r..r + 1, 0..n]));
        for p in 1..n {
            let row = &rows[p - 1];
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lse = max + row.iter().map(|x| (x - max).exp()).sum::<f32>().ln();
            let expected = row[want.tokens[r][p] as usize] - lse;
            log_prob_worst = log_prob_worst.max((scored[p] - expected).abs());
        }
    }
    let mean = total / count as f32;
    eprintln!(
        "{spec} bf16: |logit - f32| max {worst:.3e} mean {mean:.3e}; max |log-prob - f32| {log_prob_worst:.3e}"
    );
    assert!(worst > 0.0, "bf16 logits equal to f32 ones: the weights were not rounded");
    assert!(worst < MAX_TOLERANCE && mean < MEAN_TOLERANCE, "max {worst}, mean {mean}");
    assert!(log_prob_worst < MAX_TOLERANCE, "{log_prob_worst}");

    // 3. Training: the f32 log-probs carry gradients back to the bf16 weights, and an
    //    AdamW step keeps them bf16 (Burn keeps no f32 master copy: docs/memory.md).
    let trainable = load_hf_dir(fixture("qwen3-tiny-bf16"), &device.clone().autodiff()).unwrap().0;
    let from: Vec<usize> = want.tokens.iter().map(|_| 1).collect();
    let loss = trainable.log_probs_from(&batch, 0.6, &from).unwrap().sum().neg();
    assert_eq!(loss.dtype(), DType::F32);
    let grads = GradientsParams::from_grads(loss.backward(), &trainable);
    let grad = grads.get::<2>(trainable.embed_tokens.weight.id).expect("a gradient for the embedding");
    assert_eq!(grad.dtype(), DType::BF16);
    let mut optimizer = AdamWConfig::new().init();
    let stepped = optimizer.step(1e-2, trainable, grads);
    let mut dtypes = Dtypes(Vec::new());
    stepped.visit(&mut dtypes);
    assert!(dtypes.0.iter().all(|&d| d == DType::BF16), "{:?}", dtypes.0);
    let moved = stepped.embed_tokens.weight.val().into_data();
    assert_ne!(moved.as_slice::<half::bf16>().unwrap(), embed.as_slice::<half::bf16>().unwrap());
}
