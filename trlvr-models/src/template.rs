//! A model's own chat template (Jinja), rendered as transformers' `apply_chat_template`
//! renders it, so a prompt here is the prompt a Hugging Face user gets.
//!
//! transformers renders with Jinja2 (`trim_blocks`, `lstrip_blocks`, loop controls) and
//! adds `raise_exception`, `strftime_now` and a `tojson` that is Python's `json.dumps`
//! (no HTML escaping); the context is the messages, `tools` and `documents` (none),
//! `add_generation_prompt`, the tokenizer's special tokens and the caller's keywords
//! (`enable_thinking`, say). Here the engine is `minijinja` with its Python-compatible
//! methods (`str.startswith`, `split`, `strip`, ...), set up the same way;
//! tests/chat_template.rs compares its output byte for byte with transformers'.
//!
//! Templates come from `chat_template.jinja` or `tokenizer_config.json` (Hugging Face
//! folders), a GGUF's `tokenizer.chat_template`, or a file the user names.

use std::fmt::Write as _;
use std::path::Path;

use minijinja::value::Kwargs;
use minijinja::{Environment, ErrorKind, Value};
use serde::{Deserialize, Serialize};
use serde_json::Map;

use crate::{Error, Result};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Its text.
    pub content: String,
}

impl ChatMessage {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: "user".into(), content: content.into() }
    }
}

/// A chat template, ready to render.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    /// Its Jinja text (an export writes it back out).
    source: String,
    /// The special tokens the template sees (`bos_token`, `eos_token`, ...).
    special: Map<String, serde_json::Value>,
    /// Where it came from (messages and records).
    origin: String,
}

const NAME: &str = "chat";

impl ChatTemplate {
    /// `source` as transformers would render it, with the special tokens `special`
    /// (`bos_token`, `eos_token`, ... as strings); `origin` says where it came from.
    ///
    /// # Errors
    /// [`Error::Template`] if the template does not parse.
    pub fn new(
        source: &str,
        special: Map<String, serde_json::Value>,
        origin: impl Into<String>,
    ) -> Result<Self> {
        let origin = origin.into();
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.add_template_owned(NAME, source.to_string())
            .map_err(|e| Error::Template(format!("the chat template of {origin} does not parse: {e}")))?;
        Ok(Self { env, source: source.to_string(), special, origin })
    }

    /// Where the template came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Its Jinja text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The special tokens it sees (`bos_token`, `eos_token`, ...).
    pub fn special(&self) -> &Map<String, serde_json::Value> {
        &self.special
    }

    /// The text of `messages`, with the assistant's opening when `add_generation_prompt`;
    /// `kwargs` are the template's keywords (`enable_thinking`, ...).
    ///
    /// # Errors
    /// [`Error::Template`] if rendering fails (a `raise_exception` of the template, say).
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        kwargs: &Map<String, serde_json::Value>,
    ) -> Result<String> {
        let mut context = Map::new();
        context.insert("messages".into(), serde_json::to_value(messages).expect("messages serialise"));
        context.insert("tools".into(), serde_json::Value::Null);
        context.insert("documents".into(), serde_json::Value::Null);
        context.insert("add_generation_prompt".into(), add_generation_prompt.into());
        context.extend(self.special.clone());
        context.extend(kwargs.clone());
        let template = self.env.get_template(NAME).expect("added in new");
        template
            .render(Value::from_serialize(&context))
            .map_err(|e| Error::Template(format!("the chat template of {} failed: {e:#}", self.origin)))
    }

    /// The template of a Hugging Face folder: `chat_template.jinja`, or the
    /// `chat_template` of `tokenizer_config.json` (a string, or a list whose `default`
    /// entry is taken), with the special tokens that file names; `None` if it has none.
    ///
    /// # Errors
    /// [`Error::Template`] for a file that does not read or a template that does not parse.
    pub fn from_hf_dir(dir: &Path) -> Result<Option<Self>> {
        let config_path = dir.join("tokenizer_config.json");
        let config: serde_json::Value = match std::fs::read_to_string(&config_path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Error::Template(format!("{}: {e}", config_path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::Value::Null,
            Err(e) => return Err(Error::Template(format!("{}: {e}", config_path.display()))),
        };
        let special = special_tokens(&config);
        let jinja = dir.join("chat_template.jinja");
        if jinja.exists() {
            let source = std::fs::read_to_string(&jinja)
                .map_err(|e| Error::Template(format!("{}: {e}", jinja.display())))?;
            return Self::new(&source, special, jinja.display().to_string()).map(Some);
        }
        let source = match &config["chat_template"] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(named) => {
                let default =
                    named.iter().find(|t| t["name"] == "default").and_then(|t| t["template"].as_str());
                match default {
                    Some(s) => s.to_string(),
                    None => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        Self::new(&source, special, config_path.display().to_string()).map(Some)
    }

    /// The template of a GGUF file (`tokenizer.chat_template`), its special tokens read
    /// off `tokenizer.ggml.tokens`; `None` if it has none.
    ///
    /// # Errors
    /// [`Error::Template`] if the template does not parse.
    pub fn from_gguf(file: &crate::gguf::GgufFile) -> Result<Option<Self>> {
        let Some(source) = file.metadata.get("tokenizer.chat_template").and_then(|v| v.as_str()) else {
            return Ok(None);
        };
        let tokens = file.metadata.get("tokenizer.ggml.tokens").and_then(|v| v.as_array()).unwrap_or(&[]);
        let mut special = Map::new();
        for (name, key) in [
            ("bos_token", "tokenizer.ggml.bos_token_id"),
            ("eos_token", "tokenizer.ggml.eos_token_id"),
            ("unk_token", "tokenizer.ggml.unknown_token_id"),
            ("pad_token", "tokenizer.ggml.padding_token_id"),
        ] {
            let id = file.metadata.get(key).and_then(crate::gguf::Value::as_u64);
            if let Some(token) =
                id.and_then(|i| tokens.get(usize::try_from(i).ok()?)).and_then(|t| t.as_str())
            {
                special.insert(name.into(), token.into());
            }
        }
        Self::new(source, special, format!("{} (tokenizer.chat_template)", file.path().display())).map(Some)
    }

    /// A template file the user names (`--chat-template`), with `special` tokens.
    ///
    /// # Errors
    /// [`Error::Template`] for a file that does not read or does not parse.
    pub fn from_file(path: &Path, special: Map<String, serde_json::Value>) -> Result<Self> {
        let source =
            std::fs::read_to_string(path).map_err(|e| Error::Template(format!("{}: {e}", path.display())))?;
        Self::new(&source, special, path.display().to_string())
    }
}

/// The special tokens of a `tokenizer_config.json`, as strings (an added-token object
/// gives its `content`); those that are null are left out, as transformers does.
pub fn special_tokens(config: &serde_json::Value) -> Map<String, serde_json::Value> {
    let mut out = Map::new();
    for key in ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"] {
        let value = match &config[key] {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Object(o) => o.get("content").and_then(|c| c.as_str()).map(str::to_owned),
            _ => None,
        };
        if let Some(v) = value {
            out.insert(key.into(), v.into());
        }
    }
    out
}

fn raise_exception(message: String) -> std::result::Result<Value, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
}

fn strftime_now(format: String) -> std::result::Result<String, minijinja::Error> {
    let mut out = String::new();
    write!(out, "{}", chrono::Local::now().format(&format)).map_err(|_| {
        minijinja::Error::new(ErrorKind::InvalidOperation, format!("bad date format {format:?}"))
    })?;
    Ok(out)
}

/// Python's `json.dumps(value, ensure_ascii=False)` (with `indent`, its indented form):
/// `", "` and `": "` between items, non-ASCII kept, nothing HTML-escaped.
fn tojson(value: Value, kwargs: Kwargs) -> std::result::Result<Value, minijinja::Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let mut bytes = Vec::new();
    let result = match indent {
        Some(n) => {
            let pad = vec![b' '; n];
            let mut ser = serde_json::Serializer::with_formatter(
                &mut bytes,
                serde_json::ser::PrettyFormatter::with_indent(&pad),
            );
            value.serialize(&mut ser)
        }
        None => value.serialize(&mut serde_json::Serializer::with_formatter(&mut bytes, PythonJson)),
    };
    result.map_err(|e| minijinja::Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    Ok(Value::from_safe_string(String::from_utf8(bytes).expect("JSON is UTF-8")))
}

/// serde_json's compact form with Python's default separators.
struct PythonJson;

impl serde_json::ser::Formatter for PythonJson {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}
