//! From the evaluations to the report: the comparisons and verdicts, the tables, the
//! settings and wall time, and the files written.

use anyhow::{Result, bail};
use serde_json::json;
use trlvr::eval::EvalConfig;
use trlvr::objective::GrpoConfig;
use trlvr::schedule::WordBoundary;
use trlvr::train::TrainConfig;

use super::arms::{Arm, Evaluated, RlSettings};
use super::models::{self, Models};
use super::plots;
use super::report::{self, ArmRuns, FrontierPoint, LiteracyPoint, ReportInput, Row};
use super::runs::{Controls, Runs};
use super::study::{Args, Study, load_average};

/// When each stage ended, in seconds from the start.
pub(super) struct Clock {
    pub(super) sft: f64,
    pub(super) controls: f64,
    pub(super) runs: f64,
    pub(super) wall: f64,
}

/// An evaluation as the comparisons read it.
fn view(e: &Evaluated) -> report::Run<'_> {
    report::Run { problems: &e.report.sets[0].problems, notations: &e.notations }
}

/// Every seed of `arm`, as the comparisons read them.
fn seeds_of(arms: &ArmRuns<Evaluated>, arm: Arm) -> Vec<report::Run<'_>> {
    arms.iter().filter(|(a, _)| *a == arm).flat_map(|(_, s)| s.iter().map(|r| view(&r.result))).collect()
}

/// An arm's row: the mean over its seeds.
fn arm_row(arms: &ArmRuns<Evaluated>, arm: Arm) -> Row {
    Row::over_seeds(
        &arms
            .iter()
            .filter(|(a, _)| *a == arm)
            .flat_map(|(_, s)| s.iter().map(|r| Row::of(&r.result.report, r.result.shorthand)))
            .collect::<Vec<_>>(),
    )
}

/// The comparisons and verdicts the report states, and its tables.
pub(super) struct Findings {
    grpo_vs_base: report::Comparisons,
    trlvr_vs_grpo: report::Comparisons,
    klreg_vs_grpo: report::Comparisons,
    literate_vs_grpo: report::Comparisons,
    frontier: Vec<FrontierPoint>,
    literacy: Vec<LiteracyPoint>,
    verdicts: report::Verdicts,
    /// The table: base, controls, then each arm's mean over seeds.
    rows: Vec<(String, Row)>,
    /// Each arm's seeds as rows.
    run_rows: ArmRuns<Row>,
}

impl Findings {
    pub(super) fn compute(
        controls: &Controls,
        runs: &Runs,
        models: &Models,
        rl: &RlSettings,
        seeds: usize,
    ) -> Result<Self> {
        let of = |arm: Arm| seeds_of(&runs.arms, arm);
        let trlvr_vs_grpo = report::compare(&of(Arm::Trlvr), &of(Arm::Grpo), 5)?;
        let literate_vs_grpo = report::compare(&of(Arm::TrlvrLiterate), &of(Arm::Grpo), 7)?;
        let frontier = frontier(runs, rl, seeds)?;
        let settings_vs_trlvr: Vec<(String, report::Comparisons)> =
            frontier.iter().map(|p| (p.setting.clone(), p.vs_trlvr)).collect();
        let (rows, run_rows) = table(controls, &runs.arms);
        Ok(Self {
            grpo_vs_base: report::compare(&of(Arm::Grpo), &[view(&controls.base)], 4)?,
            trlvr_vs_grpo,
            klreg_vs_grpo: report::compare(&of(Arm::KlReg), &of(Arm::Grpo), 6)?,
            literate_vs_grpo,
            literacy: literacy_sweep(controls, models, runs, seeds),
            verdicts: report::verdicts(&trlvr_vs_grpo, &settings_vs_trlvr, Some(&literate_vs_grpo)),
            frontier,
            rows,
            run_rows,
        })
    }
}

/// KL-Reg's frontier: the arm (all seeds), then each setting of the sweep (one seed), each
/// against TRLVR.
fn frontier(runs: &Runs, rl: &RlSettings, seeds: usize) -> Result<Vec<FrontierPoint>> {
    let trlvr = seeds_of(&runs.arms, Arm::Trlvr);
    let clamped = &runs.arm_clamped;
    let mut frontier = vec![FrontierPoint {
        setting: format!("β = {}, k3 (the arm above)", rl.beta),
        seeds,
        row: arm_row(&runs.arms, Arm::KlReg),
        clamped: (!clamped.is_empty()).then(|| clamped.iter().sum::<f64>() / clamped.len() as f64),
        vs_trlvr: report::compare(&seeds_of(&runs.arms, Arm::KlReg), &trlvr, 8)?,
    }];
    for (i, (setting, evaluated, clamped)) in runs.sweep.iter().enumerate() {
        frontier.push(FrontierPoint {
            setting: setting.clone(),
            seeds: 1,
            row: Row::of(&evaluated.report, evaluated.shorthand),
            clamped: *clamped,
            vs_trlvr: report::compare(&[view(evaluated)], &trlvr, 9 + i as u64)?,
        });
    }
    Ok(frontier)
}

/// The specificity sweep: TRLVR's notation against its partner's literacy, from the weak
/// junior (the TRLVR arm) through the literate juniors to the base.
fn literacy_sweep(controls: &Controls, models: &Models, runs: &Runs, seeds: usize) -> Vec<LiteracyPoint> {
    let handoff = |e: &Evaluated| e.report.macro_figures.handoff[0].estimate;
    let mut literacy = vec![LiteracyPoint {
        partner: "the junior (plain only; the TRLVR arm)".into(),
        literacy: handoff(&controls.control),
        seeds,
        row: arm_row(&runs.arms, Arm::Trlvr),
    }];
    let literate = models.literate_juniors.iter().zip(&controls.literacy_of).zip(&runs.literacy);
    for (((recipe, _), reads), run) in literate {
        literacy.push(LiteracyPoint {
            partner: format!("the junior + {} steps on mixed chains", recipe.sft.steps),
            literacy: handoff(reads),
            seeds: 1,
            row: Row::of(&run.report, run.shorthand),
        });
    }
    literacy.push(LiteracyPoint {
        partner: "the base (the TRLVR, literate junior arm)".into(),
        literacy: handoff(&controls.control_with_base),
        seeds,
        row: arm_row(&runs.arms, Arm::TrlvrLiterate),
    });
    literacy
}

/// The table's rows (base, controls, then each arm's mean over seeds), and each arm's
/// seeds as rows.
fn table(controls: &Controls, arms: &ArmRuns<Evaluated>) -> (Vec<(String, Row)>, ArmRuns<Row>) {
    let row = |e: &Evaluated| Row::of(&e.report, e.shorthand);
    let mut rows = vec![
        ("base".to_string(), row(&controls.base)),
        ("positive control".to_string(), row(&controls.control)),
        ("control, self-paired".to_string(), row(&controls.self_paired)),
    ];
    let run_rows: ArmRuns<Row> =
        arms.iter().map(|(arm, seeds)| (*arm, seeds.iter().map(|r| r.map(row)).collect())).collect();
    for (arm, seeds) in &run_rows {
        let r: Vec<Row> = seeds.iter().map(|s| s.result).collect();
        rows.push((arm.name().to_string(), Row::over_seeds(&r)));
    }
    (rows, run_rows)
}

/// The report's settings and wall-time lines.
pub(super) struct Notes {
    pub(super) settings: Vec<String>,
    pub(super) timing: Vec<String>,
}

/// The settings the report lists, each default from the code that uses it.
pub(super) fn settings(args: &Args, study: &Study, models: &Models) -> Result<Vec<String>> {
    let [base_recipe, junior_recipe, control_recipe] = models::recipes(args.quick);
    let literate: Vec<_> = models.literate_juniors.iter().map(|(r, _)| r).collect();
    let rl = &study.rl;
    let word = WordBoundary::default();
    let sampler = EvalConfig::default().sampling;
    Ok(vec![
        format!("mode: {}", if args.quick { "--quick" } else { "full" }),
        format!("task: {}", serde_json::to_string(&study.task)?),
        format!("base: {}", serde_json::to_string(&base_recipe)?),
        format!("junior: {}", serde_json::to_string(&junior_recipe)?),
        format!("positive control: {}", serde_json::to_string(&control_recipe)?),
        format!("literate juniors (from the junior): {}", serde_json::to_string(&literate)?),
        format!("RL: {}", serde_json::to_string(rl)?),
        format!(
            "arms: GRPO = solo rollouts; TRLVR = word-boundary handoffs with the junior (p_sen {}, K {}), \
             loss on senior tokens; KL-Reg = solo + β·k3 KL(senior ‖ junior); TRLVR, literate junior = TRLVR \
             paired with the frozen base instead of the junior. GRPO defaults otherwise ({}), rollouts at T {}",
            word.p_senior,
            word.max_gap,
            grpo_defaults()?,
            TrainConfig::default().sampling.temperature
        ),
        format!(
            "evaluation: {} held-out problems, n {} per mode, T {} / top-p {} / top-k {}, step alternation \
             (one step per turn, senior first), every arm with the weak junior",
            rl.eval_problems, rl.eval_n, sampler.temperature, sampler.top_p, sampler.top_k
        ),
        format!("seeds: {:?}", args.seeds),
        format!("device: {}, {} runs at a time", args.device, study.threads),
    ])
}

/// GRPO's default clip, dual clip and aggregation, in words.
fn grpo_defaults() -> Result<String> {
    let g = GrpoConfig::default();
    let clip = if g.clip_low == g.clip_high {
        format!("ε {}", g.clip_low)
    } else {
        format!("ε {}/{}", g.clip_low, g.clip_high)
    };
    let dual = g.dual_clip.map_or_else(|| "off".to_string(), |c| c.to_string());
    let aggregation = serde_json::to_value(g.aggregation)?;
    let aggregation = aggregation.as_str().map_or_else(|| aggregation.to_string(), str::to_string);
    Ok(format!("{clip}, dual clip {dual}, {aggregation}"))
}

/// Where the time went, and on what machine load.
pub(super) fn timing(study: &Study, models: &Models, runs: &Runs, clock: &Clock) -> Vec<String> {
    let load_after = load_average();
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let threads = study.threads;
    vec![
        format!(
            "total: {:.0} s on {cores} cores (load average before {}, after {load_after})",
            clock.wall, study.load_before
        ),
        format!(
            "supervised models: {:.0} s ({})",
            clock.sft,
            if models.sft_seconds > 0.0 { "trained" } else { "from the cache" }
        ),
        format!("base and control evaluations: {:.0} s", clock.controls - clock.sft),
        format!(
            "RL runs ({} arm runs, {} KL-Reg settings, {} literate juniors; training and evaluation, {threads} at a \
             time): {:.0} s",
            runs.arm_runs(),
            runs.sweep.len(),
            runs.literacy.len(),
            clock.runs - clock.controls
        ),
    ]
}

/// Each arm's metrics lines, per seed (for the plots over training).
fn read_metrics(args: &Args) -> Vec<(Arm, Vec<Vec<serde_json::Value>>)> {
    Arm::ALL
        .iter()
        .map(|&arm| {
            let seeds = args
                .seeds
                .iter()
                .map(|seed| {
                    let path = args
                        .out
                        .join("arms")
                        .join(format!("{}-seed{seed}", arm.name()))
                        .join("metrics.jsonl");
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
                })
                .collect();
            (arm, seeds)
        })
        .collect()
}

/// Draws the plots and writes report.md and eval.json; fails if the positive control did.
pub(super) fn write_report(
    args: &Args,
    controls: &Controls,
    runs: &Runs,
    f: &Findings,
    notes: Notes,
    wall: f64,
) -> Result<()> {
    let mut plots = plots::draw(&args.out, &read_metrics(args))?;
    plots.push(plots::frontier(&args.out, &f.frontier, &f.rows)?);
    let input = ReportInput {
        rows: f.rows.clone(),
        runs: f.run_rows.clone(),
        grpo_vs_base: f.grpo_vs_base,
        trlvr_vs_grpo: f.trlvr_vs_grpo,
        klreg_vs_grpo: f.klreg_vs_grpo,
        literate_vs_grpo: Some(f.literate_vs_grpo),
        literacy: f.literacy.clone(),
        frontier: f.frontier.clone(),
        verdicts: &f.verdicts,
        control: (controls.passed, controls.why.clone()),
        settings: notes.settings,
        timing: notes.timing,
        plots,
    };
    std::fs::write(args.out.join("report.md"), report::markdown(&input))?;
    let eval_json = json!({
        "base": controls.base, "positive_control": controls.control, "control_self_paired": controls.self_paired,
        "arms": runs.arms.iter().map(|(arm, seeds)| json!({ "arm": arm, "seeds": seeds })).collect::<Vec<_>>(),
        "table": f.rows.iter().map(|(l, r)| json!({ "model": l, "row": r })).collect::<Vec<_>>(),
        "comparisons": {
            "grpo_vs_base": f.grpo_vs_base, "trlvr_vs_grpo": f.trlvr_vs_grpo, "klreg_vs_grpo": f.klreg_vs_grpo,
            "literate_vs_grpo": f.literate_vs_grpo, "klreg_frontier": f.frontier, "literacy_sweep": f.literacy,
        },
        "verdicts": f.verdicts, "positive_control_passed": controls.passed, "wall_s": wall,
    });
    std::fs::write(args.out.join("eval.json"), serde_json::to_string_pretty(&eval_json)?)?;
    eprintln!("report: {} ({wall:.0} s)", args.out.join("report.md").display());
    if !controls.passed {
        bail!(
            "the positive control failed: the evaluation is blind (see {})",
            args.out.join("report.md").display()
        );
    }
    Ok(())
}
