//! How the demo trains and evaluates one run: an arm trained from the base on one
//! rollout-token budget, probed as it trains; every senior evaluated on the held-out
//! problems with an evaluation's partner, its solo steps' notation counted.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow};
use burn::module::Module;
use serde_json::{Value, json};
use trlvr::eval::{EvalConfig, EvalProblem, EvalSet, Evaluation, Mode, SampleStore, prompt_hash};
use trlvr::prelude::*;
use trlvr::study::plan::fingerprint;
use trlvr::study::{Cost, Evaluated, RunKey};
use trlvr::train::{Example, RunDir, Task, TrainConfig, Trainer};
use trlvr_junior_kl::JuniorKl;
use trlvr_models::{Decoder, load_hf_dir, save_hf_dir};

use super::design::{DemoArm, Model, RlSettings, Training};
use super::models::{Models, own_copy};
use super::task::{Problem, SumTask, notation_counts};
use crate::ranks::Ranks;
use crate::study::runner::Lab;

/// The shared pieces: task, vocabulary, problems, settings, models, arms.
pub struct DemoLab<'a> {
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
    /// The supervised models.
    pub models: &'a Models,
    /// The arms.
    pub arms: &'a [DemoArm],
    /// The base without autodiff (a partner, and an arm evaluated as it is).
    pub base: Decoder,
    /// The evaluations' partners (`None`: the senior as its own junior).
    pub evaluations: Vec<(String, Option<Model>)>,
    /// The device a trained senior is read back onto.
    pub device: burn::prelude::Device,
}

impl std::fmt::Debug for DemoLab<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoLab").field("rl", self.rl).finish()
    }
}

/// What an evaluation gave, with the notations of the senior's solo steps: the report and
/// the shorthand share as a study column (`[shorthand steps, all steps]` per problem).
pub fn evaluate(
    lab: &DemoLab<'_>,
    senior: &Decoder,
    junior: &Decoder,
    problems: &[Problem],
    n: usize,
) -> Result<Evaluated> {
    let task = lab.task;
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
    let evaluation = Evaluation::new(senior, junior, lab.classes, config, &detokenize)?;
    let mut store = SampleStore::in_memory();
    let report = evaluation.run(std::slice::from_ref(&set), &mut store, &mut |_| {})?;
    let notations: Vec<[f64; 2]> = eval_problems
        .iter()
        .map(|p| {
            let found = store.get("sums", p.id, Mode::Solo, prompt_hash(&p.prompt));
            let (plain, short) = found.map_or((0, 0), |f| {
                f.samples
                    .iter()
                    .map(|s| notation_counts(&s.tokens))
                    .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
            });
            [short as f64, (plain + short) as f64]
        })
        .collect();
    let mut evaluated = Evaluated::from(report);
    evaluated.columns.insert("shorthand".into(), vec![notations]);
    Ok(evaluated)
}

/// The shorthand share of an evaluation's solo steps, a fraction.
pub fn shorthand(e: &Evaluated) -> f64 {
    e.figure(&trlvr::study::Figure::Column("shorthand".into())) / 100.0
}

impl DemoLab<'_> {
    fn arm(&self, run: &RunKey) -> Result<&DemoArm> {
        self.arms.iter().find(|a| a.name == run.arm).ok_or_else(|| anyhow!("no arm {}", run.arm))
    }

    /// A frozen model of the demo.
    fn model(&self, model: Model) -> &Decoder {
        match model {
            Model::Base => &self.base,
            Model::Control => &self.models.control,
            Model::Junior => &self.models.junior,
            Model::Literate(k) => &self.models.literate_juniors[k].1,
        }
    }

    /// The build, the task, the models and the settings every run depends on.
    fn common(&self) -> Result<Value> {
        Ok(json!({
            "build": build()?, "task": self.task, "rl": self.rl, "models": self.models.keys,
        }))
    }
}

/// The running binary's hash: a demo run is kept only by the build that made it.
fn build() -> Result<String> {
    static BUILD: OnceLock<String> = OnceLock::new();
    if let Some(b) = BUILD.get() {
        return Ok(b.clone());
    }
    let exe = std::env::current_exe().context("finding this executable")?;
    let hash = format!("{:016x}", trlvr::data::hash_files(&[exe])?);
    Ok(BUILD.get_or_init(|| hash).clone())
}

impl Lab for DemoLab<'_> {
    fn fingerprint(&self, run: &RunKey) -> Result<String> {
        let arm = self.arm(run)?;
        Ok(fingerprint(
            &json!({ "common": self.common()?, "training": arm.training, "seed": run.seed }).to_string(),
        ))
    }

    fn eval_fingerprint(&self, _run: &RunKey, evaluation: &str) -> Result<String> {
        Ok(fingerprint(&json!({ "common": self.common()?, "evaluation": evaluation }).to_string()))
    }

    fn train(&self, run: &RunKey, dir: &Path, _ranks: &Ranks) -> Result<Cost> {
        let arm = self.arm(run)?;
        let seed = run.seed.context("a trained run has a seed")?;
        train(self, arm, seed, dir)
    }

    fn evaluate(
        &self,
        run: &RunKey,
        run_dir: &Path,
        evaluation: &str,
        _dir: &Path,
        _earlier: &[(String, PathBuf)],
        _ranks: &Ranks,
    ) -> Result<Evaluated> {
        let arm = self.arm(run)?;
        let partner = self
            .evaluations
            .iter()
            .find(|(name, _)| name == evaluation)
            .map(|(_, m)| *m)
            .with_context(|| format!("no evaluation {evaluation}"))?;
        let trained;
        let senior = match arm.training {
            Training::Fixed(model) => self.model(model),
            _ => {
                trained = load_hf_dir(run_dir.join("model"), &self.device)?.0;
                &trained
            }
        };
        let junior = partner.map_or(senior, |m| self.model(m));
        evaluate(self, senior, junior, &self.eval, self.rl.eval_n)
    }
}

/// The RL settings of every arm: one step per `prompts_per_step` prompts, no validation,
/// checkpoints or samples (the probes measure instead).
fn train_config(rl: &RlSettings, max_new_tokens: usize, seed: u64) -> TrainConfig {
    TrainConfig {
        steps: 100_000,
        prompts_per_step: rl.prompts_per_step,
        group_size: rl.group_size,
        mini_batch_prompts: rl.prompts_per_step,
        micro_batch_rows: rl.prompts_per_step * rl.group_size,
        // Arms run side by side, one per core: a tiny model's update gains nothing from
        // cutting its micro-batch across cores that are busy (measured: 305 -> 314 s).
        lanes: 1,
        max_new_tokens,
        lr: rl.lr,
        validate_every: 0,
        checkpoint_every: 0,
        samples_per_step: 0,
        seed,
        ..TrainConfig::default()
    }
}

/// Trains `arm` from the base with `seed` into `dir` (metrics.jsonl, a checkpoint and the
/// senior in the Hugging Face layout under `model/`): its schedule and objective, its
/// training partner (TRLVR's co-author, KL-Reg's reference: the weak junior unless the arm
/// names another). Probes measure the tax with the weak junior in every arm.
fn train(lab: &DemoLab<'_>, arm: &DemoArm, seed: u64, dir: &Path) -> Result<Cost> {
    let started = Instant::now();
    let task = lab.task;
    let verifier = task.verifier();
    let detokenize = |ids: &[TokenId]| task.text(ids);
    let grpo = Grpo::new(GrpoConfig::default())?;
    let (solo, word) = (Solo::senior(), WordBoundary::default());
    let kl;
    let (schedule, objective, partner): (&dyn HandoffSchedule, &dyn Objective, Model) = match arm.training {
        Training::Grpo => (&solo, &grpo, Model::Junior),
        Training::Trlvr { partner } => (&word, &grpo, partner),
        Training::KlReg { beta, estimator } => {
            kl = JuniorKl::new(GrpoConfig::default(), beta)?.with_estimator(estimator);
            (&solo, &kl, Model::Junior)
        }
        Training::Fixed(_) => return Err(anyhow!("{} is not trained", arm.name)),
    };
    let train_task = Task {
        train: &lab.train,
        validation: &[],
        verifier: &verifier,
        validation_verifier: &verifier,
        text: &detokenize,
        classes: lab.classes,
    };
    let config = train_config(lab.rl, task.max_new_tokens, seed);
    let mut trainer = Trainer::new(
        config,
        own_copy(&lab.models.base),
        lab.model(partner),
        schedule,
        objective,
        train_task,
    )?;
    // An unfinished run starts afresh (the demo's runs are short): no metrics lines or
    // checkpoints of an interrupted start stay.
    if dir.join("metrics.jsonl").exists() {
        for stale in ["metrics.jsonl", "checkpoints", "model"] {
            let path = dir.join(stale);
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
    let run = RunDir::open(dir)?;
    let probe = Probe { lab, name: &arm.name, seed };
    let mut cost = spend_budget(&mut trainer, &run, &probe)?;
    let steps = trainer.state().step;
    trainer.save_checkpoint(&run.checkpoint_dir(steps))?;
    save_hf_dir(&trainer.senior().valid(), &lab.models.base_config, None, dir.join("model"))?;
    cost.seconds = started.elapsed().as_secs_f64();
    Ok(cost)
}

/// How a run is probed: its arm and seed, the lab's problems and weak junior.
struct Probe<'a> {
    lab: &'a DemoLab<'a>,
    name: &'a str,
    seed: u64,
}

impl Probe<'_> {
    /// The senior on the probe's problems with the weak junior (two samples each).
    fn evaluate(&self, senior: &Decoder) -> Result<Evaluated> {
        let rl = self.lab.rl;
        let problems = &self.lab.eval[..rl.probe_problems.min(self.lab.eval.len())];
        evaluate(self.lab, senior, &self.lab.models.junior, problems, 2)
    }
}

/// Adds one step's rollouts to `cost`: its prompts, and its tokens by author.
pub fn account(cost: &mut Cost, tokens: usize, senior_tokens: usize, prompts: usize) {
    cost.steps += 1;
    cost.prompts += prompts;
    cost.senior_tokens += senior_tokens as u64;
    cost.junior_tokens += (tokens - senior_tokens) as u64;
}

/// `rl.steps` steps, one metrics line a step, a probe at step 0, every `probe_every` steps
/// and at the end; what they cost. Every arm gets the same steps × prompts: tokens differ
/// by arm (TRLVR's junior writes some) and are reported, not budgeted.
fn spend_budget(trainer: &mut Trainer<'_, Decoder>, run: &RunDir, probe: &Probe<'_>) -> Result<Cost> {
    let (rl, name, seed) = (probe.lab.rl, probe.name, probe.seed);
    let mut file = std::fs::File::create(run.metrics_path())?;
    let mut write = |line: Value| -> Result<()> { Ok(writeln!(file, "{line}")?) };
    // Step 0: the base itself.
    write(probe_line(name, seed, 0, 0, None, &probe.evaluate(&trainer.senior().valid())?))?;
    let mut cost = Cost::default();
    for _ in 0..rl.steps {
        let out = trainer.step()?;
        let m = &out.metrics;
        account(&mut cost, m.tokens, m.senior_tokens, rl.prompts_per_step);
        let (step, tokens) = (m.step, (cost.senior_tokens + cost.junior_tokens) as usize);
        let mut line = json!({ "arm": name, "seed": seed, "step": step, "rollout_tokens": tokens,
            "train": serde_json::to_value(m)? });
        if step % rl.probe_every == 0 || step == rl.steps {
            let probed = probe.evaluate(&trainer.senior().valid())?;
            line = probe_line(name, seed, step, tokens, Some(line["train"].clone()), &probed);
            let f = &probed.report.macro_figures;
            eprintln!(
                "{name} seed {seed}: step {step}, {tokens} tokens, reward {:.2}, probe solo {:.0}%, tax {:.0}, shorthand {:.0}%",
                m.reward_mean,
                f.solo[0].estimate.value,
                f.tax.points.value,
                100.0 * shorthand(&probed)
            );
        }
        write(line)?;
    }
    Ok(cost)
}

fn probe_line(
    name: &str,
    seed: u64,
    step: usize,
    tokens: usize,
    train: Option<Value>,
    probe: &Evaluated,
) -> Value {
    let f = &probe.report.macro_figures;
    json!({
        "arm": name, "seed": seed, "step": step, "rollout_tokens": tokens, "train": train,
        "probe": {
            "solo_pass1": f.solo[0].estimate.value,
            "handoff_pass1": f.handoff[0].estimate.value,
            "tax": f.tax.points.value,
            "junior_ce": f.legibility.junior_ce.value,
            "junior_top1": f.legibility.junior_top1.value,
            "kl": f.drift.kl_exact.value,
            "shorthand": shorthand(probe),
        }
    })
}

/// The mean over training steps of the share of senior tokens at k3's clamp, from a run's
/// metrics (KL-Reg runs only).
pub fn clamped_share(dir: &Path) -> Option<f64> {
    let text = trlvr::lines::read_text(&dir.join("metrics.jsonl")).ok()?;
    let shares: Vec<f64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["train"]["objective"]["junior_kl_clamped"].as_f64())
        .collect();
    (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arms are compared at equal steps × prompts: the cost counts steps and prompts
    /// whoever wrote the tokens, and splits the tokens by author.
    #[test]
    fn the_budget_counts_steps_and_prompts_and_splits_tokens_by_author() {
        let (mut solo, mut tandem) = (Cost::default(), Cost::default());
        for k in 0..10 {
            account(&mut solo, 300 + k, 300 + k, 4);
            account(&mut tandem, 400 + k, 200, 4);
        }
        assert_eq!((solo.steps, solo.prompts), (10, 40));
        assert_eq!((tandem.steps, tandem.prompts), (solo.steps, solo.prompts), "equal steps × prompts");
        assert_eq!((solo.senior_tokens, solo.junior_tokens), (3045, 0));
        assert_eq!((tandem.senior_tokens, tandem.junior_tokens), (2000, 2045));
    }
}
