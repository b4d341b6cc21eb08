//! `hdd-7200`: a 7200 rpm disk with a seek curve, a virtual platter, zoned transfer
//! rates and a volatile write-back cache drained in elevator order.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::declare::{defaults_of, params_of, ModelKind};
use super::{
    frac, ms, secs, transfer_time, CacheWords, DeviceModel, Kind, ModelError, Request, Service,
    KIB4, MB,
};

const NAME: &str = "hdd-7200";

/// Its seek geometry spans the disk; its platters keep what reached them.
pub const KIND: ModelKind = ModelKind {
    name: NAME,
    spans_disk: true,
    at_power_cut: super::declare::PowerCut::Keeps,
    defaults: || defaults_of(HddParams::default()),
    build: |p| {
        Ok(Box::new(HddModel::new(params_of(
            NAME,
            HddParams::default(),
            p,
        )?)?))
    },
};

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
    /// `false`: a disk that lies about flushes, answering one at once and leaving its
    /// cache as it was (it drains only when full). Needs `write_cache`.
    pub honor_flush: bool,
    /// A media write that continues the previous media access but arrives after a gap
    /// has missed its sector and waits for it to come round again (the reason a disk
    /// does about one fsync'ed append per revolution). `false` makes every sequential
    /// access free of rotational latency, reads and writes alike.
    pub sequential_write_slip: bool,
    /// Read buffer (one segment of the cache), 0 for none. A drive reads on arrival:
    /// the sectors that pass under the head while it waits for the one asked for are
    /// kept, and while idle after a read it goes on reading ahead; reads inside what it
    /// holds are answered from the buffer at interface speed. Without it, reads that
    /// arrive a little out of order (a batch of 4 KiB readahead reads the host did not
    /// merge) each wait most of a revolution, which no drive of the era did.
    pub read_buffer_bytes: u64,
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
            honor_flush: true,
            sequential_write_slip: true,
            read_buffer_bytes: 1 << 20,
        }
    }
}

impl HddParams {
    fn validate(&self) -> Result<(), ModelError> {
        let positive = [
            ("rpm", self.rpm),
            ("seek_track_to_track_ms", self.seek_track_to_track_ms),
            ("rate_outer_mb_per_s", self.rate_outer_mb_per_s),
            ("rate_inner_mb_per_s", self.rate_inner_mb_per_s),
            ("interface_mb_per_s", self.interface_mb_per_s),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(ModelError::invalid(
                    NAME,
                    format!("{name} must be a positive number, got {v}"),
                ));
            }
        }
        if self.capacity_bytes == 0 {
            return Err(ModelError::invalid(
                NAME,
                "capacity_bytes must be positive".into(),
            ));
        }
        if self.cylinders < 3 {
            return Err(ModelError::invalid(
                NAME,
                "cylinders must be at least 3".into(),
            ));
        }
        if !self.honor_flush && !self.write_cache {
            return Err(ModelError::invalid(
                NAME,
                "honor_flush = false needs write_cache = true: without a write cache a flush has nothing to leave undone".into(),
            ));
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
    fn fit(p: &HddParams) -> Result<Self, ModelError> {
        let a = p.seek_track_to_track_ms;
        let (avg, full) = (p.seek_avg_ms, p.seek_full_stroke_ms);
        let b = 5.0 * (avg - a - (full - a) / 3.0);
        let c = full - a - b;
        // Both terms must grow with distance, or a longer seek could be faster.
        if !(b.is_finite() && c.is_finite() && b >= 0.0 && c >= 0.0) {
            return Err(ModelError::invalid(
                NAME,
                format!(
                    "no monotonic seek curve through track-to-track {a} ms, average {avg} ms, \
                     full stroke {full} ms; the average must lie between a + (full-a)/3 and \
                     a + 8(full-a)/15"
                ),
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
    /// What the read buffer holds; `None` before the first media read.
    segment: Option<Segment>,
}

/// The read buffer's bytes `lo..hi`, and while the drive reads ahead (from the end of
/// a media read until the next access to the media, up to `ahead_to`) the time `hi`
/// was reached.
#[derive(Debug, Clone, Copy)]
struct Segment {
    lo: u64,
    hi: u64,
    ahead_since: Option<Duration>,
    ahead_to: u64,
}

impl HddModel {
    pub fn new(p: HddParams) -> Result<Self, ModelError> {
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
            segment: None,
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

    /// Bytes that pass under the head in one revolution at `offset`.
    fn bytes_per_revolution(&self, offset: u64) -> u64 {
        (self.rate_mb_per_s(offset) * MB * self.period_s) as u64
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

    /// Angle (revolutions) of the sector at `offset`: the revolutions the media
    /// turns to stream every byte before it, at the zoned rate. So bytes laid one after
    /// another pass under the head at the media rate, and a block rewritten just after
    /// it was written has just gone by: it waits most of a revolution, as on a real
    /// disk (a log's last, partly filled block at every commit). The cylinder a byte is
    /// on (for seeks) spans the capacity instead; a trial shrinks the capacity to its
    /// disk, which must not shrink the tracks: 4 KiB would then be a seventh of one.
    fn sector_angle(&self, offset: u64) -> f64 {
        let x = offset.min(self.p.capacity_bytes) as f64;
        // Bytes per revolution, linear in x: a + b x.
        let a = self.p.rate_outer_mb_per_s * MB * self.period_s;
        let b = (self.p.rate_inner_mb_per_s - self.p.rate_outer_mb_per_s) * MB * self.period_s
            / self.p.capacity_bytes as f64;
        let revolutions = if b.abs() * x < 1e-9 * a {
            x / a
        } else {
            ((a + b * x) / a).ln() / b
        };
        frac(revolutions)
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
        let seek = match self.head {
            // Within a revolution's bytes of the head: on the track under it (or the
            // next), whatever the capacity the cylinders are spread over. Without this
            // a trial's small disk has tracks of a few KiB, and a read 32 KiB on pays a
            // seek and then, the sector gone by, a whole revolution.
            Some(h) if h.abs_diff(pos) < self.bytes_per_revolution(h) => Duration::ZERO,
            _ => ms(self.seek.time_ms(from.abs_diff(self.cylinder(pos)))),
        };
        (seek, self.rotational_wait(pos, t + seek))
    }

    /// One access to the media starting at `t`; moves the head.
    fn media(&mut self, is_read: bool, offset: u64, len: u64, t: Duration) -> Service {
        if !is_read {
            self.stop_read_ahead(t);
        }
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
        if self.p.read_buffer_bytes == 0 {
            return self.media(true, offset, len, t);
        }
        self.read_ahead_until(t);
        if let Some(seg) = self.segment {
            if seg.lo <= offset && end <= seg.hi {
                return Service::cache_hit(self.interface_time(len));
            }
            if seg.lo <= offset && offset <= seg.hi && self.head == Some(seg.hi) {
                // The head is where the read-ahead got to, inside this request: the
                // buffer has the start, the rest streams on.
                let s = self.media(true, seg.hi, end - seg.hi, t);
                self.keep_read(seg.lo, end);
                return s;
            }
        }
        let s = self.media(true, offset, len, t);
        let rate = self.rate_mb_per_s(offset) * MB;
        let passed = (s.rotation.as_secs_f64() * rate) as u64;
        let behind = passed.min(self.p.read_buffer_bytes / 2).min(offset);
        // A read the head reached from the buffer's end, reading all the way, adds to
        // what the buffer holds.
        let lo = match self.segment {
            // (A sector of slack for the rounding of times to bytes.)
            Some(seg) if seg.lo <= offset && offset - behind <= seg.hi + 512 => seg.lo,
            _ => offset - behind,
        };
        self.keep_read(lo, end);
        s
    }

    /// After a media read of `lo..hi` (bytes read on arrival included), the buffer
    /// holds them and reading ahead starts, for up to a buffer's worth beyond them.
    fn keep_read(&mut self, lo: u64, hi: u64) {
        let lo = lo.max(hi.saturating_sub(self.p.read_buffer_bytes));
        self.segment = Some(Segment {
            lo,
            hi,
            ahead_since: Some(self.media_free_at),
            ahead_to: hi
                .saturating_add(self.p.read_buffer_bytes)
                .min(self.p.capacity_bytes),
        });
    }

    /// Extends the read buffer by what the drive read ahead, idle, up to `t` (its
    /// oldest bytes give way), until a buffer's worth beyond the last read or the end
    /// of the disk. The head is where the read-ahead reached, so a read starting there
    /// streams on.
    fn read_ahead_until(&mut self, t: Duration) {
        let Some(mut seg) = self.segment else {
            return;
        };
        let Some(since) = seg.ahead_since else {
            return;
        };
        let idle = t.saturating_sub(since).as_secs_f64();
        let read = (idle * self.rate_mb_per_s(seg.hi) * MB) as u64;
        let hi = seg.hi.saturating_add(read).min(seg.ahead_to);
        if hi > seg.hi {
            seg.hi = hi;
            seg.lo = seg.lo.max(hi.saturating_sub(self.p.read_buffer_bytes));
            seg.ahead_since = Some(t);
            self.head = Some(hi);
            self.media_free_at = t;
        }
        if hi >= seg.ahead_to {
            seg.ahead_since = None;
        }
        self.segment = Some(seg);
    }

    /// Any other use of the media ends the read-ahead where it had got to.
    fn stop_read_ahead(&mut self, t: Duration) {
        self.read_ahead_until(t);
        if let Some(seg) = self.segment.as_mut() {
            seg.ahead_since = None;
        }
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
        NAME
    }

    fn service(&mut self, req: &Request, now: Duration) -> Service {
        let start = now.max(self.busy_until);
        let work = match req.kind {
            Kind::Read | Kind::Write if req.len == 0 => Service::default(),
            Kind::Read => self.read(req.offset, req.len, start),
            Kind::Write => self.write(req.offset, req.len, start),
            Kind::Flush if !self.p.honor_flush => Service::cache_hit(Duration::ZERO),
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

    fn volatile_cache(&self) -> bool {
        self.p.write_cache
    }

    fn cache_words(&self) -> CacheWords {
        if self.p.write_cache {
            CacheWords {
                cache: "write back",
                cache_bytes: Some(self.p.write_cache_bytes),
                flush: if self.p.honor_flush {
                    "drains the cache"
                } else {
                    "ignored (the disk lies)"
                },
                flush_latency_us: None,
            }
        } else {
            CacheWords {
                cache: "write through",
                cache_bytes: None,
                flush: "completes at once",
                flush_latency_us: None,
            }
        }
    }

    fn honors_flush(&self) -> bool {
        self.p.honor_flush
    }
}

#[cfg(test)]
mod tests;
