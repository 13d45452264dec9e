//! The decoder: Qwen3, Llama and Qwen2 blocks in one [`Decoder`] module.
//!
//! One block is `x + attn(norm(x))`, then `x + mlp(norm(x))`: pre-norm RMSNorm,
//! grouped-query attention with rotate-half RoPE and a causal mask, and a SwiGLU MLP.
//! The families differ only in switches read from [`ModelConfig`]: Qwen3 normalises each
//! query and key head before RoPE, Qwen2 has query/key/value biases. Field names follow
//! the Hugging Face tensor names, so `model.layers.3.self_attn.q_proj.weight` is
//! `layers[3].self_attn.q_proj.weight` (transposed: Burn stores `Linear` as `[in, out]`).

use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig, RmsNorm, RmsNormConfig};
use burn::prelude::*;
use burn::tensor::activation::{silu, softmax};

use crate::cache::{KvCache, attention_mask};
use crate::config::ModelConfig;
use crate::rope::Rope;
use crate::{Error, Result};

/// Grouped-query self-attention.
#[derive(Module, Debug)]
pub struct Attention {
    /// `[hidden, heads * head_dim]`
    pub q_proj: Linear,
    /// `[hidden, kv_heads * head_dim]`
    pub k_proj: Linear,
    /// `[hidden, kv_heads * head_dim]`
    pub v_proj: Linear,
    /// `[heads * head_dim, hidden]`
    pub o_proj: Linear,
    /// Per-head RMSNorm of the queries (Qwen3 only), over `head_dim`.
    pub q_norm: Option<RmsNorm>,
    /// Per-head RMSNorm of the keys (Qwen3 only), over `head_dim`.
    pub k_norm: Option<RmsNorm>,
    pub(crate) heads: usize,
    pub(crate) kv_heads: usize,
    pub(crate) head_dim: usize,
}

/// The SwiGLU MLP: `down(silu(gate(x)) * up(x))`.
#[derive(Module, Debug)]
pub struct Mlp {
    /// `[hidden, intermediate]`
    pub gate_proj: Linear,
    /// `[hidden, intermediate]`
    pub up_proj: Linear,
    /// `[intermediate, hidden]`
    pub down_proj: Linear,
}

/// One decoder block.
#[derive(Module, Debug)]
pub struct DecoderLayer {
    /// Attention.
    pub self_attn: Attention,
    /// MLP.
    pub mlp: Mlp,
    /// RMSNorm before attention.
    pub input_layernorm: RmsNorm,
    /// RMSNorm before the MLP.
    pub post_attention_layernorm: RmsNorm,
}

/// A decoder-only causal language model.
///
/// # Shapes
/// - tokens: `[batch, seq]` (right-padded), logits: `[batch, seq, vocab]`
#[derive(Module, Debug)]
pub struct Decoder {
    /// Token embedding, `[vocab, hidden]`.
    pub embed_tokens: Embedding,
    /// The blocks.
    pub layers: Vec<DecoderLayer>,
    /// Final RMSNorm.
    pub norm: RmsNorm,
    /// LM head, `[hidden, vocab]`; `None` when tied to the embedding.
    pub lm_head: Option<Linear>,
    #[module(skip)]
    pub(crate) config: ModelConfig,
}

impl ModelConfig {
    /// A decoder with random weights (Burn's default initialisers; norms at 1).
    pub fn init(&self, device: &Device) -> Decoder {
        let linear = |i, o, bias| LinearConfig::new(i, o).with_bias(bias).init(device);
        let norm = |d| RmsNormConfig::new(d).with_epsilon(self.rms_norm_eps).init(device);
        let (h, q, kv) = (
            self.hidden_size,
            self.num_attention_heads * self.head_dim,
            self.num_key_value_heads * self.head_dim,
        );
        let layers = (0..self.num_hidden_layers)
            .map(|_| DecoderLayer {
                self_attn: Attention {
                    q_proj: linear(h, q, self.attention_bias),
                    k_proj: linear(h, kv, self.attention_bias),
                    v_proj: linear(h, kv, self.attention_bias),
                    o_proj: linear(q, h, self.o_bias()),
                    q_norm: self.qk_norm().then(|| norm(self.head_dim)),
                    k_norm: self.qk_norm().then(|| norm(self.head_dim)),
                    heads: self.num_attention_heads,
                    kv_heads: self.num_key_value_heads,
                    head_dim: self.head_dim,
                },
                mlp: Mlp {
                    gate_proj: linear(h, self.intermediate_size, false),
                    up_proj: linear(h, self.intermediate_size, false),
                    down_proj: linear(self.intermediate_size, h, false),
                },
                input_layernorm: norm(h),
                post_attention_layernorm: norm(h),
            })
            .collect();
        Decoder {
            embed_tokens: EmbeddingConfig::new(self.vocab_size, h).init(device),
            layers,
            norm: norm(h),
            lm_head: (!self.tie_word_embeddings).then(|| linear(h, self.vocab_size, false)),
            config: self.clone(),
        }
    }
}

impl Mlp {
    /// # Shapes
    /// - `x`: `[batch, seq, hidden]` -> `[batch, seq, hidden]`
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.down_proj.forward(silu(self.gate_proj.forward(x.clone())) * self.up_proj.forward(x))
    }
}

impl Attention {
    /// Attends from `x` over the past keys/values and `x` itself; returns the output and
    /// the new (rotated) keys and values for the cache.
    ///
    /// # Shapes
    /// - `x`: `[batch, seq, hidden]`
    /// - `past`: `([batch, kv_heads, past, head_dim], same)`
    /// - `mask`: `[batch, 1, seq, past + seq]`, `true` = hidden
    /// - returns `([batch, seq, hidden], [batch, kv_heads, seq, head_dim], same)`
    pub fn forward(
        &self,
        x: Tensor<3>,
        rope: &Rope,
        mask: Tensor<4, Bool>,
        past: Option<(Tensor<4>, Tensor<4>)>,
    ) -> (Tensor<3>, Tensor<4>, Tensor<4>) {
        let [b, t, _] = x.dims();
        let (h, kvh, hd) = (self.heads, self.kv_heads, self.head_dim);

        // 1. Project and split heads: [b, t, heads, hd].
        let q = self.q_proj.forward(x.clone()).reshape([b, t, h, hd]);
        let k = self.k_proj.forward(x.clone()).reshape([b, t, kvh, hd]);
        let v = self.v_proj.forward(x).reshape([b, t, kvh, hd]);

        // 2. Qwen3: RMSNorm each query and key head, before RoPE.
        let q = match &self.q_norm {
            Some(norm) => norm.forward(q),
            None => q,
        };
        let k = match &self.k_norm {
            Some(norm) => norm.forward(k),
            None => k,
        };

        // 3. Heads first, then rotate: [b, heads, t, hd].
        let q = rope.apply(q.swap_dims(1, 2));
        let k = rope.apply(k.swap_dims(1, 2));
        let v = v.swap_dims(1, 2);

        // 4. Prepend the cache: [b, kv_heads, past + t, hd].
        let (keys, values) = match past {
            Some((pk, pv)) => (Tensor::cat(vec![pk, k.clone()], 2), Tensor::cat(vec![pv, v.clone()], 2)),
            None => (k.clone(), v.clone()),
        };
        let s = keys.dims()[2];

        // 5. Share each key/value head among its group of query heads: [b, heads, s, hd].
        let repeat =
            |x: Tensor<4>| x.unsqueeze_dim::<5>(2).expand([b, kvh, h / kvh, s, hd]).reshape([b, h, s, hd]);
        let (keys, values) = (repeat(keys), repeat(values));

        // 6. Masked softmax attention: [b, heads, t, s] -> [b, heads, t, hd].
        let scores = q.matmul(keys.swap_dims(2, 3)) / (hd as f64).sqrt();
        let scores = scores.mask_fill(mask.expand([b, h, t, s]), f32::NEG_INFINITY);
        let out = softmax(scores, 3).matmul(values);

        // 7. Merge heads and project back: [b, t, hidden].
        let out = out.swap_dims(1, 2).reshape([b, t, h * hd]);
        (self.o_proj.forward(out), k, v)
    }
}

impl Decoder {
    /// The architecture.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Next-token logits at every position of a right-padded batch.
    ///
    /// Row `r` holds `lengths[r]` real tokens followed by padding (any in-vocabulary
    /// id). Without a cache, row `r`'s tokens sit at positions `0..lengths[r]`; with a
    /// cache (one [`crate::RowCache`] per row), at `cache_len[r]..`, and the cache grows
    /// by `lengths[r]`. Padding never influences real positions; logits at padded
    /// positions are meaningless.
    ///
    /// # Shapes
    /// - `tokens`: `[batch, seq]`, every id `< vocab_size`
    /// - returns `[batch, seq, vocab]`
    ///
    /// # Errors
    /// [`Error::Input`] if `lengths` or the cache disagree with the batch or a length is
    /// 0 or over `seq`; [`Error::ContextTooLong`] past `max_position_embeddings`.
    pub fn forward(
        &self,
        tokens: Tensor<2, Int>,
        lengths: &[usize],
        cache: Option<&mut KvCache>,
    ) -> Result<Tensor<3>> {
        let [b, t] = tokens.dims();
        let device = tokens.device();
        let cfg = &self.config;

        // 1. Check lengths; each row's positions start where its cache ends.
        if lengths.len() != b || lengths.iter().any(|&n| n == 0 || n > t) {
            return Err(Error::Input(format!(
                "lengths {lengths:?} do not fit a batch of {b} rows of width {t}"
            )));
        }
        let past = match cache.as_deref() {
            Some(c) if c.rows.len() != b => {
                return Err(Error::Input(format!("cache has {} rows, batch has {b}", c.rows.len())));
            }
            Some(c) => c.lengths(),
            None => vec![0; b],
        };
        if let Some(length) = past.iter().zip(lengths).map(|(p, n)| p + n).max()
            && length > cfg.max_position_embeddings
        {
            let max = cfg.max_position_embeddings;
            return Err(Error::ContextTooLong { length, max });
        }
        let positions: Vec<Vec<usize>> = past.iter().map(|&p| (p..p + t).collect()).collect();
        let rope = Rope::new(&positions, cfg.head_dim, cfg.rope_theta, &device);
        let past_width = past.iter().copied().max().unwrap_or(0);
        let mask = attention_mask(&past, past_width, t, &device); // [b, 1, t, past + t]

        // 2. Embed: [b, t, hidden].
        let mut x = self.embed_tokens.forward(tokens);

        // 3. The blocks, collecting each layer's new keys and values for the cache.
        let mut new_kv = Vec::with_capacity(self.layers.len());
        for (l, layer) in self.layers.iter().enumerate() {
            let past_kv = cache
                .as_deref()
                .and_then(|c| c.padded(l, past_width, cfg.num_key_value_heads, cfg.head_dim, &device));
            let (attn, k, v) = layer.self_attn.forward(
                layer.input_layernorm.forward(x.clone()),
                &rope,
                mask.clone(),
                past_kv,
            );
            x = x + attn;
            x = x.clone() + layer.mlp.forward(layer.post_attention_layernorm.forward(x));
            if cache.is_some() {
                new_kv.push((k, v));
            }
        }

        // 4. Append each row's real new keys/values to its cache.
        if let Some(cache) = cache {
            let (kvh, hd) = (cfg.num_key_value_heads, cfg.head_dim);
            for (r, row) in cache.rows.iter_mut().enumerate() {
                let n = lengths[r];
                let take =
                    |x: &Tensor<4>| x.clone().slice([r..r + 1, 0..kvh, 0..n, 0..hd]).squeeze_dim::<3>(0);
                row.append(new_kv.iter().map(|(k, v)| (take(k), take(v))).collect(), n);
            }
        }

        // 5. Final norm and LM head (the transposed embedding when tied): [b, t, vocab].
        let x = self.norm.forward(x);
        Ok(match &self.lm_head {
            Some(head) => head.forward(x),
            None => burn::tensor::module::linear(x, self.embed_tokens.weight.val().transpose(), None),
        })
    }
}
