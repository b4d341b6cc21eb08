//! `jbench device stress`: many concurrent writers on one emulated disk, through the
//! whole path (loop device, FUSE, daemon), to show the daemon never stalls.
//!
//! Each writer sends O_DIRECT writes of 4 KiB to 4 MiB (sizes spread evenly over the
//! powers of two, so large and small requests mix) to random places in its own part of
//! the disk, with an `fdatasync` after about one write in eight, until the time is up.
//! Afterwards the run is judged on what the daemon and the watchdog saw: no watchdog
//! abort, no image I/O call blocked past the overdue bound, and no answer sent more
//! than [`LATE_BOUND`] after its model deadline; every request's latency as the writer
//! saw it is reported.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::emu::daemon::DiskSpec;
use crate::emu::EmulationOptions;
use crate::events::{step, Activity};
use crate::file_id::FileId;
use crate::measure::{quantile, DirectBuf};
use crate::rig::emulated::{self, DeviceDaemon};
use crate::rig::image::ImageFile;
use crate::rig::session::SessionDir;

/// How far past its model deadline any answer may go in a stress run: far above a
/// healthy daemon's lateness (under 1 ms; tens of ms on a busy host), far below a
/// stall (the daemon's overdue bound, 1 s).
pub const LATE_BOUND: Duration = Duration::from_millis(100);

/// What to stress and how.
#[derive(Debug, Clone)]
pub struct StressOptions {
    /// Built-in model name.
    pub model: String,
    pub params: toml::Table,
    /// Size of the emulated disk.
    pub size: u64,
    /// Where the session directory (mount point, daemon files) goes.
    pub work_dir: PathBuf,
    /// Where the image goes (a tmpfs by default, as in a run).
    pub image_dir: PathBuf,
    pub writers: usize,
    pub seconds: f64,
    pub seed: u64,
}

/// One writer's view of its requests.
#[derive(Debug, Default, Clone)]
struct Seen {
    writes: u64,
    flushes: u64,
    bytes: u64,
    /// Microseconds per request, writes and flushes alike.
    latencies_us: Vec<u32>,
    error: Option<String>,
}

/// The figures of one stress run.
#[derive(Debug, Clone, Serialize)]
pub struct StressReport {
    pub model: String,
    pub writers: usize,
    pub seconds: f64,
    pub writes: u64,
    pub flushes: u64,
    pub bytes: u64,
    /// Latency of a request as its writer saw it (queueing behind the other writers
    /// included), in microseconds.
    pub p50_us: u32,
    pub p99_us: u32,
    pub max_us: u32,
    /// Answers the daemon sent more than 1 ms after their model deadline.
    pub late: u64,
    /// Requests the daemon answered past the overdue bound.
    pub overdue: u64,
    /// Image I/O calls that blocked the daemon past the overdue bound.
    pub slow_io: u64,
    /// How late the latest answer was past its model deadline, in ms.
    pub worst_late_ms: f64,
    /// Why the watchdog aborted the daemon's connection, if it did.
    pub aborted: Option<String>,
    /// Errors the writers met (EIO after an abort, ...).
    pub errors: Vec<String>,
    pub ok: bool,
}

/// Sizes of the writes: 4 KiB to 4 MiB, each power of two equally likely.
const SIZES: [u64; 11] = [
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
    2 << 20,
    4 << 20,
];

/// One writer: random writes in `[base, base + span)` until `stop`.
fn writer(dev: &Path, base: u64, span: u64, seed: u64, stop: &AtomicBool) -> Seen {
    let mut seen = Seen::default();
    let mut run = || -> Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(dev)
            .with_context(|| format!("cannot open {} with O_DIRECT", dev.display()))?;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut buf = DirectBuf::new(SIZES[SIZES.len() - 1] as usize)?;
        while !stop.load(Ordering::Relaxed) {
            let len = SIZES[rng.gen_range(0..SIZES.len())].min(span);
            let slots = (span - len) / 4096 + 1;
            let offset = base + rng.gen_range(0..slots) * 4096;
            let t = Instant::now();
            f.write_all_at(buf.get(len as usize), offset)
                .with_context(|| format!("write of {len} bytes at {offset}"))?;
            seen.latencies_us
                .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
            seen.writes += 1;
            seen.bytes += len;
            if rng.gen_range(0..8) == 0 {
                let t = Instant::now();
                nix::unistd::fdatasync(f.as_raw_fd()).context("fdatasync")?;
                seen.latencies_us
                    .push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                seen.flushes += 1;
            }
        }
        Ok(())
    };
    if let Err(e) = run() {
        seen.error = Some(format!("{e:#}"));
    }
    seen
}

/// Runs the stress on one model, telling each step as an event.
pub fn stress(opts: &StressOptions, ctl: &crate::workload::RunControl) -> Result<StressReport> {
    crate::emu::model_by_name(&opts.model, Some(&opts.params))?;
    let session = SessionDir::create(&opts.work_dir)?;
    let image_session = SessionDir::create(&opts.image_dir)?;
    let image = ImageFile::create(&image_session, "stress.img", opts.size)?;
    let disks = [DiskSpec {
        name: "dut".into(),
        image: image.path().to_path_buf(),
        model: opts.model.clone(),
        params: opts.params.clone(),
        image_id: Some(FileId::of(image.file())?),
    }];
    let (daemon_cpus, mine) = emulated::split_cpus(&emulated::allowed_cpus()).unwrap_or_default();
    let restore = if mine.is_empty() {
        None
    } else {
        Some(emulated::pin_current_thread(&mine)?)
    };
    let result = (|| {
        let mut daemon = DeviceDaemon::start(
            &session,
            &disks,
            &EmulationOptions::default(),
            daemon_cpus,
            None,
        )?;
        let run = (|| {
            let mut dev = daemon.attach_disk("dut", 0, None)?;
            daemon.set_timing(true)?;
            step(
                Activity::Selftest,
                format!(
                    "{}: {} writers of 4 KiB to 4 MiB with flushes for {:.0} s",
                    opts.model, opts.writers, opts.seconds
                ),
            );
            let stop = Arc::new(AtomicBool::new(false));
            let span = (opts.size / opts.writers as u64) / 4096 * 4096;
            let handles: Vec<_> = (0..opts.writers)
                .map(|i| {
                    let (stop, path) = (stop.clone(), dev.path().to_path_buf());
                    let seed = opts.seed.wrapping_add(i as u64);
                    std::thread::spawn(move || writer(&path, i as u64 * span, span, seed, &stop))
                })
                .collect();
            let end = Instant::now() + Duration::from_secs_f64(opts.seconds);
            while Instant::now() < end && !ctl.stop_requested() {
                std::thread::sleep(Duration::from_millis(50));
            }
            stop.store(true, Ordering::Relaxed);
            let seen: Vec<Seen> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect();
            let stats = daemon.stats();
            let aborted = daemon.failure();
            dev.release()?;
            Ok::<_, anyhow::Error>((seen, stats, aborted))
        })();
        let released = daemon.release();
        let (seen, stats, aborted) = run?;
        released?;
        Ok::<_, anyhow::Error>((seen, stats, aborted))
    })();
    if let Some(cpus) = restore {
        let _ = emulated::pin_current_thread(&cpus);
    }
    drop(image);
    let (seen, stats, aborted) = result?;
    let mut all: Vec<u32> = seen
        .iter()
        .flat_map(|s| s.latencies_us.iter().copied())
        .collect();
    all.sort_unstable();
    let errors: Vec<String> = seen.iter().filter_map(|s| s.error.clone()).collect();
    // Stats that cannot be read after the run mean the daemon is gone: an error below.
    let disks = stats.as_ref().map(|s| s.disks.clone()).unwrap_or_default();
    let late = disks.iter().map(|d| d.late).sum();
    let overdue = disks.iter().map(|d| d.overdue).sum();
    let slow_io = disks.iter().map(|d| d.slow_io).sum();
    let worst_late_ms = disks.iter().map(|d| d.worst_late_ms).fold(0.0, f64::max);
    let stats_error = stats.err().map(|e| format!("daemon statistics: {e:#}"));
    let errors: Vec<String> = errors.into_iter().chain(stats_error).collect();
    let ok = aborted.is_none()
        && errors.is_empty()
        && overdue == 0
        && slow_io == 0
        && worst_late_ms <= LATE_BOUND.as_secs_f64() * 1e3;
    Ok(StressReport {
        model: opts.model.clone(),
        writers: opts.writers,
        seconds: opts.seconds,
        writes: seen.iter().map(|s| s.writes).sum(),
        flushes: seen.iter().map(|s| s.flushes).sum(),
        bytes: seen.iter().map(|s| s.bytes).sum(),
        p50_us: quantile(&all, 0.5).unwrap_or(0),
        p99_us: quantile(&all, 0.99).unwrap_or(0),
        max_us: all.last().copied().unwrap_or(0),
        late,
        overdue,
        slow_io,
        worst_late_ms,
        aborted,
        errors,
        ok,
    })
}

/// One line per run, then the verdict.
pub fn render(reports: &[StressReport]) -> String {
    let mut out = format!(
        "{:<10} {:>7} {:>8} {:>7} {:>7} {:>8} {:>8} {:>8} {:>5} {:>10} {:>7}  {}\n",
        "model",
        "writers",
        "writes",
        "flushes",
        "MB",
        "p50 ms",
        "p99 ms",
        "max ms",
        "late",
        "worst late",
        "stalls",
        "result"
    );
    for r in reports {
        let result = match (&r.aborted, r.errors.first()) {
            (Some(why), _) => format!("FAILED: {why}"),
            (None, Some(e)) => format!("FAILED: {e}"),
            _ if !r.ok => format!(
                "FAILED: an answer more than {} ms past its deadline, or the daemon blocked",
                LATE_BOUND.as_millis()
            ),
            _ => "ok".to_string(),
        };
        out.push_str(&format!(
            "{:<10} {:>7} {:>8} {:>7} {:>7.0} {:>8.2} {:>8.2} {:>8.2} {:>5} {:>7.1} ms {:>7}  {}\n",
            r.model,
            r.writers,
            r.writes,
            r.flushes,
            r.bytes as f64 / 1e6,
            r.p50_us as f64 / 1e3,
            r.p99_us as f64 / 1e3,
            r.max_us as f64 / 1e3,
            r.late,
            r.worst_late_ms,
            r.overdue + r.slow_io,
            result
        ));
    }
    let failed = reports.iter().filter(|r| !r.ok).count();
    out.push_str(&if failed == 0 {
        format!(
            "\nverdict: {} runs, no watchdog abort, no blocked image I/O, every answer within {} ms of its model deadline\n",
            reports.len(),
            LATE_BOUND.as_millis()
        )
    } else {
        format!("\nverdict: {failed} of {} runs FAILED\n", reports.len())
    });
    out
}
