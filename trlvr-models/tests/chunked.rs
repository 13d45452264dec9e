//! Chunked log-probs (LM head and log-softmax per chunk of positions) equal the
//! full-logits path, values and gradients, on the transformers parity fixtures.

mod common;

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::Distribution;
use common::*;
use trlvr::model::{Policy, chunked_token_log_probs, token_log_probs};
use trlvr::token::TokenBatch;
use trlvr_models::{Decoder, load_hf_dir};

const TOLERANCE: f32 = 1e-5;

fn batch(name: &str) -> TokenBatch {
    TokenBatch::new(reference(name).tokens, 0).unwrap()
}

/// Gradients of `Σ w ⊙ log_probs` for the embedding and the first query projection.
fn grads(model: &Decoder, log_probs: Tensor<2>, weights: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
    let g = (log_probs * weights).sum().backward();
    let grad = |p: &Param<Tensor<2>>| p.val().grad(&g).expect("parameter has a gradient");
    (grad(&model.embed_tokens.weight), grad(&model.layers[0].self_attn.q_proj.weight))
}

#[test]
fn chunked_log_probs_equal_the_full_logits_path() {
    let device = device().autodiff();
    for name in FIXTURES {
        let model = load_hf_dir(fixture(name), &device).unwrap().0;
        let batch = batch(name);
        let rows: Vec<Vec<u32>> = batch.rows().to_vec();
        let (ids, lengths) = (padded(&rows, 0).to_device(&device), batch.lengths());
        let weights = Tensor::<2>::random(ids.dims(), Distribution::Default, &device);
        // Reference: today's path through the full logits.
        let full = token_log_probs(model.forward(ids.clone(), &lengths, None).unwrap(), &batch, 0.7);
        // Chunks of 3 positions cut rows in the middle; row 1 skips its first 4.
        let from: Vec<usize> = (0..rows.len()).map(|r| if r == 1 { 4 } else { 0 }).collect();
        let head = |h: Tensor<2>| {
            let [n, d] = h.dims();
            model.lm_head(h.reshape([1, n, d])).reshape([n, model.config().vocab_size])
        };
        let hidden = model.hidden(ids, &lengths, None).unwrap();
        let chunked = chunked_token_log_probs(hidden, head, &batch, 0.7, &from, 3);
        let skipped = full.clone().slice([1..2, 0..4]);
        let kept = |t: Tensor<2>| {
            let mut m = Tensor::<2>::ones(t.dims(), &device);
            m = m.slice_assign([1..2, 0..4], Tensor::zeros([1, 4], &device));
            t * m
        };
        assert!(to_vec(skipped).iter().any(|&v| v != 0.0), "{name}: the skipped slots are not trivially 0");
        let diff = max_diff(kept(full.clone()).detach(), chunked.clone().detach());
        assert!(diff < TOLERANCE, "{name}: values differ by {diff}");
        let (got_embed, got_q) = grads(&model, chunked, kept(weights.clone()));
        let (want_embed, want_q) = grads(&model, kept(full), weights);
        let de = max_diff(got_embed, want_embed);
        let dq = max_diff(got_q, want_q);
        assert!(de < TOLERANCE && dq < TOLERANCE, "{name}: gradients differ by {de}, {dq}");
    }
}

#[test]
fn policy_log_probs_keep_the_contract() {
    let device = device().autodiff();
    let name = "qwen3-tiny-untied";
    let model = load_hf_dir(fixture(name), &device).unwrap().0;
    let batch = batch(name);
    let lengths = batch.lengths();
    let ids = padded(batch.rows(), 0).to_device(&device);
    let full = token_log_probs(model.forward(ids, &lengths, None).unwrap(), &batch, 1.0);
    let got = model.log_probs(&batch, 1.0).unwrap();
    assert!(max_diff(full.detach(), got.clone().detach()) < TOLERANCE);
    // Position 0 and padding are 0; `from` past the end leaves nothing.
    let values = to_vec(got);
    let width = batch.rows().iter().map(Vec::len).max().unwrap();
    for (r, n) in lengths.iter().enumerate() {
        assert_eq!(values[r * width], 0.0);
        assert!(values[r * width + n..(r + 1) * width].iter().all(|&v| v == 0.0));
    }
    let from = vec![width; lengths.len()];
    assert!(to_vec(model.log_probs_from(&batch, 1.0, &from).unwrap()).iter().all(|&v| v == 0.0));
    assert!(model.log_probs_from(&batch, 1.0, &[0]).is_err());
}

/// Attention a few queries at a time equals one block over the whole row, values and
/// gradients, with and without right padding (the fixtures' rows differ in length).
/// Under autodiff, one block runs as plain ops differentiated by Burn and several blocks
/// as the recomputed attention, so this checks its backward on real weights.
#[test]
fn blocked_attention_equals_one_block() {
    let device = device().autodiff();
    for name in FIXTURES {
        let batch = batch(name);
        let lengths = batch.lengths();
        let run = |block: usize| {
            let model = load_hf_dir(fixture(name), &device).unwrap().0.with_query_block(block);
            let ids = padded(batch.rows(), 0).to_device(&device);
            let logits = model.forward(ids, &lengths, None).unwrap();
            let values = logits.detach();
            let g = model.log_probs(&batch, 1.0).unwrap().sum().backward();
            let grad = model.layers[0].self_attn.k_proj.weight.val().grad(&g).unwrap();
            (values, grad)
        };
        let width = batch.rows().iter().map(Vec::len).max().unwrap();
        let (want, want_grad) = run(width);
        for block in [1, 3] {
            let (got, got_grad) = run(block);
            let real = |t: Tensor<3>, r: usize| t.slice([r..r + 1, 0..lengths[r]]);
            for r in 0..lengths.len() {
                let diff = max_diff(real(got.clone(), r), real(want.clone(), r));
                assert!(diff < TOLERANCE, "{name}, block {block}, row {r}: logits differ by {diff}");
            }
            // Relative: the gradient sums over every position (its entries reach ~10).
            let scale = want_grad.clone().abs().max().into_scalar::<f32>().max(1.0);
            let diff = max_diff(got_grad, want_grad.clone()) / scale;
            assert!(diff < TOLERANCE, "{name}, block {block}: gradients differ by {diff} (relative)");
        }
    }
}

/// Blocks also cut a prefill with a cache and a catch-up after it (keys past the cached
/// ones); the logits equal those of one block.
#[test]
fn blocked_attention_with_a_cache_equals_one_block() {
    use trlvr::model::{Feed, Partner};
    let name = "qwen3-tiny-untied";
    let rows: Vec<Vec<u32>> = batch(name).rows().iter().filter(|r| r.len() > 5).cloned().collect();
    assert!(rows.len() > 1 && rows.iter().any(|r| r.len() != rows[0].len()), "rows of different lengths");
    let run = |block: usize| {
        let model = load(name).with_query_block(block);
        let prompts: Vec<&[u32]> = rows.iter().map(|r| &r[..5]).collect();
        let (mut session, first) = model.start(&prompts, 1).unwrap();
        let feeds: Vec<Feed<'_>> = rows.iter().enumerate().map(|(i, r)| Feed::predict(i, &r[5..])).collect();
        let next = model.extend(&mut session, &feeds).unwrap();
        (first, next)
    };
    let (want_first, want_next) = run(64);
    let (got_first, got_next) = run(2);
    assert!(max_diff(got_first, want_first) < TOLERANCE);
    assert!(max_diff(got_next, want_next) < TOLERANCE);
}

/// The training path that forms the LM head's gradient by hand (`Policy::scored_from`,
/// one chunk here, and `lean_token_log_probs` with chunks of 2 and 3 positions that cut
/// rows in the middle) gives the values of the full-logits path and, through its
/// surrogate, the same gradients for the trunk, the embedding and the (untied) head.
#[test]
fn hand_formed_head_gradients_equal_the_full_logits_path() {
    use trlvr::model::lean_token_log_probs;
    let device = device().autodiff();
    for name in FIXTURES {
        let model = load_hf_dir(fixture(name), &device).unwrap().0;
        let batch = batch(name);
        let rows: Vec<Vec<u32>> = batch.rows().to_vec();
        let (ids, lengths) = (padded(&rows, 0).to_device(&device), batch.lengths());
        let upstream = Tensor::<2>::random(ids.dims(), Distribution::Default, &device);
        let from: Vec<usize> = (0..rows.len()).map(|r| if r == 1 { 4 } else { 0 }).collect();
        let full = model.log_probs_from(&batch, 0.7, &from).unwrap();
        let want = full.clone().detach();
        let want_grads = (full * upstream.clone()).sum().backward();
        let mut params = vec![
            ("embed", &model.embed_tokens.weight),
            ("q_proj", &model.layers[0].self_attn.q_proj.weight),
            ("k_proj", &model.layers[0].self_attn.k_proj.weight),
        ];
        if let Some(head) = &model.lm_head {
            params.push(("lm_head", &head.weight));
        }
        for chunk in [None, Some(2), Some(3)] {
            let scored = match chunk {
                None => model.scored_from(&batch, 0.7, &from).unwrap(),
                Some(chunk) => {
                    let hidden = model.hidden(ids.clone(), &lengths, None).unwrap();
                    lean_token_log_probs(hidden, model.head_weight(), &batch, 0.7, &from, chunk)
                }
            };
            // The trainer makes the values a leaf of the objective's graph: they carry none.
            let _ = scored.values.clone().require_grad();
            let diff = max_diff(scored.values.clone(), want.clone());
            assert!(diff < TOLERANCE, "{name}, chunk {chunk:?}: values differ by {diff}");
            let got_grads = scored.surrogate(upstream.clone()).unwrap().backward();
            for (what, p) in &params {
                let want = p.val().grad(&want_grads).unwrap();
                let scale = want.clone().abs().max().into_scalar::<f32>().max(1.0);
                let diff = max_diff(p.val().grad(&got_grads).unwrap(), want) / scale;
                assert!(
                    diff < TOLERANCE,
                    "{name}, chunk {chunk:?}: {what} gradients differ by {diff} (relative)"
                );
            }
        }
    }
}
