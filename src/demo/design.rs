//! What the demo's study is: the command's arguments, the RL settings of a full and a
//! quick run, the arms (with KL-Reg's frontier and the literacy sweep), the evaluations
//! and the claims, declared here before anything runs.

use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::Serialize;
use serde_json::json;
use trlvr::objective::KlEstimator;
use trlvr::study::{AnalysisConfig, ClaimSpec, Names, check_claims};

use crate::study::runner::{Design, DesignArm};

/// Arguments of `trlvr demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A two-minute version (smaller models, budget and evaluation) for CI and first contact.
    #[arg(long)]
    pub quick: bool,
    /// Output folder (models are cached under it; finished runs are kept).
    #[arg(long, default_value = "runs/demo")]
    pub out: PathBuf,
    /// Seeds of the arms, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3,4,5")]
    pub seeds: Vec<u64>,
    /// Runs trained side by side (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Override the rollout-token budget of each arm.
    #[arg(long)]
    pub token_budget: Option<usize>,
    /// Override the RL learning rate.
    #[arg(long)]
    pub lr: Option<f64>,
    /// Device: flex (CPU), cuda[:N], tch.
    #[arg(long, default_value = "flex")]
    pub device: String,
}

/// Settings of the RL stage and of evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct RlSettings {
    /// Rollout tokens (both authors) each arm may spend.
    pub token_budget: usize,
    /// Prompts per step.
    pub prompts_per_step: usize,
    /// Rollouts per prompt.
    pub group_size: usize,
    /// Learning rate (AdamW, constant).
    pub lr: f64,
    /// β of KL-Reg.
    pub beta: f64,
    /// KL-Reg's frontier: one seed at each of these β, with each estimator (k3, k3+).
    pub sweep_betas: Vec<f64>,
    /// Probe the senior every this many steps.
    pub probe_every: usize,
    /// Problems of the probe.
    pub probe_problems: usize,
    /// Held-out problems of the final evaluation.
    pub eval_problems: usize,
    /// Samples per problem and mode in the final evaluation.
    pub eval_n: usize,
}

impl RlSettings {
    /// A full run's, or a quick one's; with the command line's overrides.
    pub fn of(args: &Args) -> Self {
        let mut rl = if args.quick {
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
        };
        rl.token_budget = args.token_budget.unwrap_or(rl.token_budget);
        rl.lr = args.lr.unwrap_or(rl.lr);
        rl
    }
}

/// A frozen model of the demo: the senior's start, the shorthand-only control, the
/// weak junior, or a literate junior of the sweep (an index of `Models::literate_juniors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// The base.
    Base,
    /// The positive control.
    Control,
    /// The weak junior (plain notation only).
    Junior,
    /// A literate junior.
    Literate(usize),
}

/// How an arm's runs are made.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Training {
    /// Not trained: the model evaluated as it is.
    Fixed(Model),
    /// GRPO: solo rollouts.
    Grpo,
    /// TRLVR with `partner` as the co-author (the weak junior in the arm itself).
    Trlvr {
        /// The co-author.
        partner: Model,
    },
    /// KL-Reg: solo rollouts, GRPO + β·KL(senior ‖ junior).
    KlReg {
        /// β.
        beta: f64,
        /// The estimator.
        estimator: KlEstimator,
    },
}

/// One arm of the demo.
#[derive(Debug, Clone, Serialize)]
pub struct DemoArm {
    /// Its name (tables, folders, claims).
    pub name: String,
    /// How its runs are made.
    pub training: Training,
    /// Its seeds (one, unused, when not trained).
    pub seeds: Vec<u64>,
    /// Its evaluations.
    pub evaluations: Vec<String>,
}

/// The evaluations: each the held-out problems with one partner in the handoff mode
/// (`None`: the senior as its own junior). `junior` (the weak junior) is every arm's; the
/// others measure how well each partner reads the control's shorthand.
pub fn evaluations(literate: &[&str]) -> Vec<(String, Option<Model>)> {
    let mut e = vec![
        ("junior".to_string(), Some(Model::Junior)),
        ("self".into(), None),
        ("base".into(), Some(Model::Base)),
    ];
    e.extend(literate.iter().enumerate().map(|(k, name)| ((*name).to_string(), Some(Model::Literate(k)))));
    e
}

/// The demo's arms, in table order: the base and the control evaluated as they are, the
/// four arms at every seed, KL-Reg's frontier and the literacy sweep at the first seed.
pub fn arms(seeds: &[u64], rl: &RlSettings, literate: &[&str]) -> Vec<DemoArm> {
    let junior = || vec!["junior".to_string()];
    let arm = |name: &str, training, seeds: &[u64]| DemoArm {
        name: name.into(),
        training,
        seeds: seeds.to_vec(),
        evaluations: junior(),
    };
    let first = &seeds[..1];
    let mut control = arm("control", Training::Fixed(Model::Control), &[0]);
    control.evaluations = evaluations(literate).into_iter().map(|(name, _)| name).collect();
    let mut arms = vec![
        arm("base", Training::Fixed(Model::Base), &[0]),
        control,
        arm("grpo", Training::Grpo, seeds),
        arm("trlvr", Training::Trlvr { partner: Model::Junior }, seeds),
        arm("kl-reg", Training::KlReg { beta: rl.beta, estimator: KlEstimator::K3 }, seeds),
        arm("trlvr-literate", Training::Trlvr { partner: Model::Base }, seeds),
    ];
    for (estimator, label) in [(KlEstimator::K3, "k3"), (KlEstimator::K3Plus, "k3plus")] {
        for &beta in &rl.sweep_betas {
            arms.push(arm(&format!("kl-reg-{label}-beta{beta}"), Training::KlReg { beta, estimator }, first));
        }
    }
    for (k, name) in literate.iter().enumerate() {
        arms.push(arm(&format!("trlvr-with-{name}"), Training::Trlvr { partner: Model::Literate(k) }, first));
    }
    arms
}

/// TRLVR's and GRPO's solo pass@1 count as equivalent (claim 1) within ± this many points.
pub const EQUIVALENCE_POINTS: f64 = 5.0;
/// A tax counts as near zero (claim 2) below this many points.
pub const NEAR_ZERO_TAX_POINTS: f64 = 5.0;
/// The specificity control keeps GRPO's shorthand within ± this many points.
pub const SHORTHAND_POINTS: f64 = 10.0;

/// The half-width the design expects of a solo or shorthand difference between two arms
/// of all seeds: in the full run (128 problems × 4 samples, 5 seeds), about what the last
/// full run gave for arms that did not differ (docs/demo/report.md: KL-Reg − GRPO ±2.0,
/// TRLVR with a literate junior − GRPO ±2.5 points); about twice that in the quick run
/// (48 × 2), where claim 1 is then not testable by design.
fn expected_half_width(quick: bool) -> f64 {
    if quick { 6.0 } else { 3.0 }
}

/// The claims of method.md §6 (and the specificity control), declared before the run.
pub fn claims(arms: &[DemoArm], quick: bool) -> Result<Vec<trlvr::study::Claim>> {
    let h = expected_half_width(quick);
    let settings: Vec<&str> = arms
        .iter()
        .filter(|a| matches!(a.training, Training::KlReg { .. }))
        .map(|a| a.name.as_str())
        .collect();
    let specs: Vec<ClaimSpec> = serde_json::from_value(json!([
        {
            "id": "solo", "statement": "TRLVR ≈ GRPO on solo accuracy",
            "figure": "solo", "a": "trlvr", "b": "grpo", "within": EQUIVALENCE_POINTS, "expected_half_width": h,
        },
        {
            "id": "handoff", "statement": "TRLVR ≫ GRPO on handoff accuracy: its tax below GRPO's and near zero",
            "tests": [
                { "figure": "tax", "a": "trlvr", "b": "grpo", "below": 0.0 },
                { "figure": "tax", "a": "trlvr", "below": NEAR_ZERO_TAX_POINTS },
            ],
        },
        {
            "id": "legible", "statement": "TRLVR's chains are more legible (lower junior CE) and drift less",
            "tests": [
                { "figure": "junior_ce", "a": "trlvr", "b": "grpo", "below": 0.0 },
                { "figure": "kl", "a": "trlvr", "b": "grpo", "below": 0.0 },
            ],
        },
        {
            "id": "kl-reg", "statement": "KL-Reg does not reproduce the combination: no setting reaches TRLVR's tax at its solo accuracy",
            "rule": "none", "each": settings,
            "tests": [
                { "figure": "tax", "a": "{each}", "b": "trlvr", "below": NEAR_ZERO_TAX_POINTS },
                { "figure": "solo", "a": "{each}", "b": "trlvr", "above": -EQUIVALENCE_POINTS },
            ],
        },
        {
            "id": "specificity", "statement": "TRLVR with a shorthand-literate junior keeps GRPO's shorthand (the specificity control)",
            "figure": "shorthand", "a": "trlvr-literate", "b": "grpo", "within": SHORTHAND_POINTS, "expected_half_width": h,
        },
    ]))?;
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    let evaluations: Vec<String> = vec!["junior".into()];
    Ok(check_claims(
        &specs,
        Names { arms: &names, evaluations: &evaluations, columns: &["shorthand".to_string()] },
    )?)
}

/// The demo as a study design.
pub fn design(arms: &[DemoArm], literate: &[&str], quick: bool) -> Result<Design> {
    if arms.iter().any(|a| a.seeds.is_empty()) {
        bail!("--seeds needs at least one seed");
    }
    Ok(Design {
        name: "demo".into(),
        arms: arms
            .iter()
            .map(|a| DesignArm {
                name: a.name.clone(),
                trained: !matches!(a.training, Training::Fixed(_)),
                seeds: a.seeds.clone(),
                evaluations: a.evaluations.clone(),
            })
            .collect(),
        evaluations: evaluations(literate).into_iter().map(|(name, _)| name).collect(),
        claims: claims(arms, quick)?,
        analysis: AnalysisConfig::default(),
    })
}
