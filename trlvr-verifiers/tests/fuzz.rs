//! The grader under hostile text (`trlvr::testing::fuzz`): labelled answer pairs mutated
//! byte by byte. Every input gets a verdict, fast (a slow one fails), without a panic or
//! an allocation over 16 MiB.

use std::time::Duration;

use trlvr::testing::fuzz::{AllocationGuard, Target, fuzz};
use trlvr_verifiers::{MathVerifier, check};

#[global_allocator]
static GUARD: AllocationGuard = AllocationGuard;

/// `gold \0 prediction` for the first cases of each class of the labelled fixture.
fn seeds() -> Vec<Vec<u8>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/oracle_cases.json");
    let fixture: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut per_class = std::collections::BTreeMap::<String, usize>::new();
    let mut seeds = Vec::new();
    for case in fixture["cases"].as_array().unwrap() {
        let count = per_class.entry(case["class"].as_str().unwrap().to_string()).or_default();
        *count += 1;
        if *count <= 4 {
            seeds.push(
                format!("{}\0{}", case["gold"].as_str().unwrap(), case["pred"].as_str().unwrap())
                    .into_bytes(),
            );
        }
    }
    seeds
}

#[test]
fn fuzz_verifier_input() {
    // A check takes microseconds; a quarter second is a blow-up, not a slow machine.
    let target = Target::new("verifier", seeds())
        .allocation_limit(16 << 20)
        .slow(Duration::from_millis(250))
        .tokens(&[
            "\\boxed{",
            "\\frac{",
            "}{",
            "\\sqrt",
            "\\left(",
            "\\right)",
            "\\begin{pmatrix}",
            "\\end{pmatrix}",
            "&",
            "\\\\",
            "$",
            "$$",
            "\\(",
            "\\)",
            "^",
            "_",
            "\\pi",
            "\\infty",
            "\\cup",
            "\\le",
            "%",
            "\\%",
            "\\text{",
            "The answer is",
            "#### ",
            "Final Answer:",
            "(A)",
            "=",
            "/",
            "*",
            "0.",
            "e-",
            "{{{{{{{{",
            "((((((((",
        ]);
    let grader = MathVerifier::grader();
    let gsm8k = MathVerifier::gsm8k();
    fuzz(target, |bytes| {
        let text = String::from_utf8_lossy(bytes);
        let (gold, pred) = text.split_once('\0').unwrap_or((&text, ""));
        check(gold, pred);
        grader.check(gold, pred);
        gsm8k.check(gold, pred);
        Ok(())
    });
}
