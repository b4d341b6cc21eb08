//! A model's default parameters overridden by a TOML table (the `[models]` entries of
//! a spec, a disk's `params`, `jbench device calibrate --set`); `kind.rs` names the
//! models.

use serde::{de::DeserializeOwned, Serialize};

use super::ModelError;

/// `p` as a TOML table.
pub(super) fn table_of<T: Serialize>(p: &T) -> Option<toml::Table> {
    match toml::Value::try_from(p) {
        Ok(toml::Value::Table(t)) => Some(t),
        _ => None,
    }
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
