//! Plugins: named objectives, handoff schedules, partners and rewards, registered statically
//! (any crate linked into the program) or loaded at run time from a `cdylib`.
//!
//! A plugin crate declares each item once with [`register!`](crate::register) (a
//! [`Registration`] in the program's inventory). Linked into a program (as a dependency),
//! it registers itself. To be loadable at run time it also calls
//! [`export_plugin!`](crate::export_plugin) once: an inventory inside a `dlopen`ed library
//! does not reach the host's, so loading goes through an explicit entry point
//! ([`abi`], [`load`]). The host reads the library's [`PluginDeclaration`], checks the ABI,
//! compiler and trlvr version before touching anything else, then
//! lets the plugin hand over its own registrations.
//!
//! Handoff schedules and rewards load from any library built by the same compiler and
//! trlvr version.
//! Objectives and partners run tensor ops, so they must share the host's trlvr and Burn
//! runtime (one autodiff graph, one set of devices): the host is built with `--features
//! dynamic` (trlvr linked from the shared library `trlvr-dylib`) and the plugin links the
//! same library (`use trlvr_dylib as _;`). The declaration carries the address of the
//! plugin's [`ANCHOR`]; the host loads objectives and partners only when it is its own
//! (and the [`BUILD_ID`]s match), and otherwise says how to rebuild. Libraries are never
//! unloaded: items they made may outlive any handle.
//!
//! The files: [`abi`] (what host and library agree on), [`load`] (opening a library),
//! [`builtin`] (trlvr's own objective and schedules), this one (the registry).
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

pub mod abi;
pub mod builtin;
pub mod load;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burn::prelude::Device;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use abi::{ABI_VERSION, ANCHOR, BUILD_ID, PluginDeclaration, RUSTC_VERSION, TRLVR_VERSION};

use crate::model::{Feed, Partner, Session};
use crate::objective::Objective;
use crate::objective::portable::PortableKind;
use crate::objective::{ObjectiveBatch, ObjectiveOutput};
use crate::reward::{RewardFunction, RewardInput};
use crate::schedule::{HandoffSchedule, HandoffState};
use crate::token::TokenBatch;
use crate::{Error, Result};
/// Makes an objective from its JSON config.
pub type ObjectiveFactory = fn(&Value) -> Result<Box<dyn Objective>>;
/// Makes a handoff schedule from its JSON config.
pub type ScheduleFactory = fn(&Value) -> Result<Box<dyn HandoffSchedule>>;
/// Makes a reward term from its JSON config.
pub type RewardFactory = fn(&Value) -> Result<Box<dyn RewardFunction>>;
/// Makes a partner from its JSON config, with what the host lends it.
pub type PartnerFactory = fn(&Value, &PartnerHost<'_>) -> Result<Box<dyn Partner>>;

/// Opens a model file (a Hugging Face folder or a GGUF file) as a partner on a device:
/// the host's model stack, lent to partner plugins (see [`Registry::with_model_loader`]).
pub type ModelLoader = fn(&Path, &Device) -> Result<Box<dyn Partner>>;

/// What a partner's factory gets from the host besides its config: the device and the
/// host's model loader, so that a partner wrapping a model links no model stack of its
/// own.
#[derive(Debug, Clone, Copy)]
pub struct PartnerHost<'a> {
    device: &'a Device,
    loader: Option<ModelLoader>,
}

impl PartnerHost<'_> {
    /// The device to build on.
    pub fn device(&self) -> &Device {
        self.device
    }

    /// The model at `path`, opened by the host.
    ///
    /// # Errors
    /// [`Error::Config`] if the host lends no loader; the loader's error.
    pub fn model(&self, path: &Path) -> Result<Box<dyn Partner>> {
        let load = self.loader.ok_or_else(|| {
            Error::Config(format!(
                "cannot open {}: this host opens no model files (Registry::with_model_loader)",
                path.display()
            ))
        })?;
        load(path, self.device)
    }
}

/// What a plugin item makes.
#[derive(Debug, Clone, Copy)]
pub enum Factory {
    /// An [`Objective`].
    Objective(ObjectiveFactory),
    /// A [`HandoffSchedule`].
    Schedule(ScheduleFactory),
    /// A [`Partner`].
    Partner(PartnerFactory),
    /// A [`RewardFunction`].
    Reward(RewardFactory),
}

impl Factory {
    /// `objective`, `schedule`, `partner` or `reward`.
    pub fn kind(&self) -> &'static str {
        match self {
            Factory::Objective(_) => "objective",
            Factory::Schedule(_) => "schedule",
            Factory::Partner(_) => "partner",
            Factory::Reward(_) => "reward",
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

/// Registers one named item of the calling crate: `kind` is `Objective`, `Schedule`,
/// `Partner` or `Reward`, `factory` a function of that kind's [`Factory`] type. Linked into a program
/// the item is in [`Registry::with_linked`]; built as a `cdylib` with
/// [`export_plugin!`](crate::export_plugin), it is handed over when loaded.
///
/// ```
/// use trlvr::plugin::{Registry, schedule_from_config};
/// use trlvr::prelude::*;
///
/// trlvr::register!(Schedule, "words-again", "the word schedule under another name",
///     schedule_from_config::<WordBoundary>);
///
/// let schedule = Registry::with_linked().schedule("words-again", &serde_json::json!({ "max_gap": 8 }))?;
/// assert_eq!(schedule.name(), "word");
/// # Ok::<(), trlvr::Error>(())
/// ```
#[macro_export]
macro_rules! register {
    ($kind:ident, $name:expr, $about:expr, $factory:expr $(,)?) => {
        $crate::inventory::submit! {
            $crate::plugin::Registration {
                name: $name,
                about: $about,
                crate_name: env!("CARGO_PKG_NAME"),
                version: env!("CARGO_PKG_VERSION"),
                factory: $crate::plugin::Factory::$kind($factory),
            }
        }
    };
}

/// Every registration linked into this binary (or this plugin library).
pub fn registrations() -> impl Iterator<Item = &'static Registration> {
    inventory::iter::<Registration>.into_iter()
}

/// An item's config: JSON null gives `T`'s default, anything else must parse as a `T`
/// (unknown keys are an error where `T` denies them, so a misspelt key is not ignored).
///
/// # Errors
/// [`Error::Config`] with serde's message.
pub fn config<T: DeserializeOwned + Default>(value: &Value) -> Result<T> {
    if value.is_null() {
        return Ok(T::default());
    }
    serde_json::from_value(value.clone()).map_err(|e| Error::Config(e.to_string()))
}

/// A schedule factory for any schedule that is its own config: parsed by [`config`],
/// then checked by [`HandoffSchedule::validate`].
///
/// # Errors
/// As [`config`]; the schedule's validation error.
pub fn schedule_from_config<S>(value: &Value) -> Result<Box<dyn HandoffSchedule>>
where
    S: HandoffSchedule + DeserializeOwned + Default + 'static,
{
    let schedule: S = config(value)?;
    schedule.validate()?;
    Ok(Box::new(schedule))
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
    /// `objective`, `schedule`, `partner` or `reward`.
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

/// Named objectives, schedules, partners and rewards, static and loaded.
#[derive(Debug, Default)]
pub struct Registry {
    entries: BTreeMap<(&'static str, &'static str), Entry>,
    /// Objectives loaded through the portable C ABI, by name, with their file.
    portable: BTreeMap<&'static str, (PortableKind, PathBuf)>,
    loaded: Vec<PathBuf>,
    /// The host's model loader, lent to partner factories.
    model_loader: Option<ModelLoader>,
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

    /// The same registry, lending `loader` to partner factories ([`PartnerHost::model`]).
    #[must_use]
    pub fn with_model_loader(mut self, loader: ModelLoader) -> Self {
        self.model_loader = Some(loader);
        self
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

    /// Makes the reward term `name` from `config`.
    ///
    /// # Errors
    /// As [`Registry::objective`].
    pub fn reward(&self, name: &str, config: &Value) -> Result<Plugged<dyn RewardFunction>> {
        let entry = self.entry("reward", name)?;
        let Factory::Reward(make) = entry.registration.factory else { unreachable!("keyed by kind") };
        Ok(Plugged { inner: make(config)?, _library: entry.library.clone() })
    }

    /// Makes the partner `name` from `config` on `device`.
    ///
    /// # Errors
    /// As [`Registry::objective`].
    pub fn partner(&self, name: &str, config: &Value, device: &Device) -> Result<Plugged<dyn Partner>> {
        let entry = self.entry("partner", name)?;
        let Factory::Partner(make) = entry.registration.factory else { unreachable!("keyed by kind") };
        let host = PartnerHost { device, loader: self.model_loader };
        Ok(Plugged { inner: make(config, &host)?, _library: entry.library.clone() })
    }
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

impl RewardFunction for Plugged<dyn RewardFunction> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn score(&self, input: &RewardInput<'_>) -> f32 {
        self.inner.score(input)
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
