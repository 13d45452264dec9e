//! Prefill and cached greedy decode throughput through the `Partner` API.
//!
//! Two randomly initialised shapes: a tiny Qwen3 and a SmolLM2-135M-shaped Llama. For
//! each, at batch 1 and batch 8: `start` on 128-token prompts (prefill), then 64 steps
//! of `extend` with one token per row, the next token picked by argmax on the host; each
//! case run [`REPEATS`] times, its median rates printed (one prefill of 128 tokens is a
//! fraction of a second, and a single one moved by a third between runs). Prints a
//! markdown table. `scripts/bench_transformers.py` does the same with PyTorch;
//! pass its JSON output as `TRLVR_BENCH_REFERENCE=path` to add ratio columns.
//!
//! The models decode as trlvr's frozen copies do, their projections in the decode layout
//! (`Decoder::with_decode_layout`); `--trained-layout` keeps the layout a model trains in.
//!
//! `cargo bench -p trlvr-models --bench decode [-- FILTER]` runs the cases whose name
//! contains `FILTER` (e.g. `smollm2`, `b8`); `--irregular` adds SmolLM2 decode rates
//! for ragged feeds and for half the rows; `--profile` instead times the parts of one
//! SmolLM2 decode step, `--prefill` repeats SmolLM2's batch-1 and batch-8 prefills alone, then
//! times its projections' products alone (the gemm's share of it), and `--bandwidth`
//! times a streaming read of memory as the decode products read (four streams a thread,
//! asked for ahead): the floor of a batch-1 decode step.
#![allow(clippy::print_stdout, missing_docs)]

use std::time::Instant;

use burn::prelude::*;
use trlvr::model::{Feed, Partner};
use trlvr_models::{Decoder, ModelConfig};

const PROMPT: usize = 128;
const STEPS: usize = 64;
/// Runs of each case; the table gives the median prefill and decode rates.
const REPEATS: usize = 5;

fn tiny_qwen3() -> ModelConfig {
    serde_json::from_str(
        r#"{"model_type": "qwen3", "vocab_size": 4096, "hidden_size": 128,
        "intermediate_size": 384, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 32, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "tie_word_embeddings": true,
        "max_position_embeddings": 4096}"#,
    )
    .unwrap()
}

fn smollm2_135m() -> ModelConfig {
    serde_json::from_str(
        r#"{"model_type": "llama", "vocab_size": 49152, "hidden_size": 576,
        "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
        "num_key_value_heads": 3, "head_dim": 64, "rms_norm_eps": 1e-5,
        "rope_theta": 100000.0, "tie_word_embeddings": true,
        "max_position_embeddings": 8192}"#,
    )
    .unwrap()
}

/// Row-wise argmax of `[rows, vocab]` logits, on the host.
fn argmax(logits: Tensor<2>) -> Vec<u32> {
    let [_, v] = logits.dims();
    let data: Vec<f32> = logits.into_data().try_to_vec().unwrap();
    data.chunks(v)
        .map(|row| {
            let mut best = 0;
            for (i, &x) in row.iter().enumerate() {
                if x > row[best] {
                    best = i;
                }
            }
            best as u32
        })
        .collect()
}

/// `(prefill tokens/s, decode tokens/s)` for `batch` prompts of `PROMPT` tokens.
fn run(model: &Decoder, batch: usize) -> (f64, f64) {
    let vocab = model.config().vocab_size as u32;
    let prompts: Vec<Vec<u32>> = (0..batch as u32)
        .map(|r| (0..PROMPT as u32).map(|i| (i * 7919 + r * 104_729 + 13) % vocab).collect())
        .collect();
    let prompt_refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();

    let started = Instant::now();
    let (mut session, logits) = model.start(&prompt_refs, 1).unwrap();
    let mut next = argmax(logits);
    let prefill = started.elapsed().as_secs_f64();

    let started = Instant::now();
    for _ in 0..STEPS {
        let tokens: Vec<[u32; 1]> = next.iter().map(|&t| [t]).collect();
        let feeds: Vec<Feed<'_>> = tokens.iter().enumerate().map(|(row, t)| Feed::predict(row, t)).collect();
        next = argmax(model.extend(&mut session, &feeds).unwrap());
    }
    let decode = started.elapsed().as_secs_f64();
    ((batch * PROMPT) as f64 / prefill, (batch * STEPS) as f64 / decode)
}

/// The median prefill and decode rates of [`REPEATS`] runs.
fn median_run(model: &Decoder, batch: usize) -> (f64, f64) {
    let (mut prefill, mut decode): (Vec<f64>, Vec<f64>) = (0..REPEATS).map(|_| run(model, batch)).unzip();
    (median(&mut prefill), median(&mut decode))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Prints the prefill rate of `batch` prompts of `PROMPT` tokens, the median of 9 after a
/// warm-up: a figure steadier than one `run`'s, and a loop to profile.
fn prefill_only(model: &Decoder, batch: u32) {
    let vocab = model.config().vocab_size as u32;
    let prompts: Vec<Vec<u32>> = (0..batch)
        .map(|r| (0..PROMPT as u32).map(|i| (i * 7919 + r * 104_729 + 13) % vocab).collect())
        .collect();
    let refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
    let _ = model.start(&refs, 1).unwrap().1.into_data();
    let mut seconds: Vec<f64> = (0..9)
        .map(|_| {
            let started = Instant::now();
            let _ = model.start(&refs, 1).unwrap().1.into_data();
            started.elapsed().as_secs_f64()
        })
        .collect();
    let seconds = median(&mut seconds);
    println!(
        "smollm2-135m b{batch} prefill: {:.0} tok/s (median of 9)",
        (refs.len() * PROMPT) as f64 / seconds
    );
    projections(model, refs.len() * PROMPT, seconds);
}

/// Times the products of one prefill's projections alone (every layer's seven weights, as
/// stored, against `rows` rows, as the decoder multiplies them), to tell the products'
/// share of a prefill from the rest's; then the same weights in the layout a model trains
/// in (`[in, out]` row-major), alternating, which the gemm kernels take. `scripts/
/// bench_transformers.py --projections` times torch's at the same shapes.
fn projections(model: &Decoder, rows: usize, per_prefill: f64) {
    let layer = &model.layers[0];
    let (a, m) = (&layer.self_attn, &layer.mlp);
    let stored = [&a.q_proj, &a.k_proj, &a.v_proj, &a.o_proj, &m.gate_proj, &m.up_proj, &m.down_proj];
    let trained = stored.map(|l| {
        let mut l = l.clone();
        let w = l.weight.val();
        l.weight = burn::module::Param::from_tensor(Tensor::from_data(w.to_data(), &w.device()));
        l
    });
    let inputs: Vec<Tensor<3>> = stored
        .iter()
        .map(|l| {
            let w = l.weight.val();
            Tensor::random([1, rows, w.dims()[0]], burn::tensor::Distribution::Default, &w.device())
        })
        .collect();
    let run = |layers: &[&burn::nn::Linear]| {
        let started = Instant::now();
        for (x, layer) in inputs.iter().zip(layers) {
            // Flex runs each op as it is called: no read back needed (torch's side has none).
            drop(trlvr_models::linear(layer, x.clone()));
        }
        started.elapsed().as_secs_f64()
    };
    let trained: Vec<&burn::nn::Linear> = trained.iter().collect();
    run(&stored);
    run(&trained);

    let (mut as_stored, mut as_trained): (Vec<f64>, Vec<f64>) =
        (0..15).map(|_| (run(&stored), run(&trained))).unzip();
    let (as_stored, as_trained) = (median(&mut as_stored), median(&mut as_trained));
    let flops: usize = stored.iter().map(|l| 2 * rows * l.weight.dims()[0] * l.weight.dims()[1]).sum();
    let all = as_stored * model.layers.len() as f64;
    let rate = |seconds: f64| flops as f64 / seconds / 1e9;
    println!(
        "  projections alone: {all:.3} s of a {per_prefill:.3} s prefill ({:.0}%), {:.1} GFLOP/s",
        100.0 * all / per_prefill,
        rate(as_stored)
    );
    println!("  the same weights in the training layout: {:.1} GFLOP/s", rate(as_trained));
}

/// Times the parts of one decode step of `model` at batch `b` with `past` cached
/// tokens, each part repeated over every layer, and prints a table.
fn profile(model: &Decoder, b: usize, past: usize) {
    use burn::tensor::activation::{silu, softmax};
    let cfg = model.config().clone();
    let device = Device::default();
    let (h, kvh, hd, d) = (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.hidden_size);
    let g = h / kvh;
    let x = Tensor::<3>::random([b, 1, d], burn::tensor::Distribution::Default, &device);
    let cache = Tensor::<4>::random([b, kvh, past + 64, hd], burn::tensor::Distribution::Default, &device);
    let mask =
        Tensor::<4, Bool>::from_data(TensorData::new(vec![false; b * g * past], [b, 1, g, past]), &device);
    let rope = trlvr_models::rope::Rope::new(&vec![vec![past]; b], hd, cfg.rope_theta, &device);
    let mut rows = Vec::new();
    let mut time = |name: &str, f: &mut dyn FnMut()| {
        f();
        let started = Instant::now();
        for _ in 0..3 {
            f();
        }
        rows.push((name.to_string(), started.elapsed().as_secs_f64() / 3.0 * 1e3));
    };
    let layers = &model.layers;
    // The decoder's projection: (Wᵀ xᵀ)ᵀ for one row, x W for more.
    let proj = |layer: &burn::nn::Linear, x: Tensor<3>| {
        let [b, t, d] = x.dims();
        let x = x.reshape([b * t, d]);
        if b * t == 1 {
            layer.weight.val().transpose().matmul(x.transpose()).transpose()
        } else {
            x.matmul(layer.weight.val())
        }
    };
    time("rms norms (2/layer)", &mut || {
        for l in layers {
            let _ = l.input_layernorm.forward(x.clone());
            let _ = l.post_attention_layernorm.forward(x.clone());
        }
    });
    time("q/k/v projections", &mut || {
        for l in layers {
            let _ = proj(&l.self_attn.q_proj, x.clone());
            let _ = proj(&l.self_attn.k_proj, x.clone());
            let _ = proj(&l.self_attn.v_proj, x.clone());
        }
    });
    time("rope (q and k)", &mut || {
        for _ in layers {
            let _ = rope.apply(x.clone().reshape([b, 1, h, hd]).swap_dims(1, 2));
            let _ = rope
                .apply(x.clone().slice([0..b, 0..1, 0..kvh * hd]).reshape([b, 1, kvh, hd]).swap_dims(1, 2));
        }
    });
    let mut buffers: Vec<Tensor<4>> = layers.iter().map(|_| cache.clone() + 0.0).collect();
    time("cache writes (k, v; per row)", &mut || {
        for buf in buffers.iter_mut() {
            for r in 0..b {
                for _ in 0..2 {
                    let value = Tensor::<4>::zeros([1, kvh, 1, hd], &device);
                    let old = std::mem::replace(buf, Tensor::empty([0, 0, 0, 0], &device));
                    *buf = old.slice_assign([r..r + 1, 0..kvh, past..past + 1, 0..hd], value);
                }
            }
        }
    });
    time("attention core", &mut || {
        for _ in layers {
            let q = x.clone().slice([0..b, 0..1, 0..h * hd]).reshape([b, kvh, g, hd]);
            let keys = cache.clone().slice([0..b, 0..kvh, 0..past, 0..hd]);
            let scores = q.matmul(keys.clone().swap_dims(2, 3));
            let scores = scores.mask_fill(mask.clone().expand([b, kvh, g, past]), f32::NEG_INFINITY);
            let _ = softmax(scores, 3).matmul(keys);
        }
    });
    time("o projection", &mut || {
        for l in layers {
            let _ = proj(&l.self_attn.o_proj, x.clone().slice([0..b, 0..1, 0..h * hd]));
        }
    });
    time("mlp", &mut || {
        for l in layers {
            let _ = l.mlp.forward(x.clone());
        }
    });
    time("mlp down only", &mut || {
        let y = Tensor::<3>::zeros([b, 1, cfg.intermediate_size], &device);
        for l in layers {
            let _ = proj(&l.mlp.down_proj, y.clone());
        }
    });
    let x2 = x.clone().reshape([b, d]);
    time("mlp gate+up", &mut || {
        for l in layers {
            let _ = proj(&l.mlp.gate_proj, x.clone());
            let _ = proj(&l.mlp.up_proj, x.clone());
        }
    });
    time("silu * up (elementwise)", &mut || {
        let y = Tensor::<2>::zeros([b, cfg.intermediate_size], &device);
        for _ in layers {
            let _ = silu(y.clone()) * y.clone();
        }
    });
    time("residual adds (2/layer)", &mut || {
        for _ in layers {
            let _ = x.clone() + x.clone();
            let _ = x.clone() + x.clone();
        }
    });
    time("lm head as E x^T", &mut || {
        let _ = model.embed_tokens.weight.val().matmul(x2.clone().transpose()).transpose();
    });
    let total: f64 = rows.iter().map(|r| r.1).sum();
    println!("\n| part of one decode step (b{b}, {past} cached) | ms | share |");
    println!("|---|---:|---:|");
    for (name, ms) in rows {
        println!("| {name} | {ms:.2} | {:.0}% |", 100.0 * ms / total);
    }
}

/// `x · W` against `(Wᵀ · xᵀ)ᵀ` for the MLP's gate at several row counts.
fn flip_threshold(model: &Decoder) {
    let device = Device::default();
    let ws: Vec<Tensor<2>> = model.layers.iter().map(|l| l.mlp.gate_proj.weight.val()).collect();
    let [d, _] = ws[0].dims();
    println!("\n| rows | x W ms | (W^T x^T)^T ms | contiguous x^T ms |");
    println!("|---:|---:|---:|---:|");
    for m in [1, 4, 8, 16, 32, 64, 128, 256] {
        let x = Tensor::<2>::random([m, d], burn::tensor::Distribution::Default, &device);
        let mut ms = [0.0; 3];
        for (i, slot) in ms.iter_mut().enumerate() {
            let run = || {
                for w in &ws {
                    let _ = match i {
                        0 => x.clone().matmul(w.clone()),
                        1 => w.clone().transpose().matmul(x.clone().transpose()).transpose(),
                        _ => w.clone().transpose().matmul(x.clone().transpose() + 0.0).transpose(),
                    };
                }
            };
            run();
            let started = Instant::now();
            run();
            run();
            *slot = started.elapsed().as_secs_f64() * 1e3 / (2.0 * ws.len() as f64);
        }
        println!("| {m} | {:.3} | {:.3} | {:.3} |", ms[0], ms[1], ms[2]);
    }
}

/// Decode tokens/s at batch 8 for two irregular feed patterns, `STEPS / 4` calls each:
/// ragged (row `r` reads `r + 1` tokens per call) and every other row only.
fn irregular(model: &Decoder) -> (f64, f64) {
    let vocab = model.config().vocab_size as u32;
    let prompts: Vec<Vec<u32>> =
        (0..8u32).map(|r| (0..PROMPT as u32).map(|i| (i * 31 + r * 17 + 5) % vocab).collect()).collect();
    let prompt_refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
    let mut rates = [0.0; 2];
    for (case, rate) in rates.iter_mut().enumerate() {
        let (mut session, _) = model.start(&prompt_refs, 1).unwrap();
        let started = Instant::now();
        let mut read = 0;
        for step in 0..STEPS / 4 {
            let tokens: Vec<Vec<u32>> = (0..8u32)
                .map(|r| {
                    (0..if case == 0 { r + 1 } else { 1 })
                        .map(|i| (step as u32 * 13 + r + i) % vocab)
                        .collect()
                })
                .collect();
            let feeds: Vec<Feed<'_>> = tokens
                .iter()
                .enumerate()
                .filter(|(row, _)| case == 0 || row % 2 == 1)
                .map(|(row, t)| Feed::predict(row, t))
                .collect();
            read += feeds.iter().map(|f| f.tokens.len()).sum::<usize>();
            let _ = argmax(model.extend(&mut session, &feeds).unwrap());
        }
        *rate = read as f64 / started.elapsed().as_secs_f64();
    }
    (rates[0], rates[1])
}

/// The machine's streaming read on Rayon's threads, and what it allows a decode step: a
/// step at batch 1 reads every f32 weight once, so no f32 decoder (ours or torch's) runs
/// faster than the weights' bytes over this rate.
fn bandwidth(model: &Decoder) {
    use rayon::prelude::*;
    const LANES: usize = 16;
    let data = vec![1.0f32; 1 << 28]; // 1 GiB, far past any cache
    // Each task reads the four quarters of its chunk at once and asks for each 4 KiB
    // ahead, as the decode products do: one core keeps more reads in flight that way
    // than over one stream (26.0-26.2 GB/s without either on a 2-core AVX-512 Xeon).
    #[cfg(target_arch = "x86_64")]
    let sse = pulp::core_arch::x86::Sse::try_new();
    let ahead = |part: &[f32]| {
        #[cfg(target_arch = "x86_64")]
        if let Some(sse) = sse {
            use core::arch::x86_64::_MM_HINT_T0;
            sse._mm_prefetch::<_MM_HINT_T0>(part.as_ptr().wrapping_add(1024).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = part;
    };
    let sum = |data: &[f32]| {
        data.par_chunks(1 << 16)
            .map(|chunk| {
                let mut lanes = [[0.0f32; LANES]; 4];
                let (a, rest) = chunk.split_at(chunk.len() / 4);
                let (b, rest) = rest.split_at(chunk.len() / 4);
                let (c, d) = rest.split_at(chunk.len() / 4);
                for (((a, b), c), d) in a
                    .chunks_exact(LANES)
                    .zip(b.chunks_exact(LANES))
                    .zip(c.chunks_exact(LANES))
                    .zip(d.chunks_exact(LANES))
                {
                    for (lanes, part) in lanes.iter_mut().zip([a, b, c, d]) {
                        ahead(part);
                        for (l, v) in lanes.iter_mut().zip(part) {
                            *l += v;
                        }
                    }
                }
                lanes.iter().flatten().sum::<f32>()
            })
            .sum::<f32>()
    };
    let mut rates: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(sum(std::hint::black_box(&data)));
            (data.len() * 4) as f64 / started.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    let rate = rates[rates.len() / 2];
    // The decoder's weights; a tied embedding is read once, by the LM head.
    let mut floats = 0;
    model.visit(&mut Count(&mut floats));
    let gb = (floats * 4) as f64 / 1e9;
    println!(
        "streaming read on {} threads: {rate:.1} GB/s (median of {REPEATS})",
        rayon::current_num_threads()
    );
    println!(
        "SmolLM2-135M's f32 weights: {gb:.3} GB; a batch-1 decode step reads each once: at least {:.1} ms, at most {:.1} tokens/s",
        gb / rate * 1e3,
        rate / gb
    );
}

/// Counts the floats of a module's parameters.
struct Count<'a>(&'a mut usize);

impl burn::module::ModuleVisitor for Count<'_> {
    fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<D>>) {
        *self.0 += param.val().shape().num_elements();
    }
}

fn main() {
    trlvr::device::keep_freed_memory();
    if std::env::args().any(|a| a == "--bandwidth") {
        bandwidth(&smollm2_135m().init(&Device::default()));
        return;
    }
    if std::env::args().any(|a| a == "--prefill") {
        let model = smollm2_135m().init(&Device::default()).with_decode_layout();
        prefill_only(&model, 1);
        prefill_only(&model, 8);
        return;
    }
    if std::env::args().any(|a| a == "--profile") {
        let model = smollm2_135m().init(&Device::default()).with_decode_layout();
        flip_threshold(&model);
        profile(&model, 8, 160);
        profile(&model, 1, 160);
        return;
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-')).unwrap_or_default();
    let reference: Option<serde_json::Value> = std::env::var("TRLVR_BENCH_REFERENCE")
        .ok()
        .map(|path| serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap());
    let device = Device::default();

    println!("| case | prefill tok/s | decode tok/s | prefill vs torch | decode vs torch |");
    println!("|---|---:|---:|---:|---:|");
    for (name, config) in [("qwen3-tiny", tiny_qwen3()), ("smollm2-135m", smollm2_135m())] {
        let cases: Vec<(String, usize)> = [1, 8]
            .iter()
            .map(|&b| (format!("{name} b{b}"), b))
            .filter(|(c, _)| c.contains(&filter))
            .collect();
        let irregular_too = name == "smollm2-135m" && std::env::args().any(|a| a == "--irregular");
        if cases.is_empty() && !irregular_too {
            continue;
        }
        let model = config.init(&device);
        let model = if std::env::args().any(|a| a == "--trained-layout") {
            model
        } else {
            model.with_decode_layout()
        };
        // Warm up: first touches of the weights and the allocator.
        let _ = model.start(&[&[1, 2, 3, 4]], 1).unwrap().1.into_data();
        if irregular_too {
            let (ragged, odd) = irregular(&model);
            println!("| {name} b8 ragged feeds (1..8 tokens) | - | {ragged:.1} | - | - |");
            println!("| {name} b8 odd rows only | - | {odd:.1} | - | - |");
        }
        for (case, batch) in cases {
            let (prefill, decode) = median_run(&model, batch);
            let ratio = |key: &str, ours: f64| {
                reference
                    .as_ref()
                    .and_then(|r| r[&case][key].as_f64())
                    .map_or("-".to_string(), |theirs| format!("{:.2}x", ours / theirs))
            };
            println!(
                "| {case} | {prefill:.0} | {decode:.1} | {} | {} |",
                ratio("prefill", prefill),
                ratio("decode", decode)
            );
        }
    }
}
