//! The environment record (`env.json`): what machine and tools produced a result.

use serde::{Deserialize, Serialize};

use crate::experiment::spec::Spec;
use crate::rig::{cmd, ext4};

pub mod disks;
pub mod host;
pub mod storage;

pub use disks::DiskSettings;
pub use host::Writeback;
pub(crate) use storage::location;
pub use storage::{BlockQueue, ImageLocation};

/// Every field has a default so that an `env.json` of an older jbench still loads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    pub jbench_version: String,
    pub recorded_at: String,
    pub hostname: String,
    pub kernel: String,
    pub e2fsprogs: String,
    /// `mkfs.xfs -V`, or "not found".
    pub xfsprogs: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub mkfs_extended_options: String,
    /// Each directory that holds images, with the file system, mount options and disk
    /// queue it lives on; the first is the work_dir.
    pub image_locations: Vec<ImageLocation>,
    /// The kernel's dirty-page writeback settings (`/proc/sys/vm/dirty_*`).
    pub writeback: Writeback,
    /// The experiment's `[writeback]` table: whether those settings were pinned for the
    /// run and every workload started right after a sync. Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writeback_control: Option<crate::experiment::writeback_options::WritebackOptions>,
    /// Distinct CPU frequency governors; empty (and absent) without cpufreq.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_governors: Vec<String>,
    /// Cache and flush of every emulated disk and real device of the configurations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<DiskSettings>,
}

pub fn collect(spec: &Spec) -> Environment {
    let uname = nix::sys::utsname::uname().ok();
    let mut locations = vec![location(
        "images (file system, same-disk, second-disk)",
        &spec.work_dir,
    )];
    for c in &spec.configs {
        if let Some(d) = &c.second_disk_dir {
            locations.push(location("second-disk journal", d));
        }
        if c.placement == crate::experiment::config::Placement::Ramdisk {
            locations.push(location("ramdisk journal", &c.ramdisk_dir));
        }
    }
    locations.dedup_by(|a, b| a.path == b.path && a.role == b.role);
    Environment {
        jbench_version: env!("CARGO_PKG_VERSION").to_string(),
        recorded_at: chrono::Local::now().to_rfc3339(),
        hostname: nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        kernel: uname
            .as_ref()
            .map(|u| {
                format!(
                    "{} {} {}",
                    u.sysname().to_string_lossy(),
                    u.release().to_string_lossy(),
                    u.machine().to_string_lossy()
                )
            })
            .unwrap_or_default(),
        e2fsprogs: e2fsprogs(),
        xfsprogs: xfsprogs(),
        cpu_model: cpu_model(),
        cores: cores(),
        memory_bytes: memory_bytes(),
        mkfs_extended_options: ext4::NO_LAZY_INIT.to_string(),
        image_locations: locations,
        writeback: Writeback::collect(),
        writeback_control: Some(spec.writeback),
        cpu_governors: host::cpu_governors(),
        disks: disks::collect(spec),
    }
}

// Shared with the scale-out fingerprint, which must describe a machine the same way.

/// `mke2fs -V`'s first line, or "not found".
pub(crate) fn e2fsprogs() -> String {
    first_line_of("mke2fs")
}

/// `mkfs.xfs -V`'s first line, or "not found".
pub(crate) fn xfsprogs() -> String {
    first_line_of("mkfs.xfs")
}

fn first_line_of(program: &str) -> String {
    cmd::run_all(program, &["-V"])
        .map(|t| t.lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_else(|_| "not found".into())
}

/// /proc/cpuinfo's first `model name`.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default()
}

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// /proc/meminfo's `MemTotal`, bytes.
pub(crate) fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}
