//! `save_hf_dir` writes what `load_hf_dir` read: the same tensors bit for bit, a config
//! that parses back equal, and a tokenizer that reloads.

mod common;

use std::path::PathBuf;

use common::*;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::{AddedToken, Tokenizer};
use trlvr_models::{ModelConfig, SaveOptions, SavedDtype, load_hf_dir, save_hf_dir, save_hf_dir_with};

/// A fresh, empty temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trlvr-save-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Every tensor of a safetensors file: name -> (shape, bytes).
fn tensors(path: PathBuf) -> std::collections::BTreeMap<String, (Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    st.tensors().into_iter().map(|(name, v)| (name, (v.shape().to_vec(), v.data().to_vec()))).collect()
}

#[test]
fn fixtures_round_trip_bit_for_bit() {
    for name in FIXTURES {
        let (model, config) = load_hf_dir(fixture(name), &device()).unwrap();
        let dir = scratch(name);
        save_hf_dir(&model, &config, None, &dir).unwrap();

        // Same names, shapes (Linear weights back to [out, in]) and f32 bytes as the original.
        let (original, saved) =
            (tensors(fixture(name).join("model.safetensors")), tensors(dir.join("model.safetensors")));
        assert_eq!(original.keys().collect::<Vec<_>>(), saved.keys().collect::<Vec<_>>(), "{name}");
        for (key, (shape, bytes)) in &original {
            assert_eq!(&saved[key].0, shape, "{name} {key}");
            assert!(saved[key].1 == *bytes, "{name} {key}: data differs");
        }

        let (reloaded, reread) = load_hf_dir(&dir, &device()).unwrap();
        assert_eq!(reread, config, "{name}");
        let reference = reference(name);
        let lengths: Vec<usize> = reference.tokens.iter().map(Vec::len).collect();
        let tokens = padded(&reference.tokens, reference.pad_id);
        let before = model.forward(tokens.clone(), &lengths, None).unwrap();
        let after = reloaded.forward(tokens, &lengths, None).unwrap();
        assert_eq!(max_diff(before, after), 0.0, "{name}");
        assert!(!dir.join("tokenizer.json").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn config_json_names_the_transformers_class() {
    let (model, config) = load_hf_dir(fixture("qwen2-tiny"), &device()).unwrap();
    let dir = scratch("config");
    save_hf_dir(&model, &config, None, &dir).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(json["architectures"][0], "Qwen2ForCausalLM");
    assert_eq!((json["model_type"].as_str(), json["hidden_act"].as_str()), (Some("qwen2"), Some("silu")));
    assert_eq!(ModelConfig::from_file(dir.join("config.json")).unwrap(), config);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tokenizer_json_reloads() {
    let vocab: Vocab =
        ["a", "b", "ab", "<|end|>"].iter().enumerate().map(|(i, t)| (t.to_string(), i as u32)).collect();
    let bpe = BPE::builder().vocab_and_merges(vocab, vec![("a".into(), "b".into())]).build().unwrap();
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.add_special_tokens([AddedToken::from("<|end|>", true)]).unwrap();

    let (model, config) = load_hf_dir(fixture("llama-tiny"), &device()).unwrap();
    let dir = scratch("tokenizer");
    save_hf_dir(&model, &config, Some(&tokenizer), &dir).unwrap();
    let reloaded = Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    let ids = |t: &Tokenizer| t.encode("abab<|end|>", false).unwrap().get_ids().to_vec();
    assert_eq!(ids(&reloaded), [2, 2, 3]);
    assert_eq!(ids(&reloaded), ids(&tokenizer));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_foreign_config_is_refused() {
    let (model, mut config) = load_hf_dir(fixture("llama-tiny"), &device()).unwrap();
    config.rope_theta *= 2.0;
    let err = save_hf_dir(&model, &config, None, scratch("foreign")).unwrap_err();
    assert!(err.to_string().contains("config differs"), "{err}");
}

/// Every f32 tensor of a model saved as f32, as name -> values.
fn f32_values(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<f32>> {
    tensors(dir.join("model.safetensors"))
        .into_iter()
        .map(|(name, (_, bytes))| {
            (name, bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect())
        })
        .collect()
}

/// bf16 and f16 saves: each value rounded to nearest (ties to even) as torch's `.to(dtype)`,
/// config.json naming the type, and a reload computing with exactly those values.
#[test]
fn half_precision_saves_round_each_weight_and_reload() {
    let (model, config) = load_hf_dir(fixture("qwen3-tiny-untied"), &device()).unwrap();
    let f32_dir = scratch("f32");
    save_hf_dir(&model, &config, None, &f32_dir).unwrap();
    let original = f32_values(&f32_dir);
    for (dtype, torch, round) in [
        (SavedDtype::Bf16, "bfloat16", (|v: f32| half::bf16::from_f32(v).to_f32()) as fn(f32) -> f32),
        (SavedDtype::F16, "float16", |v: f32| half::f16::from_f32(v).to_f32()),
    ] {
        let dir = scratch(torch);
        let options = SaveOptions { dtype, ..SaveOptions::default() };
        save_hf_dir_with(&model, &config, None, &dir, &options).unwrap();
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        for (name, values) in &original {
            let view = st.tensor(name).unwrap();
            assert_eq!(view.data().len(), 2 * values.len(), "{name}: two bytes a value");
            let saved: Vec<f32> = view
                .data()
                .chunks_exact(2)
                .map(|b| match dtype {
                    SavedDtype::Bf16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f32(),
                    _ => half::f16::from_le_bytes([b[0], b[1]]).to_f32(),
                })
                .collect();
            let want: Vec<f32> = values.iter().map(|&v| round(v)).collect();
            assert_eq!(saved, want, "{name}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
        assert_eq!(json["torch_dtype"], torch);
        // Reloaded, it holds the rounded values: saved again as f32, they are `want`.
        let (reloaded, _) = load_hf_dir(&dir, &device()).unwrap();
        let again = scratch(&format!("{torch}-again"));
        save_hf_dir(&reloaded, &config, None, &again).unwrap();
        for (name, values) in f32_values(&again) {
            let want: Vec<f32> = original[&name].iter().map(|&v| round(v)).collect();
            assert_eq!(values, want, "{name}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&again).unwrap();
    }
    std::fs::remove_dir_all(&f32_dir).unwrap();
}

/// Above the shard size the weights go into numbered shards with an index, as
/// `save_pretrained` writes them; the reload is the same model; a later save in the other
/// layout leaves no stale weight file behind.
#[test]
fn large_weights_are_sharded_with_an_index() {
    let (model, config) = load_hf_dir(fixture("qwen3-tiny-untied"), &device()).unwrap();
    let dir = scratch("shards");
    save_hf_dir(&model, &config, None, &dir).unwrap();
    let whole = f32_values(&dir);
    let total: usize = whole.values().map(|v| 4 * v.len()).sum();
    let options = SaveOptions { max_shard_bytes: (total / 3) as u64, ..SaveOptions::default() };
    save_hf_dir_with(&model, &config, None, &dir, &options).unwrap();
    assert!(!dir.join("model.safetensors").exists(), "the single file of the earlier save is gone");
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("model.safetensors.index.json")).unwrap())
            .unwrap();
    assert_eq!(index["metadata"]["total_size"], total);
    let map = index["weight_map"].as_object().unwrap();
    assert_eq!(map.keys().collect::<Vec<_>>(), whole.keys().collect::<Vec<_>>());
    let mut files: Vec<&str> = map.values().map(|v| v.as_str().unwrap()).collect();
    files.sort();
    files.dedup();
    let n = files.len();
    assert!(n >= 3, "{files:?}");
    for (i, file) in files.iter().enumerate() {
        assert_eq!(*file, format!("model-{:05}-of-{n:05}.safetensors", i + 1));
        let shard = tensors(dir.join(file));
        let size: usize = shard.values().map(|(_, bytes)| bytes.len()).sum();
        // At most the shard size, unless one tensor alone is larger.
        assert!(size <= total / 3 || shard.len() == 1, "{file}: {size} bytes");
        for (name, (_, bytes)) in shard {
            assert_eq!(map[&name], *file);
            let values: Vec<f32> =
                bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
            assert_eq!(values, whole[&name], "{name}");
        }
    }
    let reference = reference("qwen3-tiny-untied");
    let lengths: Vec<usize> = reference.tokens.iter().map(Vec::len).collect();
    let tokens = padded(&reference.tokens, reference.pad_id);
    let (reloaded, _) = load_hf_dir(&dir, &device()).unwrap();
    let before = model.forward(tokens.clone(), &lengths, None).unwrap();
    assert_eq!(max_diff(before, reloaded.forward(tokens, &lengths, None).unwrap()), 0.0);
    // Saved whole again: the shards and the index go.
    save_hf_dir(&model, &config, None, &dir).unwrap();
    let left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(left.iter().all(|f| !f.starts_with("model-") && !f.ends_with("index.json")), "{left:?}");
    assert_eq!(f32_values(&dir), whole);
    std::fs::remove_dir_all(&dir).unwrap();
}
