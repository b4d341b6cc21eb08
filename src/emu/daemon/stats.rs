//! `.stats`: what the daemon counted for each disk since timing was last turned on.

use serde::{Deserialize, Serialize};

use super::DiskSpec;
use crate::emu::model::{below_floor, DeviceModel, Kind, Request, Service, FUSE_FLOOR};

/// Counters of one emulated disk since timing was last turned on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskStats {
    pub name: String,
    pub model: String,
    /// The model answers some requests faster than the FUSE path can (see
    /// `emu::FUSE_FLOOR`): those requests take the path's time, not the model's.
    pub below_floor: bool,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub discards: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Requests the model served from the drive's cache.
    pub cached: u64,
    /// Sum of the model's response times (including waits behind earlier requests).
    pub response_seconds: f64,
    pub seek_seconds: f64,
    pub rotation_seconds: f64,
    pub transfer_seconds: f64,
    /// Answers sent later than their deadline by more than 1 ms (the host was slow).
    pub late: u64,
    /// Time the daemon spent applying requests to the image (pread, pwrite,
    /// fallocate), inside the model's time when the model is slower.
    #[serde(default)]
    pub io_seconds: f64,
    /// Requests the model answered faster than the FUSE path can (`emu::FUSE_FLOOR`):
    /// they took the path's time instead.
    pub floor_bound: u64,
    /// How much longer than the model said those requests took, at least (the floor
    /// minus the model's time, summed).
    pub floor_excess_seconds: f64,
}

/// `.stats`: what the daemon did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DaemonStats {
    /// Whether model timing is on.
    pub timing: bool,
    pub disks: Vec<DiskStats>,
    #[serde(default)]
    pub log_records: u64,
    #[serde(default)]
    pub log_bytes: u64,
}

impl DiskStats {
    /// Zeroed counters of disk `spec`, served by `model`.
    pub(super) fn fresh(spec: &DiskSpec, model: &dyn DeviceModel) -> Self {
        DiskStats {
            name: spec.name.clone(),
            model: spec.model.clone(),
            below_floor: below_floor(model),
            ..DiskStats::default()
        }
    }

    /// Counts `req` by kind and size.
    pub(super) fn count(&mut self, req: &Request) {
        match req.kind {
            Kind::Read => {
                self.reads += 1;
                self.read_bytes += req.len;
            }
            Kind::Write => {
                self.writes += 1;
                self.write_bytes += req.len;
            }
            Kind::Flush => self.flushes += 1,
            Kind::Discard => self.discards += 1,
        }
    }

    /// Adds the model's answer `svc` to the time counters.
    pub(super) fn add_service(&mut self, svc: &Service) {
        self.cached += svc.cached as u64;
        self.response_seconds += svc.duration.as_secs_f64();
        self.seek_seconds += svc.seek.as_secs_f64();
        self.rotation_seconds += svc.rotation.as_secs_f64();
        self.transfer_seconds += svc.transfer.as_secs_f64();
        if svc.duration < FUSE_FLOOR {
            self.floor_bound += 1;
            self.floor_excess_seconds += (FUSE_FLOOR - svc.duration).as_secs_f64();
        }
    }
}
