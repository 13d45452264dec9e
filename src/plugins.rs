//! `trlvr plugins`: what the registry holds (kind, name, version, crate, origin), after
//! loading plugin libraries; and the rule for libraries a file names (consent on the
//! command line, the same files on resume).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
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

/// Plugin libraries run their code in this process: those a file names (a recipe, a
/// resumed run's config) load only when the command line agrees (`--trust-plugins`).
///
/// # Errors
/// Without consent, naming the libraries and the flag.
pub fn consent(paths: &[PathBuf], trusted: bool, whose: &str) -> Result<()> {
    if paths.is_empty() || trusted {
        return Ok(());
    }
    let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "{whose} loads plugin libraries ({}): their code runs in this process, so trlvr loads them only with \
         --trust-plugins",
        list.join(", ")
    )
}

/// The file beside a run's config that records its plugin libraries' hashes.
const RECORD: &str = "plugins.json";

/// Records the hash of each plugin library a new run loads (`plugins.json`).
///
/// # Errors
/// A library cannot be read, or the record written.
pub fn record(paths: &[PathBuf], run: &Path) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let hashes = hashes(paths)?;
    let path = run.join(RECORD);
    std::fs::write(&path, serde_json::to_string_pretty(&hashes)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// A resumed run loads the plugin libraries it was trained with, byte for byte.
///
/// # Errors
/// A library changed (or is missing) since the run recorded it.
pub fn check_record(paths: &[PathBuf], run: &Path) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let path = run.join(RECORD);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "warning: {} is missing (a run from before trlvr recorded its plugins): loading them as they are now",
            path.display()
        );
        return Ok(());
    };
    let recorded: BTreeMap<String, String> =
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    for (file, hash) in hashes(paths)? {
        match recorded.get(&file) {
            Some(was) if *was == hash => {}
            Some(was) => bail!(
                "plugin {file} changed since the run started (hash {was}, now {hash}): resume with the library it \
                 was trained with, or start a new run"
            ),
            None => bail!("plugin {file} is not one the run started with ({})", path.display()),
        }
    }
    Ok(())
}

fn hashes(paths: &[PathBuf]) -> Result<BTreeMap<String, String>> {
    paths
        .iter()
        .map(|p| {
            let hash = trlvr::data::hash_files(std::slice::from_ref(p))
                .with_context(|| format!("plugin {}", p.display()))?;
            Ok((p.display().to_string(), format!("{hash:016x}")))
        })
        .collect()
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
