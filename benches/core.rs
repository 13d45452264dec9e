//! Core throughput: the GRPO loss + backward on a realistic mini-batch, and handoff
//! schedules replayed over long token streams.
//!
//! `cargo bench --bench core`

use burn::prelude::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trlvr::prelude::*;
use trlvr::schedule::replay;
use trlvr::testing::RolloutCase;

/// 8 prompts x 8 rollouts, prompt 128 + response 896 tokens, senior on every other run of 5.
fn minibatch(width: usize) -> RolloutCase {
    let rows = 64;
    let prompt = 128;
    let owners: Vec<Vec<Owner>> = (0..rows)
        .map(|i| {
            (0..width - prompt - (i % 7) * 10)
                .map(|t| if (t / 5 + i) % 2 == 0 { Owner::Senior } else { Owner::Junior })
                .collect()
        })
        .collect();
    let cells = rows * width;
    RolloutCase {
        prompt_lengths: vec![prompt; rows],
        owners,
        width,
        log_probs: (0..cells).map(|k| -0.05 - (k % 97) as f32 * 0.03).collect(),
        old_log_probs: (0..cells).map(|k| -0.06 - (k % 89) as f32 * 0.03).collect(),
        ref_log_probs: (0..cells).map(|k| -0.1 - (k % 83) as f32 * 0.03).collect(),
        advantages: (0..rows).map(|i| (i % 3) as f32 - 1.0).collect(),
    }
}

fn grpo(c: &mut Criterion) {
    let device = Device::default();
    let case = minibatch(1024);
    let mut group = c.benchmark_group("grpo");
    group.throughput(Throughput::Elements((case.rows() * case.width) as u64));
    group.sample_size(10);
    for (name, config) in [
        ("token-mean", GrpoConfig::default()),
        ("token-mean+k3", GrpoConfig::default().with_kl(KlEstimator::K3, 0.01)),
    ] {
        let objective = Grpo::new(config).unwrap();
        group.bench_function(format!("loss+backward 64x1024 {name}"), |b| {
            b.iter(|| {
                let (batch, leaf) = case.batch(&device);
                let out = objective.loss(&batch).unwrap();
                let grads = out.loss.backward();
                leaf.grad(&grads).unwrap()
            });
        });
    }
    group.finish();
}

fn schedules(c: &mut Criterion) {
    let tokenizer = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/qwen3-tokenizer/tokenizer.json");
    let classes = TokenClasses::from_file(tokenizer, &[151645, 151643]).unwrap();
    let tokens: Vec<TokenId> =
        (0..100_000u32).map(|i| (i * 7919) % 151_000).filter(|&t| !classes.is_eos(t)).collect();
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(tokens.len() as u64));
    group.bench_function("word replay, Qwen3 vocab", |b| {
        b.iter(|| replay(&WordBoundary::default(), &classes, &tokens, 1, 0))
    });
    group.bench_function("step replay, Qwen3 vocab", |b| {
        b.iter(|| replay(&StepAlternation::default(), &classes, &tokens, 1, 0))
    });
    group.finish();
    c.bench_function("TokenClasses::from_file (Qwen3)", |b| {
        b.iter(|| TokenClasses::from_file(tokenizer, &[151645]).unwrap())
    });
}

criterion_group!(benches, grpo, schedules);
criterion_main!(benches);
