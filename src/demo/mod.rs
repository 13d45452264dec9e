//! `trlvr demo`: the paper's comparison in miniature on a CPU. A base and a weaker junior
//! are trained from scratch on a running-sum task ([`trlvr::demo`]); GRPO, TRLVR and
//! KL-Reg are trained from the base on one rollout-token budget, two seeds each;
//! everything is evaluated (solo, handoff, tax, legibility, drift) next to a positive
//! control, and `report.md` says which of the paper's claims the numbers reproduce.
//!
//! Files under `--out` (default `runs/demo`): `models/` (the cached supervised models),
//! `arms/<arm>-seed<k>/` (`metrics.jsonl`, checkpoints, the senior under `model/`),
//! `eval.json`, `report.md` and the plots.

mod arms;
mod models;
mod plots;
mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, bail};
use burn::module::Module;
use burn::prelude::Device;
use serde_json::json;
use trlvr::demo::SumTask;
use trlvr::device::parse_device;
use trlvr::eval::ProblemResult;
use trlvr::objective::{GrpoConfig, KlEstimator};
use trlvr::train::Example;
use trlvr_junior_kl::JuniorKl;

use arms::{Arm, Context, Evaluated, RlSettings};
use report::{ArmRuns, CONTROL_CE_RATIO, CONTROL_TAX_POINTS, FrontierPoint, ReportInput, Row, SeedRun};

/// Arguments of `trlvr demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A two-minute version (smaller models, budget and evaluation) for CI and first contact.
    #[arg(long)]
    quick: bool,
    /// Output folder (models are cached under it).
    #[arg(long, default_value = "runs/demo")]
    out: PathBuf,
    /// Seeds of the arms, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    seeds: Vec<u64>,
    /// Override the rollout-token budget of each arm.
    #[arg(long)]
    token_budget: Option<usize>,
    /// Override the RL learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Device: flex (CPU), cuda[:N], tch.
    #[arg(long, default_value = "flex")]
    device: String,
}

fn rl_settings(quick: bool) -> RlSettings {
    if quick {
        RlSettings {
            token_budget: 30_000,
            prompts_per_step: 4,
            group_size: 8,
            lr: 2e-4,
            beta: 0.05,
            sweep_betas: vec![0.05, 1.0],
            probe_every: 5,
            probe_problems: 16,
            eval_problems: 48,
            eval_n: 2,
        }
    } else {
        RlSettings {
            token_budget: 150_000,
            prompts_per_step: 4,
            group_size: 8,
            lr: 1e-4,
            beta: 0.05,
            sweep_betas: vec![0.01, 0.1, 1.0, 10.0],
            probe_every: 20,
            probe_problems: 32,
            eval_problems: 128,
            eval_n: 4,
        }
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    let load_before = load_average();
    if args.seeds.is_empty() {
        bail!("--seeds needs at least one seed");
    }
    let device: Device = parse_device(&args.device)?;
    let train_device = device.clone().autodiff();
    let task = SumTask::default();
    task.validate()?;
    let classes = task.classes()?;
    let mut rl = rl_settings(args.quick);
    rl.token_budget = args.token_budget.unwrap_or(rl.token_budget);
    rl.lr = args.lr.unwrap_or(rl.lr);
    std::fs::create_dir_all(&args.out)?;
    let mut log = |line: String| eprintln!("[{:>5.0}s] {line}", started.elapsed().as_secs_f64());

    // 1. The supervised models (cached).
    let models =
        models::ensure_all(&task, args.quick, &models::cache_dir(&args.out), &train_device, &mut log)?;
    let after_sft = started.elapsed().as_secs_f64();

    // 2. Problems: training and held-out evaluation from separate seeds.
    let ctx = Context {
        task: &task,
        classes: &classes,
        train: task
            .problems(4096, 11)
            .iter()
            .map(|p| Example { prompt: task.prompt(p), reference: p.sum().to_string() })
            .collect(),
        eval: task.problems(rl.eval_problems, 1_000_003),
        rl: &rl,
    };

    // 3. The base, the positive control and its self-paired check.
    let base = models.base.valid();
    let eval_base = arms::evaluate(&ctx, &base, &models.junior, &ctx.eval, rl.eval_n)?;
    let eval_control = arms::evaluate(&ctx, &models.control, &models.junior, &ctx.eval, rl.eval_n)?;
    let eval_self = arms::evaluate(&ctx, &models.control, &models.control, &ctx.eval, rl.eval_n)?;
    log(format!(
        "base: solo {:.1}%, handoff {:.1}%, shorthand {:.0}%",
        eval_base.report.macro_figures.solo[0].estimate.value,
        eval_base.report.macro_figures.handoff[0].estimate.value,
        100.0 * eval_base.shorthand
    ));
    let control_row = Row::of(&eval_control.report, eval_control.shorthand);
    let self_row = Row::of(&eval_self.report, eval_self.shorthand);
    let control_ok = control_row.tax.value >= CONTROL_TAX_POINTS
        && control_row.junior_ce.value >= CONTROL_CE_RATIO * self_row.junior_ce.value
        && control_row.junior_ce.low > self_row.junior_ce.high;
    let control_why = format!(
        "The shorthand-only senior with the weak junior pays a tax of {} points (needed: at least \
         {CONTROL_TAX_POINTS}) and its chains cost the junior {} nats per token, against {} in the \
         self-paired check (the control as its own junior; needed: at least {CONTROL_CE_RATIO}× and \
         separate intervals).",
        control_row.tax.show(1),
        control_row.junior_ce.show(3),
        self_row.junior_ce.show(3)
    );
    log(format!("positive control: {}; {control_why}", if control_ok { "passed" } else { "FAILED" }));
    let after_controls = started.elapsed().as_secs_f64();

    // 4. The arms. Each run is trained into its folder, then evaluated on the held-out
    // problems (eval.json beside it).
    let train_and_evaluate = |arm: Arm, kl: &JuniorKl, seed: u64, dir: &Path, log: &mut dyn FnMut(String)| {
        let trained =
            arms::train(&ctx, arm, kl, seed, &models.base, &models.base_config, &models.junior, dir, log)?;
        let evaluated = arms::evaluate(&ctx, &trained.senior, &models.junior, &ctx.eval, rl.eval_n)?;
        std::fs::write(dir.join("eval.json"), serde_json::to_string_pretty(&evaluated)?)?;
        anyhow::Ok((trained, evaluated))
    };
    let kl_reg = JuniorKl::new(GrpoConfig::default(), rl.beta)?;
    let mut runs: ArmRuns<Evaluated> = Vec::new();
    for arm in Arm::ALL {
        let mut seeds = Vec::new();
        for &seed in &args.seeds {
            let dir = args.out.join("arms").join(format!("{}-seed{seed}", arm.name()));
            let (trained, evaluated) = train_and_evaluate(arm, &kl_reg, seed, &dir, &mut log)?;
            log(format!(
                "{} seed {seed}: {} steps in {:.0} s; solo {:.1}%, handoff {:.1}%, junior CE {:.3}",
                arm.name(),
                trained.steps,
                trained.seconds,
                evaluated.report.macro_figures.solo[0].estimate.value,
                evaluated.report.macro_figures.handoff[0].estimate.value,
                evaluated.report.macro_figures.legibility.junior_ce.value
            ));
            seeds.push(SeedRun {
                seed,
                result: evaluated,
                steps: trained.steps,
                tokens: trained.tokens,
                seconds: trained.seconds,
            });
        }
        runs.push((arm, seeds));
    }
    let after_arms = started.elapsed().as_secs_f64();

    // 4b. KL-Reg's frontier: one seed at each β of the sweep, with each estimator.
    let frontier_seed = args.seeds[0];
    let mut sweep = Vec::new();
    for (estimator, label) in [(KlEstimator::K3, "k3"), (KlEstimator::K3Plus, "k3+")] {
        for &beta in &rl.sweep_betas {
            let name = format!("kl-reg-{}-beta{beta}-seed{frontier_seed}", label.replace('+', "plus"));
            let dir = args.out.join("arms").join(name);
            let objective = JuniorKl::new(GrpoConfig::default(), beta)?.with_estimator(estimator);
            let (_, evaluated) = train_and_evaluate(Arm::KlReg, &objective, frontier_seed, &dir, &mut log)?;
            log(format!(
                "kl-reg β {beta} {label}: solo {:.1}%, tax {:.1}, shorthand {:.0}%",
                evaluated.report.macro_figures.solo[0].estimate.value,
                evaluated.report.macro_figures.tax.points.value,
                100.0 * evaluated.shorthand
            ));
            sweep.push((format!("β = {beta}, {label}"), evaluated, arms::clamped_share(&dir)));
        }
    }
    let after_frontier = started.elapsed().as_secs_f64();

    // 5. Comparisons, verdicts, report.
    let problems = |arm: Arm| -> Vec<&[ProblemResult]> {
        runs.iter()
            .filter(|(a, _)| *a == arm)
            .flat_map(|(_, s)| s.iter().map(|r| r.result.report.sets[0].problems.as_slice()))
            .collect()
    };
    let trlvr_vs_grpo = report::compare(&problems(Arm::Trlvr), &problems(Arm::Grpo), 5)?;
    let klreg_vs_grpo = report::compare(&problems(Arm::KlReg), &problems(Arm::Grpo), 6)?;
    let arm_dirs = |arm: Arm| args.seeds.iter().map(move |seed| format!("{}-seed{seed}", arm.name()));
    let clamped: Vec<f64> =
        arm_dirs(Arm::KlReg).filter_map(|d| arms::clamped_share(&args.out.join("arms").join(d))).collect();
    let mut frontier = vec![FrontierPoint {
        setting: format!("β = {}, k3 (the arm above)", rl.beta),
        seeds: args.seeds.len(),
        row: Row::over_seeds(
            &runs
                .iter()
                .filter(|(a, _)| *a == Arm::KlReg)
                .flat_map(|(_, s)| s.iter().map(|r| Row::of(&r.result.report, r.result.shorthand)))
                .collect::<Vec<_>>(),
        ),
        clamped: (!clamped.is_empty()).then(|| clamped.iter().sum::<f64>() / clamped.len() as f64),
        vs_trlvr: report::compare(&problems(Arm::KlReg), &problems(Arm::Trlvr), 7)?,
    }];
    for (i, (setting, evaluated, clamped)) in sweep.iter().enumerate() {
        frontier.push(FrontierPoint {
            setting: setting.clone(),
            seeds: 1,
            row: Row::of(&evaluated.report, evaluated.shorthand),
            clamped: *clamped,
            vs_trlvr: report::compare(
                &[evaluated.report.sets[0].problems.as_slice()],
                &problems(Arm::Trlvr),
                8 + i as u64,
            )?,
        });
    }
    let settings_vs_trlvr: Vec<(String, report::Comparisons)> =
        frontier.iter().map(|p| (p.setting.clone(), p.vs_trlvr)).collect();
    let verdicts = report::verdicts(&trlvr_vs_grpo, &settings_vs_trlvr);
    let mut rows = vec![
        ("base".to_string(), Row::of(&eval_base.report, eval_base.shorthand)),
        ("positive control".to_string(), control_row),
        ("control, self-paired".to_string(), self_row),
    ];
    let run_rows: ArmRuns<Row> = runs
        .iter()
        .map(|(arm, seeds)| {
            let rows = seeds.iter().map(|r| r.map(|e| Row::of(&e.report, e.shorthand))).collect();
            (*arm, rows)
        })
        .collect();
    for (arm, seeds) in &run_rows {
        let r: Vec<Row> = seeds.iter().map(|s| s.result).collect();
        rows.push((arm.name().to_string(), Row::over_seeds(&r)));
    }
    let wall = started.elapsed().as_secs_f64();
    let load_after = load_average();
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let [base_recipe, junior_recipe, control_recipe] = models::recipes(args.quick);
    let settings = vec![
        format!("mode: {}", if args.quick { "--quick" } else { "full" }),
        format!("task: {}", serde_json::to_string(&task)?),
        format!("base: {}", serde_json::to_string(&base_recipe)?),
        format!("junior: {}", serde_json::to_string(&junior_recipe)?),
        format!("positive control: {}", serde_json::to_string(&control_recipe)?),
        format!("RL: {}", serde_json::to_string(&rl)?),
        "arms: GRPO = solo rollouts; TRLVR = word-boundary handoffs with the junior (p_sen 0.5, K 32), \
         loss on senior tokens; KL-Reg = solo + β·k3 KL(senior ‖ junior). GRPO defaults otherwise (ε 0.2, \
         dual clip 3, token-mean), rollouts at T 0.6"
            .into(),
        format!(
            "evaluation: {} held-out problems, n {} per mode, T 0.7 / top-p 0.8 / top-k 20, step alternation \
             (one step per turn, senior first)",
            rl.eval_problems, rl.eval_n
        ),
        format!("seeds: {:?}", args.seeds),
        format!("device: {}", args.device),
    ];
    let timing = vec![
        format!(
            "total: {wall:.0} s on {cores} cores (load average before {load_before}, after {load_after})"
        ),
        format!(
            "supervised models: {after_sft:.0} s ({})",
            if models.sft_seconds > 0.0 { "trained" } else { "from the cache" }
        ),
        format!("base and control evaluations: {:.0} s", after_controls - after_sft),
        format!("arms (training and evaluation): {:.0} s", after_arms - after_controls),
        format!(
            "KL-Reg's frontier ({} settings, seed {frontier_seed}): {:.0} s",
            sweep.len(),
            after_frontier - after_arms
        ),
    ];
    let metrics: Vec<(Arm, Vec<Vec<serde_json::Value>>)> = Arm::ALL
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
        .collect();
    let plots = plots::draw(&args.out, &metrics)?;
    let control = (control_ok, control_why);
    let input = ReportInput {
        rows,
        runs: run_rows,
        trlvr_vs_grpo,
        klreg_vs_grpo,
        frontier: frontier.clone(),
        verdicts: &verdicts,
        control,
        settings,
        timing,
        plots,
    };
    std::fs::write(args.out.join("report.md"), report::markdown(&input))?;
    let eval_json = json!({
        "base": eval_base, "positive_control": eval_control, "control_self_paired": eval_self,
        "arms": runs.iter().map(|(arm, seeds)| json!({ "arm": arm, "seeds": seeds })).collect::<Vec<_>>(),
        "table": input.rows.iter().map(|(l, r)| json!({ "model": l, "row": r })).collect::<Vec<_>>(),
        "comparisons": {
            "trlvr_vs_grpo": trlvr_vs_grpo, "klreg_vs_grpo": klreg_vs_grpo,
            "klreg_frontier": frontier,
        },
        "verdicts": verdicts, "positive_control_passed": control_ok, "wall_s": wall,
    });
    std::fs::write(args.out.join("eval.json"), serde_json::to_string_pretty(&eval_json)?)?;
    eprintln!("report: {} ({wall:.0} s)", args.out.join("report.md").display());
    if !control_ok {
        bail!(
            "the positive control failed: the evaluation is blind (see {})",
            args.out.join("report.md").display()
        );
    }
    Ok(())
}
