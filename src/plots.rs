//! What every plot of the command line shares: PNGs readable without their captions, in
//! DejaVu Sans registered from memory (no system fonts), one size, one palette, and axes
//! padded around their data.

use std::sync::Once;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

/// The font family every plot's text uses.
pub const FONT: &str = "sans-serif";
/// Every plot's size, pixels.
pub const SIZE: (u32, u32) = (760, 460);

/// Registers the font once per process.
pub fn font() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| anyhow!("the embedded DejaVu Sans font did not load"));
    });
    result
}

/// A drawing error as an error.
pub fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plotting: {e}")
}

/// The `i`-th colour of the palette (arms in table order).
pub fn colour(i: usize) -> RGBColor {
    const PALETTE: [RGBColor; 8] = [
        RGBColor(214, 39, 40),
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    PALETTE[i % PALETTE.len()]
}

/// The range of `values` padded by 5%, never empty.
pub fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
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
