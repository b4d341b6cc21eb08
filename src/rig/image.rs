//! Sparse image files, removed on drop.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

#[derive(Debug)]
pub struct ImageFile {
    path: PathBuf,
    released: bool,
}

impl ImageFile {
    /// Creates a sparse file of `size` bytes; refuses to reuse an existing one.
    pub fn create(path: &Path, size: u64) -> Result<Self> {
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
