//! `trlvr compare A B`: a paired comparison of two evaluations (what `trlvr eval` wrote)
//! over the same problems: B − A of every figure, with a bootstrap interval that
//! resamples the problems once for both runs (the statistics, and the rule for what can be
//! compared, live in `trlvr::eval::compare`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde_json::{Value, json};
use trlvr::eval::{CompareConfig, Comparison, Run};

/// Arguments of `trlvr compare`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Evaluation A: an `eval.json` written by `trlvr eval`, or its output folder.
    a: PathBuf,
    /// Evaluation B: the same problems and settings (another senior, say).
    b: PathBuf,
    /// Bootstrap resamples for the intervals.
    #[arg(long, default_value_t = CompareConfig::default().bootstrap)]
    bootstrap: usize,
    /// Seed of the resamples.
    #[arg(long, default_value_t = CompareConfig::default().seed)]
    seed: u64,
    /// Print the comparison as JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let (a, b) = (Run::read(&args.a)?, Run::read(&args.b)?);
    let config = CompareConfig { bootstrap: args.bootstrap, seed: args.seed, ..CompareConfig::default() };
    let comparison = Comparison::new(&a, &b, &config)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let side = |path: &PathBuf, run: &Run| json!({ "path": path, "senior": run.senior, "seed": run.report.config.seed });
        let mut value = serde_json::to_value(&comparison)?;
        value["a"] = side(&args.a, &a);
        value["b"] = side(&args.b, &b);
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    let side = |name: &str, path: &PathBuf, run: &Run| {
        let senior = run.senior.as_ref().map_or(String::new(), |s| format!(", senior `{s}`"));
        format!("{name}: `{}`{senior}, seed {}", path.display(), run.report.config.seed)
    };
    let c = &a.report.config;
    let grading = a.recorded.get("grading").and_then(Value::as_str).unwrap_or("unrecorded");
    let header = [
        side("A", &args.a, &a),
        side("B", &args.b, &b),
        format!(
            "both: {} samples per problem at T {}, top-p {}, top-k {}; budget {} tokens; at most {} \
             handoff rounds; grading {grading}",
            c.n, c.sampling.temperature, c.sampling.top_p, c.sampling.top_k, c.max_new_tokens, c.max_rounds
        ),
    ];
    write!(out, "{}", comparison.to_markdown(&header))?;
    Ok(())
}
