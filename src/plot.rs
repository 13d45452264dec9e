//! `trlvr plot RUN [RUN...]`: a run's curves from its `metrics.jsonl` (reward, each reward
//! term, accuracy, response length, senior share, KL, validation pass@1), several runs
//! overlaid, one PNG per figure. The communication tax is not a training metric: it comes
//! from `trlvr eval` (or a study's report).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::Value;

use crate::study::plots::{ArmCurves, Axes, Curve, lines};

/// `trlvr plot` options.
#[derive(Debug, Parser)]
pub struct Args {
    /// Run directories (each holding `metrics.jsonl`), overlaid in every plot.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Where the PNGs go.
    #[arg(long, default_value = "plots")]
    pub out: PathBuf,
}

/// How a figure reads its value off a metrics line.
type Reader = Box<dyn Fn(&Value) -> Option<f64>>;

/// A figure: its file, the y axis, and how to read it off a metrics line.
struct Figure {
    file: String,
    label: String,
    read: Reader,
}

fn field(key: &'static str) -> Reader {
    Box::new(move |m| m[key].as_f64())
}

/// The figures every run can have, then one per reward term any run logged.
fn figures(runs: &[Vec<Value>]) -> Vec<Figure> {
    let mut figures: Vec<Figure> = [
        ("reward.png", "mean reward", "reward_mean"),
        ("accuracy.png", "accuracy (fraction correct)", "accuracy"),
        ("length.png", "mean response length (tokens)", "response_len_mean"),
        ("senior-share.png", "senior share of response tokens", "senior_share"),
        ("kl.png", "KL estimate", "kl"),
        ("validation.png", "validation pass@1", "validation_pass1"),
    ]
    .into_iter()
    .map(|(file, label, key)| Figure { file: file.into(), label: label.into(), read: field(key) })
    .collect();
    let mut terms: Vec<String> = runs
        .iter()
        .flatten()
        .filter_map(|m| m["rewards"].as_object())
        .flat_map(|o| o.keys().cloned())
        .collect();
    terms.sort();
    terms.dedup();
    if terms.len() > 1 {
        for term in terms {
            let key = term.clone();
            figures.push(Figure {
                file: format!("reward-{term}.png"),
                label: format!("reward term {term:?} (mean, unweighted)"),
                read: Box::new(move |m| m["rewards"][&key].as_f64()),
            });
        }
    }
    figures
}

/// Every line of a run's metrics, in order.
fn metrics(run: &Path) -> Result<Vec<Value>> {
    let path = run.join("metrics.jsonl");
    crate::input::lines(crate::input::open(&path)?, crate::input::MAX_LINE_BYTES)
        .filter(|line| !matches!(line, Ok((_, text)) if text.trim().is_empty()))
        .map(|line| {
            let (n, text) = line.with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{}, line {n}", path.display()))
        })
        .collect()
}

/// Each run's name in the legends: its folder's name, or its path where names repeat.
fn names(runs: &[PathBuf]) -> Vec<String> {
    let last =
        |p: &PathBuf| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into());
    let short: Vec<String> = runs.iter().map(last).collect();
    runs.iter()
        .zip(&short)
        .map(
            |(p, s)| {
                if short.iter().filter(|t| *t == s).count() > 1 { p.display().to_string() } else { s.clone() }
            },
        )
        .collect()
}

/// Draws the figures; returns the files written.
pub fn plot(runs: &[PathBuf], out: &Path) -> Result<Vec<PathBuf>> {
    let all = runs.iter().map(|r| metrics(r)).collect::<Result<Vec<_>>>()?;
    if all.iter().all(Vec::is_empty) {
        bail!(
            "no steps in {}: nothing to plot",
            runs.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let names = names(runs);
    let mut written = Vec::new();
    for figure in figures(&all) {
        let curves: Vec<ArmCurves> = names
            .iter()
            .zip(&all)
            .map(|(name, lines)| {
                let curve: Curve =
                    lines.iter().filter_map(|m| Some((m["step"].as_f64()?, (figure.read)(m)?))).collect();
                (name.clone(), if curve.is_empty() { vec![] } else { vec![curve] })
            })
            .collect();
        let title = format!("{} over training", figure.label);
        let axes = Axes { title: &title, x: "training step", y: &figure.label, thousands: false };
        if lines(out, &figure.file, axes, &curves)? {
            written.push(out.join(&figure.file));
        }
    }
    Ok(written)
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for path in plot(&args.runs, &args.out)? {
        writeln!(out, "{}", path.display())?;
    }
    Ok(())
}
