//! `trlvr`: the command-line front end.

mod handoff;

use anyhow::Result;
use clap::{Parser, Subcommand};

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
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Handoff(args) => handoff::run(&args),
    }
}
