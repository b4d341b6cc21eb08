//! Device models: how long one request to an emulated disk takes.
//!
//! A model sees one request at a time (the daemon serialises the requests of one
//! emulated disk: one actuator per disk) and answers with a [`Service`] whose
//! `duration` is how long after `now` the request completes. Models are pure and
//! deterministic: the same parameters (including `seed`) and the same request stream
//! with the same `now` values give the same answers, so emulated trials repeat.
//!
//! Conventions shared by every model:
//! - `now` is the time since the emulated disk started, taken when the request is
//!   handed to the model. If it is earlier than the end of the previous request (the
//!   caller did not wait), the request queues behind it and the wait is part of the
//!   answer, so one actuator never serves two requests at once.
//! - Zero-length reads and writes cost nothing and change no state.
//! - Offsets beyond a positional model's capacity are clamped to its last position
//!   (served as if at the innermost track); a model never fails or panics. The
//!   daemon, not the model, refuses I/O beyond the backing image.
//! - 1 MB = 10^6 bytes in every `*_mb_per_s` parameter, as in drive data sheets.
//!
//! The FUSE path itself costs something per request (the floor: measured when a loop
//! device is attached, see `rig::emulated::DeviceDaemon::measure_path`; [`FUSE_FLOOR`] when
//! it was not), so a model whose [`DeviceModel::min_service`] is below it cannot be
//! emulated faithfully for its fastest requests; [`below_floor`] lets the daemon flag it.
//!
//! This file holds what every model shares (the request, the answer, the trait); each
//! model family has its own file (`hdd`, `raid`, `fixed`, `ram`) declaring its kind, `kind`
//! names them all and builds one by name, `registry` overrides a model's parameters, and `predict` runs calibration streams
//! through a model to say what `jbench device calibrate` should measure.

use std::time::Duration;

mod declare;
mod error;
mod fixed;
mod hdd;
mod kind;
#[cfg(test)]
mod made_up;
mod predict;
mod raid;
mod ram;
mod registry;

pub use error::ModelError;
pub use fixed::{FixedModel, FixedParams};
pub use hdd::{HddModel, HddParams};
pub use kind::{
    default_params, keeps_contents, model_by_name, model_for_disk, model_kind, params_for_disk,
    power_cut, spans_disk, CacheWords, ModelKind, PowerCut, MODELS, MODEL_NAMES,
};
pub use predict::{predicted, predicted_set, CalibrationRun, Pattern, Prediction};
pub use raid::{RaidModel, RaidParams};
pub use ram::{RamModel, RamParams};

/// What one request is assumed to cost in the FUSE + loop path before any model delay
/// when the path was not measured (issue 4: about 9k QD1 4 KiB IOPS with no injected
/// latency, i.e. ~100 µs per request). A trial and `jbench device calibrate` measure
/// it instead (`PathCost`); this figure is only the fallback for a daemon never told.
pub const FUSE_FLOOR: Duration = Duration::from_micros(100);

const MB: f64 = 1e6;
const KIB4: u64 = 4096;
const MIB1: u64 = 1 << 20;

/// What a request asks the device to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    /// Make every acknowledged write durable (FUA arrives as write + flush).
    Flush,
    /// Punch-hole / TRIM: `offset` and `len` name the range.
    Discard,
}

/// As errors and reports name it: "a read", "a write", "a flush", "a discard".
impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Read => "a read",
            Kind::Write => "a write",
            Kind::Flush => "a flush",
            Kind::Discard => "a discard",
        })
    }
}

/// One block request, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub kind: Kind,
    pub offset: u64,
    pub len: u64,
}

impl Request {
    pub fn read(offset: u64, len: u64) -> Self {
        Request {
            kind: Kind::Read,
            offset,
            len,
        }
    }
    pub fn write(offset: u64, len: u64) -> Self {
        Request {
            kind: Kind::Write,
            offset,
            len,
        }
    }
    pub fn flush() -> Self {
        Request {
            kind: Kind::Flush,
            offset: 0,
            len: 0,
        }
    }
    pub fn discard(offset: u64, len: u64) -> Self {
        Request {
            kind: Kind::Discard,
            offset,
            len,
        }
    }
}

/// The model's answer. `duration` is what the daemon waits; the parts say where the
/// media time went (summed over every media access the request caused, e.g. all the
/// cached writes a flush drained) and are there for tests and reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Service {
    /// From `now` to completion, including any wait behind the previous request.
    pub duration: Duration,
    pub seek: Duration,
    pub rotation: Duration,
    pub transfer: Duration,
    /// Served by the drive's cache without touching the media.
    pub cached: bool,
}

impl Service {
    /// A request that needs no media access and takes `d`.
    fn cache_hit(d: Duration) -> Self {
        Service {
            duration: d,
            cached: true,
            ..Service::default()
        }
    }

    /// `self`, then `next`, back to back.
    fn then(self, next: Service) -> Self {
        Service {
            duration: self.duration + next.duration,
            seek: self.seek + next.seek,
            rotation: self.rotation + next.rotation,
            transfer: self.transfer + next.transfer,
            cached: self.cached && next.cached,
        }
    }
}

/// An emulated device: how long each request takes.
pub trait DeviceModel: Send {
    /// The model's name as given to [`model_by_name`].
    fn name(&self) -> &'static str;
    /// Serve `req`, which the daemon hands over at `now`; see the module notes.
    fn service(&mut self, req: &Request, now: Duration) -> Service;
    /// The shortest service this model gives a non-empty request of 4 KiB (its
    /// fastest case: a cache hit, a sequential read). Compare with the path's floor.
    fn min_service(&self) -> Duration;
    /// Capacity the model's geometry is laid over; `None` when position is irrelevant.
    fn capacity_bytes(&self) -> Option<u64> {
        None
    }
    /// Whether an acknowledged write can sit in a volatile cache, durable only once a
    /// flush covers it (what a power cut can lose). The write log's header says it of
    /// each disk, for crash testing.
    fn volatile_cache(&self) -> bool;
    /// `false` for a disk that lies about flushes: a flush is answered without making
    /// its volatile cache durable.
    fn honors_flush(&self) -> bool {
        true
    }
    /// Its cache and flush in `env.json`'s words, from its parameters.
    fn cache_words(&self) -> CacheWords;
}

/// True when some requests of `model` should complete faster than a FUSE path whose
/// 4 KiB round trip is `floor` can answer at all, so measured times would be the
/// floor's, not the model's.
pub fn below_floor(model: &dyn DeviceModel, floor: Duration) -> bool {
    model.min_service() < floor
}

/// Seconds to a `Duration`, never panicking: negative or NaN give zero, huge saturate.
fn secs(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

fn ms(v: f64) -> Duration {
    secs(v / 1e3)
}

fn us(v: f64) -> Duration {
    secs(v / 1e6)
}

/// Time to move `len` bytes at `mb_per_s`.
fn transfer_time(len: u64, mb_per_s: f64) -> Duration {
    secs(len as f64 / (mb_per_s * MB))
}

/// Fractional part in [0, 1).
fn frac(x: f64) -> f64 {
    let f = x - x.floor();
    if f >= 1.0 {
        0.0
    } else {
        f
    }
}

#[cfg(test)]
mod tests;
