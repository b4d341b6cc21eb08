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

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::rig::host_settings::{read_vm, write_vm, ChangeError, Changed, Settings, RESTORE_DIR};

/// The host's two dirty limits as one shared setting (`host_settings.rs`).
pub const SETTINGS: Settings<Limits> = Settings {
    prefix: "dirty-limits-",
    what: "dirty limits",
    read: current,
    write: restore,
    dir: RESTORE_DIR,
};

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

fn setting(ratio: &str, bytes: &str) -> Result<Setting> {
    Ok(match read_vm(bytes)? {
        0 => Setting::Ratio(read_vm(ratio)?),
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

fn write_setting(s: Setting, ratio: &str, bytes: &str) -> Result<()> {
    match s {
        Setting::Ratio(r) => write_vm(ratio, r),
        Setting::Bytes(b) => write_vm(bytes, b),
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

impl Applied {
    fn as_limits(self) -> Limits {
        Limits {
            dirty: Setting::Bytes(self.dirty_bytes),
            background: Setting::Bytes(self.dirty_background_bytes),
        }
    }
}

fn describe(l: Limits) -> String {
    let one = |s: Setting| match s {
        Setting::Ratio(r) => format!("{r}%"),
        Setting::Bytes(b) => format!("{b} bytes"),
    };
    format!("{} (background {})", one(l.dirty), one(l.background))
}

/// Dirty limits scaled to a memory limit; the host's come back on drop.
#[derive(Debug)]
pub struct ScaledLimits {
    pub applied: Applied,
    _host: Changed<Limits>,
}

impl ScaledLimits {
    /// Scales the host's dirty limits to `memory` bytes. While another jbench's trial
    /// holds them at other values (a different memory limit), waits for it to end:
    /// the limits are the whole host's, and a trial must run under its own.
    pub fn apply(memory: u64) -> Result<Self> {
        let mut said = false;
        loop {
            let mut applied = None;
            let target = |host| {
                let a = scaled(host, memory);
                applied = Some(a);
                a.as_limits()
            };
            match SETTINGS.change(target) {
                Ok(host) => {
                    return Ok(Self {
                        applied: applied.expect("change computes the target"),
                        _host: host,
                    })
                }
                Err(ChangeError::Failed(e)) => return Err(e),
                Err(ChangeError::Conflict {
                    pid,
                    in_effect,
                    wanted,
                }) => {
                    if !said {
                        crate::events::emit(crate::events::Event::WaitingForDirtyLimits {
                            pid,
                            in_effect: describe(in_effect),
                            wanted: describe(wanted),
                        });
                        said = true;
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
            }
        }
    }
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
