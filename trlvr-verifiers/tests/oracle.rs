//! Agreement with labelled free-text cases graded by math-verify (the fixture and the
//! script that wrote it: `scripts/verifier_oracle.py`, `tests/data/oracle_cases.json`).

use std::collections::BTreeMap;

use serde_json::Value;
use trlvr_verifiers::MathVerifier;

/// Per class: cases, ours right, math-verify right, ours agreeing with math-verify, our
/// false "equal"s, math-verify's false "equal"s.
#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    ours: usize,
    theirs: usize,
    agree: usize,
    our_false_equal: usize,
    their_false_equal: usize,
}

fn tallies() -> BTreeMap<String, Tally> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/oracle_cases.json");
    let text = std::fs::read_to_string(path).expect("oracle fixture");
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    let grader = MathVerifier::grader();
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for case in json["cases"].as_array().expect("cases") {
        let field = |k: &str| case[k].as_str().unwrap_or_else(|| panic!("{k}"));
        let label = case["label"].as_bool().expect("label");
        let theirs = case["math_verify"].as_bool().expect("math_verify");
        let v = grader.check(field("gold"), field("pred"));
        let t = out.entry(field("class").to_string()).or_default();
        t.cases += 1;
        t.ours += usize::from(v.equal == label);
        t.theirs += usize::from(theirs == label);
        t.agree += usize::from(v.equal == theirs);
        t.our_false_equal += usize::from(v.equal && !label);
        t.their_false_equal += usize::from(theirs && !label);
        if v.equal != label {
            eprintln!(
                "miss [{}] label {label}: {:?} / {:?}: {v:?}",
                field("class"),
                field("gold"),
                field("pred")
            );
        }
    }
    out
}

#[test]
fn free_text_agrees_with_labels_and_math_verify() {
    let tallies = tallies();
    let mut total = Tally::default();
    for (class, t) in &tallies {
        eprintln!("{class:15} {t:?}");
        total.our_false_equal += t.our_false_equal;
        total.their_false_equal += t.their_false_equal;
    }
    assert!(total.our_false_equal <= total.their_false_equal, "{total:?}");
}
