//! `trlvr fetch`: where a named model is, fetched first when it is `smollm2-135m` (and,
//! built with `hub-download`, when it is a Hugging Face id missing from the cache); what
//! scripts call for a path (`$(trlvr fetch smollm2-135m)`).

use std::io::Write as _;

use anyhow::{Result, bail};

/// Arguments of `trlvr fetch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `smollm2-135m`, a Hugging Face id (`org/name[@revision]`, from the local cache;
    /// downloaded into it when built with `hub-download`) or a path.
    model: String,
}

/// Runs the command.
pub fn run(args: &Args) -> Result<()> {
    let path = crate::model::resolve_model(&args.model)?;
    if !path.exists() {
        bail!("{}: no such model", path.display());
    }
    writeln!(std::io::stdout().lock(), "{}", path.display())?;
    Ok(())
}
