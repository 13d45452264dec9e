//! `trlvr demo --quick` end to end: the report's structure, every figure finite, the
//! positive control passing, plots with text and per-run files present, verdicts that
//! flip when a crafted interval crosses its threshold, and a second run reading the
//! supervised models from the cache.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn demo(out: &Path, extra: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(["demo", "--quick", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Every number under `value`, with its path; `null` where a number was expected counts
/// as not finite (serde_json writes NaN as null).
fn numbers(value: &Value, path: String, out: &mut Vec<(String, Option<f64>)>) {
    match value {
        Value::Number(n) => out.push((path, n.as_f64())),
        Value::Null => out.push((path, None)),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                numbers(v, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                numbers(v, format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn quick_demo_writes_a_complete_report() {
    let out = std::env::temp_dir().join(format!("trlvr-demo-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (ok, log) = demo(&out, &[]);
    assert!(ok, "demo failed:\n{log}");

    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for section in [
        "## Table",
        "## Positive control",
        "## Comparisons",
        "## Specificity control",
        "## KL-Reg's frontier",
        "## The paper's claims",
        "## Runs",
        "## Over training",
        "## Settings",
        "## Wall time",
    ] {
        assert!(report.contains(section), "missing {section}:\n{report}");
    }
    assert!(report.contains("**Passed.**"), "the positive control must pass:\n{report}");
    let header = "| model | solo pass@1 (%) | handoff pass@1 (%) | tax (points) | junior CE (nats) | junior top-1 (%) | drift KL (nats) | shorthand (%) |";
    assert!(report.contains(header), "{report}");
    // The table: one row per model, every cell a finite number (with its interval).
    let table: Vec<&str> =
        report.lines().skip_while(|l| *l != header).skip(2).take_while(|l| l.starts_with('|')).collect();
    let labels: Vec<&str> = table.iter().map(|l| l.split('|').nth(1).unwrap().trim()).collect();
    assert_eq!(
        labels,
        ["base", "positive control", "control, self-paired", "grpo", "trlvr", "kl-reg", "trlvr-literate"]
    );
    for row in &table {
        let cells: Vec<&str> = row.split('|').skip(2).filter(|c| !c.trim().is_empty()).collect();
        assert_eq!(cells.len(), 7, "{row}");
        for cell in cells {
            let values: Vec<f64> = cell
                .split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(|s| s.parse::<f64>().unwrap_or_else(|_| panic!("not a number in {row}: {s:?}")))
                .collect();
            assert!(!values.is_empty() && values.iter().all(|v| v.is_finite()), "{row}");
        }
    }
    // The frontier: the KL-Reg arm, then each β of the quick sweep (0.05, 1) with k3 and k3+,
    // each with its share of tokens at k3's clamp and a verdict.
    let frontier: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("| KL-Reg | seeds |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(frontier.len(), 5, "{report}");
    for (row, setting) in frontier.iter().zip([
        "k3 (the arm above)",
        "β = 0.05, k3",
        "β = 1, k3",
        "β = 0.05, k3+",
        "β = 1, k3+",
    ]) {
        assert!(row.contains(setting), "{row}");
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let clamped: f64 = cells[7].parse().unwrap_or_else(|_| panic!("clamped share in {row}"));
        assert!((0.0..=100.0).contains(&clamped), "{row}");
        assert!(["yes", "no", "cannot tell"].contains(&cells[10]), "{row}");
    }
    // The specificity sweep: the weak junior, three literate juniors, the base; each
    // partner's literacy a percentage, TRLVR's shorthand share beside it.
    let sweep: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("| TRLVR's partner in training |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(sweep.len(), 5, "{report}");
    for row in &sweep {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let literacy: f64 = cells[2].split_whitespace().next().unwrap().parse().unwrap();
        let shorthand: f64 = cells[4].parse().unwrap();
        assert!((0.0..=100.0).contains(&literacy) && (0.0..=100.0).contains(&shorthand), "{row}");
    }
    // The claims paragraph is computed: it names how many claims the intervals show.
    assert!(report.contains("This run shows "), "{report}");
    for statement in [
        "TRLVR's tax is ",
        "GRPO's solo accuracy minus the base's",
        "TRLVR's solo accuracy minus GRPO's",
        "TRLVR's junior CE is ",
        "Claim 4 is judged over the 5 KL-Reg",
    ] {
        assert!(report.contains(statement), "missing {statement:?}");
    }

    // eval.json: the table's figures are all finite.
    let eval: Value = serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
    let mut found = Vec::new();
    numbers(&eval["table"], "table".into(), &mut found);
    numbers(&eval["comparisons"], "comparisons".into(), &mut found);
    assert!(found.len() > 6 * 7 * 3);
    for (path, v) in &found {
        assert!(v.is_some_and(f64::is_finite), "{path} is {v:?}");
    }
    assert_eq!(eval["positive_control_passed"], Value::Bool(true));

    // Plots, with text: the band left of the plot area (tick labels and the axis label)
    // and the band above it (the title) hold dark pixels.
    for plot in ["reward.png", "tax.png", "junior_ce.png", "shorthand.png", "frontier.png"] {
        let bytes = std::fs::read(out.join(plot)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 1000, "{plot}");
        assert!(report.contains(&format!("![{plot}]({plot})")), "{plot} not in the report");
        let image = image::load_from_memory(&bytes).unwrap().to_luma8();
        let dark = |xs: std::ops::Range<u32>, ys: std::ops::Range<u32>| {
            xs.flat_map(|x| ys.clone().map(move |y| (x, y)))
                .filter(|&(x, y)| image.get_pixel(x, y).0[0] < 100)
                .count()
        };
        assert!(dark(0..40, 60..400) > 50, "{plot}: no y-axis label");
        assert!(dark(100..660, 0..30) > 100, "{plot}: no title");
    }
    for arm in ["grpo", "trlvr", "kl-reg", "trlvr-literate"] {
        for seed in 1..=5 {
            assert!(
                out.join("arms").join(format!("{arm}-seed{seed}")).join("eval.json").exists(),
                "{arm} {seed}"
            );
        }
    }
    for run in ["grpo-seed1", "trlvr-seed2", "kl-reg-seed3", "trlvr-literate-seed4"] {
        let dir = out.join("arms").join(run);
        let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        assert!(metrics.lines().count() > 2, "{run}");
        let first: Value = serde_json::from_str(metrics.lines().next().unwrap()).unwrap();
        assert!(first["probe"]["tax"].is_number(), "{run}: step 0 is a probe of the base");
        assert!(dir.join("eval.json").exists() && dir.join("model/model.safetensors").exists(), "{run}");
        assert_eq!(std::fs::read_dir(dir.join("checkpoints")).unwrap().count(), 1, "{run}");
    }

    // Verdicts are read off the intervals: crafted comparisons flip them.
    let verdicts = |eval: &Value| -> Value {
        let path = out.join("crafted.json");
        std::fs::write(&path, eval.to_string()).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_trlvr"))
            .args(["demo", "--verdicts-from"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let as_run = verdicts(&eval);
    assert_eq!(
        as_run["claims"], eval["verdicts"]["claims"],
        "the saved verdicts are the ones its comparisons give"
    );
    let interval =
        |value: f64, low: f64, high: f64| serde_json::json!({ "value": value, "low": low, "high": high });
    let mut crafted = eval.clone();
    for ((value, low, high), want) in
        [((0.0, -2.0, 2.0), "shown"), ((-3.0, -6.0, 0.0), "not_shown"), ((-9.0, -12.0, -6.0), "contradicted")]
    {
        crafted["comparisons"]["trlvr_vs_grpo"]["solo"] = interval(value, low, high);
        assert_eq!(verdicts(&crafted)["claims"][0], want, "claim 1 at [{low}, {high}]");
    }
    for ((value, low, high), want) in [
        ((1.0, -3.0, 4.0), "shown"),
        ((-6.0, -14.0, 1.0), "not_shown"),
        ((-50.0, -60.0, -40.0), "contradicted"),
    ] {
        crafted["comparisons"]["literate_vs_grpo"]["shorthand"] = interval(value, low, high);
        assert_eq!(verdicts(&crafted)["specificity"], want, "specificity at [{low}, {high}]");
    }
    // Claim 4: one KL-Reg setting that reaches TRLVR (tax and solo within the margins)
    // contradicts it, whatever the others say.
    let point = &mut crafted["comparisons"]["klreg_frontier"][1]["vs_trlvr"];
    point["tax"] = interval(0.5, -1.0, 2.0);
    point["solo"] = interval(0.0, -2.0, 2.0);
    assert_eq!(verdicts(&crafted)["claims"][3], "contradicted");

    // A second run trains nothing supervised: the models come from the cache.
    let (ok, log) = demo(&out, &["--token-budget", "400", "--seeds", "3"]);
    assert!(ok, "{log}");
    assert_eq!(log.matches(": cached in ").count(), 6, "{log}");
    assert!(!log.contains("SFT step"), "{log}");
    std::fs::remove_dir_all(&out).unwrap();
}
