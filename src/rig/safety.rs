//! Real devices are sacred. A device that is not one of jbench's own images is
//! formatted only when the user names that exact device with `--destroy-data-on`, and
//! never while it is mounted, used as swap, held by another device, open exclusively,
//! or partitioned.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::rig::{cmd, mounts};

/// Refuses to format `dev` unless it is safe to and named in `destroy`.
pub fn check_formattable(dev: &Path, destroy: &[PathBuf]) -> Result<()> {
    let meta = fs::metadata(dev).with_context(|| {
        format!(
            "{} does not exist; check filesystem.device / journal.device",
            dev.display()
        )
    })?;
    if !meta.file_type().is_block_device() {
        bail!(
            "{} is not a block device; refusing to format it.",
            dev.display()
        );
    }
    let real = fs::canonicalize(dev)?;
    let named = destroy
        .iter()
        .any(|d| fs::canonicalize(d).map(|c| c == real).unwrap_or(false));
    if let Some(problem) = in_use(&real, meta.rdev())? {
        bail!(
            "{} {problem}; refusing to format it. {}",
            dev.display(),
            "Release it or pick another device."
        );
    }
    let signature = signature(&real)?;
    if !named {
        let why = match &signature {
            Some(sig) => format!("it holds {sig}, and "),
            None => String::new(),
        };
        bail!(
            "{} is a real device: {why}jbench formats a real device only when it is named with --destroy-data-on {} (all data on it will be lost); refusing to format it.",
            dev.display(),
            dev.display()
        );
    }
    Ok(())
}

/// Why a device is in use, if it is.
fn in_use(real: &Path, rdev: u64) -> Result<Option<String>> {
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let major_minor = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    for m in mounts::mounts() {
        let source = fs::canonicalize(&m.source).unwrap_or_else(|_| PathBuf::from(&m.source));
        if source == real {
            return Ok(Some(format!("is mounted on {}", m.target.display())));
        }
    }
    if let Ok(info) = fs::read_to_string("/proc/self/mountinfo") {
        if info
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some(major_minor.as_str()))
        {
            return Ok(Some(format!("({major_minor}) is mounted")));
        }
    }
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        if swaps.lines().skip(1).any(|l| {
            l.split_whitespace()
                .next()
                .map(|s| fs::canonicalize(s).map(|c| c == real).unwrap_or(false))
                .unwrap_or(false)
        }) {
            return Ok(Some("is in use as swap".into()));
        }
    }
    let sys = PathBuf::from(format!("/sys/class/block/{name}"));
    if let Ok(holders) = fs::read_dir(sys.join("holders")) {
        let held: Vec<String> = holders
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if !held.is_empty() {
            return Ok(Some(format!("is held by {}", held.join(", "))));
        }
    }
    if let Ok(entries) = fs::read_dir(&sys) {
        let parts: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&name) && sys.join(n).join("partition").exists())
            .collect();
        if !parts.is_empty() {
            return Ok(Some(format!(
                "has partitions ({}); name a partition instead",
                parts.join(", ")
            )));
        }
    }
    // The kernel's own claim: O_EXCL on a block device fails with EBUSY while a file
    // system, RAID or device-mapper holds it.
    let c_path = std::ffi::CString::new(real.as_os_str().as_encoded_bytes())?;
    // SAFETY: a plain open/close of a path we own the string of.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_RDONLY | libc::O_EXCL | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EBUSY) {
            return Ok(Some(
                "is busy (opened exclusively by the kernel or another program)".into(),
            ));
        }
        return Ok(Some(format!("cannot be opened: {err}")));
    }
    // SAFETY: fd was returned by open above.
    unsafe { libc::close(fd) };
    Ok(None)
}

/// A file-system, RAID or partition-table signature, as `blkid -p` finds it.
pub fn signature(dev: &Path) -> Result<Option<String>> {
    let out = std::process::Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(dev)
        .stdin(std::process::Stdio::null())
        .output()
        .context("cannot run blkid (util-linux) to look for signatures")?;
    // blkid -p exits 2 when it finds nothing.
    if out.status.code() == Some(2) {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
    };
    if let Some(t) = field("TYPE") {
        return Ok(Some(format!("a {t} signature")));
    }
    if let Some(t) = field("PTTYPE") {
        return Ok(Some(format!("a {t} partition table")));
    }
    if !out.status.success() {
        bail!(
            "blkid -p {} failed: {}",
            dev.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(None)
}

/// Size of a block device in bytes.
pub fn device_size(dev: &Path) -> Result<u64> {
    let out = cmd::run("blockdev", &["--getsize64", &dev.to_string_lossy()])?;
    out.trim()
        .parse()
        .with_context(|| format!("blockdev printed `{}` for {}", out.trim(), dev.display()))
}
