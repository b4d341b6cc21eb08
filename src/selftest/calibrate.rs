//! `jbench device calibrate MODEL`: runs the model's calibration request streams
//! (QD1 random 4K reads and writes, sequential 1 MiB, fsync'ed 4K appends) on an
//! emulated disk through the whole path — loop device, FUSE, daemon — and prints what
//! was measured beside what the model predicts for exactly the same stream.
//!
//! The path itself costs something per request. Right after attaching the loop device
//! the path is measured (`DeviceDaemon::measure_path`, as a trial does) and the daemon
//! takes it off every answer, so a request takes the model's time; one the model
//! answers faster than the path can takes the path's (the floor). Each pattern is
//! judged against the model alone, within [`TOLERANCE`]; one the floor holds back is
//! marked path-bound, with what the path allows beside it. The verdict says which
//! patterns were outside the tolerance and why.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::bench::{pin_away_from_daemon, unpin, Backing, DiskOptions, Served};
use crate::emu::daemon::PathCost;
use crate::emu::model::{
    model_by_name, params_for_disk, predicted, CalibrationRun, Kind, Pattern, Prediction, Request,
};
use crate::events::{step, Activity};
use crate::measure::{Direct, Target};

/// What to calibrate and how.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// The model's name as shown: a built-in model, or a `[models]` entry of `spec`.
    pub name: String,
    /// The built-in model it is made from.
    pub model: String,
    pub params: toml::Table,
    /// The experiment file that defines `name`, when it is a `[models]` entry.
    pub spec: Option<PathBuf>,
    /// Size of the emulated disk (its geometry spans it).
    pub size: u64,
    /// Directory for the session (mount point, daemon files).
    pub work_dir: PathBuf,
    /// Directory for the emulated disk's image, as a trial's `[emulation] image_dir`.
    pub image_dir: PathBuf,
    /// Seconds of predicted time each pattern may take; request counts are cut to fit.
    pub seconds_per_pattern: f64,
    /// Also run every pattern with the write log on, to show its cost.
    pub write_log: bool,
}

/// The least time between an answer and the next request in what the model is
/// said to predict: no host sends a request at the very instant its predecessor
/// ends. It matters to a write-through disk: a sequential write that arrives any
/// time after the media went idle has missed its sector and waits a revolution
/// (hdd `sequential_write_slip`), as a real drive does for every QD1 host. With no
/// gap at all the model would promise a fsync'ed append per transfer time rather
/// than per revolution, which neither a real host nor the emulation can get.
pub const HOST_GAP: Duration = Duration::from_nanos(100);

/// How far a pattern's measured rate may be from its expectation (10%).
pub const TOLERANCE: f64 = 0.10;

/// One pattern's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub pattern: String,
    pub requests: u64,
    pub measured_iops: f64,
    pub measured_mb_per_s: f64,
    /// The model alone (no host cost): what the run is judged against.
    pub model_iops: f64,
    pub model_mb_per_s: f64,
    /// measured / model.
    pub ratio: f64,
    /// Whether the ratio is within [`TOLERANCE`] of 1.
    pub within_tolerance: bool,
    /// The path's floor, not the model, sets what this pattern can give (by more than
    /// 1%): the model answers its requests faster than the path can.
    pub path_bound: bool,
    /// What the path allows: the model, each request taking at least the path's
    /// measured floor for its kind and size (with this run's image I/O).
    pub expected_iops: f64,
    /// measured / expected: whether the emulation gave what the path allows.
    pub expected_ratio: f64,
    /// Requests the daemon received for the stream (the kernel may split one, and
    /// flushes count).
    pub daemon_requests: u64,
    /// The daemon's image I/O per read or write it received, which it overlaps with
    /// the model's time.
    pub image_io_us: f64,
    /// With `write_log`: the same stream with the write log on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_log_iops: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The name calibrated: a built-in model or a `[models]` entry.
    pub model: String,
    /// The built-in model it is made from, and the parameters it overrides.
    pub base_model: String,
    pub params: toml::Table,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<PathBuf>,
    pub size: u64,
    /// The path's cost as measured through the loop device, which the daemon takes
    /// off every answer (floor and image I/O of 4 KiB and 1 MiB reads).
    pub path: PathCost,
    /// The floor: mean round trip (the slowest 2% left out) of a 4 KiB read through
    /// the path with no model delay (`path.floor_4k_us`).
    pub floor_us: f64,
    /// The model's fastest 4 KiB answer.
    pub model_min_us: f64,
    pub rows: Vec<Row>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
    pub tolerance: f64,
    /// Every pattern within the tolerance.
    pub within_tolerance: bool,
    /// The closing line: what the run says of the emulation.
    pub verdict: String,
}

/// Reads the first `bytes` of `image` through the host's page cache.
fn warm(image: &Path, bytes: u64) -> Result<()> {
    use std::io::Read;
    let mut f = std::fs::File::open(image)?.take(bytes);
    std::io::copy(&mut f, &mut std::io::sink())?;
    Ok(())
}

/// Sends `stream` to `dev` one request at a time, through the measuring engine
/// `device qualify` uses; returns the elapsed time.
fn execute(dev: &Path, stream: &[Request]) -> Result<Duration> {
    // The engine's buffer is physically contiguous where the kernel allows, so that a
    // 1 MiB request reaches the daemon as one request, as the model is asked about it.
    Target::open(dev, Direct::Required)?.run(stream, None)
}

/// Requests of `pattern` that fit `seconds` of predicted time (at least 20).
fn sized(pattern: Pattern, span: u64, opts: &CalibrateOptions) -> Result<CalibrationRun> {
    let mut w = CalibrationRun {
        host_overhead: HOST_GAP,
        ..CalibrationRun::new(pattern, span)
    };
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
    params_for_disk(&opts.model, &opts.params, opts.size)
}

/// Runs the calibration and returns its figures, telling each step as an event.
pub fn calibrate(
    opts: &CalibrateOptions,
    ctl: &crate::workload::RunControl,
) -> Result<Calibration> {
    let probe = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
    let disk = DiskOptions {
        model: opts.model.clone(),
        params: opts.params.clone(),
        size: opts.size,
        work_dir: opts.work_dir.clone(),
        image_dir: opts.image_dir.clone(),
    };
    let backing = Backing::create(&disk)?;
    let image = backing.image().to_path_buf();
    let restore = pin_away_from_daemon()?;
    let result = (|| {
        let bench = Served::start(&backing, &disk, None)?;
        let path = bench.path;
        step(Activity::Selftest, format!(
            "path: {:.1} µs per 4 KiB read, {:.1} per 4 KiB write, {:.1} per flush, {:.0} per {} read answered at once; {:.1}, {:.1} and {:.0} µs added to a deadline",
            path.floor_4k_us,
            path.floor_write_4k_us,
            path.floor_flush_us,
            path.floor_big_us,
            crate::units::format_size(path.big_len),
            path.transport_4k_us,
            path.transport_flush_us,
            path.transport_big_us
        ));
        let mut rows = Vec::new();
        for pattern in Pattern::ALL {
            if ctl.stop_requested() {
                anyhow::bail!("interrupted");
            }
            let w = sized(pattern, opts.size, opts)?;
            let stream = w.stream();
            if matches!(pattern, Pattern::SequentialRead1m) {
                warm(&image, w.requests * w.request_len())?;
            }
            let mut fresh = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
            let model_only = predicted(fresh.as_mut(), &w);
            // Fresh models in the daemon too: the same stream from the same state.
            bench.daemon.set_timing(true)?;
            let t = execute(bench.device.path(), &stream)?;
            let measured = rate(&w, t);
            let stats = bench.daemon.stats()?;
            let d = stats.disks.first().context("the daemon lists no disk")?;
            let daemon_requests = d.reads + d.writes + d.flushes + d.discards;
            // What the path alone costs each request of this run: the measured floor
            // with this run's image I/O (a write costs the image more than the
            // probe's cached reads; a flush nothing) in place of the probe's.
            let io = d.io_seconds / (d.reads + d.writes).max(1) as f64;
            let floor = |r: &Request| {
                let run_io = match r.kind {
                    Kind::Read | Kind::Write => Duration::from_secs_f64(io),
                    Kind::Flush | Kind::Discard => Duration::ZERO,
                };
                path.floor(r).saturating_sub(path.io(r)) + run_io
            };
            let mut fresh = model_by_name(&opts.model, Some(&with_capacity(opts)))?;
            let expected = rate(&w, expected_elapsed(fresh.as_mut(), &stream, floor));
            let ratio = measured.iops / model_only.iops;
            let row = Row {
                pattern: pattern.label().to_string(),
                requests: w.requests,
                measured_iops: measured.iops,
                measured_mb_per_s: measured.mb_per_s,
                model_iops: model_only.iops,
                model_mb_per_s: model_only.mb_per_s,
                ratio,
                within_tolerance: (ratio - 1.0).abs() <= TOLERANCE,
                path_bound: expected.iops < model_only.iops * 0.99,
                expected_iops: expected.iops,
                expected_ratio: measured.iops / expected.iops,
                daemon_requests,
                image_io_us: io * 1e6,
                with_log_iops: None,
            };
            step(
                Activity::Selftest,
                format!(
                    "{}: {:.1} IOPS measured, {:.1} the model ({:.3}){}",
                    row.pattern,
                    row.measured_iops,
                    row.model_iops,
                    row.ratio,
                    if row.path_bound {
                        format!(
                            "; path-bound: the path allows {:.1} ({:.3})",
                            row.expected_iops, row.expected_ratio
                        )
                    } else {
                        String::new()
                    }
                ),
            );
            rows.push(row);
        }
        bench.stop()?;

        let mut log_bytes = None;
        if opts.write_log {
            let bench = Served::start(
                &backing,
                &disk,
                Some(backing.session().join("calibrate.wlog")),
            )?;
            for (pattern, row) in Pattern::ALL.into_iter().zip(rows.iter_mut()) {
                let w = CalibrationRun {
                    requests: row.requests,
                    ..CalibrationRun::new(pattern, opts.size)
                };
                bench.daemon.set_timing(true)?;
                let t = execute(bench.device.path(), &w.stream())?;
                row.with_log_iops = Some(rate(&w, t).iops);
            }
            log_bytes = Some(bench.daemon.stats()?.log_bytes);
            bench.stop()?;
        }
        let within_tolerance = rows.iter().all(|r| r.within_tolerance);
        let mut c = Calibration {
            model: opts.name.clone(),
            base_model: opts.model.clone(),
            params: opts.params.clone(),
            spec: opts.spec.clone(),
            size: opts.size,
            path,
            floor_us: path.floor_4k_us,
            model_min_us: probe.min_service().as_secs_f64() * 1e6,
            rows,
            log_bytes,
            tolerance: TOLERANCE,
            within_tolerance,
            verdict: String::new(),
        };
        c.verdict = verdict(&c);
        Ok(c)
    })();
    unpin(restore);
    drop(backing);
    result
}

/// The closing line: every pattern within the tolerance of the model or which were
/// not, and which of those the path's floor, not the model, held back.
pub fn verdict(c: &Calibration) -> String {
    let pct = (c.tolerance * 100.0).round();
    if c.rows.iter().all(|r| !r.model_iops.is_finite()) {
        // `ram`: the model answers at once, so there is nothing to be within; what
        // the run measured is the path alone.
        return format!(
            "verdict: {} answers every request at once, so every figure above is the path's (its floor here: {:.1} µs per 4 KiB read); compare emulated disks with each other, not with this",
            c.model, c.floor_us
        );
    }
    let out: Vec<String> = c
        .rows
        .iter()
        .filter(|r| !r.within_tolerance)
        .map(|r| {
            format!(
                "{} ({:.3}{})",
                r.pattern,
                r.ratio,
                if r.path_bound { ", path-bound" } else { "" }
            )
        })
        .collect();
    let bound = c.rows.iter().filter(|r| r.path_bound).count();
    let floor_note = if bound == 0 {
        String::new()
    } else {
        format!(
            "; path-bound: the model answers faster than the path can (its floor here: {:.1} µs per 4 KiB read, the model's fastest 4 KiB answer {:.1} µs), so those figures are the path's",
            c.floor_us, c.model_min_us
        )
    };
    if out.is_empty() {
        format!(
            "verdict: {} within {pct}% of the model on all {} patterns{floor_note}",
            c.model,
            c.rows.len()
        )
    } else {
        format!(
            "verdict: {} OUTSIDE {pct}% of the model on {} of {} patterns: {}{floor_note}",
            c.model,
            out.len(),
            c.rows.len(),
            out.join(", ")
        )
    }
}

/// The time `model` (fresh) gives `stream` sent at queue depth 1, each request taking
/// at least `floor` of it.
fn expected_elapsed(
    model: &mut dyn crate::emu::model::DeviceModel,
    stream: &[Request],
    floor: impl Fn(&Request) -> Duration,
) -> Duration {
    let mut now = Duration::ZERO;
    for r in stream {
        now += model.service(r, now).duration.max(floor(r)) + HOST_GAP;
    }
    now
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

/// The calibration as a table with a verdict per row and a closing verdict.
pub fn render(c: &Calibration) -> String {
    let what = if c.model == c.base_model && c.params.is_empty() {
        c.model.clone()
    } else {
        let params: Vec<String> = c.params.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        format!(
            "{} ({}{}{})",
            c.model,
            c.base_model,
            if params.is_empty() {
                String::new()
            } else {
                format!("; {}", params.join(", "))
            },
            c.spec
                .as_ref()
                .map(|s| format!("; from {}", s.display()))
                .unwrap_or_default()
        )
    };
    let p = &c.path;
    let mut out = format!(
        "device model {what} on a {} emulated disk\n\
         path, measured through the loop device: a 4 KiB read {:.1} µs, a 4 KiB write {:.1}, a flush {:.1}, a {} read {:.0}, answered at once (the floors); {:.1}, {:.1} and {:.0} µs added to an answer's deadline (4 KiB read, flush, {} read), which the daemon takes off every deadline\n\
         the model's fastest 4 KiB answer: {:.1} µs{}\n\n",
        crate::units::format_size(c.size),
        p.floor_4k_us,
        p.floor_write_4k_us,
        p.floor_flush_us,
        crate::units::format_size(p.big_len),
        p.floor_big_us,
        p.transport_4k_us,
        p.transport_flush_us,
        p.transport_big_us,
        crate::units::format_size(p.big_len),
        c.model_min_us,
        if c.model_min_us < c.floor_us {
            " (below the floor: such requests take the path's time, and trials flag them)"
        } else {
            ""
        }
    );
    let log_col = c.rows.iter().any(|r| r.with_log_iops.is_some());
    out.push_str(&format!(
        "{:<22} {:>8} {:>11} {:>9} {:>11} {:>7}  {:<10} {:>16} {:>8}{}\n",
        "pattern",
        "requests",
        "IOPS",
        "MB/s",
        "model IOPS",
        "ratio",
        format!("within {:.0}%", c.tolerance * 100.0),
        "path allows IOPS",
        "image µs",
        if log_col {
            "   IOPS with write log"
        } else {
            ""
        }
    ));
    for r in &c.rows {
        let ok = match (r.within_tolerance, r.path_bound) {
            (true, _) => "yes",
            (false, false) => "NO",
            (false, true) => "NO, path",
        };
        // An instant model (`ram`) has no rate to be a ratio of.
        let (model_iops, ratio) = if r.model_iops.is_finite() {
            (format!("{:.1}", r.model_iops), format!("{:.3}", r.ratio))
        } else {
            ("instant".to_string(), "-".to_string())
        };
        let allows = if r.path_bound {
            format!("{:.1} ({:.2})", r.expected_iops, r.expected_ratio)
        } else {
            "-".to_string()
        };
        out.push_str(&format!(
            "{:<22} {:>8} {:>11.1} {:>9.1} {:>11} {:>7}  {:<10} {:>16} {:>8.1}{}\n",
            r.pattern,
            r.requests,
            r.measured_iops,
            r.measured_mb_per_s,
            model_iops,
            ratio,
            ok,
            allows,
            r.image_io_us,
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
    out.push_str(&format!("\n{}\n", c.verdict));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pattern: &str, model_iops: f64, measured: f64, expected: f64) -> Row {
        let ratio = measured / model_iops;
        Row {
            pattern: pattern.into(),
            requests: 100,
            measured_iops: measured,
            measured_mb_per_s: 0.0,
            model_iops,
            model_mb_per_s: 0.0,
            ratio,
            within_tolerance: (ratio - 1.0).abs() <= TOLERANCE,
            path_bound: expected < model_iops * 0.99,
            expected_iops: expected,
            expected_ratio: measured / expected,
            daemon_requests: 100,
            image_io_us: 2.0,
            with_log_iops: None,
        }
    }

    fn calibration(rows: Vec<Row>) -> Calibration {
        let within_tolerance = rows.iter().all(|r| r.within_tolerance);
        let mut c = Calibration {
            model: "m".into(),
            base_model: "nvme".into(),
            params: toml::Table::new(),
            spec: None,
            size: 1 << 30,
            path: PathCost {
                floor_4k_us: 30.0,
                big_len: 1 << 20,
                ..PathCost::default()
            },
            floor_us: 30.0,
            model_min_us: 16.4,
            rows,
            log_bytes: None,
            tolerance: TOLERANCE,
            within_tolerance,
            verdict: String::new(),
        };
        c.verdict = verdict(&c);
        c
    }

    #[test]
    fn the_verdict_names_every_pattern_outside_the_tolerance_and_why() {
        let ok = calibration(vec![
            row("a", 100.0, 95.0, 100.0),
            row("b", 100.0, 109.0, 100.0),
        ]);
        assert!(ok.within_tolerance);
        assert!(
            ok.verdict
                .contains("within 10% of the model on all 2 patterns"),
            "{}",
            ok.verdict
        );

        let bad = calibration(vec![
            row("a", 100.0, 95.0, 100.0),
            row("slow daemon", 100.0, 80.0, 100.0),
            row("fast model", 40000.0, 25000.0, 30000.0),
        ]);
        assert!(!bad.within_tolerance);
        let v = &bad.verdict;
        assert!(
            v.contains("OUTSIDE 10% of the model on 2 of 3 patterns"),
            "{v}"
        );
        assert!(
            v.contains("slow daemon (0.800)") && !v.contains("slow daemon (0.800, path"),
            "{v}"
        );
        assert!(v.contains("fast model (0.625, path-bound)"), "{v}");
        assert!(v.contains("its floor here: 30.0 µs"), "{v}");
        let table = render(&bad);
        assert!(
            table.contains("NO, path") && table.ends_with(&format!("{v}\n")),
            "{table}"
        );
    }

    #[test]
    fn an_instant_model_reports_the_floor_not_a_ratio() {
        let c = calibration(vec![row("a", f64::INFINITY, 30000.0, 30000.0)]);
        assert!(!c.within_tolerance);
        assert!(
            c.verdict.contains("every figure above is the path's"),
            "{}",
            c.verdict
        );
        assert!(c.verdict.contains("30.0 µs"), "{}", c.verdict);
        let table = render(&c);
        assert!(
            table.contains("instant") && !table.contains("inf"),
            "{table}"
        );
    }

    #[test]
    fn with_the_host_gap_a_write_through_disk_appends_once_per_revolution() {
        let params: toml::Table = toml::toml! { write_cache = false };
        let opts = CalibrateOptions {
            name: "hdd-7200".into(),
            model: "hdd-7200".into(),
            params: params.clone(),
            spec: None,
            size: 8 << 30,
            work_dir: "/nonexistent".into(),
            image_dir: "/nonexistent".into(),
            seconds_per_pattern: 2.0,
            write_log: false,
        };
        let w = sized(Pattern::FsyncWrite4k, opts.size, &opts).unwrap();
        assert_eq!(w.host_overhead, HOST_GAP);
        let mut m = model_by_name("hdd-7200", Some(&with_capacity(&opts))).unwrap();
        let iops = predicted(m.as_mut(), &w).iops;
        // 7200 rpm: 120 revolutions a second.
        assert!(
            (iops - 120.0).abs() < 3.0,
            "{iops} fsync'ed appends a second"
        );
        // Sized to the seconds asked for, at that rate, not at the gapless one.
        assert!(w.requests as f64 / iops <= 2.1, "{} requests", w.requests);
        let gapless = CalibrationRun {
            host_overhead: Duration::ZERO,
            ..w
        };
        let mut m = model_by_name("hdd-7200", Some(&with_capacity(&opts))).unwrap();
        assert!(predicted(m.as_mut(), &gapless).iops > 1000.0);
    }
}
