//! Reading /proc/mounts and mounting/unmounting with guards.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::rig::cmd;

#[derive(Debug, Clone, PartialEq)]
pub struct MountEntry {
    pub source: String,
    pub target: PathBuf,
    pub fstype: String,
    pub options: Vec<String>,
}

/// /proc/mounts escapes spaces and tabs as octal (`\040`).
pub(crate) fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let bytes = field.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            if let Ok(v) = u8::from_str_radix(&field[i + 1..i + 4], 8) {
                out.push(v as char);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

pub fn parse_mounts(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let source = unescape(f.next()?);
            let target = PathBuf::from(unescape(f.next()?));
            let fstype = f.next()?.to_string();
            let options = f.next()?.split(',').map(str::to_string).collect();
            Some(MountEntry {
                source,
                target,
                fstype,
                options,
            })
        })
        .collect()
}

pub fn mounts() -> Vec<MountEntry> {
    std::fs::read_to_string("/proc/mounts")
        .map(|t| parse_mounts(&t))
        .unwrap_or_default()
}

/// A mounted file system, unmounted on drop.
#[derive(Debug)]
pub struct Mount {
    target: PathBuf,
    released: bool,
}

impl Mount {
    pub fn new(device: &Path, target: &Path, fstype: &str, options: &str) -> Result<Self> {
        std::fs::create_dir_all(target)
            .with_context(|| format!("cannot create mount point {}", target.display()))?;
        let dev = device.to_string_lossy();
        let tgt = target.to_string_lossy();
        cmd::run("mount", &["-t", fstype, "-o", options, &dev, &tgt])?;
        Ok(Self {
            target: target.to_path_buf(),
            released: false,
        })
    }

    /// Unmounts, retrying while the kernel still reports the mount busy (a just-closed
    /// file can hold it for a moment).
    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        unmount(&self.target)?;
        self.released = true;
        Ok(())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
    }
}

pub fn unmount(target: &Path) -> Result<()> {
    let mut last = None;
    for attempt in 0..20 {
        match nix::mount::umount(target) {
            Ok(()) => return Ok(()),
            Err(nix::errno::Errno::EINVAL) | Err(nix::errno::Errno::ENOENT) => {
                // Not mounted (any more): nothing to do.
                return Ok(());
            }
            Err(e) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
            }
        }
    }
    anyhow::bail!(
        "cannot unmount {}: {}; close whatever uses it (fuser -vm {}) and run `jbench cleanup`",
        target.display(),
        last.map(|e| e.to_string()).unwrap_or_default(),
        target.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_mounts_with_escapes() {
        let m = parse_mounts(
            "/dev/loop3 /var/tmp/a\\040b ext4 rw,relatime,data=ordered 0 0\nproc /proc proc rw 0 0\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].source, "/dev/loop3");
        assert_eq!(m[0].target, PathBuf::from("/var/tmp/a b"));
        assert!(m[0].options.contains(&"data=ordered".to_string()));
        assert_eq!(m[1].fstype, "proc");
    }
}
