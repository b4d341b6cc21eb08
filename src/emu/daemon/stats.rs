//! `.stats`: what the daemon counted for each disk since timing was last turned on.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::path::{floor_4k, PathCost};
use super::DiskSpec;
use crate::emu::model::{below_floor, DeviceModel, Kind, Request, Service};

/// A request is *overdue* when its answer goes out more than this after the deadline
/// its disk's model gave it (arrival + the model's response time, waits behind the
/// disk's earlier requests included). Measured from the deadline, so it covers the
/// daemon's image I/O (which starts on arrival) and a late completion thread alike;
/// an image I/O call that takes longer than this is counted too (`slow_io`), because
/// while the FUSE thread is blocked the kernel's later requests wait where the daemon
/// cannot see them. A trial with either is failed as *stalled* (docs/devices.md,
/// "Stalls"): its times are the host's, not the model's.
///
/// Why 1 s: a healthy daemon answers within 1 ms of the deadline (`late` counts the
/// exceptions, and a busy host's are tens of ms), so 1 s is far outside any scheduling
/// noise; and it is a flat bound, not a multiple of the model's time, because that
/// time includes queueing — a deep queue on an `hdd-7200` gives model times of
/// seconds, and 100 times that would let a stall through that is as long as the
/// watchdog's 30 s. One stall of a second is already a large part of the short phases
/// the presets time.
pub const OVERDUE_AFTER: Duration = Duration::from_secs(1);

/// Answers later than their deadline by more than this are counted as `late`.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// The upper bounds, in µs, of the lateness distribution's buckets
/// ([`DiskStats::lateness`]); a last bucket holds the answers later than the last.
pub const LATENESS_BOUNDS_US: [u64; 5] = [100, 1_000, 10_000, 100_000, 1_000_000];

/// Every answer's lateness, counted without a lock (the completion thread adds to it
/// as each answer goes out); read into [`Lateness`].
#[derive(Debug, Default)]
pub(super) struct LatenessCounters {
    buckets: [std::sync::atomic::AtomicU64; LATENESS_BOUNDS_US.len() + 1],
    total_ns: std::sync::atomic::AtomicU64,
}

impl LatenessCounters {
    pub(super) fn add(&self, lateness: Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        let us = lateness.as_micros() as u64;
        let i = LATENESS_BOUNDS_US
            .iter()
            .position(|&b| us <= b)
            .unwrap_or(LATENESS_BOUNDS_US.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.total_ns.fetch_add(lateness.as_nanos() as u64, Relaxed);
    }

    pub(super) fn reset(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        for b in &self.buckets {
            b.store(0, Relaxed);
        }
        self.total_ns.store(0, Relaxed);
    }

    pub(super) fn read(&self) -> Lateness {
        use std::sync::atomic::Ordering::Relaxed;
        Lateness {
            bounds_us: LATENESS_BOUNDS_US.to_vec(),
            answers: self.buckets.iter().map(|b| b.load(Relaxed)).collect(),
            total_seconds: self.total_ns.load(Relaxed) as f64 / 1e9,
        }
    }
}

/// How late the disk's answers went out after their deadlines, all of them: how many
/// fell at or under each bound, and the lateness summed. On a busy host the daemon
/// still answers on time (its threads run at real-time priority); this shows that it
/// did, while the trial's CPU wait shows what the host did to the rest of the path
/// (docs/devices.md, "A busy host").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lateness {
    /// Upper bounds of the buckets, µs.
    pub bounds_us: Vec<u64>,
    /// Answers per bucket: at most `bounds_us[0]` late, ..., and (the last) later than
    /// every bound.
    pub answers: Vec<u64>,
    /// The lateness of every answer, summed, in seconds.
    pub total_seconds: f64,
}

/// Whether an answer sent `lateness` after its deadline is overdue ([`OVERDUE_AFTER`]).
pub fn is_overdue(lateness: Duration) -> bool {
    lateness > OVERDUE_AFTER
}

/// Counters of one emulated disk since timing was last turned on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskStats {
    pub name: String,
    pub model: String,
    /// The model answers some requests faster than the FUSE path can (its fastest
    /// 4 KiB request is below the measured floor, `path.floor_4k_us`, or below
    /// `emu::FUSE_FLOOR` when the path was not measured): those requests take the
    /// path's time, not the model's.
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
    /// Answers sent more than [`OVERDUE_AFTER`] after their deadline, and answers
    /// still waiting that long when the counters were read: the daemon stalled.
    #[serde(default)]
    pub overdue: u64,
    /// How far past its deadline the worst answer went out, in ms (only answers more
    /// than 1 ms late are looked at; 0: none was).
    #[serde(default)]
    pub worst_late_ms: f64,
    /// When that answer's deadline was, in seconds after timing was turned on.
    #[serde(default)]
    pub worst_late_at_seconds: f64,
    /// Image I/O calls (pread, pwrite, fallocate) that took longer than
    /// [`OVERDUE_AFTER`]: the daemon's FUSE thread was blocked, and requests the
    /// kernel had for it waited unseen.
    #[serde(default)]
    pub slow_io: u64,
    /// The longest image I/O call, in ms.
    #[serde(default)]
    pub worst_io_ms: f64,
    /// Time the daemon spent applying requests to the image (pread, pwrite,
    /// fallocate), inside the model's time when the model is slower.
    #[serde(default)]
    pub io_seconds: f64,
    /// Requests the model answered faster than the FUSE path can (the measured floor
    /// for their size, else `emu::FUSE_FLOOR`): they took the path's time instead.
    pub floor_bound: u64,
    /// How much longer than the model said those requests took, at least (the floor
    /// minus the model's time, summed).
    pub floor_excess_seconds: f64,
    /// The path's measured cost, which the daemon takes off every deadline; `None`:
    /// never measured (no compensation, `emu::FUSE_FLOOR` assumed for the flags).
    #[serde(default)]
    pub path: Option<PathCost>,
    /// Every answer's lateness, as a distribution (`None` in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness: Option<Lateness>,
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
    /// How the daemon reads requests (polling or asleep in `/dev/fuse`), and why.
    #[serde(default)]
    pub read_mode: super::polling::ReadMode,
}

impl DiskStats {
    /// Zeroed counters of disk `spec`, served by `model` over a path that costs `path`.
    pub(super) fn fresh(spec: &DiskSpec, model: &dyn DeviceModel, path: Option<PathCost>) -> Self {
        DiskStats {
            name: spec.name.clone(),
            model: spec.model.clone(),
            below_floor: below_floor(model, floor_4k(path)),
            path,
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

    /// Whether the daemon stalled while serving this disk: an overdue answer or an
    /// image I/O call longer than [`OVERDUE_AFTER`].
    pub fn stalled(&self) -> bool {
        self.overdue > 0 || self.slow_io > 0
    }

    /// Counts an answer sent `lateness` after its deadline, which fell `at` after
    /// timing was turned on: `late`, `overdue` and the worst lateness. Answers at most
    /// [`LATE_AFTER`] late are not counted (the caller need not even lock the state).
    pub(super) fn answered_late(&mut self, lateness: Duration, at: Duration) {
        if lateness <= LATE_AFTER {
            return;
        }
        self.late += 1;
        if is_overdue(lateness) {
            self.overdue += 1;
        }
        let ms = lateness.as_secs_f64() * 1e3;
        if ms > self.worst_late_ms {
            self.worst_late_ms = ms;
            self.worst_late_at_seconds = at.as_secs_f64();
        }
    }

    /// Counts an image I/O call (with whatever waited before it on arrival) that took
    /// `took`.
    pub(super) fn add_io(&mut self, took: Duration) {
        self.io_seconds += took.as_secs_f64();
        let ms = took.as_secs_f64() * 1e3;
        self.worst_io_ms = self.worst_io_ms.max(ms);
        if took > OVERDUE_AFTER {
            self.slow_io += 1;
        }
    }

    /// Adds the model's answer `svc` to `req` to the time counters; `floor` is what
    /// the path alone costs `req`.
    pub(super) fn add_service(&mut self, svc: &Service, floor: Duration) {
        self.cached += svc.cached as u64;
        self.response_seconds += svc.duration.as_secs_f64();
        self.seek_seconds += svc.seek.as_secs_f64();
        self.rotation_seconds += svc.rotation.as_secs_f64();
        self.transfer_seconds += svc.transfer.as_secs_f64();
        if svc.duration < floor {
            self.floor_bound += 1;
            self.floor_excess_seconds += (floor - svc.duration).as_secs_f64();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_bound_is_one_second_past_the_deadline() {
        assert!(!is_overdue(Duration::ZERO));
        assert!(!is_overdue(ms(999)));
        assert!(!is_overdue(OVERDUE_AFTER), "at the bound is not past it");
        assert!(is_overdue(OVERDUE_AFTER + Duration::from_micros(1)));
        assert!(is_overdue(Duration::from_secs(192)));
    }

    #[test]
    fn every_answer_falls_in_one_bucket_of_the_lateness_distribution() {
        let c = LatenessCounters::default();
        let us = Duration::from_micros;
        for l in [us(0), us(100), us(101), us(5_000), us(2_000_000)] {
            c.add(l);
        }
        let l = c.read();
        assert_eq!(l.bounds_us, LATENESS_BOUNDS_US);
        // At most 100 µs (the bound itself included), at most 1 ms, ..., past 1 s.
        assert_eq!(l.answers, [2, 1, 1, 0, 0, 1]);
        assert!((l.total_seconds - 2.005_201).abs() < 1e-9, "{l:?}");
        c.reset();
        assert_eq!(c.read().answers, [0; 6]);
    }

    #[test]
    fn late_answers_are_counted_and_overdue_ones_make_the_disk_stalled() {
        let mut d = DiskStats::default();
        // On time, or within a millisecond: not counted at all.
        d.answered_late(Duration::ZERO, ms(5));
        d.answered_late(LATE_AFTER, ms(5));
        assert_eq!(d, DiskStats::default());
        // A busy host: late, not overdue.
        d.answered_late(ms(40), ms(100));
        assert_eq!((d.late, d.overdue), (1, 0));
        assert_eq!((d.worst_late_ms, d.worst_late_at_seconds), (40.0, 0.1));
        assert!(!d.stalled());
        // A stall: overdue, and the worst, with when it was due.
        d.answered_late(ms(3_000), ms(2_500));
        d.answered_late(ms(1_500), ms(4_000));
        assert_eq!((d.late, d.overdue), (3, 2));
        assert_eq!((d.worst_late_ms, d.worst_late_at_seconds), (3_000.0, 2.5));
        assert!(d.stalled());
    }

    #[test]
    fn a_long_image_io_call_makes_the_disk_stalled() {
        let mut d = DiskStats::default();
        d.add_io(ms(2));
        d.add_io(OVERDUE_AFTER);
        assert_eq!(d.slow_io, 0);
        assert!(!d.stalled());
        d.add_io(ms(2_500));
        assert_eq!(d.slow_io, 1);
        assert_eq!(d.worst_io_ms, 2_500.0);
        assert!((d.io_seconds - 3.502).abs() < 1e-9, "{}", d.io_seconds);
        assert!(d.stalled());
    }

    #[test]
    fn records_from_before_the_stall_counters_still_read() {
        let old = r#"{"name": "fs", "model": "hdd-7200", "below_floor": false,
            "reads": 1, "writes": 2, "flushes": 0, "discards": 0, "read_bytes": 4096,
            "write_bytes": 8192, "cached": 0, "response_seconds": 0.01,
            "seek_seconds": 0.0, "rotation_seconds": 0.0, "transfer_seconds": 0.0,
            "late": 3, "floor_bound": 0, "floor_excess_seconds": 0.0}"#;
        let d: DiskStats = serde_json::from_str(old).unwrap();
        assert_eq!((d.late, d.overdue, d.slow_io), (3, 0, 0));
        assert!(!d.stalled());
    }
}
