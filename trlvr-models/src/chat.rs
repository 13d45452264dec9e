//! The Qwen3 chat template for one user turn, on a `tokenizers` tokenizer.
//!
//! Rollout prompts are a single user message with no system prompt and thinking off,
//! which Qwen3's Jinja template renders as
//!
//! ```text
//! <|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n
//! ```
//!
//! The rendered text is tokenized without extra special tokens, exactly as
//! transformers' `apply_chat_template` does (so, as there, a literal `<|im_end|>` inside
//! the message is read as the special token).

use std::path::Path;

use tokenizers::Tokenizer;
use trlvr::token::TokenId;

use crate::{Error, Result};

/// A tokenizer with Qwen3's chat markers.
#[derive(Debug, Clone)]
pub struct ChatTokenizer {
    tokenizer: Tokenizer,
    im_end: TokenId,
    endoftext: TokenId,
}

impl ChatTokenizer {
    /// Reads a `tokenizer.json` that defines `<|im_start|>`, `<|im_end|>` and
    /// `<|endoftext|>`.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the file cannot be read or lacks a marker.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let tokenizer = trlvr::vocab::read_tokenizer(path).map_err(|e| Error::Tokenizer(e.to_string()))?;
        Self::new(tokenizer).map_err(|e| Error::Tokenizer(format!("{}: {e}", path.display())))
    }

    /// Wraps a tokenizer that defines the Qwen3 chat markers.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] naming a missing marker.
    pub fn new(tokenizer: Tokenizer) -> Result<Self> {
        let id = |token: &str| {
            tokenizer.token_to_id(token).ok_or_else(|| Error::Tokenizer(format!("no {token} token")))
        };
        id("<|im_start|>")?;
        id("<think>")?;
        id("</think>")?;
        Ok(Self { im_end: id("<|im_end|>")?, endoftext: id("<|endoftext|>")?, tokenizer })
    }

    /// The prompt text for one user turn, ending where the assistant starts writing.
    pub fn render_user_turn(message: &str) -> String {
        format!("<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
    }

    /// The token ids of [`Self::render_user_turn`].
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if encoding fails.
    pub fn encode_user_turn(&self, message: &str) -> Result<Vec<TokenId>> {
        self.encode(&Self::render_user_turn(message))
    }

    /// Plain text to ids, adding no special tokens (markers in the text are honoured).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if encoding fails.
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| Error::Tokenizer(e.to_string()))
    }

    /// Ids to text; `skip_special` drops markers such as `<|im_end|>`.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if decoding fails.
    pub fn decode(&self, ids: &[TokenId], skip_special: bool) -> Result<String> {
        self.tokenizer.decode(ids, skip_special).map_err(|e| Error::Tokenizer(e.to_string()))
    }

    /// The ids that end an assistant turn: `<|im_end|>` and `<|endoftext|>`.
    pub fn eos_ids(&self) -> [TokenId; 2] {
        [self.im_end, self.endoftext]
    }

    /// The underlying tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }
}
