//! Emulated block devices (issue 4): models of the studies' hardware — 7200 rpm disks,
//! SATA and NVMe SSDs, NVRAM, RAM — that say how long each request should take, and
//! the user-space daemon that serves image files as block devices with that timing.

pub mod daemon;
pub mod model;
pub mod writelog;

use std::time::Duration;

pub use model::{
    below_floor, default_params, keeps_contents, model_by_name, model_for_disk, params_for_disk,
    power_cut, predicted, predicted_set, spans_disk, CalibrationRun, DeviceModel, FixedParams,
    HddParams, Kind, ModelError, Pattern, PowerCut, Prediction, RaidParams, RamParams, Request,
    Service, FUSE_FLOOR, MODEL_NAMES,
};

/// The `[emulation]` table of an experiment: how emulated disks are served.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulationOptions {
    /// Record every write, flush and discard of every emulated disk of a trial in one
    /// ordered log (docs/write-log.md). Off by default: it costs time and space.
    pub write_log: bool,
    /// Abort the daemon's FUSE connection when it has not answered a probe for this
    /// long, so the workload gets EIO instead of hanging.
    pub watchdog: Duration,
    /// Pin the daemon and the workload to different CPUs when there are two or more.
    pub pin_cpus: bool,
    /// Where emulated disks' images are made: a tmpfs by default. The daemon's image
    /// writes then never wait on the host's dirty-page throttling, which counts the
    /// emulated file system's own dirty pages, pages only the daemon can clean
    /// (docs/devices.md, "Why the emulated disk never stalls").
    pub image_dir: std::path::PathBuf,
    /// Let the daemon poll for requests where a CPU can be spared (docs/devices.md,
    /// "Polling"): 2.6-2.7 µs off each request's floor on the development VM (15.3 ->
    /// 12.6 µs reads, 12.7 µs writes), one CPU kept busy.
    pub poll: bool,
}

/// Default of `[emulation] image_dir`.
pub const DEFAULT_IMAGE_DIR: &str = "/dev/shm";

impl Default for EmulationOptions {
    fn default() -> Self {
        Self {
            write_log: false,
            watchdog: Duration::from_secs(30),
            pin_cpus: true,
            image_dir: DEFAULT_IMAGE_DIR.into(),
            poll: true,
        }
    }
}
