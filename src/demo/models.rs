//! The demo's models, trained from scratch by the supervised stage and cached on disk:
//! the base (both notations), the weaker junior (plain only) and the positive control
//! (the base fine-tuned on shorthand only).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::module::{ModuleVisitor, Param};
use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use trlvr::train::{SftConfig, SftExample, fit_sft};
use trlvr_models::{Decoder, ModelConfig, load_hf_dir, save_hf_dir};

use super::regime::{Recipe, Regime, Shape};
use super::task::{EOS, Split, SumTask};

/// The demo's models.
#[derive(Debug)]
pub struct Models {
    /// The senior's starting point (autodiff device).
    pub base: Decoder,
    /// The frozen, weaker junior.
    pub junior: Decoder,
    /// The senior made to write shorthand always.
    pub control: Decoder,
    /// Juniors taught to read shorthand to growing degrees (the junior fine-tuned on
    /// mixed chains for more and more steps): the specificity sweep's partners, with
    /// their recipes.
    pub literate_juniors: Vec<(Recipe, Decoder)>,
    /// Their config files, for saving checkpoints.
    pub base_config: ModelConfig,
    /// Every model's cache key (what a run trained from them depends on).
    pub keys: Vec<String>,
    /// Seconds spent training (0 when all came from the cache).
    pub sft_seconds: f64,
}

/// The code that trains a demo model, hashed into its cache key: a change to any of it
/// (the SFT loop, the task, the decoder, a dependency's version) trains the model again
/// instead of silently reusing one trained by other code.
const TRAINING_CODE: [&str; 12] = [
    include_str!("models.rs"),
    include_str!("regime.rs"),
    include_str!("../../trlvr/src/train/sft.rs"),
    include_str!("task.rs"),
    include_str!("../../trlvr-models/src/decoder.rs"),
    include_str!("../../trlvr-models/src/attention.rs"),
    include_str!("../../trlvr-models/src/attention/blocked.rs"),
    include_str!("../../trlvr-models/src/fused.rs"),
    include_str!("../../trlvr-models/src/layers.rs"),
    include_str!("../../trlvr-models/src/packing.rs"),
    include_str!("../../trlvr-models/src/rope.rs"),
    include_str!("../../Cargo.lock"),
];

/// The cache key of `recipe`'s model trained by `code` (from the model with key `start`).
fn cache_key(task: &SumTask, recipe: &Recipe, start: Option<&str>, code: &[&str]) -> String {
    hash(&(task, recipe, start, code))
}

fn hash(value: &impl Serialize) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    format!("{:016x}", trlvr::data::fnv1a(text.bytes()))
}

/// Supervised examples of `recipe`'s notation mix on fresh problems.
fn data(task: &SumTask, recipe: &Recipe, count: usize) -> Result<Vec<SftExample>> {
    let mut rng = ChaCha8Rng::seed_from_u64(recipe.seed ^ 0xDA7A);
    Ok(task
        .problems(Split::Train, count, recipe.seed)?
        .iter()
        .map(|p| {
            let q = recipe.shorthand_mix[rng.random_range(0..recipe.shorthand_mix.len())];
            SftExample { prompt: task.prompt(p), response: task.mixed_chain(p, q, &mut rng) }
        })
        .collect())
}

/// A copy of `model` with its own autodiff graph. Clones share their parameters' graph
/// nodes, and Burn 0.22's autodiff merges the graphs of every thread that touches a shared
/// node: models trained side by side from one start deadlocked in its graph locks.
pub fn own_copy(model: &Decoder) -> Decoder {
    match model.devices().first() {
        Some(device) => model.clone().fork(device),
        None => model.clone(),
    }
}

/// Reads every parameter once. Burn draws a parameter's initial values lazily, at its
/// first use: without this, the draws of models built side by side would interleave after
/// the lock is released (two runs of one recipe then trained different models).
struct Materialise;

impl ModuleVisitor for Materialise {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

/// Seeding the device and drawing initial weights happen under one lock: models trained
/// side by side on threads would otherwise draw from each other's seeds.
static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Loads `recipe`'s model from the cache under `cache`, or trains it (from `start`, or
/// from scratch) and caches it. Returns the model on `device` and whether it was trained.
fn ensure(
    task: &SumTask,
    recipe: &Recipe,
    start: Option<(&Decoder, &str)>,
    cache: &Path,
    device: &Device,
    log: &(dyn Fn(String) + Sync),
) -> Result<(Decoder, bool)> {
    let key = cache_key(task, recipe, start.map(|(_, key)| key), &TRAINING_CODE);
    let dir = cache.join(format!("{}-{key}", recipe.name));
    if dir.join("model.safetensors").exists() {
        let (model, _) = load_hf_dir(&dir, device).with_context(|| format!("reading {}", dir.display()))?;
        log(format!("{}: cached in {}", recipe.name, dir.display()));
        return Ok((model, false));
    }
    let config = recipe.shape.config(task.vocab_size())?;
    let model = match start {
        Some((model, _)) => own_copy(model),
        None => {
            let _lock = INIT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            device.seed(recipe.seed);
            let model = config.init(device);
            model.visit(&mut Materialise);
            model
        }
    };
    let examples = data(task, recipe, 20_000)?;
    let started = Instant::now();
    let steps = recipe.sft.steps;
    let mut last = 0.0;
    let model = fit_sft(model, &examples, &recipe.sft, &mut |step, loss| {
        last = loss;
        if step % (steps / 4).max(1) == 0 {
            log(format!("{}: SFT step {step}/{steps}, loss {loss:.3}", recipe.name));
        }
    })?;
    let tmp = dir.with_extension("tmp");
    save_hf_dir(&model.valid(), &config, None, &tmp)?;
    std::fs::write(tmp.join("recipe.json"), serde_json::to_string_pretty(&(task, recipe))?)?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir)?;
    log(format!(
        "{}: trained in {:.0} s (final loss {last:.3}), saved to {}",
        recipe.name,
        started.elapsed().as_secs_f64(),
        dir.display()
    ));
    Ok((model, true))
}

/// The specificity sweep's juniors: the junior fine-tuned on chains with half their steps
/// in shorthand, for more and more steps.
pub fn literate_recipes(quick: bool) -> Vec<Recipe> {
    let scale = if quick { 2 } else { 1 };
    [("junior-reads-100", 100), ("junior-reads-300", 300), ("junior-reads-1000", 1000)]
        .into_iter()
        .map(|(name, steps)| Recipe {
            name,
            shape: Shape { layers: 2, hidden: 32, heads: 2 },
            shorthand_mix: vec![0.5],
            sft: SftConfig {
                steps: (steps / scale).max(1),
                batch_size: 64,
                lr: 3e-3,
                weight_decay: 0.01,
                seed: 4,
                pad: EOS,
                lanes: 0,
            },
            seed: 4,
        })
        .collect()
}

/// Loads or trains `regime`'s models into `cache`; `device` must be an autodiff device.
pub fn ensure_all(
    regime: &Regime,
    quick: bool,
    cache: &Path,
    device: &Device,
    log: &(dyn Fn(String) + Sync),
) -> Result<Models> {
    let started = Instant::now();
    let task = &regime.task;
    let [base_recipe, junior_recipe, control_recipe] = &regime.recipes;
    // The base and the junior are independent: trained side by side.
    let (base, junior) = std::thread::scope(|s| {
        let junior = s.spawn(|| ensure(task, junior_recipe, None, cache, device, log));
        let base = ensure(task, base_recipe, None, cache, device, log);
        (base, junior.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    let ((base, a), (junior, b)) = (base?, junior?);
    let base_key = cache_key(task, base_recipe, None, &TRAINING_CODE);
    let junior_key = cache_key(task, junior_recipe, None, &TRAINING_CODE);
    // The control and the literate juniors start from models above and not from each other.
    let literate = if regime.sweep { literate_recipes(quick) } else { Vec::new() };
    let (control, literate_results) = std::thread::scope(|s| {
        let juniors: Vec<_> = literate
            .iter()
            .map(|r| s.spawn(|| ensure(task, r, Some((&junior, &junior_key)), cache, device, log)))
            .collect();
        let control = ensure(task, control_recipe, Some((&base, &base_key)), cache, device, log);
        let juniors: Vec<_> =
            juniors.into_iter().map(|j| j.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect();
        (control, juniors)
    });
    let (control, c) = control?;
    let mut trained = a || b || c;
    let mut keys = vec![
        base_key.clone(),
        junior_key.clone(),
        cache_key(task, control_recipe, Some(&base_key), &TRAINING_CODE),
    ];
    let mut literate_juniors = Vec::new();
    for (recipe, result) in literate.into_iter().zip(literate_results) {
        let (model, t) = result?;
        trained |= t;
        keys.push(cache_key(task, &recipe, Some(&junior_key), &TRAINING_CODE));
        literate_juniors.push((recipe, model.valid()));
    }
    let sft_seconds = if trained { started.elapsed().as_secs_f64() } else { 0.0 };
    Ok(Models {
        base_config: base_recipe.shape.config(task.vocab_size())?,
        base,
        junior: junior.valid(),
        control: control.valid(),
        literate_juniors,
        keys,
        sft_seconds,
    })
}

/// Where the models are cached under the demo's folder.
pub fn cache_dir(out: &Path) -> PathBuf {
    out.join("models")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached model is reused only by the code that trained it.
    #[test]
    fn the_cache_key_changes_with_the_training_code() {
        let task = SumTask::default();
        let [base, ..] = Regime::stress(true).recipes;
        let key = cache_key(&task, &base, None, &TRAINING_CODE);
        assert_eq!(key, cache_key(&task, &base, None, &TRAINING_CODE));
        let mut edited = TRAINING_CODE;
        edited[1] = "an edited SFT loop";
        assert_ne!(key, cache_key(&task, &base, None, &edited));
        assert_ne!(key, cache_key(&task, &base, Some("another start"), &TRAINING_CODE));
    }
}
