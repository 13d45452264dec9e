//! Activation checkpointing changes what backward keeps, not what it computes: with
//! Burn's (`Device::gradient_checkpointing`, the trainer's `gradient_checkpointing`
//! switch) and with the decoder's per layer (`Decoder::with_layer_checkpointing`), the
//! log-prob gradients of the tiny checkpoints equal those without it, every parameter.

mod common;

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::GradientCheckpointingStrategy;
use common::{fixture, to_vec};
use trlvr::model::{Partner, Policy};
use trlvr::token::TokenBatch;
use trlvr_models::{Decoder, load_hf_dir};

/// Every parameter's gradient, in visiting order.
struct Collect<'g> {
    grads: &'g GradientsParams,
    out: Vec<Vec<f32>>,
}

impl ModuleVisitor for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.out.push(self.grads.get::<D>(param.id).map(to_vec).unwrap_or_default());
    }
}

fn gradients(name: &str, device: &Device) -> Vec<Vec<f32>> {
    let model = load_hf_dir(fixture(name), device).unwrap().0;
    // The weights carry the device's strategy (what the trainer checks).
    assert_eq!(model.device().gradient_checkpointing_strategy(), device.gradient_checkpointing_strategy());
    let batch = TokenBatch::new(vec![vec![5, 17, 200, 3, 9, 8, 1, 44], vec![9, 8, 7, 1]], 0).unwrap();
    let log_probs = model.log_probs_from(&batch, 0.6, &[2, 1]).unwrap();
    // Weights per position, so the gradient is not that of a plain sum.
    let weights = Tensor::<2>::from_data(
        TensorData::new((0..16).map(|i| 0.5 + (i % 5) as f32 * 0.25).collect::<Vec<_>>(), [2, 8]),
        &model.device(),
    );
    let grads = GradientsParams::from_grads((log_probs * weights).sum().backward(), &model);
    let mut collect = Collect { grads: &grads, out: Vec::new() };
    model.visit(&mut collect);
    collect.out
}

#[test]
fn checkpointed_gradients_equal_the_plain_ones() {
    let plain = Device::flex().autodiff();
    let checkpointed = plain.clone().gradient_checkpointing();
    assert_eq!(checkpointed.gradient_checkpointing_strategy(), Some(GradientCheckpointingStrategy::Balanced));
    for name in ["qwen3-tiny-untied", "llama-tiny"] {
        let (want, got) = (gradients(name, &plain), gradients(name, &checkpointed));
        assert_eq!(want.len(), got.len());
        assert!(
            want.iter().all(|g| !g.is_empty() && g.iter().any(|&v| v != 0.0)),
            "{name}: every weight gets a gradient"
        );
        let worst = want
            .iter()
            .zip(&got)
            .flat_map(|(w, g)| w.iter().zip(g).map(|(a, b)| (a - b).abs()))
            .fold(0.0f32, f32::max);
        eprintln!("{name}: max |gradient difference| with checkpointing = {worst:e}");
        assert!(worst <= 1e-6, "{name}: {worst}");
    }
}

/// Every parameter's gradient of `Σ w ⊙ log_probs` through `Policy::scored_from` (the
/// trainer's path), and the log-probs.
fn scored_gradients(model: &Decoder, batch: &TokenBatch, from: &[usize]) -> (Vec<f32>, Vec<Vec<f32>>) {
    let scored = model.scored_from(batch, 0.6, from).unwrap();
    let values = to_vec(scored.values.clone());
    let [b, t] = scored.values.dims();
    let weights = Tensor::<2>::from_data(
        TensorData::new((0..b * t).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect::<Vec<_>>(), [b, t]),
        &model.device(),
    );
    let grads = scored.gradients(weights, model).unwrap();
    let mut collect = Collect { grads: &grads, out: Vec::new() };
    model.visit(&mut collect);
    (values, collect.out)
}

#[test]
fn per_layer_checkpointing_gives_the_same_values_and_gradients() {
    let device = Device::flex().autodiff();
    // Rows of different lengths (packed), scored from different positions, long enough
    // for several attention blocks of 3 queries (the recomputed attention inside).
    let batch = TokenBatch::new(
        vec![(0..13).map(|i| (i * 37 + 5) % 250).collect(), vec![9, 8, 7, 1, 44, 3], (0..10).collect()],
        0,
    )
    .unwrap();
    let from = [2, 1, 4];
    for name in ["qwen3-tiny-tied", "qwen3-tiny-untied", "llama-tiny", "qwen2-tiny"] {
        let model = load_hf_dir(fixture(name), &device).unwrap().0.with_query_block(3);
        let (want_values, want) = scored_gradients(&model, &batch, &from);
        let layered = model.with_layer_checkpointing(true);
        assert!(layered.layer_checkpointing());
        let (values, got) = scored_gradients(&layered, &batch, &from);
        // The first pass runs outside autodiff, where flex (x86-64) multiplies with its own
        // kernels: the same values to rounding.
        assert_eq!(values.len(), want_values.len());
        for (a, b) in values.iter().zip(&want_values) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{name}: values {a} and {b}");
        }
        assert_eq!(want.len(), got.len());
        assert!(
            want.iter().all(|g| !g.is_empty() && g.iter().any(|&v| v != 0.0)),
            "{name}: every weight gets a gradient"
        );
        let (mut worst, mut scale) = (0.0f32, 0.0f32);
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(w.len(), g.len());
            for (a, b) in w.iter().zip(g) {
                worst = worst.max((a - b).abs());
                scale = scale.max(a.abs());
            }
        }
        eprintln!("{name}: max |gradient difference| per layer = {worst:e} (largest gradient {scale:e})");
        assert!(worst <= 1e-5 * scale.max(1.0), "{name}: {worst}");
    }
    // Burn's checkpointing and the decoder's are not combined.
    let burn = load_hf_dir(fixture("llama-tiny"), &device.gradient_checkpointing()).unwrap().0;
    let err = burn.with_layer_checkpointing(true).scored_from(&batch, 0.6, &from).unwrap_err();
    assert!(err.to_string().contains("replaces Burn's"), "{err}");
}
