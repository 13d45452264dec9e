//! Saving a [`Decoder`] as a Hugging Face checkpoint directory.
//!
//! [`save_hf_dir`] writes what [`crate::load_hf_dir`] (and transformers'
//! `from_pretrained`) reads: `model.safetensors` (f32, Hugging Face tensor names,
//! `Linear` weights transposed back to PyTorch's `[out, in]`), `config.json`, and
//! optionally `tokenizer.json`. A GGUF model saved this way is an ordinary f32
//! checkpoint. [`save_hf_dir_with`] takes [`SaveOptions`]: the weights in bf16 or f16
//! (rounded to nearest, ties to even, as torch's `.to(dtype)`), and shards with
//! `model.safetensors.index.json` above a size, as `save_pretrained` lays them out.
//!
//! ```
//! use burn::prelude::*;
//! let config: trlvr_models::ModelConfig = serde_json::from_str(r#"{"model_type": "llama",
//!     "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
//!     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
//!     "rms_norm_eps": 1e-6, "max_position_embeddings": 64}"#)?;
//! let model = config.init(&Device::default());
//! let dir = std::env::temp_dir().join(format!("trlvr-save-doc-{}", std::process::id()));
//! trlvr_models::save_hf_dir(&model, &config, None, &dir)?;
//! let (reloaded, reread) = trlvr_models::load_hf_dir(&dir, &Device::default())?;
//! assert_eq!(reread, config);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;
use std::path::Path;

use burn::nn::{Linear, RmsNorm};
use burn::prelude::*;
use safetensors::Dtype;
use safetensors::tensor::TensorView;

use crate::config::{ModelConfig, ModelFamily};
use crate::decoder::Decoder;
use crate::{Error, Result};

/// The weights' type in a saved checkpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SavedDtype {
    /// f32, bit for bit what the model holds.
    #[default]
    F32,
    /// bfloat16 (what a model trained in bf16 is published in).
    Bf16,
    /// IEEE half.
    F16,
}

impl SavedDtype {
    fn safetensors(self) -> Dtype {
        match self {
            Self::F32 => Dtype::F32,
            Self::Bf16 => Dtype::BF16,
            Self::F16 => Dtype::F16,
        }
    }

    /// transformers' name (`torch_dtype` of config.json).
    fn torch_name(self) -> &'static str {
        match self {
            Self::F32 => "float32",
            Self::Bf16 => "bfloat16",
            Self::F16 => "float16",
        }
    }

    fn bytes(self, values: &[f32]) -> Vec<u8> {
        match self {
            Self::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Self::Bf16 => values.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect(),
            Self::F16 => values.iter().flat_map(|&v| half::f16::from_f32(v).to_le_bytes()).collect(),
        }
    }
}

/// How [`save_hf_dir_with`] writes the weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaveOptions {
    /// Their type.
    pub dtype: SavedDtype,
    /// Weights above this many bytes go into shards of at most this size (a tensor larger
    /// than it gets a shard of its own), listed in `model.safetensors.index.json`.
    pub max_shard_bytes: u64,
}

impl Default for SaveOptions {
    /// f32 in one file up to 5 GB.
    fn default() -> Self {
        Self { dtype: SavedDtype::F32, max_shard_bytes: 5_000_000_000 }
    }
}

/// Writes `model` into `dir` (created if needed) as `model.safetensors` and
/// `config.json`, plus `tokenizer.json` when a tokenizer is given: f32, sharded above
/// 5 GB ([`SaveOptions::default`]). Existing files of those names are replaced.
///
/// # Errors
/// [`Error::Input`] if `config` is not the model's own; [`Error::Io`] /
/// [`Error::Save`] if a file cannot be written or a tensor read back.
pub fn save_hf_dir(
    model: &Decoder,
    config: &ModelConfig,
    tokenizer: Option<&tokenizers::Tokenizer>,
    dir: impl AsRef<Path>,
) -> Result<()> {
    save_hf_dir_with(model, config, tokenizer, dir, &SaveOptions::default())
}

/// As [`save_hf_dir`], with the weights' type and shard size of `options`.
///
/// # Errors
/// As [`save_hf_dir`].
pub fn save_hf_dir_with(
    model: &Decoder,
    config: &ModelConfig,
    tokenizer: Option<&tokenizers::Tokenizer>,
    dir: impl AsRef<Path>,
    options: &SaveOptions,
) -> Result<()> {
    let dir = dir.as_ref();
    if model.config() != config {
        return Err(Error::Input("save_hf_dir: config differs from the model's own".into()));
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;

    // 1. Every tensor under its Hugging Face name, little-endian bytes of the saved type.
    let tensors = hf_tensors(model, options.dtype)
        .map_err(|message| Error::Save { path: dir.join("model.safetensors"), message })?;
    write_weights(dir, &tensors, options)?;

    // 2. config.json: the config's own fields plus what transformers needs to pick a class.
    let path = dir.join("config.json");
    let text = serde_json::to_string_pretty(&hf_config(config, options.dtype))
        .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;
    std::fs::write(&path, text).map_err(|source| Error::Io { path, source })?;

    // 3. tokenizer.json.
    if let Some(tokenizer) = tokenizer {
        let path = dir.join("tokenizer.json");
        tokenizer
            .save(&path, false)
            .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;
    }
    Ok(())
}

/// The weights as `model.safetensors`, or as `model-0000i-of-0000n.safetensors` shards
/// with their index when they exceed `options.max_shard_bytes`; the other layout's files
/// left from an earlier save are removed, so a loader finds only this one.
fn write_weights(dir: &Path, tensors: &[Named], options: &SaveOptions) -> Result<()> {
    let mut shards: Vec<Vec<&Named>> = vec![Vec::new()];
    let mut size = 0u64;
    for tensor in tensors {
        let bytes = tensor.2.len() as u64;
        if size > 0 && size + bytes > options.max_shard_bytes {
            shards.push(Vec::new());
            size = 0;
        }
        shards.last_mut().expect("one shard").push(tensor);
        size += bytes;
    }
    let n = shards.len();
    let name = |i: usize| {
        if n == 1 {
            "model.safetensors".to_string()
        } else {
            format!("model-{:05}-of-{n:05}.safetensors", i + 1)
        }
    };
    remove_stale_weights(dir, n)?;
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    let mut weight_map = serde_json::Map::new();
    for (i, shard) in shards.iter().enumerate() {
        let path = dir.join(name(i));
        let views = shard
            .iter()
            .map(|(tensor, shape, bytes)| {
                TensorView::new(options.dtype.safetensors(), shape.clone(), bytes)
                    .map(|v| (tensor.as_str(), v))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;
        safetensors::serialize_to_file(views, Some(metadata.clone()), &path)
            .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;
        weight_map.extend(shard.iter().map(|(tensor, _, _)| (tensor.clone(), name(i).into())));
    }
    if n > 1 {
        let total: usize = tensors.iter().map(|t| t.2.len()).sum();
        let index = serde_json::json!({ "metadata": { "total_size": total }, "weight_map": weight_map });
        let path = dir.join("model.safetensors.index.json");
        let text = serde_json::to_string_pretty(&index)
            .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;
        std::fs::write(&path, text).map_err(|source| Error::Io { path, source })?;
    }
    Ok(())
}

/// Removes the weight files of an earlier save that a save into `shards` files would not
/// replace: `model.safetensors` before shards (the loader prefers it), the index and
/// every shard before one file or another number of shards.
fn remove_stale_weights(dir: &Path, shards: usize) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    for entry in entries {
        let path = entry.map_err(|source| Error::Io { path: dir.to_path_buf(), source })?.path();
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        let shard = file.starts_with("model-") && file.ends_with(".safetensors");
        let stale = match shards {
            1 => shard || file == "model.safetensors.index.json",
            n => {
                file == "model.safetensors" || (shard && !file.ends_with(&format!("-of-{n:05}.safetensors")))
            }
        };
        if stale {
            std::fs::remove_file(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
        }
    }
    Ok(())
}

/// `config.json` as transformers writes it for `config`'s family.
fn hf_config(config: &ModelConfig, dtype: SavedDtype) -> serde_json::Value {
    let mut json = serde_json::to_value(config).expect("ModelConfig serialises");
    let architecture = match config.model_type {
        ModelFamily::Qwen3 => "Qwen3ForCausalLM",
        ModelFamily::Llama => "LlamaForCausalLM",
        ModelFamily::Qwen2 => "Qwen2ForCausalLM",
    };
    json["architectures"] = serde_json::json!([architecture]);
    json["hidden_act"] = "silu".into();
    json["torch_dtype"] = dtype.torch_name().into();
    json
}

/// `(name, shape, little-endian bytes)` of one tensor.
type Named = (String, Vec<usize>, Vec<u8>);

/// Every tensor, in the Hugging Face layout.
struct Saved {
    tensors: Vec<Named>,
    dtype: SavedDtype,
}

impl Saved {
    fn push<const D: usize>(&mut self, name: String, tensor: Tensor<D>) -> std::result::Result<(), String> {
        let shape = tensor.dims().to_vec();
        let values = tensor.try_to_vec_as::<f32>().map_err(|e| format!("{name}: {e:?}"))?;
        self.tensors.push((name, shape, self.dtype.bytes(&values)));
        Ok(())
    }

    /// `{name}.weight` as PyTorch's `[out, in]` and `{name}.bias` if present.
    fn linear(&mut self, name: &str, l: &Linear) -> std::result::Result<(), String> {
        self.push(format!("{name}.weight"), l.weight.val().transpose())?;
        match &l.bias {
            Some(b) => self.push(format!("{name}.bias"), b.val()),
            None => Ok(()),
        }
    }

    fn norm(&mut self, name: &str, n: &RmsNorm) -> std::result::Result<(), String> {
        self.push(format!("{name}.weight"), n.gamma.val())
    }
}

fn hf_tensors(model: &Decoder, dtype: SavedDtype) -> std::result::Result<Vec<Named>, String> {
    let mut out = Saved { tensors: Vec::new(), dtype };
    out.push("model.embed_tokens.weight".into(), model.embed_tokens.weight.val())?;
    for (l, layer) in model.layers.iter().enumerate() {
        let (p, a) = (format!("model.layers.{l}"), &layer.self_attn);
        out.linear(&format!("{p}.self_attn.q_proj"), &a.q_proj)?;
        out.linear(&format!("{p}.self_attn.k_proj"), &a.k_proj)?;
        out.linear(&format!("{p}.self_attn.v_proj"), &a.v_proj)?;
        out.linear(&format!("{p}.self_attn.o_proj"), &a.o_proj)?;
        if let Some(n) = &a.q_norm {
            out.norm(&format!("{p}.self_attn.q_norm"), n)?;
        }
        if let Some(n) = &a.k_norm {
            out.norm(&format!("{p}.self_attn.k_norm"), n)?;
        }
        out.linear(&format!("{p}.mlp.gate_proj"), &layer.mlp.gate_proj)?;
        out.linear(&format!("{p}.mlp.up_proj"), &layer.mlp.up_proj)?;
        out.linear(&format!("{p}.mlp.down_proj"), &layer.mlp.down_proj)?;
        out.norm(&format!("{p}.input_layernorm"), &layer.input_layernorm)?;
        out.norm(&format!("{p}.post_attention_layernorm"), &layer.post_attention_layernorm)?;
    }
    out.norm("model.norm", &model.norm)?;
    if let Some(head) = &model.lm_head {
        out.linear("lm_head", head)?;
    }
    Ok(out.tensors)
}
