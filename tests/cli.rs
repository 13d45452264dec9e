//! The `trlvr` command line, run as a user would.

use std::io::Write;
use std::process::{Command, Stdio};

fn trlvr(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn verify_checks_every_line_and_names_bad_ones() {
    let input = [
        r#"{"gold": "\\frac{1}{2}", "pred": "so the answer is $\\boxed{0.5}$."}"#,
        r#"{"gold": "3", "pred": "The answer is 4."}"#,
        "not json",
        r#"{"gold": "(1,2]", "pred": "\\left(1, 2\\right]"}"#,
    ]
    .join("\n");
    let (code, out, err) = trlvr(&["verify", "--input", "-"], &input);
    assert_ne!(code, 0, "a bad line makes the command fail");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["equal"], true);
    assert_eq!(lines[0]["pred"], "0.5");
    assert_eq!(lines[1]["equal"], false);
    assert!(lines[2]["error"].as_str().unwrap().contains("line 3"));
    assert_eq!(lines[3]["equal"], true);
    assert!(err.contains("3 checked, 2 equal"), "{err}");
}

#[test]
fn verify_gsm8k_reads_hashes() {
    let input =
        r#"{"gold": "Natalia sold 48/2 = 24 clips.\n#### 72", "pred": "In total 72 clips.\n#### 72"}"#;
    let (code, out, _) = trlvr(&["verify", "--input", "-", "--dataset", "gsm8k"], input);
    assert_eq!(code, 0);
    assert!(out.contains(r#""equal":true"#), "{out}");
}

#[test]
fn handoff_marks_owners_on_real_text() {
    let (code, out, err) =
        trlvr(&["handoff", "--text", "One two three.\n\nFour five.", "--schedule", "step"], "");
    assert_eq!(code, 0, "{err}");
    // Step alternation: the senior writes the first paragraph, the junior the second.
    assert!(out.starts_with("[S]One two three.\n\n[J]Four five."), "{out}");
    let (code, out, _) = trlvr(&["handoff", "--text", "a b c d e f", "--json", "--p-sen", "1"], "");
    assert_eq!(code, 0);
    assert!(out.lines().all(|l| l.contains(r#""owner":"senior""#)));
}

#[test]
fn missing_files_are_clear_errors() {
    let (code, _, err) = trlvr(&["verify", "--input", "/nonexistent.jsonl"], "");
    assert_ne!(code, 0);
    assert!(err.contains("/nonexistent.jsonl"), "{err}");
    let (code, _, err) = trlvr(&["generate", "--model", "/nonexistent-model", "--prompt", "hi"], "");
    assert_ne!(code, 0);
    assert!(err.contains("/nonexistent-model"), "{err}");
}
