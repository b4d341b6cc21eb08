//! Why a model could not be built: the error of [`super::model_by_name`] and the
//! models' constructors. Its text names the model and the parameter, as spec errors
//! and `jbench device calibrate --set` show it.

use thiserror::Error;

use super::MODEL_NAMES;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ModelError {
    /// No built-in model has this name.
    #[error("unknown device model `{name}`; known models: {}", MODEL_NAMES.join(", "))]
    UnknownModel { name: String },
    /// The model has no parameter `key`; `known` lists those it has.
    #[error("{model}: unknown parameter `{key}`; known parameters: {}", list_or_none(.known))]
    UnknownParameter {
        model: String,
        key: String,
        known: Vec<String>,
    },
    /// A parameter value of the wrong type; `reason` is the TOML decoder's.
    #[error("{model}: bad parameter value: {reason}")]
    BadValue { model: String, reason: String },
    /// Parameter values the model cannot work with: out of range, or not together.
    #[error("{model}: {reason}")]
    Invalid { model: String, reason: String },
    /// The model's defaults did not serialise to a table: a bug, not the user's doing.
    #[error("{model}: internal error serialising default parameters")]
    Internal { model: String },
}

impl ModelError {
    pub(super) fn invalid(model: &str, reason: String) -> Self {
        ModelError::Invalid {
            model: model.to_string(),
            reason,
        }
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}
