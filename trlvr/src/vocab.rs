//! Per-token facts the handoff schedules need, computed once from a tokenizer.

use std::path::Path;

use tokenizers::{
    NormalizedString, Normalizer, OffsetReferential, OffsetType, PreTokenizedString, PreTokenizer, Tokenizer,
};

use crate::token::TokenId;
use crate::{Error, Result};

/// Reads a `tokenizer.json`. The JSON is checked before `tokenizers` parses it, and a
/// panic inside `tokenizers` becomes an error: it `expect`s on some malformed files.
///
/// # Errors
/// [`Error::Tokenizer`] naming the file if it cannot be read, is not JSON, or is not a
/// tokenizer `tokenizers` can build.
pub fn read_tokenizer(path: impl AsRef<Path>) -> Result<Tokenizer> {
    let path = path.as_ref();
    let fail = |message: String| Error::Tokenizer { path: path.into(), message };
    let bytes = std::fs::read(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).map_err(|e| fail(format!("not JSON: {e}")))?;
    match std::panic::catch_unwind(|| Tokenizer::from_bytes(&bytes)) {
        Ok(Ok(tokenizer)) => Ok(tokenizer),
        Ok(Err(e)) => Err(fail(e.to_string())),
        Err(_) => {
            Err(fail("not a tokenizer the tokenizers library can build (it panicked reading it)".into()))
        }
    }
}

/// What the schedules need to know about each vocabulary id: does it start a word (the
/// boundary set B of the word schedule), does it end a sentence, how many newlines end it
/// (paragraph ends for the step schedule), and is it an EOS id.
#[derive(Debug, Clone)]
pub struct TokenClasses {
    word_start: Vec<bool>,
    /// Trailing `'\n'` count of the token's text.
    trailing_newlines: Vec<u8>,
    /// The text is non-empty and only newlines.
    only_newlines: Vec<bool>,
    /// See [`TokenClasses::is_sentence_end`].
    sentence_end: Vec<bool>,
    eos: Vec<TokenId>,
}

impl TokenClasses {
    /// From each id's word-start flag and decoded text (`texts[id]`), plus the EOS ids.
    ///
    /// # Errors
    /// [`Error::Vocabulary`] if the lengths differ, or an EOS id is out of range, or
    /// there is no EOS id.
    pub fn new(word_start: Vec<bool>, texts: &[impl AsRef<str>], eos: &[TokenId]) -> Result<Self> {
        if word_start.len() != texts.len() {
            return Err(Error::Vocabulary(format!(
                "{} word-start flags for {} token texts",
                word_start.len(),
                texts.len()
            )));
        }
        if eos.is_empty() {
            return Err(Error::Vocabulary("at least one EOS id is required".into()));
        }
        if let Some(&bad) = eos.iter().find(|&&e| e as usize >= texts.len()) {
            return Err(Error::Vocabulary(format!(
                "EOS id {bad} is outside the vocabulary of {}",
                texts.len()
            )));
        }
        let trailing_newlines = texts
            .iter()
            .map(|t| t.as_ref().bytes().rev().take_while(|&b| b == b'\n').count().min(255) as u8)
            .collect();
        let only_newlines =
            texts.iter().map(|t| !t.as_ref().is_empty() && t.as_ref().bytes().all(|b| b == b'\n')).collect();
        let sentence_end = texts.iter().map(|t| ends_sentence(t.as_ref())).collect();
        let mut eos = eos.to_vec();
        eos.sort_unstable();
        eos.dedup();
        Ok(Self { word_start, trailing_newlines, only_newlines, sentence_end, eos })
    }

    /// From decoded token texts alone: a token starts a word when its text starts with a
    /// space. Handy for synthetic vocabularies in tests.
    ///
    /// # Errors
    /// As [`TokenClasses::new`].
    pub fn from_texts(texts: &[impl AsRef<str>], eos: &[TokenId]) -> Result<Self> {
        let word_start = texts.iter().map(|t| t.as_ref().starts_with(' ')).collect();
        Self::new(word_start, texts, eos)
    }

    /// From a `tokenizers` tokenizer: B is every id whose token string starts with the
    /// tokenizer's own encoding of a leading space (`Ġ` for byte-level BPE, `▁` for
    /// SentencePiece-style), found by running its normalizer and pre-tokenizer on `" x"`.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the space marker cannot be found (e.g. a tokenizer that
    /// drops spaces); [`Error::Vocabulary`] for bad EOS ids.
    pub fn from_tokenizer(tokenizer: &Tokenizer, eos: &[TokenId]) -> Result<Self> {
        let marker = space_marker(tokenizer)?;
        let size = tokenizer.get_vocab_size(true);
        let mut word_start = vec![false; size];
        let mut texts = vec![String::new(); size];
        for (id, (start, text)) in word_start.iter_mut().zip(texts.iter_mut()).enumerate() {
            let id = id as TokenId;
            if let Some(token) = tokenizer.id_to_token(id) {
                *start = token.starts_with(&marker);
                *text = tokenizer.decode(&[id], false).unwrap_or_default();
            }
        }
        Self::new(word_start, &texts, eos)
    }

    /// Reads `tokenizer.json` and calls [`TokenClasses::from_tokenizer`].
    ///
    /// # Errors
    /// [`Error::Tokenizer`] naming the file if it cannot be read.
    pub fn from_file(path: impl AsRef<Path>, eos: &[TokenId]) -> Result<Self> {
        let path = path.as_ref();
        Self::from_tokenizer(&read_tokenizer(path)?, eos).map_err(|e| match e {
            Error::Tokenizer { message, .. } => Error::Tokenizer { path: path.into(), message },
            other => other,
        })
    }

    /// Vocabulary size (including added tokens).
    pub fn vocab_size(&self) -> usize {
        self.word_start.len()
    }

    /// Is `id` in the word-boundary set B? Ids outside the vocabulary are not.
    pub fn is_word_start(&self, id: TokenId) -> bool {
        self.word_start.get(id as usize).copied().unwrap_or(false)
    }

    /// The ids of B, ascending.
    pub fn word_starts(&self) -> Vec<TokenId> {
        (0..self.word_start.len() as TokenId).filter(|&i| self.is_word_start(i)).collect()
    }

    /// Is `id` one of the EOS ids?
    pub fn is_eos(&self, id: TokenId) -> bool {
        self.eos.binary_search(&id).is_ok()
    }

    /// The EOS ids, ascending.
    pub fn eos(&self) -> &[TokenId] {
        &self.eos
    }

    /// Does `id` end a sentence: its text ends with a newline, or, trailing spaces
    /// removed, with `.`, `!` or `?` (or `。！？`)? Token-level, so a decimal point
    /// counts too, as a word-start token inside a multi-token word does for B. Ids
    /// outside the vocabulary do not.
    pub fn is_sentence_end(&self, id: TokenId) -> bool {
        self.sentence_end.get(id as usize).copied().unwrap_or(false)
    }

    /// Trailing newline count of the token's text, and whether the text is only newlines.
    pub fn newlines(&self, id: TokenId) -> (u8, bool) {
        let i = id as usize;
        (
            self.trailing_newlines.get(i).copied().unwrap_or(0),
            self.only_newlines.get(i).copied().unwrap_or(false),
        )
    }
}

fn ends_sentence(text: &str) -> bool {
    text.ends_with('\n') || text.trim_end_matches([' ', '\t']).ends_with(['.', '!', '?', '。', '！', '？'])
}

/// The string a tokenizer puts in place of a word's leading space.
fn space_marker(tokenizer: &Tokenizer) -> Result<String> {
    let fail = |message: String| Error::Tokenizer { path: "<in memory>".into(), message };
    let mut normalized = NormalizedString::from(" x");
    if let Some(n) = tokenizer.get_normalizer() {
        n.normalize(&mut normalized).map_err(|e| fail(e.to_string()))?;
    }
    let mut pre = PreTokenizedString::from(normalized);
    if let Some(p) = tokenizer.get_pre_tokenizer() {
        p.pre_tokenize(&mut pre).map_err(|e| fail(e.to_string()))?;
    }
    let splits = pre.get_splits(OffsetReferential::Normalized, OffsetType::Char);
    let last = splits.last().map(|(s, _, _)| *s).unwrap_or_default();
    match last.strip_suffix('x').and_then(|s| s.chars().last()) {
        Some(c) => Ok(c.to_string()),
        None => Err(fail(format!("cannot find the word-start marker: \" x\" pre-tokenizes to {last:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found by fuzzing (trlvr-models/tests/fuzz.rs): `tokenizers` panics on some malformed
    // JSON (an `expect` in its decoder's deserializer); the file is named instead.
    #[test]
    fn a_malformed_tokenizer_json_is_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("trlvr-vocab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokenizer.json");
        let text = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,
            "pre_tokenizer":null,"post_processor":null,"decoder":{"type":"ByteLevel","add_prefix_sp:true},
            "model":{"type":"WordLevel","vocab":{"a":0},"unk_token":"a"}}"#;
        std::fs::write(&path, text).unwrap();
        for err in [read_tokenizer(&path).unwrap_err(), TokenClasses::from_file(&path, &[0]).unwrap_err()] {
            let err = err.to_string();
            assert!(err.contains("tokenizer.json") && err.contains("not JSON"), "{err}");
        }
        // Valid, but dropping spaces (so without a word-start marker): the file is named too.
        let drops_spaces = text.replace(r#"{"type":"ByteLevel","add_prefix_sp:true}"#, "null").replace(
            r#""normalizer":null"#,
            r#""normalizer":{"type":"Replace","pattern":{"String":" "},"content":""}"#,
        );
        std::fs::write(&path, drops_spaces).unwrap();
        let err = TokenClasses::from_file(&path, &[0]).unwrap_err().to_string();
        assert!(err.contains("tokenizer.json") && err.contains("word-start marker"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
