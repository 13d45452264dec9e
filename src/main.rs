//! `trlvr`: the command-line front end.

mod compare;
mod data;
mod demo;
mod eval;
mod familiar;
mod fetch;
mod generate;
mod handoff;
mod input;
mod model;
mod options;
mod plot;
mod plots;
mod plugins;
mod precision;
mod progress;
mod ranks;
mod recipe;
mod score;
mod sft;
mod study;
mod tandem;
mod tensorboard;
mod train;
mod verify;

use anyhow::Result;
use clap::{Parser, Subcommand};
// Statically linked plugins register themselves; this keeps the crate linked.
use trlvr_junior_kl as _;
use trlvr_sentence_handoff as _;
use trlvr_tempered_junior as _;
// With `--features dynamic`, trlvr (and Burn) come from the shared library plugins link.
#[cfg(feature = "dynamic")]
use trlvr_dylib as _;

/// Tandem Reinforcement Learning with Verifiable Rewards.
#[derive(Debug, Parser)]
#[command(name = "trlvr", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// In the order of a researcher's work (`trlvr --help` lists them so): the demo, data and
// warm-up, training, evaluation, studies, then the tools.
#[derive(Debug, Subcommand)]
enum Command {
    /// The paper's comparison in miniature: GRPO, TRLVR and KL-Reg on a synthetic task, with a report.
    Demo(demo::Args),
    /// Write a task's training and validation sets (disjoint by construction).
    Data(data::Args),
    /// Supervised warm-up on worked solutions (teaches the answer's format before RL).
    Sft(sft::Args),
    /// Train a senior (TRLVR, GRPO or KL-Reg) from a TOML recipe, or resume a run.
    Train(train::Args),
    /// Draw runs' training curves (reward, accuracy, length, KL, ...) from their metrics.jsonl into PNGs (the tax comes from `trlvr eval`).
    Plot(plot::Args),
    /// Solo and handoff pass@k, communication tax, legibility and drift of a senior/junior pair.
    Eval(eval::Args),
    /// Paired comparison of two evaluations over the same problems: B − A with bootstrap intervals.
    Compare(compare::Args),
    /// The paper's comparison from a study file: arms × seeds trained and evaluated, declared claims judged.
    Study(study::Args),
    /// Generate an answer with one model (HF directory or GGUF file).
    Generate(generate::Args),
    /// A senior and a junior co-write answers; each token is marked with its author.
    Tandem(tandem::Args),
    /// Show who would write each token of a text under a handoff schedule.
    Handoff(handoff::Args),
    /// Teacher-forced log-probs and mean cross-entropy of texts under a model.
    Score(score::Args),
    /// Check answers against references with the math verifier.
    Verify(verify::Args),
    /// List the objectives, schedules, partners and rewards available, loading plugin libraries.
    Plugins(plugins::Args),
    /// Print where a named model is, fetching `smollm2-135m` on first use (for scripts).
    Fetch(fetch::Args),
}

// The recipe's fuzz test measures allocations through the guard.
#[cfg(test)]
#[global_allocator]
static GUARD: trlvr::testing::fuzz::AllocationGuard = trlvr::testing::fuzz::AllocationGuard;

fn main() -> Result<()> {
    trlvr::device::keep_freed_memory();
    // The libraries speak through `tracing`: warnings reach standard error unless
    // RUST_LOG says otherwise (`RUST_LOG=trlvr=debug`, `RUST_LOG=off`).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
    match Cli::parse().command {
        Command::Demo(args) => demo::run(&args),
        Command::Handoff(args) => handoff::run(&args),
        Command::Plugins(args) => plugins::run(&args),
        Command::Generate(args) => generate::run(&args),
        Command::Tandem(args) => tandem::run(&args),
        Command::Score(args) => score::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Train(args) => train::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Study(args) => study::run(&args),
        Command::Data(args) => data::run(&args),
        Command::Sft(args) => sft::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Fetch(args) => fetch::run(&args),
    }
}
