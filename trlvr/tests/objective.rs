//! Property tests of the GRPO objective, the masks and the advantages.

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::prelude::*;
use trlvr::testing::{RolloutCase, check_objective, loss_and_grad, rollout_case};

fn device() -> Device {
    Device::default()
}

fn configs() -> Vec<GrpoConfig> {
    let aggs = [
        Aggregation::TokenMean,
        Aggregation::SeqMeanTokenMean,
        Aggregation::SeqMeanTokenSum,
        Aggregation::SeqMeanTokenSumNorm { horizon: 16 },
    ];
    let mut out = Vec::new();
    for agg in aggs {
        out.push(GrpoConfig::default().with_aggregation(agg));
        out.push(GrpoConfig::default().with_aggregation(agg).with_dual_clip(None).with_clip(0.1, 0.3));
    }
    out.push(GrpoConfig::default().with_kl(KlEstimator::K2, 0.1));
    out.push(
        GrpoConfig::default().with_kl(KlEstimator::K3, 0.1).with_aggregation(Aggregation::SeqMeanTokenMean),
    );
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Masked slots (junior, prompt, padding) never matter, even as NaN/inf; the gradient
    /// there is exactly zero; micro-batches add up; zero advantages give zero loss.
    #[test]
    fn grpo_keeps_the_masking_invariants(case in rollout_case(5, 7)) {
        for config in configs() {
            let grpo = Grpo::new(config.clone()).unwrap();
            check_objective(&grpo, &case, &device()).map_err(|v| TestCaseError::fail(format!("{config:?}: {v}")))?;
        }
    }

    /// k1's gradient at the reference is 1 per token, so it is checked without the
    /// zero-advantage rule: garbage in masked slots still changes nothing.
    #[test]
    fn k1_kl_ignores_masked_slots(case in rollout_case(4, 6)) {
        let grpo = Grpo::new(GrpoConfig::default().with_kl(KlEstimator::K1, 0.2)).unwrap();
        let (loss, grad) = loss_and_grad(&grpo, &case, &device()).unwrap();
        let mut dirty = case.clone();
        for (k, f) in case.loss_flags().iter().enumerate() {
            if !f {
                dirty.log_probs[k] = f32::NAN;
                dirty.ref_log_probs[k] = f32::INFINITY;
            }
        }
        let (dirty_loss, dirty_grad) = loss_and_grad(&grpo, &dirty, &device()).unwrap();
        prop_assert_eq!(loss.to_bits(), dirty_loss.to_bits());
        prop_assert!(grad.iter().zip(&dirty_grad).all(|(a, b)| a.to_bits() == b.to_bits()));
    }

    /// Token-mean with the global denominator: any split into micro-batches sums to the whole.
    #[test]
    fn token_mean_is_split_invariant(case in rollout_case(6, 6), cut in 0usize..6) {
        let (batch, _) = case.batch(&device());
        let grpo = Grpo::new(GrpoConfig::default()).unwrap();
        let whole = grpo.loss(&batch).unwrap().loss.into_scalar::<f32>();
        let cut = cut.min(case.rows());
        let mut parts = 0.0;
        for range in [0..cut, cut..case.rows()] {
            if !range.is_empty() {
                parts += grpo.loss(&batch.rows(range)).unwrap().loss.into_scalar::<f32>();
            }
        }
        prop_assert!((parts - whole).abs() <= 1e-5 * whole.abs() + 1e-6, "{} vs {}", parts, whole);
    }

    /// The typed masks give the loss weight of the definition (attention ∧ response ∧ senior).
    #[test]
    fn loss_mask_is_response_and_senior_and_real(case in rollout_case(5, 8)) {
        let flags = case.masks(&device()).loss_mask().tensor().clone().try_into_vec_as::<bool>().unwrap();
        prop_assert_eq!(flags, case.loss_flags());
    }

    /// A group whose rewards are all equal gets exactly zero advantages, in every mode.
    #[test]
    fn equal_rewards_give_zero_advantages(rewards in prop::collection::vec(prop_oneof![Just(0.0f32), Just(1.0), -3.0f32..3.0], 1..5), g in 1usize..9) {
        let flat: Vec<f32> = rewards.iter().flat_map(|&r| std::iter::repeat_n(r, g)).collect();
        for norm in [AdvantageNorm::GroupStd, AdvantageNorm::GroupMean, AdvantageNorm::BatchStd] {
            prop_assert!(advantages(&flat, g, norm).unwrap().iter().all(|&a| a == 0.0));
        }
    }

    #[test]
    fn std_advantages_are_centred(groups in prop::collection::vec(prop::collection::vec(-2.0f32..2.0, 4), 1..5)) {
        let flat: Vec<f32> = groups.iter().flatten().copied().collect();
        for norm in [AdvantageNorm::GroupStd, AdvantageNorm::GroupMean, AdvantageNorm::BatchStd] {
            let a = advantages(&flat, 4, norm).unwrap();
            for group in a.chunks(4) {
                prop_assert!(group.iter().sum::<f32>().abs() < 1e-4, "{:?}", group);
            }
        }
        // Unbiased std: each varying group has sample std 1 (up to the epsilon).
        let a = advantages(&flat, 4, AdvantageNorm::GroupStd).unwrap();
        for (group, raw) in a.chunks(4).zip(flat.chunks(4)) {
            if raw.iter().any(|&r| (r - raw[0]).abs() > 1e-3) {
                let m = group.iter().sum::<f32>() / 4.0;
                let var = group.iter().map(|x| (x - m).powi(2)).sum::<f32>() / 3.0;
                prop_assert!((var.sqrt() - 1.0).abs() < 1e-3, "std {}", var.sqrt());
            }
        }
    }
}

/// A group whose rewards are all equal contributes zero loss and zero gradient, while the
/// other group still learns.
#[test]
fn equal_reward_group_contributes_nothing() {
    let adv = advantages(&[1.0, 1.0, 1.0, 0.0, 1.0, 0.0], 3, AdvantageNorm::GroupStd).unwrap();
    assert_eq!(&adv[..3], &[0.0, 0.0, 0.0]);
    let case = RolloutCase {
        prompt_lengths: vec![1; 6],
        owners: vec![vec![Owner::Senior; 3]; 6],
        width: 4,
        log_probs: (0..24).map(|i| -0.1 - (i % 5) as f32 * 0.3).collect(),
        old_log_probs: (0..24).map(|i| -0.2 - (i % 3) as f32 * 0.3).collect(),
        ref_log_probs: vec![-1.0; 24],
        advantages: adv,
    };
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let (_, grad) = loss_and_grad(&grpo, &case, &device()).unwrap();
    assert!(grad[..12].iter().all(|&g| g == 0.0), "{grad:?}");
    assert!(grad[12..].iter().any(|&g| g != 0.0));
    // Only the first group: the loss is exactly zero.
    let (batch, _) = case.batch(&device());
    let first = grpo.loss(&batch.rows(0..3)).unwrap().loss.into_scalar::<f32>();
    assert_eq!(first, 0.0);
}

#[test]
fn bad_configs_and_inputs_are_refused() {
    assert!(Grpo::new(GrpoConfig::default().with_clip(1.0, 0.2)).is_err());
    assert!(Grpo::new(GrpoConfig::default().with_dual_clip(Some(0.5))).is_err());
    assert!(
        Grpo::new(GrpoConfig::default().with_aggregation(Aggregation::SeqMeanTokenSumNorm { horizon: 0 }))
            .is_err()
    );
    assert!(advantages(&[1.0, f32::NAN], 2, AdvantageNorm::GroupStd).is_err());
    assert!(advantages(&[1.0, 0.0, 1.0], 2, AdvantageNorm::GroupStd).is_err());
    // A KL objective without a reference says so.
    let case = RolloutCase {
        prompt_lengths: vec![1],
        owners: vec![vec![Owner::Senior]],
        width: 2,
        log_probs: vec![-1.0, -1.0],
        old_log_probs: vec![-1.0, -1.0],
        ref_log_probs: vec![-1.0, -1.0],
        advantages: vec![1.0],
    };
    let (mut batch, _) = case.batch(&device());
    batch.ref_log_probs = None;
    let err =
        Grpo::new(GrpoConfig::default().with_kl(KlEstimator::K3, 0.1)).unwrap().loss(&batch).unwrap_err();
    assert!(err.to_string().contains("ref_log_probs"), "{err}");
    batch.advantages = Tensor::from_floats([1.0, 2.0], &device().autodiff());
    assert!(matches!(Grpo::new(GrpoConfig::default()).unwrap().loss(&batch), Err(Error::Shape(_))));
}
