//! `trlvr demo`: the paper's comparison in miniature on a CPU, as one study per regime
//! ([`regime`]): a legible route to full accuracy (the paper's setting) and a stress test
//! where only a shorthand the junior cannot read fits the longest sums. In each, a base and
//! a weaker junior are trained from scratch on a running-sum task ([`task`], [`models`]);
//! GRPO, TRLVR, KL-Reg and TRLVR with the base as partner (the paper's self-paired
//! setting) are trained from the base for the same steps, five seeds each, with KL-Reg's
//! grid beside them ([`design`]); the base, the junior alone and a shorthand-only positive
//! control are evaluated as they are. Training and evaluating one run is the demo's own
//! ([`lab`]); running the plan, the intervals, the verdicts and the report are `trlvr
//! study`'s; [`sections`] and [`plots`] add what only this task has, and [`summary`] puts
//! the regimes side by side.
//!
//! Files under `--out` (default `runs/demo`): `models/` (the cached supervised models),
//! `report.md` (both regimes), and per regime `<regime>/runs/<arm>-seed<k>/`
//! (`metrics.jsonl` with probes, a checkpoint, the senior under `model/`),
//! `<regime>/report.md`, `<regime>/study.json` and the plots. A second start keeps the runs
//! its build finished.

mod design;
mod lab;
mod models;
mod plots;
mod regime;
mod sections;
mod summary;
mod task;

use std::path::Path;

use anyhow::{Result, bail};
use burn::module::Module;
use serde_json::{Value, json};
use trlvr::device::parse_device;
use trlvr::study::{Analysis, Figure};
use trlvr::train::Example;

pub use design::Args;
use design::{DemoArm, RlSettings};
use lab::DemoLab;
use regime::{Ceilings, Regime};
use summary::Done;
use task::Split;

use crate::ranks::Ranks;
use crate::study::report::{self, Input};
use crate::study::runner::{self, Log, OnChange};

/// What the task is, in the report's words.
const INTRO: &str = "Task: running sums, each step one paragraph, in a plain notation both models know or a \
    shorthand only the senior's base learned; shorthand costs fewer tokens; reward = 1 − cost × tokens for a \
    correct answer, 0 otherwise. The junior is a smaller model trained on the plain notation only. Evaluation \
    problems are held out from every training set by a hash split.";

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the command: per regime the supervised models, the problems, the study (every run
/// side by side) and its report; then both regimes side by side.
pub fn run(args: &Args) -> Result<()> {
    let log = Log::new();
    if args.seeds.is_empty() {
        bail!("--seeds needs at least one seed");
    }
    let regimes = Regime::pick(&args.regime, args.quick)?;
    let threads = match args.jobs {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    };
    let device = parse_device(&args.device)?;
    let rl = RlSettings::of(args);
    std::fs::create_dir_all(&args.out)?;
    let mut done = Vec::new();
    for regime in &regimes {
        log.say(&format!("regime {}: {}", regime.name, regime.title));
        done.push(run_regime(args, regime, &rl, threads, &device, &log)?);
    }
    summary::write(&args.out, args, &done, log.seconds())?;
    log.say(&format!("report: {} ({:.0} s)", args.out.join("report.md").display(), log.seconds()));
    if let Some(failed) = done.iter().find(|d| !d.control_passed) {
        bail!(
            "the positive control failed in the {} regime: the evaluation is blind (see {})",
            failed.regime.name,
            args.out.join(failed.regime.name).join("report.md").display()
        );
    }
    Ok(())
}

/// One regime's study, into `--out/<regime>`.
fn run_regime(
    args: &Args,
    regime: &Regime,
    rl: &RlSettings,
    threads: usize,
    device: &burn::prelude::Device,
    log: &Log,
) -> Result<Done> {
    let started = log.seconds();
    let load_before = load_average();
    let out = args.out.join(regime.name);
    let task = &regime.task;
    task.validate()?;
    let classes = task.classes()?;
    std::fs::create_dir_all(&out)?;

    // 1. The supervised models (cached).
    let say = |line: String| log.say(&format!("{}: {line}", regime.name));
    let models = models::ensure_all(
        regime,
        args.quick,
        &models::cache_dir(&args.out),
        &device.clone().autodiff(),
        &say,
    )?;
    let after_sft = log.seconds() - started;

    // 2. The study: its arms, evaluations and claims, then every run.
    let eval = task.problems(Split::Validation, rl.eval_problems, 1_000_003)?;
    let ceilings = Ceilings::of(task, &eval);
    let literate: Vec<&str> = models.literate_juniors.iter().map(|(r, _)| r.name).collect();
    let arms = design::arms(regime, &args.seeds, rl, &literate);
    let design = design::design(regime, &ceilings, &arms, &literate, args.quick)?;
    let lab = DemoLab {
        task,
        classes: &classes,
        train: task
            .problems(Split::Train, 4096, 11)?
            .iter()
            .map(|p| Example { prompt: task.prompt(p), reference: p.sum().to_string() })
            .collect(),
        eval,
        rl,
        models: &models,
        arms: &arms,
        base: models.base.valid(),
        evaluations: design::evaluations(&literate),
        device: device.clone(),
    };
    let ranks = Ranks::connect()?;
    let definition = json!({ "regime": regime, "rl": rl, "arms": arms, "quick": args.quick });
    let claims = serde_json::to_string(&design.claims)?;
    let provenance = crate::study::declare(&out, &definition.to_string(), &claims, None, &ranks)?;
    let plan = design.plan(&out, &lab)?;
    let outcome = runner::run(&design, &plan, &lab, threads, OnChange::Replace, &ranks, log)?;
    let after_runs = log.seconds() - started;

    // 3. The analysis, what only the demo adds, the report.
    let analysis = Analysis::new(&outcome.results, &design.claims, &design.analysis)?;
    let control = sections::positive_control(&analysis)?;
    let timing = Timing {
        load_before,
        after_sft,
        after_runs,
        threads,
        sft_trained: models.sft_seconds > 0.0,
        started,
    };
    let parts =
        Parts { args, regime, ceilings: &ceilings, rl, models: &models, arms: &arms, design: &design };
    report(&parts, &out, &analysis, &outcome, provenance, &control, &timing, log)?;
    Ok(Done {
        regime: regime.clone(),
        ceilings,
        analysis,
        control_passed: control.0,
        wall: log.seconds() - started,
    })
}

/// When the stages ended, and on what machine load.
struct Timing {
    started: f64,
    load_before: String,
    after_sft: f64,
    after_runs: f64,
    threads: usize,
    sft_trained: bool,
}

/// What the demo's study is made of.
struct Parts<'a> {
    args: &'a Args,
    regime: &'a Regime,
    ceilings: &'a Ceilings,
    rl: &'a RlSettings,
    models: &'a models::Models,
    arms: &'a [DemoArm],
    design: &'a crate::study::runner::Design,
}

/// Draws the plots and writes the report: the study's, with the demo's own sections.
#[allow(clippy::too_many_arguments)]
fn report(
    parts: &Parts<'_>,
    out: &Path,
    analysis: &Analysis,
    outcome: &runner::Outcome,
    provenance: crate::study::report::Provenance,
    control: &(bool, String),
    timing: &Timing,
    log: &Log,
) -> Result<()> {
    let runs_dir = out.join("runs");
    let mut sections = sections::sections(
        analysis,
        parts.regime,
        parts.ceilings,
        parts.arms,
        parts.models,
        &runs_dir,
        control,
    )?;
    let mut plots = plots::draw(out, &metrics(parts.arms, &runs_dir))?;
    plots.push(frontier(out, analysis, parts.arms)?);
    plots.extend(crate::study::plots::claims(out, &analysis.claims)?);
    let wall = log.seconds() - timing.started;
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    sections.push((
        "Wall time".into(),
        format!(
            "- total: {wall:.0} s on {cores} cores (load average before {}, after {})\n- supervised \
             models: {:.0} s ({})\n- runs (training and evaluation, {} at a time; {} trained and {} \
             evaluations drawn by this start): {:.0} s\n",
            timing.load_before,
            load_average(),
            timing.after_sft,
            if timing.sft_trained { "trained" } else { "from the cache" },
            timing.threads,
            outcome.trained_now,
            outcome.evaluated_now,
            timing.after_runs - timing.after_sft
        ),
    ));
    let input = Input {
        title: format!("trlvr demo, {} regime: GRPO, TRLVR and KL-Reg in miniature", parts.regime.name),
        intro: format!("Regime: {}. {INTRO}", parts.regime.title),
        design: parts.design,
        analysis,
        costs: &outcome.costs,
        provenance,
        figures: vec![
            Figure::Solo,
            Figure::Handoff,
            Figure::Tax,
            Figure::JuniorCe,
            Figure::JuniorTop1,
            Figure::Kl,
            Figure::Column("shorthand".into()),
        ],
        settings: sections::settings(parts.args, parts.regime, parts.rl, parts.models, timing.threads)?,
        sections,
        plots,
        wall,
    };
    report::write(out, &input)?;
    for c in &analysis.claims {
        log.say(&format!("{}: {}: {}", parts.regime.name, c.id, c.verdict.word()));
    }
    Ok(())
}

/// The arms trained at every seed.
const MAIN_ARMS: [&str; 4] = ["grpo", "trlvr", "kl-reg", "trlvr-literate"];

/// The four main arms' metrics lines, per seed (for the plots over training).
fn metrics(arms: &[DemoArm], runs: &std::path::Path) -> Vec<(String, Vec<Vec<Value>>)> {
    arms.iter()
        .filter(|a| MAIN_ARMS.contains(&a.name.as_str()))
        .map(|a| {
            let seeds = a
                .seeds
                .iter()
                .map(|seed| {
                    let path = runs.join(format!("{}-seed{seed}", a.name)).join("metrics.jsonl");
                    let text = trlvr::lines::read_text(&path).unwrap_or_default();
                    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
                })
                .collect();
            (a.name.clone(), seeds)
        })
        .collect()
}

/// KL-Reg's frontier plot: each KL-Reg arm's (solo, tax) beside GRPO's, TRLVR's and the
/// literate-junior TRLVR's.
fn frontier(out: &std::path::Path, analysis: &Analysis, arms: &[DemoArm]) -> Result<(String, String)> {
    let point = |arm: &str| {
        analysis.row("junior", arm).map(|r| {
            let value = |f: &Figure| r.figures.get(f).map_or(f64::NAN, |x| x.estimate.value);
            (value(&Figure::Solo), value(&Figure::Tax))
        })
    };
    let settings: Vec<(String, (f64, f64))> = arms
        .iter()
        .filter(|a| matches!(a.training, design::Training::KlReg { .. }))
        .filter_map(|a| Some((a.name.clone(), point(&a.name)?)))
        .collect();
    let main: Vec<(String, usize, (f64, f64))> = [("grpo", 0), ("trlvr", 1), ("trlvr-literate", 3)]
        .into_iter()
        .filter_map(|(name, colour)| Some((name.to_string(), colour, point(name)?)))
        .collect();
    plots::frontier(out, &settings, &main)
}
