//! The machine a trial ran on, taken at run time. Two machines whose fingerprints
//! differ give rates that must not be pooled into one mean.

use serde::{Deserialize, Serialize};

/// What decides whether trials from two machines are comparable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub cpu_model: String,
    pub cpus: usize,
    /// Total memory, bytes (rounded to MiB so a few pages of difference do not count).
    pub memory_bytes: u64,
    /// `uname -r`.
    pub kernel: String,
    /// `systemd-detect-virt`, or what /proc/cpuinfo and DMI say; `none` on bare metal.
    pub virtualization: String,
    pub e2fsprogs: String,
    pub xfsprogs: String,
    /// File-system type and source device of `work_dir`, where the images live.
    pub work_dir_storage: String,
    pub jbench_version: String,
}
