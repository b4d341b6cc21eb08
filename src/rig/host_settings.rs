//! Settings of the whole host that a run changes and must put back: the kernel's
//! `/proc/sys/vm` values, and the restore files under /run/jbench that keep the host's
//! own values while they are changed, so `jbench cleanup` can put them back after a
//! jbench that was killed (`dirty.rs`, `writeback.rs`).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

const VM: &str = "/proc/sys/vm";
/// Where the values to restore are kept while they are changed.
pub const RESTORE_DIR: &str = "/run/jbench";

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

/// Keeps `host` in `<RESTORE_DIR>/<prefix><pid>.json` and returns the file.
pub fn save(prefix: &str, host: &impl Serialize) -> Result<PathBuf> {
    fs::create_dir_all(RESTORE_DIR).with_context(|| format!("cannot create {RESTORE_DIR}"))?;
    let file = Path::new(RESTORE_DIR).join(format!("{prefix}{}.json", std::process::id()));
    fs::write(&file, serde_json::to_vec(host)?)
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(file)
}

/// Restore files named `<prefix><pid>.json` whose jbench is gone, with what they hold.
pub fn stale<T: DeserializeOwned>(prefix: &str) -> Vec<(PathBuf, T)> {
    let Ok(dir) = fs::read_dir(RESTORE_DIR) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid: i32 = name
                .strip_prefix(prefix)?
                .strip_suffix(".json")?
                .parse()
                .ok()?;
            if Path::new(&format!("/proc/{pid}")).exists() {
                return None;
            }
            let value = serde_json::from_slice(&fs::read(e.path()).ok()?).ok()?;
            Some((e.path(), value))
        })
        .collect()
}

/// Host settings this jbench changed: the host's own are put back on drop and their
/// restore file removed; if that fails, the file stays for `jbench cleanup`.
#[derive(Debug)]
pub struct Changed<T: Copy> {
    host: T,
    file: PathBuf,
    restore: fn(T) -> Result<()>,
    /// What the settings are, for messages ("dirty limits").
    what: &'static str,
}

impl<T: Copy + Serialize> Changed<T> {
    /// Keeps `host` in a restore file named by `prefix`, then makes `change`; if that
    /// fails, `host` is put back at once and the file removed.
    pub fn apply(
        prefix: &str,
        what: &'static str,
        host: T,
        restore: fn(T) -> Result<()>,
        change: impl FnOnce() -> Result<()>,
    ) -> Result<Self> {
        let file = save(prefix, &host)?;
        if let Err(e) = change() {
            let _ = restore(host);
            let _ = fs::remove_file(&file);
            return Err(e.context(format!("cannot change the kernel's {what}")));
        }
        Ok(Self {
            host,
            file,
            restore,
            what,
        })
    }
}

impl<T: Copy> Drop for Changed<T> {
    fn drop(&mut self) {
        match (self.restore)(self.host) {
            Ok(()) => {
                let _ = fs::remove_file(&self.file);
            }
            Err(e) => eprintln!(
                "jbench: {e:#}; the host's {} are kept in {} for `jbench cleanup`",
                self.what,
                self.file.display()
            ),
        }
    }
}

/// Puts back what a stale restore file holds with `restore`, and removes the file.
pub fn restore_stale<T>(file: &Path, host: T, restore: fn(T) -> Result<()>) -> Result<()> {
    restore(host)?;
    fs::remove_file(file).with_context(|| format!("cannot remove {}", file.display()))
}
