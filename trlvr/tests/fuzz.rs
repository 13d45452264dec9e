//! The core's file parsers under hostile bytes (`trlvr::testing::fuzz`): datasets and
//! evaluation sample stores. Each input is written to a file and read back through the
//! public API: it must load or fail with an error that names the file.

use std::path::Path;

use trlvr::data::{DataSpec, Dataset, Layout};
use trlvr::eval::{Mode, ProblemSamples, Sample, SampleStore};
use trlvr::schedule::Finish;
use trlvr::testing::fuzz::{AllocationGuard, Target, fuzz, names, scratch};

#[global_allocator]
static GUARD: AllocationGuard = AllocationGuard;

/// The first `n` lines of a data file of the repository.
fn head(path: &str, n: usize) -> Vec<u8> {
    let path = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().take(n).map(|l| format!("{l}\n")).collect::<String>().into_bytes()
}

#[test]
fn fuzz_dataset_jsonl() {
    let dir = scratch("dataset");
    let path = dir.join("data.jsonl");
    let seeds = vec![
        head("assets/math/gsm8k-test.jsonl", 3),
        head("assets/math/math500-test.jsonl", 2),
        head("assets/arithmetic/train.jsonl", 8),
    ];
    let target =
        Target::new("dataset-jsonl", seeds).tokens(&["question", "answer", "problem", "solution", "####"]);
    fuzz(target, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        for layout in [Layout::Gsm8k, Layout::Math, Layout::DeepScaleR] {
            match Dataset::load(&DataSpec::new(&path, layout)) {
                Ok(set) if set.problems.is_empty() => return Err("loaded with no problems".into()),
                Ok(set) => {
                    if let Some(p) = set.problems.iter().find(|p| p.question.trim().is_empty()) {
                        return Err(format!("line {}: an empty question was accepted", p.line));
                    }
                }
                Err(e) => names(&e, &path)?,
            }
        }
        Ok(())
    });
    std::fs::remove_dir_all(dir).unwrap();
}

/// A samples file as `trlvr eval` writes it: settings, then one record per problem and mode.
fn store_seed(path: &Path, settings: &serde_json::Value) -> Vec<u8> {
    let _ = std::fs::remove_file(path);
    let mut store = SampleStore::open(path, settings).unwrap();
    let sample = |tokens: Vec<u32>, owners: &str, finish| Sample { tokens, owners: owners.into(), finish };
    store
        .append(vec![
            ProblemSamples {
                set: "gsm8k".into(),
                id: 1,
                mode: Mode::Solo,
                prompt_hash: 17,
                samples: vec![
                    sample(vec![5, 9, 2], "SSS", Finish::Eos),
                    sample(vec![7], "S", Finish::Length),
                ],
            },
            ProblemSamples {
                set: "gsm8k".into(),
                id: 1,
                mode: Mode::Handoff,
                prompt_hash: 17,
                samples: vec![
                    sample(vec![5, 9, 4, 2], "SJJS", Finish::Rounds),
                    sample(vec![], "", Finish::Eos),
                ],
            },
        ])
        .unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn fuzz_eval_sample_store() {
    let dir = scratch("store");
    let path = dir.join("samples.jsonl");
    let settings = serde_json::json!({"n": 2, "seed": 3, "senior": "a.gguf"});
    let seed = store_seed(&path, &settings);
    let target = Target::new("eval-samples", vec![seed]).tokens(&[
        "trlvr_eval_samples",
        "settings",
        "samples",
        "tokens",
        "owners",
        "finish",
        "solo",
        "handoff",
        "eos",
        "SJ",
    ]);
    fuzz(target, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        match SampleStore::open(&path, &settings) {
            Ok(_) => {
                // What was kept must read back the same; a repaired file must stay repaired.
                let again = SampleStore::open(&path, &settings).map_err(|e| format!("reopening: {e}"))?;
                let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
                if !text.is_empty() && !text.ends_with('\n') {
                    return Err("the store was left without its last newline".into());
                }
                drop(again);
                Ok(())
            }
            Err(e) => names(&e, &path),
        }
    });
    std::fs::remove_dir_all(dir).unwrap();
}
