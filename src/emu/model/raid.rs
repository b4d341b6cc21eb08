//! `raid6`: a hardware RAID 6 controller (Study 4's) with a battery-backed write cache
//! over N `hdd-7200` spindles served in parallel.
//!
//! Writes land in the controller's cache and are acknowledged at once; a background
//! destage writes them to the spindles stripe by stripe, full stripes as data + P + Q
//! in parallel, partial stripes by read-modify-write. The destage is simulated lazily:
//! the model only runs when a request arrives, so each request first advances the
//! destage up to its own arrival time. Between two requests no write arrives, so the
//! cache's contents over that interval are known and the simulation is exact for it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::declare::{defaults_of, params_of, ModelKind};
use super::{
    ms, transfer_time, us, CacheWords, DeviceModel, HddModel, HddParams, Kind, ModelError, Request,
    Service, KIB4,
};

mod cache;
use cache::StripeDirty;

const NAME: &str = "raid6";

/// Its stripes span the disk; its spindles keep what reached them.
pub const KIND: ModelKind = ModelKind {
    name: NAME,
    spans_disk: true,
    at_power_cut: super::declare::PowerCut::Keeps,
    defaults: || defaults_of(RaidParams::default()),
    build: |p| {
        refuse_derived_spindle_keys(p)?;
        Ok(Box::new(RaidModel::new(params_of(
            NAME,
            RaidParams::default(),
            p,
        )?)?))
    },
};

/// Parameters of `raid6`. The defaults are Study 4's controller where the study says
/// (8 SATA 7200 rpm disks in RAID 6, a 1 GB battery-backed write cache); the rest is
/// assumed and marked so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RaidParams {
    /// Spindle `i`'s platter starts at the angle `seed + i` gives it.
    pub seed: u64,
    /// Member disks; two chunks of every stripe are parity (P and Q). Study 4: 8.
    pub spindles: u64,
    /// Stripe unit: bytes of one stripe on one disk. 64 KiB: a common controller
    /// default of the period (assumed; the study does not say).
    pub chunk_bytes: u64,
    /// Data bytes the geometry spans; each spindle spans `capacity_bytes /
    /// (spindles - 2)`. In a trial it defaults to the emulated disk's size. The model's
    /// own default, 3 TB, is 6 data disks of `hdd-7200`'s 500 GB.
    pub capacity_bytes: u64,
    /// Controller write cache. Study 4: 1 GB.
    pub cache_bytes: u64,
    /// Battery-backed (Study 4): a flush completes at once. `false`: a flush waits
    /// until the cache has drained to the spindles.
    pub nonvolatile: bool,
    /// Host link (assumed: a PCIe x8 controller, 1000 MB/s).
    pub interface_mb_per_s: f64,
    /// Fixed cost of every request in the controller (assumed: 20 µs).
    pub controller_latency_us: f64,
    /// A stripe that is not full is destaged once no write has touched it for this
    /// long, so that sequential writes can fill whole stripes first (assumed: 50 ms).
    pub destage_delay_ms: f64,
    /// Above this fraction of `cache_bytes` dirty, every dirty stripe is destaged
    /// without waiting (assumed: 0.5).
    pub destage_high_water: f64,
    /// The destage keeps at most this much work queued on a spindle ahead of time
    /// (the disks' command queues; assumed: 20 ms). A read waits behind it.
    pub destage_queue_ms: f64,
    /// Each member disk. `hdd-7200`'s defaults with its volatile write cache off, as
    /// controllers with a battery usually set their disks. `seed` and `capacity_bytes`
    /// are set by the array.
    pub spindle: HddParams,
}

impl Default for RaidParams {
    fn default() -> Self {
        RaidParams {
            seed: 0,
            spindles: 8,
            chunk_bytes: 64 << 10,
            capacity_bytes: 3_000_000_000_000,
            cache_bytes: 1 << 30,
            nonvolatile: true,
            interface_mb_per_s: 1000.0,
            controller_latency_us: 20.0,
            destage_delay_ms: 50.0,
            destage_high_water: 0.5,
            destage_queue_ms: 20.0,
            spindle: HddParams {
                write_cache: false,
                ..HddParams::default()
            },
        }
    }
}

/// `spindle.seed` and `spindle.capacity_bytes` are the array's to set: refuse them in
/// `overrides` rather than ignore them.
fn refuse_derived_spindle_keys(overrides: Option<&toml::Table>) -> Result<(), ModelError> {
    let Some(spindle) = overrides
        .and_then(|o| o.get("spindle"))
        .and_then(|v| v.as_table())
    else {
        return Ok(());
    };
    if spindle.contains_key("seed") {
        return Err(ModelError::invalid(
            NAME,
            "spindle.seed is set by the array (spindle i is seeded with seed + i); set raid6's `seed` instead".into(),
        ));
    }
    if spindle.contains_key("capacity_bytes") {
        return Err(ModelError::invalid(
            NAME,
            "spindle.capacity_bytes is set by the array (capacity_bytes / (spindles - 2)); set raid6's `capacity_bytes` instead".into(),
        ));
    }
    Ok(())
}

const MAX_SPINDLES: u64 = 64;
const MAX_CHUNK: u64 = 16 << 20;

impl RaidParams {
    fn validate(&self) -> Result<(), ModelError> {
        let bad = |reason: String| Err(ModelError::invalid(NAME, reason));
        if !(4..=MAX_SPINDLES).contains(&self.spindles) {
            return bad(format!(
                "spindles must be 4 to {MAX_SPINDLES} (RAID 6 keeps two chunks of every stripe for parity), got {}",
                self.spindles
            ));
        }
        if self.chunk_bytes == 0
            || !self.chunk_bytes.is_multiple_of(KIB4)
            || self.chunk_bytes > MAX_CHUNK
        {
            return bad(format!(
                "chunk_bytes must be a multiple of 4096 from 4096 to {MAX_CHUNK}, got {}",
                self.chunk_bytes
            ));
        }
        if self.capacity_bytes == 0 {
            return bad("capacity_bytes must be positive".into());
        }
        let stripe = self.chunk_bytes * (self.spindles - 2);
        if self.cache_bytes < 2 * stripe {
            return bad(format!(
                "cache_bytes must hold at least two stripes ({} bytes with {} spindles of {}-byte chunks), got {}",
                2 * stripe,
                self.spindles,
                self.chunk_bytes,
                self.cache_bytes
            ));
        }
        if !(self.interface_mb_per_s.is_finite() && self.interface_mb_per_s > 0.0) {
            return bad(format!(
                "interface_mb_per_s must be a positive number, got {}",
                self.interface_mb_per_s
            ));
        }
        for (k, v) in [
            ("controller_latency_us", self.controller_latency_us),
            ("destage_delay_ms", self.destage_delay_ms),
            ("destage_queue_ms", self.destage_queue_ms),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("{k} must be a number >= 0, got {v}"));
            }
        }
        let hw = self.destage_high_water;
        if !(hw > 0.0 && hw <= 1.0) {
            return bad(format!(
                "destage_high_water must be a fraction of the cache above 0 and at most 1, got {hw}"
            ));
        }
        Ok(())
    }
}

/// Where the stripes lie: left-symmetric RAID 6 (P rotates down from the last disk,
/// Q follows it, data chunks follow Q), stripe `s` at offset `s * chunk` on every disk.
#[derive(Debug, Clone, Copy)]
struct Layout {
    n: u64,
    chunk: u64,
    /// Data bytes per stripe.
    stripe: u64,
    /// The span offsets are clamped to: whole stripes covering `capacity_bytes`.
    span: u64,
}

impl Layout {
    fn new(p: &RaidParams) -> Self {
        let stripe = p.chunk_bytes * (p.spindles - 2);
        let stripes = p.capacity_bytes.div_ceil(stripe);
        Layout {
            n: p.spindles,
            chunk: p.chunk_bytes,
            stripe,
            span: stripes.saturating_mul(stripe),
        }
    }

    fn p_disk(&self, s: u64) -> usize {
        (self.n - 1 - s % self.n) as usize
    }

    fn q_disk(&self, s: u64) -> usize {
        (self.p_disk(s) + 1) % self.n as usize
    }

    fn data_disk(&self, s: u64, i: u64) -> usize {
        ((self.p_disk(s) as u64 + 2 + i) % self.n) as usize
    }

    /// `offset..offset+len` moved inside the array and widened to 4 KiB blocks.
    fn clamp(&self, offset: u64, len: u64) -> (u64, u64) {
        let len = len.min(self.span);
        let start = offset.min(self.span - len) / KIB4 * KIB4;
        let end = (start + len)
            .div_ceil(KIB4)
            .saturating_mul(KIB4)
            .min(self.span);
        (start, end)
    }

    /// The stripe pieces of `start..end`: (stripe, stripe-relative start, end).
    fn pieces(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let first = start / self.stripe;
        let last = end.saturating_sub(1) / self.stripe;
        (first..=last).filter(move |_| end > start).map(move |s| {
            let base = s * self.stripe;
            (
                s,
                start.max(base) - base,
                end.min(base + self.stripe) - base,
            )
        })
    }

    /// Per-disk byte ranges of the data in a stripe-relative range of stripe `s`.
    fn data_ranges(&self, s: u64, a: u64, b: u64) -> impl Iterator<Item = (usize, u64, u64)> + '_ {
        let first = a / self.chunk;
        let last = b.saturating_sub(1) / self.chunk;
        (first..=last).filter(move |_| b > a).map(move |i| {
            let (lo, hi) = (a.max(i * self.chunk), b.min((i + 1) * self.chunk));
            let base = s * self.chunk;
            let within = i * self.chunk;
            (self.data_disk(s, i), base + lo - within, base + hi - within)
        })
    }
}

/// What the destage may do next: issue stripe `s` at `t`, or nothing before `t`.
enum Next {
    Issue(Duration, u64),
    NotBefore(Duration),
    Idle,
}

/// The array: controller, cache, destage and spindles.
#[derive(Debug, Clone)]
pub struct RaidModel {
    p: RaidParams,
    l: Layout,
    spindles: Vec<HddModel>,
    /// When each spindle finishes what it has been given (mirrors its own queue).
    busy: Vec<Duration>,
    /// Where each spindle's last access ended, for read-ahead across parity chunks.
    heads: Vec<u64>,
    /// Reads and writes sent to each spindle (tests and counters).
    ops: Vec<[u64; 2]>,
    dirty: BTreeMap<u64, StripeDirty>,
    dirty_bytes: u64,
    /// Dirty stripes not yet eligible, oldest last write first.
    by_age: BTreeSet<(Duration, u64)>,
    /// Stripes eligible for destage (full, or aged).
    ready: BTreeSet<u64>,
    /// Destaging stripes: (completion, data bytes), earliest first.
    in_flight: BinaryHeap<Reverse<(Duration, u64)>>,
    in_flight_bytes: u64,
    /// The elevator: the last stripe destaged; the next is the first above it.
    cursor: Option<u64>,
    /// The destage has been simulated up to here; it issues nothing earlier.
    clock: Duration,
    /// When the host link is free.
    link_free: Duration,
    /// A volatile flush is draining: every dirty stripe is eligible.
    draining: bool,
}

impl RaidModel {
    pub fn new(p: RaidParams) -> Result<Self, ModelError> {
        p.validate()?;
        let l = Layout::new(&p);
        let per_disk = (l.span / l.stripe).saturating_mul(l.chunk);
        let spindles = (0..p.spindles)
            .map(|i| {
                HddModel::new(HddParams {
                    seed: p.seed.wrapping_add(i),
                    capacity_bytes: per_disk,
                    ..p.spindle.clone()
                })
                .map_err(|e| match e {
                    ModelError::Invalid { reason, .. } => {
                        ModelError::invalid(NAME, format!("spindle: {reason}"))
                    }
                    other => other,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let n = spindles.len();
        Ok(RaidModel {
            p,
            l,
            spindles,
            busy: vec![Duration::ZERO; n],
            heads: vec![0; n],
            ops: vec![[0; 2]; n],
            dirty: BTreeMap::new(),
            dirty_bytes: 0,
            by_age: BTreeSet::new(),
            ready: BTreeSet::new(),
            in_flight: BinaryHeap::new(),
            in_flight_bytes: 0,
            cursor: None,
            clock: Duration::ZERO,
            link_free: Duration::ZERO,
            draining: false,
        })
    }

    /// Bytes held in the cache: dirty, and being destaged.
    pub fn cached_bytes(&self) -> u64 {
        self.dirty_bytes + self.in_flight_bytes
    }

    fn latency(&self) -> Duration {
        us(self.p.controller_latency_us)
    }

    fn link(&self, len: u64) -> Duration {
        transfer_time(len, self.p.interface_mb_per_s)
    }

    /// One access on spindle `j` queued at `t`; returns when it ends.
    fn op(
        &mut self,
        j: usize,
        kind: Kind,
        offset: u64,
        len: u64,
        t: Duration,
        acc: &mut Service,
    ) -> Duration {
        let s = self.spindles[j].service(&Request { kind, offset, len }, t);
        let end = t.saturating_add(s.duration);
        self.busy[j] = end;
        if matches!(kind, Kind::Read | Kind::Write) {
            self.heads[j] = offset.saturating_add(len);
            self.ops[j][(kind == Kind::Write) as usize] += 1;
        }
        acc.seek += s.seek;
        acc.rotation += s.rotation;
        acc.transfer += s.transfer;
        end
    }

    fn free_completed(&mut self, t: Duration) {
        while let Some(&Reverse((done, bytes))) = self.in_flight.peek() {
            if done > t {
                break;
            }
            self.in_flight.pop();
            self.in_flight_bytes -= bytes;
        }
    }

    fn over_high_water(&self) -> bool {
        self.cached_bytes() as f64 > self.p.destage_high_water * self.p.cache_bytes as f64
    }

    /// Where the elevator looks first: above the last stripe it destaged.
    fn sweep_from(&self) -> u64 {
        self.cursor.map_or(0, |c| c.saturating_add(1))
    }

    /// The first dirty stripe above the cursor, else the lowest (the sweep restarts).
    fn next_dirty(&self) -> Option<u64> {
        let from = self.sweep_from();
        self.dirty
            .range(from..)
            .next()
            .or_else(|| self.dirty.iter().next())
            .map(|(&s, _)| s)
    }

    /// The first eligible stripe above the cursor, else the lowest.
    fn next_ready(&self) -> Option<u64> {
        let from = self.sweep_from();
        self.ready
            .range(from..)
            .next()
            .or_else(|| self.ready.first())
            .copied()
    }

    /// What the destage does next, promoting stripes that have aged by then (only up
    /// to `limit`, so that later writes can still make them young again).
    fn next(&mut self, limit: Duration) -> Next {
        let t0 = self.clock;
        self.free_completed(t0);
        let (te, s) = if self.draining || self.over_high_water() {
            // Everything may go, but full and aged stripes first: a stripe a stream
            // is still filling is destaged partial only when nothing else is left.
            if t0 <= limit {
                self.promote(t0);
            }
            match self.next_ready().or_else(|| self.next_dirty()) {
                Some(s) => (t0, s),
                None => return Next::Idle,
            }
        } else {
            let te = match (self.ready.is_empty(), self.by_age.first()) {
                (false, _) => t0,
                (true, Some(&(lw, _))) => t0.max(lw.saturating_add(ms(self.p.destage_delay_ms))),
                (true, None) => return Next::Idle,
            };
            if te > limit {
                return Next::NotBefore(te);
            }
            self.promote(te);
            match self.next_ready() {
                Some(s) => (te, s),
                None => return Next::Idle,
            }
        };
        let queue = ms(self.p.destage_queue_ms);
        let spindles_free = self
            .stripe_disks(s)
            .map(|j| self.busy[j].saturating_sub(queue))
            .max()
            .unwrap_or_default();
        let t = te.max(spindles_free);
        if t > limit {
            Next::NotBefore(t)
        } else {
            Next::Issue(t, s)
        }
    }

    /// Make the stripes whose last write is `destage_delay_ms` old by `t` eligible.
    fn promote(&mut self, t: Duration) {
        let delay = ms(self.p.destage_delay_ms);
        while let Some(&(lw, s)) = self.by_age.first() {
            if lw.saturating_add(delay) > t {
                break;
            }
            self.by_age.pop_first();
            self.ready.insert(s);
        }
    }

    /// The disks a destage of stripe `s` touches.
    fn stripe_disks(&self, s: u64) -> impl Iterator<Item = usize> + '_ {
        let d = &self.dirty[&s];
        let full = d.bytes == self.l.stripe;
        let data: Vec<usize> = if full {
            (0..self.l.n - 2).map(|i| self.l.data_disk(s, i)).collect()
        } else {
            d.chunks(self.l.chunk)
                .map(|i| self.l.data_disk(s, i))
                .collect()
        };
        data.into_iter().chain([self.l.p_disk(s), self.l.q_disk(s)])
    }

    /// Destage stripe `s` starting at `t`.
    fn issue(&mut self, s: u64, t: Duration) {
        let d = self.dirty.remove(&s).expect("issued stripes are dirty");
        self.by_age.remove(&(d.last_write, s));
        self.ready.remove(&s);
        self.dirty_bytes -= d.bytes;
        let (l, chunk) = (self.l, self.l.chunk);
        let base = s * chunk;
        let mut acc = Service::default();
        let done = if d.bytes == l.stripe {
            // Full stripe: data, P and Q in parallel, nothing to read.
            let disks: Vec<usize> = (0..l.n as usize).collect();
            disks
                .into_iter()
                .map(|j| self.op(j, Kind::Write, base, chunk, t, &mut acc))
                .max()
                .unwrap_or(t)
        } else {
            // Read-modify-write: old data of the chunks being overwritten and the old
            // P and Q over the same rows; then write them all once every read is in.
            let mut ranges: Vec<(usize, u64, u64)> = d
                .chunk_spans(chunk)
                .map(|(i, a, b)| (l.data_disk(s, i), base + a, base + b))
                .collect();
            let (pa, pb) = d.row_span(chunk);
            ranges.push((l.p_disk(s), base + pa, base + pb));
            ranges.push((l.q_disk(s), base + pa, base + pb));
            let reads = ranges
                .iter()
                .map(|&(j, a, b)| self.op(j, Kind::Read, a, b - a, t, &mut acc))
                .max()
                .unwrap_or(t);
            ranges
                .iter()
                .map(|&(j, a, b)| self.op(j, Kind::Write, a, b - a, reads, &mut acc))
                .max()
                .unwrap_or(reads)
        };
        self.in_flight.push(Reverse((done, d.bytes)));
        self.in_flight_bytes += d.bytes;
        self.cursor = Some(s);
        self.clock = t;
    }

    /// Run the destage up to `limit`.
    fn advance(&mut self, limit: Duration) {
        while let Next::Issue(t, s) = self.next(limit) {
            self.issue(s, t);
        }
        self.clock = self.clock.max(limit);
        self.free_completed(limit);
    }

    /// Run the destage from `t` until `bytes` more fit in the cache; returns when.
    fn make_room(&mut self, bytes: u64, mut t: Duration) -> Duration {
        loop {
            self.advance(t);
            if self.cached_bytes() + bytes <= self.p.cache_bytes {
                return t;
            }
            let completion = self.in_flight.peek().map(|r| r.0 .0);
            // After `advance(t)` nothing is due by `t`: this only looks ahead.
            let issue = match self.next(t) {
                Next::Issue(ti, _) | Next::NotBefore(ti) => Some(ti),
                Next::Idle => None,
            };
            t = match (completion, issue) {
                (Some(c), Some(i)) => c.min(i),
                (Some(x), None) | (None, Some(x)) => x,
                // Nothing held: it fits (validation keeps a piece below the cache).
                (None, None) => return t,
            };
        }
    }

    fn write(&mut self, offset: u64, len: u64, now: Duration) -> Service {
        self.advance(now);
        let (start, end) = self.l.clamp(offset, len);
        let mut t = now.max(self.link_free);
        let mut stalled = false;
        let l = self.l;
        for (s, a, b) in l.pieces(start, end) {
            let added = self.dirty.get(&s).map_or(b - a, |d| d.new_bytes(a, b));
            if self.cached_bytes() + added > self.p.cache_bytes {
                t = self.make_room(added, t);
                stalled = true;
            }
            self.insert(s, a, b, now);
            t = t.saturating_add(self.link(b - a));
        }
        self.link_free = t;
        let done = t.saturating_add(self.latency());
        Service {
            duration: done.saturating_sub(now),
            cached: !stalled,
            ..Service::default()
        }
    }

    fn insert(&mut self, s: u64, a: u64, b: u64, now: Duration) {
        let d = self.dirty.entry(s).or_default();
        self.by_age.remove(&(d.last_write, s));
        self.dirty_bytes += d.insert(a, b);
        d.last_write = now;
        if d.bytes == self.l.stripe {
            self.ready.insert(s);
        } else {
            // Written again: it waits its delay afresh.
            self.ready.remove(&s);
            self.by_age.insert((now, s));
        }
    }

    fn read(&mut self, offset: u64, len: u64, now: Duration) -> Service {
        self.advance(now);
        let (start, end) = self.l.clamp(offset, len);
        let hit = self
            .l
            .pieces(start, end)
            .all(|(s, a, b)| self.dirty.get(&s).is_some_and(|d| d.covers(a, b)));
        let mut acc = Service::default();
        let media_done = if hit {
            now
        } else {
            // One access per spindle over everything it holds of the range (parity
            // chunks in between are read through, as the disk's read-ahead would).
            let mut span: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
            for (s, a, b) in self.l.pieces(start, end) {
                for (j, lo, hi) in self.l.data_ranges(s, a, b) {
                    let e = span.entry(j).or_insert((lo, hi));
                    *e = (e.0.min(lo), e.1.max(hi));
                }
            }
            let t0 = now.saturating_add(self.latency());
            let mut done = t0;
            for (j, (mut lo, hi)) in span {
                let head = self.heads[j];
                if head < lo && lo - head <= 2 * self.l.chunk {
                    lo = head;
                }
                done = done.max(self.op(j, Kind::Read, lo, hi - lo, t0, &mut acc));
            }
            done
        };
        let t = media_done
            .max(self.link_free)
            .saturating_add(self.link(end - start));
        self.link_free = t;
        let done = if hit {
            t.saturating_add(self.latency())
        } else {
            t
        };
        Service {
            duration: done.saturating_sub(now),
            cached: hit,
            ..acc
        }
    }

    fn flush(&mut self, now: Duration) -> Service {
        self.advance(now);
        let mut done = now;
        if !self.p.nonvolatile {
            self.draining = true;
            self.advance_all();
            self.draining = false;
            done = self
                .in_flight
                .iter()
                .map(|r| r.0 .0)
                .max()
                .unwrap_or(now)
                .max(now);
            // Disks with their own volatile cache are flushed too.
            if self.p.spindle.write_cache {
                let mut acc = Service::default();
                for j in 0..self.spindles.len() {
                    let end = self.op(j, Kind::Flush, 0, 0, done, &mut acc);
                    done = done.max(end);
                }
            }
        }
        let done = done.saturating_add(self.latency());
        Service {
            duration: done.saturating_sub(now),
            cached: self.p.nonvolatile,
            ..Service::default()
        }
    }

    /// Issue every dirty stripe, however far ahead of now.
    fn advance_all(&mut self) {
        loop {
            match self.next(Duration::MAX) {
                Next::Issue(t, s) => self.issue(s, t),
                Next::NotBefore(_) | Next::Idle => return,
            }
        }
    }
}

impl DeviceModel for RaidModel {
    fn name(&self) -> &'static str {
        NAME
    }

    fn service(&mut self, req: &Request, now: Duration) -> Service {
        match req.kind {
            Kind::Read | Kind::Write if req.len == 0 => Service::default(),
            Kind::Read => self.read(req.offset, req.len, now),
            Kind::Write => self.write(req.offset, req.len, now),
            Kind::Flush => self.flush(now),
            // As on the studies' disks: no TRIM, and cached data stays cached.
            Kind::Discard => Service::default(),
        }
    }

    fn min_service(&self) -> Duration {
        self.latency() + self.link(KIB4)
    }

    fn capacity_bytes(&self) -> Option<u64> {
        Some(self.p.capacity_bytes)
    }

    /// Study 4's battery-backed cache keeps what it acknowledged; data can be lost only
    /// from a cache without the battery, or from the spindles' own volatile caches once
    /// destaged.
    fn volatile_cache(&self) -> bool {
        !self.p.nonvolatile || self.p.spindle.write_cache
    }

    fn cache_words(&self) -> CacheWords {
        let (cache, flush) = if self.p.nonvolatile {
            ("write back, battery-backed", "completes at once")
        } else {
            ("write back", "drains the cache")
        };
        CacheWords {
            cache,
            cache_bytes: Some(self.p.cache_bytes),
            flush,
            flush_latency_us: None,
        }
    }

    /// A battery-backed controller answers a flush without flushing the spindles, so
    /// their volatile caches are never made durable by one; without the battery a
    /// flush reaches them, and is as honest as they are.
    fn honors_flush(&self) -> bool {
        !self.p.spindle.write_cache || (!self.p.nonvolatile && self.p.spindle.honor_flush)
    }
}

#[cfg(test)]
mod tests;
