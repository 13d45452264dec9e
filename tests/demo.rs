//! `trlvr demo --quick` end to end, one study per regime: each report's structure, every
//! figure of the main table finite, the ceilings, the positive control passing, every
//! verdict following its intervals and declared rule, the frontier and the sweep, plots
//! with text, per-run files, equal steps × prompts; the front report with both regimes;
//! and a second start that keeps every run and reads the models from the cache.

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

/// One regime's report and files: its arms, frontier and sweep rows, claims.
fn check_regime(out: &Path, arms: &[&str], frontier_rows: usize, sweep_rows: usize) -> Value {
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for section in [
        "## Verdicts",
        "## Claims as declared",
        "## Table: evaluation junior",
        "## Table: evaluation self",
        "## Table: evaluation base",
        "## Tests",
        "## Ceilings",
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
    assert_eq!(rows.iter().map(|r| r[0]).collect::<Vec<_>>(), arms);
    for row in &rows {
        assert_eq!(row.len(), 2 + 7, "{row:?}");
        for cell in &row[2..] {
            let v = numbers(cell);
            assert!(v.len() == 3 && v.iter().all(|x| x.is_finite()) && v[1] <= v[2], "{row:?}");
        }
    }
    assert_eq!(rows[3][1], "5", "GRPO's five seeds");

    // The ceilings: one row per number of terms, the shares summing to 100.
    let ceilings = table(&report, "| numbers | share of problems (%) |");
    assert_eq!(ceilings.len(), 5, "{report}");
    let share: f64 = ceilings.iter().map(|r| r[1].parse::<f64>().unwrap()).sum();
    assert!((share - 100.0).abs() < 0.5, "{share}");

    // The frontier: the KL-Reg arm and each setting of the grid, with its share of tokens
    // at k3's clamp and whether it reaches TRLVR.
    let frontier = table(&report, "| KL-Reg | seeds |");
    assert_eq!(frontier.len(), frontier_rows, "{report}");
    for row in &frontier {
        let clamped: f64 = row[6].parse().unwrap_or_else(|_| panic!("clamped share in {row:?}"));
        assert!((0.0..=100.0).contains(&clamped), "{row:?}");
        assert!(["yes", "no", "cannot tell"].contains(&row[9]), "{row:?}");
    }
    // The sweep: the weak junior, any literate juniors, the base.
    let sweep = table(&report, "| TRLVR's partner in training |");
    assert_eq!(sweep.len(), sweep_rows, "{report}");
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
    assert_eq!(ids, ["solo", "handoff", "kl-reg", "self-paired", "specificity"]);
    check_verdicts(&study["analysis"]);
    // Claim 1 is not testable in a quick run: by its expected interval (±9 against ±5)
    // in the legible regime, by the task's wall in the stress test.
    assert_eq!(claims[0]["verdict"], "not_testable");
    assert_eq!(claims[2]["alternatives"].as_array().unwrap().len(), frontier_rows);
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
    // Every trained arm ran the same steps × prompts.
    let costs: Vec<(u64, u64)> = study["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["cost"]["steps"].as_u64().unwrap_or(0) > 0)
        .map(|r| (r["cost"]["steps"].as_u64().unwrap(), r["cost"]["prompts"].as_u64().unwrap()))
        .collect();
    assert!(costs.len() > 5 && costs.windows(2).all(|w| w[0] == w[1]), "{costs:?}");
    study
}

const MAIN: [&str; 7] = ["base", "junior-alone", "control", "grpo", "trlvr", "kl-reg", "trlvr-literate"];

#[test]
fn quick_demo_writes_a_complete_report() {
    let out = std::env::temp_dir().join(format!("trlvr-demo-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (ok, log) = demo(&out);
    assert!(ok, "demo failed:\n{log}");

    let legible: Vec<&str> =
        MAIN.iter().copied().chain(["kl-reg-k3-beta0.1", "kl-reg-k3-beta1", "kl-reg-k3-beta10"]).collect();
    let legible = check_regime(&out.join("legible"), &legible, 4, 2);
    let stress: Vec<&str> = MAIN
        .iter()
        .copied()
        .chain([
            "kl-reg-k3-beta0.05",
            "kl-reg-k3-beta1",
            "kl-reg-k3plus-beta0.05",
            "kl-reg-k3plus-beta1",
            "trlvr-with-junior-reads-100",
            "trlvr-with-junior-reads-300",
            "trlvr-with-junior-reads-1000",
        ])
        .collect();
    let stress = check_regime(&out.join("stress"), &stress, 5, 5);
    // The stress test's wall is declared before the run: claims 1 and 4 not testable by it.
    for claim in [0, 2] {
        let c = &stress["analysis"]["claims"][claim];
        assert_eq!(c["verdict"], "not_testable");
        assert!(c["why"].as_str().unwrap().starts_with("by design, declared before the run"), "{c}");
    }

    // The front report: both regimes' verdicts side by side, and their ceilings.
    let front = std::fs::read_to_string(out.join("report.md")).unwrap();
    let verdicts = table(&front, "| claim | legible | stress |");
    assert_eq!(verdicts.len(), 5, "{front}");
    for row in &verdicts {
        for cell in &row[1..] {
            let word = cell.trim_matches('*');
            assert!(["shown", "contradicted", "not shown", "not testable"].contains(&word), "{row:?}");
        }
    }
    let ceilings = table(&front, "|  | legible | stress |");
    let plain: Vec<f64> = ceilings[0][1..].iter().map(|c| c.parse().unwrap()).collect();
    assert!(
        plain[0] == 100.0 && plain[1] < 90.0,
        "the legible route fits every chain, not in the stress test: {front}"
    );

    // A second start trains nothing: the models come from the cache, every run is kept,
    // and the reports' numbers are the same.
    let (ok, log) = demo(&out);
    assert!(ok, "{log}");
    assert_eq!(log.matches(": cached in ").count(), 9, "{log}");
    assert!(!log.contains("SFT step"), "{log}");
    let runs = legible["runs"].as_array().unwrap().len() + stress["runs"].as_array().unwrap().len();
    assert_eq!(log.matches(": done, kept").count(), runs, "{log}");
    for (regime, first) in [("legible", &legible), ("stress", &stress)] {
        let again: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(regime).join("study.json")).unwrap())
                .unwrap();
        assert_eq!(again["analysis"], first["analysis"], "{regime}");
    }
    std::fs::remove_dir_all(&out).unwrap();
}
