//! The raw TOML shape of an experiment file, and readers that name the key and the
//! expected type when a value has the wrong one.

use super::*;

/// A key that takes one value or a list of them (a factor of the matrix).
#[derive(Debug, Clone)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub(super) fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// What a TOML value is, for "expected ...; found a boolean" messages.
pub(super) fn kind_of(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

/// One value of a list-valued key, read from TOML with a message naming what the key
/// takes (serde's untagged enums only say "did not match any variant").
pub(super) trait FromToml: Sized {
    /// What one value is, e.g. `a size such as "16M" or a number of bytes`.
    const EXPECTED: &'static str;
    fn from_toml(v: &toml::Value) -> Option<Self>;
}

impl FromToml for String {
    const EXPECTED: &'static str = "a string";
    fn from_toml(v: &toml::Value) -> Option<Self> {
        v.as_str().map(str::to_string)
    }
}

impl FromToml for bool {
    const EXPECTED: &'static str = "true or false";
    fn from_toml(v: &toml::Value) -> Option<Self> {
        v.as_bool()
    }
}

impl FromToml for SizeValue {
    const EXPECTED: &'static str = "a size such as \"16M\" or a number of bytes";
    fn from_toml(v: &toml::Value) -> Option<Self> {
        match v {
            toml::Value::String(t) => Some(SizeValue::Text(t.clone())),
            toml::Value::Integer(i) => Some(SizeValue::Bytes(*i)),
            _ => None,
        }
    }
}

impl<'de, T: FromToml> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        let refuse = |found: &toml::Value| {
            serde::de::Error::custom(format!(
                "expected {}, or a list of them; found {}",
                T::EXPECTED,
                kind_of(found)
            ))
        };
        match &value {
            toml::Value::Array(items) => items
                .iter()
                .map(|v| T::from_toml(v).ok_or_else(|| refuse(v)))
                .collect::<Result<Vec<T>, D::Error>>()
                .map(OneOrMany::Many),
            one => T::from_toml(one)
                .map(OneOrMany::One)
                .ok_or_else(|| refuse(one)),
        }
    }
}

/// A size written as a string ("16M") or as a number of bytes (checked later, so a
/// negative number is refused with the key's range rather than by the TOML reader).
#[derive(Debug, Clone)]
pub(super) enum SizeValue {
    Bytes(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        SizeValue::from_toml(&value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "expected {}; found {}",
                SizeValue::EXPECTED,
                kind_of(&value)
            ))
        })
    }
}

/// `mkfs_options = ["-O", "^metadata_csum"]` is one option set;
/// `mkfs_options = [[], ["-O", "^metadata_csum"]]` makes two configurations.
#[derive(Debug, Clone)]
pub(super) enum OptionSets {
    One(Vec<String>),
    Many(Vec<Vec<String>>),
}

impl OptionSets {
    pub(super) fn to_sets(&self) -> Vec<Vec<String>> {
        match self {
            OptionSets::One(v) => vec![v.clone()],
            OptionSets::Many(v) => v.clone(),
        }
    }

    fn strings(items: &[toml::Value]) -> Option<Vec<String>> {
        items.iter().map(String::from_toml).collect()
    }
}

impl<'de> Deserialize<'de> for OptionSets {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        let sets = |items: &[toml::Value]| -> Option<OptionSets> {
            if items.iter().all(toml::Value::is_array) && !items.is_empty() {
                let many = items
                    .iter()
                    .map(|v| Self::strings(v.as_array()?))
                    .collect::<Option<Vec<_>>>()?;
                return Some(OptionSets::Many(many));
            }
            Self::strings(items).map(OptionSets::One)
        };
        let found = match &value {
            toml::Value::Array(items) => match sets(items) {
                Some(s) => return Ok(s),
                None => "a list holding something other than strings",
            },
            other => kind_of(other),
        };
        Err(serde::de::Error::custom(format!(
            "expected a list of option strings such as [\"-O\", \"^metadata_csum\"], or a list of such lists; found {found}"
        )))
    }
}

pub(super) type Key<T> = Option<Spanned<T>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub(super) name: Key<String>,
    pub(super) repetitions: Key<toml::Value>,
    pub(super) noise_band: Key<f64>,
    pub(super) tail_band: Key<f64>,
    pub(super) order: Key<String>,
    pub(super) seed: Key<u64>,
    pub(super) suspect_below: Key<String>,
    pub(super) monitor_interval: Key<String>,
    pub(super) work_dir: Key<String>,
    pub(super) baseline: Key<String>,
    #[serde(default)]
    pub(super) filesystem: RawFilesystem,
    #[serde(default)]
    pub(super) journal: RawJournal,
    pub(super) memory_limit: Key<OneOrMany<SizeValue>>,
    /// `[models.NAME]`: built-in models with some parameters overridden.
    #[serde(default)]
    pub(super) models: BTreeMap<String, Spanned<toml::Table>>,
    pub(super) emulation: Key<RawEmulation>,
    pub(super) crash: Key<RawCrash>,
    pub(super) writeback: Key<RawWriteback>,
    #[serde(default)]
    pub(super) workload: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    pub(super) config: Vec<Spanned<RawConfigEntry>>,
}

/// A `[[config]]` table: overrides of the base sections for one part of the union.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfigEntry {
    pub(super) label: Key<String>,
    #[serde(default)]
    pub(super) filesystem: RawFilesystem,
    #[serde(default)]
    pub(super) journal: RawJournal,
    pub(super) memory_limit: Key<OneOrMany<SizeValue>>,
    /// Variables handed to every command workload (its run, check and recover) in this
    /// table's configurations: an application's own settings as a factor.
    pub(super) env: Key<BTreeMap<String, String>>,
    /// This table's configurations are built to lose promised data (an application's
    /// documented unsafe setting): their losses are the lab's evidence, not a failure.
    pub(super) negative_control: Key<bool>,
    /// This table's configurations have no torn-page protection on a disk whose
    /// logical block is smaller than the application's page: a negative control whose
    /// failure must be a torn write of file data (implies `negative_control`).
    pub(super) torn_page_control: Key<bool>,
}

/// The `[emulation]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEmulation {
    pub(super) write_log: Key<bool>,
    pub(super) watchdog: Key<String>,
    pub(super) pin_cpus: Key<bool>,
    pub(super) image_dir: Key<String>,
    pub(super) poll: Key<bool>,
}

/// The `[writeback]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWriteback {
    pub(super) sync_at_start: Key<bool>,
    pub(super) interval: Key<String>,
    pub(super) expire: Key<String>,
}

/// The `[crash]` table. Its values are read as plain TOML values so that a wrong type
/// is refused by `tables::build_crash` saying what the key takes, rather than by
/// serde's "expected i64".
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCrash {
    pub(super) states: Key<toml::Value>,
    pub(super) strategies: Key<toml::Value>,
    pub(super) seed: Key<toml::Value>,
    pub(super) recovery_timing: Key<toml::Value>,
    pub(super) lose_journal: Key<toml::Value>,
    pub(super) mount_timeout: Key<toml::Value>,
}

/// The `[filesystem]` table: every key is a factor of the matrix, read, checked and
/// given its default by its entry in `factors::FACTORS`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFilesystem {
    #[serde(rename = "type")]
    pub(super) fs_type: Key<OneOrMany<String>>,
    pub(super) size: Key<OneOrMany<SizeValue>>,
    pub(super) device: Key<OneOrMany<String>>,
    pub(super) mkfs_options: Key<OptionSets>,
    pub(super) mount_options: Key<OptionSets>,
    pub(super) device_model: Key<OneOrMany<String>>,
    /// A second file system of its own, on a disk of its own, for the application's
    /// data it splits off (a database's WAL); absent: none.
    pub(super) second_size: Key<OneOrMany<SizeValue>>,
    pub(super) second_device_model: Key<OneOrMany<String>>,
}

/// The `[journal]` table: every key is a factor of the matrix, like `[filesystem]`'s.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJournal {
    pub(super) placement: Key<OneOrMany<String>>,
    pub(super) size: Key<OneOrMany<SizeValue>>,
    pub(super) mode: Key<OneOrMany<String>>,
    pub(super) device: Key<OneOrMany<String>>,
    pub(super) second_disk_dir: Key<OneOrMany<String>>,
    pub(super) ramdisk_dir: Key<OneOrMany<String>>,
    pub(super) ramdisk_size: Key<OneOrMany<SizeValue>>,
    pub(super) fast_commit: Key<OneOrMany<bool>>,
    pub(super) commit: Key<OneOrMany<String>>,
    pub(super) device_model: Key<OneOrMany<String>>,
}
