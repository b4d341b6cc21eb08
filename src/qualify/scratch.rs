//! The scratch directory `qualify` measures in: made fresh under the directory the
//! user names, removed with everything in it when the measurement ends, however it
//! ends (an error, Ctrl-C, a panic).

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Room left on top of the scratch file: the appends' log (22 MiB at most) and slack.
const HEADROOM: u64 = 64 << 20;

/// Prefix of the scratch directory's name (`jbench cleanup`'s to remove after a kill).
pub const PREFIX: &str = ".jbench-qualify-";

pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh directory in `parent` (which must exist, be trusted, be writable and
    /// hold `size` bytes and some headroom).
    pub fn create(parent: &Path, size: u64) -> Result<Self> {
        let meta = std::fs::metadata(parent).with_context(|| {
            format!("cannot measure in {}: it does not exist", parent.display())
        })?;
        if !meta.is_dir() {
            bail!(
                "{} is not a directory; give a directory on the device to measure (qualify works in a scratch file there)",
                parent.display()
            );
        }
        crate::trust::check_trusted_dir(parent).with_context(|| {
            format!(
                "refusing to measure in {}: jbench writes only in directories it can trust. Pick another directory on the device, or make this one and its parents owned by root and not writable by others",
                parent.display()
            )
        })?;
        let free = crate::workload::sys::free_bytes(parent)?;
        if free < size + HEADROOM {
            bail!(
                "{} has {} free; qualify needs {} there ({} scratch file + {}). Free some space or pass a smaller --size.",
                parent.display(),
                crate::units::format_size(free),
                crate::units::format_size(size + HEADROOM),
                crate::units::format_size(size),
                crate::units::format_size(HEADROOM)
            );
        }
        let dir = parent.join(format!("{PREFIX}{}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EROFS) => bail!(
                "{} is on a read-only file system; qualify writes a scratch file there. Pick a writable directory on the device.",
                parent.display()
            ),
            Err(e) if e.kind() == ErrorKind::PermissionDenied => bail!(
                "cannot write in {} ({e}); qualify writes a scratch file there. Pick a directory jbench may write in.",
                parent.display()
            ),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => bail!(
                "{} already exists (another qualify of this process?); remove it and retry",
                dir.display()
            ),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {}", dir.display()))
            }
        }
        Ok(Self { dir })
    }

    /// Creates file `name` of `len` bytes (sparse) in the scratch directory.
    pub fn file(&self, name: &str, len: u64) -> Result<PathBuf> {
        let path = self.dir.join(name);
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        f.set_len(len)
            .with_context(|| format!("cannot size {}", path.display()))?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Only what this process made: the directory is 0700 and ours.
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            if e.kind() != ErrorKind::NotFound {
                crate::events::emit(crate::events::Event::ScratchLeft {
                    dir: self.dir.clone(),
                    error: e.to_string(),
                });
            }
        }
    }
}

/// Allocates `len` bytes of `path` without writing them (`fallocate`), where the file
/// system can; where it cannot, the file grows as it is written.
pub fn preallocate(path: &Path, len: u64) -> Result<()> {
    use std::os::fd::AsRawFd;
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    // SAFETY: a plain system call on an open descriptor.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) => {}
            Some(libc::ENOSPC) => bail!(
                "cannot lay out {}: the file system is full. Free some space or measure with a smaller --size.",
                path.display()
            ),
            _ => return Err(e).with_context(|| format!("cannot lay out {}", path.display())),
        }
    }
    Ok(())
}
