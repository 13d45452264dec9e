//! Solo results one evaluation takes from another of the same senior.
//!
//! The solo samples depend on the senior, the problems and the sampler only, not on the
//! junior or the handoff schedule; their legibility and drift depend on the junior too
//! (method.md §5). A second evaluation of one senior under another handoff schedule (a
//! study's word schedule beside the paragraph alternation) takes both from the first and
//! draws its handoff samples only: the same figures, at the cost of one mode.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::legibility::ChainStats;
use super::report::Report;
use super::store::{Mode, ProblemSamples, SampleStore, differences};
use crate::{Error, Result};

/// Settings the solo samples do not depend on.
const HANDOFF_ONLY: [&str; 3] = ["handoff", "junior", "max_rounds"];

/// An earlier evaluation's solo samples, and their measures where its junior is ours.
#[derive(Debug, Default)]
pub struct SoloSource {
    /// Where they were read from (for messages and records).
    path: PathBuf,
    samples: HashMap<(String, usize), ProblemSamples>,
    legibility: HashMap<(String, usize), (Option<u64>, ChainStats)>,
}

impl SoloSource {
    /// The solo samples of the samples file `samples` and, when `report` (that
    /// evaluation's) is given and its junior is the one of `settings`, their measures;
    /// `settings` are those of the evaluation that takes them.
    ///
    /// # Errors
    /// [`Error::Data`] for a file that does not read; [`Error::Config`] when the two
    /// evaluations differ in anything the solo samples depend on (named).
    pub fn read(samples: &Path, report: Option<&Report>, settings: &Value) -> Result<Self> {
        let (theirs, store) = SampleStore::read_any(samples)?;
        let solo_part = |s: &Value| {
            let mut s = s.clone();
            if let Some(map) = s.as_object_mut() {
                for k in HANDOFF_ONLY {
                    map.remove(k);
                }
            }
            s
        };
        let (a, b) = (solo_part(&theirs), solo_part(settings));
        if a != b {
            return Err(Error::Config(format!(
                "{}: solo samples drawn with other settings cannot be reused ({})",
                samples.display(),
                differences(&a, &b).join("; ")
            )));
        }
        let mut source = Self { path: samples.to_path_buf(), ..Self::default() };
        for record in store.records().filter(|r| r.mode == Mode::Solo) {
            source.samples.insert((record.set.clone(), record.id), record.clone());
        }
        if let Some(report) = report.filter(|_| theirs.get("junior") == settings.get("junior")) {
            for set in &report.sets {
                for p in &set.problems {
                    source.legibility.insert((set.name.clone(), p.id), (p.prompt_hash, p.legibility));
                }
            }
        }
        Ok(source)
    }

    /// Where the samples were read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Solo samples held, and how many of them come with their measures.
    pub fn len(&self) -> (usize, usize) {
        (self.samples.len(), self.legibility.len())
    }

    /// Appends to `store` the solo samples it lacks; how many.
    ///
    /// # Errors
    /// The store's, if its file cannot be written.
    pub fn adopt(&self, store: &mut SampleStore) -> Result<usize> {
        let mut missing: Vec<ProblemSamples> = self
            .samples
            .values()
            .filter(|r| store.get(&r.set, r.id, Mode::Solo, r.prompt_hash).is_none())
            .cloned()
            .collect();
        missing.sort_by(|a, b| (&a.set, a.id).cmp(&(&b.set, b.id)));
        let n = missing.len();
        store.append(missing)?;
        Ok(n)
    }

    /// The measures of `solo` in dataset `set`, if these are its samples, measured.
    pub fn legibility(&self, set: &str, solo: &ProblemSamples) -> Option<ChainStats> {
        let key = (set.to_string(), solo.id);
        let (hash, stats) = self.legibility.get(&key)?;
        let same = self.samples.get(&key) == Some(solo) && *hash == Some(solo.prompt_hash);
        same.then_some(*stats)
    }
}
