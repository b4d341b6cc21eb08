//! The kernel's writeback clock held still for a run: the flusher's two settings
//! pinned as the `[writeback]` table asks, and restored afterwards, and every dirty
//! page written back and every journal committed right before a workload starts.
//!
//! Why a sync is enough to restart the clocks (Linux's mm/fs-writeback.c and jbd2):
//! the flusher's periodic wake-up is armed when a device's first inode becomes dirty
//! and re-armed only while dirty inodes remain, so after a sync it waits for the next
//! page dirtied; jbd2's commit timer starts with each transaction, and a sync commits
//! the running one. Both then start with the workload's first write.
//!
//! The host's values are also written to a file under /run (like the dirty limits in
//! `dirty.rs`), so `jbench cleanup` restores them after a jbench that was killed, and
//! the next run restores them before it reads what the host has. Runs that share the
//! host share the pin: a second run may pin the same values, not others
//! (`host_settings.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::experiment::writeback_options::{centisecs, WritebackOptions};
use crate::rig::host_settings::{read_vm, write_vm, ChangeError, Changed, Settings, RESTORE_DIR};

const INTERVAL: &str = "dirty_writeback_centisecs";
const EXPIRE: &str = "dirty_expire_centisecs";

/// The flusher's two settings as one shared setting (`host_settings.rs`).
pub const SETTINGS: Settings<Clock> = Settings {
    prefix: "writeback-",
    what: "writeback settings ([writeback])",
    read: Clock::current,
    write: Clock::write,
    dir: RESTORE_DIR,
};

/// The flusher's two settings, in centiseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock {
    pub dirty_writeback_centisecs: u64,
    pub dirty_expire_centisecs: u64,
}

impl Clock {
    /// The settings in effect now.
    pub fn current() -> Result<Self> {
        Ok(Self {
            dirty_writeback_centisecs: read_vm(INTERVAL)?,
            dirty_expire_centisecs: read_vm(EXPIRE)?,
        })
    }

    fn write(self) -> Result<()> {
        write_vm(INTERVAL, self.dirty_writeback_centisecs)?;
        write_vm(EXPIRE, self.dirty_expire_centisecs)
    }

    /// `self` with what `opts` pins put in.
    pub fn pinned(self, opts: &WritebackOptions) -> Self {
        let cs = |d: Option<std::time::Duration>, host: u64| d.and_then(centisecs).unwrap_or(host);
        Self {
            dirty_writeback_centisecs: cs(opts.interval, self.dirty_writeback_centisecs),
            dirty_expire_centisecs: cs(opts.expire, self.dirty_expire_centisecs),
        }
    }
}

/// What a trial ran with, as recorded with it (`writeback` in trials.jsonl).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WritebackRecord {
    /// The settings in effect when the workload started.
    #[serde(flatten)]
    pub clock: Clock,
    /// Whether the run pinned them (`[writeback] interval`/`expire`).
    pub pinned: bool,
    /// Whether everything was written back right before the workload started.
    pub synced_at_start: bool,
    /// How long that sync took (outside every phase's clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_seconds: Option<f64>,
}

/// Writes back every dirty page and commits every journal, so the flusher's and the
/// journal's clocks start with the next write: the host's (`sync`), or only those of
/// the file systems mounted at `only` (`syncfs`, when other trials share the host and
/// a host-wide sync would write theirs back mid-workload). Returns how long it took.
pub fn restart_clocks(only: Option<&[&Path]>) -> Duration {
    let t = Instant::now();
    match only {
        None => nix::unistd::sync(),
        Some(mounts) => {
            for m in mounts {
                // A mount that cannot be opened has nothing this trial wrote to sync.
                if let Ok(d) = std::fs::File::open(m) {
                    let _ = nix::unistd::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d));
                }
            }
        }
    }
    t.elapsed()
}

/// Right before a workload starts: the settings in effect, and the sync that restarts
/// the clocks when `opts` asks for it (of the file systems at `only` when given).
pub fn before_workload(opts: &WritebackOptions, only: Option<&[&Path]>) -> Result<WritebackRecord> {
    let sync_seconds = opts
        .sync_at_start
        .then(|| restart_clocks(only).as_secs_f64());
    Ok(WritebackRecord {
        clock: Clock::current()?,
        pinned: opts.pins(),
        synced_at_start: opts.sync_at_start,
        sync_seconds,
    })
}

/// The writeback settings a run pinned; the host's come back on drop.
#[derive(Debug)]
pub struct PinnedClock {
    _host: Changed<Clock>,
}

impl PinnedClock {
    /// Pins what `opts` asks for; `None` when it pins nothing. Settings a killed
    /// jbench left pinned are restored first, pinning or not, so the host's own are
    /// what a run records and puts back.
    pub fn apply(opts: &WritebackOptions) -> Result<Option<Self>> {
        match SETTINGS.restore_stale() {
            Ok(files) => {
                for file in files {
                    crate::events::emit(crate::events::Event::WritebackRestored { file });
                }
            }
            // Pinning would then keep the killed run's values as the host's.
            Err(e) if opts.pins() => return Err(e),
            Err(e) => crate::events::emit(crate::events::Event::WritebackLeftPinned {
                error: format!("{e:#}"),
            }),
        }
        if !opts.pins() {
            return Ok(None);
        }
        match SETTINGS.change(|host| host.pinned(opts)) {
            Ok(host) => Ok(Some(Self { _host: host })),
            Err(ChangeError::Failed(e)) => Err(e),
            Err(ChangeError::Conflict {
                pid,
                in_effect,
                wanted,
            }) => bail!(
                "jbench {pid} has pinned vm.{INTERVAL} = {} and vm.{EXPIRE} = {} for its run; this run pins {} and {}. \
                 The host has one writeback clock: pin the same values in [writeback], \
                 set interval and expire to \"host\", or run one after the other",
                in_effect.dirty_writeback_centisecs,
                in_effect.dirty_expire_centisecs,
                wanted.dirty_writeback_centisecs,
                wanted.dirty_expire_centisecs
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_spec_names_is_pinned() {
        let host = Clock {
            dirty_writeback_centisecs: 500,
            dirty_expire_centisecs: 3000,
        };
        let opts = WritebackOptions {
            sync_at_start: true,
            interval: Some(Duration::from_millis(2500)),
            expire: None,
        };
        let p = host.pinned(&opts);
        assert_eq!(p.dirty_writeback_centisecs, 250);
        assert_eq!(p.dirty_expire_centisecs, 3000);
        assert_eq!(host.pinned(&WritebackOptions::default()), host);
    }

    #[test]
    fn the_record_names_the_kernel_settings() {
        let r = WritebackRecord {
            clock: Clock {
                dirty_writeback_centisecs: 500,
                dirty_expire_centisecs: 3000,
            },
            pinned: false,
            synced_at_start: true,
            sync_seconds: Some(0.25),
        };
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["dirty_writeback_centisecs"], 500);
        assert_eq!(v["dirty_expire_centisecs"], 3000);
        assert_eq!(v["synced_at_start"], true);
        let back: WritebackRecord = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
