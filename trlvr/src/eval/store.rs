//! The samples of an evaluation, kept per problem so that an interrupted run resumes
//! where it stopped and a finished one can be re-graded without sampling again.
//!
//! On disk: one JSON line of settings (what the samples depend on: models, sampler,
//! n, seed, budget), then one line per (dataset, problem, mode) with its n samples,
//! appended and flushed as soon as its batch is done. A reopened file must have been
//! written with the same settings; a last line cut short by an interruption is dropped
//! (that problem is sampled again).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schedule::Finish;
use crate::token::{Owner, TokenId};
use crate::{Error, Result};

/// Which rollouts: the senior alone, or senior and junior alternating paragraphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The senior alone.
    Solo,
    /// Step alternation, senior first.
    Handoff,
}

/// One sampled response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Response ids, the stopping EOS included.
    pub tokens: Vec<TokenId>,
    /// Who wrote each token, one letter each (`S` senior, `J` junior).
    pub owners: String,
    /// Why it stopped.
    pub finish: Finish,
}

impl Sample {
    /// The owners as [`Owner`]s.
    pub fn owner_list(&self) -> Vec<Owner> {
        self.owners.chars().map(|c| if c == 'J' { Owner::Junior } else { Owner::Senior }).collect()
    }

    /// Letters for `owners`.
    pub fn letters(owners: &[Owner]) -> String {
        owners.iter().map(|o| if *o == Owner::Senior { 'S' } else { 'J' }).collect()
    }
}

/// The n samples of one problem in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProblemSamples {
    /// The dataset's name.
    pub set: String,
    /// The problem's id in its dataset (its line).
    pub id: usize,
    /// Solo or handoff.
    pub mode: Mode,
    /// A hash of the prompt's ids: a changed prompt template is not mistaken for done.
    pub prompt_hash: u64,
    /// The samples.
    pub samples: Vec<Sample>,
}

type Key = (String, usize, Mode);

/// Samples by (dataset, problem, mode), in memory and optionally appended to a file.
#[derive(Debug, Default)]
pub struct SampleStore {
    path: Option<PathBuf>,
    records: HashMap<Key, ProblemSamples>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    trlvr_eval_samples: u32,
    settings: Value,
}

impl SampleStore {
    /// A store that keeps nothing on disk.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Opens `path`, creating it with `settings` as its first line, or reading the
    /// samples it holds if they were drawn with the same settings.
    ///
    /// # Errors
    /// [`Error::Data`] naming the file (and line) if it cannot be read or written, was
    /// written with other settings, or holds a malformed line other than a cut-short last
    /// one.
    pub fn open(path: impl AsRef<Path>, settings: &Value) -> Result<Self> {
        Ok(Self::load(path.as_ref(), Some(settings), true)?.1)
    }

    /// The samples `path` holds, kept in memory only: for the ranks other than 0 of a
    /// data-parallel evaluation, after rank 0 has [opened](SampleStore::open) the file.
    ///
    /// # Errors
    /// As [`SampleStore::open`].
    pub fn read(path: impl AsRef<Path>, settings: &Value) -> Result<Self> {
        let (_, mut store) = Self::load(path.as_ref(), Some(settings), false)?;
        store.path = None;
        Ok(store)
    }

    /// The settings `path` was written with and the samples it holds, in memory only:
    /// another evaluation's file, read without changing it.
    ///
    /// # Errors
    /// [`Error::Data`] for a file that is missing, empty or does not read.
    pub fn read_any(path: impl AsRef<Path>) -> Result<(Value, Self)> {
        let (settings, mut store) = Self::load(path.as_ref(), None, false)?;
        store.path = None;
        let settings = settings.ok_or_else(|| Error::Data {
            path: path.as_ref().to_path_buf(),
            line: None,
            message: "no samples file here".into(),
        })?;
        Ok((settings, store))
    }

    /// Every record held, in no particular order.
    pub fn records(&self) -> impl Iterator<Item = &ProblemSamples> {
        self.records.values()
    }

    /// The file's settings (none for a new or empty file) and its store; `settings`, when
    /// given, must be the file's.
    fn load(path: &Path, settings: Option<&Value>, write: bool) -> Result<(Option<Value>, Self)> {
        let path = path.to_path_buf();
        let fail = |line: Option<usize>, message: String| Error::Data { path: path.clone(), line, message };
        let mut store = Self { path: Some(path.clone()), records: HashMap::new() };
        let text = match crate::lines::read_text(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(fail(None, format!("cannot read: {e}"))),
        };
        if text.trim().is_empty() {
            let Some(settings) = settings.filter(|_| write) else {
                return Ok((None, store));
            };
            let header = Header { trlvr_eval_samples: 1, settings: settings.clone() };
            let line = serde_json::to_string(&header).expect("settings serialise");
            std::fs::write(&path, line + "\n").map_err(|e| fail(None, format!("cannot write: {e}")))?;
            return Ok((Some(settings.clone()), store));
        }
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let header: Header =
            serde_json::from_str(lines[0]).map_err(|e| fail(Some(1), format!("not a samples file: {e}")))?;
        if let Some(settings) = settings.filter(|s| **s != header.settings) {
            return Err(fail(
                Some(1),
                format!(
                    "these samples were drawn with other settings ({}); use another output folder or delete the file",
                    differences(&header.settings, settings).join("; ")
                ),
            ));
        }
        let mut keep = text.len();
        let mut offset = lines[0].len();
        // A whole last line (the header or a record) whose newline never reached the disk:
        // the next append would run into it, so the newline is added.
        let mut end = if lines.len() == 1 && !lines[0].ends_with('\n') { "\n" } else { "" };
        for (i, line) in lines.iter().enumerate().skip(1) {
            let last = i + 1 == lines.len();
            let record = serde_json::from_str::<ProblemSamples>(line).map_err(|e| e.to_string());
            match record.and_then(|r| r.check().map(|()| r)) {
                Ok(record) => {
                    store.records.insert(key(&record), record);
                    if last && !line.ends_with('\n') {
                        end = "\n";
                    }
                }
                Err(_) if last && !line.ends_with('\n') => {
                    tracing::warn!(
                        "{}: dropping the last line, cut short by an interruption",
                        path.display()
                    );
                    keep = offset;
                }
                Err(e) => return Err(fail(Some(i + 1), format!("malformed samples line: {e}"))),
            }
            offset += line.len();
        }
        if write && (keep < text.len() || !end.is_empty()) {
            std::fs::write(&path, text[..keep].to_string() + end)
                .map_err(|e| fail(None, format!("cannot write: {e}")))?;
        }
        Ok((Some(header.settings), store))
    }

    /// The samples of `id` in `set` under `mode`, if drawn for the prompt with
    /// `prompt_hash`.
    pub fn get(&self, set: &str, id: usize, mode: Mode, prompt_hash: u64) -> Option<&ProblemSamples> {
        self.records.get(&(set.to_string(), id, mode)).filter(|r| r.prompt_hash == prompt_hash)
    }

    /// Number of problem records held.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Keeps `records` and appends them to the file, flushed, in one write.
    ///
    /// # Errors
    /// [`Error::Data`] naming the file if it cannot be written.
    pub fn append(&mut self, records: Vec<ProblemSamples>) -> Result<()> {
        if let Some(path) = &self.path {
            let mut text = String::new();
            for r in &records {
                text += &serde_json::to_string(r).expect("samples serialise");
                text.push('\n');
            }
            let fail = |e: std::io::Error| Error::Data {
                path: path.clone(),
                line: None,
                message: format!("cannot append: {e}"),
            };
            let mut file = std::fs::OpenOptions::new().append(true).open(path).map_err(fail)?;
            file.write_all(text.as_bytes()).map_err(fail)?;
            file.flush().map_err(fail)?;
        }
        for r in records {
            self.records.insert(key(&r), r);
        }
        Ok(())
    }
}

impl ProblemSamples {
    /// Each sample names one owner per token, in `S` and `J` letters: a record read back
    /// from disk is checked before its owners are used.
    fn check(&self) -> std::result::Result<(), String> {
        for (k, sample) in self.samples.iter().enumerate() {
            if sample.owners.len() != sample.tokens.len()
                || sample.owners.chars().any(|c| c != 'S' && c != 'J')
            {
                return Err(format!(
                    "sample {k} has {} tokens but owners {:?} (one S or J per token expected)",
                    sample.tokens.len(),
                    sample.owners
                ));
            }
        }
        Ok(())
    }
}

fn key(r: &ProblemSamples) -> Key {
    (r.set.clone(), r.id, r.mode)
}

/// The top-level keys whose values differ, as `key: old -> new`.
pub(super) fn differences(old: &Value, new: &Value) -> Vec<String> {
    let (Some(a), Some(b)) = (old.as_object(), new.as_object()) else {
        return vec![format!("{old} -> {new}")];
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let show = |v: Option<&Value>| v.map_or("(none)".into(), Value::to_string);
            format!("{k}: {} -> {}", show(a.get(k)), show(b.get(k)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: usize) -> ProblemSamples {
        ProblemSamples {
            set: "s".into(),
            id,
            mode: Mode::Solo,
            prompt_hash: 9,
            samples: vec![Sample { tokens: vec![1, 2], owners: "SS".into(), finish: Finish::Eos }],
        }
    }

    #[test]
    fn reopening_keeps_samples_and_drops_a_cut_line() {
        let dir = std::env::temp_dir().join(format!("trlvr-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("samples.jsonl");
        let _ = std::fs::remove_file(&path);
        let settings = serde_json::json!({"n": 2, "seed": 1});
        let mut store = SampleStore::open(&path, &settings).unwrap();
        store.append(vec![record(1), record(2)]).unwrap();
        // An interruption in the middle of a write.
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"set": "s", "id": 3, "mo"#).unwrap();
        drop(f);
        let store = SampleStore::open(&path, &settings).unwrap();
        assert_eq!(store.len(), 2);
        assert_eq!(store.get("s", 2, Mode::Solo, 9), Some(&record(2)));
        assert_eq!(store.get("s", 2, Mode::Solo, 8), None, "another prompt");
        assert_eq!(store.get("s", 2, Mode::Handoff, 9), None);
        // The cut line is gone from the file: appending again gives a readable file.
        let mut store = SampleStore::open(&path, &settings).unwrap();
        store.append(vec![record(3)]).unwrap();
        assert_eq!(SampleStore::open(&path, &settings).unwrap().len(), 3);
        // A whole last record without its newline is kept, and the next append follows it.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
        let mut store = SampleStore::open(&path, &settings).unwrap();
        assert_eq!(store.len(), 3);
        store.append(vec![record(4)]).unwrap();
        assert_eq!(SampleStore::open(&path, &settings).unwrap().len(), 4);
        // Other settings are refused, naming what changed.
        let err = SampleStore::open(&path, &serde_json::json!({"n": 4, "seed": 1})).unwrap_err().to_string();
        assert!(err.contains("samples.jsonl") && err.contains("n: 2 -> 4"), "{err}");
        // A malformed line in the middle is an error naming its line.
        let text = std::fs::read_to_string(&path).unwrap().replacen("\"id\":2", "\"id\":\"x\"", 1);
        std::fs::write(&path, text).unwrap();
        let err = SampleStore::open(&path, &settings).unwrap_err().to_string();
        assert!(err.contains("line 3"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // Found by fuzzing (tests/fuzz.rs).
    #[test]
    fn a_header_without_its_newline_is_mended_and_owners_must_match_tokens() {
        let dir = std::env::temp_dir().join(format!("trlvr-store-header-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("samples.jsonl");
        let settings = serde_json::json!({"n": 2});
        let _ = std::fs::remove_file(&path);
        drop(SampleStore::open(&path, &settings).unwrap());
        let header = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, header.trim_end()).unwrap();
        let mut store = SampleStore::open(&path, &settings).unwrap();
        store.append(vec![record(1)]).unwrap();
        assert_eq!(
            SampleStore::open(&path, &settings).unwrap().len(),
            1,
            "the record did not run into the header"
        );
        let mut bad = record(2);
        bad.samples[0].owners = "SJX".into();
        let line = serde_json::to_string(&bad).unwrap();
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
        drop(f);
        let err = SampleStore::open(&path, &settings).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("one S or J per token"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
