//! Loading a Hugging Face checkpoint directory into a [`Decoder`].
//!
//! The directory holds `config.json` and either `model.safetensors` or shards listed in
//! `model.safetensors.index.json`. Tensors may be f32, bf16 or f16; they become the
//! device's float dtype ([`Device::configure`]): a bf16 checkpoint on a bf16 device keeps
//! its bytes as they are, anything else goes through f32. Loading is all-or-nothing: every missing, unused or mis-shaped tensor is
//! collected and reported in one [`Error::Weights`].

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::{Embedding, Linear, RmsNorm};
use burn::prelude::*;
use burn::tensor::DType;
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::attention::Attention;
use crate::config::ModelConfig;
use crate::decoder::{Decoder, DecoderLayer, Mlp};
use crate::{Error, Result};

/// A Hugging Face folder or a GGUF file as a partner: what a host lends partner plugins
/// ([`trlvr::plugin::ModelLoader`], `Registry::with_model_loader`), so that a plugin
/// wrapping a model links no model stack of its own.
///
/// # Errors
/// As [`load_hf_dir`] and [`load_gguf`](crate::load_gguf), naming the path.
pub fn open_partner(path: &Path, device: &Device) -> trlvr::Result<Box<dyn trlvr::model::Partner>> {
    let decoder = if path.is_dir() {
        load_hf_dir(path, device).map(|(decoder, _)| decoder)
    } else {
        crate::gguf::load_gguf(path, device).map(|(decoder, _, _)| decoder)
    };
    match decoder {
        Ok(decoder) => Ok(Box::new(decoder)),
        Err(e) => Err(trlvr::Error::Config(format!("{}: {e}", path.display()))),
    }
}

/// Reads `dir/config.json` and the weights next to it.
///
/// # Errors
/// [`Error::Io`] / [`Error::Config`] / [`Error::Checkpoint`] for unreadable or malformed
/// files; [`Error::Weights`] listing every missing, unused and mis-shaped tensor.
pub fn load_hf_dir(dir: impl AsRef<Path>, device: &Device) -> Result<(Decoder, ModelConfig)> {
    let dir = dir.as_ref();
    let config = ModelConfig::from_file(dir.join("config.json"))?;
    let files = read_shards(dir)?;
    let mut views = HashMap::new();
    for (path, bytes) in &files {
        let parsed = SafeTensors::deserialize(bytes)
            .map_err(|e| Error::Checkpoint { path: path.clone(), message: e.to_string() })?;
        for (name, view) in parsed.tensors() {
            if views.insert(name.clone(), view).is_some() {
                return Err(Error::Checkpoint {
                    path: path.clone(),
                    message: format!("tensor {name} appears in more than one shard"),
                });
            }
        }
    }
    let held = views
        .values()
        .map(|v| v.shape().iter().fold(1u64, |a, &d| a.saturating_mul(d as u64)))
        .fold(0, u64::saturating_add);
    config.check_held(held, &dir.join("config.json"))?;
    let mut weights = Weights {
        views,
        used: HashSet::new(),
        missing: Vec::new(),
        mismatched: Vec::new(),
        device: device.clone(),
    };
    let model = build(&config, &mut weights);
    if config.tie_word_embeddings {
        weights.check_tied_head();
    }
    let mut unused: Vec<String> =
        weights.views.keys().filter(|k| !weights.used.contains(*k)).cloned().collect();
    unused.sort();
    if weights.missing.is_empty() && unused.is_empty() && weights.mismatched.is_empty() {
        Ok((model, config))
    } else {
        Err(Error::Weights {
            dir: dir.to_path_buf(),
            missing: weights.missing,
            unused,
            mismatched: weights.mismatched,
        })
    }
}

/// The bytes of `model.safetensors`, or of every shard the index names.
fn read_shards(dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let read = |path: PathBuf| {
        std::fs::read(&path).map(|bytes| (path.clone(), bytes)).map_err(|source| Error::Io { path, source })
    };
    let single = dir.join("model.safetensors");
    if single.exists() {
        return Ok(vec![read(single)?]);
    }
    let index_path = dir.join("model.safetensors.index.json");
    let text = std::fs::read_to_string(&index_path)
        .map_err(|source| Error::Io { path: index_path.clone(), source })?;
    #[derive(serde::Deserialize)]
    struct Index {
        weight_map: BTreeMap<String, String>,
    }
    let index: Index = serde_json::from_str(&text)
        .map_err(|e| Error::Checkpoint { path: index_path.clone(), message: e.to_string() })?;
    let mut shards: Vec<&String> = index.weight_map.values().collect();
    shards.sort();
    shards.dedup();
    if shards.is_empty() {
        return Err(Error::Checkpoint { path: index_path, message: "weight_map is empty".into() });
    }
    // A shard is a file name in the model's folder: never a path out of it (`/dev/zero`,
    // `../other/model.safetensors`).
    if let Some(bad) = shards.iter().find(|s| {
        let mut parts = Path::new(s.as_str()).components();
        !matches!((parts.next(), parts.next()), (Some(std::path::Component::Normal(_)), None))
    }) {
        let message = format!("weight_map names {bad:?}: a shard must be a file name in the model's folder");
        return Err(Error::Checkpoint { path: index_path, message });
    }
    shards.into_iter().map(|s| read(dir.join(s))).collect()
}

/// The checkpoint's tensors and the book-keeping of what was taken.
struct Weights<'a> {
    views: HashMap<String, TensorView<'a>>,
    used: HashSet<String>,
    missing: Vec<String>,
    mismatched: Vec<String>,
    device: Device,
}

impl Weights<'_> {
    /// The tensor `name` as f32 of shape `shape`; zeros (and a recorded problem) when it
    /// is missing or does not fit, so one pass reports every problem.
    fn take<const D: usize>(&mut self, name: &str, shape: [usize; D]) -> Tensor<D> {
        let zeros = || Tensor::zeros(shape, &self.device);
        let Some(view) = self.views.get(name) else {
            self.missing.push(name.to_string());
            return zeros();
        };
        self.used.insert(name.to_string());
        if view.shape() != shape {
            self.mismatched.push(format!("{name}: expected {shape:?}, found {:?}", view.shape()));
            return zeros();
        }
        // `from_data` stores in the device's float dtype; a checkpoint already in that
        // dtype is handed over without the round trip through f32.
        let target = self.device.settings().float_dtype;
        let data = match (view.dtype(), DType::from(target)) {
            (Dtype::BF16, DType::BF16) => {
                Some(TensorData::new(half_values(view, half::bf16::from_le_bytes), shape))
            }
            (Dtype::F16, DType::F16) => {
                Some(TensorData::new(half_values(view, half::f16::from_le_bytes), shape))
            }
            _ => to_f32(view).map(|values| TensorData::new(values, shape)),
        };
        match data {
            Some(data) => Tensor::from_data(data, &self.device),
            None => {
                self.mismatched.push(format!("{name}: dtype {:?} is not f32, bf16 or f16", view.dtype()));
                zeros()
            }
        }
    }

    /// A Hugging Face `Linear` (`weight` `[out, in]`, optional `bias`) as Burn's `[in, out]`.
    fn linear(&mut self, prefix: &str, d_in: usize, d_out: usize, bias: bool) -> Linear {
        let weight = self.take(&format!("{prefix}.weight"), [d_out, d_in]).transpose();
        Linear {
            weight: Param::from_tensor(weight),
            bias: bias.then(|| Param::from_tensor(self.take(&format!("{prefix}.bias"), [d_out]))),
        }
    }

    fn rms_norm(&mut self, prefix: &str, d: usize, epsilon: f64) -> RmsNorm {
        RmsNorm { gamma: Param::from_tensor(self.take(&format!("{prefix}.weight"), [d])), epsilon }
    }

    /// A tied model may still ship `lm_head.weight`; accept it only if it is a copy of
    /// the embedding.
    fn check_tied_head(&mut self) {
        let (Some(head), Some(embed)) =
            (self.views.get("lm_head.weight"), self.views.get("model.embed_tokens.weight"))
        else {
            return;
        };
        if head.shape() == embed.shape() && head.dtype() == embed.dtype() && head.data() == embed.data() {
            self.used.insert("lm_head.weight".into());
        } else {
            self.mismatched.push(
                "lm_head.weight: differs from model.embed_tokens.weight but tie_word_embeddings is true"
                    .into(),
            );
            self.used.insert("lm_head.weight".into());
        }
    }
}

/// Little-endian 2-byte floats as they are.
fn half_values<T>(view: &TensorView<'_>, from_le_bytes: fn([u8; 2]) -> T) -> Vec<T> {
    view.data().chunks_exact(2).map(|c| from_le_bytes([c[0], c[1]])).collect()
}

/// Little-endian f32, bf16 or f16 bytes widened to f32; `None` for other dtypes.
fn to_f32(view: &TensorView<'_>) -> Option<Vec<f32>> {
    let bytes = view.data();
    Some(match view.dtype() {
        Dtype::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        Dtype::BF16 => {
            bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
        }
        Dtype::F16 => {
            bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
        }
        _ => return None,
    })
}

/// The decoder `config` describes, every weight taken from `w`.
fn build(config: &ModelConfig, w: &mut Weights<'_>) -> Decoder {
    let (h, hd, eps) = (config.hidden_size, config.head_dim, config.rms_norm_eps);
    let q = config.num_attention_heads * hd;
    let kv = config.num_key_value_heads * hd;
    let inter = config.intermediate_size;
    let layers = (0..config.num_hidden_layers)
        .map(|l| {
            let p = format!("model.layers.{l}");
            let a = format!("{p}.self_attn");
            DecoderLayer {
                self_attn: Attention {
                    q_proj: w.linear(&format!("{a}.q_proj"), h, q, config.attention_bias),
                    k_proj: w.linear(&format!("{a}.k_proj"), h, kv, config.attention_bias),
                    v_proj: w.linear(&format!("{a}.v_proj"), h, kv, config.attention_bias),
                    o_proj: w.linear(&format!("{a}.o_proj"), q, h, config.o_bias()),
                    q_norm: config.qk_norm().then(|| w.rms_norm(&format!("{a}.q_norm"), hd, eps)),
                    k_norm: config.qk_norm().then(|| w.rms_norm(&format!("{a}.k_norm"), hd, eps)),
                    heads: config.num_attention_heads,
                    kv_heads: config.num_key_value_heads,
                    head_dim: hd,
                },
                mlp: Mlp {
                    gate_proj: w.linear(&format!("{p}.mlp.gate_proj"), h, inter, false),
                    up_proj: w.linear(&format!("{p}.mlp.up_proj"), h, inter, false),
                    down_proj: w.linear(&format!("{p}.mlp.down_proj"), inter, h, false),
                },
                input_layernorm: w.rms_norm(&format!("{p}.input_layernorm"), h, eps),
                post_attention_layernorm: w.rms_norm(&format!("{p}.post_attention_layernorm"), h, eps),
            }
        })
        .collect();
    let embed = w.take("model.embed_tokens.weight", [config.vocab_size, h]);
    Decoder {
        embed_tokens: Embedding { weight: Param::from_tensor(embed) },
        layers,
        norm: w.rms_norm("model.norm", h, eps),
        lm_head: (!config.tie_word_embeddings).then(|| w.linear("lm_head", h, config.vocab_size, false)),
        config: config.clone(),
        query_block: crate::attention::QUERY_BLOCK,
        compute: None,
        checkpoint_layers: false,
    }
}
