//! `trlvr verify`: checks answers against references with the math verifier.
//!
//! Input: JSON lines, each `{"gold": "...", "pred": "..."}` (`pred` a full response or a
//! bare answer). Output: one JSON line per input with `equal` and the extracted and
//! normalised forms; a summary on standard error. A bad line gets an error line naming
//! its number, the others are still checked, and the command then fails.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde::Deserialize;
use trlvr_verifiers::{Extraction, MathVerifier};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Dataset {
    /// Last \boxed{}, then "the answer is", then a bare answer.
    Math,
    /// `#### N` first (in both gold and pred), then as math, then the last number.
    Gsm8k,
}

/// Arguments of `trlvr verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON lines with `gold` and `pred`; `-` for standard input.
    #[arg(long)]
    input: PathBuf,
    /// Where answers are found.
    #[arg(long, value_enum, default_value = "math")]
    dataset: Dataset,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pair {
    gold: String,
    pred: String,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let verifier = match args.dataset {
        Dataset::Math => MathVerifier::new(Extraction::Math),
        Dataset::Gsm8k => MathVerifier::gsm8k(),
    };
    let reader = crate::input::open(&args.input)?;
    let mut out = std::io::stdout().lock();
    let (mut equal, mut checked, mut bad) = (0usize, 0usize, 0usize);
    let start = std::time::Instant::now();
    for (n, line) in reader.lines().enumerate() {
        let line_no = n + 1;
        let text = line.with_context(|| format!("reading line {line_no}"))?;
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Pair>(&text) {
            Ok(pair) => {
                let verdict = verifier.check(&pair.gold, &pair.pred);
                checked += 1;
                equal += usize::from(verdict.equal);
                let mut json = serde_json::to_value(&verdict)?;
                json["line"] = line_no.into();
                writeln!(out, "{json}")?;
            }
            Err(e) => {
                bad += 1;
                let message = format!("line {line_no}: expected {{\"gold\": ..., \"pred\": ...}}: {e}");
                writeln!(out, "{}", serde_json::json!({ "line": line_no, "error": message }))?;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    eprintln!(
        "{checked} checked, {equal} equal ({:.1}%), {bad} bad lines, {:.0} checks/s",
        100.0 * equal as f64 / checked.max(1) as f64,
        checked as f64 / seconds.max(1e-9)
    );
    if bad > 0 {
        bail!("{bad} bad input lines (see the error lines above)");
    }
    Ok(())
}
