//! The tandem engine on real transformer decoders with KV caches (tiny Qwen3 checkpoints
//! from trlvr-models' fixtures): every recorded log-prob equals its author's
//! teacher-forced log-prob of the finished sequence, for random schedules, lengths and
//! batch mixes, so every catch-up mode leaves both caches exact.

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::prelude::*;
use trlvr::schedule::replay;
use trlvr_models::{Decoder, load_hf_dir};

fn fixture(name: &str) -> Decoder {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/trlvr-models/tests/fixtures/");
    load_hf_dir(format!("{dir}{name}"), &Device::default()).unwrap().0
}

/// 256 ids: every third starts a word, 10 and 11 end paragraphs, 254 and 255 are EOS.
fn classes() -> TokenClasses {
    let texts: Vec<String> = (0..256)
        .map(|i| match i {
            10 | 11 => "\n\n".to_string(),
            _ if i % 3 == 0 => format!(" w{i}"),
            _ => format!("p{i}"),
        })
        .collect();
    TokenClasses::from_texts(&texts, &[254, 255]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn catch_up_keeps_both_caches_exact(
        seed in any::<u64>(), p in 0.0f64..=1.0, k in 1usize..5, g in 1usize..4, n_prompts in 1usize..3,
        max in 1usize..24, which in 0usize..3, mode in 0usize..3, concurrent in any::<bool>(), host_sampling in any::<Option<bool>>(),
    ) {
        let (senior, junior, classes) = (fixture("qwen3-tiny-tied"), fixture("qwen3-tiny-untied"), classes());
        let schedule: Box<dyn HandoffSchedule> = match which {
            0 => Box::new(WordBoundary::new(p, k).unwrap()),
            1 => Box::new(TokenBernoulli::new(p).unwrap()),
            _ => Box::new(StepAlternation { first: Owner::Senior, max_rounds: k }),
        };
        let prompts: Vec<Vec<TokenId>> = vec![vec![1, 2, 3, 4, 5], vec![9], vec![30, 31, 32]][..n_prompts].to_vec();
        let config = RolloutConfig {
            group_size: g, max_new_tokens: max, seed, other_log_probs: true, concurrent, host_sampling,
            catch_up: [CatchUp::Lazy, CatchUp::Piggyback, CatchUp::Eager][mode],
            ..RolloutConfig::default()
        };
        let engine = RolloutEngine::new(&senior, &junior, &classes, config).unwrap();
        let rollouts = engine.generate(&prompts, schedule.as_ref()).unwrap();
        let sequences: Vec<Vec<TokenId>> =
            rollouts.iter().map(|r| prompts[r.prompt].iter().chain(&r.tokens).copied().collect()).collect();
        let batch = TokenBatch::new(sequences, 0).unwrap();
        let width = batch.width();
        let s = senior.score(&batch, 0.6).unwrap().try_into_vec_as::<f32>().unwrap();
        let j = junior.score(&batch, 0.6).unwrap().try_into_vec_as::<f32>().unwrap();
        for (i, r) in rollouts.iter().enumerate() {
            prop_assert_eq!(&replay(schedule.as_ref(), &classes, &r.tokens, seed, r.row_key).0, &r.owners);
            let p0 = prompts[r.prompt].len();
            let other = r.other_log_probs.as_ref().unwrap();
            for (t, owner) in r.owners.iter().enumerate() {
                let (mine, theirs) = match owner { Owner::Senior => (&s, &j), Owner::Junior => (&j, &s) };
                let (want, got) = (mine[i * width + p0 + t], r.log_probs[t]);
                prop_assert!((want - got).abs() < 1e-4, "row {} token {}: recorded {} vs teacher-forced {}", i, t, got, want);
                prop_assert!((theirs[i * width + p0 + t] - other[t]).abs() < 1e-4);
            }
        }
    }
}

/// Batch independence with real caches: a prompt's rollouts are the same alone or in a batch.
#[test]
fn rows_do_not_depend_on_their_batch_with_real_caches() {
    let (senior, junior, classes) = (fixture("qwen3-tiny-tied"), fixture("qwen3-tiny-untied"), classes());
    let config = RolloutConfig { group_size: 2, max_new_tokens: 16, seed: 3, ..RolloutConfig::default() };
    let engine = RolloutEngine::new(&senior, &junior, &classes, config).unwrap();
    let prompts = vec![vec![7, 8, 9, 10, 11, 12, 13], vec![40, 41]];
    let together = engine.generate(&prompts, &WordBoundary::default()).unwrap();
    let alone = engine.generate(&prompts[1..], &WordBoundary::default()).unwrap();
    for (a, b) in together[2..].iter().zip(&alone) {
        assert_eq!(a.tokens, b.tokens);
        assert_eq!(a.owners, b.owners);
        // Tokens are identical; log-probs differ only by f32 rounding (other matmul
        // shapes for other batch sizes; 1.1e-5 seen), hence the exact-cache tolerance.
        let diff = a.log_probs.iter().zip(&b.log_probs).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(diff < 1e-4, "log-probs differ by {diff}");
    }
}
