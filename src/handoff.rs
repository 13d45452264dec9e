//! `trlvr handoff`: replays a handoff schedule over a real tokenization, so a researcher
//! can see where the pen changes hands (and check a plugin schedule by eye).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use trlvr::prelude::*;
use trlvr::schedule::replay;

use crate::options::ScheduleArgs;

/// Arguments of `trlvr handoff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// tokenizer.json of the senior/junior pair.
    #[arg(long, default_value = "assets/qwen3-tokenizer/tokenizer.json")]
    tokenizer: PathBuf,
    /// Text to tokenize and replay (reads standard input when absent).
    #[arg(long)]
    text: Option<String>,
    /// The schedule.
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Seed of the row's random stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// EOS token strings (default: Qwen3's).
    #[arg(long, default_values_t = ["<|im_end|>".to_string(), "<|endoftext|>".to_string()])]
    eos: Vec<String>,
    /// Print one JSON line per token instead of marked-up text.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let tokenizer = trlvr::vocab::read_tokenizer(&args.tokenizer)?;
    let eos: Vec<TokenId> = args
        .eos
        .iter()
        .map(|s| {
            tokenizer.token_to_id(s).with_context(|| format!("EOS token {s:?} is not in the vocabulary"))
        })
        .collect::<Result<_>>()?;
    let classes = TokenClasses::from_tokenizer(&tokenizer, &eos)?;
    let text = match &args.text {
        Some(t) => t.clone(),
        None => {
            let limit = crate::input::MAX_LINE_BYTES;
            let text = std::io::read_to_string(std::io::Read::take(std::io::stdin(), limit as u64 + 1))
                .context("reading standard input")?;
            if text.len() > limit {
                bail!("standard input is longer than {limit} bytes");
            }
            text
        }
    };
    if text.is_empty() {
        bail!("no text given (use --text or standard input)");
    }
    let ids = tokenizer.encode(text.as_str(), false).map_err(|e| anyhow::anyhow!("{e}"))?.get_ids().to_vec();
    let schedule = args.schedule.build()?;
    let (owners, finish) = replay(&*schedule, &classes, &ids, args.seed, 0);
    // The row ends where the schedule stops it (EOS, round cap); the rest is not written.
    let ids = &ids[..owners.len()];

    let mut out = std::io::stdout().lock();
    if args.json {
        for (&id, &owner) in ids.iter().zip(&owners) {
            let piece = tokenizer.decode(&[id], false).map_err(|e| anyhow::anyhow!("{e}"))?;
            let line = serde_json::json!({
                "id": id, "text": piece, "owner": owner,
                "word_start": classes.is_word_start(id),
            });
            writeln!(out, "{line}")?;
        }
    } else {
        writeln!(out, "{}", marked(&tokenizer, ids, &owners)?)?;
    }
    let senior = owners.iter().filter(|&&o| o == Owner::Senior).count();
    let handoffs = owners.windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!(
        "{} tokens, {} senior ({:.1}%), {} handoffs, schedule {}{}",
        owners.len(),
        senior,
        100.0 * senior as f64 / owners.len().max(1) as f64,
        handoffs,
        schedule.name(),
        finish.map(|f| format!(", stopped: {f:?}")).unwrap_or_default()
    );
    Ok(())
}

/// The text of `ids` with each owner's run marked `[S]` (senior) or `[J]` (junior).
///
/// Each run's text is what it adds to the decoded prefix, so spaces a decoder drops at
/// the start of a text (SentencePiece's) stay; a character split over a handoff shows as
/// U+FFFD in the run that holds its first bytes.
pub fn marked(tokenizer: &tokenizers::Tokenizer, ids: &[TokenId], owners: &[Owner]) -> Result<String> {
    let decode = |ids: &[TokenId]| tokenizer.decode(ids, false).map_err(|e| anyhow::anyhow!("{e}"));
    let mut text = String::new();
    let mut prefix = String::new();
    let mut start = 0;
    for end in 1..=ids.len().min(owners.len()) {
        if end == ids.len().min(owners.len()) || owners[end] != owners[start] {
            let upto = decode(&ids[..end])?;
            let run = match upto.strip_prefix(prefix.as_str()) {
                Some(added) => added.to_string(),
                None => decode(&ids[start..end])?,
            };
            text.push_str(if owners[start] == Owner::Senior { "[S]" } else { "[J]" });
            text.push_str(&run);
            prefix = upto;
            start = end;
        }
    }
    Ok(text)
}
