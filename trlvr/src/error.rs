//! The error type of the core crate.

use std::path::PathBuf;

/// Everything that can go wrong in `trlvr`'s core. Callers can match on the variant.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is out of its valid range.
    #[error("invalid config: {0}")]
    Config(String),
    /// Inputs disagree in shape or length.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// A value that must be finite is NaN or infinite.
    #[error("non-finite value: {0}")]
    NonFinite(String),
    /// Senior and junior (or a model and its tokenizer) do not share a vocabulary.
    #[error("vocabulary mismatch: {0}")]
    Vocabulary(String),
    /// A tokenizer could not be read or used.
    #[error("tokenizer {path}: {message}")]
    Tokenizer {
        /// The file, if the tokenizer came from one.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A session was handed to a model that did not create it.
    #[error("session belongs to another model (expected state {expected})")]
    ForeignSession {
        /// The state type the model expected.
        expected: &'static str,
    },
    /// The requested backend was not compiled in, or the device string is unknown.
    #[error("device: {0}")]
    Device(String),
    /// The model or backend does not offer what was asked of it.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A plugin could not be loaded, or a name is unknown or taken.
    #[error("plugin: {0}")]
    Plugin(String),
    /// A dataset file is missing or a line is malformed.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Data {
        /// The file.
        path: PathBuf,
        /// The line (1-based), if one is at fault.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A checkpoint could not be written or read.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A training step failed.
    #[error("step {step}: {source}")]
    AtStep {
        /// The step (1-based).
        step: usize,
        /// Why.
        source: Box<Error>,
    },
    /// Two evaluations cannot be paired: other problems or other settings (all named).
    #[error("not comparable: {0}")]
    Incomparable(String),
    /// Ranks of a data-parallel job disagree, or their transport failed.
    #[error("ranks: {0}")]
    Collective(String),
    /// Reading a tensor back from the device failed.
    #[error("tensor read-back: {0}")]
    Read(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
