//! `trlvr train` run as a user would: a tiny Qwen3 with the real Qwen3 tokenizer, GSM8K
//! style data, a recipe per arm; checkpoints open with `trlvr generate`; a run killed at
//! random moments (checkpoint writes included) and resumed equals the uninterrupted run;
//! bad input gets clear errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use burn::prelude::*;
use rand::{Rng, SeedableRng};
use trlvr_models::ModelConfig;

fn trlvr(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trlvr-train-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A random one-layer Qwen3 over the real Qwen3 vocabulary, saved in the Hugging Face layout.
fn tiny_model(dir: &Path) -> PathBuf {
    let config: ModelConfig = serde_json::from_str(
        r#"{"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
            "max_position_embeddings": 512}"#,
    )
    .unwrap();
    let device = Device::default();
    device.seed(5);
    let model = config.init(&device);
    let tokenizer_path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/qwen3-tokenizer/tokenizer.json");
    let tokenizer = tokenizers::Tokenizer::from_file(tokenizer_path).unwrap();
    let path = dir.join("tiny-qwen3");
    trlvr_models::save_hf_dir(&model, &config, Some(&tokenizer), &path).unwrap();
    path
}

const DATA: &str = "{\"question\": \"What is 2 + 2?\", \"answer\": \"2+2=4\\n#### 4\"}\n\
{\"question\": \"What is 3 * 3?\", \"answer\": \"#### 9\"}\n\
{\"question\": \"What is 10 - 7?\", \"answer\": \"#### 3\"}\n";

fn recipe(dir: &Path, model: &Path, arm: &str, steps: usize) -> PathBuf {
    let data = dir.join("data.jsonl");
    std::fs::write(&data, DATA).unwrap();
    let text = format!(
        "arm = \"{arm}\"\n\n[senior]\npath = \"{}\"\n\n[data]\ntrain = {{ path = \"{}\", layout = \"gsm8k\" }}\n\
         validation = {{ path = \"{}\", layout = \"gsm8k\", limit = 2 }}\n\n[train]\nsteps = {steps}\n\
         prompts_per_step = 2\ngroup_size = 4\nmini_batch_prompts = 1\nmicro_batch_rows = 3\n\
         max_new_tokens = 6\nlr = 0.01\ncheckpoint_every = 1\nvalidate_every = 2\nkeep_last = 2\n\
         skip_zero_advantage = false\n",
        model.display(),
        data.display(),
        data.display()
    );
    let path = dir.join(format!("{arm}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Metrics without wall-clock figures.
fn timeless(path: &Path) -> Vec<serde_json::Value> {
    lines(path)
        .into_iter()
        .map(|mut v| {
            let object = v.as_object_mut().unwrap();
            // Wall-clock and CPU-time figures differ between identical runs.
            object.retain(|k, _| !k.starts_with("time") && !k.starts_with("cpu_") && !k.ends_with("per_s"));
            v
        })
        .collect()
}

#[test]
fn each_arm_trains_from_a_recipe_and_its_checkpoints_open() {
    let dir = temp("arms");
    let model = tiny_model(&dir);
    for arm in ["trlvr", "grpo", "kl-reg"] {
        let out = dir.join(format!("run-{arm}"));
        let config = recipe(&dir, &model, arm, 3);
        let (code, text) =
            trlvr(&["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{arm}: {text}");
        assert!(text.contains("step 3/3"), "{arm}: progress lines: {text}");
        // The log shows the first prompt as the senior reads it (ChatML with Qwen3's empty
        // think block: the tiny model has no chat template of its own).
        let first = "the first prompt, as the senior reads it:\n<|im_start|>user\nWhat is 2 + 2? Solve the \
                     following math problem step by step.";
        assert!(
            text.contains(first) && text.contains("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
            "{text}"
        );
        let metrics = lines(&out.join("metrics.jsonl"));
        assert_eq!(metrics.len(), 3, "{arm}");
        assert!(metrics.iter().all(|m| m["loss"].as_f64().is_some_and(f64::is_finite)), "{arm}");
        assert_eq!(metrics[0]["kl"].is_null(), arm != "kl-reg", "{arm}");
        let resolved = std::fs::read_to_string(out.join("config.toml")).unwrap();
        assert!(resolved.contains("[objective]") && resolved.contains("[schedule]"), "{resolved}");
        let last = out.join("checkpoints/step-000003");
        for file in [
            "model.safetensors",
            "config.json",
            "tokenizer.json",
            "generation_config.json",
            "senior.bpk",
            "optimizer.bpk",
        ] {
            assert!(last.join(file).exists(), "{arm}: {file} in {}", last.display());
        }
        // The EOS the run stopped at, for transformers and for a reload (the tiny model's
        // folder has no generation_config.json: the tokenizer's `<|endoftext|>`).
        let generation: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(last.join("generation_config.json")).unwrap())
                .unwrap();
        assert!(
            generation["eos_token_id"].is_number() || generation["eos_token_id"].is_array(),
            "{generation}"
        );
        let (code, text) = trlvr(&[
            "generate",
            "--model",
            last.to_str().unwrap(),
            "--prompt",
            "Hi",
            "--max-new-tokens",
            "3",
        ]);
        assert_eq!(code, 0, "{arm}: generate opens the checkpoint: {text}");
        // A second start into the same folder is refused (nothing overwritten).
        let (code, text) =
            trlvr(&["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_ne!(code, 0);
        assert!(text.contains("--resume"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Senior and junior on devices of their own (`[junior] device` in the recipe, or
/// `--senior-device` / `--junior-device`). The default build has one CPU device, so both
/// names resolve to it unless `TRLVR_TEST_JUNIOR_DEVICE` names another (`tch` in a build
/// with `--features tch`); unknown names are refused before anything is written.
#[test]
fn a_recipe_with_both_devices_trains_and_bad_devices_are_named() {
    let dir = temp("devices");
    let model = tiny_model(&dir);
    let junior = std::env::var("TRLVR_TEST_JUNIOR_DEVICE").unwrap_or_else(|_| "cpu".into());
    let config = recipe(&dir, &model, "trlvr", 1);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[data]", &format!("[junior]\ndevice = \"{junior}\"\n\n[data]"))
        .replace("[senior]\n", "[senior]\ndevice = \"flex\"\n");
    std::fs::write(&config, text).unwrap();
    let out = dir.join("run");
    let (code, text) =
        trlvr(&["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("on flex (junior on {junior})")), "{text}");
    assert_eq!(lines(&out.join("metrics.jsonl")).len(), 1);
    let resolved = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(resolved.contains(&format!("[junior]\ndevice = \"{junior}\"")), "{resolved}");

    // The command line overrides each, and a bad name says which model and what exists.
    let c = config.to_str().unwrap();
    for (flag, bad, model) in
        [("--junior-device", "abacus", "junior"), ("--senior-device", "flex:1", "senior")]
    {
        let out = dir.join(format!("bad-{model}"));
        let (code, text) = trlvr(&["train", "--config", c, "--out", out.to_str().unwrap(), flag, bad]);
        assert_ne!(code, 0);
        assert!(text.contains(&format!("{model}.device")) && text.contains(bad), "{text}");
        assert!(!out.join("config.toml").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The accelerator's code path on the second device of a build (`--features wgpu` in CI:
/// Burn's CubeCL backend on Mesa's lavapipe; `cuda` on a GPU): a 2-step TRLVR run of a tiny
/// Qwen3 (20-word vocabulary, so that a random model is sometimes right) there, senior and
/// junior on that one device, rolls out what flex rolls out (sampling on the device against
/// flex's host sampling), with the same rewards and a loss within rounding; then a short
/// `trlvr eval` there.
#[cfg(any(feature = "tch", feature = "cuda", feature = "wgpu"))]
#[test]
fn a_tandem_run_on_the_second_device_follows_flex() {
    let (spec, _) = trlvr::testing::second_device();
    let dir = temp("second-device");
    let model = tiny_word_model(&dir);
    let config = recipe(&dir, &model, "trlvr", 2);
    let run = |device: &str| {
        let out = dir.join(format!("run-{}", device.replace(':', "-")));
        let mut args = vec!["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend([
            "--device",
            device,
            "--set",
            "train.group_size=8",
            "--set",
            "train.samples_per_step=16",
        ]);
        args.extend(["--set", "train.max_new_tokens=3"]);
        let (code, text) = trlvr(&args);
        assert_eq!(code, 0, "{device}: {text}");
        out
    };
    let (flex, other) = (run("flex"), run(&spec));
    let (a, b) = (lines(&flex.join("samples.jsonl")), lines(&other.join("samples.jsonl")));
    assert_eq!(a.len(), b.len());
    let same = a.iter().zip(&b).filter(|(x, y)| x["text"] == y["text"]).count();
    for (x, y) in a.iter().zip(&b).filter(|(x, y)| x["text"] == y["text"]) {
        assert_eq!((&x["reward"], &x["reason"]), (&y["reward"], &y["reason"]), "{}", x["text"]);
    }
    let (ma, mb) = (lines(&flex.join("metrics.jsonl")), lines(&other.join("metrics.jsonl")));
    for (x, y) in ma.iter().zip(&mb) {
        let (la, lb) = (x["loss"].as_f64().unwrap(), y["loss"].as_f64().unwrap());
        eprintln!(
            "step {}: reward {} vs {} ({spec}), loss {la:.6} vs {lb:.6}, |diff| {:.2e}",
            x["step"],
            x["reward_mean"],
            y["reward_mean"],
            (la - lb).abs()
        );
        assert!(lb.is_finite());
    }
    eprintln!("{spec}: {same} of {} logged rollouts drew flex's tokens", a.len());
    // The first step starts from the same weights: its rollouts are flex's, so are its
    // rewards, and its loss (non-zero: some rollouts are right) differs by rounding only.
    let first = |m: &[serde_json::Value]| (m[0]["reward_mean"].clone(), m[0]["tokens"].clone());
    assert_eq!(first(&ma), first(&mb), "step 1 rolled out differently on {spec}");
    let (la, lb) = (ma[0]["loss"].as_f64().unwrap(), mb[0]["loss"].as_f64().unwrap());
    assert!(la != 0.0, "a step with something to learn: {ma:?}");
    assert!((la - lb).abs() <= 1e-4 * la.abs().max(1e-3), "step 1 loss {la} vs {lb}");

    // A short evaluation of the trained senior on the same device, tandem and solo.
    let checkpoint = other.join("checkpoints/step-000002");
    let data = dir.join("data.jsonl");
    let eval = dir.join("eval");
    let (code, text) = trlvr(&[
        "eval",
        "--senior",
        checkpoint.to_str().unwrap(),
        "--junior",
        model.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--n",
        "2",
        "--max-new-tokens",
        "3",
        "--device",
        &spec,
        "--out",
        eval.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(eval.join("eval.json")).unwrap()).unwrap();
    let figures = &report["sets"][0]["figures"];
    for mode in ["solo", "handoff"] {
        assert!(figures[mode][0]["value"].as_f64().is_some_and(|v| (0.0..=100.0).contains(&v)), "{report}");
    }
    // A precision the device lacks is refused before anything loads (wgpu has no bf16:
    // its shader compiler panicked on the first bf16 kernel).
    if spec.starts_with("wgpu") {
        let (code, text) = trlvr(&[
            "generate",
            "--model",
            model.to_str().unwrap(),
            "--prompt",
            "What is 2 + 2?",
            "--device",
            &spec,
            "--dtype",
            "bf16",
        ]);
        assert_ne!(code, 0);
        assert!(text.contains("--dtype") && text.contains("cannot compute in bf16"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `[senior] dtype = "bf16"` trains in mixed precision (f32 weights and optimizer state;
/// the Hugging Face export in bf16, as such a model is published) and scores π_old
/// again; `[junior] dtype = "bf16"` casts the frozen junior; `f16` scales the loss; a
/// precision that does not exist is refused with the ones that do.
#[test]
fn mixed_precision_from_the_recipe_trains_and_exports_in_its_precision() {
    let dir = temp("dtype");
    let model = tiny_model(&dir);
    let config = recipe(&dir, &model, "trlvr", 2);
    let c = config.to_str().unwrap();
    let out = dir.join("run");
    let (code, text) = trlvr(&[
        "train",
        "--config",
        c,
        "--out",
        out.to_str().unwrap(),
        "--set",
        "senior.dtype=bf16",
        "--set",
        "junior.dtype=bf16",
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("bf16"), "the run says it computes in bf16: {text}");
    let metrics = lines(&out.join("metrics.jsonl"));
    assert_eq!(metrics.len(), 2);
    assert!(metrics.iter().all(|m| m["loss"].as_f64().is_some_and(f64::is_finite)));
    let resolved = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(resolved.matches("dtype = \"bf16\"").count() == 2, "{resolved}");
    assert!(resolved.contains("recompute_old_log_probs = true"), "{resolved}");
    // The safetensors header: every tensor of the export is BF16, and config.json says so.
    let bytes = std::fs::read(out.join("checkpoints/step-000002/model.safetensors")).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let dtypes: Vec<&str> = header
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .map(|(_, v)| v["dtype"].as_str().unwrap())
        .collect();
    assert!(!dtypes.is_empty() && dtypes.iter().all(|&d| d == "BF16"), "{dtypes:?}");
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("checkpoints/step-000002/config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["torch_dtype"], "bfloat16");
    // It loads: a model named by the export generates.
    let export = out.join("checkpoints/step-000002");
    let (code, text) = trlvr(&[
        "generate",
        "--model",
        export.to_str().unwrap(),
        "--prompt",
        "2+2?",
        "--max-new-tokens",
        "2",
    ]);
    assert_eq!(code, 0, "{text}");

    // f16 turns on dynamic loss scaling, written into the resolved recipe and each step.
    let f16 = dir.join("f16");
    let (code, text) =
        trlvr(&["train", "--config", c, "--out", f16.to_str().unwrap(), "--set", "senior.dtype=f16"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("computes in f16") && text.contains("loss scaling: scale 65536"), "{text}");
    let resolved = std::fs::read_to_string(f16.join("config.toml")).unwrap();
    assert!(resolved.contains("[train.loss_scaling]"), "{resolved}");
    let metrics = lines(&f16.join("metrics.jsonl"));
    assert_eq!(metrics.len(), 2);
    assert!(metrics.iter().all(|m| m["loss_scale"].as_f64().is_some_and(|s| s >= 1.0)), "{metrics:?}");

    let bad = dir.join("bad");
    let (code, text) =
        trlvr(&["train", "--config", c, "--out", bad.to_str().unwrap(), "--set", "senior.dtype=fp8"]);
    assert_ne!(code, 0);
    assert!(text.contains("fp8") && text.contains("bf16"), "{text}");
    assert!(!bad.join("config.toml").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A partner plugin named in the recipe plays the junior: `tempered-junior` at T = 1
/// without noise is the self-paired junior itself (same samples and metrics as the plain
/// run), and at T = 50 it writes other tokens; `path` with `partner` is refused.
#[test]
fn a_partner_plugin_named_in_the_recipe_plays_the_junior() {
    let dir = temp("partner");
    let model = tiny_model(&dir);
    let config = recipe(&dir, &model, "trlvr", 2);
    let plain_text = std::fs::read_to_string(&config).unwrap();
    let run = |name: &str, junior: &str| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, plain_text.replace("[data]", &format!("{junior}\n[data]"))).unwrap();
        let out = dir.join(name);
        let (code, text) =
            trlvr(&["train", "--config", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        (code, text, out)
    };
    let partner = |extra: &str| {
        format!("[junior.partner]\nname = \"tempered-junior\"\nmodel = \"{}\"\n{extra}", model.display())
    };
    let (code, text, plain) = run("plain", "");
    assert_eq!(code, 0, "{text}");
    let (code, text, same) = run("t1", &partner("temperature = 1.0\n"));
    assert_eq!(code, 0, "{text}");
    let (code, text, hot) = run("t50", &partner("temperature = 50.0\n"));
    assert_eq!(code, 0, "{text}");
    let samples = |out: &Path| std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    assert_eq!(samples(&plain), samples(&same));
    assert_eq!(timeless(&plain.join("metrics.jsonl")), timeless(&same.join("metrics.jsonl")));
    assert_ne!(samples(&plain), samples(&hot), "a flattened junior writes other tokens");
    let resolved = std::fs::read_to_string(hot.join("config.toml")).unwrap();
    assert!(resolved.contains("[junior.partner]") && resolved.contains("tempered-junior"), "{resolved}");

    let (code, text, _) =
        run("both", &format!("[junior]\npath = \"{}\"\n\n{}", model.display(), partner("")));
    assert_ne!(code, 0);
    assert!(text.contains("junior.path and junior.partner"), "{text}");
    let (code, text, _) = run("unknown", "[junior.partner]\nname = \"no-such-partner\"\n");
    assert_ne!(code, 0);
    assert!(
        text.contains("no partner named \"no-such-partner\"") && text.contains("tempered-junior"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three reward terms: the verifier's, the built-in length cost and a plugin the recipe
/// loads (`boxed-once`); each step logs each term's mean, and the reward is their weighted
/// sum. An unknown reward is named with the known ones.
#[test]
fn reward_terms_from_the_recipe_are_summed_and_each_logged() {
    let dir = temp("rewards");
    let model = tiny_model(&dir);
    let plain = std::fs::read_to_string(recipe(&dir, &model, "grpo", 2)).unwrap();
    // The cdylib cargo built for this test binary (a dev-dependency), beside it in deps/.
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    let (prefix, suffix) = (std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let library = dir.join(format!("{prefix}trlvr_format_reward{suffix}"));
    std::fs::copy(deps.join(format!("{prefix}trlvr_format_reward{suffix}")), &library).unwrap();
    let run = |name: &str, head: &str, tail: &str, trust: bool| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(&path, format!("{head}{plain}{tail}")).unwrap();
        let out = dir.join(name);
        let mut args = vec!["train", "--config", path.to_str().unwrap(), "--out", out.to_str().unwrap()];
        if trust {
            args.push("--trust-plugins");
        }
        let (code, text) = trlvr(&args);
        (code, text, out)
    };
    let plugins = format!("plugins = [\"{}\"]\n", library.display());
    let terms = "\n[[rewards]]\nname = \"correct\"\n\n[[rewards]]\nname = \"length\"\nweight = 0.5\n\n\
                 [[rewards]]\nname = \"boxed-once\"\nweight = 0.25\n";
    // A recipe's libraries load only with the command line's consent.
    let (code, text, out) = run("untrusted", &plugins, terms, false);
    assert_ne!(code, 0);
    assert!(text.contains("--trust-plugins") && text.contains("trlvr_format_reward"), "{text}");
    assert!(!out.exists(), "refused before the run directory is made");
    let (code, text, out) = run("three", &plugins, terms, true);
    assert_eq!(code, 0, "{text}");
    assert!(out.join("plugins.json").exists(), "the run records its plugins' hashes");
    assert!(text.contains("reward: 1 × correct + 0.5 × length + 0.25 × boxed-once"), "{text}");
    let metrics = lines(&out.join("metrics.jsonl"));
    assert_eq!(metrics.len(), 2);
    for m in &metrics {
        let term = |k: &str| m["rewards"][k].as_f64().unwrap_or_else(|| panic!("no {k} in {m}"));
        // Solo rollouts stay within the cap of 6 tokens: the cost is the mean length over 6.
        assert!((term("length") + m["response_len_mean"].as_f64().unwrap() / 6.0).abs() < 1e-6, "{m}");
        assert!(term("length") < 0.0, "every response has tokens: {m}");
        assert!((term("correct") - m["accuracy"].as_f64().unwrap()).abs() < 1e-9, "{m}");
        assert!((0.0..=1.0).contains(&term("boxed-once")), "{m}");
        let sum = term("correct") + 0.5 * term("length") + 0.25 * term("boxed-once");
        assert!((m["reward_mean"].as_f64().unwrap() - sum).abs() < 1e-6, "{m}");
    }

    // Resumed, the run loads the very libraries it started with.
    let mut bytes = std::fs::read(&library).unwrap();
    bytes.push(0);
    std::fs::write(&library, bytes).unwrap();
    let (code, text) = trlvr(&["train", "--resume", out.to_str().unwrap(), "--trust-plugins"]);
    assert_ne!(code, 0);
    assert!(text.contains("changed since the run started"), "{text}");

    let (code, text, _) = run("unknown", "", terms, false);
    assert_ne!(code, 0);
    assert!(text.contains("no reward named \"boxed-once\"") && text.contains("correct, length"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A soak test: each arm, two mini-batches a step (π_old from the rollouts in the second;
/// KL-Reg's reference log-probs in the loss), killed `TRLVR_SOAK_KILLS` times (default 5;
/// CI runs 10) at random moments within 4 minutes, then resumed to the end.
#[test]
fn a_run_killed_at_random_moments_and_resumed_equals_the_uninterrupted_run() {
    let kills = std::env::var("TRLVR_SOAK_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(5);
    let seed: u64 = std::env::var("TRLVR_SOAK_SEED").ok().and_then(|k| k.parse().ok()).unwrap_or(7);
    eprintln!("soak: {kills} kills per arm, TRLVR_SOAK_SEED={seed}");
    for (i, arm) in ["trlvr", "grpo", "kl-reg"].into_iter().enumerate() {
        killed_and_resumed(arm, seed + i as u64, kills);
    }
}

fn killed_and_resumed(arm: &str, seed: u64, max_kills: usize) {
    let dir = temp(&format!("kill-{arm}"));
    let model = tiny_model(&dir);
    let config = recipe(&dir, &model, arm, 6);
    let whole = dir.join("whole");
    let started = std::time::Instant::now();
    let (code, text) =
        trlvr(&["train", "--config", config.to_str().unwrap(), "--out", whole.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    // Kills land anywhere within a step: rollouts, update, metrics, checkpoint.
    let step_ms = (started.elapsed().as_millis() as u64 / 6).max(50);

    let split = dir.join("split");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut args: Vec<String> =
        ["train", "--config", config.to_str().unwrap(), "--out", split.to_str().unwrap()]
            .map(String::from)
            .to_vec();
    let mut kills = 0;
    let soak = std::time::Instant::now();
    loop {
        let mut child = Command::new(env!("CARGO_BIN_EXE_trlvr"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // SIGKILL at a random moment: during start-up, mid-step, mid-checkpoint or between
        // the two, the kills spread over the six steps (several per step in a long soak).
        let logged =
            |run: &Path| std::fs::read_to_string(run.join("metrics.jsonl")).map_or(0, |t| t.lines().count());
        let advance = rng.random_bool((6.0 / max_kills as f64).min(1.0));
        let target = (logged(&split) + usize::from(advance)).min(5);
        let started = std::time::Instant::now();
        while logged(&split) < target
            && child.try_wait().unwrap().is_none()
            && started.elapsed().as_secs() < 120
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(0..step_ms)));
        let finished = child.try_wait().unwrap().is_some();
        if !finished {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        eprintln!("{arm}: killed: {}, steps logged: {}", !finished, logged(&split));
        // Killed before it wrote its config: nothing to resume yet, start again.
        if split.join("config.toml").exists() {
            args = ["train", "--resume", split.to_str().unwrap()].map(String::from).to_vec();
        }
        if finished || kills == max_kills || soak.elapsed().as_secs() > 240 {
            break;
        }
    }
    let (code, text) = trlvr(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{text}");
    assert!(kills > 0, "{arm}: the run was never interrupted");
    assert_eq!(timeless(&whole.join("metrics.jsonl")), timeless(&split.join("metrics.jsonl")));
    assert_eq!(lines(&whole.join("samples.jsonl")), lines(&split.join("samples.jsonl")));
    let weights = |run: &Path| std::fs::read(run.join("checkpoints/step-000006/model.safetensors")).unwrap();
    assert!(weights(&whole) == weights(&split), "{arm}: final weights differ");
    eprintln!(
        "{arm}: {kills} kills in {:.0} s, then resumed to the end: identical",
        soak.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gets_clear_errors_and_overwrites_nothing() {
    let dir = temp("bad");
    let model = tiny_model(&dir);
    let config = recipe(&dir, &model, "grpo", 3);
    let text = std::fs::read_to_string(&config).unwrap();
    let c = config.to_str().unwrap();

    // An unknown key: named, with its line.
    std::fs::write(&config, text.replace("group_size = 4", "group_size = 4\ngroup_sise = 4")).unwrap();
    let (code, err) = trlvr(&["train", "--config", c, "--out", dir.join("r1").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("group_sise") && err.contains("line 14"), "{err}");

    // A missing dataset file.
    std::fs::write(
        &config,
        text.replace("data.jsonl\", layout = \"gsm8k\" }", "nope.jsonl\", layout = \"gsm8k\" }"),
    )
    .unwrap();
    let (code, err) = trlvr(&["train", "--config", c, "--out", dir.join("r2").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("nope.jsonl"), "{err}");

    // A line without the answer field, and one whose reference holds no answer.
    std::fs::write(&config, &text).unwrap();
    std::fs::write(dir.join("data.jsonl"), format!("{DATA}{{\"question\": \"q\"}}\n")).unwrap();
    let (code, err) = trlvr(&["train", "--config", c, "--out", dir.join("r3").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("data.jsonl, line 4") && err.contains("`answer`"), "{err}");
    std::fs::write(
        dir.join("data.jsonl"),
        format!("{{\"question\": \"q\", \"answer\": \"no hashes\"}}\n{DATA}"),
    )
    .unwrap();
    let (code, err) = trlvr(&["train", "--config", c, "--out", dir.join("r4").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("line 1") && err.contains("no answer"), "{err}");

    // Weights blown up by an absurd learning rate: the run stops, names the step, and the
    // checkpoint before it is intact.
    let data = dir.join("data.jsonl");
    std::fs::write(&data, DATA).unwrap();
    let out = dir.join("r5");
    let (code, err) =
        trlvr(&["train", "--config", c, "--out", out.to_str().unwrap(), "--set", "train.lr=1e30"]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("step 2") && err.contains("checkpoint"), "{err}");
    assert!(out.join("checkpoints/step-000001/senior.bpk").exists(), "{err}");
    assert_eq!(lines(&out.join("metrics.jsonl")).len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validation_held_out_of_the_training_file_and_overlong_prompts_dropped() {
    let dir = temp("holdout");
    let model = tiny_model(&dir);
    let config = recipe(&dir, &model, "grpo", 2);
    // Eight problems, one with a question of some 300 tokens.
    let mut data: String = (1..=7)
        .map(|i| format!("{{\"question\": \"What is {i} + {i}?\", \"answer\": \"#### {}\"}}\n", 2 * i))
        .collect();
    let long = "Count the apples in this very long story. ".repeat(40);
    data.push_str(&format!("{{\"question\": \"{long}\", \"answer\": \"#### 1\"}}\n"));
    std::fs::write(dir.join("data.jsonl"), data).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    let (start, end) = (text.find("validation = ").unwrap(), text.find("[train]").unwrap());
    let holdout = format!(
        "{}holdout = 2\nvalidation_grading = \"lenient\"\nmax_prompt_tokens = 200\n\n{}",
        &text[..start],
        &text[end..]
    );
    std::fs::write(&config, holdout).unwrap();
    let out = dir.join("run");
    let (code, err) = trlvr(&["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // The long prompt is over the cap (whichever side the hash put it on), and the log says so.
    assert!(err.contains("dropped 1 of") && err.contains("max_prompt_tokens = 200"), "{err}");
    assert!(
        err.contains("validation: 0/") || err.contains("validation: 2/"),
        "validation reports progress: {err}"
    );
    let metrics = lines(&out.join("metrics.jsonl"));
    assert!(metrics[1]["validation_pass1"].is_number(), "validated on the held-out rows");
    let resolved = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(
        resolved.contains("holdout = 2") && resolved.contains("validation_grading = \"lenient\""),
        "{resolved}"
    );
    // A held-out set and a validation file at once are refused.
    let both = format!("{}\n", text.replace("[train]", "holdout = 2\n\n[train]"));
    std::fs::write(&config, both).unwrap();
    let (code, err) =
        trlvr(&["train", "--config", config.to_str().unwrap(), "--out", dir.join("r2").to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("data.holdout and data.validation"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A one-layer Qwen3 over a word-level vocabulary of 20 words (the task's words, the boxed
/// answers 0-6 and `[UNK]` for the rest of the prompt), so that a random model writes the
/// right boxed answer about once in 20 tries: the reward GRPO needs to start.
fn tiny_word_model(dir: &Path) -> PathBuf {
    let mut words: Vec<String> = ["What", "is", "+"].map(String::from).to_vec();
    words.extend((0..=3).map(|n| n.to_string()));
    words.extend((0..=3).map(|n| format!("{n}?")));
    words.extend((0..=6).map(|n| format!("\\boxed{{{n}}}")));
    // Metaspace marks a word's leading space with U+2581, as SentencePiece vocabularies do.
    let words: Vec<String> = ["[UNK]", "</s>"]
        .map(String::from)
        .into_iter()
        .chain(words.iter().map(|w| format!("\u{2581}{w}")))
        .collect();
    let vocab: serde_json::Map<String, serde_json::Value> =
        words.iter().enumerate().map(|(i, w)| (w.clone(), i.into())).collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": [{"id": 1, "content": "</s>", "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null, "post_processor": null,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": true},
        "decoder": {"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "always", "split": true},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    let tokenizer: tokenizers::Tokenizer = tokenizer.to_string().parse().unwrap();
    let config: ModelConfig = serde_json::from_str(&format!(
        r#"{{"model_type": "qwen3", "vocab_size": {}, "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
            "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false,
            "max_position_embeddings": 256}}"#,
        words.len()
    ))
    .unwrap();
    let device = Device::default();
    device.seed(11);
    let model = config.init(&device);
    let path = dir.join("tiny-word-qwen3");
    trlvr_models::save_hf_dir(&model, &config, Some(&tokenizer), &path).unwrap();
    path
}

/// The shipped GRPO recipe, as shipped but for the model (tiny, its LM head untied), the
/// task's size (sums of 0-3, written by `trlvr data arithmetic`), the response length (one
/// word), the learning rate and the steps: the training reward rises.
#[test]
fn the_shipped_grpo_recipe_raises_a_small_models_reward() {
    let dir = temp("learns");
    let model = tiny_word_model(&dir);
    let data = dir.join("sums");
    let (code, err) = trlvr(&[
        "data",
        "arithmetic",
        "--max",
        "3",
        "--ops",
        "+",
        "--validation-percent",
        "25",
        "--train",
        "10",
        "--validation",
        "3",
        "--out",
        data.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let set = |key: &str, value: String| format!("{key}={value}");
    let quoted = |p: PathBuf| format!("{:?}", p.to_str().unwrap());
    let out = dir.join("run");
    let sets = [
        set("senior.path", quoted(model)),
        set("data.train.path", quoted(data.join("train.jsonl"))),
        set("data.validation.path", quoted(data.join("validation.jsonl"))),
        set("train.max_new_tokens", "1".into()),
        set("train.steps", "60".into()),
        set("train.lr", "0.01".into()),
    ];
    let mut args =
        vec!["train", "--config", "configs/smollm2-arithmetic-grpo.toml", "--out", out.to_str().unwrap()];
    for s in &sets {
        args.extend(["--set", s.as_str()]);
    }
    let (code, err) = trlvr(&args);
    assert_eq!(code, 0, "{err}");
    let rewards: Vec<f64> =
        lines(&out.join("metrics.jsonl")).iter().map(|m| m["reward_mean"].as_f64().unwrap()).collect();
    assert_eq!(rewards.len(), 60);
    let mean = |r: &[f64]| r.iter().sum::<f64>() / r.len() as f64;
    let (start, end) = (mean(&rewards[..3]), mean(&rewards[50..]));
    eprintln!("reward: steps 1-3 {start:.3}, steps 51-60 {end:.3}; {rewards:?}");
    // About 0.05 at the start (one word in 20); a policy that always boxes one sum gets
    // about 0.2 (the commonest sum is a quarter of the problems), prompt-specific answers more.
    assert!(start < 0.12 && end > 0.17, "the reward did not rise: {rewards:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two identical three-step GRPO runs of the tiny model: (folder, "whole", "split").
fn two_finished_runs(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = temp(name);
    let model = tiny_model(&dir);
    let config = recipe(&dir, &model, "grpo", 3);
    let (whole, split) = (dir.join("whole"), dir.join("split"));
    for run in [&whole, &split] {
        let (code, text) =
            trlvr(&["train", "--config", config.to_str().unwrap(), "--out", run.to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
    }
    (dir, whole, split)
}

/// The same metrics and final weights.
fn same_end(whole: &Path, split: &Path) {
    assert_eq!(timeless(&whole.join("metrics.jsonl")), timeless(&split.join("metrics.jsonl")));
    let hf = |run: &Path| std::fs::read(run.join("checkpoints/step-000003/model.safetensors")).unwrap();
    assert!(hf(whole) == hf(split), "final weights differ");
}

/// A checkpoint damaged after it was written (a flipped byte) is named at `--resume`, set
/// aside, and the run goes on from the one before to the same end as a run never damaged;
/// a checkpoint a crash left renamed aside mid-save is put back.
#[test]
fn a_damaged_last_checkpoint_is_named_and_the_run_resumes_from_the_one_before() {
    let (dir, whole, split) = two_finished_runs("damaged");
    let last = split.join("checkpoints/step-000003");
    let weights = last.join("senior.bpk");
    let mut bytes = std::fs::read(&weights).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&weights, bytes).unwrap();
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("step-000003/senior.bpk") && text.contains("damaged"), "{text}");
    assert!(text.contains("from step 2"), "{text}");
    assert!(split.join("checkpoints/step-000003.damaged").exists());
    same_end(&whole, &split);
    // A crash between the renames of a save: the checkpoint aside comes back.
    std::fs::rename(&last, split.join("checkpoints/step-000003.old")).unwrap();
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("from step 3") && last.join("senior.bpk").exists(), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every file under `dir` with its bytes: what a refused resume must leave as it was.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// Rewrites a checkpoint's `checksums.json` for its files as they are now (a checkpoint
/// that passes its checksums but does not load).
fn recompute_checksums(checkpoint: &Path) {
    let mut sums = serde_json::Map::new();
    for entry in std::fs::read_dir(checkpoint).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name != "checksums.json" {
            let bytes = std::fs::metadata(&path).unwrap().len();
            let hash = format!("{:016x}", trlvr::data::hash_files(std::slice::from_ref(&path)).unwrap());
            sums.insert(name, serde_json::json!([bytes, hash]));
        }
    }
    std::fs::write(checkpoint.join("checksums.json"), serde_json::Value::Object(sums).to_string()).unwrap();
}

/// Resume fails closed: a checkpoint without `checksums.json` is damaged (set aside, the
/// one before taken) unless `--accept-unchecked`; one that passes its checksums but does
/// not load falls back too; and with no good checkpoint left, `--resume` stops with every
/// file of the run byte-identical.
#[test]
fn resume_fails_closed_and_falls_back() {
    let (dir, whole, split) = two_finished_runs("closed");
    let last = split.join("checkpoints/step-000003");
    // Without checksums: taken as it is only when asked.
    std::fs::copy(last.join("checksums.json"), dir.join("sums")).unwrap();
    std::fs::remove_file(last.join("checksums.json")).unwrap();
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap(), "--accept-unchecked"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("from step 3"), "{text}");
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("checksums.json") && text.contains("set aside") && text.contains("from step 2"),
        "{text}"
    );
    assert!(split.join("checkpoints/step-000003.damaged").exists());
    same_end(&whole, &split);
    // Whole by its checksums, but unloadable: the one before.
    let last = split.join("checkpoints/step-000003");
    std::fs::write(last.join("senior.bpk"), b"not a record").unwrap();
    recompute_checksums(&last);
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("senior.bpk") && text.contains("falling back") && text.contains("from step 2"),
        "{text}"
    );
    same_end(&whole, &split);
    // No good checkpoint at all: refused, nothing changed.
    for entry in std::fs::read_dir(split.join("checkpoints")).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != "step-000003" {
            std::fs::remove_dir_all(&path).unwrap();
        }
    }
    std::fs::write(split.join("checkpoints/step-000003/optimizer.bpk"), b"damaged").unwrap();
    let before = snapshot(&split);
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap()]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("no checkpoint of") && text.contains("no file was changed"), "{text}");
    assert!(snapshot(&split) == before, "every file of the run as it was");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A disk that fills up during a save (simulated by a file-size limit on the process,
/// `ulimit -f`, with SIGXFSZ ignored so that writes fail as on a full disk): the run stops
/// with an error naming the checkpoint, the one before stays whole, and the run resumes
/// from it to the uninterrupted run's end.
#[cfg(unix)]
#[test]
fn a_disk_full_during_a_save_keeps_the_previous_checkpoint() {
    let (dir, whole, split) = two_finished_runs("disk-full");
    // The run as it stood when step 3's save began.
    std::fs::remove_dir_all(split.join("checkpoints/step-000003")).unwrap();
    let weights = std::fs::metadata(split.join("checkpoints/step-000002/senior.bpk")).unwrap().len();
    let blocks = (weights / 2 / 512).to_string();
    let out = Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f \"$1\"; shift; exec \"$@\"", "sh", &blocks])
        .args([env!("CARGO_BIN_EXE_trlvr"), "train", "--resume", split.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("step-000003") && text.contains("File too large"), "{text}");
    assert!(!split.join("checkpoints/step-000003").exists(), "no half-written checkpoint in place");
    let (code, text) = trlvr(&["train", "--resume", split.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("from step 2"), "{text}");
    same_end(&whole, &split);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mpirun -np N trlvr train` (feature `mpi`; Open MPI): ranks train as one process, a
/// rank that dies ends the job, ranks that cannot or do not match are refused.
#[cfg(feature = "mpi")]
mod mpi {
    use super::*;

    /// `mpirun -np <np> trlvr <args>`, then more `: -np 1 <program> <args>` blocks (MPMD).
    fn mpirun<S: AsRef<std::ffi::OsStr>>(np: usize, args: &[S], more: &[(&Path, &[String])]) -> Command {
        let mut command = Command::new("mpirun");
        // Root in CI containers; loopback TCP and shared memory without ptrace.
        command
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .args(["--oversubscribe", "-np", &np.to_string(), env!("CARGO_BIN_EXE_trlvr")])
            .args(args);
        for (program, args) in more {
            command.args([":", "-np", "1"]).arg(program).args(args.iter());
        }
        command.current_dir(env!("CARGO_MANIFEST_DIR")).stdin(Stdio::null());
        command
    }

    fn run(mut command: Command) -> (i32, String) {
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text)
    }

    /// Two mini-batches of two prompt groups a step (each rank takes one group of each), a
    /// learning rate at which Adam does not magnify rounding (see tests/train.rs).
    const SETS: [&str; 6] = [
        "--set",
        "train.prompts_per_step=4",
        "--set",
        "train.mini_batch_prompts=2",
        "--set",
        "train.lr=1e-4",
    ];

    /// `TRLVR_MPI_DEVICE` (say `cuda:local`, one GPU per rank; scripts/gpu_check.sh) or the
    /// recipe's CPU.
    fn train_args<'a>(config: &'a Path, out: &'a Path) -> Vec<String> {
        let mut args: Vec<String> =
            ["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()]
                .into_iter()
                .chain(SETS)
                .map(String::from)
                .collect();
        if let Ok(device) = std::env::var("TRLVR_MPI_DEVICE") {
            args.extend(["--device".to_string(), device]);
        }
        args
    }

    fn weights(run: &Path, step: usize) -> Vec<f32> {
        let dir = run.join(format!("checkpoints/step-{step:06}"));
        let model = trlvr_models::load_hf_dir(&dir, &Device::default()).unwrap().0;
        struct Flat(Vec<f32>);
        impl burn::module::ModuleVisitor for Flat {
            fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
                self.0.extend(param.val().try_into_vec_as::<f32>().unwrap());
            }
        }
        let mut flat = Flat(Vec::new());
        burn::module::Module::visit(&model, &mut flat);
        flat.0
    }

    #[test]
    fn two_ranks_train_as_one_process() {
        let dir = temp("mpi-same");
        let model = tiny_model(&dir);
        for arm in ["trlvr", "kl-reg"] {
            let config = recipe(&dir, &model, arm, 3);
            let (one, two) = (dir.join(format!("one-{arm}")), dir.join(format!("two-{arm}")));
            let (code, text) = run(mpirun(1, &train_args(&config, &one), &[]));
            assert_eq!(code, 0, "{text}");
            let (code, text) = run(mpirun(2, &train_args(&config, &two), &[]));
            assert_eq!(code, 0, "{text}");
            assert!(text.contains("on each of 2 ranks"), "{text}");
            for rank in 0..2 {
                // 3 steps of 4 prompts x 4 rollouts: half on each rank.
                assert!(text.contains(&format!("rank {rank} of 2: 24 rollouts written here")), "{text}");
            }
            let (a, b) = (lines(&one.join("metrics.jsonl")), lines(&two.join("metrics.jsonl")));
            assert_eq!(a.len(), 3);
            for (x, y) in a.iter().zip(&b) {
                for key in ["reward_mean", "accuracy", "response_len_mean", "senior_share", "rows_updated"] {
                    assert_eq!(x[key], y[key], "{arm} step {}: {key}", x["step"]);
                }
                for key in ["loss", "grad_norm", "kl"] {
                    let (p, q) = (x[key].as_f64().unwrap_or(0.0), y[key].as_f64().unwrap_or(0.0));
                    assert!(
                        (p - q).abs() <= 1e-5 * p.abs().max(0.1),
                        "{arm} step {}: {key} {p} vs {q}",
                        x["step"]
                    );
                }
            }
            let (w1, w2) = (weights(&one, 3), weights(&two, 3));
            let norm = |v: &mut dyn Iterator<Item = f32>| v.map(|x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            let diff = norm(&mut w1.iter().zip(&w2).map(|(p, q)| p - q)) / norm(&mut w1.iter().copied());
            assert!(diff <= 1e-5, "{arm}: final weights differ by {diff:e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn two_ranks_evaluate_as_one_process() {
        let dir = temp("mpi-eval");
        let model = tiny_model(&dir);
        let data = dir.join("data.jsonl");
        std::fs::write(&data, DATA).unwrap();
        let eval = |np: usize, out: &Path| {
            // One problem a batch: three batches, dealt 0, 1, then 0 again.
            let args =
                ["eval", "--senior", model.to_str().unwrap(), "--data", data.to_str().unwrap(), "--n", "3"];
            let more = [
                "--max-new-tokens",
                "8",
                "--batch",
                "1",
                "--bootstrap",
                "50",
                "--out",
                out.to_str().unwrap(),
            ];
            let (code, text) = run(mpirun(np, &[&args[..], &more[..]].concat(), &[]));
            assert_eq!(code, 0, "{text}");
            let mut report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("eval.json")).unwrap()).unwrap();
            for key in ["throughput", "wall_seconds", "samples"] {
                report.as_object_mut().unwrap().remove(key);
            }
            (report, std::fs::read(out.join("samples.jsonl")).unwrap())
        };
        let (one, two) = (eval(1, &dir.join("one")), eval(2, &dir.join("two")));
        assert_eq!(one.0["macro"]["problems"], 3, "{}", one.0);
        assert_eq!(one.0, two.0, "the same figures");
        assert!(one.1 == two.1, "the same samples, in the same order");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The pid of rank `rank` among `parent`'s children.
    fn rank_pid(parent: u32, rank: usize) -> Option<u32> {
        let wanted = format!("OMPI_COMM_WORLD_RANK={rank}");
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid: u32 = stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()?;
            let environ = std::fs::read(entry.path().join("environ")).ok()?;
            let has = environ.split(|&b| b == 0).any(|v| v == wanted.as_bytes());
            (ppid == parent && has).then_some(pid)
        })
    }

    #[test]
    fn a_killed_rank_ends_the_job_naming_it_and_resume_finishes_the_same() {
        let dir = temp("mpi-kill");
        let model = tiny_model(&dir);
        let config = recipe(&dir, &model, "trlvr", 6);
        let (whole, split) = (dir.join("whole"), dir.join("split"));
        let (code, text) = run(mpirun(2, &train_args(&config, &whole), &[]));
        assert_eq!(code, 0, "{text}");

        let killed = std::cell::Cell::new(None);
        let job = mpirun(2, &train_args(&config, &split), &[]);
        // The job ends, it does not hang: it is waited for within a limit.
        let (ended, text) = ended_within(job, Duration::from_secs(180), |parent| {
            wait_for_steps(&split, 2);
            signal(rank_pid(parent, 1).expect("rank 1 is running"), "-KILL");
            killed.set(Some(std::time::Instant::now()));
        });
        let after = killed.get().unwrap().elapsed().as_secs_f64();
        assert!(
            ended.is_some_and(|c| c != 0) && after < 60.0,
            "the job ended with a failure within 60 s: {text}"
        );
        assert!(text.contains("rank 1"), "the message names rank 1: {text}");
        eprintln!("job ended {after:.1} s after rank 1 was killed");

        let (code, text) = run(mpirun(2, &["train", "--resume", split.to_str().unwrap()], &[]));
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("resuming"), "{text}");
        assert_eq!(timeless(&whole.join("metrics.jsonl")), timeless(&split.join("metrics.jsonl")));
        assert_eq!(weights(&whole, 6), weights(&split, 6), "the resumed job ends with the same weights");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Runs `job` until it ends or `limit` passes (then kills it); its exit status if it
    /// ended, and its output.
    fn ended_within(mut job: Command, limit: Duration, during: impl FnOnce(u32)) -> (Option<i32>, String) {
        let mut child = job.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        during(child.id());
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(20));
        }
        let ended = child.try_wait().unwrap();
        if ended.is_none() {
            child.kill().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        (ended.map(|s| s.code().unwrap_or(-1)), text)
    }

    /// Steps `run` has logged so far.
    fn logged(run: &Path) -> usize {
        std::fs::read_to_string(run.join("metrics.jsonl")).map_or(0, |t| t.lines().count())
    }

    /// Waits until `run` has logged `steps` steps (two minutes at most).
    fn wait_for_steps(run: &Path, steps: usize) {
        let started = std::time::Instant::now();
        while logged(run) < steps && started.elapsed().as_secs() < 120 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `kill <signal> <pid>`.
    fn signal(pid: u32, signal: &str) {
        assert!(Command::new("kill").args([signal, &pid.to_string()]).status().unwrap().success());
    }

    /// A rank that stops without dying (SIGSTOP) would leave the other in a collective for
    /// ever: the watchdog (`ranks.timeout_s`, 5 s here) ends the job naming it.
    #[test]
    fn a_stopped_rank_ends_the_job_within_the_watchdog_naming_it() {
        let dir = temp("mpi-stop");
        let model = tiny_model(&dir);
        let config = recipe(&dir, &model, "trlvr", 50);
        let out = dir.join("run");
        let mut args = train_args(&config, &out);
        args.extend(["--set".into(), "ranks.timeout_s=5".into()]);
        let stopped = std::cell::Cell::new(None);
        let (ended, text) = ended_within(mpirun(2, &args, &[]), Duration::from_secs(120), |parent| {
            wait_for_steps(&out, 1);
            signal(rank_pid(parent, 1).expect("rank 1 is running"), "-STOP");
            stopped.set(Some(std::time::Instant::now()));
        });
        let after = stopped.get().unwrap().elapsed().as_secs_f64();
        eprintln!("job ended {after:.1} s after rank 1 was stopped");
        assert!(ended.is_some_and(|c| c != 0), "the job ended with a failure: {text}");
        assert!(after < 5.0 + 30.0, "ended {after:.1} s after the stop");
        assert!(text.contains("watchdog") && text.contains("has not heard from rank(s) [1]"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A rank that cannot load its model ends the job with its error, and nothing is
    /// written.
    #[test]
    fn a_rank_that_cannot_load_its_model_ends_the_job_naming_it() {
        let dir = temp("mpi-load");
        let model = tiny_model(&dir);
        let config = recipe(&dir, &model, "trlvr", 2);
        let out = dir.join("run");
        let mine = train_args(&config, &out);
        let mut theirs = mine.clone();
        theirs.extend(["--set".into(), "senior.path=\"/nonexistent/model\"".into()]);
        let exe = Path::new(env!("CARGO_BIN_EXE_trlvr"));
        let (ended, text) =
            ended_within(mpirun(1, &mine, &[(exe, theirs.as_slice())]), Duration::from_secs(120), |_| {});
        assert!(ended.is_some_and(|c| c != 0), "the job ended with a failure: {text}");
        assert!(text.contains("rank 1 of 2: error") && text.contains("/nonexistent/model"), "{text}");
        assert!(!out.join("config.toml").exists(), "nothing written");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A run started on two ranks resumes on one, and one started on one resumes on two:
    /// the steps after the stop are those of an uninterrupted run (to rounding: the sums
    /// over ranks add in another order).
    #[test]
    fn a_run_resumes_on_another_number_of_ranks() {
        let dir = temp("mpi-resize");
        let model = tiny_model(&dir);
        let config = recipe(&dir, &model, "trlvr", 4);
        let whole = dir.join("whole");
        let (code, text) = run(mpirun(1, &train_args(&config, &whole), &[]));
        assert_eq!(code, 0, "{text}");
        for (first, then) in [(2, 1), (1, 2)] {
            let split = dir.join(format!("split-{first}-{then}"));
            // Stopped (SIGTERM to mpirun) after two steps, then resumed on the other count.
            let job = mpirun(first, &train_args(&config, &split), &[]);
            let (_, text) = ended_within(job, Duration::from_secs(120), |parent| {
                wait_for_steps(&split, 2);
                signal(parent, "-TERM");
            });
            assert!(logged(&split) < 4, "stopped before the end: {text}");
            let resume = ["train", "--resume", split.to_str().unwrap()];
            let (code, text) = run(mpirun(then, &resume, &[]));
            assert_eq!(code, 0, "{first} then {then} ranks: {text}");
            assert!(text.contains("resuming"), "{text}");
            let (a, b) = (lines(&whole.join("metrics.jsonl")), lines(&split.join("metrics.jsonl")));
            assert_eq!(a.len(), b.len(), "{first} then {then}");
            for (x, y) in a.iter().zip(&b) {
                for key in ["reward_mean", "rows_updated", "tokens"] {
                    assert_eq!(x[key], y[key], "{first} then {then}, step {}: {key}", x["step"]);
                }
                let (p, q) = (x["loss"].as_f64().unwrap(), y["loss"].as_f64().unwrap());
                assert!((p - q).abs() <= 1e-5 * p.abs().max(0.1), "step {}: loss {p} vs {q}", x["step"]);
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ranks_that_cannot_split_or_do_not_match_are_refused() {
        let dir = temp("mpi-refuse");
        let model = tiny_model(&dir);
        let config = recipe(&dir, &model, "grpo", 2);
        let out = dir.join("run");
        // The recipe's mini-batches hold one prompt group: two ranks cannot share them.
        let args = ["train", "--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()];
        let (code, text) = run(mpirun(2, &args, &[]));
        assert_ne!(code, 0);
        assert!(text.contains("2 ranks cannot share mini-batches of 1 prompt groups"), "{text}");
        assert!(!out.join("config.toml").exists(), "nothing written");
        // Another model file on rank 1, then another build.
        let other_model = tiny_model(&dir.join("other"));
        let mut bytes = std::fs::read(other_model.join("model.safetensors")).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(other_model.join("model.safetensors"), bytes).unwrap();
        let other_config = recipe(&dir.join("other"), &other_model, "grpo", 2);
        let build = dir.join("trlvr-other-build");
        let mut exe = std::fs::read(env!("CARGO_BIN_EXE_trlvr")).unwrap();
        exe.push(0);
        std::fs::write(&build, exe).unwrap();
        std::fs::set_permissions(&build, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let exe = Path::new(env!("CARGO_BIN_EXE_trlvr"));
        let mine = train_args(&config, &out);
        let theirs = train_args(&other_config, &out);
        for ((program, args), what) in [((exe, &theirs), "recipe"), ((build.as_path(), &mine), "trlvr build")]
        {
            let (code, text) = run(mpirun(1, &mine, &[(program, args.as_slice())]));
            assert_ne!(code, 0, "{what}");
            assert!(text.contains(&format!("rank(s) [1] of 2 have a different {what}")), "{what}: {text}");
            assert!(!out.join("config.toml").exists(), "{what}: nothing written");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
