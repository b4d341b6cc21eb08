//! `jbench device qualify DIR`: is the device under DIR fit to hold a journal or a
//! log? Measured at queue depth 1 in a scratch directory that is removed afterwards:
//! write+flush latency by size (FreeBSD's `diskinfo -wS` pattern), `fdatasync` after
//! small appends (etcd's and PostgreSQL's), random 4 KiB and sequential 1 MiB reads
//! and writes, and what a flush costs beside a write.

pub mod check_copy;
mod emulated;
mod fit;
mod fit_file;
mod patterns;
mod scratch;
mod words;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

pub use emulated::{qualify_model, ModelOptions};
pub use fit::{fit, render_fit, Fit};
pub use fit_file::{check_name, write_fit, Written};
pub use patterns::{Pattern, Patterns};
pub use words::{findings, render};

use crate::emu::model::Request;
use crate::events::{step, Activity};
use crate::measure::{Direct, Latency, Target, MAX_REQUEST};
use scratch::Scratch;

/// Bytes of one append before each `fdatasync`: etcd's write-ahead-log recipe for fio
/// (`--fdatasync=1 --bs=2300 --size=22m`), the figure its documentation compares with
/// 10 ms at the 99th percentile.
pub const APPEND_BYTES: u64 = 2300;
/// At most this many bytes of appends (the recipe's 22 MiB, about 10,000 of them).
pub const APPEND_TOTAL: u64 = 22 << 20;
/// Sizes of the write+flush pattern.
pub const WRITE_FLUSH_SIZES: [u64; 5] = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];
/// Never-written room of a loop image for the fresh write+flush pattern: a trial's
/// image is sparse, so its file system's first writes land on unallocated blocks, and
/// the host's `fdatasync` then allocates them too (216-303 µs against 132-158 µs for a
/// flush after a 4 KiB write to written blocks, on the development VM's ext4).
pub const FRESH_ROOM: u64 = 64 << 20;
/// Sizes of the fresh write+flush pattern.
pub const FRESH_SIZES: [u64; 2] = [4 << 10, 64 << 10];
/// The p99 `fdatasync` a log device should stay under (etcd's rule of thumb).
pub const FDATASYNC_P99_LIMIT_MS: f64 = 10.0;

pub struct QualifyOptions {
    /// A directory on the device to measure.
    pub dir: PathBuf,
    /// Size of the scratch file the random and sequential patterns span.
    pub size: u64,
    /// About how long the whole measurement takes.
    pub seconds: f64,
    pub patterns: Patterns,
}

/// Rate and latency of one pattern.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub requests: u64,
    pub seconds: f64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub latency: Latency,
}

impl Rate {
    fn of(times: &[Duration], bytes_each: u64, elapsed: Duration) -> Self {
        let s = elapsed.as_secs_f64().max(1e-9);
        let n = times.len() as u64;
        Rate {
            requests: n,
            seconds: s,
            iops: n as f64 / s,
            mb_per_s: (n * bytes_each) as f64 / 1e6 / s,
            latency: Latency::of(times),
        }
    }
}

/// A write of `bytes` and the flush after it, timed apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WriteFlush {
    pub bytes: u64,
    pub write: Latency,
    pub flush: Latency,
    /// Write and flush together, as `diskinfo -wS` reports them.
    pub write_flush: Latency,
}

/// What a flush costs beside a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushShape {
    /// About what the write costs: power-loss protection, a write-through cache, or a
    /// disk that ignores flushes.
    Cheap,
    /// Much more than the write: a volatile write cache being drained.
    DrainsCache,
}

/// What `qualify` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Qualification {
    /// The directory measured in.
    pub target: String,
    pub filesystem: String,
    /// The block device under it, when there is one.
    pub device: String,
    /// sysfs: `queue/rotational` and `queue/write_cache` of that device.
    pub rotational: Option<bool>,
    pub write_cache: String,
    /// The directory is in memory (tmpfs, ramfs): the figures are memory's.
    pub memory: bool,
    /// Reads and writes bypassed the page cache (`O_DIRECT`).
    pub direct_io: bool,
    /// Measured through a loop device over an image file in the directory, as a
    /// trial's file system on that directory sees it (its flush is the host file
    /// system's `fdatasync` of the image); `false`: on a scratch file, or a device.
    #[serde(default)]
    pub through_loop_image: bool,
    pub size: u64,
    pub seconds: f64,
    /// The patterns run (`--only`); the figures of the others are zero.
    #[serde(default = "every_pattern")]
    pub measured: Vec<Pattern>,
    pub sequential_write_1m: Rate,
    pub sequential_read_1m: Rate,
    /// The same over the last 5% of the span (a rotating disk's inner zone).
    #[serde(default)]
    pub sequential_read_1m_end: Rate,
    pub random_read_4k: Rate,
    /// Random 4 KiB writes, then one flush, counted in the time.
    pub random_write_4k: Rate,
    pub write_flush: Vec<WriteFlush>,
    /// Through a loop image: writes to never-written blocks of the sparse image, each
    /// followed by a flush ([`FRESH_SIZES`]), as a trial's first writes are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fresh_write_flush: Vec<WriteFlush>,
    /// One 4 KiB block rewritten in place, each time followed by a flush (write and
    /// flush together): a log's last block at every commit.
    #[serde(default)]
    pub rewrite_flush: Latency,
    /// `fdatasync` after each [`APPEND_BYTES`]-byte append through the page cache.
    pub fdatasync: Latency,
    pub append_bytes: u64,
    /// `None` when the write+flush pattern was not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_shape: Option<FlushShape>,
    /// The random reads look like a rotating disk's (milliseconds of seek).
    pub looks_rotational: bool,
    /// The emulated model measured (`--model`), with its parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// What it says, in words.
    pub findings: Vec<String>,
}

/// An emulated disk's model: a built-in model, or a `[models]` entry of a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRef {
    pub name: String,
    pub base_model: String,
    pub params: toml::Table,
    /// The emulation path's floor, measured through the disk's loop device: what a
    /// 4 KiB read costs with the model answering at once.
    #[serde(default)]
    pub path_floor_4k_us: f64,
    /// The p50 of sequential 1 MiB reads, and of 1 MiB writes, with the model
    /// answering at once (0: not measured): the path's ceiling for a transfer rate.
    #[serde(default)]
    pub path_floor_1m_read_us: f64,
    #[serde(default)]
    pub path_floor_1m_write_us: f64,
}

/// Measures the device under `opts.dir`, telling each step as an event; stops with
/// an error when `stop` says so.
pub fn qualify(opts: &QualifyOptions, stop: &dyn Fn() -> bool) -> Result<Qualification> {
    let size = if opts.patterns.uses_data() {
        opts.size
    } else {
        0
    };
    let through_loop = loop_images_possible();
    let room = if through_loop {
        size + FRESH_ROOM
    } else {
        size
    };
    let scratch = Scratch::create(&opts.dir, room)?;
    let loc = crate::results::envinfo::storage::location("qualify", &opts.dir);
    let m = if through_loop {
        through_loop_image(&scratch, size, opts, stop)?
    } else {
        on_files(&scratch, size, opts, stop)?
    };
    let q = Qualification {
        target: opts.dir.display().to_string(),
        filesystem: loc.filesystem.clone(),
        device: loc.device.clone(),
        rotational: loc.queue.as_ref().and_then(|q| q.rotational),
        write_cache: loc
            .queue
            .as_ref()
            .map(|q| q.write_cache.clone())
            .unwrap_or_default(),
        memory: matches!(loc.filesystem.as_str(), "tmpfs" | "ramfs"),
        size,
        seconds: opts.seconds,
        model: None,
        ..m
    };
    drop(scratch);
    Ok(with_findings(q))
}

/// A loop device can be attached here (root, and the loop driver answers).
fn loop_images_possible() -> bool {
    nix::unistd::geteuid().is_root() && std::path::Path::new("/dev/loop-control").exists()
}

/// The patterns on a loop device over a sparse image in the scratch directory,
/// attached as a trial attaches an image in a real directory (through the page cache,
/// 512-byte sectors): what a trial's file system there sees, its flush the host file
/// system's `fdatasync` of the image.
fn through_loop_image(
    scratch: &Scratch,
    size: u64,
    opts: &QualifyOptions,
    stop: &dyn Fn() -> bool,
) -> Result<Qualification> {
    // The data span, the never-written room, the appends.
    let total = size + FRESH_ROOM + APPEND_TOTAL;
    let path = scratch.file("image", total)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)?;
    let mut lo = crate::rig::loopdev::LoopDevice::attach(&file, &path, 0, None)?;
    step(
        Activity::Qualify,
        format!(
            "through {} over {} (a loop image, as a trial's file system sees the directory)",
            lo.path().display(),
            path.display()
        ),
    );
    let m = if opts.patterns.uses_data() {
        let place = Place {
            data: lo.path(),
            span: size,
            log: lo.path(),
            log_base: size + FRESH_ROOM,
            fresh: Some((size, FRESH_ROOM)),
        };
        measure(&place, opts.seconds, &opts.patterns, stop)
    } else {
        qualify_device(lo.path(), total, None, opts.seconds, &opts.patterns, stop)
    };
    lo.release()?;
    Ok(Qualification {
        through_loop_image: true,
        ..m?
    })
}

/// The patterns on scratch files (without root: no loop device).
fn on_files(
    scratch: &Scratch,
    size: u64,
    opts: &QualifyOptions,
    stop: &dyn Fn() -> bool,
) -> Result<Qualification> {
    let data = scratch.file("data", size)?;
    let log = scratch.file("log", 0)?;
    // Laid out first, as etcd's and PostgreSQL's logs are (and fio's file): each
    // fdatasync then commits an extent conversion, not a growing file.
    scratch::preallocate(&log, APPEND_TOTAL)?;
    let place = Place {
        data: &data,
        span: size,
        log: &log,
        log_base: 0,
        fresh: None,
    };
    measure(&place, opts.seconds, &opts.patterns, stop)
}

/// Measures a block device of `size` bytes the caller may overwrite (an emulated
/// disk's loop device, or a device named with `--destroy-data-on`): the data patterns
/// over its first `span` bytes (all but its last [`APPEND_TOTAL`] when `None`), the
/// appends in those last bytes.
pub fn qualify_device(
    dev: &Path,
    size: u64,
    span: Option<u64>,
    seconds: f64,
    patterns: &Patterns,
    stop: &dyn Fn() -> bool,
) -> Result<Qualification> {
    if size < APPEND_TOTAL + (16 << 20) {
        bail!(
            "{} holds {}; qualify needs at least {}",
            dev.display(),
            crate::units::format_size(size),
            crate::units::format_size(APPEND_TOTAL + (16 << 20))
        );
    }
    let room = size - APPEND_TOTAL;
    let span = span.unwrap_or(room).min(room) / MAX_REQUEST as u64 * MAX_REQUEST as u64;
    let place = Place {
        data: dev,
        span,
        log: dev,
        log_base: size - APPEND_TOTAL,
        fresh: None,
    };
    let m = measure(&place, seconds, patterns, stop)?;
    let queue = std::fs::canonicalize(dev)
        .ok()
        .and_then(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()))
        .and_then(|n| crate::results::envinfo::storage::BlockQueue::of(&n));
    Ok(with_findings(Qualification {
        target: dev.display().to_string(),
        device: dev.display().to_string(),
        rotational: queue.as_ref().and_then(|q| q.rotational),
        write_cache: queue.map(|q| q.write_cache).unwrap_or_default(),
        size,
        seconds,
        ..m
    }))
}

fn every_pattern() -> Vec<Pattern> {
    Pattern::ALL.to_vec()
}

fn with_findings(mut q: Qualification) -> Qualification {
    q.findings = findings(&q);
    q
}

/// Where the patterns go: the data patterns in `data`'s first `span` bytes, the
/// appends in `log` from `log_base`.
struct Place<'a> {
    data: &'a Path,
    span: u64,
    log: &'a Path,
    log_base: u64,
    /// `(offset, length)` of never-written room in `data` for the fresh write+flush
    /// pattern (a loop image), if any.
    fresh: Option<(u64, u64)>,
}

/// Runs the chosen patterns; the figures about the place itself are left empty, and
/// those of a pattern not chosen are zero.
fn measure(
    place: &Place,
    seconds: f64,
    patterns: &Patterns,
    stop: &dyn Fn() -> bool,
) -> Result<Qualification> {
    let budget = |p: Pattern, part: f64| {
        Duration::from_secs_f64((seconds * patterns.share(p) * part).max(0.2))
    };
    let mut q = Qualification {
        target: String::new(),
        filesystem: String::new(),
        device: String::new(),
        rotational: None,
        write_cache: String::new(),
        memory: false,
        direct_io: false,
        through_loop_image: false,
        size: place.span,
        seconds,
        model: None,
        measured: patterns.list(),
        sequential_write_1m: Rate::default(),
        sequential_read_1m: Rate::default(),
        sequential_read_1m_end: Rate::default(),
        random_read_4k: Rate::default(),
        random_write_4k: Rate::default(),
        write_flush: Vec::new(),
        fresh_write_flush: Vec::new(),
        rewrite_flush: Latency::default(),
        fdatasync: Latency::default(),
        append_bytes: APPEND_BYTES,
        flush_shape: None,
        looks_rotational: false,
        findings: Vec::new(),
    };
    // A write's and its flush's times; reused, so nothing is allocated between them.
    let mut pair = Vec::with_capacity(2);
    if patterns.uses_data() {
        let mut t = Target::open(place.data, Direct::Preferred)?;
        measure_data(&mut t, &mut q, place, patterns, &budget, stop, &mut pair)?;
        q.direct_io = t.direct();
    }

    if patterns.has(Pattern::Fdatasync) {
        step(
            Activity::Qualify,
            format!("{APPEND_BYTES}-byte appends, each followed by fdatasync"),
        );
        let mut l = Target::open(place.log, Direct::Never)?;
        let until = Instant::now() + budget(Pattern::Fdatasync, 1.0);
        // Never more than the log holds: no reallocation between the appends.
        let mut syncs = Vec::with_capacity((APPEND_TOTAL / APPEND_BYTES) as usize);
        let mut off = 0;
        while (Instant::now() < until || syncs.len() < 10) && off + APPEND_BYTES <= APPEND_TOTAL {
            check(stop)?;
            pair.clear();
            l.run(
                &[
                    Request::write(place.log_base + off, APPEND_BYTES),
                    Request::flush(),
                ],
                Some(&mut pair),
            )?;
            syncs.push(pair[1]);
            off += APPEND_BYTES;
        }
        q.fdatasync = Latency::of(&syncs);
    }
    Ok(q)
}

/// The patterns in the data file: it is written whole first (a read of a block never
/// written measures no device), which is the sequential write's measurement.
#[allow(clippy::too_many_arguments)]
fn measure_data(
    t: &mut Target,
    q: &mut Qualification,
    place: &Place,
    patterns: &Patterns,
    budget: &dyn Fn(Pattern, f64) -> Duration,
    stop: &dyn Fn() -> bool,
    pair: &mut Vec<Duration>,
) -> Result<()> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let blocks = place.span / 4096;
    let big = MAX_REQUEST as u64;

    step(
        Activity::Qualify,
        format!(
            "writing {} in 1 MiB requests",
            crate::units::format_size(place.span)
        ),
    );
    let mut times = Vec::new();
    let started = Instant::now();
    let mut off = 0;
    while off < place.span {
        check(stop)?;
        let len = (place.span - off).min(big);
        t.run(&[Request::write(off, len)], Some(&mut times))?;
        off += len;
    }
    t.run(&[Request::flush()], None)?;
    q.sequential_write_1m = Rate::of(&times, big, started.elapsed());

    if patterns.has(Pattern::Sequential) {
        step(
            Activity::Qualify,
            "sequential 1 MiB reads, at the start and at the end",
        );
        let whole = (place.span / big).max(1);
        q.sequential_read_1m = timed(t, budget(Pattern::Sequential, 0.5), stop, big, |i| {
            Request::read(i % whole * big, big)
        })?;
        // A rotating disk's outer zone is at the start, its inner zone at the end.
        let tail = (whole / 20).max(1);
        q.sequential_read_1m_end = timed(t, budget(Pattern::Sequential, 0.5), stop, big, |i| {
            Request::read((whole - tail + i % tail) * big, big)
        })?;
    }
    if patterns.has(Pattern::Random) {
        step(Activity::Qualify, "random 4 KiB reads");
        q.random_read_4k = timed(t, budget(Pattern::Random, 0.5), stop, 4096, |_| {
            Request::read(rng.gen_range(0..blocks) * 4096, 4096)
        })?;
        q.looks_rotational = q.random_read_4k.latency.p50_us > 2000.0;
        step(Activity::Qualify, "random 4 KiB writes");
        let mut rng2 = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let mut w = timed(t, budget(Pattern::Random, 0.5), stop, 4096, |_| {
            Request::write(rng2.gen_range(0..blocks) * 4096, 4096)
        })?;
        // The writes are paid for when they are durable: the flush after them counts.
        let flush = t.run(&[Request::flush()], None)?;
        w.seconds += flush.as_secs_f64();
        w.iops = w.requests as f64 / w.seconds;
        w.mb_per_s = w.iops * 4096.0 / 1e6;
        q.random_write_4k = w;
    }

    if patterns.has(Pattern::WriteFlush) {
        let mut rng3 = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for bytes in WRITE_FLUSH_SIZES {
            let slots = (place.span / bytes).max(1);
            let until =
                Instant::now() + budget(Pattern::WriteFlush, 1.0 / WRITE_FLUSH_SIZES.len() as f64);
            q.write_flush.push(write_flush_series(
                t,
                bytes,
                "",
                until,
                &mut || Some(rng3.gen_range(0..slots) * bytes),
                stop,
                pair,
            )?);
        }
        q.flush_shape = Some(shape(&q.write_flush[0]));
        if let Some((base, len)) = place.fresh {
            q.fresh_write_flush = fresh_write_flush(t, base, len, budget, stop, pair)?;
        }
    }
    if patterns.has(Pattern::Rewrite) {
        // A log rewrites its last, partly filled block at every commit: on a rotating
        // disk the sector has just passed under the head, so each costs a revolution.
        step(
            Activity::Qualify,
            "one 4 KiB block rewritten in place, each time followed by a flush",
        );
        let until = Instant::now() + budget(Pattern::Rewrite, 1.0);
        let mut rewrites = Vec::new();
        while Instant::now() < until || rewrites.len() < 5 {
            check(stop)?;
            pair.clear();
            t.run(&[Request::write(0, 4096), Request::flush()], Some(pair))?;
            rewrites.push(pair[0] + pair[1]);
        }
        q.rewrite_flush = Latency::of(&rewrites);
    }
    Ok(())
}

/// Writes of [`FRESH_SIZES`], each to the next never-written offset of
/// `[base, base + len)` (a share of it per size) and followed by a flush.
fn fresh_write_flush(
    t: &mut Target,
    base: u64,
    len: u64,
    budget: &dyn Fn(Pattern, f64) -> Duration,
    stop: &dyn Fn() -> bool,
    pair: &mut Vec<Duration>,
) -> Result<Vec<WriteFlush>> {
    let share = len / FRESH_SIZES.len() as u64;
    let mut out = Vec::new();
    for (i, bytes) in FRESH_SIZES.into_iter().enumerate() {
        let start = base + i as u64 * share;
        let until = Instant::now() + budget(Pattern::WriteFlush, 0.5 / FRESH_SIZES.len() as f64);
        let mut off = start;
        let mut next = || {
            let here = off;
            off += bytes;
            (here + bytes <= start + share).then_some(here)
        };
        out.push(write_flush_series(
            t,
            bytes,
            " to never-written blocks",
            until,
            &mut next,
            stop,
            pair,
        )?);
    }
    Ok(out)
}

/// Writes of `bytes` at the offsets `next` gives (until it gives none), each followed
/// by a flush, until `until` and at least 3 of them; `to`: where they go, in words.
fn write_flush_series(
    t: &mut Target,
    bytes: u64,
    to: &str,
    until: Instant,
    next: &mut dyn FnMut() -> Option<u64>,
    stop: &dyn Fn() -> bool,
    pair: &mut Vec<Duration>,
) -> Result<WriteFlush> {
    step(
        Activity::Qualify,
        format!(
            "{} writes{to}, each followed by a flush",
            crate::units::format_size(bytes)
        ),
    );
    let (mut w, mut f) = (Vec::new(), Vec::new());
    while Instant::now() < until || w.len() < 3 {
        let Some(off) = next() else { break };
        check(stop)?;
        pair.clear();
        t.run(&[Request::write(off, bytes), Request::flush()], Some(pair))?;
        w.push(pair[0]);
        f.push(pair[1]);
    }
    // Summed after the loop, not inside it: nothing more between the requests.
    let both: Vec<Duration> = w.iter().zip(&f).map(|(a, b)| *a + *b).collect();
    Ok(WriteFlush {
        bytes,
        write: Latency::of(&w),
        flush: Latency::of(&f),
        write_flush: Latency::of(&both),
    })
}

/// A flush is cheap when it costs no more than the write before it and 100 µs
/// together (a drive's command overhead), however long the write took.
fn shape(small: &WriteFlush) -> FlushShape {
    if small.flush.p50_us <= (small.write.p50_us + 100.0).max(small.write.p50_us * 1.5) {
        FlushShape::Cheap
    } else {
        FlushShape::DrainsCache
    }
}

fn check(stop: &dyn Fn() -> bool) -> Result<()> {
    if stop() {
        bail!("interrupted");
    }
    Ok(())
}

/// Sends request `next(i)` for i = 0, 1, ... until `budget` is spent (at least 3 times).
fn timed(
    t: &mut Target,
    budget: Duration,
    stop: &dyn Fn() -> bool,
    bytes_each: u64,
    mut next: impl FnMut(u64) -> Request,
) -> Result<Rate> {
    let mut times = Vec::new();
    let started = Instant::now();
    let mut i = 0;
    while started.elapsed() < budget || i < 3 {
        check(stop)?;
        t.run(&[next(i)], Some(&mut times))?;
        i += 1;
    }
    Ok(Rate::of(&times, bytes_each, started.elapsed()))
}
