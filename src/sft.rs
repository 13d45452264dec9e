//! `trlvr sft`: a supervised warm-up of a model on worked solutions (the prompt as
//! training writes it, the response learned), saved as a Hugging Face directory that
//! recipes, `eval` and `tandem` load. It teaches a small model the answer's format
//! (`trlvr data arithmetic` writes the solutions), so that RL starts from a reward above 0.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use trlvr::data::{DEFAULT_TEMPLATE, user_message};
use trlvr::device::parse_device;
use trlvr::train::{SftConfig, SftExample, fit_sft};
use trlvr_models::save_hf_dir;

use crate::model::{ChatChoice, Loaded, resolve_model};
use crate::progress::steps_bar;

/// Arguments of `trlvr sft`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A Hugging Face model directory, a .gguf file, or `smollm2-135m`.
    #[arg(long, alias = "senior")]
    model: String,
    /// JSONL with a question and a worked solution on each line.
    #[arg(long)]
    data: PathBuf,
    /// The question's field.
    #[arg(long, default_value = "problem")]
    question_field: String,
    /// The solution's field (the text learned; the end of the turn is appended).
    #[arg(long, default_value = "solution")]
    solution_field: String,
    /// Use only the first N lines.
    #[arg(long)]
    limit: Option<usize>,
    /// The user message, with `{question}` (default: the paper's, as training uses).
    #[arg(long, default_value = DEFAULT_TEMPLATE)]
    prompt_template: String,
    /// How prompts are written: `own` (the model's chat template), `chatml`, or a Jinja
    /// file or Hugging Face folder whose template is used instead (the export carries it).
    #[arg(long, default_value = "own", value_name = "own|chatml|FILE")]
    chat_template: ChatChoice,
    /// Optimizer steps.
    #[arg(long, default_value_t = 16)]
    steps: usize,
    /// Examples per step.
    #[arg(long, default_value_t = 16)]
    batch_size: usize,
    /// AdamW learning rate (linear warm-up over the first tenth of the steps).
    #[arg(long, default_value_t = 2e-5)]
    lr: f64,
    /// AdamW weight decay.
    #[arg(long, default_value_t = 0.0)]
    weight_decay: f64,
    /// Seed of the batch order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// flex, cuda[:N], wgpu[:N], tch, tch-cuda[:N].
    #[arg(long, default_value = "flex")]
    device: String,
    /// The folder for the trained model (new or empty).
    #[arg(long)]
    out: PathBuf,
}

impl Args {
    /// A study's warm-up as this command's arguments.
    pub fn of(spec: &crate::study::file::WarmupSpec, out: &Path) -> Self {
        Self {
            model: spec.model.clone(),
            data: spec.data.clone(),
            question_field: spec.question_field.clone(),
            solution_field: spec.solution_field.clone(),
            limit: spec.limit,
            prompt_template: DEFAULT_TEMPLATE.into(),
            chat_template: spec.chat_template.clone(),
            steps: spec.steps,
            batch_size: spec.batch_size,
            lr: spec.lr,
            weight_decay: 0.0,
            seed: spec.seed,
            device: spec.device.clone(),
            out: out.to_path_buf(),
        }
    }
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    warm_up(args)
}

/// Trains the warm-up `args` describe into its (new or empty) output folder.
pub fn warm_up(args: &Args) -> Result<()> {
    if args.out.join("model.safetensors").exists() {
        bail!("{} already holds a model: choose another --out", args.out.display());
    }
    if std::fs::read_dir(&args.out).is_ok_and(|mut d| d.next().is_some()) {
        bail!("{} is not empty: choose another --out", args.out.display());
    }
    // The data first: a bad file fails before the model loads.
    let pairs = read_pairs(&args.data, &args.question_field, &args.solution_field, args.limit)?;
    let device = parse_device(&args.device)?.autodiff();
    let source = resolve_model(&args.model)?;
    let model = Loaded::from_path(&source, &device)?.with_chat(&args.chat_template)?;
    let extras = crate::model::ExportExtras::of(&source, &model)?;
    // The assistant's turn ends with the chat's end-of-turn marker where there is one.
    let end = model.tokenizer.token_to_id("<|im_end|>").unwrap_or(model.eos[0]);
    let examples = pairs
        .iter()
        .map(|(question, solution)| {
            let mut response = model.encode(solution)?;
            response.push(end);
            Ok(SftExample {
                prompt: model.prompt(&user_message(&args.prompt_template, question), false)?,
                response,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let config = SftConfig {
        steps: args.steps,
        batch_size: args.batch_size,
        lr: args.lr,
        weight_decay: args.weight_decay,
        seed: args.seed,
        pad: end,
        lanes: 0,
    };
    eprintln!(
        "sft: {} examples from {}, {} steps of {}, lr {}",
        examples.len(),
        args.data.display(),
        args.steps,
        args.batch_size,
        args.lr
    );
    let bar = steps_bar(args.steps);
    let hidden = bar.is_hidden();
    let trained = fit_sft(model.decoder, &examples, &config, &mut |step, loss| {
        bar.set_position(step as u64);
        bar.set_message(format!("loss {loss:.3}"));
        if hidden && (step == 1 || step % (args.steps / 4).max(1) == 0) {
            eprintln!("sft: step {step}/{}, loss {loss:.3}", args.steps);
        }
    })?;
    bar.finish_and_clear();
    // Written beside, then moved: a folder with a model is a whole one.
    let tmp = args.out.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    save_hf_dir(&trained, &model.config, Some(&model.tokenizer), &tmp)
        .with_context(|| format!("writing {}", tmp.display()))?;
    extras.write(&tmp)?;
    std::fs::rename(&tmp, &args.out).with_context(|| format!("moving {} into place", tmp.display()))?;
    eprintln!("sft: saved to {}", args.out.display());
    Ok(())
}

/// The (question, solution) of each line of `path`.
fn read_pairs(
    path: &Path,
    question: &str,
    solution: &str,
    limit: Option<usize>,
) -> Result<Vec<(String, String)>> {
    let text = trlvr::lines::read_text(path).with_context(|| format!("reading {}", path.display()))?;
    let mut pairs = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        if limit.is_some_and(|n| pairs.len() >= n) {
            break;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let value: serde_json::Value = serde_json::from_str(line).with_context(at)?;
        let field = |name: &str| -> Result<String> {
            match value.get(name) {
                Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                _ => bail!("{}: no text field `{name}`", at()),
            }
        };
        pairs.push((field(question)?, field(solution)?));
    }
    if pairs.is_empty() {
        bail!("{}: no examples", path.display());
    }
    Ok(pairs)
}
