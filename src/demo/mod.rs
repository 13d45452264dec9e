//! `trlvr demo`: the paper's comparison in miniature on a CPU. A base and a weaker junior
//! are trained from scratch on a running-sum task ([`task`]); GRPO, TRLVR, KL-Reg
//! and TRLVR with a shorthand-literate junior (the specificity control) are trained from
//! the base on one rollout-token budget, five seeds each, with KL-Reg's frontier over β
//! beside them; everything is evaluated on held-out problems (solo, handoff, tax,
//! legibility, drift) next to a positive control, and `report.md` says which of the
//! paper's claims the intervals show. Independent runs are trained side by side.
//!
//! Files under `--out` (default `runs/demo`): `models/` (the cached supervised models),
//! `arms/<arm>-seed<k>/` (`metrics.jsonl`, checkpoints, the senior under `model/`),
//! `eval.json`, `report.md` and the plots.

mod arms;
mod findings;
mod models;
mod plots;
mod report;
mod runs;
mod study;
mod task;

use std::path::Path;

use anyhow::{Context as _, Result};
use burn::module::Module;

use findings::{Clock, Findings, Notes, settings, timing, write_report};
use runs::{Controls, Runs, jobs};
pub use study::Args;
use study::Study;

/// The verdicts of the comparisons saved in a demo's `eval.json`.
fn verdicts_from(path: &Path) -> Result<report::Verdicts> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let eval: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let comparisons = &eval["comparisons"];
    let read = |value: &serde_json::Value, what: &str| -> Result<report::Comparisons> {
        serde_json::from_value(value.clone())
            .with_context(|| format!("{}: {what} is not a comparison the demo writes", path.display()))
    };
    let trlvr_vs_grpo = read(&comparisons["trlvr_vs_grpo"], "comparisons.trlvr_vs_grpo")?;
    let frontier = comparisons["klreg_frontier"]
        .as_array()
        .with_context(|| format!("{}: no comparisons.klreg_frontier", path.display()))?
        .iter()
        .map(|p| {
            Ok((
                p["setting"].as_str().unwrap_or_default().to_string(),
                read(&p["vs_trlvr"], "a frontier point")?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let literate = match &comparisons["literate_vs_grpo"] {
        serde_json::Value::Null => None,
        value => Some(read(value, "comparisons.literate_vs_grpo")?),
    };
    Ok(report::verdicts(&trlvr_vs_grpo, &frontier, literate.as_ref()))
}

/// Prints the verdicts of a demo's `eval.json` (`--verdicts-from`).
fn print_verdicts(path: &Path) -> Result<()> {
    use std::io::Write as _;
    let verdicts = verdicts_from(path)?;
    writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&verdicts)?)?;
    Ok(())
}

/// Runs the command: the supervised models, the problems, the base and its controls,
/// every RL run side by side, then the comparisons and the report.
pub fn run(args: &Args) -> Result<()> {
    if let Some(path) = &args.verdicts_from {
        return print_verdicts(path);
    }
    let study = Study::new(args)?;
    let log = |line: String| study.log(&line);

    // 1. The supervised models (cached).
    let train_device = study.device.clone().autodiff();
    let models =
        models::ensure_all(&study.task, args.quick, &models::cache_dir(&args.out), &train_device, &log)?;
    let after_sft = study.seconds();

    // 2. Problems: training and evaluation from the two sides of the task's hash split.
    let ctx = study.context()?;

    // 3. The base, the positive control and its self-paired check.
    let base = models.base.valid();
    let controls = Controls::evaluate(&ctx, &models, &base, study.threads, &log)?;
    let after_controls = study.seconds();

    // 4. Every RL run, side by side, each trained into its folder and evaluated on the
    // held-out problems (eval.json beside it).
    let jobs = jobs(&args.seeds, &study.rl, models.literate_juniors.len());
    let runs = Runs::train(&args.out, &ctx, &models, &base, &jobs, study.threads, &log)?;
    let after_runs = study.seconds();

    // 5. Comparisons, verdicts, report.
    let findings = Findings::compute(&controls, &runs, &models, &study.rl, args.seeds.len())?;
    let wall = study.seconds();
    let clock = Clock { sft: after_sft, controls: after_controls, runs: after_runs, wall };
    let notes =
        Notes { settings: settings(args, &study, &models)?, timing: timing(&study, &models, &runs, &clock) };
    write_report(args, &controls, &runs, &findings, notes, wall)
}
