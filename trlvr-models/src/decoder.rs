//! The decoder: Qwen3, Llama and Qwen2 blocks in one [`Decoder`] module.
//!
//! One block is `x + attn(norm(x))`, then `x + mlp(norm(x))`: pre-norm RMSNorm,
//! grouped-query attention with rotate-half RoPE and a causal mask, and a SwiGLU MLP.
//! The families differ only in switches read from [`ModelConfig`]: Qwen3 normalises each
//! query and key head before RoPE, Qwen2 has query/key/value biases. Field names follow
//! the Hugging Face tensor names, so `model.layers.3.self_attn.q_proj.weight` is
//! `layers[3].self_attn.q_proj.weight` (transposed: Burn stores `Linear` as `[in, out]`).

use burn::module::Param;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig, RmsNorm, RmsNormConfig};
use burn::prelude::*;
use burn::tensor::DType;

use crate::attention::{Attention, QUERY_BLOCK};
use crate::cache::{CausalMask, KvCache};
use crate::config::ModelConfig;
use crate::kernels;
use crate::layers::{FEW_ROWS, gated_linear, linear, norm, project};
use crate::packing::Packing;
use crate::rope::Rope;
use crate::{Error, Result};

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
    /// Queries per attention block ([`attend`](crate::attention::attend)).
    #[module(skip)]
    pub(crate) query_block: usize,
    /// The forward pass's dtype when it differs from the weights'
    /// ([`Decoder::with_compute_dtype`]).
    #[module(skip)]
    pub(crate) compute: Option<DType>,
    /// Per-layer activation checkpointing in training ([`Decoder::with_layer_checkpointing`]).
    #[module(skip)]
    pub(crate) checkpoint_layers: bool,
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
            query_block: QUERY_BLOCK,
            compute: None,
            checkpoint_layers: false,
        }
    }
}

/// What the blocks of one forward pass share ([`Decoder::pass`]).
pub(crate) struct Pass {
    rope: Rope,
    mask: CausalMask,
    packing: Option<Packing>,
}

impl Mlp {
    /// # Shapes
    /// - `x`: `[batch, seq, hidden]` -> `[batch, seq, hidden]`
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let gate = linear(&self.gate_proj, x.clone());
        linear(&self.down_proj, gated_linear(&self.up_proj, x, gate))
    }
}

impl Decoder {
    /// The architecture.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Sets the queries per attention block (default [`QUERY_BLOCK`]); any value gives
    /// the same outputs, smaller ones less transient memory on long rows.
    ///
    /// # Panics
    /// If `block` is 0.
    #[must_use]
    pub fn with_query_block(mut self, block: usize) -> Self {
        assert!(block > 0, "query block must be positive");
        self.query_block = block;
        self
    }

    /// Next-token logits at every position of a right-padded batch.
    ///
    /// Row `r` holds `lengths[r]` real tokens followed by padding (any in-vocabulary
    /// id). Without a cache, row `r`'s tokens sit at positions `0..lengths[r]`; with a
    /// cache (one row of the [`KvCache`] per batch row), at `cache_len[r]..`, and the cache grows
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
        Ok(self.lm_head(self.hidden(tokens, lengths, cache)?))
    }

    /// As [`Self::forward`], but stops before the LM head: the final-normed hidden
    /// states, `[batch, seq, hidden]`.
    pub fn hidden(
        &self,
        tokens: Tensor<2, Int>,
        lengths: &[usize],
        mut cache: Option<&mut KvCache>,
    ) -> Result<Tensor<3>> {
        let pass = self.pass(tokens.dims(), lengths, cache.as_deref_mut(), &tokens.device())?;
        let mut x = self.embed(tokens, &pass);
        for l in 0..self.layers.len() {
            x = self.block(l, x, &pass, cache.as_deref_mut().map(|c| (c, l)));
        }
        if let Some(cache) = cache {
            cache.advance(lengths);
        }
        Ok(self.finish(x, &pass))
    }

    /// What every block of one forward pass shares: checks `lengths` (and the cache)
    /// against the batch `[b, t]`, places each row's positions after its cached ones,
    /// reserves the cache's new slots, and builds the rotary tables, the causal mask and
    /// the packing of rows of different lengths.
    pub(crate) fn pass(
        &self,
        [b, t]: [usize; 2],
        lengths: &[usize],
        cache: Option<&mut KvCache>,
        device: &Device,
    ) -> Result<Pass> {
        let cfg = &self.config;
        // A row may read nothing (an idle row of a session); not all of them.
        if lengths.len() != b || lengths.iter().any(|&n| n > t) || lengths.iter().all(|&n| n == 0) {
            return Err(Error::Input(format!(
                "lengths {lengths:?} do not fit a batch of {b} rows of width {t}"
            )));
        }
        let past = match cache.as_deref() {
            Some(c) if c.rows() != b => {
                return Err(Error::Input(format!("cache has {} rows, batch has {b}", c.rows())));
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
        // Activations are in the compute dtype, else the weights' (bf16 weights on an f32
        // device give bf16); the tables follow.
        let dtype = self.compute.unwrap_or_else(|| self.embed_tokens.weight.val().dtype());
        let positions: Vec<Vec<usize>> = past.iter().map(|&p| (p..p + t).collect()).collect();
        let rope = Rope::new(&positions, cfg.head_dim, cfg.rope_theta, device).cast(dtype);
        // Room in the cache for every row's `t` new slots; the attention reads the first
        // `width` of them.
        let width = past.iter().map(|p| p + t).max().unwrap_or(t);
        if let Some(cache) = cache {
            cache.reserve(width, self.layers.len(), cfg.num_key_value_heads, cfg.head_dim, dtype, device);
        }
        let mask = CausalMask::new(&past, cfg.group_size(), t, width).with_whole(self.query_block, device);
        Ok(Pass { rope, mask, packing: Packing::new(lengths, t, device) })
    }

    /// The embeddings of `tokens` in the compute dtype: `[b, t, hidden]`, or
    /// `[1, tokens, hidden]` when rows of different lengths are packed (their real tokens
    /// only, outside the attention).
    pub(crate) fn embed(&self, tokens: Tensor<2, Int>, pass: &Pass) -> Tensor<3> {
        let mut x = self.embed_tokens.forward(tokens);
        if let Some(dtype) = self.compute {
            x = x.cast(dtype);
        }
        match &pass.packing {
            Some(p) => p.pack(x),
            None => x,
        }
    }

    /// Block `l`: `x + attn(norm(x))`, then `x + mlp(norm(x))`.
    pub(crate) fn block(
        &self,
        l: usize,
        x: Tensor<3>,
        pass: &Pass,
        cache: Option<(&mut KvCache, usize)>,
    ) -> Tensor<3> {
        let layer = &self.layers[l];
        let attn = layer.self_attn.forward(
            norm(&layer.input_layernorm, x.clone()),
            &pass.rope,
            &pass.mask,
            self.query_block,
            cache,
            pass.packing.as_ref(),
        );
        let x = x + attn;
        x.clone() + layer.mlp.forward(norm(&layer.post_attention_layernorm, x))
    }

    /// The final norm, back in the padded layout: `[b, t, hidden]`.
    pub(crate) fn finish(&self, x: Tensor<3>, pass: &Pass) -> Tensor<3> {
        let x = norm(&self.norm, x);
        match &pass.packing {
            Some(p) => p.unpack(x),
            None => x,
        }
    }

    /// The LM head's matrix, `[hidden, vocab]` (the transposed embedding when tied), in
    /// the compute dtype; the head has no bias in any supported family.
    pub fn head_weight(&self) -> Tensor<2> {
        let weight = match &self.lm_head {
            Some(head) => head.weight.val(),
            None => self.embed_tokens.weight.val().transpose(),
        };
        match self.compute {
            Some(dtype) => weight.cast(dtype),
            None => weight,
        }
    }

    /// The LM head (the transposed embedding when tied).
    ///
    /// # Shapes
    /// - `x`: `[batch, seq, hidden]` -> `[batch, seq, vocab]`
    pub fn lm_head(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, t, d] = x.dims();
        match &self.lm_head {
            Some(head) => linear(head, x),
            // The transposed embedding is already in the decode layout.
            None if b * t <= kernels::STREAMED_ROWS
                && let Some(y) =
                    kernels::project(&x.clone().reshape([b * t, d]), &self.head_weight(), None) =>
            {
                let vocab = y.dims()[1];
                y.reshape([b, t, vocab])
            }
            // The embedding is `[vocab, hidden]`, contiguous: for a few rows `E · xᵀ`
            // streams it row by row, where `x · Eᵀ` reads it across (16 rows of
            // SmolLM2: 12.5 against 16.7 ms).
            None if b * t <= FEW_ROWS => {
                let embedding = self.head_weight().transpose();
                let vocab = embedding.dims()[0];
                embedding.matmul(x.reshape([b * t, d]).transpose()).transpose().reshape([b, t, vocab])
            }
            None => project(x, self.head_weight(), None),
        }
    }

    /// Runs the forward pass in `dtype` (bf16 or f16) whatever the weights' dtype: the
    /// embedding's output, the activations, the matmuls and the KV cache are `dtype`, each
    /// weight cast to it where it is used (autodiff casts its gradient back); the norms'
    /// mean square, the attention softmax and the log-probs stay f32. With f32 weights
    /// this is mixed precision: weights, gradients and the optimizer's moments stay f32
    /// (master weights), so an update of 1e-6 is not rounded away as it would be on bf16
    /// weights. In f16, small gradients underflow unless the loss is scaled
    /// (`trlvr::train::LossScaling`, which `trlvr train` turns on for an f16 senior).
    /// `DType::F32` (or the weights' own dtype) turns it off.
    #[must_use]
    pub fn with_compute_dtype(mut self, dtype: DType) -> Self {
        self.compute = (dtype != self.embed_tokens.weight.val().dtype()).then_some(dtype);
        self
    }

    /// Per-layer activation checkpointing for training: [`Policy::scored_from`] runs the
    /// forward pass without a graph, keeping only each block's input (`[tokens, hidden]`
    /// per layer), and its gradients recompute one block at a time, backpropagating
    /// through it alone before the next. Training then holds one block's activations
    /// instead of every block's, for a second forward pass's compute. Gradients equal
    /// those without it (up to float summation order).
    ///
    /// [`Policy::scored_from`]: trlvr::model::Policy::scored_from
    #[must_use]
    pub fn with_layer_checkpointing(mut self, on: bool) -> Self {
        self.checkpoint_layers = on;
        self
    }

    /// Whether [`Self::with_layer_checkpointing`] is on.
    pub fn layer_checkpointing(&self) -> bool {
        self.checkpoint_layers
    }

    /// The forward pass's dtype when it differs from the weights' ([`Self::with_compute_dtype`]).
    pub fn compute_dtype(&self) -> Option<DType> {
        self.compute
    }

    /// Every weight cast to the compute dtype, for a copy that never trains (the junior,
    /// the senior's rollout copy): the forward then casts nothing, and the weights take
    /// that dtype's memory. Unchanged without a compute dtype.
    #[must_use]
    pub fn with_weights_in_compute_dtype(self) -> Self {
        let Some(dtype) = self.compute else { return self };
        struct Cast(DType);
        impl burn::module::ModuleMapper for Cast {
            fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
                let dtype = self.0;
                param.map(|t| t.cast(dtype))
            }
        }
        let mut cast = self.map(&mut Cast(dtype));
        cast.compute = None;
        cast
    }

    /// Every projection's weight stored `[out, in]` on the CPU (flex, f32), same values:
    /// decode steps then multiply their few rows by streaming weight rows
    /// (`kernels::project`; SmolLM2's tied LM head at one row: 4.3 ms, 8.9 ms through
    /// the gemm). For copies that decode
    /// (the junior, the senior's rollout copy, `trlvr eval`); a model that trains keeps the
    /// layout its optimizer expects. Unchanged on other backends and dtypes.
    #[must_use]
    pub fn with_decode_layout(mut self) -> Self {
        let relaid = |linear: &mut Linear| linear.weight = linear.weight.clone().map(kernels::decode_layout);
        for layer in &mut self.layers {
            let (a, m) = (&mut layer.self_attn, &mut layer.mlp);
            for linear in [&mut a.q_proj, &mut a.k_proj, &mut a.v_proj, &mut a.o_proj] {
                relaid(linear);
            }
            for linear in [&mut m.gate_proj, &mut m.up_proj, &mut m.down_proj] {
                relaid(linear);
            }
        }
        if let Some(head) = &mut self.lm_head {
            relaid(head);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decode layout changes the products' summation order only: prefill (the
    /// transposed gemm, then the plain one past 256 rows) and decode steps (the few-row
    /// products) give the logits of the layout a model trains in.
    #[test]
    fn the_decode_layout_keeps_the_logits() {
        use trlvr::model::{Feed, Partner};
        let config: ModelConfig = serde_json::from_str(
            r#"{"model_type": "qwen3", "vocab_size": 512, "hidden_size": 256,
            "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 64, "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0, "tie_word_embeddings": true, "max_position_embeddings": 512}"#,
        )
        .unwrap();
        let model = config.init(&Device::flex());
        let relaid = model.clone().with_decode_layout();
        let gate = relaid.layers[0].mlp.gate_proj.weight.val();
        assert!(kernels::in_decode_layout(&gate), "a 256 x 512 weight is relaid");
        for (copies, prompt) in [(2, 40), (1, 300)] {
            let prompt: Vec<u32> = (0..prompt).map(|i| (i * 7 % 500) as u32).collect();
            let run = |m: &Decoder| {
                let (mut session, first) = m.start(&[&prompt], copies).unwrap();
                let feeds: Vec<Feed> = (0..copies).map(|row| Feed::predict(row, &[3, 4, 5])).collect();
                let next = m.extend(&mut session, &feeds).unwrap();
                let step: Vec<Feed> = (0..copies).map(|row| Feed::predict(row, &[9])).collect();
                let last = m.extend(&mut session, &step).unwrap();
                [first, next, last].map(|t| t.into_data().try_to_vec::<f32>().unwrap())
            };
            for (part, (want, got)) in run(&model).iter().zip(run(&relaid).iter()).enumerate() {
                let diff = want.iter().zip(got).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                assert!(diff < 1e-4, "prompt of {}, part {part}: {diff}", prompt.len());
            }
        }
    }
}
