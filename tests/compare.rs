//! `trlvr compare`, run as a user would on two `eval.json` files written as `trlvr eval`
//! writes them: the table, the JSON, a folder for a file, and the refusals.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use trlvr::eval::{ChainStats, EvalConfig, ProblemResult, Report, Throughput};

/// 20 problems, n 4. Solo correct `i % 5` (A) or one more, at most 4 (B); handoff 2 of
/// 4 in both; the junior's NLL 2 (A) or 1.5 (B) nats per solo token.
fn problems(b: bool) -> Vec<ProblemResult> {
    (0..20)
        .map(|i| {
            let tokens = 30 + i;
            ProblemResult {
                id: i,
                n: 4,
                solo_correct: if b { (i % 5 + 1).min(4) } else { i % 5 },
                handoff_correct: 2,
                solo_tokens: 4 * tokens,
                handoff_tokens: 4 * tokens,
                handoff_senior_tokens: 2 * tokens,
                handoff_junior_nll: tokens as f64,
                legibility: ChainStats {
                    chains: 4,
                    chain_ce: if b { 1.5 } else { 2.0 } * 4.0,
                    chain_top1: 2.0,
                    tokens,
                    junior_nll: if b { 1.5 } else { 2.0 } * tokens as f64,
                    junior_top1: tokens / 2,
                    kl_k3: 0.1 * tokens as f64,
                    kl_exact: 0.2 * tokens as f64,
                },
                prompt_hash: Some(0xabc0 + i as u64),
            }
        })
        .collect()
}

/// Writes `dir/eval.json` as `trlvr eval` does: the report, then what it was measured with.
fn write_eval(
    dir: &Path,
    config: &EvalConfig,
    problems: Vec<ProblemResult>,
    grading: &str,
    senior: &str,
) -> PathBuf {
    let report =
        Report::from_results(config, vec![("gsm8k-test".into(), problems)], Throughput::default()).unwrap();
    let identity = |path: &str, fingerprint: &str| json!({ "path": path, "family": "Llama", "fingerprint": fingerprint });
    let mut out = serde_json::to_value(&report).unwrap();
    out["grading"] = json!(grading);
    out["models"] = json!({ "senior": identity(senior, "5e" ), "junior": identity("/models/junior", "1f"), "self_paired": false });
    out["datasets"] = json!([{ "name": "gsm8k-test", "path": "assets/math/gsm8k-test.jsonl", "layout": "Gsm8k", "problems": 20, "limit": 20 }]);
    out["template"] = json!("{question}\nPlease reason step by step.");
    out["samples"] = json!(dir.join("samples.jsonl"));
    out["wall_seconds"] = json!(12.5);
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("eval.json");
    std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
    path
}

fn trlvr(args: &[&OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .arg("compare")
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn config() -> EvalConfig {
    EvalConfig { n: 4, ks: vec![1, 4], bootstrap: 100, ..EvalConfig::default() }
}

#[test]
fn compare_prints_b_minus_a_with_paired_intervals() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compare-table");
    let a = write_eval(&root.join("base"), &config(), problems(false), "lenient", "/models/base");
    let b_config = EvalConfig { seed: 3, bootstrap: 10, ..config() }; // free to differ
    write_eval(&root.join("trained"), &b_config, problems(true), "lenient", "/models/trained");
    // B as its folder.
    let (code, out, err) = trlvr(&[a.as_ref(), root.join("trained").as_ref()]);
    assert_eq!(code, 0, "{err}");
    let row = |label: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("no {label} row:\n{out}"))
    };
    // Solo pass@1: 50 % and 70 %, +20 points, gained on 16 of 20 problems: shown.
    assert!(row("solo pass@1 (%)").starts_with("| solo pass@1 (%) | 50.0 | 70.0 | +20.0 ["), "{out}");
    assert!(row("solo pass@1 (%)").ends_with("| B > A |"), "{out}");
    assert_eq!(
        row("handoff pass@1 (%)"),
        "| handoff pass@1 (%) | 50.0 | 50.0 | +0.0 [+0.0, +0.0] | no difference shown |"
    );
    assert!(row("tax (points)").contains("| 0.0 | 20.0 | +20.0 ["), "{out}");
    assert_eq!(
        row("junior CE (nats/token)"),
        "| junior CE (nats/token) | 2.000 | 1.500 | -0.500 [-0.500, -0.500] | B < A |"
    );
    assert_eq!(out.matches("| solo pass@4 (%) |").count(), 1, "one dataset: no macro table\n{out}");
    assert!(out.contains("## gsm8k-test (20 problems)") && out.contains("B − A [95% interval]"), "{out}");
    assert!(out.contains("senior `/models/trained`, seed 3") && out.contains("grading lenient"), "{out}");

    let (code, out, err) = trlvr(&[
        a.as_ref(),
        root.join("trained").as_ref(),
        "--json".as_ref(),
        "--bootstrap".as_ref(),
        "200".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(&out).unwrap();
    let solo = &json["sets"][0]["differences"]["solo"][0];
    assert_eq!(
        (solo["k"].as_u64(), solo["b_minus_a"]["value"].as_f64(), solo["shown"].as_str()),
        (Some(1), Some(20.0), Some("B > A"))
    );
    assert_eq!(json["macro"]["junior_ce"]["b"], 1.5);
    assert_eq!((json["config"]["bootstrap"].as_u64(), json["b"]["seed"].as_u64()), (Some(200), Some(3)));
    assert_eq!(json["a"]["senior"], "/models/base");
}

#[test]
fn compare_refuses_other_settings_and_other_problems() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compare-refusals");
    let a = write_eval(&root.join("a"), &config(), problems(false), "lenient", "/models/base");
    let other = EvalConfig { max_new_tokens: 512, ..config() };
    let b = write_eval(&root.join("b"), &other, problems(true), "boxed", "/models/trained");
    let (code, out, err) = trlvr(&[a.as_ref(), b.as_ref()]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            "not comparable: different settings: max_new_tokens (A 3000, B 512), grading (A lenient, B boxed)"
        ),
        "{err}"
    );
    let fewer = write_eval(
        &root.join("fewer"),
        &config(),
        problems(true)[..10].to_vec(),
        "lenient",
        "/models/trained",
    );
    let (code, _, err) = trlvr(&[a.as_ref(), fewer.as_ref()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("not comparable: different problems: gsm8k-test: 20 problems in A, 10 in B"),
        "{err}"
    );
    let (code, _, err) = trlvr(&[a.as_ref(), root.join("missing").as_ref()]);
    assert_eq!(code, 1);
    // No such file: the error names it.
    assert!(err.contains(&format!("{}: cannot read", root.join("missing").display())), "{err}");
}
