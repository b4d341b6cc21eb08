//! Sparse image files, removed on drop.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

#[derive(Debug)]
pub struct ImageFile {
    path: PathBuf,
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
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ImageFile {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("jbench: cannot remove image {}: {e}", self.path.display());
            }
        }
    }
}
