//! A session directory holds everything one jbench process creates in one place
//! (images, mount points, a ledger of zram devices), marked and locked so that
//! `jbench cleanup` can tell a killed run's leftovers from a live run's resources.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Marker file in every session directory; a live session holds an exclusive flock on it.
pub const MARKER: &str = ".jbench-session";
/// Ledger of zram indices a session added (one per line).
pub const ZRAM_LEDGER: &str = "zram-devices";
/// Where live sessions register their directories, so cleanup finds them even when no
/// loop device points there any more. /run is cleared at boot, as loops and zram are.
pub const REGISTRY: &str = "/run/jbench/sessions";

#[derive(Debug)]
pub struct SessionDir {
    path: PathBuf,
    registry_entry: PathBuf,
    // Holding the open file keeps the flock; dropping it releases the lock.
    _lock: File,
}

impl SessionDir {
    /// Creates `parent/jbench-<pid>-<n>/`, marks it and locks it.
    pub fn create(parent: &Path) -> Result<Self> {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create work directory {}", parent.display()))?;
        let pid = std::process::id();
        let (path, name) = (0..1000)
            .map(|n| {
                let name = format!("jbench-{pid}-{n}");
                (parent.join(&name), name)
            })
            .find(|(p, _)| fs::create_dir(p).is_ok())
            .with_context(|| {
                format!("cannot create a session directory in {}", parent.display())
            })?;
        let mut lock = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(path.join(MARKER))
            .with_context(|| format!("cannot create {}", path.join(MARKER).display()))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            anyhow::bail!("cannot lock {}", path.join(MARKER).display());
        }
        writeln!(lock, "pid {pid}")?;
        let registry_entry = Path::new(REGISTRY).join(&name);
        if fs::create_dir_all(REGISTRY).is_ok() {
            let _ = fs::write(&registry_entry, path.as_os_str().as_encoded_bytes());
        }
        Ok(Self {
            path,
            registry_entry,
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Records a zram index this session added, before anything else can fail.
    pub fn note_zram(&self, index: u32) -> Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path.join(ZRAM_LEDGER))?;
        writeln!(f, "{index}")?;
        f.sync_all()?;
        Ok(())
    }
}

/// Removes `index` from the zram ledger of session directory `dir`.
pub fn forget_zram(dir: &Path, index: u32) {
    let ledger = dir.join(ZRAM_LEDGER);
    {
        if let Ok(text) = fs::read_to_string(&ledger) {
            let rest: Vec<&str> = text
                .lines()
                .filter(|l| l.trim() != index.to_string())
                .collect();
            let _ = fs::write(&ledger, rest.join("\n"));
        }
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        // Everything inside was released by the guards that made it; what is left is
        // the marker and empty directories. A mount still inside means a guard failed:
        // then keep the directory so `jbench cleanup` can find it.
        if still_mounted_under(&self.path) {
            eprintln!(
                "jbench: something is still mounted under {}; leaving it for `jbench cleanup`",
                self.path.display()
            );
            return;
        }
        if let Err(e) = fs::remove_dir_all(&self.path) {
            eprintln!("jbench: cannot remove {}: {e}", self.path.display());
        }
        let _ = fs::remove_file(&self.registry_entry);
    }
}

/// Whether any mount point lies at or below `dir`.
pub fn still_mounted_under(dir: &Path) -> bool {
    crate::rig::mounts::mounts()
        .iter()
        .any(|m| m.target.starts_with(dir))
}

/// Whether a session directory's lock is free, i.e. its process is gone.
pub fn is_stale(dir: &Path) -> bool {
    let Ok(f) = File::open(dir.join(MARKER)) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; released when `f` closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// The session directory containing `path`, if any (the nearest ancestor with a marker).
pub fn session_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|a| a.join(MARKER).is_file())
        .map(Path::to_path_buf)
}
