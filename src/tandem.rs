//! `trlvr tandem`: a senior and a junior co-write answers to a prompt, each token marked
//! with its author.

use std::io::Write;

use anyhow::{Result, bail};
use burn::prelude::Device;
use trlvr::device::parse_device;
use trlvr::prelude::*;
use trlvr_verifiers::check;

use crate::handoff::marked;
use crate::model::{Loaded, Pair};
use crate::options::{DeviceArgs, PairArgs, PromptArgs, SamplingArgs, ScheduleArgs};
use crate::progress::{show, steps_bar};

/// Arguments of `trlvr tandem`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The senior and the junior.
    #[command(flatten)]
    pair: PairArgs,
    /// The prompt.
    #[command(flatten)]
    prompt: PromptArgs,
    /// G: rollouts of the prompt.
    #[arg(long, alias = "group", default_value_t = 4)]
    group_size: usize,
    /// Response cap in tokens, shared by both models.
    #[arg(long, default_value_t = 256)]
    max_new_tokens: usize,
    /// The handoff schedule.
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Sampling (training's sampler unless given).
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Allow a senior and junior whose vocabulary sizes differ (e.g. Qwen2.5-7B with
    /// 152064 ids and 1.5B with 151936, one tokenizer): only the shared ids are sampled.
    #[arg(long)]
    allow_vocab_prefix: bool,
    /// When the idle model reads the other's tokens: lazy, piggyback or eager (default:
    /// the engine's).
    #[arg(long, value_parser = parse_catch_up)]
    catch_up: Option<CatchUp>,
    /// The reference answer: each rollout's answer is checked with the math verifier
    /// (MATH-style extraction: `\boxed{}`, "the answer is", ...), the team's reward.
    #[arg(long)]
    answer: Option<String>,
    /// Where both models run, and in what precision.
    #[command(flatten)]
    device: DeviceArgs,
    /// One JSON line per rollout (tokens, owners, log-probs, ...) instead of marked text.
    #[arg(long)]
    json: bool,
}

/// `CatchUp` by its serde name.
fn parse_catch_up(name: &str) -> Result<CatchUp, String> {
    serde_json::from_value(serde_json::Value::String(name.into()))
        .map_err(|_| format!("expected lazy, piggyback or eager, got {name:?}"))
}

/// Runs the command: the schedule and the pair, the rollouts, then each rollout shown.
pub fn run(args: &Args) -> Result<()> {
    let schedule = args.schedule.build()?;
    let device = parse_device(&args.device.device)?;
    let pair = load_pair(args, &device)?;
    let classes = TokenClasses::from_tokenizer(&pair.senior.tokenizer, &pair.senior.eos)?;
    let prompt = args.prompt.ids(&pair.senior)?;
    let engine = RolloutEngine::new(&pair.senior.decoder, pair.junior_decoder(), &classes, config(args))?;
    let start = std::time::Instant::now();
    let bar = steps_bar(args.max_new_tokens);
    let rollouts = engine.generate_with(&[prompt], &*schedule, &mut |p| show(&bar, p))?;
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();

    let correct = print_rollouts(args, &pair.senior, &rollouts)?;
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

/// The senior and the junior, which must share one tokenizer.
fn load_pair(args: &Args, device: &Device) -> Result<Pair> {
    let pair = args.pair.load(device, args.device.dtype)?;
    if let Some(junior) = &pair.junior
        && junior.tokenizer.get_vocab(true) != pair.senior.tokenizer.get_vocab(true)
    {
        bail!(
            "{} and {} have different tokenizers; a tandem needs one vocabulary",
            args.pair.senior.display(),
            args.pair.junior_path().display()
        );
    }
    Ok(pair)
}

/// The rollouts' settings: the engine's defaults, with what the command line gives.
fn config(args: &Args) -> RolloutConfig {
    let defaults = RolloutConfig::default();
    RolloutConfig {
        group_size: args.group_size,
        max_new_tokens: args.max_new_tokens,
        sampling: args.sampling.sampling(Sampling::training()),
        seed: args.sampling.seed,
        catch_up: args.catch_up.unwrap_or(defaults.catch_up),
        allow_vocab_prefix: args.allow_vocab_prefix,
        ..defaults
    }
}

/// Prints each rollout, marked by author (or as a JSON line), with its answer checked
/// when a reference is given; returns how many were right.
fn print_rollouts(args: &Args, senior: &Loaded, rollouts: &[Rollout]) -> Result<usize> {
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
    Ok(correct)
}
