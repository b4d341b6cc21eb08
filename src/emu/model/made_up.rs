//! A made-up model that exists in test builds only, to show what adding a model
//! takes: this one file and one line in `kind.rs`'s registry. A tape-like device that
//! spans its disk and forgets everything at a power cut; tests in the environment
//! record and the crash lab find its facts though neither names it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::declare::{defaults_of, params_of, ModelKind};
use super::{CacheWords, DeviceModel, Request, Service};

pub const KIND: ModelKind = ModelKind {
    name: "made-up-tape",
    spans_disk: true,
    at_power_cut: super::declare::PowerCut::Empties,
    defaults: || defaults_of(TapeParams::default()),
    build: |p| {
        Ok(Box::new(Tape(params_of(
            "made-up-tape",
            TapeParams::default(),
            p,
        )?)))
    },
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TapeParams {
    capacity_bytes: u64,
    request_us: u64,
}

impl Default for TapeParams {
    fn default() -> Self {
        TapeParams {
            capacity_bytes: 1 << 30,
            request_us: 500,
        }
    }
}

struct Tape(TapeParams);

impl DeviceModel for Tape {
    fn name(&self) -> &'static str {
        KIND.name
    }
    fn service(&mut self, _: &Request, _: Duration) -> Service {
        Service {
            duration: Duration::from_micros(self.0.request_us),
            ..Service::default()
        }
    }
    fn min_service(&self) -> Duration {
        Duration::from_micros(self.0.request_us)
    }
    fn capacity_bytes(&self) -> Option<u64> {
        Some(self.0.capacity_bytes)
    }
    fn volatile_cache(&self) -> bool {
        false
    }
    fn cache_words(&self) -> CacheWords {
        CacheWords {
            cache: "none",
            cache_bytes: None,
            flush: "rewinds the tape",
            flush_latency_us: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::config::DeviceModelSpec;

    /// The environment record and the crash lab find the made-up model's facts by
    /// its name, though neither names it; a disk gets its geometry.
    #[test]
    fn every_reader_of_model_facts_finds_the_made_up_one() {
        let m =
            crate::emu::model::model_for_disk("made-up-tape", &toml::Table::new(), 4096).unwrap();
        assert_eq!(m.capacity_bytes(), Some(4096), "spans its disk");
        let spec = DeviceModelSpec {
            name: "tape".into(),
            model: "made-up-tape".into(),
            params: toml::Table::new(),
        };
        let words = crate::results::envinfo::disks::emulated(&spec);
        assert_eq!(words.flush, "rewinds the tape");
        assert!(!crate::emu::model::keeps_contents("made-up-tape"));
        assert!(crate::emu::model::keeps_contents("nvram"));
        assert!(!crate::emu::model::keeps_contents("ram"));
        assert!(
            crate::emu::model::default_params("made-up-tape").unwrap()["request_us"]
                .as_integer()
                .is_some()
        );
    }
}
