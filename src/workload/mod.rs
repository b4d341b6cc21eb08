//! Workload engines: native re-implementations of the classic benchmarks.
//!
//! An engine runs its phases in a directory it is given and reports, per phase, the
//! elapsed time from a monotonic clock, the operation count and the bytes moved. It
//! knows nothing of devices or file systems: the rig prepares the directory.

pub mod fdtree;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One measured phase of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// Stable identifier, e.g. `dir_create`.
    pub name: String,
    /// Elapsed wall-clock seconds (monotonic clock).
    pub seconds: f64,
    /// Operations completed (directories made, files created, ...).
    pub ops: u64,
    /// Payload bytes written or read.
    pub bytes: u64,
    /// What one operation is, for rate labels: "dir creates", "file creates", ...
    pub op_unit: String,
}

impl PhaseResult {
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// KiB/s, the unit fdtree reports data rates in.
    pub fn kib_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1024.0 / self.seconds
        } else {
            0.0
        }
    }
}

/// Lets a long phase stop early when the user presses Ctrl-C, so the rig can tear
/// down instead of the process dying with devices attached.
#[derive(Debug, Default, Clone)]
pub struct RunControl {
    stop: Arc<AtomicBool>,
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Shares a flag that signal handlers set (see `interrupt`).
    pub fn from_flag(stop: Arc<AtomicBool>) -> Self {
        Self { stop }
    }

    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Raised by an engine that stopped because [`RunControl::request_stop`] was called.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// A workload engine. Later workloads (PostMark, iozone-style, fsync-heavy) implement
/// this trait and slot into the runner unchanged.
pub trait Workload: Send + Sync {
    /// Engine name as used in experiment files: `fdtree`.
    fn kind(&self) -> &'static str;
    /// Parameters as recorded in results (`{"dirs":3,"files":4,...}`).
    fn params(&self) -> serde_json::Value;
    /// Phase identifiers in the order they run.
    fn phase_names(&self) -> Vec<&'static str>;
    /// Payload bytes the workload will hold on the file system at its peak.
    fn peak_data_bytes(&self) -> u64;
    /// Inodes (files + directories) the workload will hold at its peak.
    fn peak_inodes(&self) -> u64;
    /// Runs every phase in `dir`, which must exist and be empty of the workload's
    /// names. Returns one result per phase, in order.
    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>>;
}
