//! Which file an open descriptor is: device and inode numbers. The loop devices of the
//! rig and the emulated disks' daemon both check by it that the file they were handed
//! is the one that was named, so it stands below both.

use std::fs::File;
use std::os::fd::AsRawFd;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Which file: device and inode numbers, as `stat` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl FileId {
    pub fn of(file: &File) -> Result<Self> {
        let st = nix::sys::stat::fstat(file.as_raw_fd()).context("cannot stat an open file")?;
        Ok(Self {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
        })
    }
}
