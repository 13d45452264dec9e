//! `trlvr generate`: one model answers a prompt (solo rollout), with the chat template.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use trlvr::device::parse_device;
use trlvr::prelude::*;

use crate::model::{ChatChoice, Loaded, resolve_model};
use crate::options::{DeviceArgs, PromptArgs, SamplingArgs};
use crate::progress::{show, steps_bar};

/// Arguments of `trlvr generate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A Hugging Face model directory or a .gguf file.
    #[arg(long, alias = "senior")]
    model: PathBuf,
    /// The prompt.
    #[command(flatten)]
    prompt: PromptArgs,
    /// How the prompt is written: `own` (the model's chat template), `chatml`, or a Jinja
    /// file or Hugging Face folder whose template is used instead.
    #[arg(long, default_value = "own", value_name = "own|chatml|FILE")]
    chat_template: ChatChoice,
    /// Response cap in tokens.
    #[arg(long, default_value_t = 128)]
    max_new_tokens: usize,
    /// Sampling (greedy unless `--temperature` is given).
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Where the model runs, and in what precision.
    #[command(flatten)]
    device: DeviceArgs,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device.device)?;
    crate::precision::check(args.device.dtype, &device, "--dtype")?;
    let model = Loaded::from_path(&resolve_model(&args.model.to_string_lossy())?, &device)?
        .with_chat(&args.chat_template)?
        .frozen(args.device.dtype);
    let classes = TokenClasses::from_tokenizer(&model.tokenizer, &model.eos)?;
    let prompt = args.prompt.ids(&model)?;
    let config = RolloutConfig {
        group_size: 1,
        max_new_tokens: args.max_new_tokens,
        sampling: args.sampling.sampling(Sampling::greedy()),
        seed: args.sampling.seed,
        ..RolloutConfig::default()
    };
    let start = std::time::Instant::now();
    let bar = steps_bar(args.max_new_tokens);
    let rollout = RolloutEngine::solo(&model.decoder, &classes, config)?.generate_with(
        &[prompt],
        &Solo::senior(),
        &mut |p| show(&bar, p),
    )?;
    bar.finish_and_clear();
    let rollout = &rollout[0];
    let seconds = start.elapsed().as_secs_f64();
    let mut tokens = rollout.tokens.as_slice();
    if rollout.finish == Finish::Eos {
        tokens = &tokens[..tokens.len() - 1];
    }
    writeln!(std::io::stdout().lock(), "{}", model.decode(tokens)?)?;
    eprintln!(
        "{} tokens in {seconds:.2} s ({:.1} tok/s), stopped: {:?}",
        rollout.tokens.len(),
        rollout.tokens.len() as f64 / seconds,
        rollout.finish
    );
    Ok(())
}
