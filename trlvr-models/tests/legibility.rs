//! Legibility and drift on real decoders: the full logits equal the forward pass, the
//! junior's cross-entropy equals what `score` gives, chunking changes nothing, and a
//! junior whose embedding of half the vocabulary is scrambled reads the senior's chains
//! worse (the measurement sees the effect when it is there).

mod common;

use burn::module::Param;
use burn::prelude::*;
use common::*;
use trlvr::eval::legibility::{Chain, ChainStats, compare};
use trlvr::prelude::*;
use trlvr_models::Decoder;

#[test]
fn full_logits_equal_the_forward_pass() {
    let model = load("qwen3-tiny-untied");
    let rows = vec![vec![5u32, 17, 200, 3], vec![9, 8]];
    let logits = model.logits(&TokenBatch::new(rows.clone(), 0).unwrap()).unwrap();
    let forward = model.forward(padded(&rows, 0), &[4, 2], None).unwrap();
    assert_eq!(logits.dims(), [2, 4, 256]);
    assert!(
        max_diff(logits.clone().slice([0..1, 0..4, 0..256]), forward.clone().slice([0..1, 0..4, 0..256]))
            < 1e-5
    );
    assert!(max_diff(logits.slice([1..2, 0..2, 0..256]), forward.slice([1..2, 0..2, 0..256])) < 1e-5);
}

/// The untied tiny Qwen3 with its LM head scaled up: peaked next-token distributions
/// that depend on what it reads.
fn sharp() -> Decoder {
    let mut model = load("qwen3-tiny-untied");
    let head = model.lm_head.as_mut().expect("untied");
    head.weight = Param::from_tensor(head.weight.val() * 8.0);
    model
}

fn total(stats: &[ChainStats]) -> ChainStats {
    let mut sum = ChainStats::default();
    for s in stats {
        sum.add(s);
    }
    sum
}

#[test]
fn a_junior_with_scrambled_embeddings_reads_the_seniors_chains_worse() {
    let device = device();
    let senior = sharp();
    // The junior: the senior with the input embeddings of ids 0..128 reversed.
    let mut junior = sharp();
    let perm: Vec<i64> = (0..256).map(|i| if i < 128 { 127 - i } else { i }).collect();
    let perm = Tensor::<1, Int>::from_data(TensorData::new(perm, [256]), &device);
    junior.embed_tokens.weight = Param::from_tensor(junior.embed_tokens.weight.val().select(0, perm));

    // The senior's own chains, sampled at T 1.
    let texts: Vec<String> = (0..256).map(|i| format!(" t{i}")).collect();
    let classes = TokenClasses::from_texts(&texts, &[255]).unwrap();
    let config = RolloutConfig {
        group_size: 3,
        max_new_tokens: 20,
        seed: 3,
        sampling: Sampling { temperature: 1.0, top_p: 1.0, top_k: 0 },
        ..RolloutConfig::default()
    };
    let prompts = vec![vec![1, 2, 3], vec![40, 41], vec![100]];
    let rollouts =
        RolloutEngine::solo(&senior, &classes, config).unwrap().generate(&prompts, &Solo::senior()).unwrap();
    let chains: Vec<Chain<'_>> =
        rollouts.iter().map(|r| Chain { prompt: &prompts[r.prompt], response: &r.tokens }).collect();

    let own = total(&compare(&senior, &senior, &chains, 1 << 24).unwrap());
    let scrambled = total(&compare(&senior, &junior, &chains, 1 << 24).unwrap());
    // One chain at a time (a budget below one row) gives the same sums.
    let chunked = total(&compare(&senior, &junior, &chains, 1).unwrap());
    assert!((chunked.junior_nll - scrambled.junior_nll).abs() < 1e-3 * scrambled.junior_nll);
    assert_eq!(chunked.junior_top1, scrambled.junior_top1);

    // The junior's cross-entropy is what `score` gives on the same tokens.
    for (stats, junior) in [(&own, &senior), (&scrambled, &junior)] {
        let mut nll = 0.0;
        for c in &chains {
            let seq: Vec<u32> = c.prompt.iter().chain(c.response).copied().collect();
            let lp: Vec<f32> = junior
                .score(&TokenBatch::new(vec![seq], 0).unwrap(), 1.0)
                .unwrap()
                .try_into_vec_as()
                .unwrap();
            nll -= lp[c.prompt.len()..].iter().map(|&x| f64::from(x)).sum::<f64>();
        }
        assert!((stats.junior_nll - nll).abs() < 1e-3 * nll, "{} vs {nll}", stats.junior_nll);
    }

    let n = own.tokens as f64;
    let (ce_own, ce_scrambled) = (own.junior_nll / n, scrambled.junior_nll / n);
    eprintln!(
        "junior CE {ce_own:.3} -> {ce_scrambled:.3} nats; top-1 {} -> {} of {n}; exact KL 0 -> {:.3}",
        own.junior_top1,
        scrambled.junior_top1,
        scrambled.kl_exact / n
    );
    assert_eq!(own.kl_exact, 0.0, "self-paired");
    assert_eq!(own.kl_k3, 0.0);
    assert!(ce_scrambled > ce_own + 0.5, "{ce_own} vs {ce_scrambled}");
    assert!(scrambled.junior_top1 < own.junior_top1);
    assert!(scrambled.kl_exact / n > 0.1 && scrambled.kl_k3 > 0.0);
}
