//! `jbench device calibrate MODEL`: runs the model's calibration request streams
//! (QD1 random 4K reads and writes, sequential 1 MiB, fsync'ed 4K appends) on an
//! emulated disk through the whole path — loop device, FUSE, daemon — and prints what
//! was measured beside what the model predicts for exactly the same stream.
//!
//! The FUSE path itself costs a little per request (the floor). It is measured first
//! on a `ram` disk (which adds nothing), and the prediction a run is judged against is
//! the model's time plus that floor per request. A benchmark, not a test: it prints
//! figures and ratios; the 10% target is shown, not enforced.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::aligned::Aligned;
use super::daemon::DiskSpec;
use super::host::{self, DeviceDaemon};
use super::model::{
    model_by_name, predicted, spans_disk, CalibrationRun, Kind, Pattern, Prediction, Request,
};
use super::EmulationOptions;
use crate::rig::image::ImageFile;
use crate::rig::loopdev::{FileId, LoopDevice};
use crate::rig::session::SessionDir;

/// What to calibrate and how.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    pub model: String,
    pub params: toml::Table,
    /// Size of the emulated disk (its geometry spans it).
    pub size: u64,
    /// Directory for the session (images, mount point).
    pub work_dir: PathBuf,
    /// Seconds of predicted time each pattern may take; request counts are cut to fit.
    pub seconds_per_pattern: f64,
    /// Also run every pattern with the write log on, to show its cost.
    pub write_log: bool,
}

/// One pattern's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub pattern: String,
    pub requests: u64,
    pub measured_iops: f64,
    pub measured_mb_per_s: f64,
    /// The model alone (no host cost).
    pub model_iops: f64,
    pub model_mb_per_s: f64,
    /// The path's own cost per request of this pattern, measured on a `ram` disk.
    pub path_us: f64,
    /// The part of it spent applying the request to the image, which the daemon
    /// overlaps with the model's time.
    pub image_io_us: f64,
    /// Per request: the model's time or the image I/O, whichever is longer, plus the
    /// rest of the path's cost: what the run is judged against.
    pub expected_iops: f64,
    /// measured / expected.
    pub ratio: f64,
    /// With `write_log`: the same stream with the write log on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_log_iops: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub model: String,
    pub size: u64,
    /// Mean time of a 4 KiB request through the FUSE path with no model delay.
    pub floor_us: f64,
    /// The model's fastest 4 KiB answer.
    pub model_min_us: f64,
    pub rows: Vec<Row>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
}

/// Size of the `ram` disk the path's own cost is measured on.
const FLOOR_DISK: u64 = 256 << 20;

/// Reads the first `bytes` of `image` through the host's page cache.
fn warm(image: &Path, bytes: u64) -> Result<()> {
    use std::io::Read;
    let mut f = std::fs::File::open(image)?.take(bytes);
    std::io::copy(&mut f, &mut std::io::sink())?;
    Ok(())
}

/// Sends `stream` to `dev` one request at a time; returns the elapsed time.
fn execute(dev: &Path, stream: &[Request]) -> Result<Duration> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .with_context(|| format!("cannot open {} with O_DIRECT", dev.display()))?;
    let mut buf = Aligned::new(1 << 20);
    let started = Instant::now();
    for r in stream {
        match r.kind {
            Kind::Read => f.read_exact_at(buf.get(r.len as usize), r.offset)?,
            Kind::Write => f.write_all_at(buf.get(r.len as usize), r.offset)?,
            Kind::Flush => nix::unistd::fdatasync(f.as_raw_fd())?,
            Kind::Discard => {}
        }
    }
    Ok(started.elapsed())
}

/// Requests of `pattern` that fit `seconds` of predicted time (at least 20).
fn sized(pattern: Pattern, span: u64, opts: &CalibrateOptions) -> Result<CalibrationRun> {
    let mut w = CalibrationRun::new(pattern, span);
    let mut model = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
    let p = predicted(model.as_mut(), &w);
    let secs = p.elapsed.as_secs_f64();
    if secs > opts.seconds_per_pattern {
        let scaled = (w.requests as f64 * opts.seconds_per_pattern / secs) as u64;
        w.requests = scaled.max(20);
    }
    Ok(w)
}

fn with_capacity(opts: &CalibrateOptions) -> toml::Table {
    let mut p = opts.params.clone();
    if spans_disk(&opts.model) && !p.contains_key("capacity_bytes") {
        p.insert(
            "capacity_bytes".into(),
            toml::Value::Integer(opts.size as i64),
        );
    }
    p
}

struct Bench {
    daemon: DeviceDaemon,
    floor: LoopDevice,
    dut: LoopDevice,
}

impl Bench {
    fn start(
        session: &SessionDir,
        images: &[PathBuf; 2],
        ids: [FileId; 2],
        opts: &CalibrateOptions,
        log: bool,
    ) -> Result<Self> {
        let disks = [
            DiskSpec {
                name: "floor".into(),
                image: images[0].clone(),
                model: "ram".into(),
                params: toml::Table::new(),
                image_id: Some(ids[0]),
            },
            DiskSpec {
                name: "dut".into(),
                image: images[1].clone(),
                model: opts.model.clone(),
                params: opts.params.clone(),
                image_id: Some(ids[1]),
            },
        ];
        let cpus = host::split_cpus(&host::allowed_cpus())
            .map(|(d, _)| d)
            .unwrap_or_default();
        let log_path = log.then(|| session.join("calibrate.wlog"));
        let daemon = DeviceDaemon::start(
            session,
            &disks,
            &EmulationOptions::default(),
            cpus,
            log_path,
        )?;
        let floor = daemon.attach_disk("floor", 0, None)?;
        let dut = daemon.attach_disk("dut", 0, None)?;
        Ok(Self { daemon, floor, dut })
    }

    fn stop(mut self) -> Result<()> {
        self.dut.release()?;
        self.floor.release()?;
        self.daemon.release()
    }
}

/// Runs the calibration and returns its figures; `progress` gets a line per step.
pub fn calibrate(
    opts: &CalibrateOptions,
    ctl: &crate::workload::RunControl,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration> {
    let probe = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
    let session = SessionDir::create(&opts.work_dir)?;
    let floor_img = ImageFile::create(&session, "floor.img", FLOOR_DISK)?;
    let dut_img = ImageFile::create(&session, "dut.img", opts.size)?;
    let images = [floor_img.path().to_path_buf(), dut_img.path().to_path_buf()];
    let ids = [FileId::of(floor_img.file())?, FileId::of(dut_img.file())?];

    // Pin this thread away from the daemon, as a trial's workload is.
    let restore = match host::split_cpus(&host::allowed_cpus()) {
        Some((_, mine)) => Some(host::pin_current_thread(&mine)?),
        None => None,
    };
    let result = (|| {
        let bench = Bench::start(&session, &images, ids, opts, false)?;
        bench.daemon.set_timing(true)?;
        // Holes of a sparse image are slow to read the first time (the host fills its
        // page cache with zeros); a real disk has no such first-read cost.
        warm(&images[0], FLOOR_DISK)?;
        let floor_w = CalibrationRun {
            requests: 2000,
            ..CalibrationRun::new(Pattern::RandomRead4k, FLOOR_DISK)
        };
        let t = execute(bench.floor.path(), &floor_w.stream())?;
        let floor = t / floor_w.requests as u32;
        progress(&format!(
            "FUSE floor: {:.0} µs per 4 KiB request (ram disk, {} requests)",
            floor.as_secs_f64() * 1e6,
            floor_w.requests
        ));
        let mut rows = Vec::new();
        for pattern in Pattern::ALL {
            if ctl.stop_requested() {
                anyhow::bail!("interrupted");
            }
            let w = sized(pattern, opts.size, opts)?;
            let stream = w.stream();
            if matches!(pattern, Pattern::SequentialRead1m) {
                warm(&images[1], w.requests * w.request_len())?;
            }
            // The path's own cost for requests of this pattern: the same kind of
            // stream on the ram disk, split into the image I/O (which the daemon
            // overlaps with a slower model's time) and the rest (which it cannot).
            let floor_stream = CalibrationRun {
                requests: w.requests.min(500),
                ..CalibrationRun::new(pattern, FLOOR_DISK)
            }
            .stream();
            bench.daemon.set_timing(true)?;
            let n = floor_stream.len() as u32;
            let overhead = execute(bench.floor.path(), &floor_stream)? / n;
            let io_secs = bench.daemon.stats()?.disks[0].io_seconds;
            let host_io = Duration::from_secs_f64(io_secs) / n;
            let transport = overhead.saturating_sub(host_io);
            let mut fresh = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
            let model_only = predicted(fresh.as_mut(), &w);
            let mut fresh = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
            let expected = predicted(
                fresh.as_mut(),
                &CalibrationRun {
                    host_overhead: transport,
                    host_io,
                    ..w
                },
            );
            // Fresh models in the daemon too: the same stream from the same state.
            bench.daemon.set_timing(true)?;
            let t = execute(bench.dut.path(), &stream)?;
            let measured = rate(&w, t);
            let row = Row {
                pattern: pattern.label().to_string(),
                requests: w.requests,
                measured_iops: measured.iops,
                measured_mb_per_s: measured.mb_per_s,
                model_iops: model_only.iops,
                model_mb_per_s: model_only.mb_per_s,
                path_us: overhead.as_secs_f64() * 1e6,
                image_io_us: host_io.as_secs_f64() * 1e6,
                expected_iops: expected.iops,
                ratio: measured.iops / expected.iops,
                with_log_iops: None,
            };
            progress(&format!(
                "{}: {:.1} IOPS measured, {:.1} expected ({:.3})",
                row.pattern, row.measured_iops, row.expected_iops, row.ratio
            ));
            rows.push(row);
        }
        bench.stop()?;

        let mut log_bytes = None;
        if opts.write_log {
            let bench = Bench::start(&session, &images, ids, opts, true)?;
            for (pattern, row) in Pattern::ALL.into_iter().zip(rows.iter_mut()) {
                let w = CalibrationRun {
                    requests: row.requests,
                    ..CalibrationRun::new(pattern, opts.size)
                };
                bench.daemon.set_timing(true)?;
                let t = execute(bench.dut.path(), &w.stream())?;
                row.with_log_iops = Some(rate(&w, t).iops);
            }
            log_bytes = Some(bench.daemon.stats()?.log_bytes);
            bench.stop()?;
        }
        Ok(Calibration {
            model: opts.model.clone(),
            size: opts.size,
            floor_us: floor.as_secs_f64() * 1e6,
            model_min_us: probe.min_service().as_secs_f64() * 1e6,
            rows,
            log_bytes,
        })
    })();
    if let Some(cpus) = restore {
        let _ = host::pin_current_thread(&cpus);
    }
    drop(floor_img);
    drop(dut_img);
    result
}

fn rate(w: &CalibrationRun, t: Duration) -> Prediction {
    let s = t.as_secs_f64();
    let bytes = w.requests * w.request_len();
    Prediction {
        requests: w.requests,
        bytes,
        elapsed: t,
        iops: w.requests as f64 / s,
        mb_per_s: bytes as f64 / 1e6 / s,
    }
}

/// The calibration as a table with a verdict per row.
pub fn render(c: &Calibration) -> String {
    let mut out = format!(
        "device model {} on a {} emulated disk\nFUSE floor {:.0} µs per request; the model's fastest 4 KiB answer {:.1} µs{}\n\n",
        c.model,
        crate::units::format_size(c.size),
        c.floor_us,
        c.model_min_us,
        if c.model_min_us < c.floor_us {
            " (below the floor: such requests take the path's time, and trials flag them)"
        } else {
            ""
        }
    );
    let log_col = c.rows.iter().any(|r| r.with_log_iops.is_some());
    out.push_str(&format!(
        "{:<22} {:>8} {:>11} {:>9} {:>11} {:>8} {:>11} {:>7}  {}{}\n",
        "pattern",
        "requests",
        "IOPS",
        "MB/s",
        "model IOPS",
        "path µs",
        "+path IOPS",
        "ratio",
        "within 10%",
        if log_col {
            "   IOPS with write log"
        } else {
            ""
        }
    ));
    for r in &c.rows {
        let ok = (r.ratio - 1.0).abs() <= 0.10;
        out.push_str(&format!(
            "{:<22} {:>8} {:>11.1} {:>9.1} {:>11.1} {:>8.0} {:>11.1} {:>7.3}  {}{}\n",
            r.pattern,
            r.requests,
            r.measured_iops,
            r.measured_mb_per_s,
            r.model_iops,
            r.path_us,
            r.expected_iops,
            r.ratio,
            if ok { "yes" } else { "NO" },
            r.with_log_iops
                .map(|l| format!(
                    "   {:>8.1} ({:+.1}%)",
                    l,
                    (l / r.measured_iops - 1.0) * 100.0
                ))
                .unwrap_or_default()
        ));
    }
    if let Some(b) = c.log_bytes {
        out.push_str(&format!(
            "\nwrite log: {} for the runs above\n",
            crate::units::format_size(b)
        ));
    }
    out
}
