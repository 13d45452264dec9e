//! Tandem RLVR end to end on a laptop CPU, in a few seconds: a bigram senior learns a
//! verifiable toy task while co-writing every rollout with a frozen random junior.
//!
//! Task: the answer is correct when the response's last word before EOS is " c".
//! Each step: tandem rollouts (word schedule, p_sen = 0.5) -> verifier -> group
//! advantages -> GRPO on senior-written tokens only -> AdamW. Every 10 steps the senior
//! is validated solo.
//!
//! `cargo run --release --example tandem_bigram`

#![allow(clippy::print_stdout)] // an example reports on stdout

use anyhow::Result;
use burn::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamWConfig, GradientsParams};
use burn::prelude::*;
use trlvr::prelude::*;

const TEXTS: [&str; 8] = [" a", " b", " c", " d", "e", "\n\n", "<bos>", "<eos>"];
const EOS: TokenId = 7;
const BOS: TokenId = 6;

/// Reward 1 when the last token before EOS is " c".
#[derive(Debug)]
struct EndsWithC;

impl Verifier for EndsWithC {
    fn verify(&self, response: &str, _reference: &str) -> Reward {
        let correct = response.ends_with(" c<eos>");
        Reward { value: f32::from(u8::from(correct)), correct, reason: String::new() }
    }
}

fn text(tokens: &[TokenId]) -> String {
    tokens.iter().map(|&t| TEXTS[t as usize]).collect()
}

fn mean_reward(rollouts: &[Rollout]) -> f32 {
    rollouts.iter().map(|r| EndsWithC.verify(&text(&r.tokens), "").value).sum::<f32>() / rollouts.len() as f32
}

fn main() -> Result<()> {
    let device = Device::default().autodiff();
    device.seed(3);
    let classes = TokenClasses::from_texts(&TEXTS, &[EOS])?;
    let mut senior = BigramLm::random(TEXTS.len(), 0.5, &device);
    let junior = BigramLm::random(TEXTS.len(), 0.5, &device).valid();
    let schedule = WordBoundary::new(0.5, 32)?;
    let grpo = Grpo::new(GrpoConfig::default())?;
    let mut optim = AdamWConfig::new()
        .with_weight_decay(0.01)
        .with_grad_clipping(Some(GradientClippingConfig::Norm(1.0)))
        .init();
    let prompts = vec![vec![BOS]; 4];
    let temperature = Sampling::training().temperature;

    for step in 0..=60 {
        let config =
            RolloutConfig { group_size: 8, max_new_tokens: 12, seed: step, ..RolloutConfig::default() };
        let frozen = senior.valid();
        if step % 10 == 0 {
            let solo = RolloutEngine::solo(&frozen, &classes, config.clone())?
                .generate(&prompts, &Solo::senior())?;
            println!("step {step:3}  solo validation reward {:.3}", mean_reward(&solo));
        }
        // 1. rollouts (senior and junior co-write)
        let rollouts =
            RolloutEngine::new(&frozen, &junior, &classes, config)?.generate(&prompts, &schedule)?;
        // 2. rewards and group advantages
        let rewards: Vec<f32> =
            rollouts.iter().map(|r| EndsWithC.verify(&text(&r.tokens), "").value).collect();
        let adv = advantages(&rewards, 8, AdvantageNorm::GroupStd)?;
        // 3. senior log-probs with gradients; one update per batch, so π_old = π_θ
        let sequences: Vec<Vec<TokenId>> =
            rollouts.iter().map(|r| [vec![BOS], r.tokens.clone()].concat()).collect();
        let batch = TokenBatch::new(sequences, EOS)?;
        let log_probs = senior.log_probs(&batch, temperature)?;
        let owners: Vec<Vec<Owner>> = rollouts.iter().map(|r| r.owners.clone()).collect();
        let loss_mask =
            RolloutMasks::new(&vec![1; rollouts.len()], &owners, batch.width(), &device)?.loss_mask();
        let out = grpo.loss(&ObjectiveBatch {
            old_log_probs: log_probs.clone().detach(),
            log_probs,
            ref_log_probs: None,
            advantages: Tensor::from_floats(adv.as_slice(), &device),
            normalizer: loss_mask.normalizer()?,
            loss_mask,
        })?;
        // 4. step
        let grads = GradientsParams::from_grads(out.loss.backward(), &senior);
        senior = optim.step(0.05, senior, grads);
        if step % 10 == 0 {
            let share = rollouts.iter().map(Rollout::senior_share).sum::<f64>() / rollouts.len() as f64;
            println!(
                "step {step:3}  tandem reward {:.3}  senior share {share:.2}  senior tokens {}",
                mean_reward(&rollouts),
                out.metrics["senior_tokens"]
            );
        }
    }
    Ok(())
}
