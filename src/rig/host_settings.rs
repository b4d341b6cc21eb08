//! Settings of the whole host that a run changes and must put back: the kernel's
//! `/proc/sys/vm` values, and the restore files under /run/jbench that keep the host's
//! own values while they are changed, so `jbench cleanup` can put them back after a
//! jbench that was killed (`dirty.rs`, `writeback.rs`).
//!
//! Several jbench processes may run on one host at once (the shards of a run under GNU
//! parallel, a user's two runs). A setting is the host's, so they share it: the first
//! keeps the host's own values in its restore file, the others take theirs from that
//! file rather than from the kernel (where they would find the first one's values), a
//! change that differs from the one in effect is not made over another's, and only the
//! last one out puts the host's values back. Every step holds one lock file.

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

const VM: &str = "/proc/sys/vm";
/// Where the values to restore are kept while they are changed.
pub const RESTORE_DIR: &str = "/run/jbench";
const LOCK_FILE: &str = "host-settings.lock";

/// `/proc/sys/vm/<name>` as a number.
pub fn read_vm(name: &str) -> Result<u64> {
    let path = Path::new(VM).join(name);
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{} holds `{}`", path.display(), text.trim()))
}

/// Writes `value` to `/proc/sys/vm/<name>`.
pub fn write_vm(name: &str, value: u64) -> Result<()> {
    let path = Path::new(VM).join(name);
    fs::write(&path, value.to_string()).with_context(|| {
        format!(
            "cannot write {value} to {}; changing the kernel's settings needs root",
            path.display()
        )
    })
}

/// A group of host settings changed together: the restore files' prefix, a name for
/// messages, and how to read and write them.
#[derive(Debug, Clone, Copy)]
pub struct Settings<T> {
    /// Restore files are `<dir>/<prefix><pid>.json`.
    pub prefix: &'static str,
    /// For messages: "dirty limits".
    pub what: &'static str,
    pub read: fn() -> Result<T>,
    pub write: fn(T) -> Result<()>,
    /// Where the restore files are: [`RESTORE_DIR`] but in tests.
    pub dir: &'static str,
}

/// The exclusive lock every change, restore and scan of `dir` holds; released on drop.
struct Lock {
    _file: File,
}

impl Lock {
    fn take(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!(
                "cannot lock {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Self { _file: file })
    }
}

/// One restore file: the jbench that wrote it, whether it still runs, what it holds.
struct Kept<T> {
    file: PathBuf,
    pid: i32,
    live: bool,
    host: T,
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Every readable restore file of `prefix` in `dir`, oldest process first.
fn kept<T: DeserializeOwned>(dir: &Path, prefix: &str) -> Vec<Kept<T>> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut all: Vec<Kept<T>> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid: i32 = name
                .strip_prefix(prefix)?
                .strip_suffix(".json")?
                .parse()
                .ok()?;
            let host = serde_json::from_slice(&fs::read(e.path()).ok()?).ok()?;
            Some(Kept {
                file: e.path(),
                pid,
                live: alive(pid),
                host,
            })
        })
        .collect();
    all.sort_by_key(|k| k.pid);
    all
}

fn me() -> i32 {
    std::process::id() as i32
}

impl<T: Copy + PartialEq + Serialize + DeserializeOwned + std::fmt::Debug> Settings<T> {
    fn own_file(&self) -> PathBuf {
        Path::new(self.dir).join(format!("{}{}.json", self.prefix, me()))
    }

    /// The values as this jbench should describe the machine: what is in effect, but
    /// where other live jbench processes have the settings changed (and this one has
    /// not), the host's own values they kept.
    pub fn machine_values(&self) -> Result<T> {
        let _lock = Lock::take(Path::new(self.dir))?;
        let all = kept::<T>(Path::new(self.dir), self.prefix);
        if all.iter().any(|k| k.pid == me()) {
            return (self.read)();
        }
        match all.into_iter().find(|k| k.live) {
            Some(k) => Ok(k.host),
            None => (self.read)(),
        }
    }

    /// Restore files left by jbench processes that are gone.
    pub fn stale(&self) -> Vec<PathBuf> {
        kept::<T>(Path::new(self.dir), self.prefix)
            .into_iter()
            .filter(|k| !k.live)
            .map(|k| k.file)
            .collect()
    }

    /// Puts back what restore files of killed jbench processes hold, unless a live one
    /// still has the settings changed (it puts them back when it ends), and removes
    /// those files. Returns the files it dealt with.
    pub fn restore_stale(&self) -> Result<Vec<PathBuf>> {
        // Most runs find none; they need not take the lock (nor be root) to see that.
        if self.stale().is_empty() {
            return Ok(Vec::new());
        }
        let _lock = Lock::take(Path::new(self.dir))?;
        let all = kept::<T>(Path::new(self.dir), self.prefix);
        let dead: Vec<&Kept<T>> = all.iter().filter(|k| !k.live).collect();
        if dead.is_empty() {
            return Ok(Vec::new());
        }
        if !all.iter().any(|k| k.live) {
            (self.write)(dead[0].host)?;
        }
        for k in &dead {
            fs::remove_file(&k.file)
                .with_context(|| format!("cannot remove {}", k.file.display()))?;
        }
        Ok(dead.iter().map(|k| k.file.clone()).collect())
    }

    /// Changes the settings to `target(host's own values)` and keeps the host's own in
    /// a restore file first. If another live jbench has them changed, the host's own
    /// come from its file, and the change is made only if it is the one in effect:
    /// otherwise `Conflict` names that jbench and what it holds.
    pub fn change(&self, target: impl FnOnce(T) -> T) -> Result<Changed<T>, ChangeError<T>> {
        let _lock = Lock::take(Path::new(self.dir)).map_err(ChangeError::Failed)?;
        let all = kept::<T>(Path::new(self.dir), self.prefix);
        let host = match all.first() {
            Some(k) => k.host,
            None => (self.read)().map_err(ChangeError::Failed)?,
        };
        let wanted = target(host);
        let other = all.iter().find(|k| k.live && k.pid != me());
        if let Some(other) = other {
            let now = (self.read)().map_err(ChangeError::Failed)?;
            if now != wanted {
                return Err(ChangeError::Conflict {
                    pid: other.pid,
                    in_effect: now,
                    wanted,
                });
            }
        }
        // The killed ones' host values are this one's now; it puts them back.
        for k in all.iter().filter(|k| !k.live) {
            let _ = fs::remove_file(&k.file);
        }
        let file = self.own_file();
        let save = || -> Result<()> {
            let text = serde_json::to_vec(&host)?;
            fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))
        };
        save().map_err(ChangeError::Failed)?;
        if let Err(e) = (self.write)(wanted) {
            if other.is_none() {
                let _ = (self.write)(host);
            }
            let _ = fs::remove_file(&file);
            let what = self.what;
            return Err(ChangeError::Failed(
                e.context(format!("cannot change the kernel's {what}")),
            ));
        }
        Ok(Changed {
            settings: *self,
            host,
        })
    }

    /// Ends this jbench's change: the host's own values go back if no other live
    /// jbench still has the settings changed.
    fn end(&self, host: T) -> Result<()> {
        let _lock = Lock::take(Path::new(self.dir))?;
        let others = kept::<T>(Path::new(self.dir), self.prefix)
            .into_iter()
            .any(|k| k.live && k.pid != me());
        if !others {
            (self.write)(host)?;
        }
        let file = self.own_file();
        fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))
    }
}

/// Why [`Settings::change`] did not change the settings.
#[derive(Debug)]
pub enum ChangeError<T> {
    /// Another live jbench has them changed to other values than this one needs.
    Conflict {
        pid: i32,
        in_effect: T,
        wanted: T,
    },
    Failed(anyhow::Error),
}

/// Host settings this jbench changed: the host's own are put back on drop (by the last
/// jbench that has them changed) and the restore file removed; if that fails, the file
/// stays for `jbench cleanup`.
#[derive(Debug)]
pub struct Changed<T: Copy + PartialEq + Serialize + DeserializeOwned + std::fmt::Debug> {
    settings: Settings<T>,
    host: T,
}

impl<T: Copy + PartialEq + Serialize + DeserializeOwned + std::fmt::Debug> Drop for Changed<T> {
    fn drop(&mut self) {
        if let Err(e) = self.settings.end(self.host) {
            crate::events::emit(crate::events::Event::HostSettingKept {
                error: format!("{e:#}"),
                what: self.settings.what.to_string(),
                file: self.settings.own_file(),
            });
        }
    }
}

#[cfg(test)]
mod tests;
