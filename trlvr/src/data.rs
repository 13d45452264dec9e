//! Datasets of problems with verifiable answers, read from JSONL: one problem a line.
//!
//! A [`Layout`] names the fields holding the question and the reference, and how the
//! reference is written ([`ReferenceFormat`]): GSM8K puts the answer after `#### `,
//! MATH inside the solution's last `\boxed{}`, DeepScaleR in a bare `answer` field. The
//! reference is kept as written; the verifier reads it the way the format says, so a
//! full solution works as well as a bare answer.
//!
//! ```
//! use trlvr::data::{DataSpec, Dataset, Layout};
//!
//! let dir = std::env::temp_dir().join(format!("trlvr-data-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("tiny.jsonl");
//! std::fs::write(&path, "{\"question\": \"1+1?\", \"answer\": \"1+1=2\\n#### 2\"}\n\n{\"question\": \"2+2?\", \"answer\": 4}\n")?;
//! let data = Dataset::load(&DataSpec::new(&path, Layout::Gsm8k))?;
//! assert_eq!(data.problems.len(), 2); // blank lines are skipped; numbers are answers too
//! assert_eq!(data.problems[1].reference, "4");
//! assert_eq!(data.problems[1].line, 3);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod arithmetic;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, Result};

/// Where a dataset keeps its question and reference answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// `question`, and `answer` ending in `#### N` (GSM8K).
    Gsm8k,
    /// `problem`, and `solution` with the answer in its last `\boxed{}` (MATH).
    Math,
    /// `problem`, and a bare `answer` (DeepScaleR-Preview; the default).
    #[default]
    #[serde(rename = "deepscaler")]
    DeepScaleR,
}

/// How a reference answer is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReferenceFormat {
    /// A solution ending in `#### N`.
    Hashes,
    /// A solution whose last `\boxed{}` holds the answer.
    Boxed,
    /// The answer itself.
    Bare,
}

impl Layout {
    /// The default (question field, answer field).
    pub fn fields(self) -> (&'static str, &'static str) {
        match self {
            Layout::Gsm8k => ("question", "answer"),
            Layout::Math => ("problem", "solution"),
            Layout::DeepScaleR => ("problem", "answer"),
        }
    }

    /// How the answer field is written.
    pub fn reference_format(self) -> ReferenceFormat {
        match self {
            Layout::Gsm8k => ReferenceFormat::Hashes,
            Layout::Math => ReferenceFormat::Boxed,
            Layout::DeepScaleR => ReferenceFormat::Bare,
        }
    }
}

/// What to read: a file, its layout, optional field names that override the layout's,
/// and an optional cap on the number of problems (the first `limit` lines).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSpec {
    /// The JSONL file.
    pub path: PathBuf,
    /// Field names and reference format (default DeepScaleR).
    #[serde(default)]
    pub layout: Layout,
    /// The question's field, if not the layout's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_field: Option<String>,
    /// The reference's field, if not the layout's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_field: Option<String>,
    /// Read at most this many problems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl DataSpec {
    /// `path` read with `layout`'s fields, no limit.
    pub fn new(path: impl Into<PathBuf>, layout: Layout) -> Self {
        Self { path: path.into(), layout, question_field: None, answer_field: None, limit: None }
    }
}

/// One problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// Its line in the file (1-based), for messages and as a stable id.
    pub line: usize,
    /// The question text.
    pub question: String,
    /// The reference answer as written (see [`ReferenceFormat`]).
    pub reference: String,
}

/// The problems of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The file.
    pub path: PathBuf,
    /// How references are written.
    pub format: ReferenceFormat,
    /// In file order.
    pub problems: Vec<Problem>,
}

impl Dataset {
    /// Reads `spec.path`. Blank lines are skipped; an answer may be a string or a number.
    ///
    /// # Errors
    /// [`Error::Data`] naming the file (and line) for a missing file, a line that is not a
    /// JSON object, a missing or empty question, or an answer that is missing, null or
    /// neither a string nor a number; also for a file with no problems.
    pub fn load(spec: &DataSpec) -> Result<Self> {
        let (q_default, a_default) = spec.layout.fields();
        let q_field = spec.question_field.as_deref().unwrap_or(q_default);
        let a_field = spec.answer_field.as_deref().unwrap_or(a_default);
        let text = crate::lines::read_text(&spec.path)
            .map_err(|e| data_error(&spec.path, None, format!("cannot read: {e}")))?;
        let mut problems = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            if spec.limit.is_some_and(|n| problems.len() >= n) {
                break;
            }
            if raw.trim().is_empty() {
                continue;
            }
            let line = i + 1;
            let fail = |message: String| data_error(&spec.path, Some(line), message);
            let value: Value = serde_json::from_str(raw).map_err(|e| fail(format!("not JSON: {e}")))?;
            let object = value.as_object().ok_or_else(|| fail("not a JSON object".into()))?;
            let question = match object.get(q_field) {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(_) => return Err(fail(format!("field `{q_field}` is not a non-empty string"))),
                None => return Err(fail(missing(q_field, object))),
            };
            let reference = match object.get(a_field) {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::Null) => {
                    return Err(fail(format!("field `{a_field}` is null: no reference answer")));
                }
                Some(_) => {
                    return Err(fail(format!("field `{a_field}` is not a non-empty string or a number")));
                }
                None => return Err(fail(missing(a_field, object))),
            };
            problems.push(Problem { line, question, reference });
        }
        if problems.is_empty() {
            return Err(data_error(&spec.path, None, "no problems in the file".into()));
        }
        Ok(Self { path: spec.path.clone(), format: spec.layout.reference_format(), problems })
    }

    /// A short name for tables: the file's stem.
    pub fn name(&self) -> String {
        self.path.file_stem().map_or_else(|| "data".into(), |s| s.to_string_lossy().into_owned())
    }
}

/// Splits `problems` into those to train on and `n` held out for validation: the `n`
/// whose questions hash lowest (FNV-1a), so the split depends on the questions alone,
/// not on the seed or the file's order, and a question is never on both sides. Both
/// halves keep file order.
///
/// # Errors
/// [`Error::Config`] unless `0 < n < problems.len()`.
///
/// ```
/// use trlvr::data::{Problem, hold_out};
/// let p = |i: usize| Problem { line: i, question: format!("q{i}"), reference: i.to_string() };
/// let (train, held) = hold_out((1..=10).map(p).collect(), 3)?;
/// assert_eq!((train.len(), held.len()), (7, 3));
/// assert!(held.iter().all(|h| train.iter().all(|t| t.question != h.question)));
/// # Ok::<(), trlvr::Error>(())
/// ```
pub fn hold_out(problems: Vec<Problem>, n: usize) -> Result<(Vec<Problem>, Vec<Problem>)> {
    if n == 0 || n >= problems.len() {
        return Err(Error::Config(format!(
            "holdout must lie in 1..{}: the file has {} problems",
            problems.len(),
            problems.len()
        )));
    }
    let mut order: Vec<(u64, usize)> =
        problems.iter().enumerate().map(|(i, p)| (fnv1a(p.question.bytes()), i)).collect();
    order.sort_unstable();
    let mut held = vec![false; problems.len()];
    for &(_, i) in &order[..n] {
        held[i] = true;
    }
    // Copies of a held-out question leave the training side too.
    let held_questions: std::collections::HashSet<String> =
        problems.iter().zip(&held).filter(|(_, h)| **h).map(|(p, _)| p.question.clone()).collect();
    let (mut train, mut validation) = (Vec::new(), Vec::new());
    for (p, h) in problems.into_iter().zip(held) {
        if h {
            validation.push(p);
        } else if !held_questions.contains(&p.question) {
            train.push(p);
        }
    }
    Ok((train, validation))
}

/// FNV-1a, 64 bits: a hash that stays the same across Rust versions and machines, for
/// splits and store keys written to disk.
pub fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// XXH3 over each file's size and bytes, in order, streamed: checkpoints' checksums and
/// eval's model fingerprints.
///
/// # Errors
/// An I/O error naming the file.
pub fn hash_files(files: &[PathBuf]) -> std::io::Result<u64> {
    use std::io::Read;
    let named =
        |path: &Path, e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut hash = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    for path in files {
        let mut file = std::fs::File::open(path).map_err(|e| named(path, e))?;
        hash.update(&file.metadata().map_err(|e| named(path, e))?.len().to_le_bytes());
        loop {
            let n = file.read(&mut buf).map_err(|e| named(path, e))?;
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
        }
    }
    Ok(hash.digest())
}

fn missing(field: &str, object: &serde_json::Map<String, Value>) -> String {
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    format!("no field `{field}` (the line has: {})", keys.join(", "))
}

fn data_error(path: &Path, line: Option<usize>, message: String) -> Error {
    Error::Data { path: path.to_path_buf(), line, message }
}

/// The user message for `question`: `template` with `{question}` replaced.
///
/// ```
/// use trlvr::data::{DEFAULT_TEMPLATE, user_message};
/// assert!(user_message(DEFAULT_TEMPLATE, "1+1?").starts_with("1+1? Solve the following"));
/// ```
pub fn user_message(template: &str, question: &str) -> String {
    template.replace("{question}", question)
}

/// The default prompt template, the paper's exactly (method.md §2): the question, one
/// space, then the instruction to reason step by step and box the answer, with two
/// examples of a box.
pub const DEFAULT_TEMPLATE: &str = "{question} Solve the following math problem step by step. Put your final answer \
                                    inside \\boxed{}, like \\boxed{42} or \\boxed{\\frac{1}{2}}.";

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trlvr-data-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let path = write("bad", "{\"problem\": \"a\", \"answer\": \"1\"}\n{\"problem\": \"b\"}\n");
        let err = Dataset::load(&DataSpec::new(&path, Layout::DeepScaleR)).unwrap_err().to_string();
        assert!(err.contains("d.jsonl") && err.contains("line 2") && err.contains("`answer`"), "{err}");
        let path = write("null", "{\"problem\": \"a\", \"answer\": null}\n");
        let err = Dataset::load(&DataSpec::new(&path, Layout::DeepScaleR)).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("null"), "{err}");
        let path = write("json", "{\"problem\": \"a\", \"answer\": \"1\"}\nnot json\n");
        let err = Dataset::load(&DataSpec::new(&path, Layout::DeepScaleR)).unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("not JSON"), "{err}");
        let err = Dataset::load(&DataSpec::new("/no/such/file.jsonl", Layout::Math)).unwrap_err().to_string();
        assert!(err.contains("/no/such/file.jsonl"), "{err}");
        // A line past the bound is refused by number, not read into memory whole.
        let long = format!(
            "{{\"problem\": \"a\", \"answer\": \"1\"}}\n{}\n",
            "x".repeat(crate::lines::MAX_LINE_BYTES + 1)
        );
        let err =
            Dataset::load(&DataSpec::new(write("long", &long), Layout::DeepScaleR)).unwrap_err().to_string();
        assert!(err.contains("d.jsonl") && err.contains("line 2 is longer than"), "{err}");
    }

    #[test]
    fn field_overrides_and_limit() {
        let path = write("fields", "{\"q\": \"a\", \"gold\": \"1\"}\n{\"q\": \"b\", \"gold\": 2.5}\n");
        let spec = DataSpec {
            question_field: Some("q".into()),
            answer_field: Some("gold".into()),
            limit: Some(1),
            ..DataSpec::new(&path, Layout::DeepScaleR)
        };
        let data = Dataset::load(&spec).unwrap();
        assert_eq!(data.problems, vec![Problem { line: 1, question: "a".into(), reference: "1".into() }]);
    }

    /// The suffix as method.md §2 writes it, byte for byte.
    const METHOD_SUFFIX: &str = r"Solve the following math problem step by step. Put your final answer inside \boxed{}, like \boxed{42} or \boxed{\frac{1}{2}}.";

    #[test]
    fn the_prompt_is_the_question_a_space_and_the_papers_suffix() {
        assert_eq!(
            user_message(DEFAULT_TEMPLATE, "What is 2 + 3?"),
            format!("What is 2 + 3? {METHOD_SUFFIX}")
        );
        // Against the repository's statement of the method.
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/method.md")).unwrap();
        let quoted: Vec<&str> = text.split('`').filter(|s| s.starts_with("Solve the following")).collect();
        assert_eq!(quoted, [METHOD_SUFFIX], "method.md's suffix");
    }

    #[test]
    fn held_out_questions_never_train() {
        // Every question twice: 21 held out split one pair, whose other copy leaves the
        // training side too.
        let problems: Vec<Problem> = (0..200)
            .map(|i| Problem { line: i + 1, question: format!("q{}", i % 100), reference: i.to_string() })
            .collect();
        let (train, held) = hold_out(problems.clone(), 21).unwrap();
        assert_eq!(held.len(), 21);
        assert!(held.iter().all(|h| train.iter().all(|t| t.question != h.question)));
        assert_eq!(train.len(), 178);
        // The split follows the questions, not the order.
        let mut reversed = problems.clone();
        reversed.reverse();
        let (_, held_again) = hold_out(reversed, 21).unwrap();
        let key = |v: &[Problem]| {
            let mut q: Vec<String> = v.iter().map(|p| p.question.clone()).collect();
            q.sort();
            q
        };
        assert_eq!(key(&held), key(&held_again));
        assert!(hold_out(problems.clone(), 0).is_err() && hold_out(problems, 200).is_err());
    }

    #[test]
    fn shipped_sets_read_with_their_layouts() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/math/");
        let gsm = Dataset::load(&DataSpec::new(format!("{root}gsm8k-test.jsonl"), Layout::Gsm8k)).unwrap();
        assert_eq!(gsm.problems.len(), 1319);
        assert!(gsm.problems.iter().all(|p| p.reference.contains("#### ")));
        let math = Dataset::load(&DataSpec::new(format!("{root}math500-test.jsonl"), Layout::Math)).unwrap();
        assert_eq!(math.problems.len(), 500);
        assert!(math.problems.iter().all(|p| p.reference.contains("\\boxed")));
    }
}
