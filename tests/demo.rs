//! `trlvr demo --quick` end to end, as one study: the report's structure, every figure of
//! the main table finite, the positive control passing, every verdict following its
//! intervals and declared rule, the frontier and the sweep, plots with text, per-run
//! files, and a second start that keeps every run and reads the models from the cache.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::check_verdicts;

fn demo(out: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(["demo", "--quick", "--out"])
        .arg(out)
        .output()
        .unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The rows of the Markdown table that follows the line starting with `header`.
fn table<'a>(report: &'a str, header: &str) -> Vec<Vec<&'a str>> {
    report
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').map(str::trim).filter(|c| !c.is_empty()).collect())
        .collect()
}

/// The numbers of a cell such as `12.3 [10.1, 14.0]`.
fn numbers(cell: &str) -> Vec<f64> {
    cell.split(|c: char| c == '[' || c == ']' || c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<f64>().unwrap_or_else(|_| panic!("not a number in {cell:?}: {s:?}")))
        .collect()
}

#[test]
fn quick_demo_writes_a_complete_report() {
    let out = std::env::temp_dir().join(format!("trlvr-demo-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (ok, log) = demo(&out);
    assert!(ok, "demo failed:\n{log}");

    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for section in [
        "## Verdicts",
        "## Claims as declared",
        "## Table: evaluation junior",
        "## Table: evaluation self",
        "## Tests",
        "## Positive control",
        "## Specificity control",
        "## KL-Reg's frontier",
        "## Wall time",
        "## Runs and their cost",
        "## How the intervals are made",
        "## Plots",
        "## Settings",
    ] {
        assert!(report.contains(section), "missing {section}:\n{report}");
    }
    assert!(report.contains("**Passed.**"), "the positive control must pass:\n{report}");

    // The main table: one row per arm, every cell a finite number with its interval.
    let rows = table(report.split("## Table: evaluation junior").nth(1).unwrap(), "| arm | seeds |");
    let arms: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        arms,
        [
            "base",
            "control",
            "grpo",
            "trlvr",
            "kl-reg",
            "trlvr-literate",
            "kl-reg-k3-beta0.05",
            "kl-reg-k3-beta1",
            "kl-reg-k3plus-beta0.05",
            "kl-reg-k3plus-beta1",
            "trlvr-with-junior-reads-100",
            "trlvr-with-junior-reads-300",
            "trlvr-with-junior-reads-1000"
        ]
    );
    for row in &rows {
        assert_eq!(row.len(), 2 + 7, "{row:?}");
        for cell in &row[2..] {
            let v = numbers(cell);
            assert!(v.len() == 3 && v.iter().all(|x| x.is_finite()) && v[1] <= v[2], "{row:?}");
        }
    }
    assert_eq!(rows[2][1], "5", "GRPO's five seeds");

    // The frontier: the KL-Reg arm and each setting of the quick sweep, with its share of
    // tokens at k3's clamp and whether it reaches TRLVR.
    let frontier = table(&report, "| KL-Reg | seeds |");
    assert_eq!(frontier.len(), 5, "{report}");
    for row in &frontier {
        let clamped: f64 = row[6].parse().unwrap_or_else(|_| panic!("clamped share in {row:?}"));
        assert!((0.0..=100.0).contains(&clamped), "{row:?}");
        assert!(["yes", "no", "cannot tell"].contains(&row[9]), "{row:?}");
    }
    // The sweep: the weak junior, three literate juniors, the base.
    let sweep = table(&report, "| TRLVR's partner in training |");
    assert_eq!(sweep.len(), 5, "{report}");
    for row in &sweep {
        let literacy = numbers(row[1])[0];
        let shorthand: f64 = row[3].parse().unwrap();
        assert!((0.0..=100.0).contains(&literacy) && (0.0..=100.0).contains(&shorthand), "{row:?}");
    }

    // study.json: the claims as declared, each verdict following its intervals and rule.
    let study: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("study.json")).unwrap()).unwrap();
    let claims = study["analysis"]["claims"].as_array().unwrap();
    let ids: Vec<&str> = claims.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["solo", "handoff", "legible", "kl-reg", "specificity"]);
    check_verdicts(&study["analysis"]);
    // The quick run's expected interval (±6) is wider than claim 1's margin (±5).
    assert_eq!(claims[0]["verdict"], "not_testable");
    assert_eq!(claims[3]["alternatives"].as_array().unwrap().len(), 5, "the arm and four settings");
    assert_eq!(study["claims_changed_after_start"], false);

    // Plots, with text: the band left of the plot area (tick labels and the axis label)
    // and the band above it (the title) hold dark pixels.
    for plot in ["reward.png", "tax.png", "junior_ce.png", "shorthand.png", "frontier.png", "claims.png"] {
        let bytes = std::fs::read(out.join(plot)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 1000, "{plot}");
        assert!(report.contains(&format!("![{plot}]({plot})")), "{plot} not in the report");
        if plot == "claims.png" {
            continue;
        }
        let image = image::load_from_memory(&bytes).unwrap().to_luma8();
        let dark = |xs: std::ops::Range<u32>, ys: std::ops::Range<u32>| {
            xs.flat_map(|x| ys.clone().map(move |y| (x, y)))
                .filter(|&(x, y)| image.get_pixel(x, y).0[0] < 100)
                .count()
        };
        assert!(dark(0..40, 60..400) > 50, "{plot}: no y-axis label");
        assert!(dark(100..660, 0..30) > 100, "{plot}: no title");
    }
    for run in ["grpo-seed1", "trlvr-seed2", "kl-reg-seed3", "trlvr-literate-seed4"] {
        let dir = out.join("runs").join(run);
        let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        assert!(metrics.lines().count() > 2, "{run}");
        let first: Value = serde_json::from_str(metrics.lines().next().unwrap()).unwrap();
        assert!(first["probe"]["tax"].is_number(), "{run}: step 0 is a probe of the base");
        assert!(
            dir.join("eval-junior/evaluated.json").exists() && dir.join("model/model.safetensors").exists(),
            "{run}"
        );
        assert_eq!(std::fs::read_dir(dir.join("checkpoints")).unwrap().count(), 1, "{run}");
    }

    // A second start trains nothing: the models come from the cache, every run is kept,
    // and the report's numbers are the same.
    let (ok, log) = demo(&out);
    assert!(ok, "{log}");
    assert_eq!(log.matches(": cached in ").count(), 6, "{log}");
    assert!(!log.contains("SFT step"), "{log}");
    assert_eq!(log.matches(": done, kept").count(), study["runs"].as_array().unwrap().len(), "{log}");
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("study.json")).unwrap()).unwrap();
    assert_eq!(again["analysis"], study["analysis"]);
    std::fs::remove_dir_all(&out).unwrap();
}
