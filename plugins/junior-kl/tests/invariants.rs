//! The junior-KL objective passes trlvr's testing kit, and its KL term is the k3
//! estimate of method.md §4.

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::prelude::*;
use trlvr::testing::{RolloutCase, check_objective, loss_and_grad, rollout_case};
use trlvr_junior_kl::JuniorKl;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn passes_the_kit(case in rollout_case(5, 7), beta in 0.0f64..1.0) {
        let objective = JuniorKl::new(GrpoConfig::default(), beta).unwrap();
        check_objective(&objective, &case, &Device::default()).map_err(|v| TestCaseError::fail(v.to_string()))?;
    }
}

/// With zero advantages only the KL term remains: β · mean over senior tokens of
/// exp(δ) − δ − 1, δ = log π_jun − log π_θ, computed here by hand.
#[test]
fn kl_term_is_token_mean_k3() {
    let lp = [-1.0f32, -0.5, -2.0, -0.1, -3.0, -1.5];
    let jun = [-1.2f32, -0.5, -0.5, -0.3, -2.0, -1.0];
    let case = RolloutCase {
        prompt_lengths: vec![1, 0],
        owners: vec![vec![Owner::Senior, Owner::Junior], vec![Owner::Senior, Owner::Senior, Owner::Junior]],
        width: 3,
        log_probs: lp.to_vec(),
        old_log_probs: lp.to_vec(),
        ref_log_probs: jun.to_vec(),
        advantages: vec![0.0, 0.0],
    };
    let beta = 0.25;
    let objective =
        JuniorKl::new(GrpoConfig::default().with_aggregation(Aggregation::SeqMeanTokenSum), beta).unwrap();
    let (loss, _) = loss_and_grad(&objective, &case, &Device::default()).unwrap();
    let senior = [1usize, 3, 4]; // row 0 position 1; row 1 positions 0 and 1
    let k3: f64 = senior
        .iter()
        .map(|&k| {
            let d = f64::from(jun[k] - lp[k]);
            d.exp() - d - 1.0
        })
        .sum::<f64>()
        / senior.len() as f64;
    assert!((f64::from(loss) - beta * k3).abs() < 1e-6, "{loss} vs {}", beta * k3);
}

#[test]
fn bad_configs_are_refused() {
    assert!(JuniorKl::new(GrpoConfig::default(), -1.0).is_err());
    assert!(JuniorKl::new(GrpoConfig::default().with_kl(KlEstimator::K3, 0.1), 0.1).is_err());
}

/// Linked statically, the plugin's registration is in the registry by name.
#[test]
fn registered_when_linked() {
    let registry = trlvr::plugin::Registry::with_linked();
    let objective = registry.objective("junior-kl", &serde_json::json!({ "beta": 0.01 })).unwrap();
    assert_eq!(objective.name(), "junior-kl");
}

/// Review found β defaulting to 0, silently plain GRPO: a config without β gets the
/// paper's 0.001, which moves the loss away from GRPO's.
#[test]
fn beta_defaults_to_the_papers() {
    let registry = trlvr::plugin::Registry::with_linked();
    let defaulted = registry.objective("junior-kl", &serde_json::json!({})).unwrap();
    let paper = JuniorKl::new(GrpoConfig::default(), trlvr_junior_kl::DEFAULT_BETA).unwrap();
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    assert_eq!(trlvr_junior_kl::DEFAULT_BETA, 0.001);
    let case = RolloutCase {
        prompt_lengths: vec![1],
        owners: vec![vec![Owner::Senior, Owner::Senior]],
        width: 3,
        log_probs: vec![0.0, -1.0, -0.5],
        old_log_probs: vec![0.0, -1.0, -0.5],
        ref_log_probs: vec![0.0, -3.0, -0.1],
        advantages: vec![0.5],
    };
    let device = Device::default();
    let (a, _) = loss_and_grad(&defaulted, &case, &device).unwrap();
    let (b, _) = loss_and_grad(&paper, &case, &device).unwrap();
    let (g, _) = loss_and_grad(&grpo, &case, &device).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, g);
}

/// Linked, junior-KL matches the PyTorch reference of `scripts/grpo_oracle.py`
/// (`tests/fixtures/junior_kl_oracle.json` at the workspace root; the loaded plugin is
/// checked against it in `tests/plugins_dynamic.rs`).
#[test]
fn matches_the_pytorch_reference() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/junior_kl_oracle.json");
    let fx: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let floats = |k: &str| -> Vec<f32> {
        fx[k].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect()
    };
    let case = RolloutCase {
        prompt_lengths: fx["prompt_lengths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect(),
        owners: fx["owners"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|s| if s.as_u64() == Some(1) { Owner::Senior } else { Owner::Junior })
                    .collect()
            })
            .collect(),
        width: fx["width"].as_u64().unwrap() as usize,
        log_probs: floats("log_probs"),
        old_log_probs: floats("old_log_probs"),
        ref_log_probs: floats("junior_log_probs"),
        advantages: floats("advantages"),
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + 1e-7;
    for c in fx["cases"].as_array().unwrap() {
        let config = &c["config"];
        let pg: GrpoConfig = serde_json::from_value(config["grpo"].clone()).unwrap();
        let objective = JuniorKl::new(pg, config["beta"].as_f64().unwrap()).unwrap();
        let (loss, grad) = loss_and_grad(&objective, &case, &Device::default()).unwrap();
        let name = c["name"].as_str().unwrap();
        let reference = c["loss"].as_f64().unwrap();
        assert!(close(f64::from(loss), reference), "{name}: loss {loss} vs {reference}");
        for (k, (g, r)) in grad.iter().zip(c["grad"].as_array().unwrap()).enumerate() {
            let r = r.as_f64().unwrap();
            assert!(close(f64::from(*g), r), "{name}: grad[{k}] {g} vs {r}");
        }
    }
}

/// Where the junior finds a senior token far less likely (δ = −14, k3 ≈ 13 > its clamp of
/// 10), the paper's k3 gives no gradient at all; `k3+` logs the same value and pushes
/// with k2's gradient, −δ per token; the metric counts the tokens at the clamp.
#[test]
fn k3_plus_keeps_the_gradient_the_clamp_removes() {
    let lp = [-0.1f32, -0.2, -0.3, -0.05];
    let case = RolloutCase {
        prompt_lengths: vec![0, 0],
        owners: vec![vec![Owner::Senior, Owner::Senior], vec![Owner::Senior, Owner::Junior]],
        width: 2,
        log_probs: lp.to_vec(),
        old_log_probs: lp.to_vec(),
        // Three senior tokens far below, one (row 0, position 1) close to the senior.
        ref_log_probs: vec![lp[0] - 14.0, lp[1] - 0.5, lp[2] - 14.0, lp[3] - 14.0],
        advantages: vec![0.0, 0.0],
    };
    let device = Device::default();
    let k3 = JuniorKl::new(GrpoConfig::default(), 1.0).unwrap();
    let k3_plus = k3.clone().with_estimator(KlEstimator::K3Plus);
    let (loss, grad) = loss_and_grad(&k3, &case, &device).unwrap();
    let (loss_plus, grad_plus) = loss_and_grad(&k3_plus, &case, &device).unwrap();
    assert_eq!(loss, loss_plus, "the same value");
    // Token mean over the three senior tokens: d/dlogπ of k3 is 1 − exp(δ) where unclamped.
    let mean = |g: f32| g / 3.0;
    assert_eq!([grad[0], grad[2]], [0.0, 0.0], "k3 is flat at its clamp");
    assert!((grad[1] - mean(1.0 - (-0.5f32).exp())).abs() < 1e-6, "{grad:?}");
    // k2's gradient: −δ.
    let want = [mean(14.0), mean(0.5), mean(14.0), 0.0];
    for (g, w) in grad_plus.iter().zip(want) {
        assert!((g - w).abs() < 1e-5, "{grad_plus:?} vs {want:?}");
    }
    let (batch, _) = case.batch(&device);
    let metrics = k3.loss(&batch).unwrap().metrics;
    assert!((metrics["junior_kl_clamped"] - 2.0 / 3.0).abs() < 1e-9, "{metrics:?}");
}

#[test]
fn the_estimator_is_read_from_the_config() {
    let registry = trlvr::plugin::Registry::with_linked();
    let objective = registry.objective("junior-kl", &serde_json::json!({"beta": 0.1, "kl": "k3+"}));
    assert!(objective.is_ok(), "{:?}", objective.err());
    let err = registry.objective("junior-kl", &serde_json::json!({"kl": "k4"})).unwrap_err().to_string();
    assert!(err.contains("k4") && err.contains("k3+"), "{err}");
}
