//! One emulated disk: its backing image (checked to be the one jbench created) and its
//! model, rebuilt fresh whenever timing is turned on.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::overlay::Overlay;
use super::{DiskSpec, DiskStats, PathCost};
use crate::emu::model::{model_for_disk, DeviceModel};
use crate::file_id::FileId;

pub(super) struct DiskState {
    pub(super) model: Box<dyn DeviceModel>,
    /// Model time zero.
    pub(super) start: Instant,
    pub(super) stats: DiskStats,
    /// The path's measured cost (the `path` control command): taken off every
    /// deadline, and the floor the counters flag requests against. Kept across
    /// `timing on`.
    pub(super) path: Option<PathCost>,
    /// While the path is measured (timing off): answer every request this long after
    /// its arrival, through the completion thread as a timed answer goes.
    pub(super) probe_delay: Option<std::time::Duration>,
}

pub(super) struct Disk {
    pub(super) spec: DiskSpec,
    pub(super) image: File,
    pub(super) size: u64,
    pub(super) state: Mutex<DiskState>,
    /// Serving crash states: every write goes to this overlay, never to the image.
    pub(super) overlay: Option<Mutex<Overlay>>,
    /// The rig is measuring the path on this disk (`path NAME probe on`): its requests
    /// (reads, writes of the bytes just read, flushes) stay out of the write log.
    pub(super) probing: std::sync::atomic::AtomicBool,
    /// Every answer's lateness since timing was last turned on.
    pub(super) lateness: super::stats::LatenessCounters,
}

impl Disk {
    pub(super) fn open(spec: &DiskSpec, overlay: bool) -> Result<Self> {
        let image = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&spec.image)
            .with_context(|| format!("cannot open disk image {}", spec.image.display()))?;
        if let Some(want) = spec.image_id {
            let got = FileId::of(&image)?;
            if got != want {
                bail!(
                    "disk image {} is inode {} on dev {}, not the image jbench created (inode {} on dev {}): the session directory was changed while jbench worked; refusing to serve it",
                    spec.image.display(),
                    got.ino,
                    got.dev,
                    want.ino,
                    want.dev
                );
            }
        }
        let size = image.metadata()?.len();
        if size == 0 || size % 4096 != 0 {
            bail!(
                "disk image {} is {size} bytes; it must be a non-zero multiple of 4096",
                spec.image.display()
            );
        }
        let model = build_model(spec, size)?;
        let stats = DiskStats::fresh(spec, model.as_ref(), None);
        Ok(Self {
            spec: spec.clone(),
            image,
            size,
            state: Mutex::new(DiskState {
                model,
                start: Instant::now(),
                stats,
                path: None,
                probe_delay: None,
            }),
            overlay: overlay.then(|| Mutex::new(Overlay::default())),
            probing: std::sync::atomic::AtomicBool::new(false),
            lateness: Default::default(),
        })
    }

    pub(super) fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match &self.overlay {
            Some(o) => lock(o).read_at(&self.image, buf, offset),
            None => self.image.read_exact_at(buf, offset),
        }
    }

    pub(super) fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        match &self.overlay {
            Some(o) => lock(o).write_at(&self.image, Some(data), offset, data.len() as u64),
            None => self.image.write_all_at(data, offset),
        }
    }

    /// Zeros `len` bytes at `offset`: a hole punched in the image (`punch`) or a
    /// zeroed range; in the overlay both are zeros.
    pub(super) fn zero_range(&self, offset: u64, len: u64, punch: bool) -> io::Result<()> {
        if let Some(o) = &self.overlay {
            return lock(o).write_at(&self.image, None, offset, len);
        }
        let flags = if punch {
            nix::fcntl::FallocateFlags::FALLOC_FL_PUNCH_HOLE
                | nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE
        } else {
            nix::fcntl::FallocateFlags::FALLOC_FL_ZERO_RANGE
                | nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE
        };
        nix::fcntl::fallocate(
            std::os::fd::AsRawFd::as_raw_fd(&self.image),
            flags,
            offset as i64,
            len as i64,
        )
        .map(|_| ())
        .map_err(io::Error::from)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A model for a disk of `size` bytes: a positional model's geometry spans the whole
/// image unless the spec sets `capacity_bytes`, as the studies' partitions spanned
/// their drives.
pub fn build_model(spec: &DiskSpec, size: u64) -> Result<Box<dyn DeviceModel>> {
    model_for_disk(&spec.model, &spec.params, size)
        .map_err(|e| anyhow::anyhow!("disk `{}`: {e}", spec.name))
}
