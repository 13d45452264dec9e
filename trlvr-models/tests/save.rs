//! `save_hf_dir` writes what `load_hf_dir` read: the same tensors bit for bit, a config
//! that parses back equal, and a tokenizer that reloads.

mod common;

use std::path::PathBuf;

use common::*;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::{AddedToken, Tokenizer};
use trlvr_models::{ModelConfig, load_hf_dir, save_hf_dir};

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
