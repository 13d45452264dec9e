//! `trlvr train`: trains a senior from a TOML recipe into a run directory, or continues a
//! run from its last checkpoint.
//!
//! Long, on purpose: the command's short steps (recipe, devices, models, task, resume,
//! fit) read in the order they run, in one file.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use burn::prelude::Device;
use indicatif::{ProgressBar, ProgressStyle};
use trlvr::collective::agree;
use trlvr::data::{Dataset, ReferenceFormat, hash_files, hold_out, user_message};
use trlvr::device::parse_device;
use trlvr::plugin::Registry;
use trlvr::prelude::*;
use trlvr::reward::RewardTerm;
use trlvr::train::{Example, Exporter, FitProgress, RunDir, StepMetrics, Task, Trainer, drop_long_prompts};
use trlvr_models::Decoder;
use trlvr_verifiers::{Extraction, MathVerifier, extract};

use crate::model::{Loaded, resolve_model};
use crate::precision::Precision;
use crate::ranks::Ranks;
use crate::recipe::Recipe;

/// Arguments of `trlvr train`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The recipe (TOML); see configs/.
    #[arg(long, required_unless_present = "resume")]
    config: Option<PathBuf>,
    /// Override a recipe key, e.g. `--set train.steps=10 --set senior.device=tch` (a new
    /// run's; a resumed run keeps the recipe in its config.toml).
    #[arg(long = "set", value_name = "KEY=VALUE", conflicts_with = "resume")]
    sets: Vec<String>,
    /// The run directory (default: runs/<recipe name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The device of both models (flex, cuda[:N], wgpu[:N], tch, tch-cuda[:N]), over the recipe's.
    #[arg(long)]
    device: Option<String>,
    /// The senior's device, over `--device` and the recipe's `senior.device`.
    #[arg(long)]
    senior_device: Option<String>,
    /// The junior's device, over `--device` and the recipe's `junior.device` (the release
    /// puts the junior on a GPU of its own).
    #[arg(long)]
    junior_device: Option<String>,
    /// Continue the run in this directory from its last complete checkpoint.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["config", "sets", "out"])]
    resume: Option<PathBuf>,
    /// With --resume: take a checkpoint without checksums as it is (one written before
    /// trlvr checked them); without it such a checkpoint counts as damaged.
    #[arg(long, requires = "resume")]
    accept_unchecked: bool,
    /// Load the plugin libraries the recipe (or the resumed run's) lists: their code runs
    /// in this process, so trlvr loads none without it.
    #[arg(long)]
    trust_plugins: bool,
}

/// How a run starts: fresh or resumed, and what it takes on trust.
#[derive(Debug, Clone, Copy, Default)]
pub struct Start {
    /// Continue from the run directory's last good checkpoint.
    pub resume: bool,
    /// Take a checkpoint without checksums as it is.
    pub accept_unchecked: bool,
    /// Load the recipe's plugin libraries.
    pub trust_plugins: bool,
}

/// Chat-formatted prompts, each reference checked to hold an answer.
fn examples(data: &Dataset, model: &Loaded, template: &str) -> Result<Vec<Example>> {
    let how = Extraction::for_references(data.format);
    data.problems
        .iter()
        .map(|p| {
            if extract(&p.reference, how).is_none() {
                bail!(
                    "{}, line {}: no answer in the reference ({how:?} layout)",
                    data.path.display(),
                    p.line
                );
            }
            Ok(Example {
                prompt: model.prompt(&user_message(template, &p.question), false)?,
                reference: p.reference.clone(),
            })
        })
        .collect()
}

/// The training and validation examples of a recipe (validation from its own file, or
/// held out of the training file), overlong prompts dropped, with their reference
/// formats.
fn task_examples(
    recipe: &Recipe,
    senior: &Loaded,
) -> Result<(Vec<Example>, Vec<Example>, ReferenceFormat, ReferenceFormat)> {
    let d = &recipe.data;
    let mut train_set = Dataset::load(&d.train)?;
    let train_format = train_set.format;
    let mut validation_set = match (&d.validation, d.holdout) {
        (Some(spec), _) => Some(Dataset::load(spec)?),
        (None, Some(n)) => {
            let (train, held) = hold_out(std::mem::take(&mut train_set.problems), n)
                .with_context(|| format!("data.holdout of {}", d.train.path.display()))?;
            train_set.problems = train;
            Some(Dataset { problems: held, ..train_set.clone() })
        }
        (None, None) => None,
    };
    let capped = |set: &Dataset, what: &str| -> Result<Vec<Example>> {
        let (kept, dropped) =
            drop_long_prompts(examples(set, senior, &d.prompt_template)?, d.max_prompt_tokens);
        if dropped > 0 {
            eprintln!(
                "{what}: dropped {dropped} of {} prompts longer than data.max_prompt_tokens = {}",
                set.problems.len(),
                d.max_prompt_tokens
            );
        }
        if kept.is_empty() {
            bail!("{what}: every prompt of {} is longer than data.max_prompt_tokens", set.path.display());
        }
        Ok(kept)
    };
    let train = capped(&train_set, "training data")?;
    let (validation, validation_format) = match validation_set.take() {
        Some(set) => (capped(&set, "validation data")?, set.format),
        None => (Vec::new(), ReferenceFormat::Bare),
    };
    Ok((train, validation, train_format, validation_format))
}

/// Runs the command: as one process, or as one of the ranks `mpirun`/`srun` started.
pub fn run(args: &Args) -> Result<()> {
    let ranks = Ranks::connect()?;
    let result = train(args, &ranks);
    ranks.finish(result)
}

/// Trains: the recipe and run directory the command line names, then [`train_run`].
fn train(args: &Args, ranks: &Ranks) -> Result<()> {
    let (recipe, out) = recipe_and_run_dir(args)?;
    let start = Start {
        resume: args.resume.is_some(),
        accept_unchecked: args.accept_unchecked,
        trust_plugins: args.trust_plugins,
    };
    train_run(recipe, &out, start, None, ranks)
}

/// Trains `recipe` into the run directory `out` (continuing it from its last good
/// checkpoint when `resume`): the models, the task, the trainer, then the steps. With a
/// `label` (a study's run), progress is one line a step, prefixed with it.
pub fn train_run(recipe: Recipe, out: &Path, start: Start, label: Option<&str>, ranks: &Ranks) -> Result<()> {
    let Start { resume, accept_unchecked: unchecked, trust_plugins } = start;
    // Nothing loads before the plugins are agreed to, and a resumed run's are its own.
    crate::plugins::consent(&recipe.plugins, trust_plugins, &format!("the recipe of {}", out.display()))?;
    if resume {
        crate::plugins::check_record(&recipe.plugins, out)?;
    }
    ranks.set_timeout(recipe.ranks.timeout());
    let (senior_device, junior_device) = devices(&recipe, ranks)?;
    let (senior_path, senior) = load_senior(&recipe, senior_device)?;
    let registry = crate::plugins::registry(&recipe.plugins)?;
    let junior = load_junior(&recipe, &registry, &senior, &senior_path, &junior_device, ranks)?;

    // Data, reward, schedule, objective.
    let data = TaskData::load(&recipe, &senior)?;
    let first_prompt = data.train.first().map(|e| senior.decode(&e.prompt)).transpose()?;
    let schedule = registry.schedule(&recipe.schedule().name, &recipe.schedule().json()?)?;
    let objective = registry.objective(&recipe.objective().name, &recipe.objective().json()?)?;
    let classes = TokenClasses::from_tokenizer(&senior.tokenizer, &senior.eos)?;
    let extras = crate::model::ExportExtras::of(&senior_path, &senior)?;
    let export = hf_export(&senior, extras, recipe.senior.dtype.unwrap_or(Precision::F32));
    let task = data.task(&senior.tokenizer, &classes);
    let rewards = rewards(&recipe, &registry)?;
    let mut trainer =
        Trainer::new(recipe.train.clone(), senior.decoder, &*junior, &*schedule, &*objective, task)?
            .with_rewards(rewards)
            .with_export(export);

    let run = RunDir::open(out)?;
    if resume {
        trainer = resume_from(trainer, &run, out, unchecked, ranks)?;
    }
    agree_across_ranks(ranks, &recipe)?;
    trainer = trainer.with_collective(ranks.collective())?;
    if !resume && ranks.leads() {
        crate::plugins::record(&recipe.plugins, out)?;
        mark_run(out, &recipe)?;
    }
    if ranks.leads() && label.is_none() {
        describe(&recipe, &senior_path, &*schedule, &*objective, &trainer, ranks, out);
        if let Some(text) = first_prompt {
            eprintln!("the first prompt, as the senior reads it:\n{text}\n");
        }
    }
    fit(&mut trainer, &run, &recipe, out, label, ranks)
}

/// The recipe's reward terms from the registry (the verifier's alone when it lists none).
fn rewards(recipe: &Recipe, registry: &Registry) -> Result<Rewards> {
    if recipe.rewards.is_empty() {
        return Ok(Rewards::correct());
    }
    let terms = recipe
        .rewards
        .iter()
        .map(|r| {
            let function = registry
                .reward(&r.name, &serde_json::to_value(&r.config)?)
                .with_context(|| format!("[[rewards]] {:?}", r.name))?;
            Ok(RewardTerm { weight: r.weight as f32, function: Box::new(function) })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Rewards::new(terms)?)
}

/// The recipe (a new one with its `--set`s, or a resumed run's) with the command line's
/// devices over its own, and the run directory.
fn recipe_and_run_dir(args: &Args) -> Result<(Recipe, PathBuf)> {
    let (mut recipe, out) = match (&args.resume, &args.config) {
        (Some(dir), _) => {
            if !dir.join("config.toml").exists() {
                bail!("{} holds no run (no config.toml): start one with --config", dir.display());
            }
            (Recipe::load(&dir.join("config.toml"), &[])?, dir.clone())
        }
        (None, Some(path)) => {
            let recipe = Recipe::load(path, &args.sets)?;
            let stem = path.file_stem().map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
            let out = args.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(stem));
            if out.join("config.toml").exists() {
                bail!(
                    "{} already holds a run: continue it with --resume {0}, or choose another --out",
                    out.display()
                );
            }
            (recipe, out)
        }
        (None, None) => bail!("give --config RECIPE or --resume RUN_DIR"),
    };
    if let Some(device) = args.senior_device.as_ref().or(args.device.as_ref()) {
        recipe.senior.device.clone_from(device);
    }
    if let Some(device) = args.junior_device.as_ref().or(args.device.as_ref()) {
        recipe.junior.get_or_insert_default().device = Some(device.clone());
    }
    Ok((recipe, out))
}

/// The senior's and the junior's devices (`cuda:local`: the GPU of this rank's index on
/// its node).
fn devices(recipe: &Recipe, ranks: &Ranks) -> Result<(Device, Device)> {
    let senior = parse_device(&ranks.device(&recipe.senior.device))
        .context("senior.device (or --senior-device, --device)")?;
    let junior = parse_device(&ranks.device(recipe.junior_device()))
        .context("junior.device (or --junior-device, --device)")?;
    Ok((senior, junior))
}

/// The senior's path and model, recording gradients.
fn load_senior(recipe: &Recipe, senior_device: Device) -> Result<(PathBuf, Loaded)> {
    let senior_path = resolve_model(&recipe.senior.path).context(
        "senior.path (a recipe whose header names a warm-up, such as `trlvr sft`: run that first)",
    )?;
    crate::precision::check(recipe.senior.dtype, &senior_device, "senior.dtype")?;
    let mut training_device = senior_device.autodiff();
    if recipe.train.gradient_checkpointing {
        training_device = training_device.gradient_checkpointing();
    }
    let mut senior =
        Loaded::from_path(&senior_path, &training_device)?.with_chat(&recipe.senior.chat_template)?;
    if let Some(precision) = recipe.senior.dtype {
        senior.decoder = senior.decoder.with_compute_dtype(precision.dtype());
    }
    senior.decoder = senior.decoder.with_layer_checkpointing(recipe.senior.layer_checkpointing);
    Ok((senior_path, senior))
}

/// The junior, which never records gradients: a model file (default: the senior's,
/// self-paired) or a partner plugin, checked to share the senior's vocabulary.
fn load_junior(
    recipe: &Recipe,
    registry: &Registry,
    senior: &Loaded,
    senior_path: &Path,
    junior_device: &Device,
    ranks: &Ranks,
) -> Result<Box<dyn Partner>> {
    let partner = recipe.junior.as_ref().and_then(|j| j.partner.as_ref());
    let Some(named) = partner else {
        let junior_path = match recipe.junior.as_ref().and_then(|j| j.path.as_deref()) {
            Some(path) => resolve_model(path)?,
            None => senior_path.to_path_buf(),
        };
        let dtype = recipe.junior.as_ref().and_then(|j| j.dtype);
        crate::precision::check(dtype, junior_device, "junior.dtype")?;
        let junior = Loaded::from_path(&junior_path, junior_device)?.frozen(dtype);
        if junior.tokenizer.get_vocab(true) != senior.tokenizer.get_vocab(true) {
            bail!("senior and junior tokenizers differ: they must share a vocabulary (method.md §1)");
        }
        return Ok(Box::new(junior.decoder));
    };
    let partner = registry
        .partner(&named.name, &named.json()?, junior_device)
        .with_context(|| format!("junior.partner {:?}", named.name))?;
    // A partner plugin brings no tokenizer: only the number of ids can be checked.
    if partner.vocab_size() != senior.config.vocab_size {
        bail!(
            "junior.partner {:?} has {} token ids, the senior {}: the junior must read and write the \
             senior's vocabulary (method.md §1)",
            named.name,
            partner.vocab_size(),
            senior.config.vocab_size
        );
    }
    if ranks.leads() {
        eprintln!(
            "junior.partner {:?}: {} token ids like the senior; its tokenizer cannot be compared, so make \
             sure it is the senior's",
            named.name,
            partner.vocab_size()
        );
    }
    Ok(Box::new(partner))
}

/// The examples and the rewards of training and validation.
struct TaskData {
    train: Vec<Example>,
    validation: Vec<Example>,
    verifier: MathVerifier,
    validation_verifier: Box<dyn Verifier>,
}

impl TaskData {
    fn load(recipe: &Recipe, senior: &Loaded) -> Result<Self> {
        let (train, validation, train_format, validation_format) = task_examples(recipe, senior)?;
        Ok(Self {
            train,
            validation,
            verifier: MathVerifier::strict()
                .with_reference_extraction(Extraction::for_references(train_format)),
            validation_verifier: recipe.data.validation_grading.verifier(validation_format),
        })
    }

    fn task<'a>(&'a self, text: &'a tokenizers::Tokenizer, classes: &'a TokenClasses) -> Task<'a> {
        Task {
            train: &self.train,
            validation: &self.validation,
            verifier: &self.verifier,
            validation_verifier: &*self.validation_verifier,
            text,
            classes,
        }
    }
}

/// Saves a checkpoint's senior in the Hugging Face layout, with the senior's tokenizer
/// and the source model's chat template and generation settings (`extras`): its weights
/// in the precision it trained in (a bf16 run publishes bf16, as transformers' Trainer
/// does), sharded above 5 GB.
fn hf_export(
    senior: &Loaded,
    extras: crate::model::ExportExtras,
    precision: Precision,
) -> Exporter<'static, Decoder> {
    let (config, tokenizer) = (senior.config.clone(), senior.tokenizer.clone());
    let options = trlvr_models::SaveOptions { dtype: precision.saved(), ..Default::default() };
    Box::new(move |model: &Decoder, dir: &Path| {
        let failed = |message: String| trlvr::Error::Checkpoint { path: dir.to_path_buf(), message };
        trlvr_models::save_hf_dir_with(model, &config, Some(&tokenizer), dir, &options)
            .map_err(|e| failed(e.to_string()))?;
        extras.write(dir).map_err(|e| failed(format!("{e:#}")))
    })
}

/// The trainer at the newest checkpoint of `run` that is whole and loads: rank 0 picks it
/// (newer damaged ones are named and set aside) and trims the logs; every rank resumes
/// from the one it picked. A run with checkpoints of which none is good stops here with
/// every file as it was; one with none at all (stopped before its first) starts again.
fn resume_from<'a>(
    mut trainer: Trainer<'a, Decoder>,
    run: &RunDir,
    out: &Path,
    unchecked: bool,
    ranks: &Ranks,
) -> Result<Trainer<'a, Decoder>> {
    let mut picked = Vec::new();
    if ranks.leads() {
        let step = pick_checkpoint(&mut trainer, run, out, unchecked)?;
        run.rewind(step.unwrap_or(0))?;
        picked = step.map(|s| (s as u64).to_le_bytes().to_vec()).unwrap_or_default();
    }
    ranks.collective().broadcast(&mut picked, 0)?;
    match <[u8; 8]>::try_from(picked.as_slice()).map(|b| u64::from_le_bytes(b) as usize) {
        Ok(step) if ranks.leads() => eprintln!("resuming {} from step {step}", out.display()),
        Ok(step) => {
            let dir = run.checkpoint_dir(step);
            trainer
                .try_resume(&dir, unchecked)
                .with_context(|| format!("resuming from {}", dir.display()))?;
        }
        Err(_) if ranks.leads() => {
            eprintln!("no checkpoint in {}: starting again from step 0", out.display());
        }
        Err(_) => {}
    }
    Ok(trainer)
}

/// Loads the newest checkpoint that is whole and loads into `trainer`, setting the newer
/// ones aside once one is found; `None` when the run has none at all.
fn pick_checkpoint(
    trainer: &mut Trainer<'_, Decoder>,
    run: &RunDir,
    out: &Path,
    unchecked: bool,
) -> Result<Option<usize>> {
    let candidates = run.checked_checkpoints(unchecked)?;
    if candidates.is_empty() {
        return Ok(None);
    }
    let mut bad: Vec<(PathBuf, trlvr::Error)> = Vec::new();
    for ((step, path), check) in candidates {
        let loaded = match check {
            Some(e) => Err(e),
            None => trainer.try_resume(&path, unchecked),
        };
        match loaded {
            Ok(()) => {
                for (path, e) in &bad {
                    let aside = run.set_aside(path)?;
                    eprintln!(
                        "warning: {e}; set aside as {}, falling back to the checkpoint before",
                        aside.display()
                    );
                }
                return Ok(Some(step));
            }
            Err(e) => bad.push((path, e)),
        }
    }
    let why: Vec<String> = bad.iter().map(|(_, e)| e.to_string()).collect();
    bail!(
        "no checkpoint of {} is whole and loads, so nothing was resumed and no file was changed: {}",
        out.display(),
        why.join("; ")
    )
}

/// Every rank must run the same build on the same recipe, settings and weights; this
/// waits for all of them.
fn agree_across_ranks(ranks: &Ranks, recipe: &Recipe) -> Result<()> {
    if ranks.size() > 1 {
        let build = std::env::current_exe().context("finding this executable")?;
        agree(ranks.collective(), "trlvr build", &hash_files(&[build])?.to_le_bytes())?;
        agree(ranks.collective(), "recipe", recipe.to_toml()?.as_bytes())?;
    }
    Ok(())
}

/// Writes the recipe into the run directory: last of all set-up, and atomically, since
/// its presence means "a run is here".
fn mark_run(out: &Path, recipe: &Recipe) -> Result<()> {
    let tmp = out.join("config.toml.tmp");
    std::fs::write(&tmp, recipe.to_toml()?).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, out.join("config.toml"))?;
    Ok(())
}

/// Trains to the recipe's last step: rank 0 shows progress; every rank counts the
/// rollouts it wrote.
fn fit(
    trainer: &mut Trainer<'_, Decoder>,
    run: &RunDir,
    recipe: &Recipe,
    out: &Path,
    label: Option<&str>,
    ranks: &Ranks,
) -> Result<()> {
    let progress = ranks
        .leads()
        .then(|| StepProgress::new(recipe.train.steps, trainer.state().step, label.map(String::from)));
    let rows = std::cell::Cell::new(0);
    let on_progress = &mut |p| {
        count_rollouts(&rows, p);
        progress.iter().for_each(|bar| bar.progress(p));
    };
    let mut events = tensorboard(recipe, out, ranks)?;
    let on_step = &mut |m: &StepMetrics| {
        progress.iter().for_each(|bar| bar.step(m));
        if let Some(writer) = &mut events {
            let values = crate::tensorboard::scalars(&serde_json::to_value(m).unwrap_or_default());
            if let Err(e) = writer.scalars(m.step as u64, &values) {
                // A log is not worth the run: say so once and go on without it.
                eprintln!("warning: TensorBoard events stop here: {e:#}");
                events = None;
            }
        }
    };
    trainer.fit(run, on_step, on_progress).with_context(|| {
        format!("training stopped; the last complete checkpoint is in {}", out.join("checkpoints").display())
    })?;
    if ranks.size() > 1 {
        ranks.say(&format!("{} rollouts written here", rows.get()));
    }
    let Some(progress) = progress else { return Ok(()) };
    progress.bar.finish_and_clear();
    if label.is_some() {
        return Ok(());
    }
    if let Some((step, score)) = trainer.state().best {
        eprintln!("best validation pass@1 {score:.3} at step {step}: {}", run.checkpoint_dir(step).display());
    }
    eprintln!("done: {} (metrics.jsonl, samples.jsonl, checkpoints/)", out.display());
    Ok(())
}

/// The run's TensorBoard writer, when the recipe asks for one (rank 0).
fn tensorboard(
    recipe: &Recipe,
    out: &Path,
    ranks: &Ranks,
) -> Result<Option<crate::tensorboard::EventWriter>> {
    if !recipe.log.tensorboard || !ranks.leads() {
        return Ok(None);
    }
    let writer = crate::tensorboard::EventWriter::create(&out.join("tensorboard"))?;
    eprintln!("TensorBoard events: {}", writer.path().display());
    Ok(Some(writer))
}

/// What is about to train, and how (rank 0's preamble).
fn describe(
    recipe: &Recipe,
    senior_path: &Path,
    schedule: &dyn HandoffSchedule,
    objective: &dyn Objective,
    trainer: &Trainer<'_, Decoder>,
    ranks: &Ranks,
    out: &Path,
) {
    let on = if ranks.size() > 1 { format!(" on each of {} ranks", ranks.size()) } else { String::new() };
    eprintln!(
        "training {} (arm {}, schedule {}, objective {}) for {} steps on {}{on} (junior on {}); run directory {}",
        senior_path.display(),
        recipe.arm.name(),
        schedule.name(),
        objective.name(),
        recipe.train.steps,
        recipe.senior.device,
        recipe.junior_device(),
        out.display()
    );

    if !recipe.rewards.is_empty() {
        let terms: Vec<String> =
            recipe.rewards.iter().map(|r| format!("{} × {}", r.weight, r.name)).collect();
        eprintln!("reward: {}", terms.join(" + "));
    }
    if let Some(precision) = recipe.senior.dtype.filter(|&p| p != Precision::F32) {
        eprintln!(
            "the senior computes in {} with f32 weights and optimizer state (mixed precision)",
            precision.name()
        );
    }
    if let (Some(state), Some(scaling)) = (trainer.state().loss_scale, recipe.train.loss_scaling) {
        eprintln!(
            "dynamic loss scaling: scale {}, halved on overflow, doubled after {} good updates in a row",
            state.scale, scaling.growth_interval
        );
    }
    if let Some(precision) = recipe.junior.as_ref().and_then(|j| j.dtype).filter(|&p| p != Precision::F32) {
        eprintln!("the junior's weights and forward pass are {}", precision.name());
    }
}

/// Adds a training step's rollouts (this rank's) to `rows`, at the step's first token.
fn count_rollouts(rows: &std::cell::Cell<usize>, p: FitProgress) {
    if let FitProgress::Rollout(p) = p
        && p.steps == 1
    {
        rows.set(rows.get() + p.rows);
    }
}

/// A bar over steps on a terminal (live figures in its message), plain lines otherwise
/// (always, prefixed with the label, for a study's run).
struct StepProgress {
    bar: ProgressBar,
    terminal: bool,
    total: usize,
    label: Option<String>,
    /// The quarter of validation last printed, in plain output.
    validation_shown: std::cell::Cell<Option<usize>>,
}

impl StepProgress {
    fn new(total: usize, done: usize, label: Option<String>) -> Self {
        let terminal = std::io::stderr().is_terminal() && label.is_none();
        let bar = if terminal { ProgressBar::new(total as u64) } else { ProgressBar::hidden() };
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] step {pos}/{len} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_position(done as u64);
        Self { bar, terminal, total, label, validation_shown: std::cell::Cell::new(None) }
    }

    fn progress(&self, p: FitProgress) {
        match p {
            FitProgress::Rollout(p) => {
                if self.terminal {
                    self.bar.set_message(format!(
                        "rollouts: {} tokens, {}/{} rows writing",
                        p.tokens, p.live, p.rows
                    ));
                }
            }
            FitProgress::Validation { done, problems, correct, rollout: p } => {
                let line =
                    format!("validation: {done}/{problems} problems done, {correct} samples right so far");
                if self.terminal {
                    self.bar.set_message(format!(
                        "{line}; {} tokens, {}/{} rows writing",
                        p.tokens, p.live, p.rows
                    ));
                } else {
                    // Plain output: a line at the start and at each quarter, not per token.
                    let quarter = 4 * done / problems.max(1);
                    if self.validation_shown.replace(Some(quarter)) != Some(quarter) {
                        self.say(&line);
                    }
                }
            }
        }
    }

    fn step(&self, m: &StepMetrics) {
        self.validation_shown.set(None);
        let validation =
            m.validation_pass1.map(|v| format!("  validation pass@1 {v:.3}")).unwrap_or_default();
        let scale = match m.loss_scale {
            Some(s) if m.skipped_updates > 0 => {
                format!("  loss scale {s} ({} updates skipped)", m.skipped_updates)
            }
            Some(s) => format!("  loss scale {s}"),
            None => String::new(),
        };
        // Each term's mean when the recipe weighs more than the verifier's.
        let terms = if m.rewards.len() > 1 {
            let each: Vec<String> = m.rewards.iter().map(|(k, v)| format!("{k} {v:.3}")).collect();
            format!(" ({})", each.join(", "))
        } else {
            String::new()
        };
        let line = format!(
            "step {}/{}  reward {:.3}{terms}  acc {:.3}  senior {:.2}  len {:.0}/{}  trunc {:.2}  loss {:+.4}  \
             clip {:.3}  gnorm {:.3}  lr {:.2e}  {:.1} s (rollout {:.1}, π_old {:.1}, update {:.1}), {:.0} tok/s, {:.0}% CPU{scale}{validation}",
            m.step,
            self.total,
            m.reward_mean,
            m.accuracy,
            m.senior_share,
            m.response_len_mean,
            m.response_len_max,
            m.truncation_rate,
            m.loss,
            m.clip_frac,
            m.grad_norm,
            m.lr,
            m.time_s,
            m.time_rollout_s,
            m.time_old_s,
            m.time_update_s,
            m.tokens_per_s,
            100.0 * (m.cpu_rollout_s + m.cpu_update_s) / m.time_s.max(1e-9),
        );
        if self.terminal {
            self.bar.set_position(m.step as u64);
            self.bar.println(line);
        } else {
            self.say(&line);
        }
    }

    /// A plain line, prefixed with the run's label, if any.
    fn say(&self, line: &str) {
        match &self.label {
            Some(label) => eprintln!("[{label}] {line}"),
            None => eprintln!("{line}"),
        }
    }
}
