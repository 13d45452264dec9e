//! `trlvr demo`: the paper's comparison in miniature on a CPU, as one study. A base and a
//! weaker junior are trained from scratch on a running-sum task ([`task`], [`models`]);
//! GRPO, TRLVR, KL-Reg and TRLVR with a shorthand-literate junior (the specificity
//! control) are trained from the base on one rollout-token budget, five seeds each, with
//! KL-Reg's frontier over β and a sweep over the partner's literacy beside them
//! ([`design`]); the base and a shorthand-only positive control are evaluated as they are.
//! Training and evaluating one run is the demo's own ([`lab`]); running the plan, the
//! intervals, the verdicts and the report are `trlvr study`'s; [`sections`] and [`plots`]
//! add what only this task has.
//!
//! Files under `--out` (default `runs/demo`): `models/` (the cached supervised models),
//! `runs/<arm>-seed<k>/` (`metrics.jsonl` with probes, a checkpoint, the senior under
//! `model/`, its evaluations), `report.md`, `study.json` and the plots. A second start
//! keeps the runs its build finished.

mod design;
mod lab;
mod models;
mod plots;
mod sections;
mod task;

use anyhow::{Result, bail};
use burn::module::Module;
use serde_json::{Value, json};
use trlvr::device::parse_device;
use trlvr::study::{Analysis, Figure};
use trlvr::train::Example;

pub use design::Args;
use design::{DemoArm, RlSettings};
use lab::DemoLab;
use task::{Split, SumTask};

use crate::ranks::Ranks;
use crate::study::report::{self, Input};
use crate::study::runner::{self, Log, OnChange};

/// What the task is, in the report's words.
const INTRO: &str = "Task: running sums, each step one paragraph, in a plain notation both models know or a \
    shorthand only the senior's base learned; responses are cut at a token cap that plain chains of the longest sums \
    overrun (shorthand buys accuracy there); reward = 1 − cost × tokens for a correct answer, 0 otherwise. The junior \
    is a smaller model trained on the plain notation only. Evaluation problems are held out from every training set \
    by a hash split.";

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the command: the supervised models, the problems, the study (every run side by
/// side), then the report.
pub fn run(args: &Args) -> Result<()> {
    let log = Log::new();
    let load_before = load_average();
    if args.seeds.is_empty() {
        bail!("--seeds needs at least one seed");
    }
    let threads = match args.jobs {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    };
    let device = parse_device(&args.device)?;
    let task = SumTask::default();
    task.validate()?;
    let classes = task.classes()?;
    let rl = RlSettings::of(args);
    std::fs::create_dir_all(&args.out)?;

    // 1. The supervised models (cached).
    let say = |line: String| log.say(&line);
    let models = models::ensure_all(
        &task,
        args.quick,
        &models::cache_dir(&args.out),
        &device.clone().autodiff(),
        &say,
    )?;
    let after_sft = log.seconds();

    // 2. The study: its arms, evaluations and claims, then every run.
    let literate: Vec<&str> = models.literate_juniors.iter().map(|(r, _)| r.name).collect();
    let arms = design::arms(&args.seeds, &rl, &literate);
    let design = design::design(&arms, &literate, args.quick)?;
    let lab = DemoLab {
        task: &task,
        classes: &classes,
        train: task
            .problems(Split::Train, 4096, 11)?
            .iter()
            .map(|p| Example { prompt: task.prompt(p), reference: p.sum().to_string() })
            .collect(),
        eval: task.problems(Split::Validation, rl.eval_problems, 1_000_003)?,
        rl: &rl,
        models: &models,
        arms: &arms,
        base: models.base.valid(),
        evaluations: design::evaluations(&literate),
        device: device.clone(),
    };
    let ranks = Ranks::connect()?;
    let definition = json!({ "task": task, "rl": rl, "arms": arms, "quick": args.quick });
    let claims = serde_json::to_string(&design.claims)?;
    let provenance = crate::study::declare(&args.out, &definition.to_string(), &claims, None, &ranks)?;
    let plan = design.plan(&args.out, &lab)?;
    let outcome = runner::run(&design, &plan, &lab, threads, OnChange::Replace, &ranks, &log)?;
    let after_runs = log.seconds();

    // 3. The analysis, what only the demo adds, the report.
    let analysis = Analysis::new(&outcome.results, &design.claims, &design.analysis)?;
    let control = sections::positive_control(&analysis)?;
    let timing =
        Timing { load_before, after_sft, after_runs, threads, sft_trained: models.sft_seconds > 0.0 };
    let parts = Parts { args, task: &task, rl: &rl, models: &models, arms: &arms, design: &design };
    report(&parts, &analysis, &outcome, provenance, &control, &timing, &log)?;
    if !control.0 {
        bail!(
            "the positive control failed: the evaluation is blind (see {})",
            args.out.join("report.md").display()
        );
    }
    Ok(())
}

/// When the stages ended, and on what machine load.
struct Timing {
    load_before: String,
    after_sft: f64,
    after_runs: f64,
    threads: usize,
    sft_trained: bool,
}

/// What the demo's study is made of.
struct Parts<'a> {
    args: &'a Args,
    task: &'a SumTask,
    rl: &'a RlSettings,
    models: &'a models::Models,
    arms: &'a [DemoArm],
    design: &'a crate::study::runner::Design,
}

/// Draws the plots and writes the report: the study's, with the demo's own sections.
fn report(
    parts: &Parts<'_>,
    analysis: &Analysis,
    outcome: &runner::Outcome,
    provenance: crate::study::report::Provenance,
    control: &(bool, String),
    timing: &Timing,
    log: &Log,
) -> Result<()> {
    let out = &parts.args.out;
    let runs_dir = out.join("runs");
    let mut sections = sections::sections(analysis, parts.arms, parts.models, &runs_dir, control)?;
    let mut plots = plots::draw(out, &metrics(parts.arms, &runs_dir))?;
    plots.push(frontier(out, analysis, parts.arms)?);
    plots.extend(crate::study::plots::claims(out, &analysis.claims)?);
    let wall = log.seconds();
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
        title: "trlvr demo: GRPO, TRLVR and KL-Reg in miniature".into(),
        intro: INTRO.into(),
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
        settings: sections::settings(parts.args, parts.task, parts.rl, parts.models, timing.threads)?,
        sections,
        plots,
        wall,
    };
    report::write(out, &input)?;
    for c in &analysis.claims {
        log.say(&format!("{}: {}", c.id, c.verdict.word()));
    }
    log.say(&format!("report: {} ({wall:.0} s)", out.join("report.md").display()));
    Ok(())
}

/// The four main arms' metrics lines, per seed (for the plots over training).
fn metrics(arms: &[DemoArm], runs: &std::path::Path) -> Vec<(String, Vec<Vec<Value>>)> {
    arms.iter()
        .filter(|a| ["grpo", "trlvr", "kl-reg", "trlvr-literate"].contains(&a.name.as_str()))
        .map(|a| {
            let seeds = a
                .seeds
                .iter()
                .map(|seed| {
                    let path = runs.join(format!("{}-seed{seed}", a.name)).join("metrics.jsonl");
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
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
