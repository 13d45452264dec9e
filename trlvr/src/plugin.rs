//! Plugins: named objectives, handoff schedules and partners, registered statically
//! (any crate linked into the program) or loaded at run time from a `cdylib`.
//!
//! A plugin crate declares each item once with [`inventory::submit!`] of a
//! [`Registration`]. Linked into a program (as a dependency), it registers itself. To be
//! loadable at run time it also calls [`export_plugin!`](crate::export_plugin) once: an inventory inside a
//! `dlopen`ed library does not reach the host's, so loading goes through an explicit
//! entry point. The host reads the library's [`PluginDeclaration`], checks the ABI,
//! compiler and trlvr version before touching anything else, then
//! lets the plugin hand over its own registrations.
//!
//! Handoff schedules load from any library built by the same compiler and trlvr version.
//! Objectives and partners run tensor ops, so they must share the host's trlvr and Burn
//! runtime (one autodiff graph, one set of devices): the host is built with `--features
//! dynamic` (trlvr linked from the shared library `trlvr-dylib`) and the plugin links the
//! same library (`use trlvr_dylib as _;`). The declaration carries the address of the
//! plugin's [`ANCHOR`]; the host loads objectives and partners only when it is its own
//! (and the [`BUILD_ID`]s match), and otherwise says how to rebuild. Libraries are never
//! unloaded: items they made may outlive any handle.
//!
//! ```
//! use trlvr::plugin::Registry;
//!
//! let registry = Registry::with_linked();
//! let grpo = registry.objective("grpo", &serde_json::json!({ "clip_high": 0.28 }))?;
//! assert_eq!(grpo.name(), "grpo");
//! assert!(registry.schedule("word", &serde_json::json!({ "p_senior": 0.5, "max_gap": 32 })).is_ok());
//! assert!(registry.objective("no-such-thing", &serde_json::Value::Null).is_err());
//! # Ok::<(), trlvr::Error>(())
//! ```

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::prelude::Device;
use serde_json::Value;

use crate::model::{Feed, Partner, Session};
use crate::objective::portable::{PORTABLE_ABI_VERSION, PORTABLE_SYMBOL, PortableKind};
use crate::objective::{Grpo, GrpoConfig, Objective, ObjectiveBatch, ObjectiveOutput};
use crate::schedule::{HandoffSchedule, HandoffState, Solo, StepAlternation, TokenBernoulli, WordBoundary};
use crate::token::TokenBatch;
use crate::{Error, Result};

/// Bumped whenever [`PluginDeclaration`] or [`Registration`] change shape.
pub const ABI_VERSION: u32 = 3;
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

/// Makes an objective from its JSON config.
pub type ObjectiveFactory = fn(&Value) -> Result<Box<dyn Objective>>;
/// Makes a handoff schedule from its JSON config.
pub type ScheduleFactory = fn(&Value) -> Result<Box<dyn HandoffSchedule>>;
/// Makes a partner from its JSON config, on a device.
pub type PartnerFactory = fn(&Value, &Device) -> Result<Box<dyn Partner>>;

/// What a plugin item makes.
#[derive(Debug, Clone, Copy)]
pub enum Factory {
    /// An [`Objective`].
    Objective(ObjectiveFactory),
    /// A [`HandoffSchedule`].
    Schedule(ScheduleFactory),
    /// A [`Partner`].
    Partner(PartnerFactory),
}

impl Factory {
    /// `objective`, `schedule` or `partner`.
    pub fn kind(&self) -> &'static str {
        match self {
            Factory::Objective(_) => "objective",
            Factory::Schedule(_) => "schedule",
            Factory::Partner(_) => "partner",
        }
    }
}

/// One named item, submitted with `inventory::submit!`.
#[derive(Debug)]
pub struct Registration {
    /// Unique name (within its kind) used in configs and on the command line.
    pub name: &'static str,
    /// One line for `trlvr plugins`.
    pub about: &'static str,
    /// The crate that submitted it (`env!("CARGO_PKG_NAME")`).
    pub crate_name: &'static str,
    /// That crate's version (`env!("CARGO_PKG_VERSION")`), shown by `trlvr plugins` so a
    /// run's log says which build of a plugin it used.
    pub version: &'static str,
    /// The constructor.
    pub factory: Factory,
}

inventory::collect!(Registration);

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

/// Every registration linked into this binary (or this plugin library).
pub fn registrations() -> impl Iterator<Item = &'static Registration> {
    inventory::iter::<Registration>.into_iter()
}

fn config<T: serde::de::DeserializeOwned + Default>(value: &Value) -> Result<T> {
    if value.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(value.clone()).map_err(|e| Error::Config(e.to_string()))
}

inventory::submit! {
    Registration { name: "grpo", about: "GRPO on senior tokens (clip, dual clip, aggregation, optional KL)",
        crate_name: env!("CARGO_PKG_NAME"), version: env!("CARGO_PKG_VERSION"),
        factory: Factory::Objective(|v| Ok(Box::new(Grpo::new(config::<GrpoConfig>(v)?)?))) }
}
inventory::submit! {
    Registration { name: "solo", about: "one model writes everything ({\"owner\": \"senior\"|\"junior\"})",
        crate_name: env!("CARGO_PKG_NAME"), version: env!("CARGO_PKG_VERSION"),
        factory: Factory::Schedule(|v| Ok(Box::new(config::<Solo>(v)?))) }
}
inventory::submit! {
    Registration { name: "word", about: "the paper's word-boundary Bernoulli(p_senior) with gap cap max_gap",
        crate_name: env!("CARGO_PKG_NAME"), version: env!("CARGO_PKG_VERSION"),
        factory: Factory::Schedule(|v| {
            let w: WordBoundary = config(v)?;
            Ok(Box::new(WordBoundary::new(w.p_senior, w.max_gap)?))
        }) }
}
inventory::submit! {
    Registration { name: "token", about: "token-level Bernoulli(p_senior)",
        crate_name: env!("CARGO_PKG_NAME"), version: env!("CARGO_PKG_VERSION"),
        factory: Factory::Schedule(|v| {
            let p = v.get("p_senior").and_then(Value::as_f64).unwrap_or(0.5);
            Ok(Box::new(TokenBernoulli::new(p)?))
        }) }
}
inventory::submit! {
    Registration { name: "step", about: "paragraph alternation for evaluation (first, max_rounds)",
        crate_name: env!("CARGO_PKG_NAME"), version: env!("CARGO_PKG_VERSION"),
        factory: Factory::Schedule(|v| {
            let step: StepAlternation = config(v)?;
            step.validate()?;
            Ok(Box::new(step))
        }) }
}

/// Where an item came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Linked into this program.
    Linked,
    /// Loaded from this file.
    Library(PathBuf),
}

/// One item of [`Registry::list`].
#[derive(Debug, Clone)]
pub struct Listing {
    /// `objective`, `schedule` or `partner`.
    pub kind: &'static str,
    /// Its registered name.
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// The crate that registered it (`(portable ABI)` for a portable objective).
    pub crate_name: &'static str,
    /// That crate's version.
    pub version: &'static str,
    /// Where it came from.
    pub origin: Origin,
}

#[derive(Debug)]
struct Entry {
    registration: &'static Registration,
    origin: Origin,
    /// Keeps the code of a loaded item mapped while anything it made is alive.
    library: Option<Arc<libloading::Library>>,
}

/// Named objectives, schedules and partners, static and loaded.
#[derive(Debug, Default)]
pub struct Registry {
    entries: BTreeMap<(&'static str, &'static str), Entry>,
    /// Objectives loaded through the portable C ABI, by name, with their file.
    portable: BTreeMap<&'static str, (PortableKind, PathBuf)>,
    loaded: Vec<PathBuf>,
}

impl Registry {
    /// Everything linked into this program: trlvr's built-ins and statically linked
    /// plugin crates.
    pub fn with_linked() -> Self {
        let mut registry = Self::default();
        for registration in registrations() {
            // Duplicates among linked crates keep the first; `add` reports them for loads.
            let _ = registry.add(registration, Origin::Linked, None);
        }
        registry
    }

    fn add(
        &mut self,
        registration: &'static Registration,
        origin: Origin,
        library: Option<Arc<libloading::Library>>,
    ) -> Result<()> {
        let key = (registration.factory.kind(), registration.name);
        if key.0 == "objective"
            && let Some((_, file)) = self.portable.get(key.1)
        {
            return Err(Error::Plugin(format!(
                "objective {:?} from {origin:?} is already registered from {}",
                key.1,
                file.display()
            )));
        }
        if let Some(existing) = self.entries.get(&key) {
            if std::ptr::eq(existing.registration, registration) {
                // The very same item (a crate linked into a `dynamic` host and loaded by
                // path is one library): nothing to add.
                return Ok(());
            }
            return Err(Error::Plugin(format!(
                "{} {:?} from {origin:?} is already registered from {:?}",
                key.0, key.1, existing.origin
            )));
        }
        self.entries.insert(key, Entry { registration, origin, library });
        Ok(())
    }

    /// Loads a plugin library and registers what it exports; returns the new names.
    /// Loading the same file twice is a no-op. A library that is not a trlvr plugin, or
    /// was built by another compiler or trlvr version, is refused before
    /// any of its code runs (beyond the platform loader's initialisers). A library that
    /// exports `TRLVR_PORTABLE_OBJECTIVE` (the C ABI of [`crate::objective::portable`])
    /// registers that objective; it needs no matching compiler or runtime.
    ///
    /// # Errors
    /// [`Error::Plugin`] naming the path and what is wrong.
    #[allow(unsafe_code)]
    pub fn load(&mut self, path: impl AsRef<Path>) -> Result<Vec<String>> {
        let path = path.as_ref();
        let canonical = path.canonicalize().map_err(|e| plugin_error(path, &format!("cannot open: {e}")))?;
        if self.loaded.contains(&canonical) {
            return Ok(Vec::new());
        }
        if let Some(name) = another_copy_loaded(&canonical) {
            return Err(plugin_error(
                path,
                &format!(
                    "a library named {name} is already loaded from another file; a second copy of a Rust \
                     dylib would bind its statics to the first one's (its registrations would loop): \
                     load one copy per process, or rename one"
                ),
            ));
        }
        // The export table first, read as plain bytes: a file that declares nothing of
        // trlvr's is refused before the dynamic loader (which trusts its input) sees it.
        let bytes =
            std::fs::read(&canonical).map_err(|e| plugin_error(path, &format!("cannot read: {e}")))?;
        let stem = canonical.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let declared = declared(&bytes, &stem).map_err(|why| {
            plugin_error(
                path,
                &format!(
                    "{why}: not a trlvr plugin; the host expects one exporting TRLVR_PLUGIN_<crate> \
                     (ABI {ABI_VERSION}, trlvr {}) from trlvr::export_plugin!(), or TRLVR_PORTABLE_OBJECTIVE \
                     (the portable objective ABI {PORTABLE_ABI_VERSION})",
                    TRLVR_VERSION.trim_end_matches('\0')
                ),
            )
        })?;
        drop(bytes);
        // SAFETY: loading runs the library's initialisers; trlvr plugins have none of
        // their own. The declaration is read as plain data before it is trusted.
        let library = unsafe { libloading::Library::new(&canonical) }.map_err(|e| {
            plugin_error(
                path,
                &format!("not a loadable library ({e}); the host loads trlvr plugins of ABI {ABI_VERSION}"),
            )
        })?;
        // Never unloaded, even when refused: its initialisers have run, and with the shared
        // runtime its `inventory::submit!`s already sit in the host's inventory.
        let library = Arc::new(library);
        std::mem::forget(library.clone());
        let symbol = match declared {
            Declared::Plugin(symbol) => symbol,
            Declared::Portable => {
                let kind = PortableKind::from_library(library.clone())
                    .unwrap_or_else(|| {
                        Err("TRLVR_PORTABLE_OBJECTIVE is exported but cannot be resolved".into())
                    })
                    .map_err(|e| plugin_error(path, &e))?;
                if let Some(existing) = self.entries.get(&("objective", kind.name)) {
                    let message =
                        format!("objective {:?} is already registered from {:?}", kind.name, existing.origin);
                    return Err(plugin_error(path, &message));
                }
                if let Some((_, file)) = self.portable.get(kind.name) {
                    let message =
                        format!("objective {:?} is already registered from {}", kind.name, file.display());
                    return Err(plugin_error(path, &message));
                }
                let name = kind.name;
                self.portable.insert(name, (kind, canonical.clone()));
                self.loaded.push(canonical);
                return Ok(vec![name.to_string()]);
            }
        };
        let declaration: &PluginDeclaration = unsafe {
            let symbol = library
                .get::<*const PluginDeclaration>(symbol.as_bytes())
                .map_err(|e| plugin_error(path, &format!("{symbol}: {e}")))?;
            &**symbol
        };
        if declaration.abi_version != ABI_VERSION {
            return Err(plugin_error(
                path,
                &format!("plugin ABI {} != host ABI {ABI_VERSION}", declaration.abi_version),
            ));
        }
        let text = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        for (what, theirs, ours) in [
            ("trlvr version", text(declaration.trlvr_version), TRLVR_VERSION),
            ("compiler", text(declaration.rustc_version), RUSTC_VERSION),
        ] {
            let ours = ours.trim_end_matches('\0');
            if theirs != ours {
                return Err(plugin_error(path, &format!("{what} differs: plugin {theirs:?}, host {ours:?}")));
            }
        }
        let mut handed = Vec::new();
        // With the shared runtime a library's `inventory::submit!`s join the host's own
        // inventory, which its `register` walks: a crate loaded from two files (or
        // linked too) hands over each item more than once. One per name.
        (declaration.register)(&mut |r| {
            if !handed
                .iter()
                .any(|h: &&Registration| h.factory.kind() == r.factory.kind() && h.name == r.name)
            {
                handed.push(r);
            }
        });
        // Objectives and partners run tensor ops: they must share the host's trlvr and
        // Burn (one autodiff graph, one set of devices), which the anchor proves.
        if let Some(r) = handed.iter().find(|r| !matches!(r.factory, Factory::Schedule(_))) {
            let theirs = text(declaration.build_id);
            let ours = BUILD_ID.trim_end_matches('\0');
            let item = format!("{} {:?} (crate {:?})", r.factory.kind(), r.name, r.crate_name);
            if theirs != ours {
                return Err(plugin_error(
                    path,
                    &format!(
                        "{item}: trlvr build differs: plugin {theirs:?}, host {ours:?}; rebuild the plugin in the host's workspace with the same features and profile"
                    ),
                ));
            }
            if !std::ptr::eq(declaration.anchor, &ANCHOR) {
                return Err(plugin_error(
                    path,
                    &format!(
                        "{item} runs tensor code but the plugin carries its own copy of trlvr and Burn \
                         (anchor {:p}, host {:p}): build the plugin with `use trlvr_dylib as _;` and the \
                         host with `--features dynamic`, or link the crate statically",
                        declaration.anchor, &ANCHOR as *const u8
                    ),
                ));
            }
        }
        let mut names = Vec::new();
        for registration in handed {
            self.add(registration, Origin::Library(canonical.clone()), Some(library.clone()))?;
            names.push(registration.name.to_string());
        }
        self.loaded.push(canonical);
        Ok(names)
    }

    /// Every item, sorted by kind and name.
    pub fn list(&self) -> Vec<Listing> {
        let mut items: Vec<Listing> = self
            .entries
            .iter()
            .map(|((kind, _), e)| {
                let r = e.registration;
                Listing {
                    kind,
                    name: r.name,
                    about: r.about,
                    crate_name: r.crate_name,
                    version: r.version,
                    origin: e.origin.clone(),
                }
            })
            .collect();
        for (name, (kind, file)) in &self.portable {
            items.push(Listing {
                kind: "objective",
                name,
                about: kind.about,
                crate_name: "(portable ABI)",
                version: kind.version,
                origin: Origin::Library(file.clone()),
            });
        }
        items.sort_by(|a, b| (a.kind, a.name).cmp(&(b.kind, b.name)));
        items
    }

    fn entry(&self, kind: &'static str, name: &str) -> Result<&Entry> {
        self.entries.iter().find(|((k, n), _)| *k == kind && *n == name).map(|(_, e)| e).ok_or_else(|| {
            let mut known: Vec<&str> =
                self.entries.keys().filter(|(k, _)| *k == kind).map(|(_, n)| *n).collect();
            if kind == "objective" {
                known.extend(self.portable.keys());
                known.sort_unstable();
            }
            Error::Plugin(format!("no {kind} named {name:?}; known: {}", known.join(", ")))
        })
    }

    /// Makes the objective `name` from `config` (JSON; null for defaults).
    ///
    /// # Errors
    /// [`Error::Plugin`] for an unknown name; the factory's error for a bad config.
    pub fn objective(&self, name: &str, config: &Value) -> Result<Plugged<dyn Objective>> {
        if let Some((kind, _)) = self.portable.get(name) {
            // The objective keeps its library loaded itself.
            return Ok(Plugged { inner: Box::new(kind.make(config)?), _library: None });
        }
        let entry = self.entry("objective", name)?;
        let Factory::Objective(make) = entry.registration.factory else { unreachable!("keyed by kind") };
        Ok(Plugged { inner: make(config)?, _library: entry.library.clone() })
    }

    /// Makes the handoff schedule `name` from `config`.
    ///
    /// # Errors
    /// As [`Registry::objective`].
    pub fn schedule(&self, name: &str, config: &Value) -> Result<Plugged<dyn HandoffSchedule>> {
        let entry = self.entry("schedule", name)?;
        let Factory::Schedule(make) = entry.registration.factory else { unreachable!("keyed by kind") };
        Ok(Plugged { inner: make(config)?, _library: entry.library.clone() })
    }

    /// Makes the partner `name` from `config` on `device`.
    ///
    /// # Errors
    /// As [`Registry::objective`].
    pub fn partner(&self, name: &str, config: &Value, device: &Device) -> Result<Plugged<dyn Partner>> {
        let entry = self.entry("partner", name)?;
        let Factory::Partner(make) = entry.registration.factory else { unreachable!("keyed by kind") };
        Ok(Plugged { inner: make(config, device)?, _library: entry.library.clone() })
    }
}

/// The file name of `canonical` if a library of that name (its soname) is loaded but
/// `canonical` itself is not. Two copies of one Rust `dylib` in a process share exported
/// symbols: the second copy's `inventory` initialiser re-submits the first copy's
/// registration and the registry's list becomes a cycle.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn another_copy_loaded(canonical: &Path) -> Option<String> {
    use libloading::os::unix::{Library, RTLD_LAZY};
    /// glibc's and musl's value (libloading does not export it).
    const RTLD_NOLOAD: std::ffi::c_int = 4;
    // SAFETY: RTLD_NOLOAD never loads anything, so no initialiser runs; a handle found
    // only raises the reference count, which dropping it lowers again.
    let loaded = |p: &std::ffi::OsStr| unsafe { Library::open(Some(p), RTLD_LAZY | RTLD_NOLOAD) }.is_ok();
    let name = canonical.file_name()?;
    (!loaded(canonical.as_os_str()) && loaded(name)).then(|| name.to_string_lossy().into_owned())
}

#[cfg(not(target_os = "linux"))]
fn another_copy_loaded(_: &Path) -> Option<String> {
    None
}

/// What a library declares, read from its export table without loading it.
#[derive(Debug, Clone, PartialEq)]
enum Declared {
    /// `TRLVR_PORTABLE_OBJECTIVE`: a portable objective (its own ABI).
    Portable,
    /// The `TRLVR_PLUGIN_<crate>` symbol to read the declaration from.
    Plugin(String),
}

/// The declaration a library file (`bytes`, named `stem`) exports. A library exporting
/// several `TRLVR_PLUGIN_<crate>` (a plugin that links other plugin crates) is read by
/// the one named after its file.
fn declared(bytes: &[u8], stem: &str) -> std::result::Result<Declared, String> {
    use object::{Object, ObjectSymbol};
    let platform = if cfg!(target_os = "macos") {
        "Mach-O"
    } else if cfg!(windows) {
        "PE"
    } else {
        "ELF"
    };
    let file = object::File::parse(bytes)
        .map_err(|e| format!("not a loadable library (not an {platform} shared object: {e})"))?;
    let mut names: Vec<String> = file
        .exports()
        .map_err(|e| format!("unreadable exports ({e})"))?
        .filter_map(|e| match e.ok()?.name() {
            object::NameOrOrdinal::Name(n) => std::str::from_utf8(n).ok().map(str::to_string),
            object::NameOrOrdinal::Ordinal(_) => None,
        })
        // Some formats list dynamic symbols apart from exports.
        .chain(
            file.dynamic_symbols()
                .filter(|s| s.is_definition() && s.is_global())
                .filter_map(|s| s.name().ok().map(str::to_string)),
        )
        // Mach-O names carry a leading underscore that `dlsym` does not want.
        .map(|n| {
            if file.format() == object::BinaryFormat::MachO {
                n.trim_start_matches('_').to_string()
            } else {
                n
            }
        })
        .collect();
    let portable = std::str::from_utf8(PORTABLE_SYMBOL).unwrap_or_default().trim_end_matches('\0');
    if names.iter().any(|n| n == portable) {
        return Ok(Declared::Portable);
    }
    names.retain(|n| n.starts_with("TRLVR_PLUGIN_"));
    names.sort();
    names.dedup();
    match names.len() {
        0 => Err("no TRLVR_PLUGIN_<crate> symbol".into()),
        1 => Ok(Declared::Plugin(names.remove(0))),
        _ => {
            let own =
                format!("TRLVR_PLUGIN_{}", stem.strip_prefix(std::env::consts::DLL_PREFIX).unwrap_or(stem));
            if names.contains(&own) {
                Ok(Declared::Plugin(own))
            } else {
                Err(format!("several declarations ({}) and none named after the file", names.join(", ")))
            }
        }
    }
}

fn plugin_error(path: &Path, message: &str) -> Error {
    Error::Plugin(format!("{}: {message}", path.display()))
}

/// An item made by the registry. It keeps the library that made it loaded for as long
/// as it lives (the item is dropped first, then the library reference).
pub struct Plugged<T: ?Sized> {
    inner: Box<T>,
    _library: Option<Arc<libloading::Library>>,
}

impl<T: ?Sized> std::ops::Deref for Plugged<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized + std::fmt::Debug> std::fmt::Debug for Plugged<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl Objective for Plugged<dyn Objective> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn needs_reference(&self) -> bool {
        self.inner.needs_reference()
    }
    fn loss(&self, batch: &ObjectiveBatch) -> Result<ObjectiveOutput> {
        self.inner.loss(batch)
    }
}

impl HandoffSchedule for Plugged<dyn HandoffSchedule> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn begin(&self, rng: &mut dyn rand::RngCore) -> Box<dyn HandoffState> {
        self.inner.begin(rng)
    }
    fn senior_only(&self) -> bool {
        self.inner.senior_only()
    }
    fn validate(&self) -> Result<()> {
        self.inner.validate()
    }
}

impl Partner for Plugged<dyn Partner> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn device(&self) -> Device {
        self.inner.device()
    }
    fn start(
        &self,
        prompts: &[&[crate::token::TokenId]],
        copies: usize,
    ) -> Result<(Session, burn::prelude::Tensor<2>)> {
        self.inner.start(prompts, copies)
    }
    fn extend(&self, session: &mut Session, feeds: &[Feed<'_>]) -> Result<burn::prelude::Tensor<2>> {
        self.inner.extend(session, feeds)
    }
    fn retire(&self, session: &mut Session, rows: &[usize]) -> Result<()> {
        self.inner.retire(session, rows)
    }
    fn score(&self, batch: &TokenBatch, temperature: f32) -> Result<burn::prelude::Tensor<2>> {
        self.inner.score(batch, temperature)
    }
    fn score_from(
        &self,
        batch: &TokenBatch,
        temperature: f32,
        from: &[usize],
    ) -> Result<burn::prelude::Tensor<2>> {
        self.inner.score_from(batch, temperature, from)
    }
    fn logits(&self, batch: &TokenBatch) -> Result<burn::prelude::Tensor<3>> {
        self.inner.logits(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fuzz::{Target, fuzz};

    /// Small shared libraries exporting a declaration, built with the C compiler Rust
    /// links with (a plugin built by cargo is megabytes: slow to mutate).
    fn libraries() -> Vec<Vec<u8>> {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("trlvr-plugin-seeds-{}-{call}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sources = [
            ("one", "int TRLVR_PLUGIN_one = 1;"),
            ("two", "int TRLVR_PLUGIN_two = 2; int TRLVR_PLUGIN_other = 3;"),
            ("portable", "int TRLVR_PORTABLE_OBJECTIVE = 4; int helper(void) { return 5; }"),
        ];
        let mut seeds = Vec::new();
        for (name, code) in sources {
            let (c, so) = (dir.join(format!("{name}.c")), dir.join(format!("lib{name}.so")));
            std::fs::write(&c, code).unwrap();
            let built = std::process::Command::new("cc").arg("-shared").arg("-o").arg(&so).arg(&c).status();
            assert!(built.is_ok_and(|s| s.success()), "cc -shared {name}.c failed");
            seeds.push(std::fs::read(&so).unwrap());
        }
        std::fs::remove_dir_all(dir).unwrap();
        seeds
    }

    #[test]
    fn declarations_are_read_from_the_export_table() {
        let seeds = libraries();
        assert_eq!(declared(&seeds[0], "libone"), Ok(Declared::Plugin("TRLVR_PLUGIN_one".into())));
        assert_eq!(declared(&seeds[1], "libtwo"), Ok(Declared::Plugin("TRLVR_PLUGIN_two".into())));
        let err = declared(&seeds[1], "libthree").unwrap_err();
        assert!(err.contains("several declarations"), "{err}");
        assert_eq!(declared(&seeds[2], "libportable"), Ok(Declared::Portable));
        assert!(declared(b"#!/bin/sh\n", "x").unwrap_err().contains("not a loadable library"));
    }

    #[test]
    fn fuzz_plugin_declarations() {
        let target = Target::new("plugin-exports", libraries()).header(4096).tokens(&[
            "TRLVR_PLUGIN_",
            "TRLVR_PORTABLE_OBJECTIVE",
            "\x7fELF",
        ]);
        fuzz(target, |bytes| match declared(bytes, "libone") {
            Ok(Declared::Plugin(name)) if !name.starts_with("TRLVR_PLUGIN_") => {
                Err(format!("declared symbol {name:?}"))
            }
            _ => Ok(()),
        });
    }
}
