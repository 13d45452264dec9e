//! The tempered junior's logits are the inner model's divided by T plus its fixed noise,
//! in every call, and it drops into the tandem engine as a junior.

use burn::prelude::*;
use trlvr::prelude::*;
use trlvr::rollout::{RolloutConfig, RolloutEngine};
use trlvr_tempered_junior::Tempered;

fn inner(device: &Device) -> BigramLm {
    BigramLm::new(
        &[
            [0.5, 2.0, -1.0, 0.0, 0.3],
            [1.0, -0.5, 0.0, 2.5, -2.0],
            [0.0, 0.0, 3.0, -1.0, 1.0],
            [-1.5, 1.0, 0.5, 0.0, 0.7],
            [0.2, 0.1, 0.0, -0.3, 0.0],
        ],
        device,
    )
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5 * x.abs().max(y.abs()) + 1e-6)
}

#[test]
fn logits_are_the_inner_models_over_t_in_every_call() {
    let device = Device::default();
    let t = 2.5;
    let junior = Tempered::new(inner(&device), t, 0.0, 0).unwrap();
    let model = inner(&device);
    let prompts: [&[TokenId]; 2] = [&[0, 3], &[1]];
    let (mut a, la) = junior.start(&prompts, 2).unwrap();
    let (mut b, lb) = model.start(&prompts, 2).unwrap();
    assert!(close(&values(la), &values(lb / t)));
    let feeds = [Feed::predict(1, &[2, 4]), Feed::catch_up(0, &[1]), Feed::predict(3, &[0])];
    let (ea, eb) = (junior.extend(&mut a, &feeds).unwrap(), model.extend(&mut b, &feeds).unwrap());
    assert_eq!(ea.dims(), [2, 5]);
    assert!(close(&values(ea), &values(eb / t)));
    let batch = TokenBatch::new(vec![vec![0, 1, 2, 3], vec![4, 2]], 0).unwrap();
    assert!(close(&values(junior.logits(&batch).unwrap()), &values(model.logits(&batch).unwrap() / t)));
    // Scoring at sampling temperature 0.6 is the inner model's at 0.6 · T.
    let sa = values(junior.score(&batch, 0.6).unwrap());
    assert!(close(&sa, &values(model.score(&batch, 0.6 * t).unwrap())));
    assert!(!close(&sa, &values(model.score(&batch, 0.6).unwrap())), "the temperature changes the scores");
}

#[test]
fn noise_is_fixed_by_the_seed_and_scoring_matches_it() {
    let device = Device::default();
    let (t, sigma) = (1.5, 0.8);
    let junior = Tempered::new(inner(&device), t, sigma, 7).unwrap();
    let batch = TokenBatch::new(vec![vec![0, 1, 2, 3, 4]], 0).unwrap();
    let logits = values(junior.logits(&batch).unwrap());
    let base = values(inner(&device).logits(&batch).unwrap() / t);
    let shift: Vec<f32> = logits.iter().zip(&base).map(|(a, b)| a - b).collect();
    // One perturbation per vocabulary id, the same at every position, not all zero.
    for position in shift.chunks(5) {
        assert!(close(position, &shift[..5]));
    }
    assert!(shift[..5].iter().any(|s| s.abs() > 1e-3));
    let again = Tempered::new(inner(&device), t, sigma, 7).unwrap();
    assert_eq!(values(again.logits(&batch).unwrap()), logits, "same seed, same noise");
    let other = Tempered::new(inner(&device), t, sigma, 8).unwrap();
    assert_ne!(values(other.logits(&batch).unwrap()), logits, "another seed, other noise");
    // The step logits carry the same noise as the teacher-forced ones.
    let (_, start) = junior.start(&[&[2]], 1).unwrap();
    assert!(close(&values(start), &logits[2 * 5..3 * 5]));
    // score() is the log-softmax of those logits at the given temperature.
    let scores = values(junior.score(&batch, 0.7).unwrap());
    for p in 1..5 {
        let row = &logits[(p - 1) * 5..p * 5];
        let lse = row.iter().map(|l| (l / 0.7).exp()).sum::<f32>().ln();
        let expected = row[batch.rows()[0][p] as usize] / 0.7 - lse;
        assert!((scores[p] - expected).abs() < 1e-5, "position {p}: {} vs {expected}", scores[p]);
    }
}

#[test]
fn bad_settings_are_refused() {
    let device = Device::default();
    for (t, sigma, what) in [(0.0, 0.0, "temperature"), (f32::NAN, 0.0, "temperature"), (1.0, -1.0, "noise")]
    {
        let err = Tempered::new(inner(&device), t, sigma, 0).unwrap_err().to_string();
        assert!(err.contains(what), "{err}");
    }
}

#[test]
fn drops_into_the_tandem_engine() {
    let device = Device::default();
    let classes = TokenClasses::from_texts(&[" a", " b", "c", "d", "<eos>"], &[4]).unwrap();
    let senior = BigramLm::new(&[[0.0, 1.0, 0.0, 1.0, -1.0]; 5], &device);
    let config = RolloutConfig { group_size: 4, max_new_tokens: 12, seed: 3, ..RolloutConfig::default() };
    let prompts = [vec![0, 1], vec![2]];
    let schedule = TokenBernoulli::new(0.5).unwrap();
    let run = |junior: &dyn Partner| {
        RolloutEngine::new(&senior, junior, &classes, config.clone())
            .unwrap()
            .generate(&prompts, &schedule)
            .unwrap()
    };
    // T = 1 without noise is the inner model itself, token for token.
    let plain = inner(&device);
    assert_eq!(run(&Tempered::new(inner(&device), 1.0, 0.0, 0).unwrap()), run(&plain));
    // At T = 3 the junior's recorded log-probs are those of the tempered distribution.
    let t = 3.0;
    let rollouts = run(&Tempered::new(inner(&device), t, 0.0, 0).unwrap());
    let table = values(plain.table.val());
    let temp = config.sampling.temperature;
    let mut checked = 0;
    for r in &rollouts {
        let mut previous = *prompts[r.prompt].last().unwrap();
        for ((&token, &owner), &lp) in r.tokens.iter().zip(&r.owners).zip(&r.log_probs) {
            if owner == Owner::Junior {
                let row = &table[previous as usize * 5..previous as usize * 5 + 5];
                let lse = row.iter().map(|l| (l / t / temp).exp()).sum::<f32>().ln();
                let expected = row[token as usize] / t / temp - lse;
                assert!((lp - expected).abs() < 1e-4, "{lp} vs {expected}");
                checked += 1;
            }
            previous = token;
        }
    }
    assert!(checked > 3, "junior wrote only {checked} tokens");
}
