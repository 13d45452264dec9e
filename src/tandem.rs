//! `trlvr tandem`: a senior and a junior co-write answers to a prompt, each token marked
//! with its author.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use trlvr::device::parse_device;
use trlvr::prelude::*;
use trlvr_verifiers::check;

use crate::handoff::marked;
use crate::model::Loaded;
use crate::options::{PrecisionArgs, SamplingArgs, ScheduleArgs};
use crate::progress::{show, steps_bar};

/// Arguments of `trlvr tandem`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The senior: a Hugging Face model directory or a .gguf file.
    #[arg(long)]
    senior: PathBuf,
    /// The junior (default: the senior again, self-paired); same tokenizer.
    #[arg(long)]
    junior: Option<PathBuf>,
    /// The user message.
    #[arg(long)]
    prompt: String,
    /// Use the prompt as is, without the chat template.
    #[arg(long)]
    raw: bool,
    /// G: rollouts of the prompt.
    #[arg(long, default_value_t = 4)]
    group: usize,
    /// Response cap in tokens, shared by both models.
    #[arg(long, default_value_t = 256)]
    max_new_tokens: usize,
    /// The handoff schedule.
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Sampling (temperature 0.6 unless given, as in training).
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Allow a senior and junior whose vocabulary sizes differ (e.g. Qwen2.5-7B with
    /// 152064 ids and 1.5B with 151936, one tokenizer): only the shared ids are sampled.
    #[arg(long)]
    allow_vocab_prefix: bool,
    /// When the idle model reads the other's tokens: lazy, piggyback or eager.
    #[arg(long, default_value = "piggyback", value_parser = parse_catch_up)]
    catch_up: CatchUp,
    /// The reference answer: each rollout's answer is checked with the math verifier
    /// (MATH-style extraction: `\boxed{}`, "the answer is", ...), the team's reward.
    #[arg(long)]
    answer: Option<String>,
    /// flex, cuda[:N], tch, tch-cuda[:N].
    #[arg(long, default_value = "flex")]
    device: String,
    /// Both models' precision.
    #[command(flatten)]
    precision: PrecisionArgs,
    /// One JSON line per rollout (tokens, owners, log-probs, ...) instead of marked text.
    #[arg(long)]
    json: bool,
}

/// `CatchUp` by its serde name.
fn parse_catch_up(name: &str) -> Result<CatchUp, String> {
    serde_json::from_value(serde_json::Value::String(name.into()))
        .map_err(|_| format!("expected lazy, piggyback or eager, got {name:?}"))
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device)?;
    let load = |path: &PathBuf| {
        Ok::<_, anyhow::Error>(Loaded::from_path(path, &device)?.frozen(args.precision.dtype))
    };
    let senior = load(&args.senior)?;
    let junior = args.junior.as_ref().map(load).transpose()?;
    if let Some(junior) = &junior
        && junior.tokenizer.get_vocab(true) != senior.tokenizer.get_vocab(true)
    {
        bail!(
            "{} and {} have different tokenizers; a tandem needs one vocabulary",
            args.senior.display(),
            args.junior.as_ref().expect("junior given").display()
        );
    }
    let junior_model = junior.as_ref().map_or(&senior.decoder, |j| &j.decoder);
    let classes = TokenClasses::from_tokenizer(&senior.tokenizer, &senior.eos)?;
    let prompt = senior.prompt(&args.prompt, args.raw)?;
    let config = RolloutConfig {
        group_size: args.group,
        max_new_tokens: args.max_new_tokens,
        sampling: args.sampling.sampling(Sampling::training().temperature),
        seed: args.sampling.seed,
        catch_up: args.catch_up,
        allow_vocab_prefix: args.allow_vocab_prefix,
        ..RolloutConfig::default()
    };
    let schedule = args.schedule.build()?;
    let engine = RolloutEngine::new(&senior.decoder, junior_model, &classes, config)?;
    let start = std::time::Instant::now();
    let bar = steps_bar(args.max_new_tokens);
    let rollouts = engine.generate_with(&[prompt], schedule.as_ref(), &mut |p| show(&bar, p))?;
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();

    let mut out = std::io::stdout().lock();
    let mut correct = 0;
    for (i, r) in rollouts.iter().enumerate() {
        // The text without its stopping EOS marker.
        let shown = r.tokens.len() - usize::from(r.finish == Finish::Eos);
        let text = marked(&senior.tokenizer, &r.tokens[..shown], &r.owners[..shown])?;
        let verdict = match &args.answer {
            Some(answer) => Some(check(answer, &senior.decode(&r.tokens[..shown])?)),
            None => None,
        };
        correct += usize::from(verdict.as_ref().is_some_and(|v| v.equal));
        if args.json {
            let mut line = serde_json::json!({
                "rollout": i, "row_key": r.row_key, "text": text, "tokens": r.tokens, "owners": r.owners,
                "log_probs": r.log_probs, "finish": r.finish, "senior_share": r.senior_share(),
            });
            if let Some(v) = &verdict {
                line["answer"] = serde_json::json!(v.pred);
                line["correct"] = serde_json::json!(v.equal);
            }
            writeln!(out, "{line}")?;
        } else {
            writeln!(
                out,
                "--- rollout {i} ({} tokens, senior {:.0}%, stopped: {:?})",
                r.tokens.len(),
                100.0 * r.senior_share(),
                r.finish
            )?;
            writeln!(out, "{text}")?;
            if let Some(v) = &verdict {
                writeln!(out, "answer: {} ({})", v.pred.as_deref().unwrap_or("none"), v.reason)?;
            }
        }
    }
    if args.answer.is_some() {
        eprintln!("{correct}/{} correct", rollouts.len());
    }
    let tokens: usize = rollouts.iter().map(|r| r.tokens.len()).sum();
    eprintln!(
        "{} rollouts, {tokens} tokens in {seconds:.2} s ({:.1} tok/s), schedule {}",
        rollouts.len(),
        tokens as f64 / seconds,
        schedule.name()
    );
    Ok(())
}
