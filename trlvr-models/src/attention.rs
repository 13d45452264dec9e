//! Grouped-query self-attention: the layer ([`Attention`]) and the blocked kernel it
//! runs ([`attend`], in `attention/blocked.rs`).
//!
//! The layer projects, normalises (Qwen3), rotates and caches; the kernel is the exact
//! causal softmax a block of queries at a time, with a backward that recomputes each
//! block rather than keeping `O(t²)` probabilities.

mod blocked;

use burn::nn::{Linear, RmsNorm};
use burn::prelude::*;

pub use blocked::{Blocks, QUERY_BLOCK, RecomputedAttention, attend};

use crate::cache::{CausalMask, KvCache};
use crate::layers::{linear, norm};
use crate::packing::Packing;
use crate::rope::Rope;

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

impl Attention {
    /// Attends from `x` over its own rows' keys: the cached ones and its own.
    ///
    /// With a cache, the new (rotated) keys and values are written into layer `layer`
    /// of it at each row's length and the attention reads its first `width` slots;
    /// without, it reads the `seq` new ones.
    ///
    /// With a [`Packing`], `x` holds only the real tokens and so does the output; the
    /// attention itself runs on the padded layout.
    ///
    /// # Shapes
    /// - `x`: `[batch, seq, hidden]`, or `[1, tokens, hidden]` when packed
    /// - `rope`: angles for `[batch, seq]`
    /// - `mask`: `seq` queries per row over `width` keys (`width` = `seq` without a
    ///   cache)
    /// - `block`: queries per attention block ([`attend`])
    /// - returns the shape of `x`
    pub fn forward(
        &self,
        x: Tensor<3>,
        rope: &Rope,
        mask: &CausalMask,
        block: usize,
        cache: Option<(&mut KvCache, usize)>,
        packing: Option<&Packing>,
    ) -> Tensor<3> {
        let (h, kvh, hd) = (self.heads, self.kv_heads, self.head_dim);
        let t = mask.queries();
        let b = match packing {
            Some(p) => p.batch,
            None => x.dims()[0],
        };

        // 1. Project (the real tokens only, when packed) and split heads: [b, t, heads, hd].
        let unpack = |y: Tensor<3>| match packing {
            Some(p) => p.unpack(y),
            None => y,
        };
        let q = unpack(linear(&self.q_proj, x.clone())).reshape([b, t, h, hd]);
        let k = unpack(linear(&self.k_proj, x.clone())).reshape([b, t, kvh, hd]);
        let v = unpack(linear(&self.v_proj, x)).reshape([b, t, kvh, hd]);

        // 2. Qwen3: RMSNorm each query and key head, before RoPE.
        let q = match &self.q_norm {
            Some(n) => norm(n, q),
            None => q,
        };
        let k = match &self.k_norm {
            Some(n) => norm(n, k),
            None => k,
        };

        // 3. Rotate and move heads first: [b, heads, t, hd]. Queries are scaled here, on
        // the smaller tensor, rather than the scores.
        let q = rope.apply_heads_first(q, Some(1.0 / (hd as f64).sqrt()));
        let k = rope.apply_heads_first(k, None);
        let v = v.swap_dims(1, 2);

        // 4. Keys and values to attend over: the cache's first `width` slots, this
        // call's keys written in, or just this call's keys. [b, kv_heads, s, hd].
        let (keys, values) = match cache {
            Some((cache, layer)) => cache.write_and_read(layer, k, v, mask.width()),
            None => (k, v),
        };

        // 5-6. Masked softmax attention, a block of queries at a time.
        let out = attend(q, keys, values, mask, block); // [b, heads, t, hd]

        // 7. Merge heads and project back: [b, t, hidden].
        let out = out.swap_dims(1, 2).reshape([b, t, h * hd]);
        let out = match packing {
            Some(p) => p.pack(out),
            None => out,
        };
        linear(&self.o_proj, out)
    }
}
