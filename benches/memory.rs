//! Peak memory of one training micro-batch (forward + backward) against sequence length.
//!
//! A narrow Qwen3-shaped model (1 layer, hidden 64, 2 query heads sharing 1 key/value
//! head) with the real Qwen3 vocabulary (151,936 tied), so the LM head and the attention
//! dominate as they do at paper scale. One row of random tokens per length; the loss is
//! the sum of the token log-probs. The paths:
//! - `chunked`: today's [`Policy::log_probs`] (LM head per chunk of positions, attention
//!   in query blocks), every position scored;
//! - `response half`: [`Policy::log_probs_from`] from the middle of the row, as the
//!   trainer scores a row whose second half is the response;
//! - `checkpointed`: `chunked` on `Device::flex().autodiff().gradient_checkpointing()`
//!   (the recipe's `gradient_checkpointing = true`);
//! - `scored bf16` (deep model): `scored` in mixed precision, f32 weights and a bf16
//!   forward (`[senior] dtype = "bf16"`);
//! - `scored`: the trainer's path, [`Policy::scored_from`] (values without a graph, the LM
//!   head's gradient formed chunk by chunk once the loss's gradient is known), every
//!   position scored; `scored ckpt` the same on the checkpointed device;
//! - `scored layers`: `scored` with per-layer checkpointing
//!   (`Decoder::with_layer_checkpointing`, the recipe's `[senior] layer_checkpointing`);
//! - `full`: the first path, full-vocabulary logits and their log-softmax at every
//!   position and the attention as one block (which autodiff differentiates as plain
//!   ops, keeping its `[t, t]` probabilities).
//!
//! Peak bytes come from a counting `#[global_allocator]` in this binary only (the flex
//! CPU backend allocates through it): the high-water mark above what was live before the
//! micro-batch, so the weights are not counted. One line per length, peak in MiB.
//!
//! `cargo bench --bench memory` runs every path at 512, 1024, 2048 and 4096; the `full`
//! path at 4096 needs ~7.5 GiB and is skipped unless `TRLVR_BENCH_FULL_4096=1`.
//!
//! Measured 2026-12-01 (flex, 2-core build machine), peak MiB:
//!
//! | length | chunked | response half | checkpointed | scored | scored ckpt | scored layers | full |
//! |---:|---:|---:|---:|---:|---:|---:|---:|
//! | 512 | 708 | 486 | 927 | 486 | 485 | 483 | 937 |
//! | 1024 | 1081 | 675 | 1523 | 490 | 487 | 484 | 1850 |
//! | 2048 | 1830 | 1053 | 2714 | 497 | 491 | 485 | 3715 |
//! | 4096 | 3328 | 1808 | 5097 | 511 | 501 | 488 | 7601 (2026-11-30) |
//!
//! and for the deep model (4 layers, hidden 256, vocabulary 512):
//!
//! | length | plain | checkpointed | scored ckpt | scored bf16 | scored bf16 ckpt | scored layers | scored layers bf16 |
//! |---:|---:|---:|---:|---:|---:|---:|---:|
//! | 512 | 89 | 58 | 57 | 70 | 54 | 50 | 30 |
//! | 1024 | 161 | 98 | 97 | 115 | 84 | 71 | 46 |
//! | 2048 | 304 | 179 | 176 | 205 | 143 | 114 | 76 |
//!
//! Everything grows linearly. In `chunked` the vocabulary term dominates this narrow
//! model: about one `vocab`-wide float per scored position (each chunk's `logits - max`,
//! which Burn keeps for the `exp` backward); `scored` keeps none. The attention keeps no
//! probabilities for backward (`trlvr_models::attention` recomputes them per block), so
//! the deep model doubles with each doubling of length; before that it kept half a
//! `[t, t]` matrix per head and layer (2026-11-30: 124 / 282 / 746, and `scored`
//! 491 / 506 / 555 / 731). `full` runs the attention as one block, plain autodiff.
//! Burn's balanced checkpointing keeps 0.57 of the deep model's layers but more per
//! log-prob chunk, so it costs on the narrow model's autodiff path (docs/memory.md).
#![allow(clippy::print_stdout, missing_docs)]
// A global allocator is an `unsafe impl`; it only forwards to the system allocator.
#![allow(unsafe_code)]

use burn::prelude::*;
use burn::tensor::DType;
use trlvr::model::{Policy, token_log_probs};
use trlvr::token::TokenBatch;
use trlvr_models::Decoder;

#[path = "common/counting.rs"]
mod counting;
#[path = "common/shapes.rs"]
mod shapes;

/// Peak MiB above the live bytes before `step` runs.
fn peak_of(step: impl FnOnce()) -> f64 {
    counting::peak_of(step).0
}

fn main() {
    let device = Device::flex().autodiff();
    let checkpointing = device.clone().gradient_checkpointing();
    let config = shapes::qwen3("narrow");
    let full_4096 = std::env::var("TRLVR_BENCH_FULL_4096").is_ok_and(|v| v == "1");
    println!(
        "| length | chunked peak MiB | response half MiB | checkpointed MiB | scored MiB | scored ckpt MiB | scored layers MiB | full peak MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for length in [512usize, 1024, 2048, 4096] {
        let tokens: Vec<u32> = (0..length).map(|i| ((i * 7919 + 13) % config.vocab_size) as u32).collect();
        let batch = TokenBatch::new(vec![tokens], 0).unwrap();
        device.seed(0);
        let model = config.init(&device);
        let chunked = peak_of(|| {
            let grads = model.log_probs(&batch, 1.0).unwrap().sum().backward();
            drop(grads);
        });
        // As the trainer scores: from where the response starts (here, half-way).
        let response = peak_of(|| {
            let grads = model.log_probs_from(&batch, 1.0, &[length / 2]).unwrap().sum().backward();
            drop(grads);
        });
        // The trainer: the loss's gradient w.r.t. the log-probs (here all ones) becomes the
        // parameters' gradients.
        let trainer_step = |model: &Decoder| {
            let scored = model.scored_from(&batch, 1.0, &[0]).unwrap();
            let upstream = scored.values.ones_like();
            drop(scored.gradients(upstream, model).unwrap());
        };
        let scored = peak_of(|| trainer_step(&model));
        let layered = model.clone().with_layer_checkpointing(true);
        let scored_layers = peak_of(|| trainer_step(&layered));
        drop(layered);
        checkpointing.seed(0);
        let checkpointed_model = config.init(&checkpointing);
        let checkpointed = peak_of(|| {
            let grads = checkpointed_model.log_probs(&batch, 1.0).unwrap().sum().backward();
            drop(grads);
        });
        let scored_ckpt = peak_of(|| trainer_step(&checkpointed_model));
        drop(checkpointed_model);
        let full = if length < 4096 || full_4096 {
            let model = model.clone().with_query_block(length);
            let ids = batch.ids(&device);
            let peak = peak_of(|| {
                let logits = model.forward(ids, &batch.lengths(), None).unwrap();
                let grads = token_log_probs(logits, &batch, 1.0).sum().backward();
                drop(grads);
            });
            format!("{peak:.0}")
        } else {
            "skipped".into()
        };
        println!(
            "| {length} | {chunked:.0} | {response:.0} | {checkpointed:.0} | {scored:.0} | {scored_ckpt:.0} | {scored_layers:.0} | {full} |"
        );
    }

    // Where the layers, not the vocabulary, dominate (as at Qwen3-4B scale): does
    // checkpointing pay there?
    let config = shapes::qwen3("deep-small-vocab");
    println!();
    println!(
        "| length (4 layers, hidden 256, vocab 512) | plain MiB | checkpointed MiB | scored ckpt MiB | scored bf16 MiB | scored bf16 ckpt MiB | scored layers MiB | scored layers bf16 MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for length in [512usize, 1024, 2048] {
        let tokens: Vec<u32> = (0..length).map(|i| ((i * 7919 + 13) % config.vocab_size) as u32).collect();
        let batch = TokenBatch::new(vec![tokens], 0).unwrap();
        let [plain, checkpointed] = [&device, &checkpointing].map(|d| {
            let model = config.init(d);
            peak_of(|| drop(model.log_probs(&batch, 1.0).unwrap().sum().backward()))
        });
        let scored = |model: &Decoder| {
            peak_of(|| {
                let scored = model.scored_from(&batch, 1.0, &[0]).unwrap();
                let upstream = scored.values.ones_like();
                drop(scored.gradients(upstream, model).unwrap());
            })
        };
        let scored_ckpt = scored(&config.init(&checkpointing));
        // Mixed precision: f32 weights, the forward in bf16 (`[senior] dtype = "bf16"`).
        let [mixed, mixed_ckpt] =
            [&device, &checkpointing].map(|d| scored(&config.init(d).with_compute_dtype(DType::BF16)));
        // Per-layer checkpointing (`[senior] layer_checkpointing = true`), f32 and mixed.
        let layers = config.init(&device).with_layer_checkpointing(true);
        let [layers, layers_mixed] =
            [layers.clone(), layers.with_compute_dtype(DType::BF16)].map(|m| scored(&m));
        println!(
            "| {length} | {plain:.0} | {checkpointed:.0} | {scored_ckpt:.0} | {mixed:.0} | {mixed_ckpt:.0} | {layers:.0} | {layers_mixed:.0} |"
        );
    }
}
