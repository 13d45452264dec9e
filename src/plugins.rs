//! `trlvr plugins`: what the registry holds (kind, name, version, crate, origin), after
//! loading plugin libraries.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use trlvr::plugin::{Origin, Registry};

/// Arguments of `trlvr plugins`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A plugin library (`.so`, `.dylib`, `.dll`) to load; repeatable.
    #[arg(long)]
    load: Vec<PathBuf>,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let mut registry = Registry::with_linked();
    for path in &args.load {
        registry.load(path)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:9} {:16} {:8} {:24} ORIGIN  ABOUT", "KIND", "NAME", "VERSION", "CRATE")?;
    for item in registry.list() {
        let origin = match &item.origin {
            Origin::Linked => "linked".to_string(),
            Origin::Library(path) => path.display().to_string(),
        };
        writeln!(
            out,
            "{:9} {:16} {:8} {:24} {origin}  {}",
            item.kind, item.name, item.version, item.crate_name, item.about
        )?;
    }
    Ok(())
}
