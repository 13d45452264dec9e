//! A run directory: `metrics.jsonl` (a line per step), `samples.jsonl` (a few rollouts
//! per step, authors marked) and `checkpoints/step-NNNNNN/`, and the loop that fills it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{FitProgress, StepMetrics, TrainState, Trainer, checkpoint};
use crate::model::Policy;
use crate::{Error, Result};

/// The files of one training run.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

/// The lines of a log (`metrics.jsonl`, `samples.jsonl`) of steps up to `step`. Only the
/// last line may be unreadable, and only when it has no newline: the write a crash cut.
fn kept_lines(path: &Path, text: &str, step: usize) -> Result<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut kept = String::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_end_matches('\n');
        if body.trim().is_empty() {
            continue;
        }
        let of = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("step").and_then(serde_json::Value::as_u64));
        match of {
            Some(s) if s as usize <= step => {
                kept.push_str(body);
                kept.push('\n');
            }
            Some(_) => {}
            None if i + 1 == lines.len() && !line.ends_with('\n') => {}
            None => {
                return Err(Error::Data {
                    path: path.to_path_buf(),
                    line: Some(i + 1),
                    message: "not a log line with a step, and not the last line a crash cut short: the \
                              file is damaged (left as it is)"
                        .into(),
                });
            }
        }
    }
    Ok(kept)
}

fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Checkpoint { path: path.to_path_buf(), message: e.to_string() }
}

/// A checkpoint: the steps it holds and its folder.
pub type StepDir = (usize, PathBuf);

impl RunDir {
    /// Opens (creating if needed) the run directory `root`.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] if the folders cannot be made.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let checkpoints = root.join("checkpoints");
        std::fs::create_dir_all(&checkpoints).map_err(|e| io(&checkpoints, e))?;
        Ok(Self { root })
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `metrics.jsonl`.
    pub fn metrics_path(&self) -> PathBuf {
        self.root.join("metrics.jsonl")
    }

    /// `samples.jsonl`.
    pub fn samples_path(&self) -> PathBuf {
        self.root.join("samples.jsonl")
    }

    /// The folder of the checkpoint after `step` steps.
    pub fn checkpoint_dir(&self, step: usize) -> PathBuf {
        self.root.join("checkpoints").join(format!("step-{step:06}"))
    }

    /// Complete checkpoints, oldest first, as (step, folder). Half-written ones (a crash
    /// during the write) are not listed.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] if the folder cannot be read.
    pub fn checkpoints(&self) -> Result<Vec<StepDir>> {
        let dir = self.root.join("checkpoints");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let path = entry.map_err(|e| io(&dir, e))?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if let Some(step) = name.strip_prefix("step-").and_then(|s| s.parse::<usize>().ok()) {
                found.push((step, path));
            }
        }
        found.sort();
        Ok(found)
    }

    /// Every complete checkpoint, newest first, each with what its checksums say (`None`:
    /// whole). A checkpoint a crash left renamed aside mid-save is put back first.
    /// `unchecked` accepts a checkpoint without checksums as it is.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] if the folder cannot be read.
    pub fn checked_checkpoints(&self, unchecked: bool) -> Result<Vec<(StepDir, Option<Error>)>> {
        let dir = self.root.join("checkpoints");
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let path = entry.map_err(|e| io(&dir, e))?.path();
            if path.extension().is_some_and(|e| e == "old") {
                checkpoint::restore_aside(&path.with_extension(""))?;
            }
        }
        Ok(self
            .checkpoints()?
            .into_iter()
            .rev()
            .map(|(step, path)| {
                let check = checkpoint::verify(&path, unchecked).err();
                ((step, path), check)
            })
            .collect())
    }

    /// Moves a damaged checkpoint aside (`step-N.damaged`), out of every later choice.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] on I/O errors.
    pub fn set_aside(&self, path: &Path) -> Result<PathBuf> {
        let to = path.with_extension("damaged");
        if to.exists() {
            std::fs::remove_dir_all(&to).map_err(|e| io(&to, e))?;
        }
        std::fs::rename(path, &to).map_err(|e| io(path, e))?;
        Ok(to)
    }

    /// Drops what a crashed run wrote after the checkpoint it resumes from: log lines of
    /// later steps, a last line the crash cut short, and half-written checkpoint folders.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] on I/O errors; [`Error::Data`] for an unreadable line before
    /// the last (damage, not a crash's cut: the files are left as they are).
    pub fn rewind(&self, step: usize) -> Result<()> {
        for path in [self.metrics_path(), self.samples_path()] {
            if !path.exists() {
                continue;
            }
            let text = crate::lines::read_text(&path).map_err(|e| io(&path, e))?;
            let kept = kept_lines(&path, &text, step)?;
            let tmp = path.with_extension("jsonl.tmp");
            std::fs::write(&tmp, kept).map_err(|e| io(&tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
        }
        let dir = self.root.join("checkpoints");
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let path = entry.map_err(|e| io(&dir, e))?.path();
            if path.extension().is_some_and(|e| e == "tmp") {
                std::fs::remove_dir_all(&path).map_err(|e| io(&path, e))?;
            }
        }
        Ok(())
    }

    #[cfg(test)]
    pub(super) fn kept(path: &Path, text: &str, step: usize) -> Result<String> {
        kept_lines(path, text, step)
    }

    fn append(&self, path: &Path, value: &impl Serialize) -> Result<()> {
        let line = serde_json::to_string(value).map_err(|e| io(path, e))?;
        let mut file =
            std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| io(path, e))?;
        writeln!(file, "{line}").map_err(|e| io(path, e))
    }

    /// Keeps the newest `keep_last` checkpoints and the one of step `best`.
    fn retain(&self, keep_last: usize, best: Option<usize>) -> Result<()> {
        let all = self.checkpoints()?;
        let cut = all.len().saturating_sub(keep_last.max(1));
        for (step, path) in &all[..cut] {
            if Some(*step) != best {
                std::fs::remove_dir_all(path).map_err(|e| io(path, e))?;
            }
        }
        Ok(())
    }
}

impl<P: Policy> Trainer<'_, P> {
    /// Writes a checkpoint of the current state into `dir`.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] on I/O errors; the exporter's errors.
    pub fn save_checkpoint(&self, dir: &Path) -> Result<()> {
        checkpoint::save(dir, self.senior(), &self.optimizer, &self.state, self.export.as_ref())
    }

    /// Continues from the checkpoint in `dir`: the senior's weights (into this trainer's
    /// senior, which must have the same architecture), the optimizer state and the step.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] for a missing or unreadable checkpoint, or one of another
    /// architecture.
    pub fn resume(mut self, dir: &Path) -> Result<Self> {
        self.try_resume(dir, false)?;
        Ok(self)
    }

    /// As [`Trainer::resume`], but a checkpoint that does not load leaves the trainer as it
    /// was (so another can be tried); `unchecked` accepts a checkpoint without checksums.
    /// Only for a trainer that has not stepped yet (its optimizer has no state to keep).
    ///
    /// # Errors
    /// As [`Trainer::resume`].
    pub fn try_resume(&mut self, dir: &Path, unchecked: bool) -> Result<()> {
        let senior = self.senior.as_ref().expect("the senior is present between calls").clone();
        let optimizer = std::mem::replace(&mut self.optimizer, super::optimizer(&self.config));
        let (senior, optimizer, state) = checkpoint::load(dir, unchecked, senior, optimizer)?;
        self.senior = Some(senior);
        self.optimizer = optimizer;
        // A checkpoint from before loss scaling was switched on starts the scale afresh.
        let loss_scale = state.loss_scale.or_else(|| self.config.loss_scaling.map(|s| s.start()));
        self.state =
            TrainState { loss_scale: loss_scale.filter(|_| self.config.loss_scaling.is_some()), ..state };
        Ok(())
    }

    /// Trains to `config.steps`, from wherever the state is: each step's metrics and
    /// samples appended to the run's files (by rank 0 alone when there are several ranks), validation every `validate_every` steps and
    /// after the last, a checkpoint every `checkpoint_every` steps, after the last, and
    /// whenever validation finds a new best. `on_step` sees every metrics line,
    /// `on_progress` the rollouts of steps and validation as they go.
    ///
    /// # Errors
    /// [`Error::AtStep`] with the step that failed (the last checkpoint is intact); I/O
    /// errors.
    pub fn fit(
        &mut self,
        run: &RunDir,
        on_step: &mut dyn FnMut(&StepMetrics),
        on_progress: &mut dyn FnMut(FitProgress),
    ) -> Result<()> {
        let c = self.config.clone();
        while self.state.step < c.steps {
            let next = self.state.step + 1;
            let at = |e: Error| Error::AtStep { step: next, source: Box::new(e) };
            let mut out = self.step_with(&mut |p| on_progress(FitProgress::Rollout(p))).map_err(at)?;
            let step = self.state.step;
            let last = step == c.steps;
            let mut new_best = false;
            if c.validate_every > 0 && (step.is_multiple_of(c.validate_every) || last) {
                let at = |e: Error| Error::AtStep { step, source: Box::new(e) };
                if let Some(score) = self.validate_with(on_progress).map_err(at)? {
                    out.metrics.validation_pass1 = Some(score);
                    if self.state.best.is_none_or(|(_, best)| score > best) {
                        self.state.best = Some((step, score));
                        new_best = true;
                    }
                }
            }
            let writes = self.collective.rank() == 0;
            if writes {
                run.append(&run.metrics_path(), &out.metrics)?;
                for sample in &out.samples {
                    run.append(&run.samples_path(), sample)?;
                }
            }
            on_step(&out.metrics);
            let due = c.checkpoint_every > 0 && step.is_multiple_of(c.checkpoint_every);
            if writes && (due || last || new_best) {
                self.save_checkpoint(&run.checkpoint_dir(step))?;
                run.retain(c.keep_last, self.state.best.map(|(s, _)| s))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A torn last line is dropped; an unreadable line before it is an error naming it.
    #[test]
    fn rewind_forgives_only_a_torn_last_line() {
        let path = Path::new("metrics.jsonl");
        let lines = "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n";
        assert_eq!(RunDir::kept(path, lines, 2).unwrap(), "{\"step\":1}\n{\"step\":2}\n");
        let torn = format!("{lines}{{\"step\":4, \"lo");
        assert_eq!(RunDir::kept(path, &torn, 3).unwrap(), lines);
        let damaged = "{\"step\":1}\n{\"st\n{\"step\":3}\n";
        let err = RunDir::kept(path, damaged, 3).unwrap_err().to_string();
        assert!(err.starts_with("metrics.jsonl, line 2: not a log line"), "{err}");
        // A last line that ends with its newline was written whole: unreadable is damage.
        let err = RunDir::kept(path, "{\"step\":1}\n{oops}\n", 1).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
