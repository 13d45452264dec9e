//! One training step of a paper-scale model shape with random weights, as the trainer
//! runs it: one micro-batch of `rows` rows of `length` tokens whose last `response` are
//! the senior's response ([`trlvr::train::micro_batch_grads`]: log-probs from the
//! response's start, GRPO on the leaf, the LM head's gradient formed chunk by chunk,
//! backward through the trunk), then an AdamW update. Prints the seconds of each part and,
//! on the CPU, the peak bytes above the weights (scripts/gpu_check.sh samples the GPU's
//! memory while it runs and compares both with scripts/memory_plan.py).
//!
//! Measured 2026-12-01 (flex, 2 cores), second step, resident / peak above it, MiB:
//! narrow 1 x 1024 (768): 113 / 489; qwen3-0.6b 1 x 1024 (896): 6823 / 5876 (64 s
//! forward+backward, 2.7 s AdamW), with `--layers` 6823 / 3470 (73 s).
//!
//! ```sh
//! cargo bench --bench paper_step -- --shape narrow --length 1024 --response 768
//! cargo bench --features cuda --bench paper_step -- --device cuda:0 --shape qwen3-4b \
//!     --rows 2 --length 3300 --response 3000 --checkpointing
//! ```
//! Shapes: `narrow` (1 layer, hidden 64, the Qwen3 vocabulary), `qwen3-0.6b`,
//! `qwen3-1.7b`, `qwen3-4b`. `--bf16`: mixed precision (`Decoder::with_compute_dtype`);
//! `--layers`: per-layer checkpointing (`Decoder::with_layer_checkpointing`) instead of
//! Burn's (`--checkpointing`).
#![allow(clippy::print_stdout, missing_docs)]
#![allow(unsafe_code)] // the counting allocator: an `unsafe impl` forwarding to `System`

#[path = "common/counting.rs"]
mod counting;
#[path = "common/shapes.rs"]
mod shapes;

use std::time::Instant;

use burn::module::{ModuleVisitor, Param};
use burn::optim::{AdamWConfig, GradientsParams};
use burn::prelude::*;
use burn::tensor::DType;
use trlvr::prelude::*;
use trlvr::train::{MicroBatch, micro_batch_grads};
use trlvr_models::Decoder;

/// Reads every parameter once, which initialises it.
struct Materialise;

impl ModuleVisitor for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .map_or(Some(default), |i| args.get(i + 1).and_then(|v| v.parse().ok()))
        .unwrap_or_else(|| panic!("{name} takes a value"))
}

fn main() {
    trlvr::device::keep_freed_memory();
    let args: Vec<String> = std::env::args().collect();
    let device_name: String = arg(&args, "--device", "flex".to_string());
    let shape_name: String = arg(&args, "--shape", "narrow".to_string());
    let rows: usize = arg(&args, "--rows", 1);
    let length: usize = arg(&args, "--length", 1024);
    let response: usize = arg(&args, "--response", length * 3 / 4);
    let checkpointing = args.iter().any(|a| a == "--checkpointing");
    let bf16 = args.iter().any(|a| a == "--bf16");
    let layers = args.iter().any(|a| a == "--layers");
    assert!(!(layers && checkpointing), "--layers replaces --checkpointing");
    assert!(0 < response && response < length, "--response must be in 1..length");

    let base = trlvr::device::parse_device(&device_name).expect("--device");
    let device = if checkpointing { base.autodiff().gradient_checkpointing() } else { base.autodiff() };
    let config = shapes::qwen3(&shape_name);
    device.seed(0);
    let start = Instant::now();
    let mut senior: Decoder = config.init(&device);
    if bf16 {
        senior = senior.with_compute_dtype(DType::BF16);
    }
    senior = senior.with_layer_checkpointing(layers);
    // Burn initialises parameters lazily: make the weights exist before measuring.
    senior.visit(&mut Materialise);
    println!(
        "{shape_name}: {:.2}B parameters on {device_name}{}{}{}, init {:.1} s",
        senior.num_params() as f64 / 1e9,
        if checkpointing { " (gradient checkpointing)" } else { "" },
        if layers { " (per-layer checkpointing)" } else { "" },
        if bf16 { " (bf16 forward, f32 weights)" } else { "" },
        start.elapsed().as_secs_f64()
    );

    // Rows of a prompt and a response the senior wrote, advantages ±1 (a group's spread).
    let prompt_len = length - response;
    let vocab = config.vocab_size;
    let prompts: Vec<Vec<TokenId>> = (0..rows)
        .map(|r| (0..prompt_len).map(|i| ((i * 7919 + r * 104_729 + 13) % vocab) as TokenId).collect())
        .collect();
    let rollouts: Vec<Rollout> = (0..rows)
        .map(|r| Rollout {
            prompt: r,
            row_key: r as u64,
            tokens: (0..response).map(|i| ((i * 6007 + r * 31 + 5) % vocab) as TokenId).collect(),
            owners: vec![Owner::Senior; response],
            log_probs: vec![0.0; response],
            other_log_probs: None,
            finish: Finish::Length,
        })
        .collect();
    let pairs: Vec<(&[TokenId], &Rollout)> = prompts.iter().map(Vec::as_slice).zip(&rollouts).collect();
    let advantages: Vec<f32> = (0..rows).map(|r| if r % 2 == 0 { 1.0 } else { -1.0 }).collect();
    let normalizer = Normalizer { tokens: rows * response, sequences: rows };
    let grpo = Grpo::new(GrpoConfig::default()).expect("grpo");

    let mut optimizer = AdamWConfig::new().with_weight_decay(0.01).init();
    let on_cpu = device_name.starts_with("flex") || device_name == "cpu";
    println!(
        "| shape | rows x length (response) | checkpointing, precision | step | forward+backward s | AdamW s | CPU resident before MiB | CPU peak above it MiB |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    // Step 1 creates AdamW's moments; step 2 is every later step (weights and moments
    // resident), what the plan's "per micro-batch" figure describes.
    let mut senior = Some(senior);
    for step in 1..=2 {
        let resident = counting::live() as f64 / counting::MIB;
        let (peak, (next, seconds)) = counting::peak_of(|| {
            let start = Instant::now();
            let current = senior.take().expect("the senior");
            let micro =
                MicroBatch { rows: &pairs, advantages: &advantages, old: None, reference: None, normalizer };
            let (grads, _) = micro_batch_grads(&current, &grpo, 0.6, &micro, 1.0).expect("step");
            let grads: GradientsParams = grads;
            // Wait for the device (kernels are queued) before reading the clock.
            let embed = grads.get::<2>(current.embed_tokens.weight.id).expect("a gradient");
            let _ = embed.slice([0..1, 0..1]).into_data();
            let backward = start.elapsed().as_secs_f64();
            let senior = optimizer.step(1e-6, current, grads);
            // Wait for the device before reading the clock.
            let _ = senior.embed_tokens.weight.val().slice([0..1, 0..1]).into_data();
            (senior, (backward, start.elapsed().as_secs_f64() - backward))
        });
        senior = Some(next);
        let kind = match (layers, checkpointing) {
            (true, _) => "per layer",
            (_, true) => "Burn's",
            _ => "none",
        };
        let (resident, peak) = if on_cpu {
            (format!("{resident:.0}"), format!("{peak:.0}"))
        } else {
            ("n/a (GPU)".into(), "n/a (GPU)".into())
        };
        println!(
            "| {shape_name} | {rows} x {length} ({response}) | {kind}{} | {step} | {:.2} | {:.2} | {resident} | {peak} |",
            if bf16 { ", bf16" } else { "" },
            seconds.0,
            seconds.1
        );
    }
}
