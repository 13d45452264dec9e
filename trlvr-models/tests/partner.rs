//! The decoder as a trlvr `Partner` / `Policy`: cached decoding equals a full forward,
//! rows do not see each other, chunked prefill equals token-by-token, scoring matches
//! transformers' logits, and gradients flow.

mod common;

use burn::prelude::*;
use common::*;
use trlvr::model::{Feed, Partner, Policy};
use trlvr::token::TokenBatch;
use trlvr_models::Decoder;

const TOLERANCE: f32 = 1e-4;

/// Next-token logits after the whole of `seq`, by a cache-free forward pass.
fn full_last(model: &Decoder, seq: &[u32]) -> Tensor<2> {
    let logits = model.forward(padded(&[seq.to_vec()], 0), &[seq.len()], None).unwrap();
    let [_, t, v] = logits.dims();
    logits.slice([0..1, t - 1..t, 0..v]).reshape([1, v])
}

fn row(t: &Tensor<2>, r: usize) -> Tensor<2> {
    let [_, v] = t.dims();
    t.clone().slice([r..r + 1, 0..v])
}

#[test]
fn incremental_decode_equals_full_forward() {
    for name in FIXTURES {
        let model = load(name);
        let prompts: [&[u32]; 2] = [&[5, 17, 200, 3], &[9, 8]];
        let (mut session, first) = model.start(&prompts, 2).unwrap();
        assert_eq!(first.dims(), [4, 256]);
        let mut seqs: Vec<Vec<u32>> =
            vec![prompts[0].to_vec(), prompts[0].to_vec(), prompts[1].to_vec(), prompts[1].to_vec()];
        let mut worst = 0.0f32;
        for (r, seq) in seqs.iter().enumerate() {
            worst = worst.max(max_diff(row(&first, r), full_last(&model, seq)));
        }
        // Eight steps; each row gets its own token, and rows 1 and 3 get two at step 3.
        for step in 0..8u32 {
            let new: Vec<Vec<u32>> = (0..4u32)
                .map(|r| {
                    let t = (step * 31 + r * 7 + 11) % 256;
                    if step == 3 && r % 2 == 1 { vec![t, (t + 1) % 256] } else { vec![t] }
                })
                .collect();
            let feeds: Vec<Feed<'_>> = new.iter().enumerate().map(|(r, t)| Feed::predict(r, t)).collect();
            let next = model.extend(&mut session, &feeds).unwrap();
            for r in 0..4 {
                seqs[r].extend(&new[r]);
                assert_eq!(session.read(r), seqs[r].len());
                worst = worst.max(max_diff(row(&next, r), full_last(&model, &seqs[r])));
            }
        }
        eprintln!("{name}: max |cached - full| = {worst:.2e}");
        assert!(worst < TOLERANCE, "{name}: {worst}");
    }
}

#[test]
fn a_row_does_not_depend_on_the_rest_of_the_batch() {
    let model = load("qwen3-tiny-untied");
    let prompts: [&[u32]; 3] = [&[1, 2, 3], &[4, 5, 6, 7, 8, 9], &[10]];
    // Alone: only row 0 is fed.
    let (mut alone, _) = model.start(&prompts, 1).unwrap();
    let a = model.extend(&mut alone, &[Feed::predict(0, &[42, 43])]).unwrap();
    // Crowded: rows 2 and 1 are fed too, with more tokens, listed first.
    let (mut crowded, _) = model.start(&prompts, 1).unwrap();
    let b = model
        .extend(
            &mut crowded,
            &[Feed::predict(2, &[7, 7, 7, 7, 7]), Feed::predict(1, &[99]), Feed::predict(0, &[42, 43])],
        )
        .unwrap();
    let diff = max_diff(a, row(&b, 2));
    eprintln!("alone vs crowded: {diff:.2e}");
    assert!(diff < 1e-5);
    // Starting alongside other prompts does not change a prompt's logits either.
    let (_, solo) = model.start(&prompts[1..2], 1).unwrap();
    let (_, all) = model.start(&prompts, 1).unwrap();
    assert!(max_diff(solo, row(&all, 1)) < 1e-5);
}

#[test]
fn catch_up_feeds_read_without_logits() {
    let model = load("qwen3-tiny-tied");
    let prompts: [&[u32]; 2] = [&[5, 17, 200], &[9, 8, 7, 6]];
    let (mut session, _) = model.start(&prompts, 1).unwrap();
    // Row 1 only reads; the logits are row 0's alone.
    let next =
        model.extend(&mut session, &[Feed::catch_up(1, &[40, 41, 42]), Feed::predict(0, &[3])]).unwrap();
    assert_eq!(next.dims(), [1, 256]);
    let mut worst = max_diff(next, full_last(&model, &[5, 17, 200, 3]));
    // What row 1 read is in its cache: its next prediction matches a full forward.
    let only_reads = model.extend(&mut session, &[Feed::catch_up(0, &[1])]).unwrap();
    assert_eq!(only_reads.dims(), [0, 256]);
    let next = model.extend(&mut session, &[Feed::predict(1, &[43])]).unwrap();
    worst = worst.max(max_diff(next, full_last(&model, &[9, 8, 7, 6, 40, 41, 42, 43])));
    assert_eq!((session.read(0), session.read(1)), (5, 8));
    assert!(worst < TOLERANCE, "{worst}");
}

#[test]
fn chunked_prefill_equals_token_by_token() {
    let model = load("llama-tiny");
    let prompt: &[u32] = &[3, 1, 4, 1, 5];
    let (mut chunked, _) = model.start(&[prompt], 1).unwrap();
    let (mut single, _) = model.start(&[prompt], 1).unwrap();
    let more = [9u32, 2, 6];
    let c = model.extend(&mut chunked, &[Feed::predict(0, &more)]).unwrap();
    let mut s = None;
    for t in &more {
        s = Some(model.extend(&mut single, &[Feed::predict(0, std::slice::from_ref(t))]).unwrap());
    }
    let mut worst = max_diff(c, s.unwrap());
    // The caches agree too: the next step is the same.
    let c = model.extend(&mut chunked, &[Feed::predict(0, &[5])]).unwrap();
    let s = model.extend(&mut single, &[Feed::predict(0, &[5])]).unwrap();
    worst = worst.max(max_diff(c, s));
    eprintln!("chunked vs token-by-token: {worst:.2e}");
    assert!(worst < TOLERANCE);
}

#[test]
fn score_matches_transformers_log_softmax() {
    for name in FIXTURES {
        let model = load(name);
        let reference = reference(name);
        let batch = TokenBatch::new(reference.tokens.clone(), 7).unwrap();
        let temperature = 0.7f32;
        let got = model.score(&batch, temperature).unwrap();
        let [b, w] = got.dims();
        let got = to_vec(got);
        let mut worst = 0.0f32;
        for r in 0..b {
            for t in 0..w {
                let want = if t == 0 || t >= reference.tokens[r].len() {
                    0.0
                } else {
                    let logits: Vec<f64> = reference.logits[r][t - 1]
                        .iter()
                        .map(|&x| f64::from(x) / f64::from(temperature))
                        .collect();
                    let max = logits.iter().copied().fold(f64::MIN, f64::max);
                    let lse = max + logits.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
                    (logits[reference.tokens[r][t] as usize] - lse) as f32
                };
                worst = worst.max((got[r * w + t] - want).abs());
            }
        }
        eprintln!("{name}: max |score - transformers log-softmax| = {worst:.2e}");
        assert!(worst < TOLERANCE);
    }
}

#[test]
fn log_probs_carry_gradients_to_the_weights() {
    let device = device().autodiff();
    let (model, _) = trlvr_models::load_hf_dir(fixture("qwen3-tiny-tied"), &device).unwrap();
    let batch = TokenBatch::new(vec![vec![1, 2, 3, 4], vec![5, 6]], 0).unwrap();
    let lp = model.log_probs(&batch, 1.0).unwrap();
    let grads = lp.sum().backward();
    let g = model.embed_tokens.weight.grad(&grads).expect("embedding has a gradient");
    assert!(g.abs().sum().into_scalar::<f32>() > 0.0);
    let g = model.layers[0].self_attn.q_norm.as_ref().unwrap().gamma.grad(&grads).expect("q_norm gradient");
    assert!(g.abs().sum().into_scalar::<f32>() > 0.0);
    // score records nothing.
    assert!(!model.score(&batch, 1.0).unwrap().is_require_grad());
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let model = load("llama-tiny");
    assert!(model.start(&[&[]], 1).is_err());
    assert!(model.start(&[&[1]], 0).is_err());
    assert!(matches!(model.start(&[&[1, 256]], 1), Err(trlvr::Error::Vocabulary(_))));
    let long: Vec<u32> = vec![1; 129];
    assert!(matches!(model.start(&[&long], 1), Err(trlvr::Error::Shape(_))));
    let (mut session, _) = model.start(&[&[1, 2]], 2).unwrap();
    assert!(model.extend(&mut session, &[Feed::predict(2, &[1])]).is_err());
    assert!(model.extend(&mut session, &[Feed::predict(0, &[])]).is_err());
    assert!(model.extend(&mut session, &[Feed::predict(0, &[1]), Feed::predict(0, &[2])]).is_err());
    // A failed extend leaves the session usable and unchanged.
    let nearly: Vec<u32> = vec![3; 127];
    assert!(model.extend(&mut session, &[Feed::predict(1, &nearly)]).is_err());
    assert_eq!(session.read(1), 2);
    assert!(model.extend(&mut session, &[Feed::predict(1, &[4])]).is_ok());
    // Nothing to feed, nothing to return.
    assert_eq!(model.extend(&mut session, &[]).unwrap().dims(), [0, 256]);
    // Another model's session is refused.
    let bigram = trlvr::bigram::BigramLm::random(256, 1.0, &device());
    let (mut foreign, _) = bigram.start(&[&[1]], 1).unwrap();
    assert!(matches!(
        model.extend(&mut foreign, &[Feed::predict(0, &[1])]),
        Err(trlvr::Error::ForeignSession { .. })
    ));
    // As a trait object.
    let boxed: Box<dyn Partner> = Box::new(model);
    assert_eq!(boxed.vocab_size(), 256);
}

#[test]
fn an_adamw_step_on_log_probs_raises_them() {
    use burn::optim::{AdamWConfig, GradientsParams};
    let device = device().autodiff();
    let (mut model, _) = trlvr_models::load_hf_dir(fixture("qwen3-tiny-untied"), &device).unwrap();
    let batch = TokenBatch::new(vec![vec![1, 2, 3, 4, 5], vec![6, 7, 8]], 0).unwrap();
    let mut optim = AdamWConfig::new().init();
    let mut totals = Vec::new();
    for _ in 0..3 {
        let total = model.log_probs(&batch, 1.0).unwrap().sum();
        totals.push(total.clone().into_scalar::<f32>());
        let grads = GradientsParams::from_grads((-total).backward(), &model);
        model = optim.step(1e-2, model, grads);
    }
    eprintln!("sum of log-probs over three steps: {totals:?}");
    assert!(totals[2] > totals[0]);
}

/// Rows retired from a session leave its batch (the cache compacts once a quarter has
/// gone) and the rows still live decode exactly as a full forward says; a retired row
/// cannot be fed.
#[test]
fn retired_rows_leave_the_batch_and_the_rest_decode_as_before() {
    for name in FIXTURES {
        let model = load(name);
        let prompts: [&[u32]; 2] = [&[5, 17, 200, 3], &[9, 8]];
        let (mut session, _) = model.start(&prompts, 3).unwrap();
        let mut seqs: Vec<Vec<u32>> = (0..6).map(|r| prompts[r / 3].to_vec()).collect();
        let mut live: Vec<usize> = (0..6).collect();
        let mut worst = 0.0f32;
        // Retire one row (no compaction yet), then two more (half gone: compacts), then one.
        for (step, retire) in [vec![1], vec![0, 4], vec![5], vec![]].into_iter().enumerate() {
            model.retire(&mut session, &retire).unwrap();
            live.retain(|r| !retire.contains(r));
            for &r in &retire {
                let err = model.extend(&mut session, &[Feed::predict(r, &[7])]).unwrap_err();
                assert!(err.to_string().contains("retired"), "{err}");
            }
            // Live rows in reverse order, the last of them with two tokens.
            let new: Vec<(usize, Vec<u32>)> = live
                .iter()
                .rev()
                .enumerate()
                .map(|(i, &r)| {
                    let t = (step as u32 * 37 + r as u32 * 11 + 3) % 256;
                    (r, if i + 1 == live.len() { vec![t, (t + 5) % 256] } else { vec![t] })
                })
                .collect();
            let feeds: Vec<Feed<'_>> = new.iter().map(|(r, t)| Feed::predict(*r, t)).collect();
            let next = model.extend(&mut session, &feeds).unwrap();
            assert_eq!(next.dims()[0], live.len());
            for (i, (r, t)) in new.iter().enumerate() {
                seqs[*r].extend(t);
                assert_eq!(session.read(*r), seqs[*r].len());
                worst = worst.max(max_diff(row(&next, i), full_last(&model, &seqs[*r])));
            }
        }
        assert!(model.retire(&mut session, &[6]).is_err(), "row 6 is out of range");
        eprintln!("{name}: max |cached - full| = {worst:.2e}");
        assert!(worst < TOLERANCE, "{name}: {worst}");
    }
}

/// Scoring from each response's start gives `score`'s values there and 0 before.
#[test]
fn score_from_is_score_past_each_rows_start() {
    for name in FIXTURES {
        let model = load(name);
        let batch = TokenBatch::new(vec![vec![5, 17, 200, 3, 9], vec![9, 8, 7]], 0).unwrap();
        let all = model.score(&batch, 0.7).unwrap().try_into_vec_as::<f32>().unwrap();
        let from = [3, 1];
        let part = model.score_from(&batch, 0.7, &from).unwrap().try_into_vec_as::<f32>().unwrap();
        for (i, (a, p)) in all.iter().zip(&part).enumerate() {
            let (r, slot) = (i / 5, i % 5);
            let want = if slot >= from[r] { *a } else { 0.0 };
            assert!((p - want).abs() < 1e-5, "{name}: row {r} slot {slot}: {p} vs {want}");
        }
        assert!(part.iter().any(|&p| p != 0.0));
        assert!(model.score_from(&batch, 0.7, &[1]).is_err(), "one start per row");
    }
}

/// Decoding moves onto Rayon's pool from outside it and stays on the caller's worker
/// inside one (the demo trains runs in pools of its own): both give the same bits, and a
/// pool of one thread, whose only worker is the caller, does not deadlock.
#[test]
fn decoding_inside_a_thread_pool_matches_decoding_outside() {
    let model = load(FIXTURES[0]);
    let decode = || {
        let prompts: [&[u32]; 2] = [&[5, 17, 200, 3], &[9, 8]];
        let (mut session, first) = model.start(&prompts, 2).unwrap();
        let next = model.extend(&mut session, &[Feed::predict(0, &[4]), Feed::predict(3, &[7, 1])]).unwrap();
        let scores = model.score(&TokenBatch::new(vec![vec![1, 2, 3, 4]], 0).unwrap(), 1.0).unwrap();
        [to_vec(first), to_vec(next), to_vec(scores)]
    };
    let outside = decode();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        assert_eq!(pool.install(decode), outside, "{threads} threads");
    }
}
