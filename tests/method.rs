//! The method as written (method.md §3-4) in the trainer's update, on a tiny Qwen3: an
//! optimizer step on every mini-batch, the junior-KL metric whatever the micro-batching,
//! π_old of a later mini-batch taken before the step's updates, and the refusal of a
//! junior-KL objective under a schedule that lets the junior write.

use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;
use trlvr::plugin::Registry;
use trlvr::prelude::*;
use trlvr::train::{Example, Task, TrainConfig, Trainer};
use trlvr_junior_kl::JuniorKl;
use trlvr_models::{Decoder, load_hf_dir};

fn fixture(device: &Device) -> Decoder {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/trlvr-models/tests/fixtures/qwen3-tiny-tied");
    load_hf_dir(dir, device).unwrap().0
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

/// The reward is the fraction of response tokens below 64: rows of a group differ.
#[derive(Debug)]
struct LowIds;

impl Verifier for LowIds {
    fn verify(&self, response: &str, _: &str) -> Reward {
        let ids: Vec<u32> = response.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        let value = ids.iter().filter(|&&t| t < 64).count() as f32 / ids.len().max(1) as f32;
        Reward { value, correct: value > 0.5, reason: String::new() }
    }
}

/// Every answer earns 0: every advantage is 0, every mini-batch empty.
#[derive(Debug)]
struct Nothing;

impl Verifier for Nothing {
    fn verify(&self, _: &str, _: &str) -> Reward {
        Reward { value: 0.0, correct: false, reason: String::new() }
    }
}

fn examples() -> Vec<Example> {
    [vec![1, 2, 3], vec![9, 8], vec![30, 31, 32, 33], vec![5]]
        .into_iter()
        .map(|prompt| Example { prompt, reference: String::new() })
        .collect()
}

fn task<'a>(train: &'a [Example], classes: &'a TokenClasses, verifier: &'a dyn Verifier) -> Task<'a> {
    Task { train, validation: &[], verifier, validation_verifier: verifier, text: &text, classes }
}

fn config() -> TrainConfig {
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

#[test]
fn an_empty_mini_batch_still_steps_adamw_unless_told_to_skip() {
    let (classes, train) = (classes(), examples());
    let junior = fixture(&Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    let run = |skip: bool| {
        let senior = fixture(&Device::default().autodiff());
        let before = params(&senior);
        let config = TrainConfig { skip_empty_updates: skip, weight_decay: 0.5, ..config() };
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &grpo, task(&train, &classes, &Nothing)).unwrap();
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
    let junior = load_hf_dir(
        concat!(env!("CARGO_MANIFEST_DIR"), "/trlvr-models/tests/fixtures/qwen3-tiny-untied"),
        &Device::default(),
    )
    .unwrap()
    .0;
    let kl = JuniorKl::new(GrpoConfig::default(), 0.1).unwrap();
    let solo = Solo::senior();
    // One mini-batch of all 16 rows, so every KL is measured before any update.
    let step = |rows: usize| {
        let config = TrainConfig { mini_batch_prompts: 4, micro_batch_rows: rows, ..config() };
        let senior = fixture(&Device::default().autodiff());
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &kl, task(&train, &classes, &LowIds)).unwrap();
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

#[test]
fn a_later_mini_batch_scores_its_ratio_against_the_policy_before_the_steps_updates() {
    let (classes, train) = (classes(), examples());
    let junior = fixture(&Device::default());
    let grpo = Grpo::new(GrpoConfig::default()).unwrap();
    let solo = Solo::senior();
    // A large step on the first mini-batch moves the policy; the second mini-batch's
    // ratios π_θ/π_old then leave [0.8, 1.2] on some tokens. Were π_old taken after the
    // update (π_θ itself), every ratio would be 1 and nothing would clip.
    let clip = |mini_batch_prompts: usize| {
        let config = TrainConfig { lr: 5e-2, mini_batch_prompts, ..config() };
        let senior = fixture(&Device::default().autodiff());
        let mut trainer =
            Trainer::new(config, senior, &junior, &solo, &grpo, task(&train, &classes, &LowIds)).unwrap();
        trainer.step().unwrap().metrics.clip_frac
    };
    assert_eq!(clip(4), 0.0, "one mini-batch: π_old is π_θ, every ratio 1");
    let two = clip(2);
    assert!(two > 0.05, "the second mini-batch clips: {two}");
}

#[test]
fn the_library_refuses_junior_kl_under_a_schedule_where_the_junior_writes() {
    let (classes, train) = (classes(), examples());
    let junior = fixture(&Device::default());
    let kl = JuniorKl::new(GrpoConfig::default(), 0.1).unwrap();
    let word = WordBoundary::new(0.5, 32).unwrap();
    let make = |schedule: &dyn HandoffSchedule| {
        let senior = fixture(&Device::default().autodiff());
        Trainer::new(config(), senior, &junior, schedule, &kl, task(&train, &classes, &LowIds)).map(|_| ())
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
    let senior = fixture(&Device::default().autodiff());
    assert!(Trainer::new(config(), senior, &junior, &word, &grpo, task(&train, &classes, &LowIds)).is_ok());
}
