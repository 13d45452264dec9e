//! Checks per second on typical answers: every MATH-500 gold answer against the answer
//! extracted from its reference solution (the whole pipeline: extraction, normalisation,
//! parsing and comparison), with the default verifier and with the free-text grader; the
//! grader on the labelled free-text cases of `tests/data/oracle_cases.json`; and the
//! grader on hostile megabyte-sized texts.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trlvr_verifiers::{MathVerifier, equivalent};

/// (gold answer, full solution) pairs from MATH-500.
fn pairs() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/math/math500-test.jsonl");
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
    let grader = MathVerifier::grader();
    group.bench_function("grader check (free-text pipeline on both sides)", |b| {
        b.iter(|| {
            pairs
                .iter()
                .filter(|(gold, solution)| grader.check(black_box(gold), black_box(solution)).equal)
                .count()
        });
    });
    group.finish();

    let cases = oracle_cases();
    let mut group = c.benchmark_group("free_text");
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function("grader on the oracle cases", |b| {
        b.iter(|| {
            cases.iter().filter(|(gold, pred)| grader.check(black_box(gold), black_box(pred)).equal).count()
        });
    });
    group.finish();

    let mut group = c.benchmark_group("hostile");
    group.sample_size(10);
    for (name, text) in hostile() {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| b.iter(|| grader.check("5", black_box(&text)).equal));
    }
    group.finish();
}

/// (gold, pred) of the labelled free-text cases.
fn oracle_cases() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/oracle_cases.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON");
    json["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| Some((c["gold"].as_str()?.to_string(), c["pred"].as_str()?.to_string())))
        .collect()
}

/// Megabyte-sized texts built to slow a grader down.
fn hostile() -> Vec<(&'static str, String)> {
    vec![
        ("dollars", "$".repeat(1 << 20)),
        ("display openers", r"\[".repeat(1 << 19)),
        ("comma list", "1,".repeat(1 << 19)),
        ("one huge number", "9".repeat(1 << 20)),
        ("anchors", "the answer is ".repeat(1 << 16)),
        ("deep nesting in math", format!("${}1{}$", "(".repeat(1 << 19), ")".repeat(1 << 19))),
        ("equality chain", format!("$x = {}$", "1 = ".repeat(1 << 18))),
        ("letters", "A B C D ".repeat(1 << 17)),
    ]
}

criterion_group!(benches, bench);
criterion_main!(benches);
