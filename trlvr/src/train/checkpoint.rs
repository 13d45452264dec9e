//! Checkpoints: the senior's weights (burnpack, with the parameter ids the optimizer
//! state is keyed by), the optimizer state and the [`TrainState`], written into a
//! temporary folder that is renamed into place, so a crash mid-write leaves the previous
//! checkpoint whole and no half-written one.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::store::ModuleRecord;

use super::{Exporter, TrainState};
use crate::model::Policy;
use crate::{Error, Result};

const WEIGHTS: &str = "senior.bpk";
const OPTIMIZER: &str = "optimizer.bpk";
const STATE: &str = "state.json";

fn error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Checkpoint { path: path.to_path_buf(), message: message.to_string() }
}

/// The folder a checkpoint is written to before it is complete.
pub(super) fn staging(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    dir.with_file_name(name)
}

/// Writes a checkpoint into `dir` (replacing one there).
pub(super) fn save<P: Policy>(
    dir: &Path,
    senior: &P,
    optimizer: &ModuleOptimizer,
    state: &TrainState,
    export: Option<&Exporter<'_, P>>,
) -> Result<()> {
    let tmp = staging(dir);
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| error(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| error(&tmp, e))?;
    senior.clone().save_file(tmp.join(WEIGHTS)).map_err(|e| error(&tmp.join(WEIGHTS), format!("{e:?}")))?;
    optimizer.save(tmp.join(OPTIMIZER)).map_err(|e| error(&tmp.join(OPTIMIZER), format!("{e:?}")))?;
    let json = serde_json::to_string_pretty(state).map_err(|e| error(&tmp, e))?;
    std::fs::write(tmp.join(STATE), json).map_err(|e| error(&tmp.join(STATE), e))?;
    if let Some(export) = export {
        export(senior, &tmp)?;
    }
    sync_dir(&tmp)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| error(dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| error(dir, e))?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    Ok(())
}

/// Flushes a folder's files and entries to disk, so a rename after it publishes complete files.
fn sync_dir(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| error(dir, e))? {
        let path = entry.map_err(|e| error(dir, e))?.path();
        if path.is_file() {
            std::fs::File::open(&path).and_then(|f| f.sync_all()).map_err(|e| error(&path, e))?;
        }
    }
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(|e| error(dir, e))
}

/// Reads a checkpoint into `senior` (a model of the same architecture) and `optimizer`.
pub(super) fn load<P: Policy>(
    dir: &Path,
    senior: P,
    optimizer: ModuleOptimizer,
) -> Result<(P, ModuleOptimizer, TrainState)> {
    let weights = dir.join(WEIGHTS);
    if !weights.exists() {
        return Err(error(dir, "not a checkpoint (no senior.bpk)"));
    }
    let record = ModuleRecord::load(&weights).map_err(|e| error(&weights, format!("{e:?}")))?;
    let senior = senior
        .try_load_record(record)
        .map_err(|e| error(&weights, format!("does not fit the senior's architecture: {e:?}")))?;
    let optimizer =
        optimizer.load(dir.join(OPTIMIZER)).map_err(|e| error(&dir.join(OPTIMIZER), format!("{e:?}")))?;
    let state = std::fs::read_to_string(dir.join(STATE)).map_err(|e| error(&dir.join(STATE), e))?;
    let state = serde_json::from_str(&state).map_err(|e| error(&dir.join(STATE), e))?;
    Ok((senior, optimizer, state))
}
