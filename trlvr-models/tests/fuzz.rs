//! The model loaders under hostile bytes (`trlvr::testing::fuzz`): GGUF files (header,
//! metadata, tensor table, tokenizer metadata), Hugging Face checkpoints (`config.json`
//! and the safetensors header) and `tokenizer.json`. Each input must load or fail with
//! an error that names its file; no panic, hang or allocation out of proportion.

mod common;

use std::path::PathBuf;

use common::gguf::fixture_as_gguf;
use common::{device, fixture};
use trlvr::testing::fuzz::{AllocationGuard, Target, fuzz, names, scratch};
use trlvr::vocab::TokenClasses;
use trlvr_models::gguf::GgufFile;
use trlvr_models::{ChatTokenizer, load_hf_dir};

#[global_allocator]
static GUARD: AllocationGuard = AllocationGuard;

/// A tokenizer read from a file must encode, decode and classify its vocabulary.
fn use_tokenizer(tokenizer: &tokenizers::Tokenizer) {
    if let Ok(encoding) = tokenizer.encode("What is 12 + 30?  Ünïcödé \n\n", false) {
        let _ = tokenizer.decode(encoding.get_ids(), false);
    }
    let _ = TokenClasses::from_tokenizer(tokenizer, &[0]);
}

#[test]
fn fuzz_gguf() {
    let path = PathBuf::from("fuzz.gguf");
    let seeds = ["qwen2-tiny", "llama-tiny"].map(|name| fixture_as_gguf(name).0.bytes(32)).to_vec();
    let target = Target::new("gguf", seeds).header(4096).tokens(&[
        "general.architecture",
        "general.alignment",
        "llama",
        "qwen2",
        "context_length",
        "embedding_length",
        "block_count",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.merges",
        "tokenizer.ggml.eos_token_id",
        "blk.0.attn_q.weight",
        "output.weight",
    ]);
    let device = device();
    fuzz(target, |bytes| {
        let file = match GgufFile::parse(&path, bytes.to_vec()) {
            Ok(file) => file,
            Err(e) => return names(&e, &path),
        };
        match file.model_config() {
            Ok(config) => {
                if let Err(e) = file.decoder(&config, &device) {
                    names(&e, &path)?;
                }
            }
            Err(e) => names(&e, &path)?,
        }
        match file.tokenizer() {
            Ok(tokenizer) => use_tokenizer(&tokenizer),
            Err(e) => names(&e, &path)?,
        }
        Ok(())
    });
}

/// A checkpoint folder with `config.json` and `model.safetensors` from the fixture `name`,
/// one of them replaced by the input.
fn fuzz_checkpoint_file(target_name: &str, file: &str, header: usize) {
    let dir = scratch(target_name);
    let source = fixture("qwen3-tiny-untied");
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(source.join(f), dir.join(f)).unwrap();
    }
    let seed = std::fs::read(source.join(file)).unwrap();
    let target = Target::new(target_name, vec![seed]).header(header).tokens(&[
        "dtype",
        "shape",
        "data_offsets",
        "F32",
        "BF16",
        "F16",
        "I64",
        "__metadata__",
        "model.embed_tokens.weight",
        "lm_head.weight",
        "hidden_size",
        "num_hidden_layers",
        "vocab_size",
        "head_dim",
        "intermediate_size",
        "max_position_embeddings",
    ]);
    let device = device();
    fuzz(target, |bytes| {
        std::fs::write(dir.join(file), bytes).unwrap();
        match load_hf_dir(&dir, &device) {
            Ok(_) => Ok(()),
            Err(e) => names(&e, &dir),
        }
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn fuzz_safetensors_header() {
    fuzz_checkpoint_file("safetensors", "model.safetensors", 4096);
}

#[test]
fn fuzz_hf_config() {
    fuzz_checkpoint_file("hf-config", "config.json", 0);
}

/// A small byte-level BPE tokenizer with Qwen3's chat markers, as `tokenizer.json`.
fn tokenizer_seed() -> Vec<u8> {
    let (writer, _) = fixture_as_gguf("qwen2-tiny");
    let file = GgufFile::parse("seed.gguf", writer.bytes(32)).unwrap();
    let mut tokenizer = file.tokenizer().unwrap();
    let markers = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>"]
        .map(|m| tokenizers::AddedToken::from(m, true));
    tokenizer.add_special_tokens(markers).unwrap();
    tokenizer.to_string(false).unwrap().into_bytes()
}

#[test]
fn fuzz_tokenizer_json() {
    let dir = scratch("tokenizer");
    let path = dir.join("tokenizer.json");
    let target = Target::new("tokenizer-json", vec![tokenizer_seed()]).tokens(&[
        "added_tokens",
        "normalizer",
        "pre_tokenizer",
        "decoder",
        "model",
        "vocab",
        "merges",
        "BPE",
        "WordLevel",
        "WordPiece",
        "Unigram",
        "ByteLevel",
        "Metaspace",
        "Sequence",
        "Split",
        "Replace",
        "pattern",
        "Regex",
        "<|im_end|>",
    ]);
    fuzz(target, |bytes| {
        std::fs::write(&path, bytes).unwrap();
        match ChatTokenizer::from_file(&path) {
            Ok(chat) => use_tokenizer(chat.tokenizer()),
            Err(e) => names(&e, &path)?,
        }
        match TokenClasses::from_file(&path, &[0]) {
            Ok(_) => Ok(()),
            Err(e) => names(&e, &path),
        }
    });
    std::fs::remove_dir_all(dir).unwrap();
}
