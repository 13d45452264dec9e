//! The core on a second backend: GRPO loss, gradients and the bigram policy agree with
//! the flex CPU backend. Run with `--features tch` (LibTorch), `wgpu` or `cuda`; the
//! device is [`second_device`]'s (`TRLVR_TEST_DEVICE`).
#![cfg(any(feature = "tch", feature = "cuda", feature = "wgpu"))]

use burn::prelude::*;
use trlvr::device::parse_device;
use trlvr::prelude::*;
use trlvr::testing::{RolloutCase, check_objective, loss_and_grad, second_device};

fn other_device() -> Device {
    second_device().1
}

fn case() -> RolloutCase {
    RolloutCase {
        prompt_lengths: vec![2, 1, 0],
        owners: vec![
            vec![Owner::Senior, Owner::Junior, Owner::Senior],
            vec![Owner::Senior; 4],
            vec![Owner::Junior, Owner::Senior],
        ],
        width: 6,
        log_probs: (0..18).map(|i| -0.2 - (i % 7) as f32 * 0.4).collect(),
        old_log_probs: (0..18).map(|i| -0.5 - (i % 5) as f32 * 0.35).collect(),
        ref_log_probs: (0..18).map(|i| -1.0 - (i % 3) as f32 * 0.2).collect(),
        advantages: vec![1.2, -0.8, 0.5],
    }
}

#[test]
fn grpo_agrees_with_flex() {
    let flex = parse_device("flex").unwrap();
    let other = other_device();
    for config in [
        GrpoConfig::default(),
        GrpoConfig::default().with_aggregation(Aggregation::SeqMeanTokenMean).with_kl(KlEstimator::K3, 0.1),
    ] {
        let grpo = Grpo::new(config).unwrap();
        let (a, ga) = loss_and_grad(&grpo, &case(), &flex).unwrap();
        let (b, gb) = loss_and_grad(&grpo, &case(), &other).unwrap();
        assert!((a - b).abs() < 1e-5, "loss {a} vs {b}");
        assert!(ga.iter().zip(&gb).all(|(x, y)| (x - y).abs() < 1e-5));
        check_objective(&grpo, &case(), &other).unwrap();
    }
}

#[test]
fn bigram_policy_scores_and_trains() {
    let other = other_device().autodiff();
    let model = BigramLm::random(6, 1.0, &other);
    let batch = TokenBatch::new(vec![vec![0, 1, 2, 3], vec![4, 5]], 0).unwrap();
    let lp = model.log_probs(&batch, 0.6).unwrap();
    let scored = model.score(&batch, 0.6).unwrap().try_into_vec_as::<f32>().unwrap();
    assert_eq!(lp.clone().try_into_vec_as::<f32>().unwrap(), scored);
    let grads = lp.sum().backward();
    assert!(model.table.val().grad(&grads).is_some());
}

/// Sampling where the logits live (what the engine does on an accelerator) draws what the
/// host sampler draws from the same uniforms.
#[test]
fn device_sampling_agrees_with_the_host() {
    use rand::Rng;
    use trlvr::schedule::row_rng;
    let other = other_device();
    let (rows, vocab) = (16, 50);
    let host: Vec<f32> = (0..rows * vocab).map(|i| ((i * 7919 % 101) as f32 / 101.0 - 0.5) * 8.0).collect();
    let logits = Tensor::<2>::from_data(TensorData::new(host.clone(), [rows, vocab]), &other);
    for s in [Sampling::training(), Sampling::evaluation(), Sampling::greedy()] {
        let draws: Vec<f64> = (0..rows as u64).map(|r| row_rng(3, r).random::<f64>()).collect();
        let got = s.sample_rows(logits.clone(), &draws).unwrap();
        for (r, (token, lp)) in got.into_iter().enumerate() {
            let (want, want_lp) =
                s.sample(&host[r * vocab..(r + 1) * vocab], &mut row_rng(3, r as u64)).unwrap();
            assert_eq!(token, want, "{s:?} row {r}");
            assert!((lp - want_lp).abs() < 1e-5);
        }
    }
}

/// The tandem engine on this backend, sampling on the device and on the host: same
/// rollouts, and the same as on flex.
#[test]
fn rollouts_agree_across_backends_and_sampling_places() {
    let texts: Vec<String> =
        (0..8).map(|i| if i % 2 == 0 { format!(" w{i}") } else { format!("p{i}") }).collect();
    let classes = TokenClasses::from_texts(&texts, &[7]).unwrap();
    let table: Vec<f32> = (0..64).map(|i| ((i * 37 % 17) as f32 - 8.0) / 3.0).collect();
    let models = |device: &Device| {
        let t = Tensor::<2>::from_data(TensorData::new(table.clone(), [8, 8]), device);
        (BigramLm::from_tensor(t.clone()), BigramLm::from_tensor(t.flip([0])))
    };
    let run = |device: &Device, host_sampling| {
        let (senior, junior) = models(device);
        let config = RolloutConfig {
            group_size: 4,
            max_new_tokens: 20,
            seed: 2,
            host_sampling,
            ..RolloutConfig::default()
        };
        RolloutEngine::new(&senior, &junior, &classes, config)
            .unwrap()
            .generate(&[vec![0, 1], vec![3]], &WordBoundary::default())
            .unwrap()
    };
    let flex = run(&parse_device("flex").unwrap(), Some(true));
    for host_sampling in [Some(true), Some(false)] {
        let other = run(&other_device(), host_sampling);
        for (a, b) in flex.iter().zip(&other) {
            assert_eq!((&a.tokens, &a.owners), (&b.tokens, &b.owners), "{host_sampling:?}");
            assert!(a.log_probs.iter().zip(&b.log_probs).all(|(x, y)| (x - y).abs() < 1e-5));
        }
    }
}
