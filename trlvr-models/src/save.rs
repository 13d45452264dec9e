//! Saving a [`Decoder`] as a Hugging Face checkpoint directory.
//!
//! [`save_hf_dir`] writes what [`crate::load_hf_dir`] (and transformers'
//! `from_pretrained`) reads: `model.safetensors` (f32, Hugging Face tensor names,
//! `Linear` weights transposed back to PyTorch's `[out, in]`), `config.json`, and
//! optionally `tokenizer.json`. A GGUF model saved this way is an ordinary f32
//! checkpoint.
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

/// Writes `model` into `dir` (created if needed) as `model.safetensors` and
/// `config.json`, plus `tokenizer.json` when a tokenizer is given. Existing files of
/// those names are replaced.
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
    let dir = dir.as_ref();
    if model.config() != config {
        return Err(Error::Input("save_hf_dir: config differs from the model's own".into()));
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;

    // 1. Every tensor under its Hugging Face name, f32 little-endian bytes.
    let path = dir.join("model.safetensors");
    let tensors = hf_tensors(model).map_err(|message| Error::Save { path: path.clone(), message })?;
    let views = tensors
        .iter()
        .map(|(name, shape, bytes)| {
            TensorView::new(Dtype::F32, shape.clone(), bytes).map(|v| (name.as_str(), v))
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    safetensors::serialize_to_file(views, Some(metadata), &path)
        .map_err(|e| Error::Save { path: path.clone(), message: e.to_string() })?;

    // 2. config.json: the config's own fields plus what transformers needs to pick a class.
    let path = dir.join("config.json");
    let text = serde_json::to_string_pretty(&hf_config(config))
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

/// `config.json` as transformers writes it for `config`'s family.
fn hf_config(config: &ModelConfig) -> serde_json::Value {
    let mut json = serde_json::to_value(config).expect("ModelConfig serialises");
    let architecture = match config.model_type {
        ModelFamily::Qwen3 => "Qwen3ForCausalLM",
        ModelFamily::Llama => "LlamaForCausalLM",
        ModelFamily::Qwen2 => "Qwen2ForCausalLM",
    };
    json["architectures"] = serde_json::json!([architecture]);
    json["hidden_act"] = "silu".into();
    json["torch_dtype"] = "float32".into();
    json
}

/// `(name, shape, little-endian f32 bytes)` of one tensor.
type Named = (String, Vec<usize>, Vec<u8>);

/// Every tensor, in the Hugging Face layout.
#[derive(Default)]
struct Saved(Vec<Named>);

impl Saved {
    fn push<const D: usize>(&mut self, name: String, tensor: Tensor<D>) -> std::result::Result<(), String> {
        let shape = tensor.dims().to_vec();
        let values = tensor.try_to_vec_as::<f32>().map_err(|e| format!("{name}: {e:?}"))?;
        self.0.push((name, shape, values.iter().flat_map(|v| v.to_le_bytes()).collect()));
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

fn hf_tensors(model: &Decoder) -> std::result::Result<Vec<Named>, String> {
    let mut out = Saved::default();
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
    Ok(out.0)
}
