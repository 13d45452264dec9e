//! The second device of cross-backend tests.

use burn::prelude::*;

/// The device cross-backend tests compare with flex: `TRLVR_TEST_DEVICE`, else the
/// first compiled-in of `tch`, `wgpu`, `cuda` (flex alone: `flex`). Its name is printed,
/// so a test's output says which device ran.
///
/// # Panics
/// If `TRLVR_TEST_DEVICE` names a device this build cannot open.
pub fn second_device() -> (String, Device) {
    let default = if cfg!(feature = "tch") {
        "tch"
    } else if cfg!(feature = "wgpu") {
        "wgpu"
    } else if cfg!(feature = "cuda") {
        "cuda"
    } else {
        "flex"
    };
    let spec = std::env::var("TRLVR_TEST_DEVICE").unwrap_or_else(|_| default.into());
    let device = crate::device::parse_device(&spec).unwrap_or_else(|e| panic!("TRLVR_TEST_DEVICE: {e}"));
    #[cfg(feature = "wgpu")]
    if spec.starts_with("wgpu") {
        eprintln!("second device: {spec}; wgpu's adapters: {}", wgpu_adapters().join("; "));
        return (spec, device);
    }
    eprintln!("second device: {spec} ({device:?})");
    (spec, device)
}

/// The adapters wgpu finds: name, driver and kind (lavapipe is `llvmpipe`, a CPU).
#[cfg(feature = "wgpu")]
fn wgpu_adapters() -> Vec<String> {
    use burn::tensor::wgpu::wgpu;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    // Native adapters are enumerated at once: one poll finishes the future.
    let mut future = std::pin::pin!(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(adapters) => adapters
            .iter()
            .map(|a| {
                let info = a.get_info();
                format!(
                    "{} ({:?}, {} {}, {:?})",
                    info.name, info.backend, info.driver, info.driver_info, info.device_type
                )
            })
            .collect(),
        std::task::Poll::Pending => vec!["(not enumerated)".into()],
    }
}
