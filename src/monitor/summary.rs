//! What a trial's record keeps of the monitor: per phase, per device totals and peaks,
//! CPU shares and the journal's commit figures.

use serde::{Deserialize, Serialize};

use super::procfs::Jbd2Info;

/// One phase's totals and peaks on one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSummary {
    /// `fs` or `journal`.
    pub role: String,
    /// Kernel device name, e.g. `loop3`.
    pub device: String,
    pub reads: u64,
    pub writes: u64,
    pub read_kib: u64,
    pub write_kib: u64,
    pub io_ms: u64,
    pub flushes: u64,
    pub peak_write_kib_s: f64,
    pub peak_read_kib_s: f64,
    pub peak_in_flight: u64,
}

/// The journal before and after a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Jbd2Phase {
    /// The `/proc/fs/jbd2` entry.
    pub name: String,
    pub before: Jbd2Info,
    pub after: Jbd2Info,
    /// Transactions committed during the phase.
    pub transactions: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSummary {
    /// Percent of all CPUs' time over the phase.
    pub user: f64,
    pub system: f64,
    pub iowait: f64,
    /// Highest iowait of one interval.
    pub peak_iowait: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseMonitor {
    pub phase: String,
    /// Monitored seconds (from the hook before the clock starts to the hook after it
    /// stops).
    pub seconds: f64,
    /// Interval samples taken during the phase (boundaries not counted).
    pub samples: u64,
    pub devices: Vec<DeviceSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jbd2: Option<Jbd2Phase>,
    pub cpu: CpuSummary,
    pub peak_dirty_kib: u64,
    pub peak_writeback_kib: u64,
}

/// What the monitor saw during a trial's workload, per phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorSummary {
    pub interval_seconds: f64,
    /// The per-interval series, relative to the results directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_file: Option<String>,
    pub phases: Vec<PhaseMonitor>,
    /// CPU other processes used from the monitor's start to its stop (the whole
    /// workload); absent in records of an older jbench.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_load: Option<super::HostLoad>,
}
