//! What a workload engine declares about itself (its [`EngineKind`]): each engine's
//! `kind.rs` fills one in, and `kind.rs` here registers them all. Only this folder's
//! types and plain data: reports and the crash lab read an engine's facts from a
//! trial's recorded `params`, long after the engine ran.

use std::path::Path;
use std::sync::Arc;

use super::command::CheckSpec;
use super::{ParamError, Workload};

/// One workload engine's name and the facts the rest of jbench needs of it.
pub struct EngineKind {
    /// `kind = "..."` in an experiment file, and `workload.kind` in its records.
    pub name: &'static str,
    /// The smallest `[[workload]]` table (without `kind`) the engine accepts: tests
    /// build every engine from it.
    pub example: &'static str,
    /// Builds the engine from its `[[workload]]` table.
    pub build: fn(&toml::Table) -> Result<Arc<dyn Workload>, ParamError>,
    /// The phase that answers the engine's question (ranked and tested first);
    /// `None`: its first phase (engines whose phases the user names).
    pub main_phase: Option<&'static str>,
    /// Threads whose operations run one after another, from recorded params: then a
    /// phase cannot be shorter than its own latencies allow (`analysis/phase_bounds`).
    /// `None` where latencies overlap or are not per operation.
    pub sequential_threads: fn(&serde_json::Value) -> Option<u64>,
    /// What the engine promised survives a power cut, read back from recorded params
    /// once per trial.
    pub promises: fn(&serde_json::Value) -> Box<dyn PromiseReader>,
    /// How the report captions the engine's recorded latency.
    pub latency: LatencyWords,
}

/// The words under an engine's latency chart.
pub struct LatencyWords {
    /// Chart title of `PhaseResult::latency`.
    pub title: &'static str,
    /// What one recorded latency of `phase` times ("each unlink").
    pub what: fn(phase: &str) -> &'static str,
}

/// The latency words of an engine that times each operation.
pub const EACH_OPERATION: LatencyWords = LatencyWords {
    title: "latency percentiles",
    what: |_| "each operation",
};

/// An engine's promises, read back from a trial's recorded params.
pub trait PromiseReader: Send + Sync {
    /// Whether the workload makes promises the crash lab checks (a command's
    /// `durable` lines are seen in its log instead).
    fn makes_promises(&self) -> bool;
    /// The bytes a file the engine fsync'ed at `abs` holds; `None`: only that it
    /// exists.
    fn file_content(&self, _abs: &Path) -> Option<Vec<u8>> {
        None
    }
    /// The bytes `[offset, offset + len)` of `rel` (relative to the file system's
    /// root) hold once a `durable-range` marker promised them; `None` when they
    /// cannot be known (only the range's existence is checked).
    fn range_content(&self, _rel: &str, _offset: u64, _len: u64) -> Option<Vec<u8>> {
        None
    }
    /// The user's own check of the recovered file system.
    fn check(&self) -> Option<CheckSpec> {
        None
    }
    /// The phase from which a promised file may be gone because the workload removes
    /// it: by default [`REMOVAL_PHASE`], the marker every engine that cleans up writes
    /// before it removes its files.
    fn removal_phase(&self) -> Option<&'static str> {
        Some(REMOVAL_PHASE)
    }
}

/// The phase marker (`phase remove`) an engine writes before it removes its files.
pub const REMOVAL_PHASE: &str = "remove";

/// The reader of an engine that promises nothing.
pub struct NoPromises;

impl PromiseReader for NoPromises {
    fn makes_promises(&self) -> bool {
        false
    }
}

/// `promises` of an engine that promises nothing.
pub fn no_promises(_: &serde_json::Value) -> Box<dyn PromiseReader> {
    Box::new(NoPromises)
}

/// `sequential_threads` of an engine whose latencies cannot bound its phases.
pub fn no_sequential_threads(_: &serde_json::Value) -> Option<u64> {
    None
}
