//! The portable objective ABI: junior-KL written in C (plugins/portable/junior_kl.c),
//! compiled here with the system's C compiler and loaded by path into the default static
//! host, gives the losses and gradients of the Rust junior-KL (and β = 0 those of GRPO),
//! keeps the objective invariants and trains the same; broken plugins are refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use burn::prelude::*;
use proptest::prelude::*;
use trlvr::plugin::{Origin, Registry};
use trlvr::prelude::*;
use trlvr::testing::{RolloutCase, check_objective, loss_and_grad, rollout_case, train_bigram};
use trlvr_junior_kl::JuniorKl;

const HEADER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/plugins/portable");

/// Compiles C `source` into a shared library named `name` (tests run in parallel: each
/// compiles into its own files and renames the result into place).
fn compile(name: &str, source: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("portable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let library = dir.join(format!("{}{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    if library.exists() {
        return library;
    }
    static UNIQUE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let unique = UNIQUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("{name}-{unique}.c"));
    std::fs::write(&file, source).unwrap();
    let partial = dir.join(format!("{name}-{unique}.tmp"));
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I", HEADER_DIR, "-o"])
        .arg(&partial)
        .arg(&file)
        .arg("-lm")
        .output()
        .expect("a C compiler (cc) on PATH");
    assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&partial, &library).unwrap();
    library
}

fn junior_kl_c() -> PathBuf {
    let source = std::fs::read_to_string(Path::new(HEADER_DIR).join("junior_kl.c")).unwrap();
    compile("junior_kl_c", &source)
}

fn loaded() -> Registry {
    let mut registry = Registry::default();
    assert_eq!(registry.load(junior_kl_c()).unwrap(), vec!["junior-kl-c".to_string()]);
    registry
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 2e-5 * a.abs().max(b.abs()) + 1e-6
}

/// The kit's cases keep ratios within e^±0.6; stretch the old and reference log-probs
/// away from the policy so the dual clip (ratio > 3) and the k3 clamp (KL > 10) happen too.
fn stretched(mut case: RolloutCase, old: f32, reference: f32) -> RolloutCase {
    for ((lp, o), r) in case.log_probs.iter().zip(&mut case.old_log_probs).zip(&mut case.ref_log_probs) {
        *o = lp + (*o - lp) * old;
        *r = lp + (*r - lp) * reference;
    }
    case
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_c_junior_kl_equals_the_rust_one(
        case in rollout_case(4, 6),
        (old, reference) in prop_oneof![Just((1.0f32, 1.0f32)), (1.0f32..4.0, 1.0f32..7.0)],
        beta in 0.0f64..0.5,
    ) {
        let case = stretched(case, old, reference);
        let registry = loaded();
        let device = Device::default();
        let c = registry.objective("junior-kl-c", &serde_json::json!({ "beta": beta })).unwrap();
        prop_assert!(c.needs_reference());
        let rust = JuniorKl::new(GrpoConfig::default(), beta).unwrap();
        let (a, ga) = loss_and_grad(&c, &case, &device).unwrap();
        let (b, gb) = loss_and_grad(&rust, &case, &device).unwrap();
        prop_assert!(close(a, b), "loss {} vs {}", a, b);
        for (i, (x, y)) in ga.iter().zip(&gb).enumerate() {
            prop_assert!(close(*x, *y), "grad[{}] {} vs {}", i, x, y);
        }
        // β = 0 is plain GRPO.
        let zero = registry.objective("junior-kl-c", &serde_json::json!({ "beta": 0.0 })).unwrap();
        let grpo = Grpo::new(GrpoConfig::default()).unwrap();
        let (z, gz) = loss_and_grad(&zero, &case, &device).unwrap();
        let (g, gg) = loss_and_grad(&grpo, &case, &device).unwrap();
        prop_assert!(close(z, g), "β = 0: {} vs GRPO {}", z, g);
        prop_assert!(gz.iter().zip(&gg).all(|(x, y)| close(*x, *y)));
        // Garbage outside the mask, micro-batch sums, zero at the reference.
        check_objective(&c, &case, &device).unwrap();
    }
}

#[test]
fn training_steps_with_the_c_objective_follow_the_rust_ones() {
    let registry = loaded();
    let c = registry.objective("junior-kl-c", &serde_json::json!({ "beta": 0.05 })).unwrap();
    let rust = JuniorKl::new(GrpoConfig::default(), 0.05).unwrap();
    let (start, c) = train_bigram(&c, 2).unwrap();
    let (_, rust) = train_bigram(&rust, 2).unwrap();
    assert_ne!(c, start, "the senior moved");
    for (x, y) in c.iter().zip(&rust) {
        assert!((x - y).abs() <= 1e-4, "{x} vs {y}");
    }
}

#[test]
fn broken_portable_plugins_are_refused_and_a_good_one_still_loads() {
    let mut registry = Registry::default();
    // Another ABI version: refused before any of its functions is called.
    let future = compile(
        "future_abi",
        "#include \"trlvr_objective.h\"\n\
         const trlvr_portable_objective TRLVR_PORTABLE_OBJECTIVE = {99, \"x\", \"x\", \"0\", 0, 0, 0, 0};\n",
    );
    let err = registry.load(&future).unwrap_err().to_string();
    assert!(err.contains("libfuture_abi") && err.contains("ABI 99 (plugin) != 1 (host)"), "{err}");

    // A NULL function pointer: refused at load, never called.
    let stateless = compile(
        "no_destroy",
        "#include \"trlvr_objective.h\"\n\
         static void *create(const char *c, char *e, size_t n) { (void)c; (void)e; (void)n; return (void *)1; }\n\
         static int32_t loss(const void *s, const trlvr_batch *b, double *l, float *g, char *e, size_t n) {\n\
           (void)s; (void)b; (void)g; (void)e; (void)n; *l = 0.0; return 0; }\n\
         const trlvr_portable_objective TRLVR_PORTABLE_OBJECTIVE =\n\
           {TRLVR_PORTABLE_ABI, \"stateless\", \"no destroy\", \"0\", 0, create, loss, 0};\n",
    );
    let err = registry.load(&stateless).unwrap_err().to_string();
    assert!(err.contains("libno_destroy") && err.contains("NULL destroy function"), "{err}");

    // Gradient where the loss mask is off (a junior-written token): refused at the loss.
    let leaky = compile(
        "leaky",
        "#include \"trlvr_objective.h\"\n\
         static void *create(const char *c, char *e, size_t n) { (void)c; (void)e; (void)n; return (void *)1; }\n\
         static int32_t loss(const void *s, const trlvr_batch *b, double *l, float *g, char *e, size_t n) {\n\
           (void)s; (void)e; (void)n; *l = 0.0;\n\
           for (uint64_t k = 0; k < b->rows * b->width; k++) g[k] = 1.0f;\n\
           return 0; }\n\
         static void destroy(void *s) { (void)s; }\n\
         const trlvr_portable_objective TRLVR_PORTABLE_OBJECTIVE =\n\
           {TRLVR_PORTABLE_ABI, \"leaky\", \"writes gradient everywhere\", \"0\", 0, create, loss, destroy};\n",
    );
    registry.load(&leaky).unwrap();
    let objective = registry.objective("leaky", &serde_json::Value::Null).unwrap();
    let device = Device::default().autodiff();
    let loss_mask = LossMask::from_bools(vec![false, true, false], 1, 3, &device).unwrap();
    let lp = Tensor::<2>::from_floats([[-1.0, -0.5, -2.0]], &device).require_grad();
    let batch = ObjectiveBatch {
        log_probs: lp.clone(),
        old_log_probs: lp.clone().detach(),
        ref_log_probs: None,
        advantages: Tensor::from_floats([1.0], &device),
        normalizer: loss_mask.normalizer().unwrap(),
        loss_mask,
    };
    let err = objective.loss(&batch).unwrap_err().to_string();
    assert!(err.contains("\"leaky\"") && err.contains("outside the loss mask at (0, 0)"), "{err}");

    // A config the plugin refuses: its own message comes through.
    let good = junior_kl_c();
    registry.load(&good).unwrap();
    let err = registry.objective("junior-kl-c", &serde_json::json!({ "betta": 1 })).unwrap_err().to_string();
    assert!(err.contains("unknown key \"betta\"") && err.contains("allowed: beta"), "{err}");
    let err = registry.objective("junior-kl-c", &serde_json::json!({ "beta": -1 })).unwrap_err().to_string();
    assert!(err.contains("beta must be >= 0"), "{err}");
    // The same name twice is refused; the registry still serves the good one.
    let copy = good.with_file_name("libjunior_kl_copy.so");
    std::fs::copy(&good, &copy).unwrap();
    let err = registry.load(&copy).unwrap_err().to_string();
    assert!(err.contains("already registered") && err.contains("libjunior_kl_c"), "{err}");
    assert!(registry.list().iter().any(|i| i.kind == "objective"
        && i.name == "junior-kl-c"
        && i.version == "0.1.0"
        && i.origin == Origin::Library(good.clone())));
    assert!(registry.objective("junior-kl-c", &serde_json::Value::Null).is_ok());
}

#[test]
fn the_static_cli_lists_the_c_objective() {
    let library = junior_kl_c();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_trlvr")).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = run(&["plugins", "--load", library.to_str().unwrap()]);
    assert!(ok, "{text}");
    let line = text.lines().find(|l| l.contains("junior-kl-c")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("objective") && line.contains("libjunior_kl_c"), "{line}");
}
