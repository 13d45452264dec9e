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
    let names: Vec<_> =
        registry.list().into_iter().map(|(kind, name, _, origin)| (kind, name, origin)).collect();
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
    assert!(registry.list().iter().any(|(_, n, _, o)| *n == "word-turns" && matches!(o, Origin::Library(_))));
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
