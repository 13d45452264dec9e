//! Picking a device by name (`--device flex`, `cuda:0`, `tch`, `tch-cuda:1`).

use burn::prelude::*;

use crate::{Error, Result};

/// The device named by `spec`: `flex` (or `cpu`), `cuda[:N]`, `tch` (LibTorch CPU),
/// `tch-cuda[:N]`. A backend that was not compiled in is a clear error naming the
/// cargo feature to enable.
///
/// ```
/// assert!(trlvr::device::parse_device("flex").is_ok());
/// assert!(trlvr::device::parse_device("abacus").is_err());
/// // The CPU backends have one device each: an index other than 0 is a mistake.
/// assert!(trlvr::device::parse_device("flex:1").is_err());
/// ```
///
/// # Errors
/// [`Error::Device`] for unknown names or missing features.
pub fn parse_device(spec: &str) -> Result<Device> {
    let (name, index) = match spec.split_once(':') {
        Some((n, i)) => (n, i.parse().map_err(|_| Error::Device(format!("bad device index in {spec:?}")))?),
        None => (spec, 0),
    };
    if matches!(name, "flex" | "cpu" | "tch" | "libtorch") && index != 0 {
        return Err(Error::Device(format!("{spec:?}: {name} has one device; drop the index")));
    }
    let device = match name {
        "flex" | "cpu" => backend::flex(),
        "cuda" => backend::cuda(index),
        "tch" | "libtorch" => backend::tch(None),
        "tch-cuda" => backend::tch(Some(index)),
        _ => {
            return Err(Error::Device(format!(
                "unknown device {spec:?}; expected flex, cuda[:N], tch or tch-cuda[:N]"
            )));
        }
    };
    device.ok_or_else(|| {
        Error::Device(format!("{spec:?} needs a backend feature (flex, cuda or tch) that this build lacks"))
    })
}

/// Whether `device` computes in host memory (flex, LibTorch on the CPU). The rollout
/// engine samples there from logits read back to the host (cheaper than sampling ops on
/// a CPU backend), and on an accelerator where the logits are, so that only token ids
/// cross to the host.
///
/// ```
/// # use burn::prelude::*;
/// assert!(trlvr::device::is_host(&Device::flex()));
/// assert!(trlvr::device::is_host(&Device::flex().autodiff()));
/// ```
pub fn is_host(device: &Device) -> bool {
    let device = device.clone().inner();
    backend::flex().is_some_and(|d| d == device) || backend::tch(None).is_some_and(|d| d == device)
}

/// One function per backend; `None` when its feature is off.
mod backend {
    use burn::prelude::Device;

    pub fn flex() -> Option<Device> {
        #[cfg(feature = "flex")]
        return Some(Device::flex());
        #[cfg(not(feature = "flex"))]
        None
    }

    #[allow(unused_variables)]
    pub fn cuda(index: usize) -> Option<Device> {
        #[cfg(feature = "cuda")]
        return Some(Device::cuda(index));
        #[cfg(not(feature = "cuda"))]
        None
    }

    #[allow(unused_variables)]
    #[cfg_attr(feature = "tch", allow(deprecated))] // burn-tch is opt-in, as the design card names it
    pub fn tch(cuda_index: Option<usize>) -> Option<Device> {
        #[cfg(feature = "tch")]
        return Some(match cuda_index {
            Some(i) => Device::libtorch_cuda(i),
            None => Device::libtorch(),
        });
        #[cfg(not(feature = "tch"))]
        None
    }
}
