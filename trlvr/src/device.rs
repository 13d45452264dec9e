//! Picking a device by name (`--device flex`, `cuda:0`, `wgpu`, `tch`, `tch-cuda:1`), and the
//! host allocator's settings for CPU training.

use burn::prelude::*;

use crate::{Error, Result};

/// The device named by `spec`: `flex` (or `cpu`), `cuda[:N]`, `wgpu` (wgpu's default
/// adapter: a GPU, else Mesa's lavapipe on the CPU), `wgpu:N` (the N-th discrete GPU),
/// `tch` (LibTorch CPU), `tch-cuda[:N]`. A backend that was not compiled in is a clear error naming the
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
        "wgpu" => backend::wgpu(spec.contains(':').then_some(index)),
        "tch" | "libtorch" => backend::tch(None),
        "tch-cuda" => backend::tch(Some(index)),
        _ => {
            return Err(Error::Device(format!(
                "unknown device {spec:?}; expected flex, cuda[:N], wgpu[:N], tch or tch-cuda[:N]"
            )));
        }
    };
    device.ok_or_else(|| {
        Error::Device(format!(
            "{spec:?} needs a backend feature (flex, cuda, wgpu or tch) that this build lacks"
        ))
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

/// Passes to run at once on `device` for a lanes setting
/// ([`TrainConfig::lanes`](crate::train::TrainConfig::lanes), [`SftConfig::lanes`](crate::train::SftConfig::lanes)):
/// the setting itself unless 0; at 0, one per thread of Rayon's pool on flex, whose
/// elementwise ops run on one thread each (a SmolLM2 update kept 2 cores 1.4 busy with one
/// pass), and 1 elsewhere (LibTorch and the GPU backends parallelise inside each op).
pub fn lanes(setting: usize, device: &Device) -> usize {
    match setting {
        0 if backend::flex().is_some_and(|d| d == device.clone().inner()) => rayon::current_num_threads(),
        0 => 1,
        n => n,
    }
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

    /// wgpu's default adapter, or the `index`-th discrete GPU.
    #[allow(unused_variables)]
    pub fn wgpu(index: Option<usize>) -> Option<Device> {
        #[cfg(feature = "wgpu")]
        return Some(Device::wgpu(match index {
            Some(i) => burn::tensor::DeviceKind::DiscreteGpu(i),
            None => burn::tensor::DeviceKind::DefaultDevice,
        }));
        #[cfg(not(feature = "wgpu"))]
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

/// Makes glibc's `malloc` keep freed memory for reuse instead of handing it back to the
/// kernel: no `mmap` for large blocks, no trimming of the heap's top below 2 GiB.
///
/// A CPU training step allocates and frees the same large tensors (activations, logit
/// chunks, gradients) hundreds of times. By default glibc serves blocks over 32 MiB with
/// `mmap` and unmaps them on free, so every reuse faults in fresh pages that the kernel
/// zeroes first: 5% of a SmolLM2 step's CPU samples were the kernel clearing pages, on
/// the thread every elementwise op runs on. Measured (`cargo bench --bench train_step`,
/// back to back): the update 18.8 -> 16.5 s, peak memory 7.5 -> 7.8 GB. Call it first
/// thing in `main`; elsewhere than glibc it does nothing.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: `mallopt` only sets malloc's tuning parameters (under malloc's own lock);
    // no memory is touched and no pointer is passed.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
    }
}
