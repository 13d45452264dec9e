//! `trlvr plugins`: what the registry holds, after loading plugin libraries.

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
    for (kind, name, about, origin) in registry.list() {
        let origin = match origin {
            Origin::Linked => "built in".to_string(),
            Origin::Library(path) => path.display().to_string(),
        };
        writeln!(out, "{kind:9} {name:12} {about}  [{origin}]")?;
    }
    Ok(())
}
