//! The error type of `trlvr-models`.

use std::path::PathBuf;

/// Everything that can go wrong when configuring, loading or running a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A `config.json` is malformed, inconsistent or describes an unsupported model.
    #[error("model config{}: {message}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Config {
        /// The file, if the config came from one.
        path: Option<PathBuf>,
        /// What is wrong.
        message: String,
    },
    /// A safetensors file or shard index could not be parsed.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The checkpoint's tensors do not match the model the config describes. Every
    /// problem is listed, not just the first.
    #[error(
        "checkpoint {dir} does not match its config: {} missing {:?}; {} unused {:?}; {} mis-shaped {:?}",
        missing.len(), missing, unused.len(), unused, mismatched.len(), mismatched
    )]
    Weights {
        /// The checkpoint directory.
        dir: PathBuf,
        /// Tensors the model needs that the checkpoint lacks.
        missing: Vec<String>,
        /// Tensors in the checkpoint the model does not use.
        unused: Vec<String>,
        /// `name: expected [..], found [..]` for each tensor of the wrong shape or dtype.
        mismatched: Vec<String>,
    },
    /// Inputs of the wrong shape or length (empty prompt, bad row index, ...).
    #[error("input: {0}")]
    Input(String),
    /// A token id outside the vocabulary.
    #[error("token {token} outside vocabulary of {vocab}")]
    Vocabulary {
        /// The offending id.
        token: u32,
        /// The vocabulary size.
        vocab: usize,
    },
    /// A sequence would run past `max_position_embeddings`.
    #[error("context of {length} tokens exceeds the model's maximum of {max}")]
    ContextTooLong {
        /// The length that was asked for.
        length: usize,
        /// `max_position_embeddings`.
        max: usize,
    },
    /// A checkpoint file could not be written.
    #[error("saving {path}: {message}")]
    Save {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A model named by its Hugging Face id is not in the local cache ([`crate::hub`]).
    #[error("{0}")]
    Hub(String),
    /// A model fetched on first use could not be (`fetch`).
    #[error("{0}")]
    Fetch(String),
    /// A tokenizer could not be loaded or applied.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A chat template could not be read, parsed or rendered ([`crate::template`]).
    #[error("{0}")]
    Template(String),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for trlvr::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Vocabulary { .. } => trlvr::Error::Vocabulary(e.to_string()),
            Error::Input(_) | Error::ContextTooLong { .. } => trlvr::Error::Shape(e.to_string()),
            Error::Tokenizer(_) => trlvr::Error::Tokenizer { path: PathBuf::new(), message: e.to_string() },
            _ => trlvr::Error::Config(e.to_string()),
        }
    }
}
