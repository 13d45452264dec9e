//! `trlvr generate`: one model answers a prompt (solo rollout), with the chat template.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use trlvr::device::parse_device;
use trlvr::prelude::*;

use crate::model::Loaded;

/// Arguments of `trlvr generate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A Hugging Face model directory or a .gguf file.
    #[arg(long)]
    model: PathBuf,
    /// The user message.
    #[arg(long)]
    prompt: String,
    /// Use the prompt as is, without the chat template.
    #[arg(long)]
    raw: bool,
    /// Response cap in tokens.
    #[arg(long, default_value_t = 128)]
    max_new_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Nucleus sampling mass (1 = off).
    #[arg(long, default_value_t = 1.0)]
    top_p: f32,
    /// Keep this many most likely tokens (0 = off).
    #[arg(long, default_value_t = 0)]
    top_k: usize,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// flex, cuda[:N], tch, tch-cuda[:N].
    #[arg(long, default_value = "flex")]
    device: String,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device)?;
    let model = Loaded::from_path(&args.model, &device)?;
    let classes = TokenClasses::from_tokenizer(&model.tokenizer, &model.eos)?;
    let prompt = model.prompt(&args.prompt, args.raw)?;
    let config = RolloutConfig {
        group_size: 1,
        max_new_tokens: args.max_new_tokens,
        sampling: Sampling { temperature: args.temperature, top_p: args.top_p, top_k: args.top_k },
        seed: args.seed,
        ..RolloutConfig::default()
    };
    let start = std::time::Instant::now();
    let rollout =
        RolloutEngine::solo(&model.decoder, &classes, config)?.generate(&[prompt], &Solo::senior())?;
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
