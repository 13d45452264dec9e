//! Per-layer activation checkpointing for training ([`Decoder::with_layer_checkpointing`]).
//!
//! The forward pass runs without a graph and keeps only each block's input. The
//! gradients then go backwards one segment at a time, each recomputed from its saved
//! input with a graph of its own and backpropagated alone: the LM head (its gradient
//! formed chunk by chunk, [`lean_token_log_probs`]), the final norm, each block from the
//! last to the first, the embedding. A segment's input gradient is the next segment's
//! upstream gradient; parameter gradients add up across segments (the tied embedding gets
//! both the head's and the input's share). At most one block's activations exist at a
//! time, against every block's in one backward pass; the price is a second forward pass.

use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::prelude::*;
use burn::tensor::{DType, GradientCheckpointingStrategy};
use trlvr::model::{LOG_PROB_CHUNK, Scored, lean_token_log_probs};
use trlvr::token::{TokenBatch, TokenId};

use crate::decoder::Decoder;
use crate::{Error, Result};

impl Decoder {
    /// [`trlvr::model::Policy::scored_from`] with per-layer checkpointing (module doc).
    pub(crate) fn layer_checkpointed_scored(
        &self,
        batch: &TokenBatch,
        temperature: f32,
        from: &[usize],
    ) -> Result<Scored<'_>> {
        let device = self.weights_device();
        if device.gradient_checkpointing_strategy() == Some(GradientCheckpointingStrategy::Balanced) {
            return Err(Error::Input(
                "per-layer checkpointing replaces Burn's: load the senior on a plain autodiff device".into(),
            ));
        }
        let rows: Vec<&[TokenId]> = batch.rows().iter().map(Vec::as_slice).collect();

        // 1. The forward pass without a graph (the same weights, outside autodiff), keeping
        //    each block's input and the final norm's.
        let frozen = self.valid();
        let inner = frozen.weights_device();
        let (ids, lengths) = frozen.padded_ids(&rows, &inner)?;
        let dims = ids.dims();
        let pass = frozen.pass(dims, &lengths, None, &inner)?;
        let mut x = frozen.embed(ids, &pass);
        let mut inputs = Vec::with_capacity(self.layers.len());
        for l in 0..self.layers.len() {
            inputs.push(x.clone());
            x = frozen.block(l, x, &pass, None);
        }
        let last = x;
        let hidden = frozen.finish(last.clone(), &pass).autodiff().require_grad();
        let head = lean_token_log_probs(
            hidden.clone(),
            self.head_weight(),
            batch,
            temperature,
            from,
            LOG_PROB_CHUNK,
        );
        let values = head.values.clone();

        // 2. Backwards a segment at a time, on the autodiff device.
        let (ids, _) = self.padded_ids(&rows, &device)?;
        let pass = self.pass(dims, &lengths, None, &device)?;
        Ok(Scored::with_gradients(values, move |upstream| {
            let mut total = GradientsAccumulator::<Decoder>::new();
            let missing = |what: &str| trlvr::Error::Shape(format!("no gradient reached {what}"));
            // The LM head: dL/dhidden, and the head's weight (the embedding's when tied).
            let mut grads = head.surrogate(upstream)?.backward();
            let g = hidden.grad_remove(&mut grads).ok_or_else(|| missing("the final hidden states"))?;
            total.accumulate(self, GradientsParams::from_module(&mut grads, self));
            // One segment: recompute it from its saved input with a graph, backpropagate
            // `g` through it; its input's gradient is the next segment's `g`.
            let segment = |input: Tensor<3>, g: Tensor<3>, f: &dyn Fn(Tensor<3>) -> Tensor<3>| {
                let x = input.autodiff().require_grad();
                let mut grads = along(f(x.clone()), g).backward();
                let g = x.grad_remove(&mut grads).ok_or_else(|| missing("a block's input"))?;
                Ok::<_, trlvr::Error>((g, grads))
            };
            // The final norm, then the blocks from the last.
            let (mut g, mut grads) = segment(last, g, &|x| self.finish(x, &pass))?;
            total.accumulate(self, GradientsParams::from_module(&mut grads, &self.norm));
            for (l, input) in inputs.into_iter().enumerate().rev() {
                let (next, mut grads) = segment(input, g, &|x| self.block(l, x, &pass, None))?;
                g = next;
                total.accumulate(self, GradientsParams::from_module(&mut grads, &self.layers[l]));
            }
            // The embedding.
            let mut grads = along(self.embed(ids, &pass), g).backward();
            total.accumulate(self, GradientsParams::from_module(&mut grads, &self.embed_tokens));
            Ok(total.grads())
        }))
    }
}

/// A scalar whose gradient with respect to `y` is `g` (from the next segment, outside
/// autodiff).
fn along(y: Tensor<3>, g: Tensor<3>) -> Tensor<1> {
    let dtype = y.dtype();
    (y * g.cast(dtype).autodiff()).cast(DType::F32).sum()
}
