//! Loading plugin libraries at run time: read the export table as plain bytes, open the
//! library, check its declaration (ABI, compiler, trlvr build, shared runtime), then take
//! its registrations. Each check refuses a library before any of its code is trusted.

use std::ffi::{CStr, c_char};
use std::path::Path;
use std::sync::Arc;

use super::abi::{ABI_VERSION, ANCHOR, BUILD_ID, PluginDeclaration, RUSTC_VERSION, TRLVR_VERSION};
use super::{Factory, Origin, Registration, Registry};
use crate::objective::portable::{PORTABLE_ABI_VERSION, PORTABLE_SYMBOL, PortableKind};
use crate::{Error, Result};

impl Registry {
    /// Loads a plugin library and registers what it exports; returns the new names.
    /// Loading the same file twice is a no-op. A library that is not a trlvr plugin, or
    /// was built by another compiler or trlvr version, is refused before
    /// any of its code runs (beyond the platform loader's initialisers). A library that
    /// exports `TRLVR_PORTABLE_OBJECTIVE` (the C ABI of [`crate::objective::portable`])
    /// registers that objective; it needs no matching compiler or runtime.
    ///
    /// # Errors
    /// [`Error::Plugin`] naming the path and what is wrong.
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
        let declared = read_declared(path, &canonical)?;
        let library = open(path, &canonical)?;
        let names = match declared {
            Declared::Portable => vec![self.add_portable(path, &canonical, library)?],
            Declared::Plugin(symbol) => {
                let declaration = declaration(path, &library, &symbol)?;
                let handed = handed_over(declaration);
                check_runtime(path, declaration, &handed)?;
                let mut names = Vec::new();
                for registration in handed {
                    self.add(registration, Origin::Library(canonical.clone()), Some(library.clone()))?;
                    names.push(registration.name.to_string());
                }
                names
            }
        };
        self.loaded.push(canonical);
        Ok(names)
    }

    /// Registers the objective of a library exporting the portable C ABI.
    fn add_portable(
        &mut self,
        path: &Path,
        canonical: &Path,
        library: Arc<libloading::Library>,
    ) -> Result<String> {
        let kind = PortableKind::from_library(library)
            .unwrap_or_else(|| Err("TRLVR_PORTABLE_OBJECTIVE is exported but cannot be resolved".into()))
            .map_err(|e| plugin_error(path, &e))?;
        if let Some(existing) = self.entries.get(&("objective", kind.name)) {
            let message =
                format!("objective {:?} is already registered from {:?}", kind.name, existing.origin);
            return Err(plugin_error(path, &message));
        }
        if let Some((_, file)) = self.portable.get(kind.name) {
            let message = format!("objective {:?} is already registered from {}", kind.name, file.display());
            return Err(plugin_error(path, &message));
        }
        let name = kind.name;
        self.portable.insert(name, (kind, canonical.to_path_buf()));
        Ok(name.to_string())
    }
}

/// The export table first, read as plain bytes: a file that declares nothing of trlvr's
/// is refused before the dynamic loader (which trusts its input) sees it.
fn read_declared(path: &Path, canonical: &Path) -> Result<Declared> {
    let bytes = std::fs::read(canonical).map_err(|e| plugin_error(path, &format!("cannot read: {e}")))?;
    let stem = canonical.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    declared(&bytes, &stem).map_err(|why| {
        plugin_error(
            path,
            &format!(
                "{why}: not a trlvr plugin; the host expects one exporting TRLVR_PLUGIN_<crate> \
                 (ABI {ABI_VERSION}, trlvr {}) from trlvr::export_plugin!(), or TRLVR_PORTABLE_OBJECTIVE \
                 (the portable objective ABI {PORTABLE_ABI_VERSION})",
                TRLVR_VERSION.trim_end_matches('\0')
            ),
        )
    })
}

/// Opens the library. It is never unloaded, even when refused later: its initialisers
/// have run, and with the shared runtime its `inventory::submit!`s already sit in the
/// host's inventory.
#[allow(unsafe_code)]
fn open(path: &Path, canonical: &Path) -> Result<Arc<libloading::Library>> {
    // SAFETY: loading runs the library's initialisers; trlvr plugins have none of
    // their own. The declaration is read as plain data before it is trusted.
    let library = unsafe { libloading::Library::new(canonical) }.map_err(|e| {
        plugin_error(
            path,
            &format!("not a loadable library ({e}); the host loads trlvr plugins of ABI {ABI_VERSION}"),
        )
    })?;
    let library = Arc::new(library);
    std::mem::forget(library.clone());
    Ok(library)
}

/// The library's declaration, once its ABI, trlvr version and compiler match the host's.
#[allow(unsafe_code)]
fn declaration(
    path: &Path,
    library: &libloading::Library,
    symbol: &str,
) -> Result<&'static PluginDeclaration> {
    // SAFETY: the symbol is the library's `PluginDeclaration` static (named by
    // `export_plugin!`); the library is never unloaded, so the reference lives on.
    let declaration: &'static PluginDeclaration = unsafe {
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
    for (what, theirs, ours) in [
        ("trlvr version", text(declaration.trlvr_version), TRLVR_VERSION),
        ("compiler", text(declaration.rustc_version), RUSTC_VERSION),
    ] {
        let ours = ours.trim_end_matches('\0');
        if theirs != ours {
            return Err(plugin_error(path, &format!("{what} differs: plugin {theirs:?}, host {ours:?}")));
        }
    }
    Ok(declaration)
}

/// A NUL-terminated string of a checked declaration.
#[allow(unsafe_code)]
fn text(p: *const c_char) -> String {
    // SAFETY: the declaration's strings are NUL-terminated statics (`export_plugin!`).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The registrations the plugin hands over, one per kind and name. With the shared
/// runtime a library's `inventory::submit!`s join the host's own inventory, which its
/// `register` walks: a crate loaded from two files (or linked too) hands over each item
/// more than once.
fn handed_over(declaration: &PluginDeclaration) -> Vec<&'static Registration> {
    let mut handed: Vec<&'static Registration> = Vec::new();
    (declaration.register)(&mut |r| {
        if !handed.iter().any(|h| h.factory.kind() == r.factory.kind() && h.name == r.name) {
            handed.push(r);
        }
    });
    handed
}

/// Objectives and partners run tensor ops: they must share the host's trlvr and Burn
/// (one autodiff graph, one set of devices), which the build id and the anchor prove.
fn check_runtime(
    path: &Path,
    declaration: &PluginDeclaration,
    handed: &[&'static Registration],
) -> Result<()> {
    let Some(r) = handed.iter().find(|r| !matches!(r.factory, Factory::Schedule(_) | Factory::Reward(_)))
    else {
        return Ok(());
    };
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
    Ok(())
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
