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

/// Everything linked into this binary, then the plugin libraries at `paths`, in order:
/// what recipes, `--schedule` and this command can name. Partner plugins open model files
/// through this binary's loader.
pub fn registry(paths: &[PathBuf]) -> Result<Registry> {
    let mut registry = Registry::with_linked().with_model_loader(trlvr_models::open_partner);
    for path in paths {
        registry.load(path)?;
    }
    Ok(registry)
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let registry = registry(&args.load)?;
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
