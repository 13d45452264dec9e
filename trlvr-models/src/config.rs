//! [`ModelConfig`]: the architecture, read straight from a Hugging Face `config.json`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The decoder families this crate implements. They share one block layout (pre-norm
/// attention and SwiGLU MLP with RoPE and grouped-query attention) and differ in details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelFamily {
    /// Qwen3: per-head RMSNorm on queries and keys before RoPE.
    Qwen3,
    /// Llama (and SmolLM, Mistral-free variants): the plain block.
    Llama,
    /// Qwen2 / Qwen2.5: biases on the query, key and value projections.
    Qwen2,
}

/// The architecture of a decoder, deserialised from a Hugging Face `config.json`.
///
/// Fields the decoder does not need (dropout, token ids, `architectures`) are ignored.
/// Anything the decoder would silently get wrong is rejected instead: an unknown
/// `model_type`, RoPE scaling other than the default, sliding-window attention, MLP
/// biases, an activation other than SiLU, or inconsistent head sizes.
///
/// ```
/// let json = r#"{"model_type": "qwen3", "vocab_size": 256, "hidden_size": 64,
///     "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
///     "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6,
///     "rope_theta": 1000000.0, "tie_word_embeddings": true,
///     "max_position_embeddings": 128}"#;
/// let config: trlvr_models::ModelConfig = serde_json::from_str(json).unwrap();
/// assert_eq!(config.head_dim, 16);
/// assert!(serde_json::from_str::<trlvr_models::ModelConfig>(
///     &json.replace("qwen3", "gpt2")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "HfConfig")]
pub struct ModelConfig {
    /// Which family's block details apply (`model_type`).
    pub model_type: ModelFamily,
    /// Number of token ids (rows of the embedding, width of the logits).
    pub vocab_size: usize,
    /// Width of the residual stream, `d_model`.
    pub hidden_size: usize,
    /// Width of the SwiGLU MLP's hidden layer.
    pub intermediate_size: usize,
    /// Number of decoder blocks.
    pub num_hidden_layers: usize,
    /// Number of query heads.
    pub num_attention_heads: usize,
    /// Number of key/value heads (grouped-query attention); divides the query heads.
    pub num_key_value_heads: usize,
    /// Width of one attention head; `hidden_size / num_attention_heads` when absent.
    pub head_dim: usize,
    /// The epsilon of every RMSNorm.
    pub rms_norm_eps: f64,
    /// The RoPE base; read from `rope_theta` or from `rope_parameters.rope_theta`
    /// (transformers 5). Defaults to 10000.
    pub rope_theta: f64,
    /// Whether the LM head reuses the embedding matrix (no `lm_head.weight` tensor).
    pub tie_word_embeddings: bool,
    /// The longest context the model was trained for; longer inputs are refused.
    pub max_position_embeddings: usize,
    /// Biases on the query, key and value projections (and, for Llama and Qwen3, on the
    /// output projection). Always true for Qwen2, whose config omits the field.
    pub attention_bias: bool,
}

impl ModelConfig {
    /// Reads and validates a `config.json`.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be read, [`Error::Config`] naming the file if
    /// it is malformed or describes an unsupported model.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        serde_json::from_str(&text)
            .map_err(|e| Error::Config { path: Some(path.to_path_buf()), message: e.to_string() })
    }

    /// Whether the output projection has a bias (Llama and Qwen3 with `attention_bias`).
    pub fn o_bias(&self) -> bool {
        self.attention_bias && self.model_type != ModelFamily::Qwen2
    }

    /// Whether queries and keys get a per-head RMSNorm before RoPE (Qwen3).
    pub fn qk_norm(&self) -> bool {
        self.model_type == ModelFamily::Qwen3
    }

    /// Number of query heads sharing one key/value head.
    pub fn group_size(&self) -> usize {
        self.num_attention_heads / self.num_key_value_heads
    }

    /// How many parameters the decoder this config describes holds; `None` past `u64`.
    ///
    /// ```
    /// # let json = r#"{"model_type": "qwen3", "vocab_size": 256, "hidden_size": 64,
    /// #     "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    /// #     "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6,
    /// #     "tie_word_embeddings": true, "max_position_embeddings": 128}"#;
    /// let config: trlvr_models::ModelConfig = serde_json::from_str(json).unwrap();
    /// // Embedding, and per layer q, k, v, o, q/k norms, gate, up, down, two norms; final norm.
    /// let layer = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + 3 * 64 * 128 + 2 * 64;
    /// assert_eq!(config.parameter_count(), Some(256 * 64 + 2 * layer + 64));
    /// ```
    pub fn parameter_count(&self) -> Option<u64> {
        let n = |x: usize| u64::try_from(x).ok();
        let (h, hd, inter, vocab) =
            (n(self.hidden_size)?, n(self.head_dim)?, n(self.intermediate_size)?, n(self.vocab_size)?);
        let q = n(self.num_attention_heads)?.checked_mul(hd)?;
        let kv = n(self.num_key_value_heads)?.checked_mul(hd)?;
        let bias = |width: u64, on: bool| if on { width } else { 0 };
        let attention = [
            h.checked_mul(q)?.checked_add(bias(q, self.attention_bias))?,
            h.checked_mul(kv)?.checked_add(bias(kv, self.attention_bias))?.checked_mul(2)?,
            q.checked_mul(h)?.checked_add(bias(h, self.o_bias()))?,
            bias(hd.checked_mul(2)?, self.qk_norm()),
        ];
        let mlp = h.checked_mul(inter)?.checked_mul(3)?;
        let layer =
            attention.iter().try_fold(mlp.checked_add(h.checked_mul(2)?)?, |a, &b| a.checked_add(b))?;
        let embedding = vocab.checked_mul(h)?;
        let head = if self.tie_word_embeddings { 0 } else { embedding };
        layer
            .checked_mul(n(self.num_hidden_layers)?)?
            .checked_add(embedding)?
            .checked_add(head)?
            .checked_add(h)
    }

    /// Refuses a config that describes far more parameters than the checkpoint at `path`
    /// holds (`held`). The loaders fill a missing tensor with zeros so that one error
    /// lists every missing tensor; a config that does not belong to its weights (or a
    /// damaged one) would have them allocate for a model that is not there. Up to twice
    /// the checkpoint (plus a million) still gets the full list.
    pub(crate) fn check_held(&self, held: u64, path: &Path) -> Result<()> {
        match self.parameter_count() {
            Some(wanted) if wanted <= held.saturating_mul(2).saturating_add(1 << 20) => Ok(()),
            wanted => Err(Error::Config {
                path: Some(path.to_path_buf()),
                message: format!(
                    "the config describes {} parameters, the checkpoint holds {held}: they do not belong together",
                    wanted.map_or_else(|| "more than 2^64".to_string(), |w| w.to_string())
                ),
            }),
        }
    }
}

/// `config.json` as written by transformers 4 and 5, before validation.
#[derive(Deserialize)]
struct HfConfig {
    model_type: String,
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    rms_norm_eps: f64,
    rope_theta: Option<f64>,
    rope_parameters: Option<RopeParameters>,
    rope_scaling: Option<RopeParameters>,
    #[serde(default)]
    tie_word_embeddings: bool,
    max_position_embeddings: usize,
    attention_bias: Option<bool>,
    #[serde(default)]
    mlp_bias: bool,
    #[serde(default)]
    use_sliding_window: bool,
    hidden_act: Option<String>,
}

#[derive(Deserialize)]
struct RopeParameters {
    rope_theta: Option<f64>,
    rope_type: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

impl TryFrom<HfConfig> for ModelConfig {
    type Error = String;

    fn try_from(raw: HfConfig) -> std::result::Result<Self, String> {
        let model_type = match raw.model_type.as_str() {
            "qwen3" => ModelFamily::Qwen3,
            "llama" => ModelFamily::Llama,
            "qwen2" => ModelFamily::Qwen2,
            other => {
                return Err(format!(
                    "model_type {other:?} is not supported; expected \"qwen3\", \"llama\" or \"qwen2\""
                ));
            }
        };
        for rope in [&raw.rope_parameters, &raw.rope_scaling].into_iter().flatten() {
            let kind = rope.rope_type.as_deref().or(rope.kind.as_deref());
            if !matches!(kind, None | Some("default")) {
                return Err(format!("RoPE scaling {kind:?} is not supported"));
            }
        }
        if raw.mlp_bias {
            return Err("mlp_bias = true is not supported".into());
        }
        if raw.use_sliding_window {
            return Err("sliding-window attention is not supported".into());
        }
        if let Some(act) = raw.hidden_act.as_deref().filter(|a| *a != "silu") {
            return Err(format!("hidden_act {act:?} is not supported; expected \"silu\""));
        }
        let heads = raw.num_attention_heads;
        let kv_heads = raw.num_key_value_heads.unwrap_or(heads);
        if heads == 0 || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(format!(
                "num_attention_heads ({heads}) must be a positive multiple of num_key_value_heads ({kv_heads})"
            ));
        }
        let head_dim = match raw.head_dim {
            Some(d) => d,
            None if raw.hidden_size.is_multiple_of(heads) => raw.hidden_size / heads,
            None => {
                return Err(format!(
                    "hidden_size {} is not divisible by {heads} heads and head_dim is absent",
                    raw.hidden_size
                ));
            }
        };
        if head_dim == 0 || !head_dim.is_multiple_of(2) {
            return Err(format!("head_dim must be even and positive, got {head_dim}"));
        }
        let zero = [
            ("vocab_size", raw.vocab_size),
            ("hidden_size", raw.hidden_size),
            ("intermediate_size", raw.intermediate_size),
            ("num_hidden_layers", raw.num_hidden_layers),
            ("max_position_embeddings", raw.max_position_embeddings),
        ];
        if let Some((name, _)) = zero.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be positive"));
        }
        let rope_theta =
            raw.rope_theta.or(raw.rope_parameters.as_ref().and_then(|r| r.rope_theta)).unwrap_or(10_000.0);
        Ok(ModelConfig {
            model_type,
            vocab_size: raw.vocab_size,
            hidden_size: raw.hidden_size,
            intermediate_size: raw.intermediate_size,
            num_hidden_layers: raw.num_hidden_layers,
            num_attention_heads: heads,
            num_key_value_heads: kv_heads,
            head_dim,
            rms_norm_eps: raw.rms_norm_eps,
            rope_theta,
            tie_word_embeddings: raw.tie_word_embeddings,
            max_position_embeddings: raw.max_position_embeddings,
            attention_bias: model_type == ModelFamily::Qwen2 || raw.attention_bias.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config.json with the fields of `extra` overriding a small Qwen3.
    fn parse(extra: &str) -> std::result::Result<ModelConfig, String> {
        let mut json: serde_json::Value = serde_json::from_str(
            r#"{"model_type": "qwen3", "vocab_size": 256, "hidden_size": 64,
            "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "max_position_embeddings": 128}"#,
        )
        .unwrap();
        let extra: serde_json::Value = serde_json::from_str(&format!("{{{extra}}}")).unwrap();
        for (k, v) in extra.as_object().unwrap() {
            json[k] = v.clone();
        }
        serde_json::from_value(json).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_both_rope_theta_spellings() {
        let c = parse("").unwrap();
        assert_eq!((c.head_dim, c.rope_theta, c.tie_word_embeddings), (16, 10_000.0, false));
        assert_eq!(parse(r#""rope_theta": 5e5, "rope_scaling": null"#).unwrap().rope_theta, 5e5);
        let v5 = r#""rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}"#;
        assert_eq!(parse(v5).unwrap().rope_theta, 1e6);
        assert_eq!(parse(r#""head_dim": 32"#).unwrap().head_dim, 32);
    }

    #[test]
    fn family_switches() {
        let qwen2 = parse(r#""model_type": "qwen2", "use_sliding_window": false, "sliding_window": 4096"#);
        let qwen2 = qwen2.unwrap();
        assert!(qwen2.attention_bias && !qwen2.o_bias() && !qwen2.qk_norm());
        let llama = parse(r#""model_type": "llama", "attention_bias": true"#).unwrap();
        assert!(llama.attention_bias && llama.o_bias() && !llama.qk_norm());
        let qwen3 = parse("").unwrap();
        assert!(!qwen3.attention_bias && qwen3.qk_norm());
        assert_eq!(qwen3.group_size(), 2);
    }

    #[test]
    fn unsupported_settings_are_refused_by_name() {
        for (extra, needle) in [
            (r#""model_type": "gpt2""#, "\"gpt2\" is not supported"),
            (r#""rope_scaling": {"rope_type": "llama3", "factor": 32.0}"#, "RoPE scaling"),
            (r#""rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6}"#, "yarn"),
            (r#""use_sliding_window": true"#, "sliding-window"),
            (r#""mlp_bias": true"#, "mlp_bias"),
            (r#""hidden_act": "gelu""#, "gelu"),
            (r#""num_key_value_heads": 3"#, "multiple"),
            (r#""head_dim": 15"#, "even"),
            (r#""vocab_size": 0"#, "vocab_size"),
        ] {
            let err = parse(extra).unwrap_err();
            assert!(err.contains(needle), "{extra}: {err}");
        }
    }
}
