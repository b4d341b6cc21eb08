//! The trial record: one line of `trials.jsonl`. This is a user-facing schema
//! (documented in docs/results.md); bump [`SCHEMA_VERSION`] on incompatible changes.

use serde::{Deserialize, Serialize};

use crate::experiment::config::Config;
pub use crate::rig::verify::Verified;
use crate::workload::PhaseResult;

pub const SCHEMA_VERSION: u32 = 1;

/// The configuration a trial ran, as the experiment file asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// Short name made of the factor values that vary, e.g. `same-disk` or `ramdisk,64M`.
    pub label: String,
    pub filesystem: String,
    /// File-system size in bytes.
    pub fs_size: u64,
    /// `none`, `internal`, `same-disk`, `second-disk`, `ramdisk`, `zram` or `device`.
    pub placement: String,
    /// Journal size in bytes.
    pub journal_size: u64,
    /// `ordered`, `journal` or `writeback`; `none` without a journal; `metadata` for XFS.
    pub mode: String,
    #[serde(default)]
    pub mkfs_options: Vec<String>,
    #[serde(default)]
    pub mount_options: Vec<String>,
    #[serde(default)]
    pub fast_commit: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_seconds: Option<u32>,
    /// Memory cgroup limit of the workload, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
    /// Size of the RAM disk a `ramdisk` journal is a region of, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramdisk_size: Option<u64>,
    /// `filesystem.device_model`: the emulated disk the file system (and an internal or
    /// same-disk journal) was on, as the experiment names it (a built-in model or a
    /// `[models]` entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_device_model: Option<String>,
    /// The emulated disk of a `second-disk` or `ramdisk` journal, as the experiment
    /// names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_device_model: Option<String>,
}

impl ConfigRecord {
    /// The record of `config`, as the experiment file asked for it.
    pub fn of(c: &Config) -> Self {
        Self {
            label: c.label.clone(),
            filesystem: c.fs_type.to_string(),
            fs_size: c.fs_size,
            placement: c.placement.as_str().to_string(),
            journal_size: c.journal_bytes(),
            mode: c.mode_label().to_string(),
            mkfs_options: c.mkfs_options.clone(),
            mount_options: c.mount_options.clone(),
            fast_commit: c.fast_commit,
            commit_seconds: c.commit_seconds,
            memory_limit: c.memory_limit,
            ramdisk_size: c.ramdisk_size,
            fs_device_model: c.fs_model.as_ref().map(|m| m.name.clone()),
            journal_device_model: c.journal_model.as_ref().map(|m| m.name.clone()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadRecord {
    pub kind: String,
    pub name: String,
    pub params: serde_json::Value,
    /// Phases were also timed up to `syncfs` (`durable_seconds`).
    #[serde(default)]
    pub durable: bool,
    /// The workload's `neighbour_rate` (bytes/s of a writer beside it); what the
    /// neighbour achieved is [`TrialRecord::neighbour`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbour_rate: Option<u64>,
}

/// `ok` or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub schema_version: u32,
    /// Index in the plan (0-based); stable for a given spec, so `--resume` can match.
    pub trial: usize,
    /// Repetition of this (configuration, workload), 1-based.
    pub rep: u32,
    /// The crash lab's recording (write log on) of an experiment with `[crash]`: kept
    /// out of the speed statistics; its states are in `crash.jsonl`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crash_recording: bool,
    pub config: ConfigRecord,
    pub workload: WorkloadRecord,
    /// Devices, images and mount point the trial used.
    #[serde(default)]
    pub layout: serde_json::Value,
    #[serde(default)]
    pub verified: Option<Verified>,
    #[serde(default)]
    pub phases: Vec<PhaseResult>,
    /// The workload's memory limit and peak use (`memory_limit` configurations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::rig::memcg::MemoryUse>,
    /// The emulated disks' counters and the device daemon's CPU time, for
    /// configurations with a `device_model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulation: Option<crate::rig::emulated::EmulationRecord>,
    /// Devices, journal, CPU and memory during each phase (`monitor_interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<crate::monitor::MonitorSummary>,
    /// The kernel's writeback settings the workload ran with and whether it started
    /// right after a sync (`[writeback]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback: Option<crate::rig::writeback::WritebackRecord>,
    /// What the writer beside the workload did (`neighbour_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbour: Option<crate::workload::neighbour::NeighbourLoad>,
    /// The trials that ran on the host at the same time as this one (`jbench run
    /// --jobs N` with N > 1); absent in a run of one trial at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Concurrency>,
    pub status: Status,
    #[serde(default)]
    pub error: Option<String>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Whole-trial wall time including provisioning, seconds.
    pub wall_seconds: f64,
}

/// Who shared the host with a trial of a concurrent run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrency {
    /// The run's `--jobs`: how many trials it let run at once.
    pub jobs: u32,
    /// Plan indices of the trials that ran at some moment of this one.
    pub beside: Vec<usize>,
}

/// Start of the `error` of a record the reader excluded from the statistics (see
/// [`TrialRecord::invalid_reason`]); the report lists such trials in a warning.
pub const EXCLUDED: &str = "invalid record, excluded from the statistics: ";

/// Start of the `error` of a trial failed because the device daemon stalled on one of
/// its emulated disks (see [`TrialRecord::fail_if_stalled`]); the report names such
/// trials in a warning of their own.
pub const STALLED: &str = "stalled: ";

impl TrialRecord {
    pub fn is_ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// Turns an `ok` record whose emulated disks' daemon stalled (an answer or an image
    /// I/O call more than `emu::daemon::OVERDUE_AFTER` late, docs/devices.md "Stalls")
    /// into a failed one whose error says where and how badly, so it is counted and
    /// shown but never averaged. A crash recording is left as it is: its times are
    /// never averaged, and its write log is as good as ever. Returns the reason when it
    /// did.
    pub fn fail_if_stalled(&mut self) -> Option<String> {
        if !self.is_ok() || self.crash_recording {
            return None;
        }
        let why = self.emulation.as_ref()?.stall()?;
        self.status = Status::Failed;
        self.error = Some(format!("{STALLED}{why}"));
        Some(why)
    }

    /// Whether the trial failed because the device daemon stalled
    /// ([`TrialRecord::fail_if_stalled`]).
    pub fn is_stalled(&self) -> bool {
        !self.is_ok()
            && self
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with(STALLED))
    }

    /// Why an `ok` record cannot be a measurement: no phases, or a phase whose time is
    /// not a positive finite number of seconds. `None` for a usable or a failed record
    /// (a failed one never enters the statistics anyway). Counts and bytes are `u64`,
    /// so a negative or fractional one never parses in the first place.
    pub fn invalid_reason(&self) -> Option<String> {
        if !self.is_ok() {
            return None;
        }
        if self.phases.is_empty() {
            return Some(format!("trial {} is `ok` but has no phases", self.trial));
        }
        let positive = |x: f64| x.is_finite() && x > 0.0;
        for p in &self.phases {
            if !positive(p.seconds) {
                return Some(format!(
                    "trial {} phase `{}` has seconds = {} (must be a positive number)",
                    self.trial, p.name, p.seconds
                ));
            }
            if let Some(d) = p.durable_seconds.filter(|d| !positive(*d)) {
                return Some(format!(
                    "trial {} phase `{}` has durable_seconds = {d} (must be a positive number)",
                    self.trial, p.name
                ));
            }
        }
        None
    }

    /// Turns an invalid `ok` record into a failed one whose error says why, so it is
    /// counted but never averaged. Returns the reason when it did.
    pub fn exclude_if_invalid(&mut self) -> Option<String> {
        let why = self.invalid_reason()?;
        self.status = Status::Failed;
        self.error = Some(format!("{EXCLUDED}{why}"));
        Some(why)
    }

    /// Whether the reader excluded this record (see [`TrialRecord::exclude_if_invalid`]).
    pub fn is_excluded(&self) -> bool {
        self.error
            .as_deref()
            .is_some_and(|e| e.starts_with(EXCLUDED))
    }
}
