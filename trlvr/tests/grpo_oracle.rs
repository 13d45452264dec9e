//! GRPO loss and gradients against an independent PyTorch reference
//! (`scripts/grpo_oracle.py`, output committed in `tests/fixtures/grpo_oracle.json`).

use burn::prelude::*;
use serde::Deserialize;
use trlvr::prelude::*;

#[derive(Deserialize)]
struct Fixture {
    rows: usize,
    width: usize,
    prompt_lengths: Vec<usize>,
    owners: Vec<Vec<u8>>,
    log_probs: Vec<f32>,
    old_log_probs: Vec<f32>,
    ref_log_probs: Vec<f32>,
    advantages: Vec<f32>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    config: RefConfig,
    loss: f64,
    grad: Vec<f64>,
}

#[derive(Deserialize)]
struct RefConfig {
    clip_low: f64,
    clip_high: f64,
    dual_clip: Option<f64>,
    aggregation: String,
    horizon: usize,
    kl: Option<String>,
    kl_coef: f64,
}

impl RefConfig {
    fn grpo(&self) -> GrpoConfig {
        let aggregation = match self.aggregation.as_str() {
            "token-mean" => Aggregation::TokenMean,
            "seq-mean-token-mean" => Aggregation::SeqMeanTokenMean,
            "seq-mean-token-sum" => Aggregation::SeqMeanTokenSum,
            "seq-mean-token-sum-norm" => Aggregation::SeqMeanTokenSumNorm { horizon: self.horizon },
            other => panic!("unknown aggregation {other}"),
        };
        let mut config = GrpoConfig::default()
            .with_clip(self.clip_low, self.clip_high)
            .with_dual_clip(self.dual_clip)
            .with_aggregation(aggregation);
        if let Some(kl) = &self.kl {
            let estimator = match kl.as_str() {
                "k1" => KlEstimator::K1,
                "k2" => KlEstimator::K2,
                "k3" => KlEstimator::K3,
                other => panic!("unknown estimator {other}"),
            };
            config = config.with_kl(estimator, self.kl_coef);
        }
        config
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 2e-5 * a.abs().max(b.abs()) + 2e-6
}

#[test]
fn loss_and_gradients_match_the_pytorch_reference() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/grpo_oracle.json");
    let fx: Fixture = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let device = Device::default().autodiff();
    let owners: Vec<Vec<Owner>> = fx
        .owners
        .iter()
        .map(|row| row.iter().map(|&s| if s == 1 { Owner::Senior } else { Owner::Junior }).collect())
        .collect();
    let masks = RolloutMasks::new(&fx.prompt_lengths, &owners, fx.width, &device).unwrap();
    let tensor =
        |v: &[f32]| Tensor::<2>::from_data(TensorData::new(v.to_vec(), [fx.rows, fx.width]), &device);
    assert!(fx.cases.len() >= 16);
    for case in &fx.cases {
        let log_probs = tensor(&fx.log_probs).require_grad();
        let loss_mask = masks.loss_mask();
        let batch = ObjectiveBatch {
            log_probs: log_probs.clone(),
            old_log_probs: tensor(&fx.old_log_probs),
            ref_log_probs: Some(tensor(&fx.ref_log_probs)),
            advantages: Tensor::from_floats(fx.advantages.as_slice(), &device),
            normalizer: loss_mask.normalizer().unwrap(),
            loss_mask,
        };
        let out = Grpo::new(case.config.grpo()).unwrap().loss(&batch).unwrap();
        let loss = f64::from(out.loss.clone().try_into_vec_as::<f32>().unwrap()[0]);
        assert!(close(loss, case.loss), "{}: loss {loss} vs reference {}", case.name, case.loss);
        let grad = log_probs.grad(&out.loss.backward()).unwrap().try_into_vec_as::<f32>().unwrap();
        for (k, (&g, &r)) in grad.iter().zip(&case.grad).enumerate() {
            assert!(close(f64::from(g), r), "{}: grad[{k}] {g} vs reference {r}", case.name);
        }
    }
}

/// The fixture exercises what it claims: both clip sides and the dual clip are hit.
#[test]
fn fixture_hits_both_clip_sides_and_the_dual_clip() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/grpo_oracle.json");
    let fx: Fixture = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut low, mut high, mut dual) = (false, false, false);
    for (i, row) in fx.owners.iter().enumerate() {
        for (t, &s) in row.iter().enumerate() {
            let k = i * fx.width + fx.prompt_lengths[i] + t;
            let ratio = (fx.log_probs[k] - fx.old_log_probs[k]).exp();
            let a = fx.advantages[i];
            if s == 1 {
                low |= a < 0.0 && ratio < 0.8;
                high |= a > 0.0 && ratio > 1.28;
                dual |= a < 0.0 && ratio > 3.0;
            }
        }
    }
    assert!(low && high && dual, "low {low} high {high} dual {dual}");
}
