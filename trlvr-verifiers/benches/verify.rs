//! Checks per second on typical answers: every MATH-500 gold answer against the answer
//! extracted from its reference solution (the whole pipeline: extraction, normalisation,
//! parsing and comparison).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trlvr_verifiers::{MathVerifier, equivalent};

/// (gold answer, full solution) pairs from MATH-500.
fn pairs() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/math500-test.jsonl");
    let text = std::fs::read_to_string(path).expect("MATH-500 data");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some((v["answer"].as_str()?.to_string(), v["solution"].as_str()?.to_string())))
        .collect()
}

fn bench(c: &mut Criterion) {
    let pairs = pairs();
    let verifier = MathVerifier::default();
    let mut group = c.benchmark_group("math500");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    group.bench_function("check (extract + normalise + compare)", |b| {
        b.iter(|| {
            pairs
                .iter()
                .filter(|(gold, solution)| verifier.check(black_box(gold), black_box(solution)).equal)
                .count()
        });
    });
    // The harder half of the work: answers that are equal but not identical strings.
    let dressed: Vec<(String, String)> = pairs.iter().map(|(g, _)| (g.clone(), format!("${g}$."))).collect();
    group.bench_function("equivalent (gold vs dressed-up gold)", |b| {
        b.iter(|| dressed.iter().filter(|(g, p)| equivalent(black_box(g), black_box(p))).count());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
