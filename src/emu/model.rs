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
//! The FUSE path itself costs about [`FUSE_FLOOR`] per request on the development
//! machine (issue 4), so a model whose [`DeviceModel::min_service`] is below it cannot be
//! emulated faithfully for its fastest requests; [`below_floor`] lets the daemon flag it.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// What one request costs in the FUSE + loop path before any model delay (issue 4:
/// about 9k QD1 4 KiB IOPS with no injected latency, i.e. ~100 µs per request).
pub const FUSE_FLOOR: Duration = Duration::from_micros(100);

/// Names accepted by [`model_by_name`].
pub const MODEL_NAMES: &[&str] = &["hdd-7200", "ssd-sata", "nvme", "nvram", "ram"];

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
    /// fastest case: a cache hit, a sequential read). Compare with [`FUSE_FLOOR`].
    fn min_service(&self) -> Duration;
    /// Capacity the model's geometry is laid over; `None` when position is irrelevant.
    fn capacity_bytes(&self) -> Option<u64> {
        None
    }
}

/// True when some requests of `model` should complete faster than the FUSE path can
/// answer at all, so measured times would be the floor's, not the model's.
pub fn below_floor(model: &dyn DeviceModel) -> bool {
    model.min_service() < FUSE_FLOOR
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

// ---------------------------------------------------------------------------------
// hdd-7200
// ---------------------------------------------------------------------------------

/// Parameters of `hdd-7200`. Defaults are the studies' drives as issue 4 gives them:
/// 7200 rpm, 0.8 ms track-to-track, 6.3 ms average and 15 ms full-stroke seek, 16 MB
/// cache; 500 GB because Study 2 quotes its 16 MB journal as 0.0032 % of the file
/// system. The zoned rates (200 MB/s outer, 100 MB/s inner) and SATA 3 Gb/s interface
/// are typical of 7200 rpm drives of that size, not figures from the studies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HddParams {
    /// Seeds the platter's starting angle; nothing else is random.
    pub seed: u64,
    /// Bytes the geometry spans (offset 0 outermost, `capacity_bytes` innermost). The
    /// daemon should set this to the image size so that the full stroke spans the
    /// emulated disk, as it did the studies' partitions.
    pub capacity_bytes: u64,
    /// Tracks (cylinders) across the stroke; one of them is the track-to-track seek.
    pub cylinders: u64,
    pub rpm: f64,
    pub seek_track_to_track_ms: f64,
    /// Mean over uniformly random start and end positions.
    pub seek_avg_ms: f64,
    pub seek_full_stroke_ms: f64,
    /// Media rate at offset 0 (outer zone) and at the end (inner zone); linear between.
    pub rate_outer_mb_per_s: f64,
    pub rate_inner_mb_per_s: f64,
    /// Host link speed: what cached writes and cache-hit reads cost.
    pub interface_mb_per_s: f64,
    /// Volatile write-back cache: writes are acknowledged at interface speed and reach
    /// the media at the next flush, or when the cache fills.
    pub write_cache: bool,
    pub write_cache_bytes: u64,
    /// A media write that continues the previous media access but arrives after a gap
    /// has missed its sector and waits for it to come round again (the reason a disk
    /// does about one fsync'ed append per revolution). `false` makes every sequential
    /// access free of rotational latency, reads and writes alike.
    pub sequential_write_slip: bool,
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams {
            seed: 0,
            capacity_bytes: 500_000_000_000,
            cylinders: 150_000,
            rpm: 7200.0,
            seek_track_to_track_ms: 0.8,
            seek_avg_ms: 6.3,
            seek_full_stroke_ms: 15.0,
            rate_outer_mb_per_s: 200.0,
            rate_inner_mb_per_s: 100.0,
            interface_mb_per_s: 300.0,
            write_cache: true,
            write_cache_bytes: 16 << 20,
            sequential_write_slip: true,
        }
    }
}

impl HddParams {
    fn validate(&self) -> Result<(), String> {
        let positive = [
            ("rpm", self.rpm),
            ("seek_track_to_track_ms", self.seek_track_to_track_ms),
            ("rate_outer_mb_per_s", self.rate_outer_mb_per_s),
            ("rate_inner_mb_per_s", self.rate_inner_mb_per_s),
            ("interface_mb_per_s", self.interface_mb_per_s),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!(
                    "hdd-7200: {name} must be a positive number, got {v}"
                ));
            }
        }
        if self.capacity_bytes == 0 {
            return Err("hdd-7200: capacity_bytes must be positive".into());
        }
        if self.cylinders < 3 {
            return Err("hdd-7200: cylinders must be at least 3".into());
        }
        SeekCurve::fit(self).map(|_| ())
    }
}

/// Seek time for a move of `n` cylinders: `a + b*sqrt(x) + c*x`, with
/// `x = (n-1)/(cylinders-2)` running from 0 (one track) to 1 (full stroke).
///
/// The square-root term is the short-seek regime (the arm accelerates, then
/// decelerates); the linear term the long-seek coast. A plain `a + b*sqrt(x)` cannot
/// meet all three anchors (through 0.8 and 15 ms it averages 8.4 ms), so `b` and `c`
/// are solved from them: the distance between two uniformly random positions has
/// density 2(1-x), so E[sqrt x] = 8/15 and E[x] = 1/3, giving
/// `a = track-to-track`, `b + c = full - a`, `8b/15 + c/3 = avg - a`.
#[derive(Debug, Clone, Copy)]
struct SeekCurve {
    a: f64,
    b: f64,
    c: f64,
    span: f64,
}

impl SeekCurve {
    fn fit(p: &HddParams) -> Result<Self, String> {
        let a = p.seek_track_to_track_ms;
        let (avg, full) = (p.seek_avg_ms, p.seek_full_stroke_ms);
        let b = 5.0 * (avg - a - (full - a) / 3.0);
        let c = full - a - b;
        // Both terms must grow with distance, or a longer seek could be faster.
        if !(b.is_finite() && c.is_finite() && b >= 0.0 && c >= 0.0) {
            return Err(format!(
                "hdd-7200: no monotonic seek curve through track-to-track {a} ms, average \
                 {avg} ms, full stroke {full} ms; the average must lie between \
                 a + (full-a)/3 and a + 8(full-a)/15"
            ));
        }
        Ok(SeekCurve {
            a,
            b,
            c,
            span: (p.cylinders - 2) as f64,
        })
    }

    fn time_ms(&self, cylinders_moved: u64) -> f64 {
        if cylinders_moved == 0 {
            return 0.0;
        }
        let x = ((cylinders_moved - 1) as f64 / self.span).min(1.0);
        self.a + self.b * x.sqrt() + self.c * x
    }
}

/// Dirty extents in the write cache, merged so that coverage is counted once.
#[derive(Debug, Default, Clone)]
struct DirtyExtents {
    /// start -> end (exclusive); no two extents overlap or touch.
    map: BTreeMap<u64, u64>,
    bytes: u64,
}

impl DirtyExtents {
    fn insert(&mut self, start: u64, end: u64) {
        let (mut s, mut e) = (start, end);
        let touching: Vec<(u64, u64)> = self
            .map
            .range(..=end)
            .rev()
            .take_while(|(_, &ex_end)| ex_end >= start)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in touching {
            self.map.remove(&a);
            self.bytes -= b - a;
            s = s.min(a);
            e = e.max(b);
        }
        self.map.insert(s, e);
        self.bytes += e - s;
    }

    fn covers(&self, start: u64, end: u64) -> bool {
        self.map
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }

    fn take(&mut self) -> Vec<(u64, u64)> {
        self.bytes = 0;
        std::mem::take(&mut self.map).into_iter().collect()
    }
}

/// A 7200 rpm disk: seek curve, virtual platter, zoned rate, volatile write cache.
#[derive(Debug, Clone)]
pub struct HddModel {
    p: HddParams,
    seek: SeekCurve,
    period_s: f64,
    /// Platter angle (in revolutions) at time zero; seeded.
    phase0: f64,
    dirty: DirtyExtents,
    /// Byte position where the last media access ended; `None` before the first.
    head: Option<u64>,
    /// When the last media access ended.
    media_free_at: Duration,
    /// When the last request completed.
    busy_until: Duration,
    /// Interface time already spent accepting the cached writes; see `drain`.
    accept_credit: Duration,
}

impl HddModel {
    pub fn new(p: HddParams) -> Result<Self, String> {
        p.validate()?;
        let seek = SeekCurve::fit(&p)?;
        let phase0 = ChaCha8Rng::seed_from_u64(p.seed).gen::<f64>();
        Ok(HddModel {
            period_s: 60.0 / p.rpm,
            seek,
            phase0,
            p,
            dirty: DirtyExtents::default(),
            head: None,
            media_free_at: Duration::ZERO,
            busy_until: Duration::ZERO,
            accept_credit: Duration::ZERO,
        })
    }

    /// One revolution.
    pub fn rotation_period(&self) -> Duration {
        secs(self.period_s)
    }

    /// Media rate at `offset` in MB/s, linear from the outer to the inner zone.
    pub fn rate_mb_per_s(&self, offset: u64) -> f64 {
        let x = self.radius(offset);
        self.p.rate_outer_mb_per_s + (self.p.rate_inner_mb_per_s - self.p.rate_outer_mb_per_s) * x
    }

    /// Bytes waiting in the write cache.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty.bytes
    }

    /// Position across the stroke, 0 outermost .. 1 innermost (clamped).
    fn radius(&self, offset: u64) -> f64 {
        offset.min(self.p.capacity_bytes) as f64 / self.p.capacity_bytes as f64
    }

    fn cylinder(&self, offset: u64) -> u64 {
        (self.radius(offset) * (self.p.cylinders - 1) as f64) as u64
    }

    /// Angle (revolutions) of the sector at `offset` within its track.
    fn sector_angle(&self, offset: u64) -> f64 {
        frac(self.radius(offset) * (self.p.cylinders - 1) as f64)
    }

    /// Angle (revolutions) under the head at time `t`.
    fn platter_angle(&self, t: Duration) -> f64 {
        frac(self.phase0 + t.as_secs_f64() / self.period_s)
    }

    fn interface_time(&self, len: u64) -> Duration {
        transfer_time(len, self.p.interface_mb_per_s)
    }

    /// Wait until the sector at `offset` comes under the head, arriving at `t`.
    fn rotational_wait(&self, offset: u64, t: Duration) -> Duration {
        let behind = frac(self.sector_angle(offset) - self.platter_angle(t));
        secs(behind * self.period_s)
    }

    /// A write continuing the last media access `gap` after it ended has just missed
    /// its sector: it waits the rest of the revolution. No gap, no wait.
    fn slip(&self, gap: Duration) -> Duration {
        let g = gap.as_secs_f64() % self.period_s;
        if g <= 0.0 {
            Duration::ZERO
        } else {
            secs(self.period_s - g)
        }
    }

    /// Seek and rotation to reach `offset` starting at `t`.
    fn position(&self, is_read: bool, offset: u64, t: Duration) -> (Duration, Duration) {
        let pos = offset.min(self.p.capacity_bytes);
        if self.head == Some(pos) {
            // Sequential: no seek. Reads stream from the drive's read-ahead buffer.
            let slips = !is_read && self.p.sequential_write_slip;
            let gap = t.saturating_sub(self.media_free_at);
            return (
                Duration::ZERO,
                if slips {
                    self.slip(gap)
                } else {
                    Duration::ZERO
                },
            );
        }
        let from = self.head.map_or(0, |h| self.cylinder(h));
        let seek = ms(self.seek.time_ms(from.abs_diff(self.cylinder(pos))));
        (seek, self.rotational_wait(pos, t + seek))
    }

    /// One access to the media starting at `t`; moves the head.
    fn media(&mut self, is_read: bool, offset: u64, len: u64, t: Duration) -> Service {
        let (seek, rotation) = self.position(is_read, offset, t);
        let transfer = transfer_time(len, self.rate_mb_per_s(offset));
        let duration = seek + rotation + transfer;
        self.head = Some(offset.saturating_add(len).min(self.p.capacity_bytes));
        self.media_free_at = t + duration;
        Service {
            duration,
            seek,
            rotation,
            transfer,
            cached: false,
        }
    }

    /// Write every dirty extent to the media in one elevator sweep: ascending offsets
    /// when the head is nearer the lowest extent, else descending.
    ///
    /// A drive starts destaging while it is still accepting data, so the interface
    /// time already charged for the cached writes is taken off the drain (and the
    /// media is taken to have started that much earlier). Without this a streaming
    /// write would pay interface and media time in series: 120 MB/s, not 200.
    /// Idle time between requests is not credited: the cache drains only at a flush
    /// or when it fills.
    fn drain(&mut self, t: Duration) -> Service {
        let mut extents = self.dirty.take();
        let (Some(first), Some(last)) = (extents.first(), extents.last()) else {
            return Service::default();
        };
        let head = self.head.unwrap_or(0);
        if head.abs_diff(last.0) < head.abs_diff(first.0) {
            extents.reverse();
        }
        let mut total = Service::default();
        for (start, end) in extents {
            let s = self.media(false, start, end - start, t + total.duration);
            total = total.then(s);
        }
        let credit = std::mem::take(&mut self.accept_credit).min(total.duration);
        self.media_free_at = self.media_free_at.saturating_sub(credit);
        total.duration -= credit;
        total
    }

    fn read(&mut self, offset: u64, len: u64, t: Duration) -> Service {
        let end = offset.saturating_add(len);
        if self.dirty.covers(offset, end) {
            return Service::cache_hit(self.interface_time(len));
        }
        self.media(true, offset, len, t)
    }

    fn write(&mut self, offset: u64, len: u64, t: Duration) -> Service {
        let end = offset.saturating_add(len);
        if !self.p.write_cache {
            return self.media(false, offset, len, t);
        }
        if len > self.p.write_cache_bytes {
            // Larger than the whole cache: drain, then write through.
            let drained = self.drain(t);
            return drained.then(self.media(false, offset, len, t + drained.duration));
        }
        let mut pre = Service::cache_hit(Duration::ZERO);
        if self.dirty.bytes + len > self.p.write_cache_bytes {
            pre = self.drain(t);
        }
        self.dirty.insert(offset, end);
        let accept = self.interface_time(len);
        self.accept_credit += accept;
        pre.then(Service::cache_hit(accept))
    }
}

impl DeviceModel for HddModel {
    fn name(&self) -> &'static str {
        "hdd-7200"
    }

    fn service(&mut self, req: &Request, now: Duration) -> Service {
        let start = now.max(self.busy_until);
        let work = match req.kind {
            Kind::Read | Kind::Write if req.len == 0 => Service::default(),
            Kind::Read => self.read(req.offset, req.len, start),
            Kind::Write => self.write(req.offset, req.len, start),
            Kind::Flush => self.drain(start),
            // The studies' disks had no TRIM: a discard costs nothing and leaves any
            // cached data in its range to be written at the next flush.
            Kind::Discard => Service::default(),
        };
        self.busy_until = start + work.duration;
        Service {
            duration: self.busy_until - now,
            ..work
        }
    }

    fn min_service(&self) -> Duration {
        let sequential_read = transfer_time(KIB4, self.p.rate_outer_mb_per_s);
        if self.p.write_cache {
            sequential_read.min(self.interface_time(KIB4))
        } else {
            sequential_read
        }
    }

    fn capacity_bytes(&self) -> Option<u64> {
        Some(self.p.capacity_bytes)
    }
}

// ---------------------------------------------------------------------------------
// ssd-sata, nvme, nvram: fixed latency plus a bandwidth cap
// ---------------------------------------------------------------------------------

/// Parameters of the fixed-latency models (`ssd-sata`, `nvme`, `nvram`): each request
/// costs its kind's latency plus `len / bandwidth`. `Default` is `ssd-sata`; see
/// [`FixedParams::nvme`] and [`FixedParams::nvram`] for the others' defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FixedParams {
    pub read_latency_us: f64,
    pub write_latency_us: f64,
    pub flush_latency_us: f64,
    pub discard_latency_us: f64,
    pub read_mb_per_s: f64,
    pub write_mb_per_s: f64,
}

impl Default for FixedParams {
    /// A SATA SSD. Approximate figures from public data sheets and reviews of
    /// consumer SATA SSDs (e.g. Samsung 860-class): ~100 µs QD1 4 KiB read, 50-80 µs
    /// write (into the drive's SLC/DRAM buffer), 1-2 ms for a cache flush on drives
    /// without power-loss protection, and the SATA 6 Gb/s link's ~550 MB/s ceiling
    /// (500 MB/s sustained).
    fn default() -> Self {
        FixedParams {
            read_latency_us: 100.0,
            write_latency_us: 60.0,
            flush_latency_us: 1500.0,
            discard_latency_us: 100.0,
            read_mb_per_s: 500.0,
            write_mb_per_s: 500.0,
        }
    }
}

impl FixedParams {
    /// An NVMe SSD (issue 4's working figures; order of magnitude of PCIe 3.0 x4 NAND
    /// drives' data sheets): ~20 µs read, 15 µs write (buffered), a flush of 0.1-0.5 ms
    /// (0.3 ms here), ~3 GB/s. Real NAND QD1 reads are often 50-80 µs; override
    /// `read_latency_us` for a specific drive.
    pub fn nvme() -> Self {
        FixedParams {
            read_latency_us: 20.0,
            write_latency_us: 15.0,
            flush_latency_us: 300.0,
            discard_latency_us: 20.0,
            read_mb_per_s: 3000.0,
            write_mb_per_s: 3000.0,
        }
    }

    /// Battery-backed NVRAM (Study 3's journal device, which the study itself simulated
    /// with a RAM disk): a few µs per access, memory-bus bandwidth (1 GB/s here, a
    /// PCI-era card), and a free flush since writes are durable on arrival.
    pub fn nvram() -> Self {
        FixedParams {
            read_latency_us: 2.0,
            write_latency_us: 3.0,
            flush_latency_us: 0.0,
            discard_latency_us: 0.0,
            read_mb_per_s: 1000.0,
            write_mb_per_s: 1000.0,
        }
    }

    fn validate(&self, name: &str) -> Result<(), String> {
        let latencies = [
            ("read_latency_us", self.read_latency_us),
            ("write_latency_us", self.write_latency_us),
            ("flush_latency_us", self.flush_latency_us),
            ("discard_latency_us", self.discard_latency_us),
        ];
        for (k, v) in latencies {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name}: {k} must be a number >= 0, got {v}"));
            }
        }
        for (k, v) in [
            ("read_mb_per_s", self.read_mb_per_s),
            ("write_mb_per_s", self.write_mb_per_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name}: {k} must be a positive number, got {v}"));
            }
        }
        Ok(())
    }
}

/// Fixed latency per request kind plus a bandwidth cap; no position, no cache state.
#[derive(Debug, Clone)]
pub struct FixedModel {
    name: &'static str,
    p: FixedParams,
    busy_until: Duration,
}

impl FixedModel {
    pub fn new(name: &'static str, p: FixedParams) -> Result<Self, String> {
        p.validate(name)?;
        Ok(FixedModel {
            name,
            p,
            busy_until: Duration::ZERO,
        })
    }

    fn work(&self, req: &Request) -> Duration {
        let p = &self.p;
        match req.kind {
            Kind::Read | Kind::Write if req.len == 0 => Duration::ZERO,
            Kind::Read => us(p.read_latency_us) + transfer_time(req.len, p.read_mb_per_s),
            Kind::Write => us(p.write_latency_us) + transfer_time(req.len, p.write_mb_per_s),
            Kind::Flush => us(p.flush_latency_us),
            Kind::Discard => us(p.discard_latency_us),
        }
    }
}

impl DeviceModel for FixedModel {
    fn name(&self) -> &'static str {
        self.name
    }

    fn service(&mut self, req: &Request, now: Duration) -> Service {
        let start = now.max(self.busy_until);
        let work = self.work(req);
        self.busy_until = start + work;
        Service {
            duration: self.busy_until - now,
            transfer: work,
            ..Service::default()
        }
    }

    fn min_service(&self) -> Duration {
        self.work(&Request::read(0, KIB4))
            .min(self.work(&Request::write(0, KIB4)))
    }
}

// ---------------------------------------------------------------------------------
// ram
// ---------------------------------------------------------------------------------

/// `ram` has no parameters; any key given is an error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RamParams {}

/// A RAM disk: adds no latency at all (Studies 1 and 2's RAM-disk journal).
#[derive(Debug, Clone, Default)]
pub struct RamModel;

impl DeviceModel for RamModel {
    fn name(&self) -> &'static str {
        "ram"
    }
    fn service(&mut self, _req: &Request, _now: Duration) -> Service {
        Service::default()
    }
    fn min_service(&self) -> Duration {
        Duration::ZERO
    }
}

// ---------------------------------------------------------------------------------
// Construction by name
// ---------------------------------------------------------------------------------

/// `base` with the keys of `overrides` replacing its fields; an unknown key or a value
/// of the wrong type is an error naming the known keys.
fn with_overrides<T: Serialize + DeserializeOwned>(
    model: &str,
    base: T,
    overrides: Option<&toml::Table>,
) -> Result<T, String> {
    let Some(over) = overrides else {
        return Ok(base);
    };
    let mut table = match toml::Value::try_from(&base) {
        Ok(toml::Value::Table(t)) => t,
        _ => {
            return Err(format!(
                "{model}: internal error serialising default parameters"
            ))
        }
    };
    for (key, value) in over {
        if !table.contains_key(key) {
            let known: Vec<&str> = table.keys().map(String::as_str).collect();
            return Err(format!(
                "{model}: unknown parameter `{key}`; known parameters: {}",
                if known.is_empty() {
                    "(none)".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
        table.insert(key.clone(), value.clone());
    }
    toml::Value::Table(table)
        .try_into()
        .map_err(|e| format!("{model}: bad parameter value: {e}"))
}

/// Build a model by name, its defaults overridden by `params` (a TOML table of the
/// model's parameter names). Errors list the known names or parameters.
pub fn model_by_name(
    name: &str,
    params: Option<&toml::Table>,
) -> Result<Box<dyn DeviceModel>, String> {
    match name {
        "hdd-7200" => Ok(Box::new(HddModel::new(with_overrides(
            name,
            HddParams::default(),
            params,
        )?)?)),
        "ssd-sata" => fixed("ssd-sata", FixedParams::default(), params),
        "nvme" => fixed("nvme", FixedParams::nvme(), params),
        "nvram" => fixed("nvram", FixedParams::nvram(), params),
        "ram" => {
            with_overrides(name, RamParams::default(), params)?;
            Ok(Box::new(RamModel))
        }
        _ => Err(format!(
            "unknown device model `{name}`; known models: {}",
            MODEL_NAMES.join(", ")
        )),
    }
}

/// The default parameters of a built-in model, as the TOML keys `[models]` entries
/// override.
pub fn default_params(name: &str) -> Option<toml::Table> {
    let value = match name {
        "hdd-7200" => toml::Value::try_from(HddParams::default()),
        "ssd-sata" => toml::Value::try_from(FixedParams::default()),
        "nvme" => toml::Value::try_from(FixedParams::nvme()),
        "nvram" => toml::Value::try_from(FixedParams::nvram()),
        "ram" => toml::Value::try_from(RamParams::default()),
        _ => return None,
    };
    match value {
        Ok(toml::Value::Table(t)) => Some(t),
        _ => None,
    }
}

fn fixed(
    name: &'static str,
    base: FixedParams,
    params: Option<&toml::Table>,
) -> Result<Box<dyn DeviceModel>, String> {
    Ok(Box::new(FixedModel::new(
        name,
        with_overrides(name, base, params)?,
    )?))
}

// ---------------------------------------------------------------------------------
// Predicted calibration figures
// ---------------------------------------------------------------------------------

/// The request streams `jbench device calibrate` runs, all at queue depth 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// 4 KiB reads at uniformly random aligned offsets.
    RandomRead4k,
    /// 4 KiB writes at random offsets, then one flush (so cached data is paid for).
    RandomWrite4k,
    /// 1 MiB reads, one after another from offset 0.
    SequentialRead1m,
    /// 1 MiB writes from offset 0, then one flush.
    SequentialWrite1m,
    /// 4 KiB appends from offset 0, each followed by a flush (a log's fsync).
    FsyncWrite4k,
}

impl Pattern {
    pub const ALL: [Pattern; 5] = [
        Pattern::RandomRead4k,
        Pattern::RandomWrite4k,
        Pattern::SequentialRead1m,
        Pattern::SequentialWrite1m,
        Pattern::FsyncWrite4k,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Pattern::RandomRead4k => "random read 4K",
            Pattern::RandomWrite4k => "random write 4K",
            Pattern::SequentialRead1m => "sequential read 1M",
            Pattern::SequentialWrite1m => "sequential write 1M",
            Pattern::FsyncWrite4k => "fsync'ed write 4K",
        }
    }

    fn request_len(self) -> u64 {
        match self {
            Pattern::SequentialRead1m | Pattern::SequentialWrite1m => MIB1,
            _ => KIB4,
        }
    }
}

/// A synthetic calibration run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    pub pattern: Pattern,
    /// Data requests (flushes not counted).
    pub requests: u64,
    /// Offsets stay below this; sequential runs wrap at it.
    pub span_bytes: u64,
    pub seed: u64,
    /// Host time between one completion and the next request (e.g. the measured FUSE
    /// floor, when the daemon adds the model's delay on top of it). Zero by default.
    pub host_overhead: Duration,
    /// Host time to apply a request to the backing image, which the daemon overlaps
    /// with the model's time: a request takes at least this long. Zero by default.
    pub host_io: Duration,
}

impl Workload {
    /// Enough requests for a stable figure: random writes fill a 16 MB cache several
    /// times over, so the sustained rate (not the cache's burst) is what is predicted.
    pub fn new(pattern: Pattern, span_bytes: u64) -> Self {
        let requests = match pattern {
            Pattern::RandomWrite4k => 20_000,
            Pattern::SequentialRead1m | Pattern::SequentialWrite1m => 1_000,
            _ => 2_000,
        };
        Workload {
            pattern,
            requests,
            span_bytes,
            seed: 1,
            host_overhead: Duration::ZERO,
            host_io: Duration::ZERO,
        }
    }
}

/// What a calibration run of a workload should measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub requests: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    pub iops: f64,
    pub mb_per_s: f64,
}

impl Workload {
    /// The request stream of this workload, flushes included: what [`predicted`] feeds
    /// the model and what `jbench device calibrate` sends the emulated device.
    pub fn stream(&self) -> Vec<Request> {
        let w = self;
        let len = w.pattern.request_len();
        let slots = (w.span_bytes / len).max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(w.seed);
        let mut out = Vec::with_capacity(w.requests as usize + 1);
        for i in 0..w.requests {
            out.push(match w.pattern {
                Pattern::RandomRead4k => Request::read(rng.gen_range(0..slots) * len, len),
                Pattern::RandomWrite4k => Request::write(rng.gen_range(0..slots) * len, len),
                Pattern::SequentialRead1m => Request::read((i % slots) * len, len),
                Pattern::SequentialWrite1m | Pattern::FsyncWrite4k => {
                    Request::write((i % slots) * len, len)
                }
            });
            if w.pattern == Pattern::FsyncWrite4k {
                out.push(Request::flush());
            }
        }
        if matches!(
            w.pattern,
            Pattern::RandomWrite4k | Pattern::SequentialWrite1m
        ) {
            out.push(Request::flush());
        }
        out
    }

    /// Bytes of one data request.
    pub fn request_len(&self) -> u64 {
        self.pattern.request_len()
    }
}

/// Run `workload` through `model` (which it changes: pass a fresh one) and report
/// the rates a QD1 run of the same stream would measure.
pub fn predicted(model: &mut dyn DeviceModel, workload: &Workload) -> Prediction {
    let w = workload;
    let mut now = Duration::ZERO;
    for req in w.stream() {
        now += model.service(&req, now).duration.max(w.host_io) + w.host_overhead;
    }
    // A model that adds nothing (ram) predicts an unbounded rate: infinity.
    let elapsed_s = now.as_secs_f64();
    let bytes = w.requests.saturating_mul(w.pattern.request_len());
    Prediction {
        requests: w.requests,
        bytes,
        elapsed: now,
        iops: w.requests as f64 / elapsed_s,
        mb_per_s: bytes as f64 / MB / elapsed_s,
    }
}

/// The calibration figures of model `name`: every [`Pattern`] over the whole model
/// (1 GiB for position-free models), and for a model with a write cache also random
/// writes with `write_cache = false`. Each run uses a fresh model.
pub fn predicted_set(
    name: &str,
    params: Option<&toml::Table>,
) -> Result<Vec<(String, Prediction)>, String> {
    let span = model_by_name(name, params)?
        .capacity_bytes()
        .unwrap_or(1 << 30);
    let mut out = Vec::new();
    for pattern in Pattern::ALL {
        let mut model = model_by_name(name, params)?;
        out.push((
            pattern.label().to_string(),
            predicted(model.as_mut(), &Workload::new(pattern, span)),
        ));
    }
    let mut no_cache = params.cloned().unwrap_or_default();
    no_cache.insert("write_cache".into(), toml::Value::Boolean(false));
    if let Ok(mut model) = model_by_name(name, Some(&no_cache)) {
        let w = Workload::new(Pattern::RandomWrite4k, span);
        let w = Workload {
            requests: 2_000,
            ..w
        };
        out.push((
            "random write 4K, no cache".into(),
            predicted(model.as_mut(), &w),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdd(p: HddParams) -> HddModel {
        HddModel::new(p).unwrap()
    }

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    fn ms_of(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    /// Random aligned 4 KiB offsets over the default disk.
    fn random_offsets(n: usize, seed: u64, cap: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| rng.gen_range(0..cap / KIB4) * KIB4)
            .collect()
    }

    #[test]
    fn seek_anchors_track_to_track_and_full_stroke() {
        let p = HddParams::default();
        let c = SeekCurve::fit(&p).unwrap();
        assert!((c.time_ms(1) - 0.8).abs() < 1e-9);
        assert!((c.time_ms(p.cylinders - 1) - 15.0).abs() < 1e-9);
        assert_eq!(c.time_ms(0), 0.0);
        // Monotonic: longer seeks never faster.
        let mut last = 0.0;
        for n in (0..p.cylinders).step_by(997) {
            let t = c.time_ms(n);
            assert!(t >= last, "seek({n}) = {t} < {last}");
            last = t;
        }
    }

    #[test]
    fn seek_random_average_is_6_3_ms_within_2_percent() {
        let p = HddParams::default();
        let m = hdd(p.clone());
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let n = 200_000;
        let total: f64 = (0..n)
            .map(|_| {
                let a = m.cylinder(rng.gen_range(0..p.capacity_bytes));
                let b = m.cylinder(rng.gen_range(0..p.capacity_bytes));
                m.seek.time_ms(a.abs_diff(b))
            })
            .sum();
        let avg = total / n as f64;
        assert!((avg - 6.3).abs() / 6.3 < 0.02, "average seek {avg} ms");
    }

    #[test]
    fn infeasible_seek_anchors_are_an_error() {
        let p = HddParams {
            seek_avg_ms: 14.0,
            ..HddParams::default()
        };
        assert!(HddModel::new(p).is_err());
        let p = HddParams {
            seek_avg_ms: 1.0,
            ..HddParams::default()
        };
        assert!(HddModel::new(p).is_err());
    }

    #[test]
    fn rotation_period_is_8_333_ms_at_7200_rpm() {
        let m = hdd(HddParams::default());
        assert!((ms_of(m.rotation_period()) - 60_000.0 / 7200.0).abs() < 1e-6);
        // Rotational waits stay within one revolution and average half of one.
        let mut m = hdd(HddParams {
            write_cache: false,
            ..HddParams::default()
        });
        let mut now = Duration::ZERO;
        let offs = random_offsets(5000, 3, m.p.capacity_bytes);
        let mut total = 0.0;
        for &o in &offs {
            let s = m.service(&Request::read(o, KIB4), now);
            assert!(s.rotation < m.rotation_period());
            total += ms_of(s.rotation);
            now += s.duration;
        }
        let avg = total / offs.len() as f64;
        assert!(
            (avg - 4.1667).abs() < 0.25,
            "mean rotational latency {avg} ms"
        );
    }

    #[test]
    fn zoned_rate_at_both_ends() {
        let m = hdd(HddParams::default());
        assert!((m.rate_mb_per_s(0) - 200.0).abs() < 1e-9);
        assert!((m.rate_mb_per_s(m.p.capacity_bytes) - 100.0).abs() < 1e-9);
        assert!(
            (m.rate_mb_per_s(u64::MAX) - 100.0).abs() < 1e-9,
            "clamped beyond capacity"
        );
        let mut m = hdd(HddParams::default());
        let outer = m.service(&Request::read(0, MIB1), Duration::ZERO).transfer;
        let inner_off = m.p.capacity_bytes - MIB1;
        let inner = m
            .service(&Request::read(inner_off, MIB1), Duration::from_secs(1))
            .transfer;
        assert!((ms_of(outer) - MIB1 as f64 / 200e6 * 1e3).abs() < 1e-6);
        assert!((ms_of(inner) / ms_of(outer) - 2.0).abs() < 0.01);
    }

    #[test]
    fn sequential_requests_pay_no_seek_nor_rotation() {
        let mut m = hdd(HddParams {
            write_cache: false,
            ..HddParams::default()
        });
        let mut now = Duration::ZERO;
        let first = m.service(&Request::read(1 << 30, MIB1), now);
        assert!(first.seek > Duration::ZERO);
        now += first.duration + Duration::from_micros(100);
        for i in 1..10 {
            let s = m.service(&Request::read((1 << 30) + i * MIB1, MIB1), now);
            assert_eq!((s.seek, s.rotation), (Duration::ZERO, Duration::ZERO));
            assert_eq!(s.duration, s.transfer);
            now += s.duration + Duration::from_micros(100);
        }
        // Back-to-back sequential writes also pay only transfer.
        let s = m.service(
            &Request::write((1 << 30) + 10 * MIB1, MIB1),
            now - Duration::from_micros(100),
        );
        assert_eq!((s.seek, s.rotation), (Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn sequential_write_after_a_gap_waits_for_its_sector() {
        let base = HddParams {
            write_cache: false,
            ..HddParams::default()
        };
        let mut m = hdd(base.clone());
        let a = m.service(&Request::write(0, KIB4), Duration::ZERO);
        let gap = Duration::from_micros(200);
        let b = m.service(&Request::write(KIB4, KIB4), a.duration + gap);
        assert_eq!(b.seek, Duration::ZERO);
        let expect = m.rotation_period() - gap;
        assert!(
            (ms_of(b.rotation) - ms_of(expect)).abs() < 1e-6,
            "{:?}",
            b.rotation
        );
        let mut m = hdd(HddParams {
            sequential_write_slip: false,
            ..base
        });
        let a = m.service(&Request::write(0, KIB4), Duration::ZERO);
        let b = m.service(&Request::write(KIB4, KIB4), a.duration + gap);
        assert_eq!(b.rotation, Duration::ZERO);
    }

    #[test]
    fn write_cache_absorbs_until_flush_then_elevator_beats_arrival_order() {
        let cap = HddParams::default().capacity_bytes;
        let offs = random_offsets(500, 7, cap);
        let mut cached = hdd(HddParams::default());
        let mut now = Duration::ZERO;
        for &o in &offs {
            let s = cached.service(&Request::write(o, KIB4), now);
            assert!(s.cached && s.duration < Duration::from_micros(20), "{s:?}");
            now += s.duration;
        }
        assert_eq!(cached.dirty_bytes(), 500 * KIB4);
        let flush = cached.service(&Request::flush(), now);
        assert!(!flush.cached && flush.seek > Duration::ZERO);
        assert_eq!(cached.dirty_bytes(), 0);
        // A second flush has nothing to do.
        assert_eq!(
            cached
                .service(&Request::flush(), now + flush.duration)
                .duration,
            Duration::ZERO
        );

        let mut through = hdd(HddParams {
            write_cache: false,
            ..HddParams::default()
        });
        let mut t = Duration::ZERO;
        for &o in &offs {
            t += through.service(&Request::write(o, KIB4), t).duration;
        }
        assert!(
            flush.duration * 2 < t,
            "elevator {:?} vs arrival order {:?}",
            flush.duration,
            t
        );
    }

    #[test]
    fn elevator_serves_in_offset_order() {
        let mut m = hdd(HddParams::default());
        let cap = m.p.capacity_bytes;
        for o in [cap / 2, cap / 8, cap - KIB4, cap / 4] {
            m.service(&Request::write(o, KIB4), Duration::ZERO);
        }
        let f = m.service(&Request::flush(), Duration::ZERO);
        // One ascending sweep from the outer edge ends at the innermost write...
        assert_eq!(m.head, Some(cap));
        // ...and seeks less than the arrival order's back-and-forth.
        let mut through = hdd(HddParams {
            write_cache: false,
            ..HddParams::default()
        });
        let mut arrival_seek = Duration::ZERO;
        for o in [cap / 2, cap / 8, cap - KIB4, cap / 4] {
            arrival_seek += through
                .service(&Request::write(o, KIB4), Duration::ZERO)
                .seek;
        }
        assert!(f.seek < arrival_seek, "{:?} vs {:?}", f.seek, arrival_seek);
    }

    #[test]
    fn full_cache_forces_a_drain() {
        let p = HddParams {
            write_cache_bytes: 64 * KIB4,
            ..HddParams::default()
        };
        let mut m = hdd(p);
        let offs = random_offsets(65, 11, m.p.capacity_bytes);
        let mut now = Duration::ZERO;
        for &o in &offs[..64] {
            let s = m.service(&Request::write(o, KIB4), now);
            assert!(s.cached);
            now += s.duration;
        }
        let s = m.service(&Request::write(offs[64], KIB4), now);
        assert!(!s.cached && s.seek > Duration::ZERO && s.duration > Duration::from_millis(64));
        assert_eq!(m.dirty_bytes(), KIB4);
        // A write larger than the cache goes through to the media.
        let big = m.service(&Request::write(0, 65 * KIB4), now + s.duration);
        assert!(!big.cached && m.dirty_bytes() == 0);
    }

    #[test]
    fn overwrites_in_cache_count_once() {
        let mut m = hdd(HddParams::default());
        for _ in 0..10 {
            m.service(&Request::write(8192, KIB4), Duration::ZERO);
        }
        m.service(&Request::write(8192 + KIB4, KIB4), Duration::ZERO);
        m.service(&Request::write(4096, 2 * KIB4), Duration::ZERO);
        assert_eq!(m.dirty_bytes(), 3 * KIB4);
        assert_eq!(m.dirty.map.len(), 1);
    }

    #[test]
    fn write_cache_off_makes_every_write_pay() {
        let mut m = hdd(HddParams {
            write_cache: false,
            ..HddParams::default()
        });
        let mut now = Duration::ZERO;
        for &o in &random_offsets(50, 5, m.p.capacity_bytes) {
            let s = m.service(&Request::write(o, KIB4), now);
            assert!(!s.cached && s.seek > Duration::ZERO, "{s:?}");
            now += s.duration;
        }
        assert_eq!(m.service(&Request::flush(), now).duration, Duration::ZERO);
    }

    #[test]
    fn reads_of_dirty_cached_data_are_fast() {
        let mut m = hdd(HddParams::default());
        let off = 123 * MIB1;
        m.service(&Request::write(off, 4 * KIB4), Duration::ZERO);
        let hit = m.service(
            &Request::read(off + KIB4, 2 * KIB4),
            Duration::from_millis(1),
        );
        assert!(
            hit.cached && hit.duration < Duration::from_micros(50),
            "{hit:?}"
        );
        let miss = m.service(
            &Request::read(off + 3 * KIB4, 2 * KIB4),
            Duration::from_millis(2),
        );
        assert!(
            !miss.cached && miss.duration > Duration::from_micros(50),
            "{miss:?}"
        );
    }

    #[test]
    fn same_seed_same_times_other_seed_differs() {
        let run = |seed: u64| -> Vec<Duration> {
            let mut m = hdd(HddParams {
                seed,
                ..HddParams::default()
            });
            let mut now = Duration::ZERO;
            let offs = random_offsets(300, 9, m.p.capacity_bytes);
            let mut out = Vec::new();
            for (i, &o) in offs.iter().enumerate() {
                let req = match i % 3 {
                    0 => Request::read(o, KIB4),
                    1 => Request::write(o, KIB4),
                    _ => Request::flush(),
                };
                let d = m.service(&req, now).duration;
                out.push(d);
                now += d;
            }
            out
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn queued_request_waits_for_the_previous_one() {
        let mut m = model_by_name("ssd-sata", None).unwrap();
        let a = m.service(&Request::read(0, KIB4), Duration::ZERO);
        let b = m.service(&Request::read(0, KIB4), Duration::ZERO);
        assert_eq!(b.duration, a.duration * 2);
    }

    #[test]
    fn zero_length_and_out_of_range_requests_do_not_panic() {
        for name in MODEL_NAMES {
            let mut m = model_by_name(name, None).unwrap();
            for req in [
                Request::read(0, 0),
                Request::write(u64::MAX, 0),
                Request::read(u64::MAX, KIB4),
                Request::write(u64::MAX - 1, MIB1),
                Request::discard(u64::MAX, u64::MAX),
                Request::flush(),
            ] {
                let s = m.service(&req, Duration::MAX / 2);
                if req.len == 0 && req.kind != Kind::Flush {
                    assert_eq!(s.duration, Duration::ZERO, "{name} {req:?}");
                }
                assert!(s.duration < Duration::from_secs(1), "{name} {req:?} {s:?}");
            }
        }
    }

    #[test]
    fn ssd_and_nvme_bandwidth_cap() {
        for (name, lat_us, mbps) in [("ssd-sata", 100.0, 500.0), ("nvme", 20.0, 3000.0)] {
            let mut m = model_by_name(name, None).unwrap();
            let s = m.service(&Request::read(0, 64 * MIB1), Duration::ZERO);
            let expect = lat_us / 1e3 + 64.0 * MIB1 as f64 / (mbps * 1e6) * 1e3;
            assert!((ms_of(s.duration) - expect).abs() < 1e-6, "{name}: {s:?}");
            // A fresh model: `m` is still busy with the 64 MiB read.
            let mut fresh = model_by_name(name, None).unwrap();
            let p = predicted(
                fresh.as_mut(),
                &Workload::new(Pattern::SequentialRead1m, 1 << 30),
            );
            assert!(
                p.mb_per_s < mbps && p.mb_per_s > 0.9 * mbps,
                "{name}: {p:?}"
            );
        }
    }

    #[test]
    fn nvram_flush_is_free_and_writes_take_microseconds() {
        let mut m = model_by_name("nvram", None).unwrap();
        let w = m.service(&Request::write(0, KIB4), Duration::ZERO);
        assert!(w.duration < Duration::from_micros(10) && w.duration > Duration::ZERO);
        assert_eq!(
            m.service(&Request::flush(), w.duration).duration,
            Duration::ZERO
        );
    }

    #[test]
    fn ram_adds_nothing() {
        let mut m = model_by_name("ram", None).unwrap();
        for req in [
            Request::read(0, MIB1),
            Request::write(7, MIB1),
            Request::flush(),
        ] {
            assert_eq!(m.service(&req, Duration::ZERO).duration, Duration::ZERO);
        }
        assert_eq!(m.min_service(), Duration::ZERO);
    }

    #[test]
    fn model_by_name_errors() {
        let e = model_by_name("hdd-5400", None).err().unwrap();
        assert!(
            e.contains("hdd-5400") && e.contains("hdd-7200") && e.contains("nvram"),
            "{e}"
        );
        let e = model_by_name("hdd-7200", Some(&table("rmp = 5400")))
            .err()
            .unwrap();
        assert!(e.contains("rmp") && e.contains("rpm"), "{e}");
        let e = model_by_name("nvme", Some(&table("read_latency_us = \"fast\"")))
            .err()
            .unwrap();
        assert!(e.contains("bad parameter"), "{e}");
        assert!(model_by_name("ram", Some(&table("x = 1"))).is_err());
        assert!(model_by_name("hdd-7200", Some(&table("rpm = 0"))).is_err());
        assert!(model_by_name("hdd-7200", Some(&table("cylinders = 1"))).is_err());
        assert!(model_by_name("ssd-sata", Some(&table("read_mb_per_s = -1"))).is_err());
    }

    #[test]
    fn toml_overrides_change_the_model() {
        let p =
            with_overrides("hdd-7200", HddParams::default(), Some(&table("rpm = 5400"))).unwrap();
        assert_eq!(p.rpm, 5400.0);
        let m = hdd(p);
        assert!((ms_of(m.rotation_period()) - 60_000.0 / 5400.0).abs() < 1e-6);
        let mut m = model_by_name("hdd-7200", Some(&table("write_cache = false"))).unwrap();
        assert!(
            !m.service(&Request::write(MIB1, KIB4), Duration::ZERO)
                .cached
        );
        let mut m = model_by_name("nvme", Some(&table("flush_latency_us = 1000"))).unwrap();
        assert_eq!(
            m.service(&Request::flush(), Duration::ZERO).duration,
            Duration::from_millis(1)
        );
    }

    #[test]
    fn min_service_and_floor() {
        let hdd_nc = model_by_name("hdd-7200", Some(&table("write_cache = false"))).unwrap();
        assert!((hdd_nc.min_service().as_secs_f64() - 4096.0 / 200e6).abs() < 1e-9);
        let hdd = model_by_name("hdd-7200", None).unwrap();
        assert!(
            hdd.min_service() < hdd_nc.min_service(),
            "cached writes are faster"
        );
        let sata = model_by_name("ssd-sata", None).unwrap();
        assert!(sata.min_service() > Duration::from_micros(60));
        assert!(below_floor(model_by_name("nvram", None).unwrap().as_ref()));
        let slow = model_by_name("ssd-sata", Some(&table("write_latency_us = 200.0"))).unwrap();
        assert!(!below_floor(slow.as_ref()));
    }

    fn figure(set: &[(String, Prediction)], label: &str) -> Prediction {
        set.iter().find(|(l, _)| l == label).unwrap().1
    }

    #[test]
    fn hdd_predictions_land_in_the_issue_ranges() {
        let set = predicted_set("hdd-7200", None).unwrap();
        // Issue 4 hopes for 100-130 random 4K IOPS. With its own anchors a QD1 random
        // read over the whole stroke costs 6.3 ms seek + 4.17 ms half revolution +
        // 0.03 ms transfer = 10.5 ms, i.e. 95 IOPS; the range's lower end is only
        // reached over a shorter span. The bound below admits the physics.
        let rr = figure(&set, "random read 4K").iops;
        assert!((90.0..=130.0).contains(&rr), "random read {rr}");
        assert!(
            (rr - 1e3 / 10.5).abs() / (1e3 / 10.5) < 0.03,
            "random read {rr}"
        );
        let rw_nc = figure(&set, "random write 4K, no cache").iops;
        assert!(
            (90.0..=130.0).contains(&rw_nc),
            "random write, no cache {rw_nc}"
        );
        let rw = figure(&set, "random write 4K").iops;
        assert!(
            rw > 1.3 * rw_nc,
            "cache + elevator should help: {rw} vs {rw_nc}"
        );
        // Sequential from offset 0 runs at the outer zone's 200 MB/s.
        let sr = figure(&set, "sequential read 1M").mb_per_s;
        assert!((sr - 200.0).abs() / 200.0 < 0.10, "sequential read {sr}");
        let sw = figure(&set, "sequential write 1M").mb_per_s;
        assert!((sw - 200.0).abs() / 200.0 < 0.10, "sequential write {sw}");
        // One fsync'ed append per revolution: about 120/s at 7200 rpm.
        let fs = figure(&set, "fsync'ed write 4K").iops;
        assert!((100.0..=125.0).contains(&fs), "fsync'ed write {fs}");
    }

    #[test]
    fn half_stroke_random_reads_reach_the_issue_range() {
        let mut m = model_by_name("hdd-7200", None).unwrap();
        let w = Workload::new(
            Pattern::RandomRead4k,
            HddParams::default().capacity_bytes / 2,
        );
        let iops = predicted(m.as_mut(), &w).iops;
        assert!((100.0..=130.0).contains(&iops), "{iops}");
    }

    #[test]
    fn predictions_are_deterministic() {
        assert_eq!(
            predicted_set("hdd-7200", None).unwrap(),
            predicted_set("hdd-7200", None).unwrap()
        );
    }

    /// `cargo test --release emu::model::tests::print_predicted_table -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn print_predicted_table() {
        println!(
            "{:<10} {:<28} {:>12} {:>10}",
            "model", "workload", "IOPS", "MB/s"
        );
        for name in MODEL_NAMES {
            let floor = model_by_name(name, None).unwrap();
            for (label, p) in predicted_set(name, None).unwrap() {
                let iops = if p.iops.is_finite() {
                    format!("{:.1}", p.iops)
                } else {
                    "inf".into()
                };
                println!("{name:<10} {label:<28} {iops:>12} {:>10.1}", p.mb_per_s);
            }
            println!(
                "{name:<10} min_service {:?}{}",
                floor.min_service(),
                if below_floor(floor.as_ref()) {
                    " (below the FUSE floor)"
                } else {
                    ""
                }
            );
        }
    }
}
