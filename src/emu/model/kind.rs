//! What each device model declares about itself, in its own file, and the registry
//! that names them all: how to build it from its parameters, its defaults, whether
//! its geometry spans the disk and whether it keeps its contents at a power cut.
//! Nothing outside a model's file names it to decide one of these; adding a model is
//! its file (with its [`ModelKind`]) and one line in [`MODELS`].

pub use super::declare::{CacheWords, ModelKind, PowerCut};
use super::{DeviceModel, ModelError};

/// Every built-in model, in the order `jbench device models` and errors list them.
pub const MODELS: &[ModelKind] = &[
    super::hdd::KIND,
    super::raid::KIND,
    super::fixed::SSD_SATA,
    super::fixed::NVME,
    super::fixed::NVRAM,
    super::ram::KIND,
    super::fixed::SSD_SATA_PLP,
    super::fixed::NVME_CONSUMER,
    super::fixed::NVME_PLP,
];

/// Models only a test build has (`made_up`: what adding one takes).
#[cfg(test)]
const TEST_MODELS: &[ModelKind] = &[super::made_up::KIND];
#[cfg(not(test))]
const TEST_MODELS: &[ModelKind] = &[];

/// The names of [`MODELS`], in order.
pub const MODEL_NAMES: &[&str] = &NAMES;

const NAMES: [&str; MODELS.len()] = {
    let mut out = [""; MODELS.len()];
    let mut i = 0;
    while i < MODELS.len() {
        out[i] = MODELS[i].name;
        i += 1;
    }
    out
};

/// The built-in model named `name`.
pub fn model_kind(name: &str) -> Option<&'static ModelKind> {
    MODELS.iter().chain(TEST_MODELS).find(|m| m.name == name)
}

/// Build a model by name, its defaults overridden by `params` (a TOML table of the
/// model's parameter names). Errors list the known names or parameters.
pub fn model_by_name(
    name: &str,
    params: Option<&toml::Table>,
) -> Result<Box<dyn DeviceModel>, ModelError> {
    match model_kind(name) {
        Some(k) => (k.build)(params),
        None => Err(ModelError::UnknownModel {
            name: name.to_string(),
        }),
    }
}

/// The default parameters of a built-in model, as the TOML keys `[models]` entries
/// override.
pub fn default_params(name: &str) -> Option<toml::Table> {
    model_kind(name).map(|k| (k.defaults)())
}

/// Whether model `name` lays a geometry over its disk.
pub fn spans_disk(name: &str) -> bool {
    model_kind(name).is_some_and(|k| k.spans_disk)
}

/// Whether a disk of model `name` keeps its contents at a power cut (an unknown
/// model is taken to, which can only leave a lost journal untested).
pub fn keeps_contents(name: &str) -> bool {
    power_cut(name).keeps_contents()
}

/// What a power cut does to a disk of model `name` (an unknown model is taken to keep
/// its contents, as [`keeps_contents`] does).
pub fn power_cut(name: &str) -> super::PowerCut {
    model_kind(name).map_or(super::PowerCut::Keeps, |k| k.at_power_cut)
}

/// `params` for a disk of `disk_bytes`: a model whose geometry spans the disk gets the
/// disk's size unless `params` sets one, as the studies' partitions spanned their
/// drives.
pub fn params_for_disk(name: &str, params: &toml::Table, disk_bytes: u64) -> toml::Table {
    let mut params = params.clone();
    if spans_disk(name) && !params.contains_key("capacity_bytes") {
        params.insert(
            "capacity_bytes".into(),
            toml::Value::Integer(i64::try_from(disk_bytes).unwrap_or(i64::MAX)),
        );
    }
    params
}

/// Model `name` built with `params` for a disk of `disk_bytes` ([`params_for_disk`]).
pub fn model_for_disk(
    name: &str,
    params: &toml::Table,
    disk_bytes: u64,
) -> Result<Box<dyn DeviceModel>, ModelError> {
    model_by_name(name, Some(&params_for_disk(name, params, disk_bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered model builds from its defaults alone and from its defaults
    /// given back as overrides, says its own name, and has a geometry exactly when
    /// it declares one.
    #[test]
    fn every_model_is_described_by_its_kind() {
        let mut seen = std::collections::BTreeSet::new();
        for k in MODELS.iter().chain(TEST_MODELS) {
            assert!(seen.insert(k.name), "{} is registered twice", k.name);
            let m = (k.build)(None).unwrap_or_else(|e| panic!("{}: {e}", k.name));
            assert_eq!(m.name(), k.name, "{}'s model names another", k.name);
            assert_eq!(
                m.capacity_bytes().is_some(),
                k.spans_disk,
                "{}: spans_disk disagrees with its geometry",
                k.name
            );
            assert_eq!(default_params(k.name), Some((k.defaults)()), "{}", k.name);
            let words = m.cache_words();
            assert!(
                !words.cache.is_empty() && !words.flush.is_empty(),
                "{}",
                k.name
            );
        }
        assert_eq!(MODEL_NAMES.len(), MODELS.len());
        assert!(model_kind("zigzag").is_none());
        assert!(
            keeps_contents("zigzag"),
            "an unknown model is never taken to lose a journal"
        );
    }

    #[test]
    fn a_disk_sized_model_gets_the_disk_unless_told() {
        let m = model_for_disk("hdd-7200", &toml::Table::new(), 1 << 30).unwrap();
        assert_eq!(m.capacity_bytes(), Some(1 << 30));
        let set: toml::Table = "capacity_bytes = 4096".parse().unwrap();
        assert_eq!(
            params_for_disk("hdd-7200", &set, 1 << 30)["capacity_bytes"].as_integer(),
            Some(4096)
        );
        assert!(
            !params_for_disk("nvme", &toml::Table::new(), 1 << 30).contains_key("capacity_bytes")
        );
    }
}
