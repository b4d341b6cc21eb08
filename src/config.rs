//! One point of the experiment matrix: everything the rig needs to build one file
//! system with its journal.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::record::ConfigRecord;

/// Where the journal lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// The classic journal inside the file system (`mke2fs -J size=`).
    Internal,
    /// A region after the file system on the same image: the study's "partition 2 of
    /// the same drive".
    SameDisk,
    /// A separate image file, optionally on another file system (`second_disk_dir`).
    SecondDisk,
    /// A loop device over a file in tmpfs (`ramdisk_dir`, default /dev/shm).
    Ramdisk,
    /// A zram device that jbench adds with `hot_add` and removes afterwards.
    Zram,
    /// A real block device named by `journal.device`.
    Device,
}

impl Placement {
    pub const ALL: [Placement; 6] = [
        Placement::Internal,
        Placement::SameDisk,
        Placement::SecondDisk,
        Placement::Ramdisk,
        Placement::Zram,
        Placement::Device,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Internal => "internal",
            Placement::SameDisk => "same-disk",
            Placement::SecondDisk => "second-disk",
            Placement::Ramdisk => "ramdisk",
            Placement::Zram => "zram",
            Placement::Device => "device",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unknown placement `{text}` (use one of: {})",
                    Self::ALL.map(|p| p.as_str()).join(", ")
                )
            })
    }

    pub fn is_external(self) -> bool {
        self != Placement::Internal
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// ext3/ext4 `data=` journaling mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataMode {
    Ordered,
    Journal,
    Writeback,
}

impl DataMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DataMode::Ordered => "ordered",
            DataMode::Journal => "journal",
            DataMode::Writeback => "writeback",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "ordered" => Ok(DataMode::Ordered),
            "journal" => Ok(DataMode::Journal),
            "writeback" => Ok(DataMode::Writeback),
            _ => Err(format!(
                "unknown journal mode `{text}` (use ordered, journal or writeback)"
            )),
        }
    }
}

impl fmt::Display for DataMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Made of the factor values that vary across the matrix; unique within a spec.
    pub label: String,
    pub fs_type: String,
    pub fs_size: u64,
    /// A real device for the file system instead of an image.
    pub fs_device: Option<PathBuf>,
    pub mkfs_options: Vec<String>,
    pub mount_options: Vec<String>,
    pub placement: Placement,
    pub journal_size: u64,
    pub mode: DataMode,
    /// A real device for the journal (`placement = "device"`).
    pub journal_device: Option<PathBuf>,
    /// Directory for the second-disk image; `None` means the work directory.
    pub second_disk_dir: Option<PathBuf>,
    /// tmpfs directory for the `ramdisk` placement's backing file.
    pub ramdisk_dir: PathBuf,
}

impl Config {
    pub fn record(&self) -> ConfigRecord {
        ConfigRecord {
            label: self.label.clone(),
            filesystem: self.fs_type.clone(),
            fs_size: self.fs_size,
            placement: self.placement.as_str().to_string(),
            journal_size: self.journal_size,
            mode: self.mode.as_str().to_string(),
            mkfs_options: self.mkfs_options.clone(),
            mount_options: self.mount_options.clone(),
        }
    }
}
