//! `trlvr`: the command-line front end.

mod handoff;
mod plugins;

use anyhow::Result;
use clap::{Parser, Subcommand};
// Statically linked plugins register themselves; this keeps the crate linked.
use trlvr_junior_kl as _;

/// Tandem Reinforcement Learning with Verifiable Rewards.
#[derive(Debug, Parser)]
#[command(name = "trlvr", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show who would write each token of a text under a handoff schedule.
    Handoff(handoff::Args),
    /// List the objectives, schedules and partners available, loading plugin libraries.
    Plugins(plugins::Args),
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Handoff(args) => handoff::run(&args),
        Command::Plugins(args) => plugins::run(&args),
    }
}
