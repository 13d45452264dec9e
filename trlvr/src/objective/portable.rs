//! Objectives through the portable ABI (`plugins/portable/trlvr_objective.h`): a plugin
//! built by any compiler, in any language, against no trlvr at all, is a pure function
//! of host arrays that returns the loss and dLoss/dlogp. The host forms
//! `s − detach(s) + loss` with `s = Σ logp · g`, whose value is the plugin's loss and
//! whose gradient is exactly the plugin's `g`, so autodiff continues into the senior.
//!
//! It covers every loss of the sampled tokens' log-probs (GRPO variants, Dr. GRPO,
//! RLOO/REINFORCE, CISPO, GSPO, sample-based KL such as junior-KL), not those that need the
//! full distribution (entropy, exact KL). Unlike Rust objective plugins it needs no shared
//! runtime: the default static `trlvr` binary loads it.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_void};
use std::fmt;
use std::sync::Arc;

use burn::prelude::*;

use super::{Metrics, Objective, ObjectiveBatch, ObjectiveOutput, check_shapes, host, host_bool};
use crate::{Error, Result};

/// The portable ABI version this host speaks (`TRLVR_PORTABLE_ABI` in the header).
pub const PORTABLE_ABI_VERSION: u32 = 1;

/// The symbol a portable objective library exports.
pub const PORTABLE_SYMBOL: &[u8] = b"TRLVR_PORTABLE_OBJECTIVE\0";

/// `trlvr_batch`.
#[repr(C)]
#[derive(Debug)]
struct CBatch {
    rows: u64,
    width: u64,
    log_probs: *const f32,
    old_log_probs: *const f32,
    ref_log_probs: *const f32,
    advantages: *const f32,
    mask: *const u8,
    mini_batch_tokens: u64,
    mini_batch_sequences: u64,
}

/// `trlvr_portable_objective`: what the library exports.
#[repr(C)]
#[derive(Debug)]
pub struct PortableDeclaration {
    abi_version: u32,
    name: *const c_char,
    about: *const c_char,
    version: *const c_char,
    needs_reference: u8,
    create: Option<Create>,
    loss: Option<Loss>,
    destroy: Option<Destroy>,
}

/// `create(config_json, err, err_len)`.
type Create = unsafe extern "C" fn(*const c_char, *mut c_char, usize) -> *mut c_void;
/// `loss(state, batch, loss, grad, err, err_len)`.
type Loss = unsafe extern "C" fn(*const c_void, *const CBatch, *mut f64, *mut f32, *mut c_char, usize) -> i32;
/// `destroy(state)`.
type Destroy = unsafe extern "C" fn(*mut c_void);

// SAFETY: immutable static data of a never-unloaded library.
unsafe impl Send for PortableDeclaration {}
unsafe impl Sync for PortableDeclaration {}

const ERR_LEN: usize = 1024;

fn message(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// A loaded portable objective kind: its declaration and the library that holds it.
#[derive(Clone)]
pub struct PortableKind {
    create: Create,
    loss: Loss,
    destroy: Destroy,
    needs_reference: bool,
    /// Keeps the declaration's library mapped while objectives made from it live.
    _library: Arc<libloading::Library>,
    /// Name, about and version, read once.
    pub name: &'static str,
    /// One line for `trlvr plugins`.
    pub about: &'static str,
    /// The plugin's version.
    pub version: &'static str,
}

impl fmt::Debug for PortableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortableKind").field("name", &self.name).field("version", &self.version).finish()
    }
}

impl PortableKind {
    /// Reads the declaration of `library`, if it exports one; checks the ABI version.
    /// The error is a message for the loader to prefix with the path.
    pub(crate) fn from_library(
        library: Arc<libloading::Library>,
    ) -> Option<std::result::Result<Self, String>> {
        // SAFETY: the symbol is a static `trlvr_portable_objective`; its first field, the
        // ABI version, is read alone before anything else is trusted.
        let raw: *const PortableDeclaration =
            unsafe { *library.get::<*const PortableDeclaration>(PORTABLE_SYMBOL).ok()? };
        let abi_version = unsafe { raw.cast::<u32>().read() };
        if abi_version != PORTABLE_ABI_VERSION {
            return Some(Err(format!(
                "portable objective ABI {abi_version} (plugin) != {PORTABLE_ABI_VERSION} (host)"
            )));
        }
        // SAFETY: the layout of this ABI version. The library is never unloaded (the
        // registry leaks a reference, and `library` travels with every object made from
        // it), so 'static holds.
        let declaration: &'static PortableDeclaration = unsafe { &*raw };
        let text = |p: *const c_char, what: &str| -> std::result::Result<&'static str, String> {
            if p.is_null() {
                return Err(format!("portable objective has no {what}"));
            }
            // SAFETY: a NUL-terminated string in the never-unloaded library.
            let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
            Ok(Box::leak(s.into_boxed_str()))
        };
        let missing = |what: &str| format!("portable objective has a NULL {what} function");
        Some((|| {
            Ok(Self {
                name: text(declaration.name, "name")?,
                about: text(declaration.about, "about")?,
                version: text(declaration.version, "version")?,
                create: declaration.create.ok_or_else(|| missing("create"))?,
                loss: declaration.loss.ok_or_else(|| missing("loss"))?,
                destroy: declaration.destroy.ok_or_else(|| missing("destroy"))?,
                needs_reference: declaration.needs_reference != 0,
                _library: library,
            })
        })())
    }

    /// Makes the objective from its JSON config.
    ///
    /// # Errors
    /// [`Error::Config`] with the plugin's message when it refuses the config.
    pub fn make(&self, config: &serde_json::Value) -> Result<PortableObjective> {
        let json = CString::new(config.to_string()).map_err(|e| Error::Config(e.to_string()))?;
        let mut err = [0u8; ERR_LEN];
        // SAFETY: the ABI's `create`: a NUL-terminated config and an error buffer of ERR_LEN.
        let state = unsafe { (self.create)(json.as_ptr(), err.as_mut_ptr().cast(), ERR_LEN) };
        if state.is_null() {
            return Err(Error::Config(format!("objective {:?}: {}", self.name, message(&err))));
        }
        Ok(PortableObjective { kind: self.clone(), state })
    }
}

/// An objective computed by a portable plugin.
pub struct PortableObjective {
    kind: PortableKind,
    state: *mut c_void,
}

// SAFETY: the ABI requires `loss` to be callable from several threads with the same
// state, which it only reads.
unsafe impl Send for PortableObjective {}
unsafe impl Sync for PortableObjective {}

impl fmt::Debug for PortableObjective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortableObjective").field("name", &self.kind.name).finish()
    }
}

impl Drop for PortableObjective {
    fn drop(&mut self) {
        // SAFETY: the state `create` returned, destroyed once; the library outlives this
        // call (`kind` holds a reference to it).
        unsafe { (self.kind.destroy)(self.state) };
    }
}

impl Objective for PortableObjective {
    fn name(&self) -> &str {
        self.kind.name
    }

    fn needs_reference(&self) -> bool {
        self.kind.needs_reference
    }

    fn loss(&self, batch: &ObjectiveBatch) -> Result<ObjectiveOutput> {
        check_shapes(batch)?;
        let [rows, width] = batch.log_probs.dims();
        let log_probs = host(batch.log_probs.clone().detach())?;
        let old = host(batch.old_log_probs.clone())?;
        let reference = match (&batch.ref_log_probs, self.needs_reference()) {
            (Some(r), true) => Some(host(r.clone())?),
            (None, true) => {
                return Err(Error::Config(format!("objective {:?} needs ref_log_probs", self.kind.name)));
            }
            _ => None,
        };
        let advantages = host(batch.advantages.clone())?;
        let flags = host_bool(batch.loss_mask.tensor().clone())?;
        let mask: Vec<u8> = flags.iter().map(|&f| u8::from(f)).collect();
        let input = CBatch {
            rows: rows as u64,
            width: width as u64,
            log_probs: log_probs.as_ptr(),
            old_log_probs: old.as_ptr(),
            ref_log_probs: reference.as_ref().map_or(std::ptr::null(), |r| r.as_ptr()),
            advantages: advantages.as_ptr(),
            mask: mask.as_ptr(),
            mini_batch_tokens: batch.normalizer.tokens as u64,
            mini_batch_sequences: batch.normalizer.sequences as u64,
        };
        let mut loss = 0.0f64;
        let mut grad = vec![0.0f32; rows * width];
        let mut err = [0u8; ERR_LEN];
        // SAFETY: the ABI's `loss`: `input`'s arrays hold rows × width (advantages: rows)
        // values and outlive the call; `grad` holds rows × width floats; `err` ERR_LEN bytes.
        let status = unsafe {
            (self.kind.loss)(
                self.state,
                &input,
                &mut loss,
                grad.as_mut_ptr(),
                err.as_mut_ptr().cast(),
                ERR_LEN,
            )
        };
        let fail = |what: String| Error::Plugin(format!("objective {:?}: {what}", self.kind.name));
        if status != 0 {
            return Err(fail(message(&err)));
        }
        if !loss.is_finite() {
            return Err(fail(format!("loss is {loss}")));
        }
        if let Some(i) = grad.iter().position(|g| !g.is_finite()) {
            return Err(fail(format!("gradient at ({}, {}) is {}", i / width, i % width, grad[i])));
        }
        if let Some(i) = grad.iter().zip(&flags).position(|(g, f)| !f && *g != 0.0) {
            return Err(fail(format!("gradient outside the loss mask at ({}, {})", i / width, i % width)));
        }

        // Value: the plugin's loss; gradient w.r.t. log_probs: the plugin's `grad`.
        let device = batch.log_probs.device();
        let g = Tensor::<2>::from_data(TensorData::new(grad, [rows, width]), &device);
        // Zero the unmasked slots first: 0 · NaN would poison the sum.
        let s = (super::masked(batch.log_probs.clone(), &batch.loss_mask) * g).sum();
        let surrogate = s.clone() - s.detach() + loss;

        let mut metrics = Metrics::new();
        metrics.insert("senior_tokens".into(), flags.iter().filter(|&&f| f).count() as f64);
        metrics.insert("loss".into(), loss);
        Ok(ObjectiveOutput { loss: surrogate, metrics })
    }
}
