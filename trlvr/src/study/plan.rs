//! The plan of a study and what of it is done: every run (an arm at a seed, or an arm
//! evaluated as it is) and its evaluations, each with a fingerprint of everything its
//! result depends on. A finished run or evaluation leaves a record beside its files; on a
//! new start those whose record carries the same fingerprint are kept, the rest run, and
//! one whose fingerprint changed (the study file was edited) is reported, never silently
//! mixed with the new ones.
//!
//! ```text
//! <out>/declared.json                 the study file's hash and claims, first start
//! <out>/runs/<arm>-seed<k>/started.json           a run begun: its fingerprint
//! <out>/runs/<arm>-seed<k>/run.json               a finished training run: fingerprint, cost
//! <out>/runs/<arm>-seed<k>/eval-<e>/started.json  an evaluation begun
//! <out>/runs/<arm>-seed<k>/eval-<e>/evaluated.json  a finished evaluation and its result
//! ```

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::evaluated::Evaluated;
use crate::{Error, Result};

/// One run of a study.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunKey {
    /// The arm.
    pub arm: String,
    /// The seed; `None` for an arm that is not trained (a reference, such as the base).
    pub seed: Option<u64>,
}

impl RunKey {
    /// Its folder under `runs/`: `grpo-seed3`, or the arm's name for a reference.
    pub fn folder(&self) -> String {
        match self.seed {
            Some(seed) => format!("{}-seed{seed}", self.arm),
            None => self.arm.clone(),
        }
    }
}

impl std::fmt::Display for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.folder())
    }
}

/// What training a run cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Wall time of training, seconds.
    pub seconds: f64,
    /// Optimizer steps.
    pub steps: usize,
    /// Prompts trained on (steps × prompts per step).
    pub prompts: usize,
    /// Rollout tokens the senior wrote.
    pub senior_tokens: u64,
    /// Rollout tokens the junior wrote.
    pub junior_tokens: u64,
}

/// A run in the plan, with its evaluations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// Which.
    pub key: RunKey,
    /// A hash of everything its training depends on (settings, inputs, seed).
    pub fingerprint: String,
    /// Its evaluations: name and fingerprint.
    pub evaluations: Vec<(String, String)>,
}

/// Where a run or an evaluation stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Finished with this fingerprint: kept.
    Done,
    /// Not finished (or not started): runs, resuming what it left.
    Pending,
    /// Finished with another fingerprint: the study changed under it.
    Changed {
        /// The fingerprint its record holds.
        recorded: String,
    },
}

/// The record of a finished run (`run.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The fingerprint it was trained with.
    pub fingerprint: String,
    /// Its cost.
    pub cost: Cost,
}

/// The record of a finished evaluation (`evaluated.json`): its fingerprint and result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalRecord {
    /// The fingerprint it was evaluated with (the run's and the evaluation's settings).
    pub fingerprint: String,
    /// Wall time, seconds.
    pub seconds: f64,
    /// The result.
    pub evaluated: Evaluated,
}

/// The plan: every run and its evaluations, under one output folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The study's folder.
    pub out: PathBuf,
    /// The runs, in the order they are started.
    pub runs: Vec<PlannedRun>,
}

impl Plan {
    /// A run's folder.
    pub fn run_dir(&self, key: &RunKey) -> PathBuf {
        self.out.join("runs").join(key.folder())
    }

    /// An evaluation's folder.
    pub fn eval_dir(&self, key: &RunKey, evaluation: &str) -> PathBuf {
        self.run_dir(key).join(format!("eval-{evaluation}"))
    }

    fn run_record(&self, key: &RunKey) -> PathBuf {
        self.run_dir(key).join("run.json")
    }

    fn eval_record(&self, key: &RunKey, evaluation: &str) -> PathBuf {
        self.eval_dir(key, evaluation).join("evaluated.json")
    }

    /// Where `run` stands: done, pending (not begun, or begun with this fingerprint: its
    /// files are resumed), or changed (finished or begun with another).
    pub fn run_state(&self, run: &PlannedRun) -> State {
        let dir = self.run_dir(&run.key);
        state(
            read_fingerprint(&self.run_record(&run.key)),
            read_fingerprint(&dir.join(STARTED)),
            &run.fingerprint,
        )
    }

    /// Where `run`'s evaluation `name` with `fingerprint` stands.
    pub fn eval_state(&self, run: &PlannedRun, name: &str, fingerprint: &str) -> State {
        let dir = self.eval_dir(&run.key, name);
        state(
            read_fingerprint(&self.eval_record(&run.key, name)),
            read_fingerprint(&dir.join(STARTED)),
            fingerprint,
        )
    }

    /// Marks `run` as begun, before any of its files are written.
    ///
    /// # Errors
    /// [`Error::Config`] when the record cannot be written.
    pub fn start_run(&self, run: &PlannedRun) -> Result<()> {
        write_record(&self.run_dir(&run.key).join(STARTED), &Started { fingerprint: run.fingerprint.clone() })
    }

    /// Marks `run`'s evaluation `name` as begun.
    ///
    /// # Errors
    /// [`Error::Config`] when the record cannot be written.
    pub fn start_eval(&self, run: &PlannedRun, name: &str, fingerprint: &str) -> Result<()> {
        write_record(
            &self.eval_dir(&run.key, name).join(STARTED),
            &Started { fingerprint: fingerprint.into() },
        )
    }

    /// Every run or evaluation finished under another fingerprint, in words (empty when
    /// the study is unchanged).
    pub fn changed(&self) -> Vec<String> {
        let mut changed = Vec::new();
        for run in &self.runs {
            if let State::Changed { .. } = self.run_state(run) {
                changed.push(format!("run {}", run.key));
                continue;
            }
            for (name, fingerprint) in &run.evaluations {
                if let State::Changed { .. } = self.eval_state(run, name, fingerprint) {
                    changed.push(format!("evaluation {name} of {}", run.key));
                }
            }
        }
        changed
    }

    /// Moves the folders of what changed aside (under `replaced/`), so they run again.
    ///
    /// # Errors
    /// [`Error::Config`] when a folder cannot be moved.
    pub fn set_changed_aside(&self) -> Result<Vec<PathBuf>> {
        let mut moved = Vec::new();
        let aside = self.out.join("replaced");
        let mut move_aside = |from: PathBuf| -> Result<()> {
            std::fs::create_dir_all(&aside).map_err(|e| io(&aside, &e))?;
            let name = from
                .strip_prefix(self.out.join("runs"))
                .unwrap_or(&from)
                .to_string_lossy()
                .replace('/', "__");
            let to =
                (0..).map(|k| aside.join(format!("{name}.{k}"))).find(|p| !p.exists()).expect("a free name");
            std::fs::rename(&from, &to).map_err(|e| io(&from, &e))?;
            moved.push(to);
            Ok(())
        };
        for run in &self.runs {
            if let State::Changed { .. } = self.run_state(run) {
                move_aside(self.run_dir(&run.key))?;
                continue;
            }
            for (name, fingerprint) in &run.evaluations {
                if let State::Changed { .. } = self.eval_state(run, name, fingerprint) {
                    move_aside(self.eval_dir(&run.key, name))?;
                }
            }
        }
        Ok(moved)
    }

    /// Records `run` as finished, at `cost`.
    ///
    /// # Errors
    /// [`Error::Config`] when the record cannot be written.
    pub fn finish_run(&self, run: &PlannedRun, cost: Cost) -> Result<()> {
        write_record(&self.run_record(&run.key), &RunRecord { fingerprint: run.fingerprint.clone(), cost })
    }

    /// A finished run's record.
    pub fn run_record_of(&self, key: &RunKey) -> Option<RunRecord> {
        read_record(&self.run_record(key))
    }

    /// Records `run`'s evaluation `name` as finished with `result`.
    ///
    /// # Errors
    /// [`Error::Config`] when the record cannot be written.
    pub fn finish_eval(
        &self,
        run: &PlannedRun,
        name: &str,
        fingerprint: &str,
        seconds: f64,
        evaluated: Evaluated,
    ) -> Result<()> {
        let record = EvalRecord { fingerprint: fingerprint.into(), seconds, evaluated };
        write_record(&self.eval_record(&run.key, name), &record)
    }

    /// A finished evaluation's record.
    pub fn eval_record_of(&self, key: &RunKey, name: &str) -> Option<EvalRecord> {
        read_record(&self.eval_record(key, name))
    }
}

/// The marker of a run or evaluation begun.
const STARTED: &str = "started.json";

#[derive(Serialize)]
struct Started {
    fingerprint: String,
}

fn state(finished: Option<String>, started: Option<String>, fingerprint: &str) -> State {
    match (finished, started) {
        (Some(f), _) if f == fingerprint => State::Done,
        (Some(recorded), _) => State::Changed { recorded },
        (None, Some(s)) if s != fingerprint => State::Changed { recorded: s },
        (None, _) => State::Pending,
    }
}

/// Only the fingerprint of a record (an evaluation's is large).
fn read_fingerprint(path: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Head {
        fingerprint: String,
    }
    read_record::<Head>(path).map(|h| h.fingerprint)
}

fn io(path: &Path, e: &std::io::Error) -> Error {
    Error::Config(format!("{}: {e}", path.display()))
}

/// Writes `value` as JSON to `path` atomically (a temporary file renamed over it), so a
/// record is whole or absent, never torn.
///
/// # Errors
/// [`Error::Config`] naming the file.
pub fn write_record<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    }
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Config(e.to_string()))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n").map_err(|e| io(&tmp, &e))?;
    std::fs::rename(&tmp, path).map_err(|e| io(path, &e))
}

/// A record, if the file holds one (a missing or unreadable file is no record).
pub fn read_record<T: DeserializeOwned>(path: &Path) -> Option<T> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The hash the study's records use: FNV-1a of the text, 16 hex digits.
pub fn fingerprint(text: &str) -> String {
    format!("{:016x}", crate::data::fnv1a(text.bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_finished_work_and_name_what_changed() {
        let out = std::env::temp_dir().join(format!("trlvr-plan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let key = RunKey { arm: "grpo".into(), seed: Some(2) };
        let run = PlannedRun {
            key: key.clone(),
            fingerprint: "aa".into(),
            evaluations: vec![("step".into(), "e1".into())],
        };
        let mut plan = Plan { out: out.clone(), runs: vec![run.clone()] };
        assert_eq!(key.folder(), "grpo-seed2");
        assert_eq!(plan.run_state(&run), State::Pending);
        plan.finish_run(&run, Cost { steps: 3, ..Cost::default() }).unwrap();
        assert_eq!(plan.run_state(&run), State::Done);
        assert_eq!(plan.run_record_of(&key).unwrap().cost.steps, 3);
        assert!(plan.changed().is_empty());
        // The study changed: the run's fingerprint is another.
        plan.runs[0].fingerprint = "bb".into();
        assert_eq!(plan.run_state(&plan.runs[0]), State::Changed { recorded: "aa".into() });
        assert_eq!(plan.changed(), ["run grpo-seed2"]);
        let moved = plan.set_changed_aside().unwrap();
        assert_eq!(moved, [out.join("replaced/grpo-seed2.0")]);
        assert_eq!(plan.run_state(&plan.runs[0]), State::Pending);
        // Begun with this fingerprint: pending (resumed); with another: changed.
        plan.start_run(&plan.runs[0]).unwrap();
        assert_eq!(plan.run_state(&plan.runs[0]), State::Pending);
        plan.runs[0].fingerprint = "cc".into();
        assert_eq!(plan.run_state(&plan.runs[0]), State::Changed { recorded: "bb".into() });
        plan.runs[0].fingerprint = "bb".into();
        // A torn record is no record.
        std::fs::write(plan.run_dir(&key).join("run.json"), "{\"fingerp").unwrap();
        assert_eq!(plan.run_state(&plan.runs[0]), State::Pending);
        std::fs::remove_dir_all(&out).unwrap();
    }
}
