//! `ram`: a RAM disk that adds no latency at all.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::declare::{defaults_of, params_of, ModelKind};
use super::{CacheWords, DeviceModel, Request, Service};

/// Its contents are gone at a power cut: a journal on it is lost.
pub const KIND: ModelKind = ModelKind {
    name: "ram",
    spans_disk: false,
    at_power_cut: super::declare::PowerCut::Empties,
    defaults: || defaults_of(RamParams::default()),
    build: |p| {
        params_of("ram", RamParams::default(), p)?;
        Ok(Box::new(RamModel))
    },
};

/// `ram` has no parameters; any key given is an error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RamParams {}

/// A RAM disk: adds no latency at all (Studies 1 and 2's RAM-disk journal).
#[derive(Debug, Clone, Default)]
pub struct RamModel;

impl DeviceModel for RamModel {
    fn name(&self) -> &'static str {
        "ram"
    }
    fn service(&mut self, _req: &Request, _now: Duration) -> Service {
        Service::default()
    }
    fn min_service(&self) -> Duration {
        Duration::ZERO
    }
    /// An acknowledged write is in the RAM disk at once, with no cache in front of it
    /// for a flush to empty. That a power cut empties the whole RAM disk is a different
    /// question from which acknowledged writes survive it, and not this one's to answer.
    fn volatile_cache(&self) -> bool {
        false
    }

    fn cache_words(&self) -> CacheWords {
        CacheWords {
            cache: "none",
            cache_bytes: None,
            flush: "completes at once",
            flush_latency_us: None,
        }
    }
}
