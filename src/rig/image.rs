//! Sparse image files, removed on drop.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::rig::mounts::{self, MountEntry};
use crate::rig::session;

/// Refuses an image whose directory lies on a file system jbench itself is testing
/// (mounted inside a session directory) or serving (the device daemon's FUSE mount):
/// its I/O would be measured twice, or deadlock on itself.
pub fn check_backing_dir(path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(path);
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match backing_dir_problem(&dir, &mounts::mounts(), &|t| {
        session::session_of(t).is_some()
    }) {
        Some(problem) => anyhow::bail!("{problem}"),
        None => Ok(()),
    }
}

/// Why `dir` cannot hold images, given the mount table and a test for "this mount
/// point is inside a jbench session directory".
pub fn backing_dir_problem(
    dir: &Path,
    mounts: &[MountEntry],
    in_session: &dyn Fn(&Path) -> bool,
) -> Option<String> {
    let m = mounts
        .iter()
        .filter(|m| dir.starts_with(&m.target))
        .max_by_key(|m| m.target.components().count())?;
    let emulated = m.source == crate::emu::daemon::SUBTYPE;
    if emulated || (m.target != Path::new("/") && in_session(&m.target)) {
        return Some(format!(
            "{} is on {} mounted on {}, a file system jbench is testing or serving; image files \
             must not live on it. Point work_dir, second_disk_dir or ramdisk_dir elsewhere.",
            dir.display(),
            m.source,
            m.target.display()
        ));
    }
    None
}

#[derive(Debug)]
pub struct ImageFile {
    path: PathBuf,
    released: bool,
}

impl ImageFile {
    /// Creates a sparse file of `size` bytes; refuses to reuse an existing one.
    pub fn create(path: &Path, size: u64) -> Result<Self> {
        check_backing_dir(path)?;
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create image {}", path.display()))?;
        f.set_len(size)
            .with_context(|| format!("cannot size image {} to {size} bytes", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            released: false,
        })
    }

    /// Removes the file; a file already gone is fine.
    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        match fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot remove image {}", self.path.display()))
            }
        }
        self.released = true;
        Ok(())
    }

    /// Like [`Self::create`], with every byte allocated (on tmpfs: the memory taken
    /// now, not as the journal fills).
    pub fn create_allocated(path: &Path, size: u64) -> Result<Self> {
        let image = Self::create(path, size)?;
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open image {}", path.display()))?;
        nix::fcntl::fallocate(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            nix::fcntl::FallocateFlags::empty(),
            0,
            size as i64,
        )
        .with_context(|| format!("cannot allocate {size} bytes for {}", path.display()))?;
        Ok(image)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ImageFile {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            eprintln!("jbench: {e:#}");
        }
    }
}
