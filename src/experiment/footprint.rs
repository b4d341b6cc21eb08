//! The disk and memory a run needs at its peak, before it runs. Trials run one at a
//! time, so the peak is the largest trial's; what a run keeps (write logs of crash
//! recordings) adds up. Images are sparse: what counts is what a trial writes.

use crate::experiment::config::{Config, Placement};
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::workload::Workload;

/// Metadata mkfs and the workload's directories write beyond the payload.
const METADATA_BYTES: u64 = 32 << 20;

/// What one trial's images hold at most: the workload's data and inodes, the
/// journal as it cycles, and the file system's metadata.
pub fn image_fill(c: &Config, w: &dyn Workload) -> u64 {
    let journal = match c.placement {
        Placement::Internal | Placement::SameDisk | Placement::SecondDisk => c.journal_size,
        _ => 0,
    };
    w.peak_data_bytes()
        .saturating_add(w.peak_inodes().saturating_mul(4096))
        .saturating_add(journal)
        .saturating_add(METADATA_BYTES)
        .min(c.fs_size.saturating_add(journal))
}

/// What a trial needs free in `work_dir` (host images), as `jbench run` checks it:
/// the fill, with room for a journal rewritten in full.
pub fn work_dir_need(c: &Config, w: &dyn Workload) -> u64 {
    w.peak_data_bytes()
        .saturating_add(w.peak_inodes().saturating_mul(4096))
        .saturating_add(2 * c.journal_size + (64 << 20))
}

/// A crash recording's write log holds every block written: the data and inodes,
/// and each fsync's journal blocks and commit block (quick's 200 fsync'ed 4 KiB
/// files logged 8.4 MB; its small tree 2.0 MB).
pub fn write_log_bytes(w: &dyn Workload) -> u64 {
    let work = w.work();
    w.peak_data_bytes()
        .saturating_add(w.peak_inodes().saturating_mul(4096))
        .saturating_add(work.syncs.saturating_mul(8 * 4096))
        .saturating_add(1 << 20)
}

/// RAM a configuration holds for a RAM-disk or zram journal.
pub fn ram_journal(c: &Config) -> u64 {
    match c.placement {
        Placement::Ramdisk => c.ramdisk_size.unwrap_or(c.journal_size),
        Placement::Zram => c.journal_size,
        _ => 0,
    }
}

/// The peaks of a whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Free space the largest trial needs in `work_dir`.
    pub work_dir: u64,
    /// Emulated disks' images at their fullest, in `emulation.image_dir`.
    pub emulated_images: u64,
    /// RAM disks and zram devices of the largest trial.
    pub ram_journal: u64,
    /// The results directory: records, and the write logs of crash recordings.
    pub results: u64,
    /// True when `emulation.image_dir` is a tmpfs path by default (`/dev/shm`), so
    /// the images are memory.
    pub images_in_memory: bool,
}

impl Footprint {
    pub fn of(spec: &Spec, trials: &[Trial]) -> Footprint {
        let mut f = Footprint {
            images_in_memory: spec.emulation.image_dir.starts_with("/dev/shm"),
            results: 1 << 20,
            ..Default::default()
        };
        for t in trials {
            let c = &spec.configs[t.config];
            let w = spec.workloads[t.workload].engine.as_ref();
            let emulated = c.fs_model.is_some() && c.fs_device.is_none();
            if emulated {
                f.emulated_images = f.emulated_images.max(image_fill(c, w));
            } else if c.fs_device.is_none() {
                f.work_dir = f.work_dir.max(work_dir_need(c, w));
            }
            f.ram_journal = f.ram_journal.max(ram_journal(c));
            if t.recording {
                f.results = f.results.saturating_add(write_log_bytes(w));
            }
            f.results = f.results.saturating_add(64 << 10);
        }
        f
    }

    /// Memory the run holds at its peak besides the workload's page cache.
    pub fn memory(&self) -> u64 {
        self.ram_journal
            + if self.images_in_memory {
                self.emulated_images
            } else {
                0
            }
    }
}
