//! Plugins: statically linked ones register themselves; a schedule plugin loads at run
//! time (versions checked) and passes the testing kit; bad files and burn-using items
//! from a loaded library are refused with clear errors.

use std::path::PathBuf;

use trlvr::plugin::{Origin, Registry};
use trlvr::prelude::*;
use trlvr::schedule::replay;
use trlvr::testing::{check_schedule, toy_classes};

/// A cdylib cargo built beside this test binary (target/<profile>/deps/, as a
/// dev-dependency) or one folder up (when built directly).
fn library(crate_name: &str) -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let (prefix, suffix) =
        (format!("{}{crate_name}", std::env::consts::DLL_PREFIX), std::env::consts::DLL_SUFFIX);
    let direct = deps.parent().unwrap().join(format!("{prefix}{suffix}"));
    let in_deps = std::fs::read_dir(&deps).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).find(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.starts_with(&prefix) && name.ends_with(suffix)
    });
    in_deps
        .or(direct.exists().then_some(direct))
        .unwrap_or_else(|| panic!("no {prefix}*{suffix} built in {}", deps.display()))
}

#[test]
fn builtins_and_linked_plugins_are_registered() {
    let registry = Registry::with_linked();
    let names: Vec<_> = registry.list().into_iter().map(|item| (item.kind, item.name, item.origin)).collect();
    for (kind, name) in
        [("objective", "grpo"), ("schedule", "word"), ("schedule", "step"), ("schedule", "solo")]
    {
        assert!(names.contains(&(kind, name, Origin::Linked)), "{kind} {name} missing: {names:?}");
    }
    assert!(!names.iter().any(|(_, n, _)| *n == "word-turns"), "not linked into this binary");
}

#[test]
fn a_schedule_plugin_loads_and_passes_the_kit() {
    let mut registry = Registry::with_linked();
    let names = registry.load(library("trlvr_word_turns")).unwrap();
    assert_eq!(names, vec!["word-turns".to_string()]);
    assert!(registry.load(library("trlvr_word_turns")).unwrap().is_empty(), "a second load is a no-op");
    let schedule = registry.schedule("word-turns", &serde_json::json!({ "words": 2 })).unwrap();
    let classes = toy_classes();
    // toy vocabulary: ids 0, 2, 7, 12 start words
    let tokens = [0, 1, 2, 3, 7, 1, 1, 12, 0, 9];
    check_schedule(&schedule, &classes, &tokens, 5).unwrap();
    let (owners, _) = replay(&schedule, &classes, &tokens, 5, 0);
    use Owner::{Junior as J, Senior as S};
    assert_eq!(owners, vec![S, S, S, J, J, J, J, J, S, S]);
    let err = registry.schedule("word-turns", &serde_json::json!({ "words": 0 })).unwrap_err();
    assert!(err.to_string().contains("words >= 1"), "{err}");
    assert!(registry.list().iter().any(|i| i.name == "word-turns" && matches!(i.origin, Origin::Library(_))));
}

#[test]
fn bad_files_are_refused_with_their_path() {
    let mut registry = Registry::with_linked();
    let err = registry.load("/nonexistent/libplugin.so").unwrap_err();
    assert!(err.to_string().contains("/nonexistent/libplugin.so"), "{err}");
    let fake = std::env::temp_dir().join(format!("trlvr-not-a-plugin-{}.so", std::process::id()));
    std::fs::write(&fake, b"not a shared library").unwrap();
    let err = registry.load(&fake).unwrap_err();
    assert!(matches!(err, Error::Plugin(_)) && err.to_string().contains("trlvr-not-a-plugin"), "{err}");
    std::fs::remove_file(fake).unwrap();
    assert!(registry.schedule("word-turns", &serde_json::Value::Null).is_err(), "nothing was registered");
}

/// Without the shared runtime the junior-KL library carries its own trlvr and Burn: its
/// objective could not backpropagate through the host's graph, so it is refused, naming
/// both copies; a good plugin still loads afterwards.
#[cfg(not(feature = "dynamic"))]
#[test]
fn an_objective_plugin_with_its_own_burn_is_refused() {
    let mut registry = Registry::default();
    let err = registry.load(library("trlvr_junior_kl")).unwrap_err().to_string();
    assert!(err.contains("libtrlvr_junior_kl") && err.contains("junior-kl"), "{err}");
    assert!(err.contains("own copy") && err.contains("anchor") && err.contains("host 0x"), "{err}");
    assert!(err.contains("--features dynamic"), "says how to rebuild: {err}");
    assert!(registry.objective("junior-kl", &serde_json::Value::Null).is_err(), "nothing was registered");
    assert_eq!(registry.load(library("trlvr_word_turns")).unwrap(), vec!["word-turns".to_string()]);
}

#[test]
fn the_sentence_schedule_loads_by_path_and_passes_the_kit() {
    let mut registry = Registry::with_linked();
    assert_eq!(registry.load(library("trlvr_sentence_handoff")).unwrap(), vec!["sentence".to_string()]);
    let schedule =
        registry.schedule("sentence", &serde_json::json!({ "p_senior": 0.5, "max_gap": 3 })).unwrap();
    let classes = toy_classes();
    // toy vocabulary: 3 "\n", 4 "\n\n" and 5 ".\n\n" end sentences
    let tokens = [0, 1, 5, 7, 2, 6, 6, 6, 6, 3, 0];
    for seed in 0..32 {
        check_schedule(&schedule, &classes, &tokens, seed).unwrap();
    }
    // p_senior = 1: the senior keeps the pen through every redraw.
    let all_senior = registry.schedule("sentence", &serde_json::json!({ "p_senior": 1.0 })).unwrap();
    assert_eq!(replay(&all_senior, &classes, &tokens, 0, 0).0, vec![Owner::Senior; tokens.len()]);
    for (bad, what) in [
        (serde_json::json!({ "p_senior": 1.5 }), "p_senior"),
        (serde_json::json!({ "max_gap": 0 }), "max_gap"),
    ] {
        let err = registry.schedule("sentence", &bad).unwrap_err().to_string();
        assert!(err.contains(what), "{err}");
    }
}

/// Any host refuses an objective plugin that carries its own trlvr and Burn, naming both
/// anchors, and still loads a good plugin afterwards.
#[test]
fn a_plugin_with_its_own_burn_is_refused_naming_both_anchors() {
    let mut registry = Registry::default();
    let err = registry.load(library("trlvr_own_burn_fixture")).unwrap_err().to_string();
    assert!(err.contains("objective \"own-burn\"") && err.contains("own copy"), "{err}");
    assert!(err.contains(&format!("host {:p}", &trlvr::plugin::ANCHOR as *const u8)), "{err}");
    assert_eq!(err.matches("0x").count(), 2, "both anchors: {err}");
    assert!(registry.list().is_empty());
    assert_eq!(registry.load(library("trlvr_word_turns")).unwrap(), vec!["word-turns".to_string()]);
}

/// Without the shared runtime the partner plugin carries its own Burn too: refused.
#[cfg(not(feature = "dynamic"))]
#[test]
fn a_partner_plugin_with_its_own_burn_is_refused() {
    let mut registry = Registry::default();
    let err = registry.load(library("trlvr_tempered_junior")).unwrap_err().to_string();
    assert!(err.contains("partner \"tempered-junior\"") && err.contains("own copy"), "{err}");
}

/// `trlvr plugins --load`: kind, name, version, crate and origin of every item. The
/// library is one the binary does not link (it links `sentence`).
#[test]
fn the_cli_lists_kind_name_version_and_origin() {
    let word_turns = library("trlvr_word_turns");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(["plugins", "--load"])
        .arg(&word_turns)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        text.lines().next().unwrap().split_whitespace().take(5).collect::<Vec<_>>(),
        ["KIND", "NAME", "VERSION", "CRATE", "ORIGIN"]
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        row("word-turns")[..5],
        [
            "schedule",
            "word-turns",
            version,
            "trlvr-word-turns",
            &word_turns.canonicalize().unwrap().display().to_string()
        ]
    );
    assert_eq!(row("grpo")[..5], ["objective", "grpo", version, "trlvr", "linked"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(["plugins", "--load", "/nonexistent/libplugin.so"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/libplugin.so"));
}
