//! `trlvr verify`: checks answers against references with the math verifier.
//!
//! Input: JSON lines, each `{"gold": ..., "pred": ...}`: strings (`pred` a full response or
//! a bare answer, `gold` an answer or a whole solution), numbers (many datasets store
//! answers so), or `null` for a missing answer. Output: one JSON line per input with
//! `equal`, the reason and the extracted and normalised forms; a summary with the count of
//! each reason on standard error. A bad line gets an error line naming its number, the
//! others are still checked, and the command then fails.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use serde::Deserialize;
use trlvr_verifiers::{Extraction, MathVerifier, Verdict};

/// The grader, by the names `trlvr eval --grading` uses (`lenient`, `boxed`) and two
/// dataset-specific ones.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Grading {
    /// Free text on both sides: a box, `####`, a bare formula, a "final answer" phrase in
    /// several languages, the last math environment, the last number; option letters.
    #[value(alias = "auto")]
    Lenient,
    /// The training reward: the response's last \boxed{} only, the reference whole.
    #[value(alias = "strict")]
    Boxed,
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
    /// How answers are found and compared (`--dataset auto|strict` of earlier versions
    /// still works).
    #[arg(long, alias = "dataset", value_enum, default_value = "lenient")]
    grading: Grading,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pair {
    gold: Field,
    pred: Field,
}

/// An answer as datasets store it.
#[derive(Deserialize)]
#[serde(untagged)]
enum Field {
    Text(String),
    Number(serde_json::Number),
    /// `null`: no answer.
    Missing(()),
}

impl Field {
    fn text(&self) -> Option<String> {
        match self {
            Self::Text(s) => Some(s.clone()),
            Self::Number(n) => Some(n.to_string()),
            Self::Missing(()) => None,
        }
    }
}

/// Checks one pair; a missing side gets the verifier's reason for it.
fn check(verifier: &MathVerifier, pair: &Pair) -> Verdict {
    match (pair.gold.text(), pair.pred.text()) {
        (Some(gold), Some(pred)) => verifier.check(&gold, &pred),
        (gold, _) => {
            let reason = if gold.is_none() { "no reference answer" } else { "no answer found" };
            let v = verifier.check(gold.as_deref().unwrap_or(""), "");
            Verdict { pred: None, pred_normalized: None, equal: false, reason, ..v }
        }
    }
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let verifier = match args.grading {
        Grading::Lenient => MathVerifier::grader(),
        Grading::Boxed => MathVerifier::strict(),
        Grading::Math => MathVerifier::new(Extraction::Math),
        Grading::Gsm8k => MathVerifier::gsm8k(),
    };
    let reader = crate::input::open(&args.input)?;
    let mut out = std::io::stdout().lock();
    let (mut equal, mut checked, mut bad) = (0usize, 0usize, 0usize);
    let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    let start = std::time::Instant::now();
    for line in crate::input::lines(reader, crate::input::MAX_LINE_BYTES) {
        let (line_no, text) = line.with_context(|| format!("reading {}", args.input.display()))?;
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Pair>(&text) {
            Ok(pair) => {
                let verdict = check(&verifier, &pair);
                checked += 1;
                *reasons.entry(verdict.reason).or_default() += 1;
                equal += usize::from(verdict.equal);
                let mut json = serde_json::to_value(&verdict)?;
                json["line"] = line_no.into();
                writeln!(out, "{json}")?;
            }
            Err(e) => {
                bad += 1;
                let message = format!(
                    "line {line_no}: expected {{\"gold\": ..., \"pred\": ...}} (strings, numbers or null): {e}"
                );
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
    let counts: Vec<String> = reasons.iter().map(|(reason, n)| format!("{reason}: {n}")).collect();
    if !counts.is_empty() {
        eprintln!("reasons: {}", counts.join(", "));
    }
    if bad > 0 {
        bail!("{bad} bad input lines (see the error lines above)");
    }
    Ok(())
}
