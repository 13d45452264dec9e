//! A minimal GGUF v3 writer, and the tiny fixtures written as GGUF files.

use std::path::PathBuf;

use trlvr_models::ModelConfig;
use trlvr_models::gguf::hf_name;

use super::fixture;

/// A GGUF v3 file under construction.
#[derive(Default, Clone)]
pub struct Writer {
    pub kv: Vec<(String, u32, Vec<u8>)>,
    pub tensors: Vec<(String, Vec<usize>, u32, Vec<u8>)>,
}

pub fn gguf_string(s: &str) -> Vec<u8> {
    [(s.len() as u64).to_le_bytes().to_vec(), s.as_bytes().to_vec()].concat()
}

impl Writer {
    pub fn kv(&mut self, key: &str, kind: u32, bytes: Vec<u8>) -> &mut Self {
        self.kv.push((key.into(), kind, bytes));
        self
    }
    pub fn u32(&mut self, key: &str, v: u32) -> &mut Self {
        self.kv(key, 4, v.to_le_bytes().to_vec())
    }
    pub fn f32(&mut self, key: &str, v: f32) -> &mut Self {
        self.kv(key, 6, v.to_le_bytes().to_vec())
    }
    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        self.kv(key, 8, gguf_string(v))
    }
    pub fn strings(&mut self, key: &str, v: &[String]) -> &mut Self {
        let mut bytes = [8u32.to_le_bytes().to_vec(), (v.len() as u64).to_le_bytes().to_vec()].concat();
        v.iter().for_each(|s| bytes.extend(gguf_string(s)));
        self.kv(key, 9, bytes)
    }
    pub fn i32s(&mut self, key: &str, v: &[i32]) -> &mut Self {
        let mut bytes = [5u32.to_le_bytes().to_vec(), (v.len() as u64).to_le_bytes().to_vec()].concat();
        v.iter().for_each(|x| bytes.extend(x.to_le_bytes()));
        self.kv(key, 9, bytes)
    }
    /// An f32 tensor of PyTorch shape `shape` (outermost first).
    pub fn tensor(&mut self, name: &str, shape: &[usize], values: &[f32]) -> &mut Self {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.raw_tensor(name, shape, 0, bytes)
    }
    pub fn raw_tensor(&mut self, name: &str, shape: &[usize], kind: u32, bytes: Vec<u8>) -> &mut Self {
        self.tensors.push((name.into(), shape.to_vec(), kind, bytes));
        self
    }
    pub fn bytes(&self, alignment: usize) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((self.tensors.len() as u64).to_le_bytes());
        out.extend((self.kv.len() as u64).to_le_bytes());
        for (key, kind, bytes) in &self.kv {
            out.extend(gguf_string(key));
            out.extend(kind.to_le_bytes());
            out.extend(bytes);
        }
        let mut offset = 0;
        for (name, shape, kind, bytes) in &self.tensors {
            out.extend(gguf_string(name));
            out.extend((shape.len() as u32).to_le_bytes());
            shape.iter().rev().for_each(|&d| out.extend((d as u64).to_le_bytes())); // innermost first
            out.extend(kind.to_le_bytes());
            out.extend((offset as u64).to_le_bytes());
            offset = (offset + bytes.len()).next_multiple_of(alignment);
        }
        for (_, _, _, bytes) in &self.tensors {
            out.resize(out.len().next_multiple_of(alignment), 0);
            out.extend(bytes);
        }
        out
    }
    pub fn write(&self, name: &str, alignment: usize) -> PathBuf {
        let path = std::env::temp_dir().join(format!("trlvr-gguf-test-{}-{name}.gguf", std::process::id()));
        std::fs::write(&path, self.bytes(alignment)).unwrap();
        path
    }
}

/// llama.cpp's `permute`: within each head, Hugging Face row `s * head_dim / 2 + i`
/// becomes row `2i + s`, so rotary pairs sit side by side.
fn permute(values: &[f32], heads: usize, row: usize) -> Vec<f32> {
    let head_dim = values.len() / row / heads;
    let mut out = vec![0.0; values.len()];
    for hd in 0..heads {
        for s in 0..2 {
            for i in 0..head_dim / 2 {
                let from = (hd * head_dim + s * head_dim / 2 + i) * row;
                let to = (hd * head_dim + 2 * i + s) * row;
                out[to..to + row].copy_from_slice(&values[from..from + row]);
            }
        }
    }
    out
}

/// A GGUF writer holding fixture `name`'s config and tensors under GGUF names.
pub fn fixture_as_gguf(name: &str) -> (Writer, ModelConfig) {
    let config = ModelConfig::from_file(fixture(name).join("config.json")).unwrap();
    let bytes = std::fs::read(fixture(name).join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let arch = if name.starts_with("llama") { "llama" } else { "qwen2" };
    let mut w = Writer::default();
    w.str("general.architecture", arch)
        .u32(&format!("{arch}.block_count"), config.num_hidden_layers as u32)
        .u32(&format!("{arch}.context_length"), config.max_position_embeddings as u32)
        .u32(&format!("{arch}.embedding_length"), config.hidden_size as u32)
        .u32(&format!("{arch}.feed_forward_length"), config.intermediate_size as u32)
        .u32(&format!("{arch}.attention.head_count"), config.num_attention_heads as u32)
        .u32(&format!("{arch}.attention.head_count_kv"), config.num_key_value_heads as u32)
        .f32(&format!("{arch}.rope.freq_base"), config.rope_theta as f32)
        .f32(&format!("{arch}.attention.layer_norm_rms_epsilon"), config.rms_norm_eps as f32)
        .str("tokenizer.ggml.model", "gpt2")
        .strings(
            "tokenizer.ggml.tokens",
            &(0..config.vocab_size).map(|i| format!("t{i}")).collect::<Vec<_>>(),
        )
        .i32s("tokenizer.ggml.token_type", &vec![1; config.vocab_size])
        .u32("tokenizer.ggml.eos_token_id", 2);
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort();
    let gguf_of: std::collections::HashMap<String, String> = (0..config.num_hidden_layers)
        .flat_map(|l| {
            [
                "attn_q",
                "attn_k",
                "attn_v",
                "attn_output",
                "ffn_gate",
                "ffn_up",
                "ffn_down",
                "attn_norm",
                "ffn_norm",
            ]
            .into_iter()
            .flat_map(move |p| ["weight", "bias"].map(|s| format!("blk.{l}.{p}.{s}")))
        })
        .chain(["token_embd.weight", "output_norm.weight", "output.weight"].map(String::from))
        .map(|g| (hf_name(&g).unwrap(), g))
        .collect();
    for hf in names {
        let view = st.tensor(&hf).unwrap();
        let values: Vec<f32> =
            view.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let gguf = &gguf_of[&hf];
        let row = view.shape()[1..].iter().product();
        let values = match (arch, gguf.contains("attn_q."), gguf.contains("attn_k.")) {
            ("llama", true, _) => permute(&values, config.num_attention_heads, row),
            ("llama", _, true) => permute(&values, config.num_key_value_heads, row),
            _ => values,
        };
        w.tensor(gguf, view.shape(), &values);
    }
    (w, config)
}
