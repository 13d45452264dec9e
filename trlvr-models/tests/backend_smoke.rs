//! The decoder on a second backend: cached decoding with ragged feeds (per-row cache
//! lengths, the indexed K/V write, idle rows, catch-up rows) gives flex's logits. Run with
//! `--features tch` (LibTorch), `wgpu` or `cuda`; the device is
//! `trlvr::testing::second_device`'s (`TRLVR_TEST_DEVICE`).
#![cfg(any(feature = "tch", feature = "cuda", feature = "wgpu"))]

mod common;

use burn::prelude::*;
use common::{fixture, to_vec};
use trlvr::device::parse_device;
use trlvr::model::{Feed, Partner};
use trlvr_models::load_hf_dir;

/// Logits of every step of a ragged decode on `device`.
fn ragged_decode(name: &str, device: &Device) -> Vec<Vec<f32>> {
    let model = load_hf_dir(fixture(name), device).unwrap().0;
    let prompts: [&[u32]; 3] = [&[5, 17, 200, 3], &[9, 8], &[1]];
    let (mut session, first) = model.start(&prompts, 2).unwrap();
    let mut out = vec![to_vec(first)];
    for step in 0..6u32 {
        let tokens: Vec<Vec<u32>> = (0..6u32)
            .map(|r| (0..1 + (r + step) % 3).map(|i| (step * 31 + r * 7 + i) % 256).collect())
            .collect();
        // Rows take turns being idle; odd rows only catch up on even steps.
        let feeds: Vec<Feed<'_>> = tokens
            .iter()
            .enumerate()
            .filter(|(r, _)| !(*r as u32 + step).is_multiple_of(3))
            .map(
                |(r, t)| if r % 2 == 1 && step % 2 == 0 { Feed::catch_up(r, t) } else { Feed::predict(r, t) },
            )
            .collect();
        out.push(to_vec(model.extend(&mut session, &feeds).unwrap()));
    }
    out
}

#[test]
fn ragged_cached_decoding_agrees_with_flex() {
    let other = trlvr::testing::second_device().1;
    for name in ["qwen3-tiny-untied", "llama-tiny"] {
        let want = ragged_decode(name, &parse_device("flex").unwrap());
        let got = ragged_decode(name, &other);
        assert_eq!(want.len(), got.len());
        for (step, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(w.len(), g.len(), "{name} step {step}");
            let worst = w.iter().zip(g).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(worst < 1e-4, "{name} step {step}: {worst}");
        }
    }
}

/// Every float parameter's gradient, flattened in visiting order (zeros where none).
struct Gradients<'a>(&'a burn::optim::GradientsParams, Vec<f32>);

impl burn::module::ModuleVisitor for Gradients<'_> {
    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        match self.0.get::<D>(param.id) {
            Some(g) => self.1.extend(to_vec(g.reshape([-1]))),
            None => self.1.extend(std::iter::repeat_n(0.0, param.val().shape().num_elements())),
        }
    }
}

/// The update's half of a training step on this backend: the same rollout tokens scored
/// (f32 log-probs within 1e-4 of flex's) and differentiated through a senior-masked,
/// advantage-weighted loss (the whole gradient's cosine with flex's at least 0.9999).
#[test]
fn a_training_step_scores_and_differentiates_as_on_flex() {
    use trlvr::model::Policy;
    use trlvr::token::TokenBatch;
    let want = common::reference("qwen3-tiny-untied");
    let batch = TokenBatch::new(want.tokens.clone(), want.pad_id).unwrap();
    let from: Vec<usize> = want.tokens.iter().map(|_| 1).collect();
    let step = |device: &Device| {
        let model = load_hf_dir(fixture("qwen3-tiny-untied"), &device.clone().autodiff()).unwrap().0;
        let lp = model.log_probs_from(&batch, 1.0, &from).unwrap();
        let [rows, width] = lp.dims();
        // Advantages of either sign, and every third token the junior's (masked out).
        let weights: Vec<f32> = (0..rows * width)
            .map(|i| if i % 3 == 2 { 0.0 } else { [1.3, -0.7, 0.4][(i / width) % 3] })
            .collect();
        let weights = Tensor::<2>::from_data(TensorData::new(weights, [rows, width]), &lp.device());
        let values = to_vec(lp.clone().detach());
        let loss = (lp * weights).sum().neg() / (rows * width) as f64;
        let grads = burn::optim::GradientsParams::from_grads(loss.backward(), &model);
        let mut all = Gradients(&grads, Vec::new());
        model.visit(&mut all);
        (values, all.1)
    };
    let (spec, other) = trlvr::testing::second_device();
    let (lp_flex, g_flex) = step(&parse_device("flex").unwrap());
    let (lp_other, g_other) = step(&other);
    let worst = lp_flex.iter().zip(&lp_other).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| f64::from(*p) * f64::from(*q)).sum::<f64>();
    let cosine = dot(&g_flex, &g_other) / (dot(&g_flex, &g_flex) * dot(&g_other, &g_other)).sqrt();
    eprintln!("{spec} vs flex: log-probs max |diff| {worst:.2e}, gradient cosine {cosine:.8}");
    assert!(worst < 1e-4, "log-probs differ by {worst}");
    assert!(cosine >= 0.9999, "gradient cosine {cosine}");
}
