//! A `tokenizers::Tokenizer` rebuilt from a GGUF file's `tokenizer.ggml.*` metadata.
//!
//! Only `tokenizer.ggml.model = "gpt2"` (byte-level BPE, as in GPT-2, Llama 3, Qwen2
//! and SmolLM) is supported: the vocabulary is `tokenizer.ggml.tokens` (id = position),
//! the merges are `tokenizer.ggml.merges` (`"left right"`, highest priority first), and
//! tokens whose `tokenizer.ggml.token_type` is 3 (control) become special added tokens,
//! 4 (user-defined) plain added tokens. The pre-tokenizer is byte-level with GPT-2's
//! split regex; `tokenizer.ggml.pre = "smollm"` also splits digits one by one, as
//! SmolLM's own `tokenizer.json` does.

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::{AddedToken, Tokenizer};
use trlvr::token::TokenId;

use super::file::{GgufFile, Value};
use crate::{Error, Result};

/// `tokenizer.ggml.token_type` of control tokens (`<|im_end|>`, `<|endoftext|>`).
const CONTROL: i64 = 3;
/// `tokenizer.ggml.token_type` of user-defined added tokens.
const USER_DEFINED: i64 = 4;

impl GgufFile {
    /// The token strings, `tokenizer.ggml.tokens`.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the list is absent or holds a non-string.
    pub fn tokens(&self) -> Result<Vec<&str>> {
        self.string_array("tokenizer.ggml.tokens")?
            .ok_or_else(|| self.tokenizer_error("GGUF metadata lacks tokenizer.ggml.tokens".into()))
    }

    /// The ids that end generation: `tokenizer.ggml.eos_token_id`, then
    /// `tokenizer.ggml.eot_token_id` and `tokenizer.ggml.eom_token_id` when present and
    /// different.
    pub fn eos_ids(&self) -> Vec<TokenId> {
        let mut ids: Vec<TokenId> = Vec::new();
        for key in
            ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"]
        {
            if let Some(id) = self.get(key).and_then(Value::as_u64).and_then(|v| TokenId::try_from(v).ok())
                && !ids.contains(&id)
            {
                ids.push(id);
            }
        }
        ids
    }

    /// The beginning-of-sequence id, `tokenizer.ggml.bos_token_id`, if any.
    pub fn bos_id(&self) -> Option<TokenId> {
        self.get("tokenizer.ggml.bos_token_id")
            .and_then(Value::as_u64)
            .and_then(|v| TokenId::try_from(v).ok())
    }

    /// The byte-level BPE tokenizer the metadata describes.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the model is not `"gpt2"` or the lists are malformed.
    pub fn tokenizer(&self) -> Result<Tokenizer> {
        let model = self.get("tokenizer.ggml.model").and_then(Value::as_str);
        if model != Some("gpt2") {
            return Err(self.tokenizer_error(format!(
                "tokenizer.ggml.model {model:?} is not supported; only \"gpt2\" (byte-level BPE) is"
            )));
        }
        let tokens = self.tokens()?;
        let vocab: Vocab = tokens.iter().enumerate().map(|(id, t)| ((*t).to_string(), id as u32)).collect();
        if vocab.len() != tokens.len() {
            return Err(self.tokenizer_error("tokenizer.ggml.tokens holds duplicate tokens".into()));
        }
        let merges = self.string_array("tokenizer.ggml.merges")?.unwrap_or_default();
        let merges = merges
            .iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .ok_or_else(|| self.tokenizer_error(format!("merge {m:?} is not \"left right\"")))
            })
            .collect::<Result<Vec<_>>>()?;
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| self.tokenizer_error(format!("building the BPE model: {e}")))?;

        let mut tokenizer = Tokenizer::new(bpe);
        let add_prefix_space = matches!(self.get("tokenizer.ggml.add_space_prefix"), Some(Value::Bool(true)));
        let byte_level = ByteLevel::new(add_prefix_space, false, true);
        let pre = self.get("tokenizer.ggml.pre").and_then(Value::as_str);
        let pre_tokenizer: PreTokenizerWrapper = if pre == Some("smollm") {
            Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into()
        } else {
            byte_level.into()
        };
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

        let types = self.get("tokenizer.ggml.token_type").and_then(Value::as_array).unwrap_or_default();
        let (mut special, mut added) = (Vec::new(), Vec::new());
        for (token, kind) in tokens.iter().zip(types) {
            match kind.as_u64().map(|k| k as i64) {
                Some(CONTROL) => special.push(AddedToken::from(*token, true)),
                Some(USER_DEFINED) => added.push(AddedToken::from(*token, false)),
                _ => {}
            }
        }
        let fail = |e: tokenizers::Error| self.tokenizer_error(format!("adding tokens: {e}"));
        tokenizer.add_special_tokens(special).map_err(fail)?;
        tokenizer.add_tokens(added).map_err(fail)?;
        Ok(tokenizer)
    }

    /// An [`Error::Tokenizer`] that names this file.
    fn tokenizer_error(&self, message: String) -> Error {
        Error::Tokenizer(format!("{}: {message}", self.path().display()))
    }

    /// The strings of an array under `key`; `None` if absent.
    fn string_array(&self, key: &str) -> Result<Option<Vec<&str>>> {
        let Some(value) = self.get(key) else { return Ok(None) };
        let items = value.as_array().ok_or_else(|| self.tokenizer_error(format!("{key} is not an array")))?;
        items
            .iter()
            .map(|v| v.as_str().ok_or_else(|| self.tokenizer_error(format!("{key} holds a non-string"))))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }
}
