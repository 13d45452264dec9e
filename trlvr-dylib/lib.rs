//! trlvr as one shared library: see this crate's Cargo.toml.
pub use trlvr::*;
