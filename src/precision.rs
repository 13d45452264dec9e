//! The float precision of the commands' `--dtype` and of recipes: below the model loader
//! and the option groups, which both name it.

use burn::prelude::Device;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// A float precision of the commands' `--dtype` (and of recipes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE half.
    F16,
}

impl Precision {
    /// The type a checkpoint's weights are saved in.
    pub fn saved(self) -> trlvr_models::SavedDtype {
        match self {
            Self::F32 => trlvr_models::SavedDtype::F32,
            Self::Bf16 => trlvr_models::SavedDtype::Bf16,
            Self::F16 => trlvr_models::SavedDtype::F16,
        }
    }

    /// The spelling on the command line and in recipes.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// Burn's dtype.
    pub fn dtype(self) -> burn::tensor::DType {
        match self {
            Precision::F32 => burn::tensor::DType::F32,
            Precision::Bf16 => burn::tensor::DType::BF16,
            Precision::F16 => burn::tensor::DType::F16,
        }
    }
}

/// Refuses a precision `device` cannot compute in, naming `what` (lavapipe and other wgpu
/// devices have no bf16: their shader compiler would panic on the first kernel).
///
/// # Errors
/// When `precision` is set and `device` does not support it.
pub fn check(precision: Option<Precision>, device: &Device, what: &str) -> anyhow::Result<()> {
    match precision {
        Some(p) if !device.supports_dtype(p.dtype()) => {
            let here: Vec<&str> = [Precision::F32, Precision::Bf16, Precision::F16]
                .into_iter()
                .filter(|q| device.supports_dtype(q.dtype()))
                .map(Precision::name)
                .collect();
            anyhow::bail!(
                "{what}: the device {device:?} cannot compute in {} (it can in: {})",
                p.name(),
                here.join(", ")
            )
        }
        _ => Ok(()),
    }
}
