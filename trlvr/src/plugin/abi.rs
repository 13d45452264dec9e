//! What a plugin library and its host agree on before either trusts the other: the
//! version constants, the anchor that proves a shared runtime, and the declaration each
//! loadable plugin exports ([`export_plugin!`](crate::export_plugin)).

use std::ffi::c_char;

use super::Registration;

/// Bumped whenever [`PluginDeclaration`] or [`Registration`] change shape.
pub const ABI_VERSION: u32 = 4;
/// This trlvr's version, NUL-terminated.
pub const TRLVR_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
/// The compiler that built this trlvr, NUL-terminated.
pub const RUSTC_VERSION: &str = concat!(env!("TRLVR_RUSTC_VERSION"), "\0");
/// This trlvr build: version, compiler, features, profile and target, NUL-terminated.
pub const BUILD_ID: &str = concat!(env!("TRLVR_BUILD_ID"), "\0");

/// A static whose address identifies this copy of trlvr. A plugin's declaration points
/// at its own view of it: the same address as the host's means plugin and host share one
/// trlvr (and one Burn runtime) through `trlvr-dylib`.
pub static ANCHOR: u8 = 0;

/// What a loadable plugin exports as the symbol `TRLVR_PLUGIN_<crate name>`; written by
/// [`export_plugin!`](crate::export_plugin). Only the first three fields are read before the versions match.
#[repr(C)]
#[derive(Debug)]
pub struct PluginDeclaration {
    /// [`ABI_VERSION`] of the plugin's trlvr.
    pub abi_version: u32,
    /// [`TRLVR_VERSION`] of the plugin's trlvr.
    pub trlvr_version: *const c_char,
    /// [`RUSTC_VERSION`] of the plugin's trlvr.
    pub rustc_version: *const c_char,
    /// [`BUILD_ID`] of the plugin's trlvr.
    pub build_id: *const c_char,
    /// The address of the plugin's [`ANCHOR`].
    pub anchor: *const u8,
    /// Hands the plugin crate's registrations to the host.
    pub register: fn(&mut dyn FnMut(&'static Registration)),
}

// SAFETY: the declaration is immutable static data (pointers to 'static data).
#[allow(unsafe_code)]
unsafe impl Sync for PluginDeclaration {}

/// Exports the calling crate's registrations for loading at run time. Call once in a
/// plugin crate built as a `cdylib`.
#[macro_export]
macro_rules! export_plugin {
    () => {
        /// The declaration trlvr's loader reads (see `trlvr::plugin`), exported as
        /// `TRLVR_PLUGIN_<crate>`: one name per crate, so that two plugin crates linked
        /// into one program do not collide.
        #[allow(unsafe_code)]
        #[unsafe(export_name = concat!("TRLVR_PLUGIN_", env!("CARGO_CRATE_NAME")))]
        pub static TRLVR_PLUGIN: $crate::plugin::PluginDeclaration = $crate::plugin::PluginDeclaration {
            abi_version: $crate::plugin::ABI_VERSION,
            trlvr_version: $crate::plugin::TRLVR_VERSION.as_ptr().cast(),
            rustc_version: $crate::plugin::RUSTC_VERSION.as_ptr().cast(),
            build_id: $crate::plugin::BUILD_ID.as_ptr().cast(),
            anchor: &$crate::plugin::ANCHOR,
            register: |hand_over| {
                for registration in $crate::plugin::registrations() {
                    if registration.crate_name == env!("CARGO_PKG_NAME") {
                        hand_over(registration);
                    }
                }
            },
        };
    };
}
