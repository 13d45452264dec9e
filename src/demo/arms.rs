//! The three arms (GRPO, TRLVR, KL-Reg) trained from one base on one rollout-token budget,
//! with a small evaluation probe during training, and the evaluation every model gets.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use burn::module::Module;
use serde::Serialize;
use serde_json::{Value, json};
use trlvr::eval::{EvalConfig, EvalProblem, EvalSet, Evaluation, Mode, Report, SampleStore, prompt_hash};
use trlvr::prelude::*;
use trlvr::train::{Example, RunDir, Task, TrainConfig, Trainer};
use trlvr_junior_kl::JuniorKl;
use trlvr_models::{Decoder, save_hf_dir};

use super::models::{Models, own_copy};
use super::task::{Problem, SumTask, notation_counts};

/// An arm of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arm {
    /// Solo rollouts, GRPO.
    Grpo,
    /// Tandem rollouts with the junior, GRPO on senior tokens.
    Trlvr,
    /// Solo rollouts, GRPO + β·KL(senior ‖ junior).
    KlReg,
    /// The specificity control: TRLVR paired with a junior that reads shorthand (the
    /// frozen base, the paper's self-paired setting).
    TrlvrLiterate,
}

impl Arm {
    /// All of them, in table order.
    pub const ALL: [Arm; 4] = [Arm::Grpo, Arm::Trlvr, Arm::KlReg, Arm::TrlvrLiterate];

    /// The name in tables and folders.
    pub fn name(self) -> &'static str {
        match self {
            Arm::Grpo => "grpo",
            Arm::Trlvr => "trlvr",
            Arm::KlReg => "kl-reg",
            Arm::TrlvrLiterate => "trlvr-literate",
        }
    }
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

/// The shared pieces: task, vocabulary, problems.
pub struct Context<'a> {
    /// The task.
    pub task: &'a SumTask,
    /// Word starts and EOS.
    pub classes: &'a TokenClasses,
    /// Training problems.
    pub train: Vec<Example>,
    /// Held-out evaluation problems.
    pub eval: Vec<Problem>,
    /// Settings.
    pub rl: &'a RlSettings,
}

/// What an evaluation gave, with the notations of the senior's solo steps.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluated {
    /// The figures.
    pub report: Report,
    /// Fraction of the senior's solo steps written in shorthand.
    pub shorthand: f64,
    /// (plain, shorthand) steps of the senior's solo samples, per problem.
    pub notations: Vec<(usize, usize)>,
}

/// Evaluates `senior` with `junior` on `problems` (`n` samples per problem and mode).
pub fn evaluate(
    ctx: &Context<'_>,
    senior: &Decoder,
    junior: &Decoder,
    problems: &[Problem],
    n: usize,
) -> Result<Evaluated> {
    let task = ctx.task;
    let detokenize = |ids: &[TokenId]| task.text(ids);
    let config = EvalConfig {
        n,
        ks: vec![1],
        max_new_tokens: task.max_new_tokens,
        seed: 7,
        batch_problems: 32,
        bootstrap: 400,
        ..EvalConfig::default()
    };
    let eval_problems: Vec<EvalProblem> = problems
        .iter()
        .enumerate()
        .map(|(id, p)| EvalProblem { id, prompt: task.prompt(p), reference: p.sum().to_string() })
        .collect();
    let set = EvalSet::new("sums", eval_problems.clone(), Box::new(task.verifier()));
    let evaluation = Evaluation::new(senior, junior, ctx.classes, config, &detokenize)?;
    let mut store = SampleStore::in_memory();
    let report = evaluation.run(std::slice::from_ref(&set), &mut store, &mut |_| {})?;
    let notations: Vec<(usize, usize)> = eval_problems
        .iter()
        .map(|p| {
            let found = store.get("sums", p.id, Mode::Solo, prompt_hash(&p.prompt));
            found.map_or((0, 0), |f| {
                f.samples
                    .iter()
                    .map(|s| notation_counts(&s.tokens))
                    .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
            })
        })
        .collect();
    let (plain, short) = notations.iter().fold((0, 0), |(a, b), &(c, d)| (a + c, b + d));
    Ok(Evaluated { report, shorthand: short as f64 / (plain + short).max(1) as f64, notations })
}

/// One trained arm.
#[derive(Debug)]
pub struct Trained {
    /// The senior after training (no autodiff).
    pub senior: Decoder,
    /// Steps taken.
    pub steps: usize,
    /// Rollout tokens spent.
    pub tokens: usize,
    /// Wall time of training, probes included.
    pub seconds: f64,
}

/// Trains `arm` from the base with seed `seed` into `dir` (metrics.jsonl, a checkpoint and
/// the senior in the Hugging Face layout under `model/`); `kl` is KL-Reg's objective and
/// `partner` the junior of training (TRLVR's co-author, KL-Reg's reference). Probes
/// measure the tax with the weak junior in every arm.
#[allow(clippy::too_many_arguments)]
pub fn train(
    ctx: &Context<'_>,
    arm: Arm,
    kl: &JuniorKl,
    seed: u64,
    models: &Models,
    partner: &Decoder,
    dir: &Path,
    log: &(dyn Fn(String) + Sync),
) -> Result<Trained> {
    let started = Instant::now();
    let task = ctx.task;
    let verifier = task.verifier();
    let detokenize = |ids: &[TokenId]| task.text(ids);
    let rules = Rules::new()?;
    let (schedule, objective) = rules.of(arm, kl);
    let train_task = Task {
        train: &ctx.train,
        validation: &[],
        verifier: &verifier,
        validation_verifier: &verifier,
        text: &detokenize,
        classes: ctx.classes,
    };
    let config = train_config(ctx, seed);
    let mut trainer = Trainer::new(config, own_copy(&models.base), partner, schedule, objective, train_task)?;
    // A rerun starts the arm afresh: no metrics lines or checkpoints of an older run stay.
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let run = RunDir::open(dir)?;
    let probe = Probe { ctx, arm, seed, junior: &models.junior, log };
    let tokens = spend_budget(&mut trainer, &run, &probe)?;
    let steps = trainer.state().step;
    trainer.save_checkpoint(&run.checkpoint_dir(steps))?;
    let senior = trainer.senior().valid();
    save_hf_dir(&senior, &models.base_config, None, dir.join("model"))?;
    Ok(Trained { senior, steps, tokens, seconds: started.elapsed().as_secs_f64() })
}

/// The RL settings of every arm: one step per `prompts_per_step` prompts, no validation,
/// checkpoints or samples (the probes measure instead).
fn train_config(ctx: &Context<'_>, seed: u64) -> TrainConfig {
    let rl = ctx.rl;
    TrainConfig {
        steps: 100_000,
        prompts_per_step: rl.prompts_per_step,
        group_size: rl.group_size,
        mini_batch_prompts: rl.prompts_per_step,
        micro_batch_rows: rl.prompts_per_step * rl.group_size,
        // Arms run side by side, one per core: a tiny model's update gains nothing from
        // cutting its micro-batch across cores that are busy (measured: 305 -> 314 s).
        lanes: 1,
        max_new_tokens: ctx.task.max_new_tokens,
        lr: rl.lr,
        validate_every: 0,
        checkpoint_every: 0,
        samples_per_step: 0,
        seed,
        ..TrainConfig::default()
    }
}

/// The schedules and objectives the arms pick from.
struct Rules {
    grpo: Grpo,
    solo: Solo,
    word: WordBoundary,
}

impl Rules {
    fn new() -> Result<Self> {
        Ok(Self {
            grpo: Grpo::new(GrpoConfig::default())?,
            solo: Solo::senior(),
            word: WordBoundary::default(),
        })
    }

    /// `arm`'s schedule and objective (`kl` is KL-Reg's).
    fn of<'a>(&'a self, arm: Arm, kl: &'a JuniorKl) -> (&'a dyn HandoffSchedule, &'a dyn Objective) {
        match arm {
            Arm::Grpo => (&self.solo, &self.grpo),
            Arm::Trlvr | Arm::TrlvrLiterate => (&self.word, &self.grpo),
            Arm::KlReg => (&self.solo, kl),
        }
    }
}

/// How a run is probed: its evaluation problems, the weak junior, and where lines go.
struct Probe<'a> {
    ctx: &'a Context<'a>,
    arm: Arm,
    seed: u64,
    junior: &'a Decoder,
    log: &'a (dyn Fn(String) + Sync),
}

impl Probe<'_> {
    /// The senior on the probe's problems with the weak junior (two samples each).
    fn evaluate(&self, senior: &Decoder) -> Result<Evaluated> {
        let rl = self.ctx.rl;
        let problems = &self.ctx.eval[..rl.probe_problems.min(self.ctx.eval.len())];
        evaluate(self.ctx, senior, self.junior, problems, 2)
    }
}

/// Steps until the rollout-token budget is spent, one metrics line a step, a probe at
/// step 0, every `probe_every` steps and at the end; returns the tokens spent.
fn spend_budget(trainer: &mut Trainer<'_, Decoder>, run: &RunDir, probe: &Probe<'_>) -> Result<usize> {
    let (rl, arm, seed) = (probe.ctx.rl, probe.arm, probe.seed);
    let mut file = std::fs::File::create(run.metrics_path())?;
    let mut write = |line: Value| -> Result<()> { Ok(writeln!(file, "{line}")?) };
    // Step 0: the base itself.
    write(probe_line(arm, seed, 0, 0, None, &probe.evaluate(&trainer.senior().valid())?))?;
    let mut tokens = 0usize;
    while tokens < rl.token_budget {
        let out = trainer.step()?;
        let m = &out.metrics;
        tokens += (m.response_len_mean * (rl.prompts_per_step * rl.group_size) as f64).round() as usize;
        let step = m.step;
        let mut line = json!({ "arm": arm.name(), "seed": seed, "step": step, "rollout_tokens": tokens,
            "train": serde_json::to_value(m)? });
        if step % rl.probe_every == 0 || tokens >= rl.token_budget {
            let probed = probe.evaluate(&trainer.senior().valid())?;
            line = probe_line(arm, seed, step, tokens, Some(line["train"].clone()), &probed);
            (probe.log)(format!(
                "{} seed {seed}: step {step}, {tokens} tokens, reward {:.2}, probe solo {:.0}%, tax {:.0}, shorthand {:.0}%",
                arm.name(),
                m.reward_mean,
                probed.report.macro_figures.solo[0].estimate.value,
                probed.report.macro_figures.tax.points.value,
                100.0 * probed.shorthand
            ));
        }
        write(line)?;
    }
    Ok(tokens)
}

fn probe_line(
    arm: Arm,
    seed: u64,
    step: usize,
    tokens: usize,
    train: Option<Value>,
    probe: &Evaluated,
) -> Value {
    let f = &probe.report.macro_figures;
    json!({
        "arm": arm.name(), "seed": seed, "step": step, "rollout_tokens": tokens, "train": train,
        "probe": {
            "solo_pass1": f.solo[0].estimate.value,
            "handoff_pass1": f.handoff[0].estimate.value,
            "tax": f.tax.points.value,
            "junior_ce": f.legibility.junior_ce.value,
            "junior_top1": f.legibility.junior_top1.value,
            "kl": f.drift.kl_exact.value,
            "shorthand": probe.shorthand,
        }
    })
}

/// The mean over training steps of the share of senior tokens at k3's clamp, from a run's
/// metrics (KL-Reg runs only).
pub fn clamped_share(dir: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join("metrics.jsonl")).ok()?;
    let shares: Vec<f64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["train"]["objective"]["junior_kl_clamped"].as_f64())
        .collect();
    (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64)
}
