//! The decoder on a second backend: cached decoding with ragged feeds (per-row cache
//! lengths, the indexed K/V write, idle rows, catch-up rows) gives flex's logits. Run with
//! `--features tch` (LibTorch) or `--features cuda`; the device comes from
//! `TRLVR_TEST_DEVICE` (default `tch`).
#![cfg(any(feature = "tch", feature = "cuda"))]

mod common;

use burn::prelude::*;
use common::{fixture, to_vec};
use trlvr::device::parse_device;
use trlvr::model::{Feed, Partner};
use trlvr_models::load_hf_dir;

/// Logits of every step of a ragged decode on `device`.
fn ragged_decode(name: &str, device: &Device) -> Vec<Vec<f32>> {
    let model = load_hf_dir(fixture(name), device).unwrap().0;
    let prompts: [&[u32]; 3] = [&[5, 17, 200, 3], &[9, 8], &[1]];
    let (mut session, first) = model.start(&prompts, 2).unwrap();
    let mut out = vec![to_vec(first)];
    for step in 0..6u32 {
        let tokens: Vec<Vec<u32>> = (0..6u32)
            .map(|r| (0..1 + (r + step) % 3).map(|i| (step * 31 + r * 7 + i) % 256).collect())
            .collect();
        // Rows take turns being idle; odd rows only catch up on even steps.
        let feeds: Vec<Feed<'_>> = tokens
            .iter()
            .enumerate()
            .filter(|(r, _)| !(*r as u32 + step).is_multiple_of(3))
            .map(
                |(r, t)| if r % 2 == 1 && step % 2 == 0 { Feed::catch_up(r, t) } else { Feed::predict(r, t) },
            )
            .collect();
        out.push(to_vec(model.extend(&mut session, &feeds).unwrap()));
    }
    out
}

#[test]
fn ragged_cached_decoding_agrees_with_flex() {
    let other = parse_device(&std::env::var("TRLVR_TEST_DEVICE").unwrap_or_else(|_| "tch".into())).unwrap();
    for name in ["qwen3-tiny-untied", "llama-tiny"] {
        let want = ragged_decode(name, &parse_device("flex").unwrap());
        let got = ragged_decode(name, &other);
        assert_eq!(want.len(), got.len());
        for (step, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(w.len(), g.len(), "{name} step {step}");
            let worst = w.iter().zip(g).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(worst < 1e-4, "{name} step {step}: {worst}");
        }
    }
}
