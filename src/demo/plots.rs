//! The plots over training: one PNG per figure, one line per arm (mean over seeds), x =
//! rollout tokens spent. plotters renders text only through system fonts (fontconfig)
//! in its released versions, so the PNGs carry no text: the axes' ranges and the colours
//! are written under each plot in `report.md`.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use serde_json::Value;

use super::arms::Arm;

/// A figure tracked over training: its name, where it sits in a `metrics.jsonl` line.
pub const FIGURES: [(&str, &str); 4] = [
    ("reward", "mean training reward (moving average over 10 steps)"),
    ("tax", "communication tax on the probe set (points)"),
    ("junior_ce", "junior CE on the senior's solo chains, probe set (nats/token)"),
    ("shorthand", "shorthand share of the senior's solo steps, probe set (%)"),
];

/// The colour of an arm, and its name for the caption.
pub fn colour(arm: Arm) -> (RGBColor, &'static str) {
    match arm {
        Arm::Grpo => (RGBColor(214, 39, 40), "red"),
        Arm::Trlvr => (RGBColor(31, 119, 180), "blue"),
        Arm::KlReg => (RGBColor(44, 160, 44), "green"),
    }
}

/// (tokens, value) points of `figure` for one run's metrics lines.
fn points(lines: &[Value], figure: &str) -> Vec<(f64, f64)> {
    let num = |v: &Value| v.as_f64();
    match figure {
        "reward" => {
            let raw: Vec<(f64, f64)> = lines
                .iter()
                .filter_map(|l| Some((num(&l["rollout_tokens"])?, num(&l["train"]["reward_mean"])?)))
                .collect();
            (0..raw.len())
                .map(|i| {
                    let window = &raw[i.saturating_sub(9)..=i];
                    (raw[i].0, window.iter().map(|p| p.1).sum::<f64>() / window.len() as f64)
                })
                .collect()
        }
        _ => lines
            .iter()
            .filter_map(|l| {
                let scale = if figure == "shorthand" { 100.0 } else { 1.0 };
                Some((num(&l["rollout_tokens"])?, scale * num(&l["probe"][figure])?))
            })
            .collect(),
    }
}

/// The mean over seeds, point by point (runs are cut to the shortest).
fn mean(runs: &[Vec<(f64, f64)>]) -> Vec<(f64, f64)> {
    let len = runs.iter().map(Vec::len).min().unwrap_or(0);
    (0..len)
        .map(|i| {
            let n = runs.len() as f64;
            (runs.iter().map(|r| r[i].0).sum::<f64>() / n, runs.iter().map(|r| r[i].1).sum::<f64>() / n)
        })
        .collect()
}

/// Draws every figure into `dir/<figure>.png` from each arm's runs' metrics lines;
/// returns (file name, caption) per plot.
pub fn draw(dir: &Path, runs: &[(Arm, Vec<Vec<Value>>)]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (figure, what) in FIGURES {
        let lines: Vec<(Arm, Vec<(f64, f64)>)> = runs
            .iter()
            .map(|(arm, seeds)| (*arm, mean(&seeds.iter().map(|l| points(l, figure)).collect::<Vec<_>>())))
            .collect();
        let all = lines.iter().flat_map(|(_, p)| p.iter()).filter(|p| p.1.is_finite());
        let (mut x_max, mut y_min, mut y_max) = (1.0f64, f64::INFINITY, f64::NEG_INFINITY);
        for &(x, y) in all {
            x_max = x_max.max(x);
            y_min = y_min.min(y);
            y_max = y_max.max(y);
        }
        if !y_min.is_finite() {
            (y_min, y_max) = (0.0, 1.0);
        }
        if y_max - y_min < 1e-9 {
            y_max = y_min + 1.0;
        }
        let pad = 0.05 * (y_max - y_min);
        let name = format!("{figure}.png");
        let path = dir.join(&name);
        {
            let root = BitMapBackend::new(&path, (640, 400)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
            let mut chart = ChartBuilder::on(&root)
                .margin(16)
                .build_cartesian_2d(0.0..x_max, (y_min - pad)..(y_max + pad))
                .map_err(|e| anyhow!("{e}"))?;
            // Frame and a zero line, drawn as series (no text).
            let frame = [
                (0.0, y_min - pad),
                (x_max, y_min - pad),
                (x_max, y_max + pad),
                (0.0, y_max + pad),
                (0.0, y_min - pad),
            ];
            chart.draw_series(LineSeries::new(frame, &BLACK)).map_err(|e| anyhow!("{e}"))?;
            if y_min < 0.0 && y_max > 0.0 {
                chart
                    .draw_series(LineSeries::new([(0.0, 0.0), (x_max, 0.0)], &RGBColor(180, 180, 180)))
                    .map_err(|e| anyhow!("{e}"))?;
            }
            for (arm, points) in &lines {
                let style = ShapeStyle::from(&colour(*arm).0).stroke_width(2);
                chart
                    .draw_series(LineSeries::new(points.iter().copied().filter(|p| p.1.is_finite()), style))
                    .map_err(|e| anyhow!("{e}"))?;
            }
            root.present().map_err(|e| anyhow!("{e}"))?;
        }
        let legend: Vec<String> =
            runs.iter().map(|(a, _)| format!("{} {}", a.name(), colour(*a).1)).collect();
        out.push((
            name,
            format!(
                "{what}: x from 0 to {x_max:.0} rollout tokens, y from {:.3} to {:.3} (grey: zero); {}",
                y_min - pad,
                y_max + pad,
                legend.join(", ")
            ),
        ));
    }
    Ok(out)
}
