//! Real data: MATH-500 solutions against their answers, GSM8K `#### N` answers.

use serde_json::Value;
use trlvr_verifiers::answer::Answer;
use trlvr_verifiers::{Extraction, MathVerifier, equivalent, extract, normalize};

fn rows(name: &str) -> Vec<Value> {
    let path = format!("{}/../assets/math/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

fn field<'a>(row: &'a Value, key: &str) -> &'a str {
    row[key].as_str().unwrap_or_else(|| panic!("missing {key}"))
}

#[test]
fn math500_solutions_match_answers() {
    let rows = rows("math500-test.jsonl");
    assert_eq!(rows.len(), 500);
    let mut misses = Vec::new();
    for row in &rows {
        let answer = field(row, "answer");
        let extracted = extract(field(row, "solution"), Extraction::Math);
        let ok = extracted.as_deref().is_some_and(|e| equivalent(answer, e));
        if !ok {
            misses.push((field(row, "unique_id").to_string(), answer.to_string(), extracted));
        }
    }
    let rate = 1.0 - misses.len() as f64 / rows.len() as f64;
    for (id, answer, extracted) in &misses {
        eprintln!("miss {id}: answer {answer:?}, extracted {extracted:?}");
    }
    eprintln!("MATH-500 match rate: {rate:.3} ({} misses)", misses.len());
    assert!(rate >= 0.99, "match rate {rate}");
}

#[test]
fn math500_answers_parse_and_equal_their_dressed_up_selves() {
    let mut unparsed = Vec::new();
    for row in rows("math500-test.jsonl") {
        let answer = field(&row, "answer");
        assert!(equivalent(answer, answer), "{answer}");
        assert!(equivalent(answer, &format!("${answer}$.")), "{answer}");
        if Answer::parse(&normalize(answer)).is_err() {
            unparsed.push(answer.to_string());
        }
    }
    for a in &unparsed {
        eprintln!("compared as text: {a:?}");
    }
    // Words (names, directions) and numbers in other bases are compared as text.
    assert!(unparsed.len() <= 20, "{} answers did not parse", unparsed.len());
}

#[test]
fn gsm8k_answers_parse_as_numbers() {
    let rows = rows("gsm8k-test.jsonl");
    assert_eq!(rows.len(), 1319);
    for row in &rows {
        let solution = field(row, "answer");
        let n = extract(solution, Extraction::Gsm8k).expect("#### answer");
        let plain = n.replace(',', "");
        let value: f64 = plain.parse().unwrap_or_else(|_| panic!("not a number: {n:?}"));
        assert!(value.is_finite());
        assert!(equivalent(&n, &plain), "{n} vs {plain}");
        assert!(!equivalent(&n, &(value + 1.0).to_string()), "{n}");
    }
}

#[test]
fn distinct_math500_answers_are_rarely_equal() {
    let mut answers: Vec<String> =
        rows("math500-test.jsonl").iter().map(|r| field(r, "answer").to_string()).collect();
    answers.sort();
    answers.dedup();
    // Different spellings of one answer that the data set happens to contain.
    let allowed = [("-2,1", "1,-2"), ("5", "x=5")];
    for (i, a) in answers.iter().enumerate() {
        for b in &answers[i + 1..] {
            if equivalent(a, b) {
                let same_text = normalize(a) == normalize(b);
                let listed = allowed.iter().any(|&(x, y)| (x, y) == (a.as_str(), b.as_str()));
                assert!(same_text || listed, "false positive? {a:?} == {b:?}");
            }
        }
    }
}

#[test]
fn grader_reads_math500_solutions_both_ways_and_without_boxes() {
    let rows = rows("math500-test.jsonl");
    let grader = MathVerifier::grader();
    let mut misses = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let (answer, solution) = (field(row, "answer"), field(row, "solution"));
        if !grader.check(answer, solution).equal || !grader.check(solution, answer).equal {
            misses.push(answer.to_string());
        }
        // Another problem's solution, its box removed so that the free-text stages read
        // it, must not match this answer unless the two answers are the same.
        let other = &rows[(i * 7 + 3) % rows.len()];
        let unboxed = field(other, "solution").replace("\\boxed", "");
        if grader.check(answer, &unboxed).equal {
            assert!(equivalent(answer, field(other, "answer")), "{answer:?} read in {unboxed:?}");
        }
    }
    assert!(misses.is_empty(), "{misses:?}");
}
