//! Group advantages (method.md §3): rewards of the G rollouts of each prompt in,
//! one advantage per rollout out.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Added to the standard deviation so a near-constant group stays finite.
pub const STD_EPS: f64 = 1e-6;

/// How rewards are turned into advantages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdvantageNorm {
    /// `(r - mean(group)) / (std(group) + 1e-6)`, unbiased std (GRPO; default).
    #[default]
    GroupStd,
    /// `r - mean(group)`, no std scaling (Dr. GRPO).
    GroupMean,
    /// `r - mean(group)`, divided by the unbiased std of those centred values over the
    /// whole batch, plus 1e-6.
    BatchStd,
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Unbiased standard deviation; 0 for fewer than two values.
fn std_unbiased(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Advantages for `rewards` laid out group after group, `group_size` rollouts each.
/// A group whose rewards are all equal gets exactly zero.
///
/// ```
/// use trlvr::advantage::{advantages, AdvantageNorm};
///
/// let a = advantages(&[1.0, 0.0, 1.0, 1.0], 2, AdvantageNorm::GroupStd)?;
/// assert!(a[0] > 0.0 && a[1] < 0.0);
/// assert_eq!(&a[2..], &[0.0, 0.0]); // all-correct group: no signal
/// # Ok::<(), trlvr::Error>(())
/// ```
///
/// # Errors
/// [`Error::Shape`] if `group_size` is 0 or does not divide the count;
/// [`Error::NonFinite`] for a NaN or infinite reward.
pub fn advantages(rewards: &[f32], group_size: usize, norm: AdvantageNorm) -> Result<Vec<f32>> {
    if group_size == 0 || !rewards.len().is_multiple_of(group_size) {
        return Err(Error::Shape(format!(
            "{} rewards do not split into groups of {group_size}",
            rewards.len()
        )));
    }
    if let Some(i) = rewards.iter().position(|r| !r.is_finite()) {
        return Err(Error::NonFinite(format!("reward {i} is {}", rewards[i])));
    }
    let mut centred = Vec::with_capacity(rewards.len());
    let mut group_std = Vec::with_capacity(rewards.len());
    for group in rewards.chunks(group_size) {
        let g: Vec<f64> = group.iter().map(|&r| f64::from(r)).collect();
        let m = mean(&g);
        let s = std_unbiased(&g);
        for r in g {
            // Exact zero when all rewards are equal (r - m may be tiny otherwise).
            centred.push(if s == 0.0 { 0.0 } else { r - m });
            group_std.push(s);
        }
    }
    let out = match norm {
        AdvantageNorm::GroupStd => centred.iter().zip(&group_std).map(|(c, s)| c / (s + STD_EPS)).collect(),
        AdvantageNorm::GroupMean => centred,
        AdvantageNorm::BatchStd => {
            let s = std_unbiased(&centred);
            centred.iter().map(|c| c / (s + STD_EPS)).collect::<Vec<_>>()
        }
    };
    Ok(out.into_iter().map(|a| a as f32).collect())
}
