//! Checkpoints: the senior's weights (burnpack, with the parameter ids the optimizer
//! state is keyed by), the optimizer state and the [`TrainState`], written into a
//! temporary folder that is renamed into place, so a crash mid-write leaves the previous
//! checkpoint whole and no half-written one. `checksums.json` holds every file's size and
//! XXH3, written last and checked before a checkpoint is read: a file damaged since
//! (truncated, flipped) is named, never loaded.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::store::ModuleRecord;

use super::{Exporter, TrainState};
use crate::model::Policy;
use crate::{Error, Result};

const WEIGHTS: &str = "senior.bpk";
const OPTIMIZER: &str = "optimizer.bpk";
const STATE: &str = "state.json";
const CHECKSUMS: &str = "checksums.json";

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
    let sums = checksums(&tmp)?;
    let json = serde_json::to_string_pretty(&sums).map_err(|e| error(&tmp, e))?;
    std::fs::write(tmp.join(CHECKSUMS), json).map_err(|e| error(&tmp.join(CHECKSUMS), e))?;
    sync_dir(&tmp)?;
    // An existing checkpoint of this step is renamed aside, not deleted, until the new one
    // is in place: at every moment one complete copy exists ([`restore_aside`]).
    let old = aside(dir);
    if dir.exists() {
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(|e| error(&old, e))?;
        }
        std::fs::rename(dir, &old).map_err(|e| error(dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| error(dir, e))?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent)?;
    }
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| error(&old, e))?;
    }
    Ok(())
}

/// Where [`save`] keeps the checkpoint it replaces while the new one is renamed in.
fn aside(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".old");
    dir.with_file_name(name)
}

/// After a crash between [`save`]'s renames: puts back a checkpoint left aside whose
/// replacement never arrived, and drops one whose replacement did.
pub(super) fn restore_aside(dir: &Path) -> Result<()> {
    let old = aside(dir);
    if !old.exists() {
        return Ok(());
    }
    if dir.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| error(&old, e))
    } else {
        std::fs::rename(&old, dir).map_err(|e| error(&old, e))
    }
}

/// Each file's size and XXH3 (hex), by name.
type Checksums = std::collections::BTreeMap<String, (u64, String)>;

fn checksums(dir: &Path) -> Result<Checksums> {
    let mut sums = Checksums::new();
    for entry in std::fs::read_dir(dir).map_err(|e| error(dir, e))? {
        let path = entry.map_err(|e| error(dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if path.is_file() && name != CHECKSUMS {
            sums.insert(name, file_checksum(&path)?);
        }
    }
    Ok(sums)
}

fn file_checksum(path: &Path) -> Result<(u64, String)> {
    let bytes = std::fs::metadata(path).map_err(|e| error(path, e))?.len();
    let hash = crate::data::hash_files(&[path.to_path_buf()]).map_err(|e| error(path, e))?;
    Ok((bytes, format!("{hash:016x}")))
}

/// Checks every file of the checkpoint in `dir` against its `checksums.json`. Without one
/// the checkpoint fails (one damaged byte there must not switch the check off), unless
/// `unchecked` accepts it as it is (a checkpoint written before checksums existed).
///
/// # Errors
/// [`Error::Checkpoint`] naming the first missing, resized or changed file, or the missing
/// or unreadable `checksums.json`.
pub fn verify(dir: &Path, unchecked: bool) -> Result<()> {
    let path = dir.join(CHECKSUMS);
    if !dir.join(WEIGHTS).exists() {
        return Err(error(dir, "not a checkpoint (no senior.bpk)"));
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_) if unchecked => return Ok(()),
        Err(e) => {
            return Err(error(
                &path,
                format!(
                    "{e}: without its checksums the checkpoint cannot be checked (one written before checksums \
                     existed is taken as it is with `--accept-unchecked`)"
                ),
            ));
        }
    };
    let sums: Checksums = serde_json::from_str(&text).map_err(|e| error(&path, e))?;
    for (name, (bytes, hash)) in &sums {
        // Only the checkpoint's own files: a name with a separator, `..` or a root would
        // check (and name) a file elsewhere.
        let mut parts = Path::new(name).components();
        if !matches!((parts.next(), parts.next()), (Some(std::path::Component::Normal(_)), None)) {
            return Err(error(&path, format!("lists {name:?}, which is not a file name of the checkpoint")));
        }
        let file = dir.join(name);
        if !file.exists() {
            return Err(error(&file, "missing"));
        }
        let (got_bytes, got_hash) = file_checksum(&file)?;
        if got_bytes != *bytes {
            return Err(error(&file, format!("damaged: {got_bytes} bytes, {bytes} when written")));
        }
        if got_hash != *hash {
            return Err(error(&file, format!("damaged: checksum {got_hash}, {hash} when written")));
        }
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
    unchecked: bool,
    senior: P,
    optimizer: ModuleOptimizer,
) -> Result<(P, ModuleOptimizer, TrainState)> {
    verify(dir, unchecked)?;
    let weights = dir.join(WEIGHTS);
    let senior = unpanicked(&weights, || {
        let record = ModuleRecord::load(&weights).map_err(|e| error(&weights, format!("{e:?}")))?;
        senior
            .try_load_record(record)
            .map_err(|e| error(&weights, format!("does not fit the senior's architecture: {e:?}")))
    })?;
    let path = dir.join(OPTIMIZER);
    let optimizer = unpanicked(&path, || optimizer.load(&path).map_err(|e| error(&path, format!("{e:?}"))))?;
    let state = std::fs::read_to_string(dir.join(STATE)).map_err(|e| error(&dir.join(STATE), e))?;
    let state = serde_json::from_str(&state).map_err(|e| error(&dir.join(STATE), e))?;
    Ok((senior, optimizer, state))
}

/// Runs a Burn record reader, which panics on some malformed files (an optimizer tensor
/// without its parameter id, say): the panic becomes an error naming the file.
fn unpanicked<T>(path: &Path, read: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(error(path, format!("unreadable: Burn's reader panicked ({why})")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Burn's optimizer reader panicked on a flipped bit (tests/train.rs, fuzz_checkpoint_files).
    #[test]
    fn a_panicking_reader_becomes_an_error_naming_the_file() {
        let path = Path::new("run/checkpoints/step-000002/optimizer.bpk");
        let err =
            unpanicked::<()>(path, || panic!("record tensors should carry a parameter id")).unwrap_err();
        let err = err.to_string();
        assert!(err.contains("step-000002/optimizer.bpk") && err.contains("parameter id"), "{err}");
        assert_eq!(unpanicked(path, || Ok(3)).unwrap(), 3);
    }

    // A flipped bit turned "optimizer.bpk" into "/ptimizer.bpk": the check then looked at
    // the root and named a file outside the checkpoint (CI's fuzz run, seed 1796189063).
    #[test]
    fn checksums_may_only_name_files_of_the_checkpoint() {
        let dir = std::env::temp_dir().join(format!("trlvr-checksums-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("senior.bpk"), b"weights").unwrap();
        let sums = checksums(&dir).unwrap();
        std::fs::write(dir.join(CHECKSUMS), serde_json::to_string(&sums).unwrap()).unwrap();
        verify(&dir, false).unwrap();
        for bad in ["/ptimizer.bpk", "../senior.bpk", "sub/senior.bpk", ".", ""] {
            let mut sums = sums.clone();
            sums.insert(bad.to_string(), (7, "0".into()));
            std::fs::write(dir.join(CHECKSUMS), serde_json::to_string(&sums).unwrap()).unwrap();
            let err = verify(&dir, false).unwrap_err().to_string();
            assert!(
                err.contains(&dir.display().to_string()) && err.contains("not a file name"),
                "{bad:?}: {err}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
