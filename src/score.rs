//! `trlvr score`: teacher-forced log-probs of texts under a model (what legibility uses).
//!
//! Input: JSON lines, each `{"text": "..."}` (optionally `"prompt": "..."`: then only
//! the text's tokens after the prompt are scored). Output: one JSON line per input with
//! `tokens`, `mean_ce` (nats) and `log_probs`. A bad line gets an error line naming its
//! number; the others are still scored, and the command then fails.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Deserialize;
use trlvr::device::parse_device;
use trlvr::prelude::*;

use crate::model::{Loaded, resolve_model};
use crate::options::DeviceArgs;

/// Arguments of `trlvr score`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A Hugging Face model directory or a .gguf file.
    #[arg(long, alias = "senior")]
    model: PathBuf,
    /// JSON lines with `text` (and optional `prompt`); `-` for standard input.
    #[arg(long)]
    input: PathBuf,
    /// Texts per forward pass.
    #[arg(long, alias = "batch", default_value_t = 8)]
    batch_size: usize,
    /// Where the model runs, and in what precision.
    #[command(flatten)]
    device: DeviceArgs,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    text: String,
    #[serde(default)]
    prompt: String,
}

/// A parsed line: its number, the ids, and where scoring starts.
struct Item {
    line: usize,
    ids: Vec<TokenId>,
    from: usize,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device.device)?;
    crate::precision::check(args.device.dtype, &device, "--dtype")?;
    let model =
        Loaded::from_path(&resolve_model(&args.model.to_string_lossy())?, &device)?.frozen(args.device.dtype);
    let reader = crate::input::open(&args.input)?;
    let mut out = std::io::stdout().lock();
    let mut pending = Vec::new();
    let (mut scored, mut failed) = (0usize, 0usize);
    for line in crate::input::lines(reader, crate::input::MAX_LINE_BYTES) {
        let (line_no, text) = line.with_context(|| format!("reading {}", args.input.display()))?;
        if text.trim().is_empty() {
            continue;
        }
        match parse(&model, &text) {
            Ok((ids, from)) => pending.push(Item { line: line_no, ids, from }),
            Err(e) => {
                failed += 1;
                writeln!(out, "{}", serde_json::json!({ "line": line_no, "error": format!("{e:#}") }))?;
            }
        }
        if pending.len() >= args.batch_size.max(1) {
            scored += flush(&model, &mut pending, &mut out)?;
        }
    }
    scored += flush(&model, &mut pending, &mut out)?;
    eprintln!("scored {scored} texts, {failed} bad lines");
    if failed > 0 {
        anyhow::bail!("{failed} bad input lines (see the error lines above)");
    }
    Ok(())
}

fn parse(model: &Loaded, text: &str) -> Result<(Vec<TokenId>, usize)> {
    let line: Line = serde_json::from_str(text).context("expected {\"text\": ..., \"prompt\"?: ...}")?;
    let prompt = model.encode(&line.prompt)?;
    let ids = model.encode(&format!("{}{}", line.prompt, line.text))?;
    if ids.len() < 2 || ids.len() <= prompt.len() {
        anyhow::bail!("nothing to score: the text has no token after the first (or after the prompt)");
    }
    Ok((ids, prompt.len().max(1)))
}

fn flush(model: &Loaded, pending: &mut Vec<Item>, out: &mut impl Write) -> Result<usize> {
    if pending.is_empty() {
        return Ok(0);
    }
    let batch = TokenBatch::new(pending.iter().map(|i| i.ids.clone()).collect(), 0)?;
    let width = batch.width();
    let log_probs =
        model.decoder.score(&batch, 1.0)?.try_into_vec_as::<f32>().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    for (row, item) in pending.iter().enumerate() {
        let lp = &log_probs[row * width + item.from..row * width + item.ids.len()];
        let mean_ce = -lp.iter().map(|&x| f64::from(x)).sum::<f64>() / lp.len() as f64;
        writeln!(
            out,
            "{}",
            serde_json::json!({ "line": item.line, "tokens": lp.len(), "mean_ce": mean_ce, "log_probs": lp })
        )?;
    }
    let n = pending.len();
    pending.clear();
    Ok(n)
}
