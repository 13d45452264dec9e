//! `load_hf_dir` on corrupted, converted and sharded copies of a tiny checkpoint: every
//! problem is named, bf16/f16 widen exactly, shards load like one file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burn::prelude::*;
use common::*;
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use trlvr_models::{Error, load_hf_dir};

/// One tensor of a checkpoint, owned: dtype, shape, little-endian bytes.
#[derive(Clone)]
struct Entry(Dtype, Vec<usize>, Vec<u8>);

fn read(name: &str) -> BTreeMap<String, Entry> {
    let bytes = std::fs::read(fixture(name).join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    st.tensors()
        .into_iter()
        .map(|(k, v)| (k, Entry(v.dtype(), v.shape().to_vec(), v.data().to_vec())))
        .collect()
}

/// A fresh directory holding `source`'s config.json.
fn scratch(source: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("trlvr-models-{}-{source}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture(source).join("config.json"), dir.join("config.json")).unwrap();
    dir
}

fn write(path: &Path, tensors: &BTreeMap<String, Entry>) {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(k, Entry(d, s, b))| (k.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

fn f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()))
}

fn weights_error(dir: &Path) -> (Vec<String>, Vec<String>, Vec<String>) {
    match load_hf_dir(dir, &device()) {
        Err(Error::Weights { missing, unused, mismatched, .. }) => (missing, unused, mismatched),
        other => panic!("expected a weights error, got {:?}", other.map(|_| ())),
    }
}

fn logits(dir: &Path) -> Tensor<3> {
    let (model, _) = load_hf_dir(dir, &device()).unwrap();
    let reference = reference("qwen3-tiny-untied");
    let lengths: Vec<usize> = reference.tokens.iter().map(Vec::len).collect();
    model.forward(padded(&reference.tokens, 0), &lengths, None).unwrap()
}

#[test]
fn missing_tensor_is_named() {
    let mut t = read("qwen3-tiny-untied");
    t.remove("model.layers.1.mlp.up_proj.weight").unwrap();
    let dir = scratch("qwen3-tiny-untied", "missing");
    write(&dir.join("model.safetensors"), &t);
    let (missing, unused, mismatched) = weights_error(&dir);
    assert_eq!(missing, ["model.layers.1.mlp.up_proj.weight"]);
    assert!(unused.is_empty() && mismatched.is_empty());
}

#[test]
fn unused_tensor_is_named() {
    let mut t = read("llama-tiny");
    let extra = t["model.norm.weight"].clone();
    t.insert("model.layers.2.input_layernorm.weight".into(), extra);
    let dir = scratch("llama-tiny", "unused");
    write(&dir.join("model.safetensors"), &t);
    let (missing, unused, mismatched) = weights_error(&dir);
    assert_eq!(unused, ["model.layers.2.input_layernorm.weight"]);
    assert!(missing.is_empty() && mismatched.is_empty());
}

#[test]
fn mis_shaped_tensor_is_named_with_both_shapes() {
    let mut t = read("qwen3-tiny-tied");
    let Entry(d, _, b) = t["model.layers.0.self_attn.q_norm.weight"].clone();
    t.insert("model.layers.0.self_attn.q_norm.weight".into(), Entry(d, vec![8], b[..32].to_vec()));
    let dir = scratch("qwen3-tiny-tied", "shape");
    write(&dir.join("model.safetensors"), &t);
    let (missing, unused, mismatched) = weights_error(&dir);
    assert_eq!(mismatched, ["model.layers.0.self_attn.q_norm.weight: expected [16], found [8]"]);
    assert!(missing.is_empty() && unused.is_empty());
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut t = read("qwen2-tiny");
    t.remove("model.layers.0.self_attn.k_proj.bias").unwrap();
    t.remove("model.norm.weight").unwrap();
    let extra = t["model.layers.0.input_layernorm.weight"].clone();
    t.insert("model.extra".into(), extra);
    let Entry(d, _, b) = t["model.layers.1.self_attn.v_proj.weight"].clone();
    t.insert("model.layers.1.self_attn.v_proj.weight".into(), Entry(d, vec![64, 32], b));
    let dir = scratch("qwen2-tiny", "all");
    write(&dir.join("model.safetensors"), &t);
    let err = load_hf_dir(&dir, &device()).map(|_| ()).unwrap_err().to_string();
    for needle in [
        "model.layers.0.self_attn.k_proj.bias",
        "model.norm.weight",
        "model.extra",
        "model.layers.1.self_attn.v_proj.weight: expected [32, 64], found [64, 32]",
    ] {
        assert!(err.contains(needle), "{needle} not in: {err}");
    }
}

#[test]
fn tied_model_accepts_a_copied_head_and_rejects_a_different_one() {
    let mut t = read("qwen3-tiny-tied");
    let embed = t["model.embed_tokens.weight"].clone();
    t.insert("lm_head.weight".into(), embed.clone());
    let dir = scratch("qwen3-tiny-tied", "tied-copy");
    write(&dir.join("model.safetensors"), &t);
    assert!(load_hf_dir(&dir, &device()).is_ok());

    let Entry(d, s, mut b) = embed;
    b[0] ^= 1;
    t.insert("lm_head.weight".into(), Entry(d, s, b));
    write(&dir.join("model.safetensors"), &t);
    let (_, _, mismatched) = weights_error(&dir);
    assert!(mismatched[0].starts_with("lm_head.weight"));
}

/// A half-precision copy loads to exactly the f32 values it rounds to.
fn half_precision_is_exact(dtype: Dtype, narrow: fn(f32) -> [u8; 2], widen: fn([u8; 2]) -> f32) {
    let t = read("qwen3-tiny-untied");
    let mut half = BTreeMap::new();
    let mut rounded = BTreeMap::new();
    for (k, Entry(_, s, b)) in &t {
        let narrow_bytes: Vec<u8> = f32s(b).flat_map(narrow).collect();
        let wide: Vec<u8> =
            narrow_bytes.chunks_exact(2).flat_map(|c| widen([c[0], c[1]]).to_le_bytes()).collect();
        half.insert(k.clone(), Entry(dtype, s.clone(), narrow_bytes));
        rounded.insert(k.clone(), Entry(Dtype::F32, s.clone(), wide));
    }
    let a = scratch("qwen3-tiny-untied", &format!("{dtype:?}"));
    let b = scratch("qwen3-tiny-untied", &format!("{dtype:?}-rounded"));
    write(&a.join("model.safetensors"), &half);
    write(&b.join("model.safetensors"), &rounded);
    assert_eq!(max_diff(logits(&a), logits(&b)), 0.0);
    // And it is still close to the f32 model.
    assert!(max_diff(logits(&a), logits(&fixture("qwen3-tiny-untied"))) < 0.2);
}

#[test]
fn bf16_checkpoint_widens_exactly() {
    half_precision_is_exact(
        Dtype::BF16,
        |x| half::bf16::from_f32(x).to_le_bytes(),
        |b| half::bf16::from_le_bytes(b).to_f32(),
    );
}

#[test]
fn f16_checkpoint_widens_exactly() {
    half_precision_is_exact(
        Dtype::F16,
        |x| half::f16::from_f32(x).to_le_bytes(),
        |b| half::f16::from_le_bytes(b).to_f32(),
    );
}

#[test]
fn sharded_checkpoint_loads_like_one_file() {
    let t = read("qwen3-tiny-untied");
    let dir = scratch("qwen3-tiny-untied", "sharded");
    let mut shards = [BTreeMap::new(), BTreeMap::new()];
    let mut weight_map = BTreeMap::new();
    for (i, (k, e)) in t.into_iter().enumerate() {
        let file = format!("model-{:05}-of-00002.safetensors", i % 2 + 1);
        weight_map.insert(k.clone(), file);
        shards[i % 2].insert(k, e);
    }
    for (i, shard) in shards.iter().enumerate() {
        write(&dir.join(format!("model-{:05}-of-00002.safetensors", i + 1)), shard);
    }
    let index = serde_json::json!({"metadata": {"total_size": 0}, "weight_map": weight_map});
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    assert_eq!(max_diff(logits(&dir), logits(&fixture("qwen3-tiny-untied"))), 0.0);
    // An index may only name files in the model's folder.
    for outside in ["/dev/zero", "../model.safetensors", "sub/model.safetensors", ""] {
        let mut map = weight_map.clone();
        map.insert("model.norm.weight".into(), outside.to_string());
        let index = serde_json::json!({"weight_map": map});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
        let err = load_hf_dir(&dir, &device()).map(|_| ()).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{outside:?}")) && err.contains("a shard must be a file name"),
            "{err}"
        );
    }
}

#[test]
fn unsupported_model_type_is_a_clear_config_error() {
    let dir = scratch("llama-tiny", "gpt2");
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    std::fs::write(dir.join("config.json"), config.replace("\"llama\"", "\"gpt2\"")).unwrap();
    std::fs::copy(fixture("llama-tiny").join("model.safetensors"), dir.join("model.safetensors")).unwrap();
    let err = load_hf_dir(&dir, &device()).map(|_| ()).unwrap_err();
    assert!(matches!(err, Error::Config { .. }));
    let text = err.to_string();
    assert!(text.contains("\"gpt2\"") && text.contains("config.json"), "{text}");
}

#[test]
fn missing_weights_file_names_the_index_it_looked_for() {
    let dir = scratch("llama-tiny", "nofile");
    let err = load_hf_dir(&dir, &device()).map(|_| ()).unwrap_err();
    assert!(err.to_string().contains("model.safetensors.index.json"), "{err}");
}

// Found by fuzzing (tests/fuzz.rs): a config for a far larger model than its weights is
// refused before anything is allocated for it; one missing tensor still gets the full list.
#[test]
fn a_config_far_larger_than_its_weights_is_refused() {
    let dir = scratch("qwen3-tiny-untied", "huge-config");
    std::fs::copy(fixture("qwen3-tiny-untied").join("model.safetensors"), dir.join("model.safetensors"))
        .unwrap();
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&config).unwrap();
    json["num_hidden_layers"] = 100_000.into();
    std::fs::write(dir.join("config.json"), json.to_string()).unwrap();
    let err = load_hf_dir(&dir, &device()).unwrap_err().to_string();
    assert!(err.contains("config.json") && err.contains("do not belong together"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
