//! The report's plots, as PNGs readable without their captions: axes with ticks and
//! units, labels and a legend, in DejaVu Sans registered from memory (no system fonts).
//! Over training: one figure per quantity, one line per arm (the mean over seeds),
//! x = rollout tokens spent. The frontier: KL-Reg's settings, GRPO and TRLVR as points of
//! tax against solo accuracy.

use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;
use serde_json::Value;

use crate::plots::{FONT, SIZE, colour, err, font, range};
use crate::study::plots::{ArmCurves, Axes, lines};

/// A figure tracked over training: its file name, its y-axis label.
pub const FIGURES: [(&str, &str); 4] = [
    ("reward", "training reward (mean of the last 10 steps)"),
    ("tax", "communication tax on the probe set (points)"),
    ("junior_ce", "junior CE on solo chains (nats/token)"),
    ("shorthand", "shorthand share of solo steps (%)"),
];

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

/// Draws every figure over training into `dir/<figure>.png` from each arm's runs' metrics
/// lines; returns (file name, caption) per plot.
pub fn draw(dir: &Path, runs: &[(String, Vec<Vec<Value>>)]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (figure, label) in FIGURES {
        let curves: Vec<ArmCurves> = runs
            .iter()
            .map(|(arm, seeds)| (arm.clone(), seeds.iter().map(|l| points(l, figure)).collect()))
            .collect();
        let name = format!("{figure}.png");
        let y = label.split(" (").next().unwrap_or(label);
        let axes = Axes { title: label, x: "rollout tokens spent", y, thousands: true };
        if lines(dir, &name, axes, &curves)? {
            out.push((
                name,
                format!("{label}, over the rollout tokens each run spent; one line per arm, the mean over its seeds."),
            ));
        }
    }
    Ok(out)
}

/// KL-Reg's frontier: each setting's (solo, tax) beside the arms' (`arms`: name, colour
/// index, point), into `dir/frontier.png`.
pub fn frontier(
    dir: &Path,
    settings: &[(String, (f64, f64))],
    arms: &[(String, usize, (f64, f64))],
) -> Result<(String, String)> {
    font()?;
    let all = || settings.iter().map(|s| s.1).chain(arms.iter().map(|a| a.2));
    let (xs, ys) = (range(all().map(|p| p.0)), range(all().map(|p| p.1).chain([0.0])));
    // Room on the right for the labels of the rightmost points.
    let xs = xs.start..(xs.end + 0.15 * (xs.end - xs.start));
    let name = "frontier.png".to_string();
    let path = dir.join(&name);
    {
        let root = BitMapBackend::new(&path, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("KL-Reg's frontier: tax against solo accuracy", (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(xs.clone(), ys.clone())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("solo pass@1 (%)")
            .y_desc("communication tax (points)")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        let green = colour(2);
        chart
            .draw_series(settings.iter().map(|(_, p)| Circle::new(*p, 5, green.filled())))
            .map_err(err)?
            .label("KL-Reg (β, estimator beside each point)")
            .legend(move |(x, y)| Circle::new((x + 9, y), 5, green.filled()));
        // A label per setting, unless one was drawn close by (crowded corners stay readable).
        let mut drawn: Vec<(f64, f64)> = Vec::new();
        let (dx, dy) = ((xs.end - xs.start) * 0.06, (ys.end - ys.start) * 0.05);
        for (label, (x, y)) in settings {
            if drawn.iter().any(|(a, b)| (a - x).abs() < dx && (b - y).abs() < dy) {
                continue;
            }
            drawn.push((*x, *y));
            let text = label.clone();
            chart
                .draw_series(std::iter::once(Text::new(text, (*x, *y - dy * 0.5), (FONT, 12).into_font())))
                .map_err(err)?;
        }
        for (a, i, p) in arms {
            let c = colour(*i);
            chart
                .draw_series(std::iter::once(TriangleMarker::new(*p, 7, c.filled())))
                .map_err(err)?
                .label(format!("{a} (pooled over seeds)"))
                .legend(move |(x, y)| TriangleMarker::new((x + 9, y), 6, c.filled()));
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::MiddleLeft)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok((
        name,
        "KL-Reg's settings (circles; each pooled over its seeds) and the arms \
         (triangles): the paper's claim 4 holds when no circle reaches TRLVR's tax at TRLVR's solo accuracy."
            .into(),
    ))
}
