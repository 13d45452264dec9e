//! A study's plots: every claim's tests as intervals against their thresholds (one row
//! per test, each on its own axis and unit), and a figure over training per arm.

use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;
use trlvr::study::{ClaimReading, Threshold, Verdict};

use crate::plots::{FONT, SIZE, colour, err, font, range};

/// Points of one run over training: (step, value).
pub type Curve = Vec<(f64, f64)>;
/// An arm's name and its runs' curves.
pub type ArmCurves = (String, Vec<Curve>);

/// Draws every test of every claim into `dir/claims.png`: the figure (or difference) and
/// its interval at the confidence the claim was read at, the threshold as a red line (two
/// for a margin). Returns (file name, caption), or nothing without claims.
pub fn claims(dir: &Path, readings: &[ClaimReading]) -> Result<Option<(String, String)>> {
    font()?;
    let rows: Vec<(String, &trlvr::study::TestReading, Verdict)> = readings
        .iter()
        .flat_map(|c| {
            c.alternatives.iter().flat_map(move |a| {
                a.tests.iter().map(move |t| {
                    (format!("{}: {} {}", c.id, t.label, t.test.threshold.words()), t, c.verdict)
                })
            })
        })
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let name = "claims.png".to_string();
    let path = dir.join(&name);
    let height = 40 + 96 * rows.len() as u32;
    {
        let root = BitMapBackend::new(&path, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (title, body) = root.split_vertically(40);
        title
            .draw_text(
                "Each claim's tests: estimate and interval (black), threshold (red)",
                &(FONT, 18).into_font().color(&BLACK),
                (12, 10),
            )
            .map_err(err)?;
        for (area, (label, t, verdict)) in body.split_evenly((rows.len(), 1)).iter().zip(&rows) {
            let e = t.estimate;
            let marks: Vec<f64> = match t.test.threshold {
                Threshold::Below(x) | Threshold::Above(x) => vec![x],
                Threshold::Within(m) => vec![-m, m],
            };
            let xs = range([e.value, e.low, e.high].into_iter().chain(marks.iter().copied()));
            let mut chart = ChartBuilder::on(area)
                .caption(format!("{label} ({}; claim {})", t.outcome.word(), verdict.word()), (FONT, 14))
                .margin(6)
                .x_label_area_size(30)
                .y_label_area_size(10)
                .build_cartesian_2d(xs, 0.0..1.0)
                .map_err(err)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_desc(t.test.figure.difference_unit())
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 12))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(err)?;
            for x in marks {
                chart.draw_series(LineSeries::new([(x, 0.0), (x, 1.0)], RED.stroke_width(2))).map_err(err)?;
            }
            if e.value.is_finite() {
                chart
                    .draw_series(LineSeries::new([(e.low, 0.5), (e.high, 0.5)], BLACK.stroke_width(3)))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Circle::new((e.value, 0.5), 5, BLACK.filled())))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(Some((
        name,
        "Every test of every claim: the estimate (dot) and its interval (bar) at the confidence the claim was read \
         at, against the declared threshold (red; two lines for an equivalence margin)."
            .into(),
    )))
}

/// A line plot's title and axes.
#[derive(Debug, Clone, Copy)]
pub struct Axes<'a> {
    /// Above the plot.
    pub title: &'a str,
    /// The x axis.
    pub x: &'a str,
    /// The y axis.
    pub y: &'a str,
    /// Ticks of x in thousands (`12k`).
    pub thousands: bool,
}

/// One curve per arm (the mean over its seeds, point by point, cut to the shortest run)
/// into `dir/<file>`; `false` when no arm has points.
pub fn lines(dir: &Path, file: &str, axes: Axes<'_>, arms: &[ArmCurves]) -> Result<bool> {
    font()?;
    let curves: Vec<(usize, &str, Curve, usize)> = arms
        .iter()
        .enumerate()
        .filter(|(_, (_, runs))| !runs.is_empty() && runs.iter().all(|r| !r.is_empty()))
        .map(|(i, (arm, runs))| (i, arm.as_str(), mean(runs), runs.len()))
        .collect();
    if curves.is_empty() {
        return Ok(false);
    }
    let xs = range(curves.iter().flat_map(|c| c.2.iter().map(|p| p.0)).chain([0.0]));
    let ys = range(curves.iter().flat_map(|c| c.2.iter().map(|p| p.1)));
    let path = dir.join(file);
    let root = BitMapBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(axes.title, (FONT, 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0f64.min(xs.start)..xs.end, ys)
        .map_err(err)?;
    let thousands = |x: &f64| format!("{:.0}k", x / 1000.0);
    let plain = |x: &f64| format!("{x}");
    chart
        .configure_mesh()
        .x_desc(axes.x)
        .y_desc(axes.y)
        .x_label_formatter(if axes.thousands { &thousands } else { &plain })
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(err)?;
    for (i, arm, points, seeds) in &curves {
        let style = ShapeStyle::from(&colour(*i)).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points.iter().copied().filter(|p| p.1.is_finite()), style))
            .map_err(err)?
            .label(if *seeds == 1 { (*arm).to_string() } else { format!("{arm} (mean of {seeds} seeds)") })
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
    Ok(true)
}

/// `label` per training step, one curve per arm, into `dir/<file>`.
pub fn over_training(
    dir: &Path,
    file: &str,
    label: &str,
    arms: &[ArmCurves],
) -> Result<Option<(String, String)>> {
    let axes =
        Axes { title: &format!("{label} over training"), x: "training step", y: label, thousands: false };
    Ok(lines(dir, file, axes, arms)?.then(|| {
        (
            file.to_string(),
            format!("{label} at each training step; one line per arm, the mean over its seeds."),
        )
    }))
}

/// The mean over runs, point by point (cut to the shortest).
pub fn mean(runs: &[Curve]) -> Curve {
    let len = runs.iter().map(Vec::len).min().unwrap_or(0);
    let n = runs.len() as f64;
    (0..len)
        .map(|i| (runs.iter().map(|r| r[i].0).sum::<f64>() / n, runs.iter().map(|r| r[i].1).sum::<f64>() / n))
        .collect()
}
