//! What a device model declares about itself (its [`ModelKind`]), and the helpers its
//! declaration builds on: each model's file fills one in, `kind.rs` registers them.

use super::registry::{table_of, with_overrides};
use super::{DeviceModel, ModelError};

/// How a model kind builds its model from parameter overrides.
pub type BuildFn = fn(Option<&toml::Table>) -> Result<Box<dyn DeviceModel>, ModelError>;

/// One built-in model's name and the facts the rest of jbench needs of it. Every
/// field must be given (there is no default): a model that forgets one does not
/// compile.
pub struct ModelKind {
    /// The name `device_model`, `[models]` entries and `jbench device` use.
    pub name: &'static str,
    /// Whether it lays a geometry over its disk (`capacity_bytes`), which a trial and
    /// `jbench device calibrate` set to the emulated disk's size unless given.
    pub spans_disk: bool,
    /// What a power cut does to what the device holds. A `ram` disk is emptied: a
    /// journal on it is gone after the cut (the crash lab's lost journal); `nvram`
    /// keeps it on its battery. Every report's words about a power cut follow this.
    pub at_power_cut: PowerCut,
    /// Its default parameters, as the TOML keys overrides name.
    pub defaults: fn() -> toml::Table,
    /// Builds it with `params` over its defaults.
    pub build: BuildFn,
}

/// What a power cut does to a device's contents: the case the crash lab's "power cut"
/// is for a disk of that model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerCut {
    /// Persistent media (a disk, flash): the contents stay.
    #[default]
    Keeps,
    /// RAM on a battery or capacitor (NVRAM): the contents stay.
    BatteryBacked,
    /// Volatile RAM (a RAM disk, tmpfs, zram): the contents are gone. What survives RAM
    /// is a crash that keeps the power on (a kernel panic, a reset).
    Empties,
}

impl PowerCut {
    pub fn keeps_contents(self) -> bool {
        self != PowerCut::Empties
    }

    /// "a volatile RAM disk", "battery-backed RAM", "persistent".
    pub fn words(self) -> &'static str {
        match self {
            PowerCut::Keeps => "persistent",
            PowerCut::BatteryBacked => "battery-backed: keeps its contents through a power cut",
            PowerCut::Empties => "volatile: a power cut empties it",
        }
    }
}

/// A model's cache and flush, in the words `env.json` records for each emulated disk.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheWords {
    /// `write back`, `write back, battery-backed`, `write through` or `none`.
    pub cache: &'static str,
    pub cache_bytes: Option<u64>,
    /// `drains the cache`, `ignored (the disk lies)`, `completes at once` or `fixed
    /// latency`.
    pub flush: &'static str,
    pub flush_latency_us: Option<f64>,
}

/// A model kind with typed parameters: its defaults as a table, and a build that
/// merges overrides into them first.
pub(super) fn defaults_of<T: serde::Serialize>(p: T) -> toml::Table {
    table_of(&p).unwrap_or_default()
}

/// `base` overridden by `params`, for a model's `build`.
pub(super) fn params_of<T: serde::Serialize + serde::de::DeserializeOwned>(
    name: &str,
    base: T,
    params: Option<&toml::Table>,
) -> Result<T, ModelError> {
    with_overrides(name, base, params)
}
