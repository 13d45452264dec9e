//! `cargo test -F dynamic`: with the host linked against the shared runtime
//! (`trlvr-dylib`), an objective plugin loaded by path computes on the host's autodiff
//! tensors: the junior-KL plugin loaded from its library gives the same losses and
//! gradients as the same crate linked statically and as an independent PyTorch reference,
//! and trains; a partner plugin loaded by path drives the tandem engine. Libraries with
//! their own Burn, another build id, no entry point, or that are no library at all are
//! refused, naming what the plugin has and what the host wants, and the registry then
//! still loads a good plugin.
#![cfg(feature = "dynamic")]

use std::path::{Path, PathBuf};

use burn::prelude::*;
use proptest::prelude::*;
use serde::Deserialize;
use trlvr::plugin::Registry;
use trlvr::prelude::*;
use trlvr::rollout::{RolloutConfig, RolloutEngine};
use trlvr::testing::{RolloutCase, loss_and_grad, rollout_case, train_bigram};
// The test binary itself must take trlvr from the shared library, as the host does.
use trlvr_dylib as _;
use trlvr_junior_kl::JuniorKl;
use trlvr_tempered_junior::Tempered;

/// A library cargo built into target/<profile>/deps/ (or one folder up).
fn library(crate_name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let name = format!("{}{crate_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    [deps.join(&name), deps.parent().unwrap().join(&name)]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no {name} in {}", deps.display()))
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

#[test]
fn a_training_step_with_the_loaded_objective_equals_the_linked_one() {
    let registry = loaded();
    let plugin = registry.objective("junior-kl", &serde_json::json!({ "beta": 0.05 })).unwrap();
    let linked = JuniorKl::new(GrpoConfig::default(), 0.05).unwrap();
    let (start, loaded) = train_bigram(&plugin, 2).unwrap();
    let (_, linked) = train_bigram(&linked, 2).unwrap();
    assert_ne!(loaded, start, "the senior moved");
    assert_eq!(loaded, linked);
}

/// Loading `bad` fails with a message holding every one of `needles`; the same registry
/// then still loads the junior-KL plugin.
fn refused_then_good_loads(bad: &Path, needles: &[&str]) -> String {
    let mut registry = Registry::default();
    let err = registry.load(bad).unwrap_err().to_string();
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} missing from: {err}");
    }
    assert!(registry.list().is_empty(), "nothing was registered: {:?}", registry.list());
    assert_eq!(registry.load(library("trlvr_junior_kl")).unwrap(), vec!["junior-kl".to_string()]);
    assert!(registry.objective("junior-kl", &serde_json::Value::Null).is_ok());
    err
}

fn host_build_id() -> &'static str {
    trlvr::plugin::BUILD_ID.trim_end_matches('\0')
}

#[test]
fn a_library_without_the_entry_point_is_refused_and_a_good_one_still_loads() {
    let abi = format!("ABI {}", trlvr::plugin::ABI_VERSION);
    refused_then_good_loads(
        &library("trlvr_dylib"),
        &["libtrlvr_dylib", "no TRLVR_PLUGIN_<crate> symbol", &abi, "trlvr 0.1.0"],
    );
}

#[test]
fn a_file_that_is_no_library_is_refused_and_a_good_one_still_loads() {
    let garbage = std::env::temp_dir().join(format!("libtrlvr-garbage-{}.so", std::process::id()));
    std::fs::write(&garbage, "not a shared library\n".repeat(200)).unwrap();
    let abi = format!("ABI {}", trlvr::plugin::ABI_VERSION);
    // The platform loader says what the file is; the host says what it loads.
    refused_then_good_loads(&garbage, &["libtrlvr-garbage", "not a loadable library", "ELF", &abi]);
    std::fs::remove_file(garbage).unwrap();
}

/// Built without `use trlvr_dylib as _;`, an objective plugin carries its own trlvr and
/// Burn (a graph the host cannot backpropagate through): refused, naming both anchors.
#[test]
fn a_plugin_with_its_own_burn_is_refused_and_a_good_one_still_loads() {
    let err = refused_then_good_loads(
        &library("trlvr_own_burn_fixture"),
        &["objective \"own-burn\"", "own copy of trlvr and Burn", "--features dynamic"],
    );
    let host = format!("host {:p}", &trlvr::plugin::ANCHOR as *const u8);
    assert!(err.contains(&host), "names the host's anchor {host}: {err}");
    assert!(err.matches("0x").count() == 2, "names both anchors: {err}");
}

/// A copy of a plugin library whose build id bytes say another trlvr build (the version
/// digit changed): refused for that (the build id is checked before the anchor), quoting
/// both ids. The copy is of a `cdylib`, which exports nothing but `TRLVR_PLUGIN_<crate>`: a copy
/// of a Rust `dylib` already loaded would bind its statics to the first copy's (see
/// docs/plugins.md).
#[test]
fn a_mismatched_build_id_is_refused_and_a_good_one_still_loads() {
    let ours = host_build_id();
    assert!(ours.starts_with('0'), "{ours}");
    let theirs = format!("9{}", &ours[1..]);
    let mut bytes = std::fs::read(library("trlvr_own_burn_fixture")).unwrap();
    let mut hits = 0;
    let mut at = 0;
    while let Some(k) = bytes[at..].windows(ours.len()).position(|w| w == ours.as_bytes()) {
        bytes[at + k..at + k + ours.len()].copy_from_slice(theirs.as_bytes());
        at += k + ours.len();
        hits += 1;
    }
    assert!(hits > 0, "the plugin library does not hold the build id {ours:?}");
    let copy = std::env::temp_dir().join(format!("libtrlvr_other_build_{}.so", std::process::id()));
    std::fs::write(&copy, bytes).unwrap();
    refused_then_good_loads(
        &copy,
        &["own-burn", "trlvr build differs", &format!("plugin {theirs:?}"), &format!("host {ours:?}")],
    );
    // Never unloaded: the copy stays on disk while the process runs.
}

/// A second copy of a Rust dylib already in the process (the junior-KL library under its
/// own name, in another folder) is refused before it is loaded: loading it would bind
/// its statics to the first copy's and turn the registrations into a cycle (a hang).
#[test]
fn a_second_copy_of_a_loaded_dylib_is_refused() {
    let original = library("trlvr_junior_kl");
    let dir = std::env::temp_dir().join(format!("trlvr-second-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join(original.file_name().unwrap());
    std::fs::copy(&original, &copy).unwrap();
    let mut registry = loaded(); // the original is in the process now
    let err = registry.load(&copy).unwrap_err().to_string();
    assert!(err.contains("libtrlvr_junior_kl.so is already loaded from another file"), "{err}");
    assert!(registry.objective("junior-kl", &serde_json::Value::Null).is_ok());
}

#[derive(Deserialize)]
struct Oracle {
    rows: usize,
    width: usize,
    prompt_lengths: Vec<usize>,
    owners: Vec<Vec<u8>>,
    log_probs: Vec<f32>,
    old_log_probs: Vec<f32>,
    junior_log_probs: Vec<f32>,
    advantages: Vec<f32>,
    cases: Vec<OracleCase>,
}

#[derive(Deserialize)]
struct OracleCase {
    name: String,
    config: serde_json::Value,
    loss: f64,
    grad: Vec<f64>,
}

/// The loaded junior-KL against `scripts/grpo_oracle.py` (PyTorch, f64):
/// `tests/fixtures/junior_kl_oracle.json`.
#[test]
fn the_loaded_junior_kl_matches_the_pytorch_reference() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/junior_kl_oracle.json");
    let fx: Oracle = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let case = RolloutCase {
        prompt_lengths: fx.prompt_lengths,
        owners: fx
            .owners
            .iter()
            .map(|row| row.iter().map(|&s| if s == 1 { Owner::Senior } else { Owner::Junior }).collect())
            .collect(),
        width: fx.width,
        log_probs: fx.log_probs,
        old_log_probs: fx.old_log_probs,
        ref_log_probs: fx.junior_log_probs,
        advantages: fx.advantages,
    };
    assert_eq!(case.rows(), fx.rows);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + 1e-7;
    let registry = loaded();
    let device = Device::default();
    for c in &fx.cases {
        let objective = registry.objective("junior-kl", &c.config).unwrap();
        let (loss, grad) = loss_and_grad(&objective, &case, &device).unwrap();
        assert!(close(f64::from(loss), c.loss), "{}: loss {loss} vs reference {}", c.name, c.loss);
        assert_eq!(grad.len(), c.grad.len());
        for (k, (&g, &r)) in grad.iter().zip(&c.grad).enumerate() {
            assert!(close(f64::from(g), r), "{}: grad[{k}] {g} vs reference {r}", c.name);
        }
    }
    assert_eq!(fx.cases.len(), 6);
}

/// The tempered-junior partner loaded by path: T-scaled logits of its bigram table, and
/// the same rollouts as the crate linked statically when it plays the junior.
#[test]
fn a_partner_plugin_loads_by_path_and_plays_the_junior() {
    let mut registry = Registry::default();
    assert_eq!(registry.load(library("trlvr_tempered_junior")).unwrap(), vec!["tempered-junior".to_string()]);
    let device = Device::default();
    let table =
        [[0.5f32, 2.0, -1.0, 0.0], [1.0, -0.5, 0.0, 2.5], [0.0, 0.0, 3.0, -1.0], [-1.5, 1.0, 0.5, 0.0]];
    let config = serde_json::json!({ "temperature": 2.0, "noise": 0.3, "seed": 5, "bigram": table });
    let loaded = registry.partner("tempered-junior", &config, &device).unwrap();
    let plain = registry
        .partner("tempered-junior", &serde_json::json!({ "temperature": 2.0, "bigram": table }), &device)
        .unwrap();
    let (_, logits) = plain.start(&[&[1]], 1).unwrap();
    assert_eq!(
        logits.try_into_vec_as::<f32>().unwrap(),
        table[1].iter().map(|l| l / 2.0).collect::<Vec<_>>()
    );
    let Err(err) = registry.partner("tempered-junior", &serde_json::json!({ "temperature": 2.0 }), &device)
    else {
        panic!("a partner without its inner model was made");
    };
    assert!(err.to_string().contains("bigram"), "{err}");

    let linked = Tempered::new(BigramLm::new(&table, &device), 2.0, 0.3, 5).unwrap();
    let classes = TokenClasses::from_texts(&[" a", "b", " c", "<eos>"], &[3]).unwrap();
    let senior = BigramLm::new(&[[0.0f32, 1.0, 0.0, -1.0]; 4], &device);
    let rollout_config =
        RolloutConfig { group_size: 4, max_new_tokens: 10, seed: 9, ..RolloutConfig::default() };
    let schedule = WordBoundary::new(0.5, 3).unwrap();
    let run = |junior: &dyn Partner| {
        RolloutEngine::new(&senior, junior, &classes, rollout_config.clone())
            .unwrap()
            .generate(&[vec![0], vec![2, 1]], &schedule)
            .unwrap()
    };
    let (a, b) = (run(&loaded), run(&linked));
    assert_eq!(a, b);
    assert!(a.iter().flat_map(|r| &r.owners).any(|o| *o == Owner::Junior), "the junior wrote something");
}

/// The loaded partner wraps a model file: a tiny random Qwen3 saved in the Hugging Face
/// layout, its logits divided by T.
#[test]
fn a_partner_plugin_wraps_a_model_file() {
    let config: trlvr_models::ModelConfig = serde_json::from_str(
        r#"{"model_type": "qwen3", "vocab_size": 48, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
            "max_position_embeddings": 64}"#,
    )
    .unwrap();
    let device = Device::default();
    let dir = std::env::temp_dir().join(format!("trlvr-tempered-model-{}", std::process::id()));
    trlvr_models::save_hf_dir(&config.init(&device), &config, None, &dir).unwrap();
    // The plugin opens no model file itself: the host lends its loader.
    let mut registry = Registry::default().with_model_loader(trlvr_models::open_partner);
    registry.load(library("trlvr_tempered_junior")).unwrap();
    let junior = registry
        .partner("tempered-junior", &serde_json::json!({ "temperature": 2.0, "model": dir }), &device)
        .unwrap();
    let (model, _) = trlvr_models::load_hf_dir(&dir, &device).unwrap();
    let prompt: &[TokenId] = &[3, 17, 5];
    let (_, a) = junior.start(&[prompt], 1).unwrap();
    let (_, b) = model.start(&[prompt], 1).unwrap();
    let (a, b) = (a.try_into_vec_as::<f32>().unwrap(), (b / 2.0).try_into_vec_as::<f32>().unwrap());
    assert_eq!(a.len(), 48);
    assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-5 * x.abs().max(1.0)), "{a:?} vs {b:?}");
    let err = registry
        .partner("tempered-junior", &serde_json::json!({ "model": dir.join("missing") }), &device)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("missing"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
