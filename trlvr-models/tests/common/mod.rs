//! Shared helpers of the integration tests: fixtures and tolerances.
#![allow(dead_code)]

pub mod gguf;

use std::path::PathBuf;

use burn::prelude::*;
use trlvr_models::{Decoder, load_hf_dir};

/// The tiny checkpoints written by `scripts/make_tiny_models.py`.
pub const FIXTURES: [&str; 4] = ["qwen3-tiny-tied", "qwen3-tiny-untied", "llama-tiny", "qwen2-tiny"];

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub fn device() -> Device {
    Device::default()
}

pub fn load(name: &str) -> Decoder {
    load_hf_dir(fixture(name), &device()).expect("fixture loads").0
}

/// `reference.json`: a right-padded token batch and transformers' logits at each row's
/// real positions.
#[derive(Debug, serde::Deserialize)]
pub struct Reference {
    pub tokens: Vec<Vec<u32>>,
    pub pad_id: u32,
    pub logits: Vec<Vec<Vec<f32>>>,
}

pub fn reference(name: &str) -> Reference {
    let text = std::fs::read_to_string(fixture(name).join("reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `[rows, width]` ids, right-padded with `pad`.
pub fn padded(rows: &[Vec<u32>], pad: u32) -> Tensor<2, Int> {
    let width = rows.iter().map(Vec::len).max().unwrap();
    let flat: Vec<i64> = rows
        .iter()
        .flat_map(|r| r.iter().map(|&t| t as i64).chain(std::iter::repeat_n(pad as i64, width - r.len())))
        .collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), width]), &device())
}

pub fn to_vec<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// Largest absolute difference between two float tensors of one shape.
pub fn max_diff<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    assert_eq!(a.dims(), b.dims());
    (a - b).abs().max().into_scalar::<f32>()
}
