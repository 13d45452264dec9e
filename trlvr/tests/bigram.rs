//! The bigram test model implements Partner and Policy consistently.

use burn::prelude::*;
use trlvr::prelude::*;

fn log_softmax(row: &[f32], temperature: f32) -> Vec<f32> {
    let scaled: Vec<f64> = row.iter().map(|&x| f64::from(x / temperature)).collect();
    let max = scaled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = max + scaled.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
    scaled.iter().map(|x| (x - lse) as f32).collect()
}

#[test]
fn score_matches_a_hand_computed_log_softmax() {
    let device = Device::default();
    let table = [[0.5, 1.0, -1.0, 0.0], [2.0, 0.0, 0.1, -0.3], [0.0, 0.0, 0.0, 3.0], [1.0, -2.0, 0.7, 0.2]];
    let model = BigramLm::new(&table, &device);
    let batch = TokenBatch::new(vec![vec![0, 1, 2, 3], vec![3, 0]], 3).unwrap();
    let t = 0.6;
    let scores = model.score(&batch, t).unwrap().try_into_vec_as::<f32>().unwrap();
    for (i, row) in batch.rows().iter().enumerate() {
        assert_eq!(scores[i * 4], 0.0);
        for p in 1..4 {
            let expected = if p < row.len() {
                log_softmax(&table[row[p - 1] as usize], t)[row[p] as usize]
            } else {
                0.0
            };
            assert!(
                (scores[i * 4 + p] - expected).abs() < 1e-5,
                "row {i} pos {p}: {} vs {expected}",
                scores[i * 4 + p]
            );
        }
    }
}

#[test]
fn incremental_logits_agree_with_teacher_forcing() {
    let device = Device::default();
    let model = BigramLm::random(7, 1.0, &device);
    let prompt = [1u32, 4, 2];
    let response = [5u32, 0, 6, 3];
    let (mut session, first) = model.start(&[&prompt], 2).unwrap();
    let mut logits = vec![first.slice([0..1]).try_into_vec_as::<f32>().unwrap()];
    // Row 0 reads one token at a time; row 1 catches up on everything at once.
    for k in 0..response.len() - 1 {
        let l = model.extend(&mut session, &[Feed::predict(0, &response[k..k + 1])]).unwrap();
        logits.push(l.try_into_vec_as::<f32>().unwrap());
    }
    let caught_up = model.extend(&mut session, &[Feed::predict(1, &response[..3])]).unwrap();
    assert_eq!(caught_up.try_into_vec_as::<f32>().unwrap(), logits[3]);
    assert_eq!(session.read(0), session.read(1));

    let full: Vec<u32> = prompt.iter().chain(&response).copied().collect();
    let scores =
        model.score(&TokenBatch::new(vec![full], 0).unwrap(), 1.0).unwrap().try_into_vec_as::<f32>().unwrap();
    for (k, &tok) in response.iter().enumerate() {
        let expected = log_softmax(&logits[k], 1.0)[tok as usize];
        assert!((scores[prompt.len() + k] - expected).abs() < 1e-5);
    }
}

#[test]
fn policy_log_probs_carry_gradients_and_score_does_not() {
    let device = Device::default().autodiff();
    let model = BigramLm::random(5, 1.0, &device);
    let batch = TokenBatch::new(vec![vec![0, 1, 2], vec![3, 4]], 0).unwrap();
    let lp = model.log_probs(&batch, 1.0).unwrap();
    let grads = lp.sum().backward();
    let g = model.table.val().grad(&grads).expect("gradient on the table");
    assert!(g.abs().sum().into_scalar::<f32>() > 0.0);
    assert!(!model.score(&batch, 1.0).unwrap().is_require_grad());
}

#[test]
fn bad_input_is_an_error() {
    let device = Device::default();
    let model = BigramLm::random(3, 1.0, &device);
    assert!(model.start(&[&[7]], 1).is_err());
    assert!(model.start(&[&[]], 1).is_err());
    let (mut session, _) = model.start(&[&[0]], 1).unwrap();
    assert!(model.extend(&mut session, &[Feed::predict(4, &[0])]).is_err());
    assert!(TokenBatch::new(vec![], 0).is_err());
    // A session from another model type is refused.
    let mut foreign = Session::new(vec![1], Box::new(0u8));
    assert!(matches!(
        model.extend(&mut foreign, &[Feed::predict(0, &[1])]),
        Err(Error::ForeignSession { .. })
    ));
}
