//! Loading llama.cpp's GGUF files: the model, its config and its tokenizer.
//!
//! [`load_gguf`] reads a GGUF v2/v3 file of the `llama` or `qwen2` architecture, maps
//! its metadata onto a [`ModelConfig`], dequantises every tensor to f32 (F32, F16,
//! BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K; see [`dequant`]) and builds the same
//! [`Decoder`] [`crate::load_hf_dir`] builds from safetensors, plus a byte-level BPE
//! `tokenizers::Tokenizer` from the `tokenizer.ggml.*` metadata.
//!
//! | GGUF | Hugging Face |
//! |---|---|
//! | `token_embd.weight` | `model.embed_tokens.weight` |
//! | `blk.N.attn_{q,k,v}.{weight,bias}` | `model.layers.N.self_attn.{q,k,v}_proj.*` |
//! | `blk.N.attn_output.weight` | `model.layers.N.self_attn.o_proj.weight` |
//! | `blk.N.ffn_{gate,up,down}.weight` | `model.layers.N.mlp.{gate,up,down}_proj.weight` |
//! | `blk.N.attn_norm.weight` / `ffn_norm` | `input_layernorm` / `post_attention_layernorm` |
//! | `output_norm.weight` | `model.norm.weight` |
//! | `output.weight` (absent: tied) | `lm_head.weight` |
//!
//! llama.cpp's converter permutes the rows of a `llama` model's query and key
//! projections so that each head's rotary pairs are adjacent (GPT-J style, interleaved
//! RoPE); the decoder here rotates halves (Hugging Face's `rotate_half`), so the loader
//! undoes that permutation. `qwen2` files are stored unpermuted (llama.cpp runs them with
//! NeoX-style RoPE) and are read as they are.
//!
//! ```no_run
//! let (model, config, tokenizer) =
//!     trlvr_models::load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf", &burn::prelude::Device::default())?;
//! # Ok::<(), trlvr_models::Error>(())
//! ```

pub mod dequant;
pub mod file;
mod tokenizer;

use std::collections::BTreeSet;
use std::path::Path;

use burn::module::Param;
use burn::nn::{Embedding, Linear, RmsNorm};
use burn::prelude::*;

pub use dequant::GgmlType;
pub use file::{GgufFile, TensorInfo, Value};

use crate::attention::Attention;
use crate::config::{ModelConfig, ModelFamily};
use crate::decoder::{Decoder, DecoderLayer, Mlp};
use crate::{Error, Result};

/// Reads a GGUF file into a decoder, its config and its tokenizer.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read; [`Error::Checkpoint`] if it is malformed,
/// of an unsupported architecture, or holds a tensor of an unsupported type (named);
/// [`Error::Config`] for inconsistent metadata; [`Error::Weights`] listing every
/// missing, unused and mis-shaped tensor; [`Error::Tokenizer`] if the tokenizer
/// metadata is absent or not byte-level BPE.
pub fn load_gguf(
    path: impl AsRef<Path>,
    device: &Device,
) -> Result<(Decoder, ModelConfig, tokenizers::Tokenizer)> {
    let file = GgufFile::open(path)?;
    let config = file.model_config()?;
    let model = file.decoder(&config, device)?;
    let tokenizer = file.tokenizer()?;
    Ok((model, config, tokenizer))
}

/// The Hugging Face name of a GGUF tensor name, or `None` if it has no counterpart.
///
/// ```
/// use trlvr_models::gguf::hf_name;
/// assert_eq!(hf_name("blk.3.attn_q.weight").as_deref(), Some("model.layers.3.self_attn.q_proj.weight"));
/// assert_eq!(hf_name("output.weight").as_deref(), Some("lm_head.weight"));
/// assert_eq!(hf_name("rope_freqs.weight"), None);
/// ```
pub fn hf_name(gguf: &str) -> Option<String> {
    match gguf {
        "token_embd.weight" => return Some("model.embed_tokens.weight".into()),
        "output_norm.weight" => return Some("model.norm.weight".into()),
        "output.weight" => return Some("lm_head.weight".into()),
        _ => {}
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (layer, rest) = rest.split_once('.')?;
    let layer: usize = layer.parse().ok()?;
    let (part, suffix) = rest.split_once('.')?;
    let module = match part {
        "attn_q" => "self_attn.q_proj",
        "attn_k" => "self_attn.k_proj",
        "attn_v" => "self_attn.v_proj",
        "attn_output" => "self_attn.o_proj",
        "ffn_gate" => "mlp.gate_proj",
        "ffn_up" => "mlp.up_proj",
        "ffn_down" => "mlp.down_proj",
        "attn_norm" => "input_layernorm",
        "ffn_norm" => "post_attention_layernorm",
        _ => return None,
    };
    matches!(suffix, "weight" | "bias").then(|| format!("model.layers.{layer}.{module}.{suffix}"))
}

impl GgufFile {
    /// The model family of `general.architecture` (`llama` or `qwen2`).
    ///
    /// # Errors
    /// [`Error::Checkpoint`] for any other architecture.
    pub fn family(&self) -> Result<ModelFamily> {
        match self.get("general.architecture").and_then(Value::as_str) {
            Some("llama") => Ok(ModelFamily::Llama),
            Some("qwen2") => Ok(ModelFamily::Qwen2),
            Some(other) => Err(self.error(format!(
                "general.architecture {other:?} is not supported; expected \"llama\" or \"qwen2\""
            ))),
            None => Err(self.error("metadata general.architecture is missing".into())),
        }
    }

    /// The architecture read from the `{arch}.*` metadata, validated as a
    /// `config.json` would be.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] for an unsupported architecture or RoPE scaling, or a
    /// missing key; [`Error::Config`] if the values are inconsistent.
    pub fn model_config(&self) -> Result<ModelConfig> {
        let family = self.family()?;
        let arch = if family == ModelFamily::Llama { "llama" } else { "qwen2" };
        let key = |k: &str| format!("{arch}.{k}");
        let int = |k: &str| {
            self.get(&key(k))
                .and_then(Value::as_u64)
                .ok_or_else(|| self.error(format!("metadata {} is missing or not an integer", key(k))))
        };
        let float = |k: &str| self.get(&key(k)).and_then(Value::as_f64);
        if let Some(kind) = self.get(&key("rope.scaling.type")).and_then(Value::as_str)
            && kind != "none"
        {
            return Err(self.error(format!("RoPE scaling {kind:?} is not supported")));
        }
        if self.tensors.contains_key("rope_freqs.weight") {
            return Err(self.error("rope_freqs.weight (Llama 3 RoPE scaling) is not supported".into()));
        }
        let hidden = int("embedding_length")?;
        let heads = int("attention.head_count")?;
        let head_dim = match self.get(&key("attention.key_length")).and_then(Value::as_u64) {
            Some(d) => d,
            None if heads > 0 => hidden / heads,
            None => 0,
        };
        let vocab = match self.tokens() {
            Ok(tokens) => tokens.len() as u64,
            Err(_) => int("vocab_size")?,
        };
        let json = serde_json::json!({
            "model_type": arch,
            "vocab_size": vocab,
            "hidden_size": hidden,
            "intermediate_size": int("feed_forward_length")?,
            "num_hidden_layers": int("block_count")?,
            "num_attention_heads": heads,
            "num_key_value_heads": self.get(&key("attention.head_count_kv")).and_then(Value::as_u64).unwrap_or(heads),
            "head_dim": head_dim,
            "rms_norm_eps": float("attention.layer_norm_rms_epsilon").ok_or_else(|| {
                self.error(format!("metadata {} is missing", key("attention.layer_norm_rms_epsilon")))
            })?,
            "rope_theta": float("rope.freq_base").unwrap_or(10_000.0),
            "tie_word_embeddings": !self.tensors.contains_key("output.weight"),
            "max_position_embeddings": int("context_length")?,
            "attention_bias": self.tensors.contains_key("blk.0.attn_q.bias"),
        });
        serde_json::from_value(json)
            .map_err(|e| Error::Config { path: Some(self.path().to_path_buf()), message: e.to_string() })
    }

    /// The decoder `config` describes, every weight dequantised from this file.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming a tensor of an unsupported type; [`Error::Weights`]
    /// listing every missing, unused and mis-shaped tensor.
    pub fn decoder(&self, config: &ModelConfig, device: &Device) -> Result<Decoder> {
        // Tensors of readable types only: their sizes were checked against the file.
        let held = self
            .tensors
            .values()
            .filter(|t| GgmlType::from_id(t.type_id).is_some())
            .map(|t| t.elements() as u64)
            .fold(0, u64::saturating_add);
        config.check_held(held, self.path())?;
        let mut w = Taker {
            file: self,
            used: BTreeSet::new(),
            missing: Vec::new(),
            mismatched: Vec::new(),
            device: device.clone(),
        };
        let model = build(config, &mut w)?;
        let unused: Vec<String> = self.tensors.keys().filter(|k| !w.used.contains(*k)).cloned().collect();
        if w.missing.is_empty() && unused.is_empty() && w.mismatched.is_empty() {
            Ok(model)
        } else {
            Err(Error::Weights {
                dir: self.path().to_path_buf(),
                missing: w.missing,
                unused,
                mismatched: w.mismatched,
            })
        }
    }
}

/// Takes tensors out of a [`GgufFile`] and records what was missing or mis-shaped.
struct Taker<'a> {
    file: &'a GgufFile,
    used: BTreeSet<String>,
    missing: Vec<String>,
    mismatched: Vec<String>,
    device: Device,
}

impl Taker<'_> {
    /// GGUF tensor `name` as f32 of shape `shape` (outermost first); zeros and a
    /// recorded problem when it is missing or mis-shaped, so one pass reports all.
    /// With `heads`, the rows are a llama query/key projection to unpermute.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] if the tensor's type cannot be dequantised.
    fn take<const D: usize>(
        &mut self,
        name: &str,
        shape: [usize; D],
        heads: Option<usize>,
    ) -> Result<Tensor<D>> {
        let zeros = || Tensor::zeros(shape, &self.device);
        let Some(info) = self.file.tensors.get(name) else {
            self.missing.push(format!("{name} ({})", hf_name(name).unwrap_or_default()));
            return Ok(zeros());
        };
        self.used.insert(name.to_string());
        if info.shape() != shape {
            self.mismatched.push(format!("{name}: expected {shape:?}, found {:?}", info.shape()));
            return Ok(zeros());
        }
        let (mut values, _) = self.file.tensor_f32(name)?;
        if let Some(heads) = heads {
            let row = shape[1..].iter().product();
            values = unpermute_rows(&values, heads, row);
        }
        Ok(Tensor::from_data(TensorData::new(values, shape), &self.device))
    }

    /// A `Linear` from GGUF `{prefix}.weight` (`[out, in]` outermost first) as Burn's
    /// `[in, out]`, with `{prefix}.bias` if `bias`; `heads` as in [`Self::take`].
    fn linear(
        &mut self,
        prefix: &str,
        d_in: usize,
        d_out: usize,
        bias: bool,
        heads: Option<usize>,
    ) -> Result<Linear> {
        let weight = self.take(&format!("{prefix}.weight"), [d_out, d_in], heads)?.transpose();
        let bias = match bias {
            true => Some(Param::from_tensor(self.take(&format!("{prefix}.bias"), [d_out], heads)?)),
            false => None,
        };
        Ok(Linear { weight: Param::from_tensor(weight), bias })
    }

    fn rms_norm(&mut self, name: &str, d: usize, epsilon: f64) -> Result<RmsNorm> {
        Ok(RmsNorm { gamma: Param::from_tensor(self.take(name, [d], None)?), epsilon })
    }
}

/// Undoes llama.cpp's query/key permutation of a `[heads * head_dim, row]` matrix (or a
/// `[heads * head_dim]` bias with `row = 1`): within each head, GGUF row `2i + s` is
/// Hugging Face row `s * head_dim / 2 + i` (s in {0, 1}).
pub fn unpermute_rows(values: &[f32], heads: usize, row: usize) -> Vec<f32> {
    let rows = values.len() / row;
    let head_dim = rows / heads;
    let half = head_dim / 2;
    let mut out = vec![0.0; values.len()];
    for h in 0..heads {
        for i in 0..half {
            for s in 0..2 {
                let from = (h * head_dim + 2 * i + s) * row;
                let to = (h * head_dim + s * half + i) * row;
                out[to..to + row].copy_from_slice(&values[from..from + row]);
            }
        }
    }
    out
}

/// The decoder `config` describes, every weight taken from `w` by its GGUF name.
fn build(config: &ModelConfig, w: &mut Taker<'_>) -> Result<Decoder> {
    let (h, hd, eps) = (config.hidden_size, config.head_dim, config.rms_norm_eps);
    let q = config.num_attention_heads * hd;
    let kv = config.num_key_value_heads * hd;
    let inter = config.intermediate_size;
    let bias = config.attention_bias;
    // llama files interleave each query/key head's rotary pairs (see the module docs).
    let llama = config.model_type == ModelFamily::Llama;
    let (q_heads, k_heads) =
        (llama.then_some(config.num_attention_heads), llama.then_some(config.num_key_value_heads));
    let mut layers = Vec::with_capacity(config.num_hidden_layers);
    for l in 0..config.num_hidden_layers {
        let p = format!("blk.{l}");
        layers.push(DecoderLayer {
            self_attn: Attention {
                q_proj: w.linear(&format!("{p}.attn_q"), h, q, bias, q_heads)?,
                k_proj: w.linear(&format!("{p}.attn_k"), h, kv, bias, k_heads)?,
                v_proj: w.linear(&format!("{p}.attn_v"), h, kv, bias, None)?,
                o_proj: w.linear(&format!("{p}.attn_output"), q, h, config.o_bias(), None)?,
                q_norm: None,
                k_norm: None,
                heads: config.num_attention_heads,
                kv_heads: config.num_key_value_heads,
                head_dim: hd,
            },
            mlp: Mlp {
                gate_proj: w.linear(&format!("{p}.ffn_gate"), h, inter, false, None)?,
                up_proj: w.linear(&format!("{p}.ffn_up"), h, inter, false, None)?,
                down_proj: w.linear(&format!("{p}.ffn_down"), inter, h, false, None)?,
            },
            input_layernorm: w.rms_norm(&format!("{p}.attn_norm.weight"), h, eps)?,
            post_attention_layernorm: w.rms_norm(&format!("{p}.ffn_norm.weight"), h, eps)?,
        });
    }
    let embed = w.take("token_embd.weight", [config.vocab_size, h], None)?;
    let lm_head = if config.tie_word_embeddings {
        None
    } else {
        Some(w.linear("output", h, config.vocab_size, false, None)?)
    };
    Ok(Decoder {
        embed_tokens: Embedding { weight: Param::from_tensor(embed) },
        layers,
        norm: w.rms_norm("output_norm.weight", h, eps)?,
        lm_head,
        config: config.clone(),
        query_block: crate::attention::QUERY_BLOCK,
        compute: None,
        checkpoint_layers: false,
    })
}
