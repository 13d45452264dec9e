//! `generation_config.json`: the EOS ids a Hugging Face checkpoint stops at.

use std::path::Path;

use serde::Deserialize;
use trlvr::token::TokenId;

use crate::{Error, Result};

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(TokenId),
    Many(Vec<TokenId>),
}

#[derive(Deserialize)]
struct GenerationConfig {
    eos_token_id: Option<OneOrMany>,
}

/// The EOS ids listed in `dir/generation_config.json` (`eos_token_id`, one id or a
/// list); empty when the file or the field is absent.
///
/// # Errors
/// [`Error::Config`] naming the file if it exists but is malformed.
pub fn eos_ids(dir: impl AsRef<Path>) -> Result<Vec<TokenId>> {
    let path = dir.as_ref().join("generation_config.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(Vec::new());
    };
    let config: GenerationConfig = serde_json::from_str(&text)
        .map_err(|e| Error::Config { path: Some(path.clone()), message: e.to_string() })?;
    Ok(match config.eos_token_id {
        None => Vec::new(),
        Some(OneOrMany::One(id)) => vec![id],
        Some(OneOrMany::Many(ids)) => ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_id_or_a_list() {
        let dir = std::env::temp_dir().join(format!("trlvr-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(eos_ids(&dir).unwrap().is_empty());
        std::fs::write(
            dir.join("generation_config.json"),
            r#"{"eos_token_id": [151645, 151643], "top_k": 20}"#,
        )
        .unwrap();
        assert_eq!(eos_ids(&dir).unwrap(), vec![151645, 151643]);
        std::fs::write(dir.join("generation_config.json"), r#"{"eos_token_id": 2}"#).unwrap();
        assert_eq!(eos_ids(&dir).unwrap(), vec![2]);
        std::fs::write(dir.join("generation_config.json"), "{not json").unwrap();
        assert!(eos_ids(&dir).unwrap_err().to_string().contains("generation_config.json"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
