//! Progress bars on standard error (hidden when it is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};
use trlvr::prelude::Progress;

/// A bar over `steps` steps: a rollout's token budget (each step writes one token in
/// every live row), or a warm-up's optimizer steps.
pub fn steps_bar(steps: usize) -> ProgressBar {
    let bar = ProgressBar::new(steps as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} steps, {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// Moves `bar` to `progress`.
pub fn show(bar: &ProgressBar, progress: Progress) {
    bar.set_position(progress.steps as u64);
    let rate = progress.tokens as f64 / bar.elapsed().as_secs_f64().max(1e-9);
    bar.set_message(format!("{}/{} rows writing, {rate:.1} tok/s", progress.live, progress.rows));
}
