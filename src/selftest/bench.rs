//! One emulated disk served on its own, as a trial serves it, for the device tools
//! (`device calibrate`, `device qualify --model`): the image where a trial's goes, a
//! device daemon pinned away from the caller, the loop device over it, and the path's
//! cost measured right after the attach.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::emu::daemon::{DiskSpec, PathCost};
use crate::emu::EmulationOptions;
use crate::file_id::FileId;
use crate::rig::emulated::{self, DeviceDaemon};
use crate::rig::image::ImageFile;
use crate::rig::loopdev::LoopDevice;
use crate::rig::session::SessionDir;

/// Where and what to serve.
pub struct DiskOptions {
    /// The built-in model and its parameters.
    pub model: String,
    pub params: toml::Table,
    pub size: u64,
    /// The session directory (mount point, daemon files) goes here.
    pub work_dir: PathBuf,
    /// The image goes here, as a trial's `[emulation] image_dir`.
    pub image_dir: PathBuf,
}

/// The sessions and the image of a served disk: kept across [`Served`] restarts (the
/// write-log run of `calibrate` serves the same image again).
pub struct Backing {
    // Dropped in this order: the image, then its session, then the daemon's.
    image: ImageFile,
    _image_session: SessionDir,
    session: SessionDir,
    id: FileId,
}

impl Backing {
    pub fn create(opts: &DiskOptions) -> Result<Self> {
        let session = SessionDir::create(&opts.work_dir)?;
        let image_session = SessionDir::create(&opts.image_dir)?;
        let image = ImageFile::create(&image_session, "dut.img", opts.size)?;
        let id = FileId::of(image.file())?;
        Ok(Self {
            image,
            _image_session: image_session,
            session,
            id,
        })
    }

    pub fn image(&self) -> &Path {
        self.image.path()
    }

    pub fn session(&self) -> &SessionDir {
        &self.session
    }
}

/// A running daemon serving the disk, and its loop device.
pub struct Served {
    pub daemon: DeviceDaemon,
    pub device: LoopDevice,
    /// The path's cost, which the daemon takes off every answer.
    pub path: PathCost,
}

impl Served {
    /// Serves `backing`'s image with `opts`'s model; with `log`, a write log in its
    /// session.
    pub fn start(backing: &Backing, opts: &DiskOptions, log: Option<PathBuf>) -> Result<Self> {
        let disks = [DiskSpec {
            name: "dut".into(),
            image: backing.image().to_path_buf(),
            model: opts.model.clone(),
            params: opts.params.clone(),
            image_id: Some(backing.id),
        }];
        let cpus = emulated::split_cpus(&emulated::allowed_cpus())
            .map(|(d, _)| d)
            .unwrap_or_default();
        let daemon = DeviceDaemon::start(
            &backing.session,
            &disks,
            &EmulationOptions::default(),
            cpus,
            log,
        )?;
        let device = daemon.attach_disk("dut", 0, None)?;
        // As a trial does: the path measured right after the attach, timing off.
        let path = daemon.measure_path("dut", &device)?;
        Ok(Self {
            daemon,
            device,
            path,
        })
    }

    pub fn stop(mut self) -> Result<()> {
        self.device.release()?;
        self.daemon.release()
    }
}

/// Pins the calling thread away from the daemon's CPU, as a trial's workload is;
/// returns the CPUs to restore, `None` when there is nothing to separate.
pub fn pin_away_from_daemon() -> Result<Option<Vec<usize>>> {
    match emulated::split_cpus(&emulated::allowed_cpus()) {
        Some((_, mine)) => Ok(Some(emulated::pin_current_thread(&mine)?)),
        None => Ok(None),
    }
}

/// Undoes [`pin_away_from_daemon`].
pub fn unpin(restore: Option<Vec<usize>>) {
    if let Some(cpus) = restore {
        let _ = emulated::pin_current_thread(&cpus);
    }
}
