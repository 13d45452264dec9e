//! The core on a second backend: GRPO loss, gradients and the bigram policy agree with
//! the flex CPU backend. Run with `--features tch` (LibTorch) or `--features cuda`; the
//! device comes from `TRLVR_TEST_DEVICE` (default `tch`).
#![cfg(any(feature = "tch", feature = "cuda"))]

use burn::prelude::*;
use trlvr::device::parse_device;
use trlvr::prelude::*;
use trlvr::testing::{RolloutCase, check_objective, loss_and_grad};

fn other_device() -> Device {
    parse_device(&std::env::var("TRLVR_TEST_DEVICE").unwrap_or_else(|_| "tch".into())).unwrap()
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
