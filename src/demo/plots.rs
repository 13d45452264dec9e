//! The report's plots, as PNGs readable without their captions: axes with ticks and
//! units, labels and a legend, in DejaVu Sans registered from memory (no system fonts).
//! Over training: one figure per quantity, one line per arm (the mean over seeds),
//! x = rollout tokens spent. The frontier: KL-Reg's settings, GRPO and TRLVR as points of
//! tax against solo accuracy.

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use serde_json::Value;

use super::arms::Arm;
use super::report::{FrontierPoint, Row};

/// A figure tracked over training: its file name, its y-axis label.
pub const FIGURES: [(&str, &str); 4] = [
    ("reward", "training reward (mean of the last 10 steps)"),
    ("tax", "communication tax on the probe set (points)"),
    ("junior_ce", "junior CE on solo chains (nats/token)"),
    ("shorthand", "shorthand share of solo steps (%)"),
];

const FONT: &str = "sans-serif";
const SIZE: (u32, u32) = (760, 460);

/// The colour of an arm.
pub fn colour(arm: Arm) -> RGBColor {
    match arm {
        Arm::Grpo => RGBColor(214, 39, 40),
        Arm::Trlvr => RGBColor(31, 119, 180),
        Arm::KlReg => RGBColor(44, 160, 44),
        Arm::TrlvrLiterate => RGBColor(148, 103, 189),
    }
}

/// Registers the font once per process.
fn font() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| anyhow!("the embedded DejaVu Sans font did not load"));
    });
    result
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plotting: {e}")
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

/// The range of `values` padded by 5%, never empty.
fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut low, mut high) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        low = low.min(v);
        high = high.max(v);
    }
    if !low.is_finite() {
        (low, high) = (0.0, 1.0);
    }
    if high - low < 1e-9 {
        (low, high) = (low - 0.5, high + 0.5);
    }
    let pad = 0.05 * (high - low);
    (low - pad)..(high + pad)
}

/// Draws every figure over training into `dir/<figure>.png` from each arm's runs' metrics
/// lines; returns (file name, caption) per plot.
pub fn draw(dir: &Path, runs: &[(Arm, Vec<Vec<Value>>)]) -> Result<Vec<(String, String)>> {
    font()?;
    let mut out = Vec::new();
    for (figure, label) in FIGURES {
        let lines: Vec<(Arm, Vec<(f64, f64)>)> = runs
            .iter()
            .map(|(arm, seeds)| (*arm, mean(&seeds.iter().map(|l| points(l, figure)).collect::<Vec<_>>())))
            .collect();
        let xs = range(lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).chain([0.0]));
        let ys = range(lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
        let name = format!("{figure}.png");
        let path = dir.join(&name);
        {
            let root = BitMapBackend::new(&path, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(label, (FONT, 20))
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(64)
                .build_cartesian_2d(0.0..xs.end, ys)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("rollout tokens spent")
                .y_desc(label.split(" (").next().unwrap_or(label))
                .x_label_formatter(&|x| format!("{:.0}k", x / 1000.0))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(err)?;
            for (arm, points) in &lines {
                let style = ShapeStyle::from(&colour(*arm)).stroke_width(2);
                chart
                    .draw_series(LineSeries::new(points.iter().copied().filter(|p| p.1.is_finite()), style))
                    .map_err(err)?
                    .label(format!(
                        "{} (mean of {} seeds)",
                        arm.name(),
                        runs.iter().find(|r| r.0 == *arm).map_or(0, |r| r.1.len())
                    ))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
            }
            chart
                .configure_series_labels()
                .label_font((FONT, 14))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(err)?;
            root.present().map_err(err)?;
        }
        out.push((
            name,
            format!(
                "{label}, over the rollout tokens each run spent; one line per arm, the mean over its seeds."
            ),
        ));
    }
    Ok(out)
}

/// KL-Reg's frontier: each setting's (solo, tax) with GRPO's and TRLVR's points, into
/// `dir/frontier.png`; `rows` are the table's rows (the arms' means over seeds).
pub fn frontier(dir: &Path, points: &[FrontierPoint], rows: &[(String, Row)]) -> Result<(String, String)> {
    font()?;
    let arm = |name: &str| rows.iter().find(|(l, _)| l == name).map(|(_, r)| (r.solo.value, r.tax.value));
    let arms: Vec<(Arm, (f64, f64))> = [Arm::Grpo, Arm::Trlvr, Arm::TrlvrLiterate]
        .into_iter()
        .filter_map(|a| Some((a, arm(a.name())?)))
        .collect();
    let settings: Vec<(String, (f64, f64))> =
        points.iter().map(|p| (p.setting.clone(), (p.row.solo.value, p.row.tax.value))).collect();
    let all = || settings.iter().map(|s| s.1).chain(arms.iter().map(|a| a.1));
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
        let green = colour(Arm::KlReg);
        chart
            .draw_series(settings.iter().map(|(_, p)| Circle::new(*p, 5, green.filled())))
            .map_err(err)?
            .label("KL-Reg (β, estimator beside each point)")
            .legend(move |(x, y)| Circle::new((x + 9, y), 5, green.filled()));
        // A label per setting, unless one was drawn close by (crowded corners stay readable).
        let mut drawn: Vec<(f64, f64)> = Vec::new();
        let (dx, dy) = ((xs.end - xs.start) * 0.06, (ys.end - ys.start) * 0.05);
        for (label, (x, y)) in &settings {
            if drawn.iter().any(|(a, b)| (a - x).abs() < dx && (b - y).abs() < dy) {
                continue;
            }
            drawn.push((*x, *y));
            let text = label.replace(" (the arm above)", "");
            chart
                .draw_series(std::iter::once(Text::new(text, (*x, *y - dy * 0.5), (FONT, 12).into_font())))
                .map_err(err)?;
        }
        for (a, p) in &arms {
            let c = colour(*a);
            chart
                .draw_series(std::iter::once(TriangleMarker::new(*p, 7, c.filled())))
                .map_err(err)?
                .label(format!("{} (mean over seeds)", a.name()))
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
        "KL-Reg's settings (circles; one seed each except the arm, β = 0.05 k3, over its seeds) and the \
         arms (triangles): the paper's claim 4 holds when no circle reaches TRLVR's tax at TRLVR's solo accuracy."
            .into(),
    ))
}
