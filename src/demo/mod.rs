//! `trlvr demo`: the paper's comparison in miniature on a CPU. A base and a weaker junior
//! are trained from scratch on a running-sum task ([`trlvr::demo`]); GRPO, TRLVR, KL-Reg
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
mod models;
mod plots;
mod report;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use burn::module::Module;
use burn::prelude::Device;
use serde_json::json;
use trlvr::demo::SumTask;
use trlvr::demo::task::Split;
use trlvr::device::parse_device;
use trlvr::objective::{GrpoConfig, KlEstimator};
use trlvr::train::Example;
use trlvr_junior_kl::JuniorKl;

use arms::{Arm, Context, Evaluated, RlSettings};
use models::Models;
use report::{
    ArmRuns, CONTROL_CE_RATIO, CONTROL_TAX_POINTS, FrontierPoint, LiteracyPoint, ReportInput, Row, SeedRun,
};

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
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    seeds: Vec<u64>,
    /// Runs trained side by side (0: one per core).
    #[arg(long, default_value_t = 0)]
    jobs: usize,
    /// Override the rollout-token budget of each arm.
    #[arg(long)]
    token_budget: Option<usize>,
    /// Override the RL learning rate.
    #[arg(long)]
    lr: Option<f64>,
    /// Read the comparisons of an `eval.json` this command wrote, print the verdicts they
    /// give as JSON and exit (no training): to check a report, or what-if tables.
    #[arg(long, value_name = "EVAL_JSON")]
    verdicts_from: Option<PathBuf>,
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
            token_budget: 120_000,
            prompts_per_step: 4,
            group_size: 8,
            lr: 1e-4,
            beta: 0.05,
            sweep_betas: vec![0.01, 0.1, 1.0, 10.0],
            probe_every: 10,
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

/// One RL run of the study: an arm at a seed, a KL-Reg setting of the frontier, or TRLVR
/// with a literate junior of the sweep.
#[derive(Debug, Clone)]
struct Job {
    arm: Arm,
    seed: u64,
    /// KL-Reg's β and estimator (the arm's own for the arms).
    beta: f64,
    estimator: KlEstimator,
    /// The frontier's label, `None` for the arms.
    frontier: Option<String>,
    /// The specificity sweep: TRLVR with this literate junior (an index of
    /// `Models::literate_juniors`).
    literacy: Option<usize>,
}

impl Job {
    fn folder(&self, models: &Models) -> String {
        if let Some(k) = self.literacy {
            return format!("trlvr-with-{}-seed{}", models.literate_juniors[k].0.name, self.seed);
        }
        match &self.frontier {
            None => format!("{}-seed{}", self.arm.name(), self.seed),
            Some(_) => {
                let label = if self.estimator == KlEstimator::K3Plus { "k3plus" } else { "k3" };
                format!("kl-reg-{label}-beta{}-seed{}", self.beta, self.seed)
            }
        }
    }
}

/// Runs `job` on each item, `threads` at a time, in a pool that Burn's CPU kernels share
/// (so the cores are never oversubscribed); results in the items' order.
fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    threads: usize,
    job: impl Fn(&I) -> Result<T> + Sync + Send,
) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build()?;
    pool.install(|| items.par_iter().with_max_len(1).map(job).collect())
}

/// The verdicts of the comparisons saved in a demo's `eval.json`.
fn verdicts_from(path: &std::path::Path) -> Result<report::Verdicts> {
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

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    if let Some(path) = &args.verdicts_from {
        use std::io::Write as _;
        let verdicts = verdicts_from(path)?;
        writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&verdicts)?)?;
        return Ok(());
    }
    let started = Instant::now();
    let load_before = load_average();
    if args.seeds.is_empty() {
        bail!("--seeds needs at least one seed");
    }
    let threads = match args.jobs {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    };
    let device: Device = parse_device(&args.device)?;
    let train_device = device.clone().autodiff();
    let task = SumTask::default();
    task.validate()?;
    let classes = task.classes()?;
    let mut rl = rl_settings(args.quick);
    rl.token_budget = args.token_budget.unwrap_or(rl.token_budget);
    rl.lr = args.lr.unwrap_or(rl.lr);
    std::fs::create_dir_all(&args.out)?;
    let log = |line: String| eprintln!("[{:>5.0}s] {line}", started.elapsed().as_secs_f64());

    // 1. The supervised models (cached).
    let models = models::ensure_all(&task, args.quick, &models::cache_dir(&args.out), &train_device, &log)?;
    let after_sft = started.elapsed().as_secs_f64();

    // 2. Problems: training and evaluation from the two sides of the task's hash split.
    let ctx = Context {
        task: &task,
        classes: &classes,
        train: task
            .problems(Split::Train, 4096, 11)?
            .iter()
            .map(|p| Example { prompt: task.prompt(p), reference: p.sum().to_string() })
            .collect(),
        eval: task.problems(Split::Validation, rl.eval_problems, 1_000_003)?,
        rl: &rl,
    };

    // 3. The base, the positive control and its self-paired check.
    let base = models.base.valid();
    // The last pairs measure each partner's literacy: the shorthand-only control's handoff
    // accuracy with it.
    let mut pairs = vec![
        (&base, &models.junior),
        (&models.control, &models.junior),
        (&models.control, &models.control),
        (&models.control, &base),
    ];
    pairs.extend(models.literate_juniors.iter().map(|(_, j)| (&models.control, j)));
    let mut fixed = in_parallel(&pairs, threads, |(senior, junior)| {
        arms::evaluate(&ctx, senior, junior, &ctx.eval, rl.eval_n)
    })?
    .into_iter();
    let mut next = || fixed.next().expect("one per pair");
    let (eval_base, eval_control, eval_self, control_with_base) = (next(), next(), next(), next());
    let literacy_of: Vec<Evaluated> = models.literate_juniors.iter().map(|_| next()).collect();
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

    // 4. Every RL run, side by side: each arm at each seed, then KL-Reg's frontier (one seed
    // at each β with each estimator). Each is trained into its folder and evaluated on the
    // held-out problems (eval.json beside it).
    let mut jobs: Vec<Job> = Arm::ALL
        .iter()
        .flat_map(|&arm| {
            args.seeds.iter().map(move |&seed| Job {
                arm,
                seed,
                beta: rl.beta,
                estimator: KlEstimator::K3,
                frontier: None,
                literacy: None,
            })
        })
        .collect();
    let frontier_seed = args.seeds[0];
    for (estimator, label) in [(KlEstimator::K3, "k3"), (KlEstimator::K3Plus, "k3+")] {
        for &beta in &rl.sweep_betas {
            jobs.push(Job {
                arm: Arm::KlReg,
                seed: frontier_seed,
                beta,
                estimator,
                frontier: Some(format!("β = {beta}, {label}")),
                literacy: None,
            });
        }
    }
    for k in 0..models.literate_juniors.len() {
        jobs.push(Job {
            arm: Arm::Trlvr,
            seed: frontier_seed,
            beta: rl.beta,
            estimator: KlEstimator::K3,
            frontier: None,
            literacy: Some(k),
        });
    }
    let literate_partner = base.clone();
    let results = in_parallel(&jobs, threads, |job| {
        let dir = args.out.join("arms").join(job.folder(&models));
        let objective = JuniorKl::new(GrpoConfig::default(), job.beta)?.with_estimator(job.estimator);
        let partner = match (job.arm, job.literacy) {
            (_, Some(k)) => &models.literate_juniors[k].1,
            (Arm::TrlvrLiterate, None) => &literate_partner,
            _ => &models.junior,
        };
        let trained = arms::train(&ctx, job.arm, &objective, job.seed, &models, partner, &dir, &log)?;
        let evaluated = arms::evaluate(&ctx, &trained.senior, &models.junior, &ctx.eval, rl.eval_n)?;
        std::fs::write(dir.join("eval.json"), serde_json::to_string_pretty(&evaluated)?)?;
        log(format!(
            "{}: {} steps in {:.0} s; solo {:.1}%, handoff {:.1}%, junior CE {:.3}, shorthand {:.0}%",
            job.folder(&models),
            trained.steps,
            trained.seconds,
            evaluated.report.macro_figures.solo[0].estimate.value,
            evaluated.report.macro_figures.handoff[0].estimate.value,
            evaluated.report.macro_figures.legibility.junior_ce.value,
            100.0 * evaluated.shorthand
        ));
        let clamped = arms::clamped_share(&dir);
        anyhow::Ok((
            SeedRun {
                seed: job.seed,
                result: evaluated,
                steps: trained.steps,
                tokens: trained.tokens,
                seconds: trained.seconds,
            },
            clamped,
        ))
    })?;
    let after_runs = started.elapsed().as_secs_f64();
    let mut runs: ArmRuns<Evaluated> = Arm::ALL.iter().map(|&arm| (arm, Vec::new())).collect();
    let mut sweep = Vec::new();
    let mut literacy_runs = Vec::new();
    let mut arm_clamped = Vec::new();
    for (job, (run, clamped)) in jobs.iter().zip(results) {
        if job.literacy.is_some() {
            literacy_runs.push(run.result);
            continue;
        }
        match &job.frontier {
            None => {
                if job.arm == Arm::KlReg {
                    arm_clamped.extend(clamped);
                }
                runs.iter_mut().find(|(a, _)| *a == job.arm).expect("every arm").1.push(run);
            }
            Some(setting) => sweep.push((setting.clone(), run.result, clamped)),
        }
    }

    // 5. Comparisons, verdicts, report.
    fn view(e: &Evaluated) -> report::Run<'_> {
        report::Run { problems: &e.report.sets[0].problems, notations: &e.notations }
    }
    let of = |arm: Arm| -> Vec<report::Run<'_>> {
        runs.iter().filter(|(a, _)| *a == arm).flat_map(|(_, s)| s.iter().map(|r| view(&r.result))).collect()
    };
    let grpo_vs_base = report::compare(&of(Arm::Grpo), &[view(&eval_base)], 4)?;
    let trlvr_vs_grpo = report::compare(&of(Arm::Trlvr), &of(Arm::Grpo), 5)?;
    let klreg_vs_grpo = report::compare(&of(Arm::KlReg), &of(Arm::Grpo), 6)?;
    let literate_vs_grpo = report::compare(&of(Arm::TrlvrLiterate), &of(Arm::Grpo), 7)?;
    // An arm's row: the mean over its seeds.
    let arm_row = |arm: Arm| {
        Row::over_seeds(
            &runs
                .iter()
                .filter(|(a, _)| *a == arm)
                .flat_map(|(_, s)| s.iter().map(|r| Row::of(&r.result.report, r.result.shorthand)))
                .collect::<Vec<_>>(),
        )
    };
    let mut frontier = vec![FrontierPoint {
        setting: format!("β = {}, k3 (the arm above)", rl.beta),
        seeds: args.seeds.len(),
        row: arm_row(Arm::KlReg),
        clamped: (!arm_clamped.is_empty())
            .then(|| arm_clamped.iter().sum::<f64>() / arm_clamped.len() as f64),
        vs_trlvr: report::compare(&of(Arm::KlReg), &of(Arm::Trlvr), 8)?,
    }];
    for (i, (setting, evaluated, clamped)) in sweep.iter().enumerate() {
        frontier.push(FrontierPoint {
            setting: setting.clone(),
            seeds: 1,
            row: Row::of(&evaluated.report, evaluated.shorthand),
            clamped: *clamped,
            vs_trlvr: report::compare(&[view(evaluated)], &of(Arm::Trlvr), 9 + i as u64)?,
        });
    }
    // The specificity sweep: TRLVR's notation against its partner's literacy, from the
    // weak junior (the TRLVR arm) through the literate juniors to the base.
    let handoff = |e: &Evaluated| e.report.macro_figures.handoff[0].estimate;
    let mut literacy = vec![LiteracyPoint {
        partner: "the junior (plain only; the TRLVR arm)".into(),
        literacy: handoff(&eval_control),
        seeds: args.seeds.len(),
        row: arm_row(Arm::Trlvr),
    }];
    for (((recipe, _), reads), run) in models.literate_juniors.iter().zip(&literacy_of).zip(&literacy_runs) {
        literacy.push(LiteracyPoint {
            partner: format!("the junior + {} steps on mixed chains", recipe.sft.steps),
            literacy: handoff(reads),
            seeds: 1,
            row: Row::of(&run.report, run.shorthand),
        });
    }
    literacy.push(LiteracyPoint {
        partner: "the base (the TRLVR, literate junior arm)".into(),
        literacy: handoff(&control_with_base),
        seeds: args.seeds.len(),
        row: arm_row(Arm::TrlvrLiterate),
    });
    let settings_vs_trlvr: Vec<(String, report::Comparisons)> =
        frontier.iter().map(|p| (p.setting.clone(), p.vs_trlvr)).collect();
    let verdicts = report::verdicts(&trlvr_vs_grpo, &settings_vs_trlvr, Some(&literate_vs_grpo));
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
        format!(
            "literate juniors (from the junior): {}",
            serde_json::to_string(&models.literate_juniors.iter().map(|(r, _)| r).collect::<Vec<_>>())?
        ),
        format!("RL: {}", serde_json::to_string(&rl)?),
        "arms: GRPO = solo rollouts; TRLVR = word-boundary handoffs with the junior (p_sen 0.5, K 32), \
         loss on senior tokens; KL-Reg = solo + β·k3 KL(senior ‖ junior); TRLVR, literate junior = TRLVR \
         paired with the frozen base instead of the junior. GRPO defaults otherwise (ε 0.2, dual clip 3, \
         token-mean), rollouts at T 0.6"
            .into(),
        format!(
            "evaluation: {} held-out problems, n {} per mode, T 0.7 / top-p 0.8 / top-k 20, step alternation \
             (one step per turn, senior first), every arm with the weak junior",
            rl.eval_problems, rl.eval_n
        ),
        format!("seeds: {:?}", args.seeds),
        format!("device: {}, {threads} runs at a time", args.device),
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
        format!(
            "RL runs ({} arm runs, {} KL-Reg settings, {} literate juniors; training and evaluation, {threads} at a \
             time): {:.0} s",
            jobs.len() - sweep.len() - literacy_runs.len(),
            sweep.len(),
            literacy_runs.len(),
            after_runs - after_controls
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
    let mut plots = plots::draw(&args.out, &metrics)?;
    plots.push(plots::frontier(&args.out, &frontier, &rows)?);
    let control = (control_ok, control_why);
    let input = ReportInput {
        rows,
        runs: run_rows,
        grpo_vs_base,
        trlvr_vs_grpo,
        klreg_vs_grpo,
        literate_vs_grpo: Some(literate_vs_grpo),
        literacy: literacy.clone(),
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
            "grpo_vs_base": grpo_vs_base, "trlvr_vs_grpo": trlvr_vs_grpo, "klreg_vs_grpo": klreg_vs_grpo,
            "literate_vs_grpo": literate_vs_grpo, "klreg_frontier": frontier, "literacy_sweep": literacy,
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
