//! # trlvr-models: Qwen3, Llama and Qwen2 decoders in Burn
//!
//! The models that play senior and junior in trlvr. One [`Decoder`] module implements
//! the three Hugging Face families that share the Llama block (pre-norm RMSNorm,
//! grouped-query attention with rotate-half RoPE, SwiGLU MLP); [`ModelConfig`] is read
//! straight from a checkpoint's `config.json` and picks the family's details (Qwen3's
//! per-head query/key norm, Qwen2's query/key/value biases, tied or untied LM head).
//!
//! | concept | where |
//! |---|---|
//! | the architecture, from `config.json` | [`config`] |
//! | the module and its forward pass | [`decoder`] |
//! | grouped-query attention; its blocked kernel's backward recomputes each block | [`attention`] |
//! | linear layers and RMSNorm in the compute dtype, oriented for few rows | `layers.rs` |
//! | the softmax and SwiGLU as single autodiff operations (no exps recomputed) | `fused.rs` |
//! | the real tokens of right-padded rows, without the padding | [`packing`] |
//! | the CPU kernels (products, attention, softmax, SwiGLU, RoPE) and which runs where | `kernels.rs` ([`Decoder::with_decode_layout`]) |
//! | per-layer activation checkpointing in training | `checkpointing.rs` ([`Decoder::with_layer_checkpointing`]) |
//! | rotary position embeddings (Hugging Face layout) | [`rope`] |
//! | per-row KV caches and the attention mask | [`cache`] |
//! | reading safetensors checkpoints (f32/bf16/f16, sharded) | [`load`] |
//! | reading llama.cpp GGUF files (quantised weights, tokenizer) | [`gguf`] |
//! | writing a checkpoint directory back out | [`save`] |
//! | models by Hugging Face id, from the local Hugging Face cache | [`hub`] |
//! | `trlvr::model::Partner` and `Policy` for [`Decoder`] | (trait impls) |
//! | Qwen3 chat template for one user turn | [`chat`] |
//! | a model's own chat template (Jinja), as transformers renders it | [`template`] |
//!
//! Data flows: `config.json` + `*.safetensors` -> [`load_hf_dir`] -> [`Decoder`];
//! then either the tensor-level [`Decoder::forward`] (right-padded `[batch, seq]` ids,
//! per-row lengths, an optional [`KvCache`]) or the trait-level API the tandem engine
//! uses: `start` (prefill each prompt once, share it among copies), `extend` (feed each
//! row its unread tokens, any number per row), `score` / `log_probs` (teacher-forced
//! log-probabilities, without or with gradients). Inference state lives in the
//! session, never in the module, so one model serves many rollouts.
//!
//! Outputs match Hugging Face transformers to about 1e-5 on the tiny checkpoints in
//! `tests/fixtures` (made by `scripts/make_tiny_models.py`), right-padded rows included.
//!
//! ## Example
//!
//! ```
//! use burn::prelude::*;
//! use trlvr::model::{Feed, Partner};
//! use trlvr_models::ModelConfig;
//!
//! let config: ModelConfig = serde_json::from_str(r#"{"model_type": "qwen3",
//!     "vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
//!     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
//!     "head_dim": 8, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
//!     "tie_word_embeddings": true, "max_position_embeddings": 64}"#)?;
//! let model = config.init(&Device::default());
//! // Two copies of one prompt share its prefill, then diverge.
//! let (mut session, logits) = model.start(&[&[1, 2, 3]], 2)?;
//! assert_eq!(logits.dims(), [2, 32]);
//! let next = model.extend(&mut session, &[Feed::predict(0, &[4]), Feed::predict(1, &[5, 6])])?;
//! assert_eq!(next.dims(), [2, 32]);
//! assert_eq!(session.read(1), 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Loading a real checkpoint: `let (model, config) = trlvr_models::load_hf_dir("Qwen3-0.6B", &device)?;`;
//! a copy that only decodes on the CPU runs about twice as fast after
//! `model.with_decode_layout()` (done for you by `Policy::frozen`).
#![warn(missing_docs)]

pub mod attention;
pub mod cache;
pub mod chat;
mod checkpointing;
pub mod config;
pub mod decoder;
mod error;
pub mod fetch;
mod fused;
pub mod generation;
pub mod gguf;
pub mod hub;
mod kernels;
mod layers;
pub mod load;
pub mod packing;
mod partner;
mod pool;
pub mod rope;
pub mod save;
pub mod template;

pub use cache::{KvCache, RowCache};
pub use chat::ChatTokenizer;
pub use config::{ModelConfig, ModelFamily};
pub use decoder::Decoder;
pub use error::{Error, Result};
pub use gguf::load_gguf;
pub use layers::linear;
pub use load::{load_hf_dir, open_partner};
pub use save::{SaveOptions, SavedDtype, save_hf_dir, save_hf_dir_with};
pub use template::{ChatMessage, ChatTemplate};
