//! Loop devices over image files, attached with `losetup -f --show` and detached on
//! drop. Only devices this process attached are ever detached.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::rig::cmd;

#[derive(Debug)]
pub struct LoopDevice {
    device: PathBuf,
    backing: PathBuf,
    released: bool,
}

impl LoopDevice {
    /// Attaches `file` from `offset` for `size` bytes (the whole file when `None`).
    pub fn attach(file: &Path, offset: u64, size: Option<u64>) -> Result<Self> {
        Self::attach_with(file, offset, size, false)
    }

    /// Like [`Self::attach`]; with `direct`, the loop device does direct I/O on its
    /// file and has 4096-byte sectors, so every request reaches the file's owner (the
    /// device daemon of an emulated disk) instead of being served by the page cache.
    pub fn attach_with(file: &Path, offset: u64, size: Option<u64>, direct: bool) -> Result<Self> {
        let offset_s = offset.to_string();
        let size_s = size.map(|s| s.to_string());
        let file_s = file.to_string_lossy();
        let mut args = vec!["-f", "--show", "--offset", offset_s.as_str()];
        if let Some(s) = &size_s {
            args.extend(["--sizelimit", s.as_str()]);
        }
        if direct {
            args.extend(["--direct-io=on", "--sector-size", "4096"]);
        }
        args.push(&file_s);
        let out = cmd::run("losetup", &args)
            .with_context(|| format!("cannot attach a loop device to {}", file.display()))?;
        let name = out.trim();
        if !name.starts_with("/dev/loop") {
            anyhow::bail!("losetup printed `{name}` instead of a loop device");
        }
        Ok(Self {
            device: PathBuf::from(name),
            backing: file.to_path_buf(),
            released: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.device
    }

    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        detach(&self.device, &self.backing)?;
        self.released = true;
        Ok(())
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            eprintln!("jbench: {e:#}");
        }
    }
}

/// Detaches a loop device and waits until the kernel has really let go of it: the
/// detach completes asynchronously once the last opener closes, and a caller that
/// checks right away (or removes the image) must not see it still attached.
pub fn detach(device: &Path, backing: &Path) -> Result<()> {
    let dev = device.to_string_lossy();
    let ours = || backing_file(device).is_some_and(|b| b == backing);
    let mut last = String::new();
    for attempt in 0..10 {
        if !ours() {
            return Ok(());
        }
        match cmd::run("losetup", &["-d", &dev]) {
            Ok(_) => break,
            Err(e) => {
                last = format!("{e:#}");
                std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
            }
        }
    }
    for _ in 0..200 {
        if !ours() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    anyhow::bail!(
        "{} is still attached to {} after detaching it{}; something holds it open (see `fuser -v {}`)",
        device.display(),
        backing.display(),
        if last.is_empty() { String::new() } else { format!(" ({last})") },
        device.display()
    )
}

/// The file behind an attached loop device, from sysfs; `None` when not attached.
/// A deleted backing file reads as `path (deleted)`; the suffix is removed.
pub fn backing_file(device: &Path) -> Option<PathBuf> {
    let name = device.file_name()?.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let text = text.trim_end_matches('\n');
    let text = text.strip_suffix(" (deleted)").unwrap_or(text);
    Some(PathBuf::from(text))
}

/// Every attached loop device with its backing file.
pub fn attached() -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                return None;
            }
            let dev = PathBuf::from(format!("/dev/{name}"));
            backing_file(&dev).map(|b| (dev, b))
        })
        .collect();
    out.sort();
    out
}
