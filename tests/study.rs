//! `trlvr study` as a user runs it, on a tiny random Qwen3 with the real Qwen3 tokenizer:
//! a quick study end to end (the report's structure, every verdict following its
//! intervals and declared rule), killed midway and started again (finished runs kept, the
//! same report), a changed study refused, and bad study files refused before any
//! training, naming the file and the key.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use burn::prelude::*;
use serde_json::Value;
use trlvr_models::ModelConfig;

mod common;
use common::check_verdicts;

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
    let dir = std::env::temp_dir().join(format!("trlvr-study-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A random one-layer Qwen3 over the real Qwen3 vocabulary, in the Hugging Face layout.
fn tiny_model(dir: &Path, name: &str, seed: u64) -> PathBuf {
    let config: ModelConfig = serde_json::from_str(
        r#"{"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8,
            "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
            "max_position_embeddings": 512}"#,
    )
    .unwrap();
    let device = Device::default();
    device.seed(seed);
    let model = config.init(&device);
    let tokenizer_path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/qwen3-tokenizer/tokenizer.json");
    let tokenizer = tokenizers::Tokenizer::from_file(tokenizer_path).unwrap();
    let path = dir.join(name);
    trlvr_models::save_hf_dir(&model, &config, Some(&tokenizer), &path).unwrap();
    path
}

const DATA: &str = "{\"question\": \"What is 2 + 2?\", \"answer\": \"2+2=4\\n#### 4\"}\n\
{\"question\": \"What is 3 * 3?\", \"answer\": \"#### 9\"}\n\
{\"question\": \"What is 10 - 7?\", \"answer\": \"#### 3\"}\n\
{\"question\": \"What is 5 + 6?\", \"answer\": \"#### 11\"}\n";

/// The study's files: a senior, its weaker junior, data, a recipe, and the study.
struct Files {
    dir: PathBuf,
    study: PathBuf,
}

fn files(name: &str) -> Files {
    let dir = temp(name);
    let senior = tiny_model(&dir, "senior", 5);
    let junior = tiny_model(&dir, "junior", 6);
    let data = dir.join("data.jsonl");
    std::fs::write(&data, DATA).unwrap();
    let recipe = dir.join("recipe.toml");
    std::fs::write(
        &recipe,
        format!(
            "arm = \"trlvr\"\n\n[senior]\npath = \"{}\"\n\n[junior]\npath = \"{}\"\n\n[data]\n\
             train = {{ path = \"{}\", layout = \"gsm8k\" }}\n\n[train]\nsteps = 2\nprompts_per_step = 2\n\
             group_size = 4\nmini_batch_prompts = 2\nmicro_batch_rows = 8\nmax_new_tokens = 6\nlr = 0.01\n\
             checkpoint_every = 1\nskip_zero_advantage = false\n",
            senior.display(),
            junior.display(),
            data.display()
        ),
    )
    .unwrap();
    let study = dir.join("study.toml");
    std::fs::write(&study, study_text(&recipe, &data)).unwrap();
    Files { dir, study }
}

fn study_text(recipe: &Path, data: &Path) -> String {
    format!(
        r#"name = "quick"
seeds = [1, 2]

[base]
recipe = "{recipe}"

[[arms]]
name = "grpo"
arm = "grpo"

[[arms]]
name = "trlvr"
arm = "trlvr"

[[arms]]
name = "kl-reg"
arm = "kl-reg"
seeds = [1]

[[arms]]
name = "start"
train = false

[evaluation]
data = ["{data}:gsm8k"]
n = 2
k = [1]
max_new_tokens = 6
grading = "lenient"

[[evaluations]]
name = "step"

[[evaluations]]
name = "word"
handoff = {{ name = "word", p_senior = 0.5 }}

[analysis]
bootstrap = 300

[[claims]]
id = "solo"
statement = "TRLVR is as accurate alone as GRPO"
figure = "solo"
a = "trlvr"
b = "grpo"
within = 5.0
expected_half_width = 40.0

[[claims]]
id = "tax"
statement = "TRLVR pays less tax than GRPO"
tests = [{{ figure = "tax", a = "trlvr", b = "grpo", below = 0.0 }}, {{ figure = "tax", a = "trlvr", below = 5.0, evaluation = "word" }}]

[[claims]]
id = "legible"
statement = "TRLVR's chains cost the junior less than GRPO's"
figure = "junior_ce"
a = "trlvr"
b = "grpo"
below = 0.0
requires = [{{ figure = "kl", a = "grpo", b = "start", above = 0.0 }}]

[[claims]]
id = "kl-reg"
statement = "KL-Reg does not reach TRLVR's tax at its solo accuracy"
rule = "none"
each = ["kl-reg"]
tests = [{{ figure = "tax", a = "{{each}}", b = "trlvr", below = 5.0 }}, {{ figure = "solo", a = "{{each}}", b = "trlvr", above = -5.0 }}]
"#,
        recipe = recipe.display(),
        data = data.display()
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

fn study(f: &Files, out: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["study", "--config", f.study.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend(extra);
    trlvr(&args)
}

/// study.json without what differs between identical runs: times, and the command.
fn timeless(mut v: Value) -> Value {
    v["wall_s"] = Value::Null;
    v["provenance"]["command"] = Value::Null;
    v["provenance"]["declared"]["at"] = Value::Null;
    for run in v["runs"].as_array_mut().unwrap() {
        run["cost"]["seconds"] = Value::Null;
        run["evaluation_s"] = Value::Null;
    }
    v
}

#[test]
fn a_quick_study_runs_and_resumes_to_the_same_report() {
    let f = files("quick");
    let whole = f.dir.join("whole");
    let (code, text) = study(&f, &whole, &["--jobs", "2"]);
    assert_eq!(code, 0, "{text}");

    // The report: its sections, a verdict per claim, the tables of both evaluations.
    let report = std::fs::read_to_string(whole.join("report.md")).unwrap();
    for section in [
        "## Verdicts",
        "## Claims as declared",
        "## Table: evaluation step",
        "## Table: evaluation word",
        "## Tests",
        "## Runs and their cost",
        "## How the intervals are made",
        "## Plots",
        "## Settings",
    ] {
        assert!(report.contains(section), "missing {section}:\n{report}");
    }
    assert!(report.contains("commit: ") && report.contains("(hash "), "{report}");
    let s = json(&whole.join("study.json"));
    let claims = s["analysis"]["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 4);
    // Declared with an expected interval wider than its margin: not testable by design.
    assert_eq!(claims[0]["verdict"], "not_testable");
    assert!(claims[0]["why"].as_str().unwrap().starts_with("by design"));
    check_verdicts(&s["analysis"]);
    // Every arm in both evaluations; the start once, the kl-reg arm with its one seed.
    let rows = s["analysis"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let seeds = |arm: &str| rows.iter().find(|r| r["arm"] == arm).unwrap()["seeds"].as_array().unwrap().len();
    assert_eq!((seeds("grpo"), seeds("kl-reg"), seeds("start")), (2, 1, 1));
    // Costs: GRPO writes every token itself; TRLVR's junior writes some.
    let runs = s["runs"].as_array().unwrap();
    let cost = |run: &str| runs.iter().find(|r| r["run"] == run).unwrap()["cost"].clone();
    assert_eq!(cost("grpo-seed1")["junior_tokens"], 0);
    assert!(cost("trlvr-seed2")["junior_tokens"].as_u64().unwrap() > 0);
    assert_eq!(cost("trlvr-seed1")["steps"], 2);
    for plot in ["claims.png", "reward.png"] {
        let bytes = std::fs::read(whole.join(plot)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 1000, "{plot}");
        assert!(report.contains(&format!("![{plot}]({plot})")), "{plot}");
    }

    // The word evaluation takes the step one's solo samples and their measures.
    for run in ["grpo-seed1", "start"] {
        let eval = |e: &str| json(&whole.join(format!("runs/{run}/eval-{e}/eval.json")));
        let (step, word) = (eval("step"), eval("word"));
        assert!(word["solo_from"].as_str().unwrap().ends_with("eval-step"), "{}", word["solo_from"]);
        assert_eq!(word["throughput"]["solo_tokens"], 0);
        assert!(word["throughput"]["handoff_tokens"].as_u64().unwrap() > 0);
        let problems = |e: &Value| e["sets"][0]["problems"].as_array().unwrap().clone();
        assert_eq!(problems(&step).len(), problems(&word).len());
        for (a, b) in problems(&step).iter().zip(&problems(&word)) {
            assert_eq!((&a["solo_correct"], &a["legibility"]), (&b["solo_correct"], &b["legibility"]));
        }
    }

    // Killed midway (after its first run is trained and evaluated), then started again:
    // the finished runs are kept, and the report is the uninterrupted one's, times aside.
    let broken = f.dir.join("broken");
    let mut child = Command::new(env!("CARGO_BIN_EXE_trlvr"))
        .args(["study", "--config", f.study.to_str().unwrap(), "--out", broken.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first = broken.join("runs/grpo-seed1/run.json");
    let evaluated = broken.join("runs/grpo-seed1/eval-word/evaluated.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !evaluated.exists() && std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(first.exists(), "the first run finished before the kill");
    assert!(!broken.join("study.json").exists(), "killed before the end");
    let kept = std::fs::read(&first).unwrap();
    let (code, text) = study(&f, &broken, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("grpo-seed1: done, kept"), "{text}");
    assert_eq!(std::fs::read(&first).unwrap(), kept, "the finished run was not trained again");
    let resumed = json(&broken.join("study.json"));
    assert_eq!(timeless(resumed)["analysis"], timeless(s.clone())["analysis"]);
    assert_eq!(
        timeless(json(&broken.join("study.json")))["runs"],
        timeless(s.clone())["runs"],
        "the same steps and tokens"
    );

    // A third start trains and draws nothing.
    let (code, text) = study(&f, &broken, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("this start trained 0 runs and drew 0 evaluations"), "{text}");

    // A claim edited after the runs began: nothing runs again, and the report says so.
    let text = std::fs::read_to_string(&f.study).unwrap();
    std::fs::write(&f.study, text.replace("below = 0.0\nrequires", "below = 0.5\nrequires")).unwrap();
    let (code, log) = study(&f, &broken, &[]);
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("this start trained 0 runs and drew 0 evaluations"), "{log}");
    assert_eq!(json(&broken.join("study.json"))["claims_changed_after_start"], true);
    let report = std::fs::read_to_string(broken.join("report.md")).unwrap();
    assert!(report.contains("**changed after the study's first start**"), "{report}");
    std::fs::write(&f.study, text).unwrap();

    // The study changed under finished runs: refused, naming them; nothing retrained.
    let edited = std::fs::read_to_string(&f.study)
        .unwrap()
        .replace("seeds = [1]\n", "seeds = [1]\nset = [\"objective.beta=0.5\"]\n");
    std::fs::write(&f.study, edited).unwrap();
    let (code, text) = study(&f, &broken, &[]);
    assert_ne!(code, 0);
    assert!(text.contains("the study changed") && text.contains("run kl-reg-seed1"), "{text}");
    assert!(text.contains("--rerun-changed"), "{text}");
    assert!(!text.contains("run grpo-seed1,"), "only the changed arm: {text}");
    let _ = std::fs::remove_dir_all(&f.dir);
}

/// Every shipped study file reads and checks (`--plan`: arms, recipes, evaluations and
/// claims), with every trained arm at every seed in its plan.
#[test]
fn the_shipped_studies_plan() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/studies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "{files:?}");
    for file in files {
        let out = temp(&format!("plan-{}", file.file_stem().unwrap().to_string_lossy()));
        let (code, text) =
            trlvr(&["study", "--config", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--plan"]);
        assert_eq!(code, 0, "{}: {text}", file.display());
        let study: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let seeds = study["seeds"].as_array().unwrap().len();
        // An arm may run fewer seeds than the study (`seeds = [1]` on the arm).
        let expected: usize = study["arms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a.get("train").is_none())
            .map(|a| a.get("seeds").and_then(|s| s.as_array()).map_or(seeds, Vec::len))
            .sum();
        let planned = text.lines().filter(|l| l.contains("-seed")).count();
        assert_eq!(planned, expected, "{}: {text}", file.display());
    }
}

/// Bad study files stop before any training, naming the file and the key.
#[test]
fn bad_study_files_are_refused_before_any_training() {
    let f = files("refused");
    let text = std::fs::read_to_string(&f.study).unwrap();
    // A senior with another tokenizer file: its prompts would differ.
    let other = f.dir.join("other");
    let senior = f.dir.join("senior");
    std::fs::create_dir_all(&other).unwrap();
    for file in ["model.safetensors", "config.json"] {
        std::fs::copy(senior.join(file), other.join(file)).unwrap();
    }
    let tokenizer: Value = json(&senior.join("tokenizer.json"));
    std::fs::write(other.join("tokenizer.json"), serde_json::to_string_pretty(&tokenizer).unwrap()).unwrap();
    for (name, edit, want) in [
        (
            "unknown-arm",
            text.replace("b = \"grpo\"\nwithin", "b = \"gpro\"\nwithin"),
            "claims[0] (\"solo\"): b = \"gpro\": no such arm",
        ),
        (
            "no-margin",
            text.replace("below = 0.0\nrequires", "requires"),
            "claims[2] (\"legible\"): no threshold or margin",
        ),
        (
            "missing-recipe",
            text.replace(
                "name = \"kl-reg\"\narm = \"kl-reg\"",
                "name = \"kl-reg\"\nrecipe = \"/nowhere/kl.toml\"",
            ),
            "arms[2] (\"kl-reg\"): recipe /nowhere/kl.toml: no such file",
        ),
        (
            "other-prompts",
            text.replace(
                "name = \"kl-reg\"\narm = \"kl-reg\"",
                &format!("name = \"kl-reg\"\narm = \"kl-reg\"\nset = [\"senior.path={}\"]", other.display()),
            ),
            "arms grpo and kl-reg would be evaluated on different prompts",
        ),
        (
            "unknown-key",
            text.replace("[analysis]", "[analysis]\nconfidance = 0.9"),
            "unknown field `confidance`",
        ),
    ] {
        let path = f.dir.join(format!("{name}.toml"));
        std::fs::write(&path, edit).unwrap();
        let out = f.dir.join(format!("out-{name}"));
        let (code, log) =
            trlvr(&["study", "--config", path.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert_ne!(code, 0, "{name}: {log}");
        assert!(log.contains(&path.display().to_string()), "{name}: the file is named: {log}");
        assert!(log.contains(want), "{name}: {log}");
        assert!(!out.exists(), "{name}: nothing written");
    }
    let _ = std::fs::remove_dir_all(&f.dir);
}

/// `mpirun -np 2 trlvr study` (feature `mpi`; Open MPI): every rank works on each run in
/// turn, rank 0 writes the study, and it holds the one-process study's runs, steps, tokens
/// and verdicts.
#[cfg(feature = "mpi")]
mod mpi {
    use super::*;

    #[test]
    fn a_study_on_two_ranks_is_the_one_process_study() {
        let f = files("mpi");
        let (one, two) = (f.dir.join("one"), f.dir.join("two"));
        let (code, text) = study(&f, &one, &[]);
        assert_eq!(code, 0, "{text}");
        let out = Command::new("mpirun")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .args(["--oversubscribe", "-np", "2", env!("CARGO_BIN_EXE_trlvr")])
            .args(["study", "--config", f.study.to_str().unwrap(), "--out", two.to_str().unwrap()])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{text}");
        let (a, b) = (json(&one.join("study.json")), json(&two.join("study.json")));
        let shape = |s: &Value| -> Vec<(Value, Value, Value, Value)> {
            s["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["run"].clone(),
                        r["cost"]["steps"].clone(),
                        r["cost"]["senior_tokens"].clone(),
                        r["cost"]["junior_tokens"].clone(),
                    )
                })
                .collect()
        };
        assert_eq!(shape(&a), shape(&b), "the same runs, steps and tokens");
        let verdicts = |s: &Value| -> Vec<Value> {
            s["analysis"]["claims"].as_array().unwrap().iter().map(|c| c["verdict"].clone()).collect()
        };
        assert_eq!(verdicts(&a), verdicts(&b));
        check_verdicts(&b["analysis"]);
        let _ = std::fs::remove_dir_all(&f.dir);
    }
}
