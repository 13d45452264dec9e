//! `cargo test -F dynamic`: with the host linked against the shared runtime
//! (`trlvr-dylib`), an objective plugin loaded by path computes on the host's autodiff
//! tensors: the junior-KL plugin loaded from its library gives the same losses and
//! gradients as the same crate linked statically, and trains.
#![cfg(feature = "dynamic")]

use std::path::PathBuf;

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::plugin::{Origin, Registry};
use trlvr::prelude::*;
use trlvr::testing::{loss_and_grad, rollout_case};
use trlvr::train::{Example, Task, TrainConfig, Trainer};
// The test binary itself must take trlvr from the shared library, as the host does.
use trlvr_dylib as _;
use trlvr_junior_kl::JuniorKl;

/// A library cargo built into target/<profile>/deps/.
fn library(crate_name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let name = format!("{}{crate_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let path = deps.join(&name);
    assert!(path.exists(), "no {name} in {}", deps.display());
    path
}

fn loaded() -> Registry {
    let mut registry = Registry::default();
    assert_eq!(registry.load(library("trlvr_junior_kl")).unwrap(), vec!["junior-kl".to_string()]);
    registry
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_loaded_objective_equals_the_linked_one(case in rollout_case(4, 6), beta in 0.0f64..0.5) {
        let registry = loaded();
        let device = Device::default();
        let plugin = registry.objective("junior-kl", &serde_json::json!({ "beta": beta })).unwrap();
        let linked = JuniorKl::new(GrpoConfig::default(), beta).unwrap();
        let (a, ga) = loss_and_grad(&plugin, &case, &device).unwrap();
        let (b, gb) = loss_and_grad(&linked, &case, &device).unwrap();
        // Equal values (bit patterns may differ in the sign of a zero loss: the plugin's
        // code is compiled separately and may sum in another order).
        prop_assert_eq!(a, b);
        prop_assert_eq!(ga, gb);
        // β = 0 is plain GRPO.
        let zero = registry.objective("junior-kl", &serde_json::json!({ "beta": 0.0 })).unwrap();
        let grpo = Grpo::new(GrpoConfig::default()).unwrap();
        let (z, gz) = loss_and_grad(&zero, &case, &device).unwrap();
        let (g, gg) = loss_and_grad(&grpo, &case, &device).unwrap();
        prop_assert_eq!(z, g);
        prop_assert_eq!(gz, gg);
    }
}

#[derive(Debug)]
struct LastIs2;

impl Verifier for LastIs2 {
    fn verify(&self, response: &str, _: &str) -> Reward {
        let correct = response.ends_with('2');
        Reward { value: f32::from(u8::from(correct)), correct, reason: String::new() }
    }
}

#[test]
fn a_training_step_with_the_loaded_objective_equals_the_linked_one() {
    let registry = loaded();
    let plugin = registry.objective("junior-kl", &serde_json::json!({ "beta": 0.05 })).unwrap();
    let linked = JuniorKl::new(GrpoConfig::default(), 0.05).unwrap();
    let text = |ids: &[TokenId]| ids.iter().map(ToString::to_string).collect::<String>();
    let classes = TokenClasses::from_texts(&[" a", " b", "c", "<eos>"], &[3]).unwrap();
    let train = vec![Example { prompt: vec![0], reference: String::new() }];
    let task = Task {
        train: &train,
        validation: &[],
        verifier: &LastIs2,
        validation_verifier: &LastIs2,
        text: &text,
        classes: &classes,
    };
    let config = TrainConfig {
        steps: 2,
        prompts_per_step: 2,
        mini_batch_prompts: 1,
        group_size: 8,
        max_new_tokens: 6,
        lr: 0.05,
        ..TrainConfig::default()
    };
    let solo = Solo::senior();
    let table = |device: &Device| {
        device.seed(1);
        BigramLm::random(4, 0.5, device)
    };
    let junior = table(&Device::default());
    let mut tables = Vec::new();
    for objective in [&plugin as &dyn Objective, &linked] {
        let mut trainer = Trainer::new(
            config.clone(),
            table(&Device::default().autodiff()),
            &junior,
            &solo,
            objective,
            task,
        )
        .unwrap();
        for _ in 0..2 {
            let m = trainer.step().unwrap().metrics;
            assert!(m.loss.is_finite() && m.kl.is_some());
        }
        tables.push(trainer.senior().table.val().try_into_vec_as::<f32>().unwrap());
    }
    assert_eq!(tables[0], tables[1]);
}

#[test]
fn a_library_without_the_entry_point_is_refused_and_a_good_one_still_loads() {
    let mut registry = Registry::default();
    let err = registry.load(library("trlvr_dylib")).unwrap_err().to_string();
    assert!(err.contains("libtrlvr_dylib") && err.contains("TRLVR_PLUGIN"), "{err}");
    registry.load(library("trlvr_junior_kl")).unwrap();
    assert!(
        registry
            .list()
            .iter()
            .any(|(k, n, _, o)| *k == "objective" && *n == "junior-kl" && matches!(o, Origin::Library(_)))
    );
}
