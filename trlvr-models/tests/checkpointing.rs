//! Burn's activation checkpointing (`Device::gradient_checkpointing`, the trainer's
//! `gradient_checkpointing` switch) changes what backward keeps, not what it computes:
//! the log-prob gradients of a tiny checkpoint equal those without it, every parameter.

mod common;

use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::prelude::*;
use burn::tensor::GradientCheckpointingStrategy;
use common::{fixture, to_vec};
use trlvr::model::{Partner, Policy};
use trlvr::token::TokenBatch;
use trlvr_models::load_hf_dir;

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
