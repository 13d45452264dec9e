//! The models the study evaluates: the base and the positive control before any RL, then
//! every RL run (each arm at each seed, KL-Reg's frontier, TRLVR with literate juniors),
//! side by side.

use std::path::Path;

use anyhow::Result;
use trlvr::objective::{GrpoConfig, KlEstimator};
use trlvr_junior_kl::JuniorKl;
use trlvr_models::Decoder;

use super::arms::{self, Arm, Context, Evaluated, RlSettings};
use super::models::Models;
use super::report::{ArmRuns, CONTROL_CE_RATIO, CONTROL_TAX_POINTS, Row, SeedRun};

/// One RL run of the study: an arm at a seed, a KL-Reg setting of the frontier, or TRLVR
/// with a literate junior of the sweep.
#[derive(Debug, Clone)]
pub(super) struct Job {
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

/// The base and the positive control, evaluated before any RL.
pub(super) struct Controls {
    pub(super) base: Evaluated,
    /// The shorthand-only control with the weak junior.
    pub(super) control: Evaluated,
    /// The control as its own junior.
    pub(super) self_paired: Evaluated,
    /// The control with the base as its junior: the base's literacy.
    pub(super) control_with_base: Evaluated,
    /// The control with each literate junior: their literacy.
    pub(super) literacy_of: Vec<Evaluated>,
    /// Whether the positive control passed (the evaluation is not blind).
    pub(super) passed: bool,
    /// The figures that decided it.
    pub(super) why: String,
}

impl Controls {
    /// Evaluates the base and the control with each partner side by side, then judges the
    /// control.
    pub(super) fn evaluate(
        ctx: &Context<'_>,
        models: &Models,
        base: &Decoder,
        threads: usize,
        log: &(dyn Fn(String) + Sync),
    ) -> Result<Self> {
        // The last pairs measure each partner's literacy: the shorthand-only control's
        // handoff accuracy with it.
        let mut pairs = vec![
            (base, &models.junior),
            (&models.control, &models.junior),
            (&models.control, &models.control),
            (&models.control, base),
        ];
        pairs.extend(models.literate_juniors.iter().map(|(_, j)| (&models.control, j)));
        let mut fixed = in_parallel(&pairs, threads, |(senior, junior)| {
            arms::evaluate(ctx, senior, junior, &ctx.eval, ctx.rl.eval_n)
        })?
        .into_iter();
        let mut next = || fixed.next().expect("one per pair");
        let (base, control, self_paired, control_with_base) = (next(), next(), next(), next());
        let literacy_of: Vec<Evaluated> = models.literate_juniors.iter().map(|_| next()).collect();
        log(format!(
            "base: solo {:.1}%, handoff {:.1}%, shorthand {:.0}%",
            base.report.macro_figures.solo[0].estimate.value,
            base.report.macro_figures.handoff[0].estimate.value,
            100.0 * base.shorthand
        ));
        let (passed, why) = judge_control(&control, &self_paired);
        log(format!("positive control: {}; {why}", if passed { "passed" } else { "FAILED" }));
        Ok(Self { base, control, self_paired, control_with_base, literacy_of, passed, why })
    }
}

/// Whether the shorthand-only control pays a large tax and costs the weak junior far more
/// than it costs itself: if not, the evaluation cannot see illegibility.
fn judge_control(control: &Evaluated, self_paired: &Evaluated) -> (bool, String) {
    let control = Row::of(&control.report, control.shorthand);
    let self_paired = Row::of(&self_paired.report, self_paired.shorthand);
    let passed = control.tax.value >= CONTROL_TAX_POINTS
        && control.junior_ce.value >= CONTROL_CE_RATIO * self_paired.junior_ce.value
        && control.junior_ce.low > self_paired.junior_ce.high;
    let why = format!(
        "The shorthand-only senior with the weak junior pays a tax of {} points (needed: at least \
         {CONTROL_TAX_POINTS}) and its chains cost the junior {} nats per token, against {} in the \
         self-paired check (the control as its own junior; needed: at least {CONTROL_CE_RATIO}× and \
         separate intervals).",
        control.tax.show(1),
        control.junior_ce.show(3),
        self_paired.junior_ce.show(3)
    );
    (passed, why)
}

/// Every RL run: each arm at each seed, then KL-Reg's frontier (the first seed at each β
/// with each estimator), then TRLVR with each literate junior (the first seed).
pub(super) fn jobs(seeds: &[u64], rl: &RlSettings, literate_juniors: usize) -> Vec<Job> {
    let arm_job = |arm, seed| Job {
        arm,
        seed,
        beta: rl.beta,
        estimator: KlEstimator::K3,
        frontier: None,
        literacy: None,
    };
    let mut jobs: Vec<Job> =
        Arm::ALL.iter().flat_map(|&arm| seeds.iter().map(move |&seed| arm_job(arm, seed))).collect();
    let first = seeds[0];
    for (estimator, label) in [(KlEstimator::K3, "k3"), (KlEstimator::K3Plus, "k3+")] {
        for &beta in &rl.sweep_betas {
            jobs.push(Job {
                beta,
                estimator,
                frontier: Some(format!("β = {beta}, {label}")),
                ..arm_job(Arm::KlReg, first)
            });
        }
    }
    jobs.extend((0..literate_juniors).map(|k| Job { literacy: Some(k), ..arm_job(Arm::Trlvr, first) }));
    jobs
}

/// Trains `job` into its folder under `out` and evaluates its senior with the weak junior
/// (eval.json beside it); also returns KL-Reg's share of tokens at k3's clamp.
fn run_job(
    out: &Path,
    ctx: &Context<'_>,
    models: &Models,
    literate_partner: &Decoder,
    job: &Job,
    log: &(dyn Fn(String) + Sync),
) -> Result<(SeedRun<Evaluated>, Option<f64>)> {
    let dir = out.join("arms").join(job.folder(models));
    let objective = JuniorKl::new(GrpoConfig::default(), job.beta)?.with_estimator(job.estimator);
    let partner = match (job.arm, job.literacy) {
        (_, Some(k)) => &models.literate_juniors[k].1,
        (Arm::TrlvrLiterate, None) => literate_partner,
        _ => &models.junior,
    };
    let trained = arms::train(ctx, job.arm, &objective, job.seed, models, partner, &dir, log)?;
    let evaluated = arms::evaluate(ctx, &trained.senior, &models.junior, &ctx.eval, ctx.rl.eval_n)?;
    std::fs::write(dir.join("eval.json"), serde_json::to_string_pretty(&evaluated)?)?;
    log(format!(
        "{}: {} steps in {:.0} s; solo {:.1}%, handoff {:.1}%, junior CE {:.3}, shorthand {:.0}%",
        job.folder(models),
        trained.steps,
        trained.seconds,
        evaluated.report.macro_figures.solo[0].estimate.value,
        evaluated.report.macro_figures.handoff[0].estimate.value,
        evaluated.report.macro_figures.legibility.junior_ce.value,
        100.0 * evaluated.shorthand
    ));
    let run = SeedRun {
        seed: job.seed,
        result: evaluated,
        steps: trained.steps,
        tokens: trained.tokens,
        seconds: trained.seconds,
    };
    Ok((run, arms::clamped_share(&dir)))
}

/// What the RL runs gave, sorted by what they are for.
pub(super) struct Runs {
    /// Each arm's seeds.
    pub(super) arms: ArmRuns<Evaluated>,
    /// KL-Reg's frontier: each setting's label, evaluation and share at k3's clamp.
    pub(super) sweep: Vec<(String, Evaluated, Option<f64>)>,
    /// TRLVR with each literate junior.
    pub(super) literacy: Vec<Evaluated>,
    /// The KL-Reg arm's shares at k3's clamp, one per seed that logged one.
    pub(super) arm_clamped: Vec<f64>,
}

impl Runs {
    /// Runs every job, `threads` at a time.
    pub(super) fn train(
        out: &Path,
        ctx: &Context<'_>,
        models: &Models,
        base: &Decoder,
        jobs: &[Job],
        threads: usize,
        log: &(dyn Fn(String) + Sync),
    ) -> Result<Self> {
        let literate_partner = base.clone();
        let results =
            in_parallel(jobs, threads, |job| run_job(out, ctx, models, &literate_partner, job, log))?;
        let mut runs = Runs {
            arms: Arm::ALL.iter().map(|&arm| (arm, Vec::new())).collect(),
            sweep: Vec::new(),
            literacy: Vec::new(),
            arm_clamped: Vec::new(),
        };
        for (job, (run, clamped)) in jobs.iter().zip(results) {
            if job.literacy.is_some() {
                runs.literacy.push(run.result);
                continue;
            }
            match &job.frontier {
                None => {
                    if job.arm == Arm::KlReg {
                        runs.arm_clamped.extend(clamped);
                    }
                    runs.arms.iter_mut().find(|(a, _)| *a == job.arm).expect("every arm").1.push(run);
                }
                Some(setting) => runs.sweep.push((setting.clone(), run.result, clamped)),
            }
        }
        Ok(runs)
    }

    /// How many arm runs there were (all seeds of all arms).
    pub(super) fn arm_runs(&self) -> usize {
        self.arms.iter().map(|(_, seeds)| seeds.len()).sum()
    }
}
