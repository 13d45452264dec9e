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
        let text = std::fs::read_to_string(&spec.path)
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
/// assert!(user_message(DEFAULT_TEMPLATE, "1+1?").starts_with("1+1?\n\nSolve the following"));
/// ```
pub fn user_message(template: &str, question: &str) -> String {
    template.replace("{question}", question)
}

/// The default prompt template (method.md §2): the question, a blank line, the
/// instruction to reason step by step and box the answer.
pub const DEFAULT_TEMPLATE: &str =
    "{question}\n\nSolve the following math problem step by step. Put your final answer inside \\boxed{}.";

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
