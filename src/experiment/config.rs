//! One point of the experiment matrix: everything the rig needs to build one file
//! system with its journal.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where the journal lives.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// No journal at all (ext4 `-O ^has_journal`): the non-journaled baseline.
    None,
    /// The classic journal inside the file system (`mke2fs -J size=`).
    #[default]
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
    pub const ALL: [Placement; 7] = [
        Placement::None,
        Placement::Internal,
        Placement::SameDisk,
        Placement::SecondDisk,
        Placement::Ramdisk,
        Placement::Zram,
        Placement::Device,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Placement::None => "none",
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

    /// The journal lives on a device of its own.
    pub fn is_external(self) -> bool {
        !matches!(self, Placement::Internal | Placement::None)
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The file system under test.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsType {
    #[default]
    Ext4,
    Ext3,
    Xfs,
}

impl FsType {
    pub fn as_str(self) -> &'static str {
        match self {
            FsType::Ext4 => "ext4",
            FsType::Ext3 => "ext3",
            FsType::Xfs => "xfs",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "ext4" => Ok(FsType::Ext4),
            "ext3" => Ok(FsType::Ext3),
            "xfs" => Ok(FsType::Xfs),
            "ext2" | "btrfs" => Err(format!(
                "`{text}` is not supported (supported: ext4, ext3, xfs; ext2 is ext4 with journal.placement = \"none\")"
            )),
            _ => Err(format!("unknown file system `{text}` (supported: ext4, ext3, xfs)")),
        }
    }

    /// ext3 and ext4, which e2fsprogs makes and jbd2 journals.
    pub fn is_ext(self) -> bool {
        matches!(self, FsType::Ext4 | FsType::Ext3)
    }
}

impl fmt::Display for FsType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// ext3/ext4 `data=` journaling mode.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataMode {
    #[default]
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

/// `Default` is only a blank to fill: every field is set from the spec's factors
/// (`spec::factors`), whose defaults are the ones that count.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Config {
    /// Made of the factor values that vary across the matrix; unique within a spec.
    pub label: String,
    pub fs_type: FsType,
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
    /// Size of the RAM disk the `ramdisk` journal is a region of; `None`: exactly the
    /// journal. A fixed size keeps the memory taken equal across journal sizes
    /// (Study 3's method).
    pub ramdisk_size: Option<u64>,
    /// ext4 `-O fast_commit`.
    pub fast_commit: bool,
    /// Journal commit interval (`commit=` mount option), seconds; `None`: the default.
    pub commit_seconds: Option<u32>,
    /// Memory cgroup limit the workload runs under.
    pub memory_limit: Option<u64>,
    /// Emulated disk the file system (and an internal or same-disk journal) lives on:
    /// its image is served through the device daemon with this model's timing.
    pub fs_model: Option<DeviceModelSpec>,
    /// Emulated disk of a `second-disk` or `ramdisk` journal.
    pub journal_model: Option<DeviceModelSpec>,
    /// `filesystem.second_size`: a second file system of this size (same type, its own
    /// internal journal of the same size and mode) on a disk of its own, mounted beside
    /// the first; the workload finds it in `$JBENCH_SECOND_FS`. `None`: no second one.
    pub second_fs_size: Option<u64>,
    /// The second file system's emulated disk (`filesystem.second_device_model`, else
    /// the file system's model).
    pub second_fs_model: Option<DeviceModelSpec>,
    /// `[[config]] env`: variables every command workload of this configuration gets
    /// (over the workload's own `env`), so an application's settings can be compared
    /// like a journal's.
    pub env: BTreeMap<String, String>,
    /// `[[config]] negative_control = true`: declared to lose promised data.
    pub negative_control: bool,
    /// `[[config]] torn_page_control = true`: declared to break at a torn page of file
    /// data (no torn-page protection); also a negative control.
    pub torn_page_control: bool,
}

/// A device model as the experiment names it: a built-in model, or an entry of the
/// `[models]` table (a built-in model with some parameters overridden).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceModelSpec {
    /// What the spec wrote: `hdd-7200`, or the name of a `[models]` entry.
    pub name: String,
    /// The built-in model it is made from (one of `emu::MODEL_NAMES`).
    pub model: String,
    /// Parameters that override the built-in model's defaults.
    pub params: toml::Table,
}

impl DeviceModelSpec {
    /// A built-in model with its defaults.
    pub fn builtin(name: &str) -> Self {
        Self {
            name: name.to_string(),
            model: name.to_string(),
            params: toml::Table::new(),
        }
    }
}

impl Config {
    /// What the journal records: `ordered`/`journal`/`writeback` for ext3/ext4,
    /// `none` without a journal, `metadata` for XFS (its log holds metadata only and
    /// it has no data= modes).
    pub fn mode_label(&self) -> &'static str {
        if self.placement == Placement::None {
            "none"
        } else if self.fs_type == FsType::Xfs {
            "metadata"
        } else {
            self.mode.as_str()
        }
    }

    /// Journal bytes as recorded: 0 without a journal.
    pub fn journal_bytes(&self) -> u64 {
        if self.placement == Placement::None {
            0
        } else {
            self.journal_size
        }
    }
}
