//! The supervised stage: next-token cross-entropy on response tokens (the prompt is
//! read, not learned), AdamW, seeded batches. It makes the demo's base and junior from
//! scratch and the positive control from the base; any [`Policy`] works.

use burn::optim::{AdamWConfig, GradientsAccumulator, GradientsParams};
use burn::prelude::*;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::batch_indices;
use crate::model::Policy;
use crate::token::{TokenBatch, TokenId};
use crate::{Error, Result};

/// One supervised example: the prompt is context, the response is what is learned.
#[derive(Debug, Clone, PartialEq)]
pub struct SftExample {
    /// Context ids (not learned).
    pub prompt: Vec<TokenId>,
    /// Target ids (EOS included if the model should learn to stop).
    pub response: Vec<TokenId>,
}

/// Settings of the supervised stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SftConfig {
    /// Optimizer steps.
    pub steps: usize,
    /// Examples per step.
    pub batch_size: usize,
    /// AdamW learning rate (constant after a linear warm-up of `steps / 10`).
    pub lr: f64,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Seed of the batch order.
    pub seed: u64,
    /// Padding id.
    pub pad: TokenId,
    /// Parts of each batch computed at once, as [`TrainConfig::lanes`](super::TrainConfig::lanes)
    /// (0: one per thread of Rayon's pool on flex, 1 elsewhere).
    #[serde(default)]
    pub lanes: usize,
}

impl Default for SftConfig {
    fn default() -> Self {
        Self { steps: 1000, batch_size: 32, lr: 3e-3, weight_decay: 0.01, seed: 0, pad: 0, lanes: 0 }
    }
}

/// Mean cross-entropy (nats) of the response tokens of `examples` under `policy`, with
/// gradients when the policy lives on an autodiff device.
///
/// # Errors
/// [`Error::Config`] for an empty batch or an example without response tokens; model
/// errors.
pub fn sft_loss<P: Policy>(policy: &P, examples: &[&SftExample], pad: TokenId) -> Result<Tensor<1>> {
    sft_loss_over(policy, examples, pad, targets(examples)?)
}

/// Response tokens of `examples`: the denominator of [`sft_loss`].
fn targets(examples: &[&SftExample]) -> Result<f32> {
    if examples.is_empty() || examples.iter().any(|e| e.response.is_empty() || e.prompt.is_empty()) {
        return Err(Error::Config("SFT needs examples with a prompt and a response".into()));
    }
    Ok(examples.iter().map(|e| e.response.len() as f32).sum())
}

/// [`sft_loss`]'s numerator over `examples`, divided by `targets` (a whole batch's, when
/// `examples` is one lane's part of it).
fn sft_loss_over<P: Policy>(
    policy: &P,
    examples: &[&SftExample],
    pad: TokenId,
    targets: f32,
) -> Result<Tensor<1>> {
    let rows: Vec<Vec<TokenId>> =
        examples.iter().map(|e| [e.prompt.as_slice(), &e.response].concat()).collect();
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    // 1 on response positions (log-probs at t score token t given its prefix).
    let mut mask = vec![0f32; rows.len() * width];
    for (r, e) in examples.iter().enumerate() {
        let start = r * width + e.prompt.len();
        mask[start..start + e.response.len()].fill(1.0);
    }
    let batch = TokenBatch::new(rows, pad)?;
    let log_probs = policy.log_probs(&batch, 1.0)?; // [rows, width]
    let device = log_probs.device();
    let mask = Tensor::<2>::from_data(TensorData::new(mask, [examples.len(), width]), &device);
    Ok((log_probs * mask).sum().neg() / targets)
}

/// Trains `policy` on `data` for `config.steps` steps; `on_step(step, loss)` sees every
/// step (1-based). Returns the trained policy.
///
/// # Errors
/// [`Error::Config`] for no data, zero steps or batch size; [`Error::NonFinite`] if the
/// loss stops being finite; model errors.
pub fn fit_sft<P: Policy>(
    mut policy: P,
    data: &[SftExample],
    config: &SftConfig,
    on_step: &mut dyn FnMut(usize, f64),
) -> Result<P> {
    if data.is_empty() || config.steps == 0 || config.batch_size == 0 {
        return Err(Error::Config("SFT needs data, steps >= 1 and batch_size >= 1".into()));
    }
    if !policy.device().is_autodiff() {
        return Err(Error::Config("SFT needs the policy on an autodiff device".into()));
    }
    let mut optimizer = AdamWConfig::new().with_weight_decay(config.weight_decay as f32).init();
    let warmup = (config.steps / 10).max(1);
    let lanes = crate::device::lanes(config.lanes, &policy.device());
    for step in 0..config.steps {
        let picked = batch_indices(config.seed, step, config.batch_size, data.len());
        let batch: Vec<&SftExample> = picked.iter().map(|&i| &data[i]).collect();
        let (value, grads) = sft_grads(&policy, &batch, config.pad, lanes)?;
        if !value.is_finite() {
            return Err(Error::NonFinite(format!("SFT loss at step {} is {value}", step + 1)));
        }
        let lr = config.lr * ((step + 1) as f64 / warmup as f64).min(1.0);
        policy = optimizer.step(lr, policy, grads);
        on_step(step + 1, value);
    }
    Ok(policy)
}

/// [`sft_loss`] of `batch` and its gradients, the rows cut into `lanes` parts computed at
/// once, each on its own leaves of the weights (as the update's micro-batch parts,
/// [`TrainConfig::lanes`](super::TrainConfig::lanes)), their gradients summed in order.
fn sft_grads<P: Policy>(
    policy: &P,
    batch: &[&SftExample],
    pad: TokenId,
    lanes: usize,
) -> Result<(f64, GradientsParams)> {
    let targets = targets(batch)?;
    let one = |policy: &P, part: &[&SftExample]| -> Result<(f64, GradientsParams)> {
        let loss = sft_loss_over(policy, part, pad, targets)?;
        let value = f64::from(loss.clone().into_scalar::<f32>());
        Ok((value, GradientsParams::from_grads(loss.backward(), policy)))
    };
    if lanes <= 1 || batch.len() < 2 {
        return one(policy, batch);
    }
    let device = policy.device();
    let parts: Vec<&[&SftExample]> = batch.chunks(batch.len().div_ceil(lanes)).collect();
    let results: Vec<Result<(f64, GradientsParams)>> =
        parts.par_iter().map(|part| one(&policy.clone().fork(&device), part)).collect();
    let mut accumulator = GradientsAccumulator::<P>::new();
    let mut total = 0.0;
    for result in results {
        let (value, grads) = result?;
        total += value;
        accumulator.accumulate(policy, grads);
    }
    Ok((total, accumulator.grads()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigram::BigramLm;

    #[test]
    fn the_loss_falls_and_the_prompt_is_not_learned() {
        let device = Device::default().autodiff();
        // Response: always 2 after 1; the prompt token 3 never appears as a target.
        let data = vec![
            SftExample { prompt: vec![3, 1], response: vec![2, 0] },
            SftExample { prompt: vec![3], response: vec![1, 2, 0] },
        ];
        let policy = BigramLm::random(4, 0.5, &device);
        let before = f64::from(sft_loss(&policy, &[&data[0], &data[1]], 0).unwrap().into_scalar::<f32>());
        let mut losses = Vec::new();
        let config = SftConfig { steps: 60, batch_size: 2, lr: 0.1, ..SftConfig::default() };
        let policy = fit_sft(policy, &data, &config, &mut |_, l| losses.push(l)).unwrap();
        assert_eq!(losses.len(), 60);
        let after = f64::from(sft_loss(&policy, &[&data[0], &data[1]], 0).unwrap().into_scalar::<f32>());
        assert!(after < 0.5 * before, "loss {before} -> {after}");
        // After 1 the learned bigram prefers 2 (the target) to 0 and to 3 (never a target).
        let probs = policy.valid().table.val().try_into_vec_as::<f32>().unwrap();
        let after_1 = &probs[4..8];
        assert!(after_1[2] > after_1[0] && after_1[2] > after_1[3], "{after_1:?}");
    }

    #[test]
    fn lanes_give_the_batchs_loss_and_gradient() {
        let device = Device::default().autodiff();
        let data: Vec<SftExample> = (0..5u32)
            .map(|i| SftExample {
                prompt: vec![i % 4],
                response: (0..1 + i % 3).map(|k| (i + k) % 4).collect(),
            })
            .collect();
        let batch: Vec<&SftExample> = data.iter().collect();
        let policy = BigramLm::random(4, 0.5, &device);
        let grad = |grads: &GradientsParams| {
            grads
                .get::<2>(policy.table.id)
                .expect("the table has a gradient")
                .try_into_vec_as::<f32>()
                .unwrap()
        };
        let (whole, g1) = sft_grads(&policy, &batch, 0, 1).unwrap();
        let direct = f64::from(sft_loss(&policy, &batch, 0).unwrap().into_scalar::<f32>());
        assert!((whole - direct).abs() < 1e-6, "{whole} vs {direct}");
        for lanes in [2, 3, 5] {
            let (split, g) = sft_grads(&policy, &batch, 0, lanes).unwrap();
            assert!((split - whole).abs() < 1e-6, "{lanes} lanes: {split} vs {whole}");
            let worst = grad(&g1).iter().zip(grad(&g)).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(worst < 1e-6, "{lanes} lanes: gradients differ by {worst}");
        }
        assert!(grad(&g1).iter().any(|g| g.abs() > 1e-3), "a real gradient");
    }

    #[test]
    fn bad_input_is_refused() {
        let device = Device::default().autodiff();
        let policy = BigramLm::random(4, 0.5, &device);
        assert!(fit_sft(policy.clone(), &[], &SftConfig::default(), &mut |_, _| {}).is_err());
        let empty = SftExample { prompt: vec![1], response: vec![] };
        assert!(sft_loss(&policy, &[&empty], 0).is_err());
        let plain = BigramLm::random(4, 0.5, &Device::default());
        let data = [SftExample { prompt: vec![1], response: vec![2] }];
        assert!(fit_sft(plain, &data, &SftConfig::default(), &mut |_, _| {}).is_err());
    }
}
