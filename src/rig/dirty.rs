//! The kernel's dirty-page limits scaled to a workload's memory limit, for cgroup v1.
//!
//! Under cgroup v2 the kernel throttles a memory cgroup's writers against dirty limits
//! computed from the cgroup's own memory, as a machine of that size would. Under v1 it
//! does not: the limits are the whole host's (20% of 24 GiB here), so a workload capped
//! at 512 MiB can fill its whole cgroup with dirty pages. Reclaim in the cgroup can then
//! only wait for writeback, and everything else in it (the workload's own metadata
//! reads, the monitor) waits too: trials stalled for minutes, or until the emulated
//! disk's watchdog gave up (docs/devices.md, "Why the emulated disk never stalls").
//!
//! So under v1, while a trial runs in its cgroup, `vm.dirty_bytes` and
//! `vm.dirty_background_bytes` are set to the host's ratios applied to the cgroup's
//! limit — what the studies' 512 MB machines had — and restored afterwards. The
//! original values are also written to a file under /run, so `jbench cleanup` can
//! restore them after a jbench that was killed.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

const VM: &str = "/proc/sys/vm";
/// Where the values to restore are kept while a limit is applied.
pub const RESTORE_DIR: &str = "/run/jbench";

/// One of the kernel's two dirty limits, as the host had it: a ratio of memory, or
/// bytes (the kernel uses whichever was written last; the other reads 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Setting {
    Ratio(u64),
    Bytes(u64),
}

/// The host's two dirty limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub dirty: Setting,
    pub background: Setting,
}

/// The dirty limits applied while a trial ran, as recorded with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
}

fn read_u64(name: &str) -> Result<u64> {
    let path = Path::new(VM).join(name);
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{} holds `{}`", path.display(), text.trim()))
}

fn write_u64(name: &str, value: u64) -> Result<()> {
    let path = Path::new(VM).join(name);
    fs::write(&path, value.to_string())
        .with_context(|| format!("cannot write {value} to {}", path.display()))
}

fn setting(ratio: &str, bytes: &str) -> Result<Setting> {
    Ok(match read_u64(bytes)? {
        0 => Setting::Ratio(read_u64(ratio)?),
        b => Setting::Bytes(b),
    })
}

/// The host's dirty limits now.
pub fn current() -> Result<Limits> {
    Ok(Limits {
        dirty: setting("dirty_ratio", "dirty_bytes")?,
        background: setting("dirty_background_ratio", "dirty_background_bytes")?,
    })
}

/// What a machine with `memory` bytes would have under the host's settings: a ratio
/// applies to `memory`; a byte count is kept, but never above `memory`. Never below
/// one page each, and the background limit stays below the limit, as the kernel
/// requires for them to mean anything.
pub fn scaled(host: Limits, memory: u64) -> Applied {
    let bytes = |s: Setting| match s {
        Setting::Ratio(r) => memory / 100 * r.min(100),
        Setting::Bytes(b) => b.min(memory),
    };
    // The kernel refuses vm.dirty_bytes below two pages.
    let dirty = bytes(host.dirty).max(2 * 4096);
    let background = bytes(host.background).max(4096).min(dirty / 2);
    Applied {
        dirty_bytes: dirty,
        dirty_background_bytes: background,
    }
}

fn restore_file() -> PathBuf {
    Path::new(RESTORE_DIR).join(format!("dirty-limits-{}.json", std::process::id()))
}

fn write_setting(s: Setting, ratio: &str, bytes: &str) -> Result<()> {
    match s {
        Setting::Ratio(r) => write_u64(ratio, r),
        Setting::Bytes(b) => write_u64(bytes, b),
    }
}

/// Puts the host's dirty limits back as they were.
pub fn restore(l: Limits) -> Result<()> {
    // Background first: the kernel keeps it at or below the limit whatever is written.
    write_setting(
        l.background,
        "dirty_background_ratio",
        "dirty_background_bytes",
    )?;
    write_setting(l.dirty, "dirty_ratio", "dirty_bytes")
}

/// Dirty limits scaled to a memory limit; the host's come back on drop.
#[derive(Debug)]
pub struct ScaledLimits {
    host: Limits,
    pub applied: Applied,
    file: PathBuf,
}

impl ScaledLimits {
    /// Scales the host's dirty limits to `memory` bytes.
    pub fn apply(memory: u64) -> Result<Self> {
        let host = current()?;
        let applied = scaled(host, memory);
        fs::create_dir_all(RESTORE_DIR).with_context(|| format!("cannot create {RESTORE_DIR}"))?;
        let file = restore_file();
        fs::write(&file, serde_json::to_vec(&host)?)
            .with_context(|| format!("cannot write {}", file.display()))?;
        let set = write_u64("dirty_bytes", applied.dirty_bytes)
            .and_then(|_| write_u64("dirty_background_bytes", applied.dirty_background_bytes));
        if let Err(e) = set {
            let _ = restore(host);
            let _ = fs::remove_file(&file);
            return Err(e.context("cannot scale the kernel's dirty limits to the memory limit"));
        }
        Ok(Self {
            host,
            applied,
            file,
        })
    }
}

impl Drop for ScaledLimits {
    fn drop(&mut self) {
        match restore(self.host) {
            Ok(()) => {
                let _ = fs::remove_file(&self.file);
            }
            Err(e) => eprintln!(
                "jbench: {e:#}; the host's dirty limits are kept in {} for `jbench cleanup`",
                self.file.display()
            ),
        }
    }
}

/// Restore files left by a jbench that is gone, with the limits they hold.
pub fn stale() -> Vec<(PathBuf, Limits)> {
    let Ok(dir) = fs::read_dir(RESTORE_DIR) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid: i32 = name
                .strip_prefix("dirty-limits-")?
                .strip_suffix(".json")?
                .parse()
                .ok()?;
            if Path::new(&format!("/proc/{pid}")).exists() {
                return None;
            }
            let limits = serde_json::from_slice(&fs::read(e.path()).ok()?).ok()?;
            Some((e.path(), limits))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_apply_to_the_memory_limit() {
        let host = Limits {
            dirty: Setting::Ratio(20),
            background: Setting::Ratio(10),
        };
        let a = scaled(host, 512 << 20);
        assert_eq!(a.dirty_bytes, (512 << 20) / 100 * 20);
        assert_eq!(a.dirty_background_bytes, (512 << 20) / 100 * 10);
    }

    #[test]
    fn bytes_are_kept_but_capped_and_background_stays_below() {
        let host = Limits {
            dirty: Setting::Bytes(1 << 30),
            background: Setting::Bytes(900 << 20),
        };
        let a = scaled(host, 256 << 20);
        assert_eq!(a.dirty_bytes, 256 << 20);
        assert_eq!(a.dirty_background_bytes, 128 << 20);
        let tiny = scaled(host, 4096);
        assert!(tiny.dirty_bytes >= 8192 && tiny.dirty_background_bytes < tiny.dirty_bytes);
    }
}
