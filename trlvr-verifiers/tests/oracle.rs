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

/// Per class, the least share of cases where we must match the labels and where we must
/// agree with math-verify: what was measured when the fixture was made (math-verify reads
/// no option letters and misses some answers that are not last in their text, hence the
/// lower agreement there; the classes of issue 52 are those it misses more often).
const FLOORS: &[(&str, f64, f64)] = &[
    ("boxed", 1.0, 1.0),
    ("false_equal", 1.0, 0.77),
    ("free_text", 0.9, 0.7),
    ("matrices", 1.0, 0.62),
    ("numbers", 1.0, 0.61),
    ("relations_intervals", 1.0, 0.87),
    ("several_answers", 1.0, 0.9),
    ("gold_solution", 1.0, 1.0),
    ("held_out", 0.9, 0.81),
    ("letters", 1.0, 0.41),
    ("math_env", 1.0, 1.0),
    ("mixed", 1.0, 0.9),
    ("prose_numbers", 1.0, 1.0),
    ("relations", 1.0, 1.0),
    ("rounding", 1.0, 1.0),
    ("unboxed_solutions", 0.93, 0.86),
];

#[test]
fn free_text_agrees_with_labels_and_math_verify() {
    let tallies = tallies();
    assert_eq!(tallies.len(), FLOORS.len(), "a floor for every class");
    eprintln!(
        "{:20} {:>5} {:>7} {:>11} {:>6} {:>13}",
        "class", "cases", "trlvr", "math-verify", "agree", "false equal"
    );
    let (mut ours, mut theirs, mut cases) = (0, 0, 0);
    for &(class, labels, agree) in FLOORS {
        let t = &tallies[class];
        let share = |n: usize| n as f64 / t.cases as f64;
        eprintln!(
            "{class:20} {:>5} {:>7.3} {:>11.3} {:>6.3} {:>6} vs {:<4}",
            t.cases,
            share(t.ours),
            share(t.theirs),
            share(t.agree),
            t.our_false_equal,
            t.their_false_equal
        );
        (ours, theirs, cases) = (ours + t.ours, theirs + t.theirs, cases + t.cases);
        assert!(share(t.ours) >= labels, "{class}: right on {} of {}", t.ours, t.cases);
        assert!(share(t.agree) >= agree, "{class}: agrees with math-verify on {} of {}", t.agree, t.cases);
        assert!(t.our_false_equal <= t.their_false_equal, "{class}: {t:?}");
    }
    eprintln!("all: {cases} cases, trlvr {ours}, math-verify {theirs} right");
}
