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
//! - `scored`: the trainer's path, [`Policy::scored_from`] (values without a graph, the LM
//!   head's gradient formed chunk by chunk once the loss's gradient is known), every
//!   position scored; `scored ckpt` the same on the checkpointed device;
//! - `full`: the previous path, full-vocabulary logits and their log-softmax at every
//!   position and the attention as one block.
//!
//! Peak bytes come from a counting `#[global_allocator]` in this binary only (the flex
//! CPU backend allocates through it): the high-water mark above what was live before the
//! micro-batch, so the weights are not counted. One line per length, peak in MiB.
//!
//! `cargo bench --bench memory` runs every path at 512, 1024, 2048 and 4096; the `full`
//! path at 4096 needs ~7.5 GiB and is skipped unless `TRLVR_BENCH_FULL_4096=1`.
//!
//! Measured 2026-11-30 (flex, 2-core build machine), peak MiB:
//!
//! | length | chunked | response half | checkpointed | scored | scored ckpt | full |
//! |---:|---:|---:|---:|---:|---:|---:|
//! | 512 | 713 | 491 | 929 | 491 | 486 | 937 |
//! | 1024 | 1097 | 691 | 1529 | 506 | 493 | 1850 |
//! | 2048 | 1888 | 1111 | 2737 | 555 | 514 | 3715 |
//! | 4096 | 3549 | 2029 | 5182 | 731 | 585 | 7601 |
//!
//! and for the deep model (4 layers, hidden 256, vocabulary 512), plain / checkpointed /
//! scored checkpointed: 124 / 74 / 74 at 512, 282 / 150 / 148 at 1024, 746 / 380 / 377 at 2048.
//!
//! Everything grows about linearly here. In `chunked` the vocabulary term dominates this
//! narrow model: about one `vocab`-wide float per scored position (each chunk's
//! `logits - max`, which Burn keeps for the `exp` backward); `scored` keeps none, and what
//! grows there is the attention blocks.
//! Burn's balanced checkpointing halves the deep model's layers but keeps more per
//! log-prob chunk, so it costs here (docs/memory.md).
#![allow(clippy::print_stdout, missing_docs)]
// A global allocator is an `unsafe impl`; it only forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use burn::prelude::*;
use trlvr::model::{Policy, token_log_probs};
use trlvr::token::TokenBatch;
use trlvr_models::Decoder;
use trlvr_models::ModelConfig;

/// Counts live bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to `System` with the caller's layout; the counters do not
// touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: f64 = 1024.0 * 1024.0;

fn narrow_qwen3() -> ModelConfig {
    serde_json::from_str(
        r#"{"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 32, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "tie_word_embeddings": true,
        "max_position_embeddings": 40960}"#,
    )
    .unwrap()
}

/// Peak MiB above the live bytes before `step` runs.
fn peak_of(step: impl FnOnce()) -> f64 {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    step();
    (PEAK.load(Ordering::Relaxed) - base) as f64 / MIB
}

fn main() {
    let device = Device::flex().autodiff();
    let checkpointing = device.clone().gradient_checkpointing();
    let config = narrow_qwen3();
    let full_4096 = std::env::var("TRLVR_BENCH_FULL_4096").is_ok_and(|v| v == "1");
    println!(
        "| length | chunked peak MiB | response half MiB | checkpointed MiB | scored MiB | scored ckpt MiB | full peak MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
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
        // The trainer: the loss's gradient w.r.t. the log-probs (here all ones) goes to the
        // surrogate.
        let trainer_step = |model: &Decoder| {
            let scored = model.scored_from(&batch, 1.0, &[0]).unwrap();
            let upstream = scored.values.ones_like();
            drop(scored.surrogate(upstream).backward());
        };
        let scored = peak_of(|| trainer_step(&model));
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
            "| {length} | {chunked:.0} | {response:.0} | {checkpointed:.0} | {scored:.0} | {scored_ckpt:.0} | {full} |"
        );
    }

    // Where the layers, not the vocabulary, dominate (as at Qwen3-4B scale): does
    // checkpointing pay there?
    let config = deep_small_vocab();
    println!();
    println!("| length (4 layers, hidden 256, vocab 512) | plain MiB | checkpointed MiB | scored ckpt MiB |");
    println!("|---:|---:|---:|---:|");
    for length in [512usize, 1024, 2048] {
        let tokens: Vec<u32> = (0..length).map(|i| ((i * 7919 + 13) % config.vocab_size) as u32).collect();
        let batch = TokenBatch::new(vec![tokens], 0).unwrap();
        let [plain, checkpointed] = [&device, &checkpointing].map(|d| {
            let model = config.init(d);
            peak_of(|| drop(model.log_probs(&batch, 1.0).unwrap().sum().backward()))
        });
        let model = config.init(&checkpointing);
        let scored_ckpt = peak_of(|| {
            let scored = model.scored_from(&batch, 1.0, &[0]).unwrap();
            let upstream = scored.values.ones_like();
            drop(scored.surrogate(upstream).backward());
        });
        println!("| {length} | {plain:.0} | {checkpointed:.0} | {scored_ckpt:.0} |");
    }
}

fn deep_small_vocab() -> ModelConfig {
    serde_json::from_str(
        r#"{"model_type": "qwen3", "vocab_size": 512, "hidden_size": 256,
        "intermediate_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 64, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "tie_word_embeddings": true,
        "max_position_embeddings": 40960}"#,
    )
    .unwrap()
}
