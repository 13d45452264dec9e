//! Logits of the tiny checkpoints equal those of Hugging Face transformers
//! (`scripts/make_tiny_models.py` wrote both), right-padded rows included.

mod common;

use burn::prelude::*;
use common::*;

const TOLERANCE: f32 = 1e-4;

/// Max |ours - transformers| over every real position of every row.
fn parity(name: &str) -> f32 {
    let model = load(name);
    let reference = reference(name);
    let lengths: Vec<usize> = reference.tokens.iter().map(Vec::len).collect();
    let logits = model.forward(padded(&reference.tokens, reference.pad_id), &lengths, None).unwrap();
    let [_, _, vocab] = logits.dims();
    let mut worst = 0.0f32;
    for (r, want) in reference.logits.iter().enumerate() {
        let got = to_vec(logits.clone().slice([r..r + 1, 0..lengths[r], 0..vocab]));
        let want: Vec<f32> = want.iter().flatten().copied().collect();
        assert_eq!(got.len(), want.len());
        let diff = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        worst = worst.max(diff);
    }
    eprintln!("{name}: max |logit diff| vs transformers = {worst:.2e}");
    worst
}

#[test]
fn qwen3_tied_matches_transformers() {
    assert!(parity("qwen3-tiny-tied") < TOLERANCE);
}

#[test]
fn qwen3_untied_matches_transformers() {
    assert!(parity("qwen3-tiny-untied") < TOLERANCE);
}

#[test]
fn llama_matches_transformers() {
    assert!(parity("llama-tiny") < TOLERANCE);
}

#[test]
fn qwen2_with_qkv_bias_matches_transformers() {
    assert!(parity("qwen2-tiny") < TOLERANCE);
}

#[test]
fn padding_ids_do_not_matter() {
    let model = load("qwen3-tiny-untied");
    let reference = reference("qwen3-tiny-untied");
    let lengths: Vec<usize> = reference.tokens.iter().map(Vec::len).collect();
    let a = model.forward(padded(&reference.tokens, 0), &lengths, None).unwrap();
    let b = model.forward(padded(&reference.tokens, 77), &lengths, None).unwrap();
    // Row 1 is padded after 7 tokens.
    let real = |t: Tensor<3>| t.slice([1..2, 0..7, 0..256]);
    assert!(max_diff(real(a), real(b)) < 1e-6);
}
