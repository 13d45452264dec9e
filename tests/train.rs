//! The trainer end to end on a tiny Qwen3 decoder (trlvr-models' fixtures): each arm
//! trains, only the senior moves, junior tokens carry no gradient, rewards rise on a toy
//! task, a resumed run repeats the uninterrupted one, failures stop cleanly, and the
//! update is the method as written (method.md §3-4).

use std::sync::atomic::{AtomicUsize, Ordering};

use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;
use trlvr::collective::{Collective, Threads};
use trlvr::mask::Normalizer;
use trlvr::objective::{Metrics, ObjectiveOutput};
use trlvr::plugin::Registry;
use trlvr::prelude::*;
use trlvr::train::{
    Example, LossScaling, MicroBatch, RunDir, StepMetrics, Task, TrainConfig, Trainer, objective_batch,
};
use trlvr_junior_kl::JuniorKl;
use trlvr_models::{Decoder, load_hf_dir};

fn fixture(name: &str, device: &Device) -> Decoder {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/trlvr-models/tests/fixtures/");
    load_hf_dir(format!("{dir}{name}"), device).unwrap().0
}

/// 256 ids: every third starts a word, 254 and 255 are EOS.
fn classes() -> TokenClasses {
    let texts: Vec<String> =
        (0..256).map(|i| if i % 3 == 0 { format!(" w{i}") } else { format!("p{i}") }).collect();
    TokenClasses::from_texts(&texts, &[254, 255]).unwrap()
}

fn text(ids: &[TokenId]) -> String {
    ids.iter().map(|t| format!("{t} ")).collect()
}

/// Toy verifiable task: the reward is the fraction of response tokens below 64.
#[derive(Debug)]
struct LowIds;

impl Verifier for LowIds {
    fn verify(&self, response: &str, _: &str) -> Reward {
        let ids: Vec<u32> = response.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let value = ids.iter().filter(|&&t| t < 64).count() as f32 / ids.len().max(1) as f32;
        Reward { value, correct: value > 0.5, reason: String::new() }
    }
}

fn examples() -> Vec<Example> {
    [vec![1, 2, 3], vec![9, 8], vec![30, 31, 32, 33], vec![5]]
        .into_iter()
        .map(|prompt| Example { prompt, reference: String::new() })
        .collect()
}

fn task<'a>(train: &'a [Example], classes: &'a TokenClasses) -> Task<'a> {
    Task {
        train,
        validation: &train[..2],
        verifier: &LowIds,
        validation_verifier: &LowIds,
        text: &text,
        classes,
    }
}

fn config(steps: usize) -> TrainConfig {
    TrainConfig {
        steps,
        prompts_per_step: 4,
        group_size: 8,
        mini_batch_prompts: 2,
        micro_batch_rows: 5,
        max_new_tokens: 8,
        lr: 3e-3,
        validate_every: 2,
        checkpoint_every: 2,
        seed: 11,
        ..TrainConfig::default()
    }
}

/// Every float parameter, in visiting order.
fn params(model: &Decoder) -> Vec<f32> {
    struct Flat(Vec<f32>);
    impl ModuleVisitor for Flat {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.extend(param.val().try_into_vec_as::<f32>().unwrap());
        }
    }
    let mut flat = Flat(Vec::new());
    model.visit(&mut flat);
    flat.0
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("trlvr-train-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn metrics(run: &RunDir) -> Vec<StepMetrics> {
    std::fs::read_to_string(run.metrics_path())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A metrics line without its wall-clock figures.
fn timeless(m: &StepMetrics) -> StepMetrics {
    StepMetrics {
        rollout_tokens_per_s: 0.0,
        tokens_per_s: 0.0,
        time_s: 0.0,
        time_rollout_s: 0.0,
        time_old_s: 0.0,
        time_update_s: 0.0,
        cpu_rollout_s: 0.0,
        cpu_update_s: 0.0,
        ..m.clone()
    }
}

#[test]
fn each_arm_trains_and_only_the_senior_moves() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let junior_before = params(&junior);
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let kl = JuniorKl::new(GrpoConfig::default(), 0.01).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let solo = Solo::senior();
    let arms: [(&str, &dyn HandoffSchedule, &dyn Objective); 3] =
        [("grpo", &solo, &grpo), ("trlvr", &word, &grpo), ("kl-reg", &solo, &kl)];
    for (arm, schedule, objective) in arms {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let senior_before = params(&senior);
        let mut trainer =
            Trainer::new(config(3), senior, &junior, schedule, objective, task(&train, &classes)).unwrap();
        let run = RunDir::open(temp_dir(arm)).unwrap();
        trainer.fit(&run, &mut |_| {}, &mut |_| {}).unwrap();

        let lines = std::fs::read_to_string(run.metrics_path()).unwrap();
        assert_eq!(lines.lines().count(), 3, "{arm}");
        let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        for key in [
            "step",
            "reward_mean",
            "accuracy",
            "senior_share",
            "response_len_mean",
            "tokens",
            "senior_tokens",
            "response_len_max",
            "truncation_rate",
            "loss",
            "clip_frac",
            "grad_norm",
            "lr",
            "tokens_per_s",
            "time_s",
            "time_rollout_s",
            "time_old_s",
            "time_update_s",
            "cpu_rollout_s",
            "cpu_update_s",
        ] {
            assert!(first.get(key).is_some_and(|v| !v.is_null()), "{arm}: no {key} in {first}");
        }
        let m = metrics(&run);
        assert!(m.iter().all(|m| m.loss.is_finite() && m.grad_norm.is_finite()), "{arm}");
        assert!(m.iter().all(|m| m.cpu_rollout_s > 0.0 && m.cpu_update_s > 0.0), "{arm}: no CPU time");
        assert!(m[1].validation_pass1.is_some(), "{arm}: validation every 2 steps");
        match arm {
            "trlvr" => assert!(m.iter().all(|m| m.senior_share > 0.2 && m.senior_share < 0.8), "{arm}"),
            _ => assert!(m.iter().all(|m| m.senior_share == 1.0), "{arm}"),
        }
        // Token counts: 4 prompts x 8 rollouts of the mean length; the senior's share of them.
        for m in &m {
            assert_eq!(m.tokens as f64, m.response_len_mean * 32.0, "{arm}");
            assert_eq!(m.senior_share, m.senior_tokens as f64 / m.tokens as f64, "{arm}");
        }
        assert_eq!(m[0].kl.is_some(), arm == "kl-reg", "{arm}");
        // The objective's own metrics reach metrics.jsonl: junior-KL's share of clamped tokens.
        let clamped = m[0].objective.get("junior_kl_clamped");
        assert_eq!(clamped.is_some(), arm == "kl-reg", "{arm}: {:?}", m[0].objective);
        assert!(clamped.is_none_or(|c| (0.0..=1.0).contains(c)), "{arm}: {clamped:?}");
        assert!(std::fs::read_to_string(run.samples_path()).unwrap().contains("[S]"), "{arm}");
        assert_ne!(params(trainer.senior()), senior_before, "{arm}: the senior moved");
        assert_eq!(params(&junior), junior_before, "{arm}: the junior is bit-identical");
        let _ = std::fs::remove_dir_all(run.root());
    }
}

#[test]
fn junior_tokens_carry_no_gradient() {
    let classes = classes();
    let device = Device::default().autodiff();
    let senior = fixture("qwen3-tiny-tied", &device);
    let junior = fixture("qwen3-tiny-untied", &Device::default());
    let frozen = senior.valid();
    let config = RolloutConfig { group_size: 4, max_new_tokens: 10, seed: 5, ..RolloutConfig::default() };
    let engine = RolloutEngine::new(&frozen, &junior, &classes, config).unwrap();
    let prompts = vec![vec![1, 2, 3], vec![7]];
    let rollouts = engine.generate(&prompts, &WordBoundary::new(0.5, 3).unwrap()).unwrap();
    let rows: Vec<(&[TokenId], &Rollout)> =
        rollouts.iter().map(|r| (prompts[r.prompt].as_slice(), r)).collect();
    let batch = trlvr::train::sequences(&rows).unwrap();
    let width = batch.width();
    let old = frozen.score(&batch, 0.6).unwrap().try_into_vec_as::<f32>().unwrap();
    let advantages: Vec<f32> = (0..rows.len()).map(|i| [1.0, -0.5, 0.25, -1.0][i % 4]).collect();
    let senior_tokens: usize =
        rollouts.iter().map(|r| r.owners.iter().filter(|&&o| o == Owner::Senior).count()).sum();
    let normalizer = Normalizer { tokens: senior_tokens, sequences: rows.len() };
    // Positions written by the junior, known from the rollouts themselves.
    let junior_at: Vec<bool> = rows
        .iter()
        .flat_map(|(p, r)| {
            (0..width).map(move |t| {
                t >= p.len() && t < p.len() + r.owners.len() && r.owners[t - p.len()] == Owner::Junior
            })
        })
        .collect();
    assert!(junior_at.iter().any(|&j| j), "the junior wrote something");
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let grads = |perturb: &dyn Fn(Tensor<2>, Vec<f32>) -> (Tensor<2>, Vec<f32>)| {
        let micro =
            MicroBatch { rows: &rows, advantages: &advantages, old: Some(&old), reference: None, normalizer };
        let mut b = objective_batch(&senior, 0.6, &micro).unwrap();
        let (log_probs, old) = perturb(b.log_probs.clone(), old.clone());
        b.log_probs = log_probs;
        b.old_log_probs = Tensor::from_data(TensorData::new(old, [rows.len(), width]), &device);
        let g = GradientsParams::from_grads(grpo.loss(&b).unwrap().loss.backward(), &senior);
        let mut flat = Vec::new();
        let mut collect = Collect { grads: &g, out: &mut flat };
        senior.visit(&mut collect);
        flat
    };
    let at =
        |flags: Vec<bool>| Tensor::<2, Bool>::from_data(TensorData::new(flags, [rows.len(), width]), &device);
    let plain = grads(&|lp, old| (lp, old));
    // Junior positions: log-probs through another function of the weights, π_old NaN.
    let junior_mask = at(junior_at.clone());
    let moved = grads(&|lp: Tensor<2>, mut old: Vec<f32>| {
        for (o, &j) in old.iter_mut().zip(&junior_at) {
            if j {
                *o = f32::NAN;
            }
        }
        (lp.clone().mask_where(junior_mask.clone(), lp * 7.0 + 3.0), old)
    });
    assert_eq!(plain, moved, "junior-written tokens must not reach the gradient");
    // The same change at one senior position does reach it (the test can fail).
    let first_senior = rows
        .iter()
        .enumerate()
        .find_map(|(i, (p, r))| {
            r.owners.iter().position(|&o| o == Owner::Senior).map(|t| i * width + p.len() + t)
        })
        .unwrap();
    let mut one = vec![false; rows.len() * width];
    one[first_senior] = true;
    let one = at(one);
    let senior_moved = grads(&|lp: Tensor<2>, old| (lp.clone().mask_where(one.clone(), lp * 7.0 + 3.0), old));
    assert_ne!(plain, senior_moved);
}

use burn::optim::GradientsParams;

struct Collect<'a> {
    grads: &'a GradientsParams,
    out: &'a mut Vec<f32>,
}

impl ModuleVisitor for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.get::<D>(param.id) {
            self.out.extend(g.try_into_vec_as::<f32>().unwrap());
        }
    }
}

#[test]
fn rewards_rise_under_grpo_and_trlvr() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    // Under TRLVR the junior writes about half the tokens (a quarter of them low), so the
    // team's reward tops out near 0.6; the senior alone (validation) can reach 1.
    let word = WordBoundary::new(0.5, 32).unwrap();
    let solo = Solo::senior();
    let arms: [(&str, &dyn HandoffSchedule); 2] = [("grpo", &solo), ("trlvr", &word)];
    for (arm, schedule) in arms {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let config = TrainConfig { lr: 1e-2, validate_every: 0, validation_samples: 8, ..config(30) };
        let mut trainer =
            Trainer::new(config, senior, &junior, schedule, &grpo, task(&train, &classes)).unwrap();
        let solo_before = trainer.validate().unwrap().unwrap();
        let rewards: Vec<f64> = (0..30).map(|_| trainer.step().unwrap().metrics.reward_mean).collect();
        let solo_after = trainer.validate().unwrap().unwrap();
        // Step 1's rollouts come from the untouched base.
        let late = rewards[25..].iter().sum::<f64>() / 5.0;
        assert!(late > rewards[0] + 0.2, "{arm}: reward {:.3} -> {late:.3}: {rewards:?}", rewards[0]);
        assert!(solo_after > solo_before + 0.4, "{arm}: solo pass@1 {solo_before:.3} -> {solo_after:.3}");
    }
}

#[test]
fn a_resumed_run_repeats_the_uninterrupted_one() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let make = || {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        Trainer::new(config(5), senior, &junior, &word, &grpo, task(&train, &classes)).unwrap()
    };
    let whole = RunDir::open(temp_dir("whole")).unwrap();
    let mut straight = make();
    straight.fit(&whole, &mut |_| {}, &mut |_| {}).unwrap();

    // A run that died after step 3 had written its metrics line but before step 3's
    // checkpoint was complete: a checkpoint at 2, metrics up to 3, a half-written folder.
    let split = RunDir::open(temp_dir("split")).unwrap();
    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
    let mut first = Trainer::new(config(3), senior, &junior, &word, &grpo, task(&train, &classes)).unwrap();
    first.fit(&split, &mut |_| {}, &mut |_| {}).unwrap();
    let done = split.checkpoint_dir(3);
    std::fs::rename(&done, done.with_file_name("step-000003.tmp")).unwrap();
    let (step, dir) = split.checkpoints().unwrap().pop().unwrap();
    assert_eq!(step, 2);
    split.rewind(step).unwrap();
    assert_eq!(metrics(&split).len(), 2);
    assert!(!split.checkpoint_dir(3).with_file_name("step-000003.tmp").exists());
    let mut resumed = make().resume(&dir).unwrap();
    assert_eq!(resumed.state().step, 2);
    resumed.fit(&split, &mut |_| {}, &mut |_| {}).unwrap();

    let (a, b) = (metrics(&whole), metrics(&split));
    assert_eq!(a.iter().map(timeless).collect::<Vec<_>>(), b.iter().map(timeless).collect::<Vec<_>>());
    assert_eq!(params(straight.senior()), params(resumed.senior()), "weights bit for bit");
    // Kept: the last two checkpoints and the best by validation.
    let kept: Vec<usize> = whole.checkpoints().unwrap().into_iter().map(|(s, _)| s).collect();
    let best = straight.state().best.unwrap().0;
    let mut expected = vec![4, 5, best];
    expected.sort_unstable();
    expected.dedup();
    assert_eq!(kept, expected);
    for run in [whole, split] {
        let _ = std::fs::remove_dir_all(run.root());
    }
}

/// GRPO whose loss turns NaN from the `after`-th call on.
#[derive(Debug)]
struct NanAfter {
    grpo: Grpo,
    calls: AtomicUsize,
    after: usize,
}

impl Objective for NanAfter {
    fn name(&self) -> &str {
        "nan-after"
    }
    fn loss(&self, batch: &ObjectiveBatch) -> trlvr::Result<ObjectiveOutput> {
        let mut out = self.grpo.loss(batch)?;
        if self.calls.fetch_add(1, Ordering::SeqCst) >= self.after {
            out.loss = out.loss * f64::NAN;
            let mut metrics = Metrics::new();
            metrics.insert("loss".into(), f64::NAN);
            out.metrics = metrics;
        }
        Ok(out)
    }
}

#[test]
fn a_nan_loss_stops_the_run_and_keeps_the_last_checkpoint() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let solo = Solo::senior();
    // 4 prompts x 8 rows, micro-batches of at most 5 computed one at a time: 8 calls per
    // step (2 mini-batches of 16 rows, 4 micro-batches each, when no row is skipped); NaN
    // from the third step on.
    let settings = TrainConfig {
        skip_zero_advantage: false,
        checkpoint_every: 1,
        validate_every: 0,
        lanes: 1,
        ..config(5)
    };
    let nan =
        NanAfter { grpo: Grpo::new(GrpoConfig::default()).unwrap(), calls: AtomicUsize::new(0), after: 16 };
    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
    let mut trainer = Trainer::new(settings, senior, &junior, &solo, &nan, task(&train, &classes)).unwrap();
    let run = RunDir::open(temp_dir("nan")).unwrap();
    let err = trainer.fit(&run, &mut |_| {}, &mut |_| {}).unwrap_err();
    assert!(matches!(err, trlvr::Error::AtStep { step: 3, .. }), "{err}");
    assert!(err.to_string().contains("step 3") && err.to_string().contains("NaN"), "{err}");
    assert_eq!(metrics(&run).len(), 2);
    let (step, dir) = run.checkpoints().unwrap().pop().unwrap();
    assert_eq!(step, 2);
    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let reloaded = Trainer::new(config(5), senior, &junior, &solo, &grpo, task(&train, &classes))
        .unwrap()
        .resume(&dir)
        .unwrap();
    assert_eq!(reloaded.state().step, 2);
    assert_eq!(params(reloaded.senior()), params(trainer.senior()), "the senior kept step 2's weights");
    let _ = std::fs::remove_dir_all(run.root());
}

#[test]
fn a_checkpoint_of_another_architecture_is_refused() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let solo = Solo::senior();
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
    let trainer = Trainer::new(config(1), senior, &junior, &solo, &grpo, task(&train, &classes)).unwrap();
    let dir = temp_dir("arch").join("step-000000");
    trainer.save_checkpoint(&dir).unwrap();
    let other = fixture("llama-tiny", &Device::default().autodiff());
    let llama_junior = fixture("llama-tiny", &Device::default());
    let err = Trainer::new(config(1), other, &llama_junior, &solo, &grpo, task(&train, &classes))
        .unwrap()
        .resume(&dir)
        .unwrap_err()
        .to_string();
    assert!(err.contains("senior.bpk") && err.contains("architecture"), "{err}");
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}

#[test]
fn gradient_checkpointing_trains_the_same_and_must_match_the_device() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let plain = Device::default().autodiff();
    let checkpointing = plain.clone().gradient_checkpointing();
    let trained = |switch: bool, device: &Device| {
        let config = TrainConfig { gradient_checkpointing: switch, ..config(2) };
        let senior = fixture("qwen3-tiny-tied", device);
        let mut trainer =
            Trainer::new(config, senior, &junior, &word, &grpo, task(&train, &classes)).unwrap();
        let run = RunDir::open(temp_dir(&format!("ckpt-{switch}"))).unwrap();
        trainer.fit(&run, &mut |_| {}, &mut |_| {}).unwrap();
        let lines: Vec<StepMetrics> = metrics(&run).iter().map(timeless).collect();
        let _ = std::fs::remove_dir_all(run.root());
        (lines, params(trainer.senior()))
    };
    let (want, got) = (trained(false, &plain), trained(true, &checkpointing));
    assert_eq!(want.0, got.0, "metrics");
    let worst = want.1.iter().zip(&got.1).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst <= 1e-6, "weights after two steps differ by {worst}");
    // The switch and the senior's device must agree, both ways.
    for (switch, device) in [(true, &plain), (false, &checkpointing)] {
        let config = TrainConfig { gradient_checkpointing: switch, ..config(1) };
        let senior = fixture("qwen3-tiny-tied", device);
        let err = Trainer::new(config, senior, &junior, &word, &grpo, task(&train, &classes)).err().unwrap();
        assert!(err.to_string().contains("gradient_checkpointing"), "{err}");
    }
}

/// The decoder's per-layer checkpointing (`[senior] layer_checkpointing`) changes what
/// a training step keeps, not what it computes: two steps give the rollouts, losses,
/// gradient norms and updates of the plain run to rounding (its forward without a graph
/// takes Burn's fused softmax where autodiff composes one), with mixed precision too.
#[test]
fn per_layer_checkpointing_trains_the_same() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let device = Device::default().autodiff();
    let trained = |layers: bool, bf16: bool| {
        let mut senior = fixture("qwen3-tiny-tied", &device).with_layer_checkpointing(layers);
        if bf16 {
            senior = senior.with_compute_dtype(burn::tensor::DType::BF16);
        }
        let mut trainer =
            Trainer::new(config(2), senior, &junior, &word, &grpo, task(&train, &classes)).unwrap();
        let run = RunDir::open(temp_dir(&format!("layers-{layers}-{bf16}"))).unwrap();
        trainer.fit(&run, &mut |_| {}, &mut |_| {}).unwrap();
        let lines: Vec<StepMetrics> = metrics(&run).iter().map(timeless).collect();
        let _ = std::fs::remove_dir_all(run.root());
        assert!(trainer.senior().layer_checkpointing() == layers);
        (lines, params(trainer.senior()))
    };
    for bf16 in [false, true] {
        let (want, got) = (trained(false, bf16), trained(true, bf16));
        // The rollouts are the same tokens; the losses agree to rounding.
        for (w, g) in want.0.iter().zip(&got.0) {
            assert_eq!((w.reward_mean, w.senior_share), (g.reward_mean, g.senior_share), "bf16 {bf16}");
            assert!(
                (w.loss - g.loss).abs() <= 1e-5 * w.loss.abs().max(1.0),
                "bf16 {bf16}: {} vs {}",
                w.loss,
                g.loss
            );
        }
        // AdamW divides by each gradient's running scale, so a weight whose gradient is
        // ~0 moves by up to lr on rounding alone: compare the updates on average.
        let start = params(&fixture("qwen3-tiny-tied", &device));
        let mean =
            |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f32>() / a.len() as f32;
        let (moved, apart) = (mean(&want.1, &start), mean(&want.1, &got.1));
        eprintln!("bf16 {bf16}: mean update {moved:e}, mean difference {apart:e}");
        assert!(apart < 0.01 * moved, "bf16 {bf16}: weights differ by {apart} on average, moved {moved}");
        let norms = |m: &[StepMetrics]| m.iter().map(|m| m.grad_norm).collect::<Vec<_>>();
        for (w, g) in norms(&want.0).iter().zip(norms(&got.0)) {
            assert!((w - g).abs() <= 1e-4 * w.abs().max(1e-3), "bf16 {bf16}: gradient norms {w} vs {g}");
        }
    }
}

#[test]
fn f16_training_skips_overflowing_updates_and_resumes_with_its_loss_scale() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    // Large enough that the first f16 backward passes overflow.
    let initial = 2f64.powi(20);
    let make = |steps: usize| {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff())
            .with_compute_dtype(burn::tensor::DType::F16);
        let config =
            TrainConfig { loss_scaling: Some(LossScaling { initial, growth_interval: 3 }), ..config(steps) };
        Trainer::new(config, senior, &junior, &word, &grpo, task(&train, &classes)).unwrap()
    };
    let whole = RunDir::open(temp_dir("f16-whole")).unwrap();
    let mut straight = make(4);
    straight.fit(&whole, &mut |_| {}, &mut |_| {}).unwrap();
    let lines = metrics(&whole);
    let summary: Vec<(usize, Option<f64>, f64)> =
        lines.iter().map(|m| (m.skipped_updates, m.loss_scale, m.grad_norm)).collect();
    eprintln!("f16 steps (skipped updates, loss scale, gradient norm): {summary:?}");
    // Step 1 can make no more than two updates, so the scale has not grown yet: it halved
    // once per skipped update.
    let first = &lines[0];
    assert!(first.skipped_updates >= 1, "{summary:?}");
    assert_eq!(first.loss_scale, Some(initial / 2f64.powi(first.skipped_updates as i32)));
    // Once the scale is low enough updates go ahead (a step's norm is the mean over its
    // updates: 0 when all were skipped), with finite norms, and move the weights.
    assert!(lines[1..].iter().all(|m| m.grad_norm > 0.0), "{summary:?}");
    assert!(lines.iter().all(|m| m.grad_norm.is_finite() && m.loss.is_finite()));
    assert_ne!(params(straight.senior()), params(&fixture("qwen3-tiny-tied", &Device::default())));

    // The scale is part of the checkpoint: resumed at step 2, the run repeats the
    // uninterrupted one, skips and scales included.
    let split = RunDir::open(temp_dir("f16-split")).unwrap();
    make(2).fit(&split, &mut |_| {}, &mut |_| {}).unwrap();
    let (step, dir) = split.checkpoints().unwrap().pop().unwrap();
    assert_eq!(step, 2);
    let mut resumed = make(4).resume(&dir).unwrap();
    assert_eq!(resumed.state().loss_scale.map(|s| s.scale), lines[1].loss_scale);
    resumed.fit(&split, &mut |_| {}, &mut |_| {}).unwrap();
    let (a, b) = (metrics(&whole), metrics(&split));
    assert_eq!(a.iter().map(timeless).collect::<Vec<_>>(), b.iter().map(timeless).collect::<Vec<_>>());
    assert_eq!(params(straight.senior()), params(resumed.senior()), "weights bit for bit");
    for run in [whole, split] {
        let _ = std::fs::remove_dir_all(run.root());
    }
}

/// In f32 a power-of-two scale is exact: multiplied into the objective's gradient and
/// divided out of the parameters' before the clip, it leaves the run as it was, bit for
/// bit. A scale not divided out, or divided twice, changes the clipped gradients.
#[test]
fn a_power_of_two_loss_scale_changes_nothing_in_f32() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let trained = |loss_scaling: Option<LossScaling>, clip: f64| {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let config = TrainConfig { loss_scaling, grad_clip: clip, checkpoint_every: 0, ..config(3) };
        let mut trainer =
            Trainer::new(config, senior, &junior, &word, &grpo, task(&train, &classes)).unwrap();
        let run = RunDir::open(temp_dir(&format!("scale-{}-{clip}", loss_scaling.is_some()))).unwrap();
        trainer.fit(&run, &mut |_| {}, &mut |_| {}).unwrap();
        let lines: Vec<StepMetrics> =
            metrics(&run).iter().map(|m| StepMetrics { loss_scale: None, ..timeless(m) }).collect();
        let _ = std::fs::remove_dir_all(run.root());
        (lines, params(trainer.senior()))
    };
    let scaled = Some(LossScaling { initial: 1024.0, growth_interval: 2 });
    // With the clip on (norms of ~5 against 1) and off.
    for clip in [1.0, 0.0] {
        let (plain, with_scale) = (trained(None, clip), trained(scaled, clip));
        assert!(plain.0.iter().all(|m| m.grad_norm > 0.0));
        assert_eq!(plain.0, with_scale.0, "clip {clip}");
        assert_eq!(plain.1, with_scale.1, "clip {clip}: weights bit for bit");
    }
}

// The method as written (method.md §3-4) in the update: an optimizer step on every
// mini-batch, the junior-KL metric whatever the micro-batching, π_old of a later
// mini-batch taken before the step's updates, and the refusal of junior-KL under a
// schedule that lets the junior write.

/// Every answer earns 0: every advantage is 0, every mini-batch empty.
#[derive(Debug)]
struct Nothing;

impl Verifier for Nothing {
    fn verify(&self, _: &str, _: &str) -> Reward {
        Reward { value: 0.0, correct: false, reason: String::new() }
    }
}

/// A task without validation, judged by `verifier`.
fn task_judged_by<'a>(
    train: &'a [Example],
    classes: &'a TokenClasses,
    verifier: &'a dyn Verifier,
) -> Task<'a> {
    Task { train, validation: &[], verifier, validation_verifier: verifier, text: &text, classes }
}

/// One step of 16 rows in two mini-batches.
fn one_step() -> TrainConfig {
    TrainConfig {
        steps: 1,
        prompts_per_step: 4,
        group_size: 4,
        mini_batch_prompts: 2,
        micro_batch_rows: 8,
        max_new_tokens: 8,
        lr: 1e-3,
        validate_every: 0,
        seed: 3,
        ..TrainConfig::default()
    }
}

#[test]
fn an_empty_mini_batch_still_steps_adamw_unless_told_to_skip() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    let run = |skip: bool| {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let before = params(&senior);
        let config = TrainConfig { skip_empty_updates: skip, weight_decay: 0.5, ..one_step() };
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &grpo, task_judged_by(&train, &classes, &Nothing))
                .unwrap();
        let metrics = trainer.step().unwrap().metrics;
        (before, params(trainer.senior()), metrics)
    };
    // Two mini-batches, both without loss: two AdamW steps on a zero gradient. Adam's
    // move is 0/(0 + ε) = 0, so only the decoupled weight decay moves each weight, twice.
    let (before, after, m) = run(false);
    assert_eq!((m.empty_updates, m.rows_updated, m.loss, m.grad_norm), (2, 0, 0.0, 0.0));
    let factor = (1.0 - 1e-3 * 0.5_f64).powi(2);
    let worst = before
        .iter()
        .zip(&after)
        .map(|(&b, &a)| (f64::from(a) - f64::from(b) * factor).abs() / f64::from(b).abs().max(1e-6))
        .fold(0.0, f64::max);
    assert!(worst < 1e-5, "every weight decays by (1 - lr·wd)² exactly (worst relative error {worst:e})");
    assert_ne!(before, after);
    // The switch keeps the old behaviour: no step, the weights bit for bit.
    let (before, after, m) = run(true);
    assert_eq!(m.empty_updates, 2);
    assert_eq!(before, after);
}

#[test]
fn the_junior_kl_metric_does_not_depend_on_the_micro_batching() {
    let (classes, train) = (classes(), examples());
    // Another model as junior, so the KL is far from 0.
    let junior = fixture("qwen3-tiny-untied", &Device::default());
    let kl = JuniorKl::new(GrpoConfig::default(), 0.1).unwrap();
    let solo = Solo::senior();
    // One mini-batch of all 16 rows, so every KL is measured before any update.
    let step = |rows: usize| {
        let config = TrainConfig { mini_batch_prompts: 4, micro_batch_rows: rows, ..one_step() };
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &kl, task_judged_by(&train, &classes, &LowIds))
                .unwrap();
        trainer.step().unwrap().metrics
    };
    let whole = step(16);
    let kl_whole = whole.kl.unwrap();
    assert!(kl_whole > 0.01, "a real distance: {kl_whole}");
    for rows in [1, 3, 5] {
        let m = step(rows);
        let kl = m.kl.unwrap();
        assert!(
            (kl - kl_whole).abs() <= 1e-5 * kl_whole,
            "{rows} rows per micro-batch: kl {kl} vs {kl_whole}"
        );
        assert!(
            (m.loss - whole.loss).abs() <= 1e-5 * whole.loss.abs().max(1e-3),
            "{rows}: {} vs {}",
            m.loss,
            whole.loss
        );
    }
}

/// Micro-batch parts computed at once on Rayon's threads (`lanes`), each differentiating
/// its own leaves of the senior, train as the same parts one at a time: the same
/// weights after a step (two mini-batches: π_old recomputed for the second; the junior's
/// log-probs for the KL term) up to float summation order.
#[test]
fn lanes_train_as_one_pass_at_a_time() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-untied", &Device::default());
    let kl = JuniorKl::new(GrpoConfig::default(), 0.1).unwrap();
    let solo = Solo::senior();
    let step = |lanes: usize, micro_batch_rows: usize| {
        let config = TrainConfig {
            lanes,
            micro_batch_rows,
            lr: 5e-2,
            recompute_old_log_probs: true,
            skip_zero_advantage: false,
            ..one_step()
        };
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &kl, task_judged_by(&train, &classes, &LowIds))
                .unwrap();
        let m = trainer.step().unwrap().metrics;
        (params(trainer.senior()), m)
    };
    // 8 rows per mini-batch: 3 lanes of rows 3 + 3 + 2, against the same parts in turn.
    let (alone, m1) = step(1, 3);
    let (together, m3) = step(3, 8);
    assert!(m1.clip_frac > 0.0 && m1.kl.unwrap() > 0.01, "a step that exercises π_old and the KL: {m1:?}");
    let worst = alone.iter().zip(&together).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "largest weight difference {worst:e}");
    assert!((m1.loss - m3.loss).abs() <= 1e-5 * m1.loss.abs().max(1e-3), "{} vs {}", m1.loss, m3.loss);
    assert_eq!(m1.clip_frac, m3.clip_frac);
    // The step moved the weights, so agreeing is not agreeing on nothing.
    let start = params(&fixture("qwen3-tiny-tied", &Device::default()));
    assert!(start.iter().zip(&alone).any(|(a, b)| (a - b).abs() > 1e-3));
}

#[test]
fn a_later_mini_batch_scores_its_ratio_against_the_policy_before_the_steps_updates() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    // A large step on the first mini-batch moves the policy; the second mini-batch's
    // ratios π_θ/π_old then leave [0.8, 1.2] on some tokens. Were π_old taken after the
    // update (π_θ itself), every ratio would be 1 and nothing would clip.
    let clip = |mini_batch_prompts: usize| {
        let config = TrainConfig { lr: 5e-2, mini_batch_prompts, ..one_step() };
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &grpo, task_judged_by(&train, &classes, &LowIds))
                .unwrap();
        trainer.step().unwrap().metrics.clip_frac
    };
    assert_eq!(clip(4), 0.0, "one mini-batch: π_old is π_θ, every ratio 1");
    let two = clip(2);
    assert!(two > 0.05, "the second mini-batch clips: {two}");
}

/// π_old of the second mini-batch from the rollouts' recorded log-probs (the default) and
/// from a full pass after them give the same step (clipped tokens, loss, gradient norm)
/// up to the rounding between cached decoding and a full pass.
#[test]
fn pi_old_recorded_by_the_rollouts_equals_pi_old_scored_again() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    let step = |recompute_old_log_probs: bool| {
        let config = TrainConfig { lr: 5e-2, mini_batch_prompts: 2, recompute_old_log_probs, ..one_step() };
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &grpo, task_judged_by(&train, &classes, &LowIds))
                .unwrap();
        trainer.step().unwrap().metrics
    };
    let (recorded, scored) = (step(false), step(true));
    assert!(recorded.clip_frac > 0.05, "the second mini-batch clips: {}", recorded.clip_frac);
    let close = |a: f64, b: f64, what: &str| {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1e-3), "{what}: recorded {a}, scored again {b}");
    };
    close(recorded.clip_frac, scored.clip_frac, "clip fraction");
    close(recorded.loss, scored.loss, "loss");
    close(recorded.grad_norm, scored.grad_norm, "gradient norm");
}

#[test]
fn the_library_refuses_junior_kl_under_a_schedule_where_the_junior_writes() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let kl = JuniorKl::new(GrpoConfig::default(), 0.1).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let make = |schedule: &dyn HandoffSchedule| {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        Trainer::new(one_step(), senior, &junior, schedule, &kl, task_judged_by(&train, &classes, &LowIds))
            .map(|_| ())
    };
    let err = make(&word).unwrap_err().to_string();
    assert!(err.contains("junior-kl") && err.contains("\"word\"") && err.contains("solo"), "{err}");
    assert!(make(&Solo::junior()).is_err(), "the junior alone is not the senior's samples");
    assert!(make(&Solo::senior()).is_ok());
    // By name through the registry, as a recipe or plugin host builds it.
    let registry = Registry::with_linked();
    let solo = registry.schedule("solo", &serde_json::Value::Null).unwrap();
    assert!(make(&solo).is_ok());
    let word = registry.schedule("word", &serde_json::Value::Null).unwrap();
    assert!(make(&word).is_err());
    // A GRPO objective without a reference trains under any schedule.
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
    assert!(
        Trainer::new(one_step(), senior, &junior, &word, &grpo, task_judged_by(&train, &classes, &LowIds))
            .is_ok()
    );
}

/// An objective whose loss ignores the log-probs.
#[derive(Debug)]
struct Constant;

impl Objective for Constant {
    fn name(&self) -> &str {
        "constant"
    }
    fn loss(&self, batch: &ObjectiveBatch) -> trlvr::Result<ObjectiveOutput> {
        let loss = Tensor::<1>::ones([1], &batch.log_probs.device());
        Ok(ObjectiveOutput { loss, metrics: Metrics::from([("loss".to_string(), 1.0)]) })
    }
}

/// GRPO, but its metrics leave out `senior_tokens`, as a plugin's may.
#[derive(Debug)]
struct Unweighted(Grpo);

impl Objective for Unweighted {
    fn name(&self) -> &str {
        "unweighted"
    }
    fn loss(&self, batch: &ObjectiveBatch) -> trlvr::Result<ObjectiveOutput> {
        let mut out = self.0.loss(batch)?;
        out.metrics.remove("senior_tokens");
        Ok(out)
    }
}

/// GRPO's loss times zero: it depends on the log-probs, yet no gradient reaches them.
#[derive(Debug)]
struct Zeroed(Grpo);

impl Objective for Zeroed {
    fn name(&self) -> &str {
        "zeroed"
    }
    fn loss(&self, batch: &ObjectiveBatch) -> trlvr::Result<ObjectiveOutput> {
        let mut out = self.0.loss(batch)?;
        out.loss = out.loss * 0.0;
        Ok(out)
    }
}

/// Failures that used to pass silently: a response that cannot be decoded (once a reward
/// of 0), a loss that does not reach the log-probs (once a zero gradient AdamW stepped
/// on), an objective that reports no `senior_tokens` (once its metrics weighted by 0), a
/// loss whose gradient is all zero (counted in the step's metrics).
#[test]
fn silent_failures_are_loud() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let solo = Solo::senior();
    let config = TrainConfig { lr: 5e-2, skip_zero_advantage: false, ..one_step() };
    let trainer = |objective: &'static dyn Objective, task: Task<'_>| {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        Trainer::new(config.clone(), senior, &junior, &solo, objective, task).unwrap().step()
    };
    // 1. Undecodable ids: the step fails, naming them.
    struct Broken;
    impl trlvr::train::Detokenize for Broken {
        fn text(&self, ids: &[TokenId]) -> trlvr::Result<String> {
            Err(trlvr::Error::Tokenizer { path: "<test>".into(), message: format!("cannot decode {ids:?}") })
        }
    }
    let grpo: &'static Grpo = Box::leak(Box::new(Grpo::new(GrpoConfig::default()).unwrap()));
    let broken = Task { text: &Broken, ..task_judged_by(&train, &classes, &LowIds) };
    let err = trainer(grpo, broken).unwrap_err().to_string();
    assert!(err.contains("cannot decode"), "{err}");
    // 2. A loss without the log-probs: an error naming the objective.
    let err = trainer(&Constant, task_judged_by(&train, &classes, &LowIds)).unwrap_err().to_string();
    assert!(err.contains("constant") && err.contains("does not depend on the log-probs"), "{err}");
    // 3. Metrics weighted by the senior tokens the trainer counts itself.
    let unweighted: &'static Unweighted =
        Box::leak(Box::new(Unweighted(Grpo::new(GrpoConfig::default()).unwrap())));
    let want = trainer(grpo, task_judged_by(&train, &classes, &LowIds)).unwrap().metrics;
    let got = trainer(unweighted, task_judged_by(&train, &classes, &LowIds)).unwrap().metrics;
    assert!(want.clip_frac > 0.0, "the check can fail: {}", want.clip_frac);
    assert_eq!((got.clip_frac, got.loss), (want.clip_frac, want.loss));
    // 4. A loss whose gradient is all zero: every update that carried loss is counted.
    assert_eq!(want.zero_gradient_updates, 0);
    let zeroed: &'static Zeroed = Box::leak(Box::new(Zeroed(Grpo::new(GrpoConfig::default()).unwrap())));
    let got = trainer(zeroed, task_judged_by(&train, &classes, &LowIds)).unwrap().metrics;
    assert!(got.rows_updated > 0, "rows carried loss");
    assert_eq!(got.grad_norm, 0.0);
    assert!(got.zero_gradient_updates >= 1);
}

#[global_allocator]
static GUARD: trlvr::testing::fuzz::AllocationGuard = trlvr::testing::fuzz::AllocationGuard;

/// Each file of a checkpoint replaced by hostile bytes, its checksum recomputed (a writer
/// gone wrong, not a damaged disk, which the checksums catch): `resume` must load it or
/// fail with an error that names the checkpoint, never panic.
#[test]
fn fuzz_checkpoint_files() {
    use trlvr::testing::fuzz::{Target, fuzz, names};
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    let make = || {
        let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
        Trainer::new(config(1), senior, &junior, &solo, &grpo, task(&train, &classes)).unwrap()
    };
    let saved = temp_dir("fuzz-checkpoint-saved");
    let mut trainer = make();
    trainer.step().unwrap();
    trainer.save_checkpoint(&saved).unwrap();
    let work = temp_dir("fuzz-checkpoint");
    let sums = |dir: &std::path::Path| {
        let mut sums = serde_json::Map::new();
        for name in ["senior.bpk", "optimizer.bpk", "state.json"] {
            let path = dir.join(name);
            let hash = trlvr::data::hash_files(std::slice::from_ref(&path)).unwrap();
            let size = std::fs::metadata(&path).unwrap().len();
            sums.insert(name.into(), serde_json::json!([size, format!("{hash:016x}")]));
        }
        serde_json::to_string(&sums).unwrap()
    };
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&sums(&saved)).unwrap(),
        serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(saved.join("checksums.json")).unwrap()
        )
        .unwrap(),
        "the checksums are recomputed as the trainer writes them"
    );
    for (file, header) in
        [("state.json", 0), ("senior.bpk", 4096), ("optimizer.bpk", 4096), ("checksums.json", 0)]
    {
        let seed = std::fs::read(saved.join(file)).unwrap();
        let name = format!("checkpoint-{}", file.replace('.', "-"));
        let target = Target::new(name, vec![seed]).header(header).tokens(&[
            "step",
            "rng",
            "best",
            "loss_scale",
            "senior.bpk",
            "optimizer.bpk",
            "state.json",
        ]);
        fuzz(target, |bytes| {
            let _ = std::fs::remove_dir_all(&work);
            std::fs::create_dir_all(&work).unwrap();
            for f in ["senior.bpk", "optimizer.bpk", "state.json"] {
                std::fs::copy(saved.join(f), work.join(f)).unwrap();
            }
            std::fs::write(work.join(file), bytes).unwrap();
            if file != "checksums.json" {
                std::fs::write(work.join("checksums.json"), sums(&work)).unwrap();
            }
            match make().resume(&work) {
                Ok(_) => Ok(()),
                Err(e) => names(&e, &work),
            }
        });
    }
    for dir in [saved, work] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Training ranks as threads ([`Threads`]): `n` trainers, one per rank, each with its own
/// senior; rank 0 writes `run`. Returns the final weights of every rank and how many
/// rollouts each rank rolled out during the steps.
fn fit_ranks(
    n: usize,
    config: &TrainConfig,
    schedule: &dyn HandoffSchedule,
    objective: &dyn Objective,
    run: &RunDir,
) -> Vec<(Vec<f32>, usize)> {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let ranks = Threads::group(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .iter()
            .map(|rank| {
                let (classes, train, junior) = (&classes, &train, &junior);
                s.spawn(move || {
                    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
                    let mut trainer = Trainer::new(
                        config.clone(),
                        senior,
                        junior,
                        schedule,
                        objective,
                        task(train, classes),
                    )
                    .unwrap()
                    .with_collective(rank)
                    .unwrap();
                    let mut rows = 0;
                    let mut count = |p: trlvr::train::FitProgress| {
                        if let trlvr::train::FitProgress::Rollout(p) = p
                            && p.steps == 1
                        {
                            rows += p.rows;
                        }
                    };
                    trainer.fit(run, &mut |_| {}, &mut count).unwrap();
                    (params(trainer.senior()), rows)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn two_ranks_train_as_one_process() {
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let kl = JuniorKl::new(GrpoConfig::default(), 0.05).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let solo = Solo::senior();
    let arms: [(&str, &dyn HandoffSchedule, &dyn Objective); 2] =
        [("trlvr", &word, &grpo), ("kl-reg", &solo, &kl)];
    for (arm, schedule, objective) in arms {
        // Two mini-batches a step, micro-batches that cut groups, a batch-wide advantage.
        let config =
            TrainConfig { advantage: AdvantageNorm::BatchStd, sync_check_every: 1, lr: 1e-4, ..config(3) };
        let (one, two) = (
            RunDir::open(temp_dir(&format!("one-{arm}"))).unwrap(),
            RunDir::open(temp_dir(&format!("two-{arm}"))).unwrap(),
        );
        let single = fit_ranks(1, &config, schedule, objective, &one);
        let pair = fit_ranks(2, &config, schedule, objective, &two);
        let (a, b) = (metrics(&one), metrics(&two));
        assert_eq!(a.len(), 3);
        for (x, y) in a.iter().zip(&b) {
            // Rollouts and rewards exactly; the update up to the order of sums.
            let exact = |m: &StepMetrics| {
                (
                    m.reward_mean,
                    m.accuracy,
                    m.response_len_mean,
                    m.senior_share,
                    m.rows_updated,
                    m.validation_pass1,
                )
            };
            assert_eq!(exact(x), exact(y), "{arm} step {}", x.step);
            for (name, p, q) in [
                ("loss", x.loss, y.loss),
                ("grad_norm", x.grad_norm, y.grad_norm),
                ("clip_frac", x.clip_frac, y.clip_frac),
                ("kl", x.kl.unwrap_or(0.0), y.kl.unwrap_or(0.0)),
            ] {
                // The loss sums advantage-weighted terms of unit scale that nearly cancel: its
                // rounding is relative to that scale, not to the sum.
                assert!((p - q).abs() <= 1e-5 * p.abs().max(0.1), "{arm} step {} {name}: {p} vs {q}", x.step);
            }
        }
        assert!(a.iter().any(|m| m.loss != 0.0), "{arm}: some update carried loss");
        let weights = &single[0].0;
        let initial = params(&fixture("qwen3-tiny-tied", &Device::default()));
        for (rank, (w, rows)) in pair.iter().enumerate() {
            // Adam divides by the gradients' scale, so sums in another order move a weight
            // by up to ~lr; as a whole the weights agree to float rounding.
            let norm = |v: &mut dyn Iterator<Item = f32>| v.map(|x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            let diff =
                norm(&mut weights.iter().zip(w).map(|(p, q)| p - q)) / norm(&mut weights.iter().copied());
            let worst =
                weights.iter().zip(w).map(|(p, q)| (p - q).abs() / p.abs().max(1e-2)).fold(0.0f32, f32::max);
            assert!(
                diff <= 1e-5 && worst <= 1e-4,
                "{arm} rank {rank}: weights differ by {diff:e} (worst {worst:e})"
            );
            assert_ne!(weights, &initial, "{arm}: the weights moved");
            assert!(
                single[0].1 == 3 * 32 && *rows * 2 == single[0].1,
                "{arm} rank {rank} rolled out {rows} rows"
            );
        }
        assert!(
            !two.checkpoints().unwrap().is_empty() && pair[0].0 == pair[1].0,
            "{arm}: ranks hold the same weights"
        );
        for run in [one, two] {
            let _ = std::fs::remove_dir_all(run.root());
        }
    }
}

#[test]
fn ranks_that_cannot_split_or_do_not_match_are_refused_on_every_rank() {
    let (classes, train) = (classes(), examples());
    let junior = fixture("qwen3-tiny-tied", &Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    // 3 ranks cannot share mini-batches of 2 prompt groups.
    let ranks = Threads::group(3);
    let senior = fixture("qwen3-tiny-tied", &Device::default().autodiff());
    let trainer = Trainer::new(config(1), senior, &junior, &solo, &grpo, task(&train, &classes)).unwrap();
    let error = trainer.with_collective(&ranks[0]).unwrap_err().to_string();
    assert!(error.contains("3 ranks cannot share mini-batches of 2"), "{error}");
    // Rank 1 has other weights, then other settings: both ranks fail, naming rank 1.
    for other in ["weights", "settings"] {
        let ranks = Threads::group(2);
        let errors: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = ranks
                .iter()
                .map(|rank| {
                    let (classes, train, junior, grpo, solo) = (&classes, &train, &junior, &grpo, &solo);
                    s.spawn(move || {
                        let differs = rank.rank() == 1;
                        let name = if differs && other == "weights" {
                            "qwen3-tiny-untied"
                        } else {
                            "qwen3-tiny-tied"
                        };
                        let senior = fixture(name, &Device::default().autodiff());
                        let seed = if differs && other == "settings" { 12 } else { 11 };
                        let trainer = Trainer::new(
                            TrainConfig { seed, ..config(1) },
                            senior,
                            junior,
                            solo,
                            grpo,
                            task(train, classes),
                        )
                        .unwrap();
                        trainer.with_collective(rank).unwrap_err().to_string()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for e in errors {
            assert!(e.contains("rank(s) [1] of 2 have a different"), "{other}: {e}");
        }
    }
}
