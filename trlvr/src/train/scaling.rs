//! Dynamic loss scaling, for a senior computing in f16.
//!
//! A token's share of the GRPO loss is its advantage over the mini-batch's token count
//! (~2.6e-6 = 1/384,000 at the paper's 16 × 8 × 3,000 tokens), and the activation gradients of an f16
//! forward pass below f16's smallest normal (6e-5) lose precision or flush to zero. So the
//! gradient handed back into the senior is multiplied by the scale, and the f32 parameter
//! gradients divided by it before the clip. An update whose gradients overflow is skipped
//! and the scale halved; after `growth_interval` good updates in a row it doubles.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The settings (`[train.loss_scaling]`; `trlvr train` turns it on for an f16 senior).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LossScaling {
    /// The first scale (2^16, as PyTorch's `GradScaler`).
    pub initial: f64,
    /// Good updates in a row before the scale doubles.
    pub growth_interval: usize,
}

impl Default for LossScaling {
    fn default() -> Self {
        // Fewer updates than PyTorch's 2,000: an RLVR run has a few hundred.
        Self { initial: 65536.0, growth_interval: 200 }
    }
}

impl LossScaling {
    /// Checks the ranges.
    ///
    /// # Errors
    /// [`Error::Config`] for an initial scale below 1 or not finite, or no interval.
    pub fn validate(&self) -> Result<()> {
        if !(self.initial.is_finite() && self.initial >= 1.0) {
            return Err(Error::Config(format!(
                "loss_scaling.initial must be finite and >= 1, got {}",
                self.initial
            )));
        }
        if self.growth_interval == 0 {
            return Err(Error::Config("loss_scaling.growth_interval must be at least 1".into()));
        }
        Ok(())
    }

    /// The state at the start of a run.
    pub fn start(&self) -> LossScale {
        LossScale { scale: self.initial, good_updates: 0 }
    }
}

/// Where the scale stands; part of a checkpoint, so a resumed run scales as the
/// uninterrupted one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LossScale {
    /// The current scale.
    pub scale: f64,
    /// Good updates since the scale last changed.
    pub good_updates: usize,
}

impl LossScale {
    /// Records an update whose unscaled gradient norm was `norm`. Returns whether the
    /// update goes ahead (the gradients are finite).
    ///
    /// # Errors
    /// [`Error::NonFinite`] when halving would take the scale below 1: the gradients are
    /// not finite at any scale, so something other than f16's range is wrong.
    pub fn record(&mut self, norm: f64, growth_interval: usize) -> Result<bool> {
        if !norm.is_finite() {
            if self.scale < 2.0 {
                return Err(Error::NonFinite(format!(
                    "gradient norm is {norm} at loss scale {}",
                    self.scale
                )));
            }
            self.scale /= 2.0;
            self.good_updates = 0;
            return Ok(false);
        }
        self.good_updates += 1;
        if self.good_updates >= growth_interval {
            self.scale *= 2.0;
            self.good_updates = 0;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Against a direct reading of the rule: the scale is the initial one times 2 to
        /// the (growths - overflows); it grows after exactly `interval` finite updates in a
        /// row, halves on each overflow, and an overflow at a scale below 2 is an error.
        #[test]
        fn the_scale_halves_on_overflow_and_doubles_after_a_run_of_good_updates(
            finite in proptest::collection::vec(proptest::bool::weighted(0.8), 0..200),
            interval in 1usize..8,
            initial_power in 0i32..12,
        ) {
            let config = LossScaling { initial: 2f64.powi(initial_power), growth_interval: interval };
            let mut state = config.start();
            let (mut power, mut streak) = (initial_power, 0usize);
            for ok in finite {
                let norm = if ok { 1.0 } else { f64::NAN };
                let result = state.record(norm, interval);
                if ok {
                    streak += 1;
                    if streak == interval {
                        power += 1;
                        streak = 0;
                    }
                    prop_assert_eq!(result.unwrap(), true);
                } else if power == 0 {
                    prop_assert!(result.is_err());
                    break;
                } else {
                    power -= 1;
                    streak = 0;
                    prop_assert_eq!(result.unwrap(), false);
                }
                prop_assert_eq!(state.scale, 2f64.powi(power));
                prop_assert_eq!(state.good_updates, streak);
            }
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        for bad in [
            LossScaling { initial: 0.5, ..LossScaling::default() },
            LossScaling { initial: f64::INFINITY, ..LossScaling::default() },
            LossScaling { growth_interval: 0, ..LossScaling::default() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(LossScaling::default().validate().is_ok());
    }
}
