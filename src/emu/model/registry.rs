//! Building a model by name, its default parameters overridden by a TOML table (the
//! `[models]` entries of a spec, a disk's `params`, `jbench device calibrate --set`).

use serde::{de::DeserializeOwned, Serialize};

use super::{
    DeviceModel, FixedModel, FixedParams, HddModel, HddParams, ModelError, RaidModel, RaidParams,
    RamModel, RamParams,
};

/// Whether model `name` lays a geometry over its disk (`capacity_bytes`), which a trial
/// and `jbench device calibrate` set to the emulated disk's size unless given.
pub fn spans_disk(name: &str) -> bool {
    matches!(name, "hdd-7200" | "raid6")
}

/// `base` with the keys of `overrides` replacing its fields; an unknown key or a value
/// of the wrong type is an error naming the known keys. A parameter that is itself a
/// table (`raid6`'s `spindle`) is merged one level deep, so `spindle = { rpm = 5400 }`
/// changes only the spindles' rpm.
pub(super) fn with_overrides<T: Serialize + DeserializeOwned>(
    model: &str,
    base: T,
    overrides: Option<&toml::Table>,
) -> Result<T, ModelError> {
    let Some(over) = overrides else {
        return Ok(base);
    };
    let mut table = match toml::Value::try_from(&base) {
        Ok(toml::Value::Table(t)) => t,
        _ => {
            return Err(ModelError::Internal {
                model: model.to_string(),
            })
        }
    };
    for (key, value) in over {
        let Some(current) = table.get_mut(key) else {
            return Err(ModelError::UnknownParameter {
                model: model.to_string(),
                key: key.clone(),
                known: table.keys().cloned().collect(),
            });
        };
        match (current, value) {
            (toml::Value::Table(nested), toml::Value::Table(over)) => {
                for (k, v) in over {
                    if !nested.contains_key(k) {
                        return Err(ModelError::UnknownParameter {
                            model: model.to_string(),
                            key: format!("{key}.{k}"),
                            known: nested.keys().map(|n| format!("{key}.{n}")).collect(),
                        });
                    }
                    nested.insert(k.clone(), v.clone());
                }
            }
            (current, value) => *current = value.clone(),
        }
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e| ModelError::BadValue {
            model: model.to_string(),
            reason: e.to_string(),
        })
}

/// Build a model by name, its defaults overridden by `params` (a TOML table of the
/// model's parameter names). Errors list the known names or parameters.
pub fn model_by_name(
    name: &str,
    params: Option<&toml::Table>,
) -> Result<Box<dyn DeviceModel>, ModelError> {
    match name {
        "hdd-7200" => Ok(Box::new(HddModel::new(with_overrides(
            name,
            HddParams::default(),
            params,
        )?)?)),
        "raid6" => {
            super::raid::refuse_derived_spindle_keys(params)?;
            Ok(Box::new(RaidModel::new(with_overrides(
                name,
                RaidParams::default(),
                params,
            )?)?))
        }
        "ssd-sata" => fixed("ssd-sata", FixedParams::default(), params),
        "nvme" => fixed("nvme", FixedParams::nvme(), params),
        "nvram" => fixed("nvram", FixedParams::nvram(), params),
        "ssd-sata-plp" => fixed("ssd-sata-plp", FixedParams::sata_plp(), params),
        "nvme-consumer" => fixed("nvme-consumer", FixedParams::nvme_consumer(), params),
        "nvme-plp" => fixed("nvme-plp", FixedParams::nvme_plp(), params),
        "ram" => {
            with_overrides(name, RamParams::default(), params)?;
            Ok(Box::new(RamModel))
        }
        _ => Err(ModelError::UnknownModel {
            name: name.to_string(),
        }),
    }
}

/// The default parameters of a built-in model, as the TOML keys `[models]` entries
/// override.
pub fn default_params(name: &str) -> Option<toml::Table> {
    let value = match name {
        "hdd-7200" => toml::Value::try_from(HddParams::default()),
        "raid6" => toml::Value::try_from(RaidParams::default()),
        "ssd-sata" => toml::Value::try_from(FixedParams::default()),
        "nvme" => toml::Value::try_from(FixedParams::nvme()),
        "nvram" => toml::Value::try_from(FixedParams::nvram()),
        "ssd-sata-plp" => toml::Value::try_from(FixedParams::sata_plp()),
        "nvme-consumer" => toml::Value::try_from(FixedParams::nvme_consumer()),
        "nvme-plp" => toml::Value::try_from(FixedParams::nvme_plp()),
        "ram" => toml::Value::try_from(RamParams::default()),
        _ => return None,
    };
    match value {
        Ok(toml::Value::Table(t)) => Some(t),
        _ => None,
    }
}

fn fixed(
    name: &'static str,
    base: FixedParams,
    params: Option<&toml::Table>,
) -> Result<Box<dyn DeviceModel>, ModelError> {
    Ok(Box::new(FixedModel::new(
        name,
        with_overrides(name, base, params)?,
    )?))
}
