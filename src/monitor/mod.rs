//! Monitors during the workload: a sampler thread reads `/proc/diskstats` (the rig's
//! file-system and journal devices), `/proc/stat` and `/proc/meminfo` every interval,
//! and the engines' phase boundaries (see [`RunControl::phase_begin`]) take a sample
//! too, with the journal's `/proc/fs/jbd2/<dev>/info` before and after the phase.
//!
//! Samples are aggregated per phase into a [`MonitorSummary`] kept with the trial; the
//! per-interval series is held in memory while the workload runs and written to a side
//! file (one JSON object per line) when the monitor stops, so sampling issues no I/O to
//! any disk during the measurement.
//!
//! [`RunControl::phase_begin`]: crate::workload::RunControl::phase_begin

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;

use series::write_series;
pub use series::{CpuPct, DeviceRate, SeriesPoint};

use crate::workload::{PhaseEvent, PhaseHook};

pub mod host_load;
mod procfs;
pub mod series;
mod summary;

pub use host_load::HostLoad;
pub use procfs::*;
pub use summary::*;

/// Sectors in /proc/diskstats are always 512 bytes, whatever the device's block size.
const SECTOR: u64 = 512;

// ---------------------------------------------------------------------------
// Sampling

/// What a trial's monitor watches.
#[derive(Debug, Clone)]
pub struct Targets {
    /// `(role, kernel device name)`: `fs`, then `journal` for an external journal, then
    /// `second` for a second file system.
    pub devices: Vec<(String, String)>,
    /// `/proc/fs/jbd2` entry, when the file system has a jbd2 journal.
    pub jbd2: Option<String>,
}

impl Targets {
    /// The devices of a rig: file system, and the journal device when it has one.
    pub fn of(fs_device: &Path, journal_device: Option<&Path>) -> Self {
        let fs = kernel_name(fs_device);
        let journal = journal_device.map(kernel_name);
        let jbd2 = find_jbd2(&fs, journal.as_deref());
        let mut devices = vec![("fs".to_string(), fs)];
        if let Some(j) = journal {
            devices.push(("journal".to_string(), j));
        }
        Self { devices, jbd2 }
    }

    /// Also samples a second file system's device, as role `second`.
    pub fn with_second(mut self, device: Option<&Path>) -> Self {
        if let Some(d) = device {
            self.devices.push(("second".to_string(), kernel_name(d)));
        }
        self
    }
}

#[derive(Debug, Clone, Default)]
struct Sample {
    at: Duration,
    disks: Vec<DiskCounters>,
    cpu: CpuTicks,
    dirty: u64,
    writeback: u64,
}

/// Reads /proc with buffers reused between samples.
struct Reader {
    names: Vec<String>,
    buf: String,
}

impl Reader {
    fn read(&mut self, path: &str) -> std::io::Result<&str> {
        use std::io::Read;
        self.buf.clear();
        std::fs::File::open(path)?.read_to_string(&mut self.buf)?;
        Ok(&self.buf)
    }

    fn sample(&mut self, at: Duration) -> Sample {
        let mut s = Sample {
            at,
            ..Sample::default()
        };
        if self.read("/proc/diskstats").is_ok() {
            let names = std::mem::take(&mut self.names);
            s.disks = names
                .iter()
                .map(|n| diskstats_of(&self.buf, n).unwrap_or_default())
                .collect();
            self.names = names;
        }
        if let Ok(t) = self.read("/proc/stat") {
            s.cpu = parse_stat(t).unwrap_or_default();
        }
        if let Ok(t) = self.read("/proc/meminfo") {
            (s.dirty, s.writeback) = parse_meminfo(t);
        }
        s
    }
}

fn jbd2_now(name: &Option<String>) -> Option<Jbd2Info> {
    let name = name.as_ref()?;
    let text = std::fs::read_to_string(format!("/proc/fs/jbd2/{name}/info")).ok()?;
    parse_jbd2_info(&text)
}

fn kib_s(sectors: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        (sectors * SECTOR) as f64 / 1024.0 / secs
    } else {
        0.0
    }
}

fn pct(part: u64, total: u64) -> f64 {
    if total > 0 {
        100.0 * part as f64 / total as f64
    } else {
        0.0
    }
}

/// A phase being monitored.
struct OpenPhase {
    name: String,
    first: Sample,
    last: Sample,
    jbd2_before: Option<Jbd2Info>,
    samples: u64,
    peak_write: Vec<f64>,
    peak_read: Vec<f64>,
    peak_in_flight: Vec<u64>,
    peak_iowait: Option<f64>,
    peak_dirty: u64,
    peak_writeback: u64,
}

impl OpenPhase {
    fn new(name: &str, s: Sample, jbd2_before: Option<Jbd2Info>) -> Self {
        let n = s.disks.len();
        Self {
            name: name.to_string(),
            peak_in_flight: s.disks.iter().map(|d| d.in_flight).collect(),
            peak_dirty: s.dirty,
            peak_writeback: s.writeback,
            first: s.clone(),
            last: s,
            jbd2_before,
            samples: 0,
            peak_write: vec![0.0; n],
            peak_read: vec![0.0; n],
            peak_iowait: None,
        }
    }

    /// Takes in a sample; intervals shorter than `min` (e.g. a few ms between a tick
    /// and a boundary) give no peaks, whose rates would be noise.
    fn add(&mut self, s: Sample, min: Duration) {
        let dt = s.at.saturating_sub(self.last.at);
        if dt >= min {
            let secs = dt.as_secs_f64();
            for (i, (a, b)) in self.last.disks.iter().zip(&s.disks).enumerate() {
                let w = kib_s(b.sectors_written.saturating_sub(a.sectors_written), secs);
                let r = kib_s(b.sectors_read.saturating_sub(a.sectors_read), secs);
                self.peak_write[i] = self.peak_write[i].max(w);
                self.peak_read[i] = self.peak_read[i].max(r);
            }
            let io = pct(
                s.cpu.iowait.saturating_sub(self.last.cpu.iowait),
                s.cpu.total.saturating_sub(self.last.cpu.total),
            );
            self.peak_iowait = Some(self.peak_iowait.unwrap_or(0.0).max(io));
        }
        for (p, d) in self.peak_in_flight.iter_mut().zip(&s.disks) {
            *p = (*p).max(d.in_flight);
        }
        self.peak_dirty = self.peak_dirty.max(s.dirty);
        self.peak_writeback = self.peak_writeback.max(s.writeback);
        self.last = s;
    }

    fn close(mut self, end: Sample, targets: &Targets, min: Duration) -> PhaseMonitor {
        self.add(end, min);
        let (a, b) = (&self.first, &self.last);
        let secs = b.at.saturating_sub(a.at).as_secs_f64();
        let devices = targets
            .devices
            .iter()
            .enumerate()
            .map(|(i, (role, device))| {
                let x = a.disks.get(i).copied().unwrap_or_default();
                let y = b.disks.get(i).copied().unwrap_or_default();
                let read_sectors = y.sectors_read.saturating_sub(x.sectors_read);
                let write_sectors = y.sectors_written.saturating_sub(x.sectors_written);
                // A phase shorter than the shortest interval: its mean is its peak.
                let peak = |p: f64, sectors: u64| if p > 0.0 { p } else { kib_s(sectors, secs) };
                DeviceSummary {
                    role: role.clone(),
                    device: device.clone(),
                    reads: y.reads.saturating_sub(x.reads),
                    writes: y.writes.saturating_sub(x.writes),
                    read_kib: read_sectors * SECTOR / 1024,
                    write_kib: write_sectors * SECTOR / 1024,
                    io_ms: y.io_ms.saturating_sub(x.io_ms),
                    flushes: y.flushes.saturating_sub(x.flushes),
                    peak_write_kib_s: peak(self.peak_write[i], write_sectors),
                    peak_read_kib_s: peak(self.peak_read[i], read_sectors),
                    peak_in_flight: self.peak_in_flight.get(i).copied().unwrap_or(0),
                }
            })
            .collect();
        let total = b.cpu.total.saturating_sub(a.cpu.total);
        let iowait = pct(b.cpu.iowait.saturating_sub(a.cpu.iowait), total);
        let cpu = CpuSummary {
            user: pct(b.cpu.user.saturating_sub(a.cpu.user), total),
            system: pct(b.cpu.system.saturating_sub(a.cpu.system), total),
            iowait,
            peak_iowait: self.peak_iowait.unwrap_or(iowait),
        };
        let jbd2 = match (&targets.jbd2, self.jbd2_before, jbd2_now(&targets.jbd2)) {
            (Some(name), Some(before), Some(after)) => Some(Jbd2Phase {
                name: name.clone(),
                transactions: after.transactions.saturating_sub(before.transactions),
                before,
                after,
            }),
            _ => None,
        };
        PhaseMonitor {
            phase: self.name,
            seconds: secs,
            samples: self.samples,
            devices,
            jbd2,
            cpu,
            peak_dirty_kib: self.peak_dirty,
            peak_writeback_kib: self.peak_writeback,
        }
    }
}

struct State {
    reader: Reader,
    open: Option<OpenPhase>,
    done: Vec<PhaseMonitor>,
    /// The previous interval sample, for the series' rates.
    prev_tick: Sample,
    series: Vec<SeriesPoint>,
    stop: bool,
}

struct Shared {
    targets: Targets,
    interval: Duration,
    start: Instant,
    /// The machine's CPU split at `start`, for other processes' share at the stop.
    host_start: Option<host_load::CpuSplit>,
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn min_interval(&self) -> Duration {
        self.interval / 2
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event(&self, ev: PhaseEvent<'_>) {
        let mut st = self.lock();
        let s = st.reader.sample(self.start.elapsed());
        match ev {
            PhaseEvent::Begin(name) => {
                if let Some(open) = st.open.take() {
                    let m = open.close(s.clone(), &self.targets, self.min_interval());
                    st.done.push(m);
                }
                let before = jbd2_now(&self.targets.jbd2);
                st.open = Some(OpenPhase::new(name, s, before));
            }
            PhaseEvent::End(_) => {
                // A point at each phase's end, so a phase shorter than the interval
                // still shows in the series (its rates over the stretch since the
                // previous point).
                if st.open.is_some() && s.at > st.prev_tick.at {
                    self.push_point(&mut st, &s);
                    st.prev_tick = s.clone();
                }
                if let Some(open) = st.open.take() {
                    let m = open.close(s, &self.targets, self.min_interval());
                    st.done.push(m);
                }
            }
        }
    }

    fn tick(&self) {
        let mut st = self.lock();
        let s = st.reader.sample(self.start.elapsed());
        self.push_point(&mut st, &s);
        let min = self.min_interval();
        if let Some(open) = st.open.as_mut() {
            open.samples += 1;
            open.add(s.clone(), min);
        }
        st.prev_tick = s;
    }

    /// Appends the series point for the stretch from the previous point to `s`.
    fn push_point(&self, st: &mut State, s: &Sample) {
        let secs = s.at.saturating_sub(st.prev_tick.at).as_secs_f64();
        let prev = &st.prev_tick;
        let devices = self
            .targets
            .devices
            .iter()
            .enumerate()
            .map(|(i, (role, _))| {
                let a = prev.disks.get(i).copied().unwrap_or_default();
                let b = s.disks.get(i).copied().unwrap_or_default();
                (
                    role.clone(),
                    DeviceRate {
                        write_kib_s: kib_s(
                            b.sectors_written.saturating_sub(a.sectors_written),
                            secs,
                        ),
                        read_kib_s: kib_s(b.sectors_read.saturating_sub(a.sectors_read), secs),
                        in_flight: b.in_flight,
                    },
                )
            })
            .collect();
        let total = s.cpu.total.saturating_sub(prev.cpu.total);
        let cpu = CpuPct {
            user: pct(s.cpu.user.saturating_sub(prev.cpu.user), total),
            system: pct(s.cpu.system.saturating_sub(prev.cpu.system), total),
            iowait: pct(s.cpu.iowait.saturating_sub(prev.cpu.iowait), total),
        };
        let point = SeriesPoint {
            t: s.at.as_secs_f64(),
            phase: st.open.as_ref().map(|o| o.name.clone()).unwrap_or_default(),
            devices,
            cpu: Some(cpu),
            dirty_kib: Some(s.dirty),
            writeback_kib: Some(s.writeback),
        };
        st.series.push(point);
    }
}

/// A running monitor; [`Monitor::stop`] ends it and returns what it saw.
pub struct Monitor {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    series_path: Option<PathBuf>,
}

impl Monitor {
    /// Starts sampling `targets` every `interval`. The series goes to `series_path`
    /// when the monitor stops.
    pub fn start(
        targets: Targets,
        interval: Duration,
        series_path: Option<PathBuf>,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(!interval.is_zero(), "monitor interval must be above zero");
        let mut reader = Reader {
            names: targets.devices.iter().map(|(_, n)| n.clone()).collect(),
            buf: String::with_capacity(16 * 1024),
        };
        let diskstats = reader.read("/proc/diskstats")?.to_string();
        for (role, name) in &targets.devices {
            anyhow::ensure!(
                diskstats_of(&diskstats, name).is_some(),
                "the {role} device {name} is not in /proc/diskstats"
            );
        }
        let host_start = host_load::CpuSplit::now();
        let start = Instant::now();
        let first = reader.sample(Duration::ZERO);
        let shared = Arc::new(Shared {
            targets,
            interval,
            start,
            host_start,
            state: Mutex::new(State {
                reader,
                open: None,
                done: Vec::new(),
                prev_tick: first,
                series: Vec::new(),
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("jbench-monitor".into())
            .spawn(move || {
                let mut next = s.interval;
                loop {
                    {
                        let mut st = s.lock();
                        loop {
                            if st.stop {
                                return;
                            }
                            let now = s.start.elapsed();
                            if now >= next {
                                break;
                            }
                            st = s
                                .wake
                                .wait_timeout(st, next - now)
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                        }
                    }
                    s.tick();
                    // Keep to the grid; skip ticks missed (a suspended machine).
                    let now = s.start.elapsed();
                    while next <= now {
                        next += s.interval;
                    }
                }
            })
            .context("cannot start the monitor thread")?;
        Ok(Self {
            shared,
            thread: Some(thread),
            series_path,
        })
    }

    /// The hook engines call at phase boundaries (through `RunControl`).
    pub fn hook(&self) -> PhaseHook {
        let s = Arc::clone(&self.shared);
        PhaseHook::new(move |ev| s.event(ev))
    }

    /// Stops the sampler, closes a phase left open (an engine that failed), writes the
    /// series file and returns the summary. `series_file` is what the record names.
    pub fn stop(mut self, series_file: Option<String>) -> anyhow::Result<MonitorSummary> {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let seconds = self.shared.start.elapsed().as_secs_f64();
        let host_load = match (&self.shared.host_start, host_load::CpuSplit::now()) {
            (Some(a), Some(b)) => a.load_until(&b, seconds),
            _ => None,
        };
        let (phases, series) = {
            let mut st = self.shared.lock();
            if let Some(open) = st.open.take() {
                let s = st.reader.sample(self.shared.start.elapsed());
                let m = open.close(s, &self.shared.targets, self.shared.min_interval());
                st.done.push(m);
            }
            (std::mem::take(&mut st.done), std::mem::take(&mut st.series))
        };
        let mut summary = MonitorSummary {
            interval_seconds: self.shared.interval.as_secs_f64(),
            series_file: None,
            phases,
            host_load,
        };
        if let Some(path) = &self.series_path {
            write_series(path, &series)?;
            summary.series_file = series_file;
        }
        Ok(summary)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.shared.lock().stop = true;
            self.shared.wake.notify_all();
            let _ = t.join();
        }
    }
}

/// Cost of one sample of the real sampler (the three /proc files and the device lines
/// of `targets`), µs, median of `n`.
pub fn sample_cost_us(targets: &Targets, n: usize) -> f64 {
    let mut reader = Reader {
        names: targets.devices.iter().map(|(_, d)| d.clone()).collect(),
        buf: String::with_capacity(16 * 1024),
    };
    let mut times: Vec<f64> = (0..n.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(reader.sample(Duration::ZERO));
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    const JBD2: &str = "3 transactions (3 requested), each up to 1365 blocks
average: 
  0ms waiting for transaction
  0ms request delay
  12ms running transaction
  0ms transaction was being locked
  0ms flushing data (in ordered mode)
  4ms logging transaction
  3641us average transaction commit time
  3 handles per transaction
  6 blocks per transaction
  8 logged blocks per transaction
";

    const DISKSTATS: &str = "   7       0 loop0 142212 18687 54521526 128862 5604638 13301947 262013509 14141864 3 720576 14478870 2137 0 2730588116 254 48301 207889
   7       1 loop1 10 0 80 1 20 0 160 5 0 9 6
 254       0 vda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17
";

    #[test]
    fn jbd2_info_of_this_kernel() {
        let i = parse_jbd2_info(JBD2).unwrap();
        assert_eq!(
            i,
            Jbd2Info {
                transactions: 3,
                requested: 3,
                max_blocks: 1365,
                avg_transaction_ms: 12,
                avg_logging_ms: 4,
                avg_commit_us: 3641,
                handles_per_transaction: 3,
                blocks_per_transaction: 6,
                logged_blocks_per_transaction: 8,
            }
        );
        assert_eq!(parse_jbd2_info("nonsense here\n"), None);
        assert_eq!(parse_jbd2_info(""), None);
    }

    #[test]
    fn diskstats_lines() {
        let c = diskstats_of(DISKSTATS, "loop0").unwrap();
        assert_eq!(
            c,
            DiskCounters {
                reads: 142212,
                sectors_read: 54521526,
                writes: 5604638,
                sectors_written: 262013509,
                in_flight: 3,
                io_ms: 720576,
                flushes: 48301,
            }
        );
        // An old kernel's 14 fields: no flushes.
        let c = diskstats_of(DISKSTATS, "loop1").unwrap();
        assert_eq!(
            (c.writes, c.sectors_written, c.io_ms, c.flushes),
            (20, 160, 9, 0)
        );
        assert_eq!(diskstats_of(DISKSTATS, "vda").unwrap().flushes, 16);
        assert_eq!(diskstats_of(DISKSTATS, "loop"), None);
        assert_eq!(parse_diskstats_line("7 0 loop0 1 2"), None);
    }

    #[test]
    fn stat_and_meminfo() {
        let c = parse_stat("cpu  1064766 10 247496 729781 75325 1 4551 5848 7 0\ncpu0 1 2 3 4\n")
            .unwrap();
        assert_eq!(c.user, 1064776);
        assert_eq!(c.system, 247496 + 1 + 4551);
        assert_eq!(c.iowait, 75325);
        assert_eq!(
            c.total,
            1064766 + 10 + 247496 + 729781 + 75325 + 1 + 4551 + 5848
        );
        assert_eq!(parse_stat("intr 1 2\n"), None);
        let m = "MemTotal:       16384 kB\nDirty:            192352 kB\nWriteback:            12 kB\nWritebackTmp:  99 kB\n";
        assert_eq!(parse_meminfo(m), (192352, 12));
    }

    fn sample(at_ms: u64, written: u64, iowait: u64, total: u64) -> Sample {
        Sample {
            at: Duration::from_millis(at_ms),
            disks: vec![DiskCounters {
                sectors_written: written,
                writes: written / 8,
                in_flight: written % 5,
                ..DiskCounters::default()
            }],
            cpu: CpuTicks {
                iowait,
                total,
                ..CpuTicks::default()
            },
            dirty: written,
            writeback: 0,
        }
    }

    #[test]
    fn phase_totals_and_peaks() {
        let targets = Targets {
            devices: vec![("fs".into(), "loop9".into())],
            jbd2: None,
        };
        let min = Duration::from_millis(500);
        let mut p = OpenPhase::new("x", sample(0, 0, 0, 0), None);
        // 2048 sectors = 1 MiB in the first second, 4 MiB in the next, then 2 ms more.
        p.add(sample(1000, 2048, 10, 100), min);
        p.add(sample(2000, 2048 + 8192, 60, 200), min);
        let m = p.close(sample(2002, 2048 + 8192 + 2048, 60, 201), &targets, min);
        let d = &m.devices[0];
        assert_eq!(d.write_kib, 6 * 1024);
        assert_eq!(d.peak_write_kib_s, 4096.0, "the 2 ms tail gives no peak");
        assert_eq!(d.peak_in_flight, 3);
        assert!((m.cpu.peak_iowait - 50.0).abs() < 1e-9);
        assert!((m.cpu.iowait - 100.0 * 60.0 / 201.0).abs() < 1e-9);
        assert_eq!(m.peak_dirty_kib, 2048 + 8192 + 2048);
        // A phase shorter than half an interval: its mean is its peak.
        let p = OpenPhase::new("y", sample(0, 0, 0, 0), None);
        let m = p.close(sample(100, 2048, 0, 0), &targets, min);
        assert!((m.devices[0].peak_write_kib_s - 10240.0).abs() < 1e-6);
    }

    #[test]
    fn sampler_ticks_and_phases() {
        let name = std::fs::read_to_string("/proc/diskstats")
            .unwrap()
            .lines()
            .filter_map(parse_diskstats_line)
            .map(|(n, _)| n.to_string())
            .next()
            .expect("a block device");
        let targets = Targets {
            devices: vec![("fs".into(), name)],
            jbd2: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m/trial-0.jsonl");
        let m = Monitor::start(targets, Duration::from_millis(20), Some(path.clone())).unwrap();
        let hook = m.hook();
        hook.call(PhaseEvent::Begin("one"));
        std::thread::sleep(Duration::from_millis(130));
        hook.call(PhaseEvent::End("one"));
        hook.call(PhaseEvent::Begin("two"));
        std::thread::sleep(Duration::from_millis(10));
        let s = m.stop(Some("m/trial-0.jsonl".into())).unwrap();
        assert_eq!(s.phases.len(), 2, "{s:?}");
        assert_eq!(s.phases[0].phase, "one");
        assert!(s.phases[0].samples >= 4, "{:?}", s.phases[0]);
        assert!(s.phases[0].seconds >= 0.13);
        assert_eq!(s.series_file.as_deref(), Some("m/trial-0.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap();
        let points: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(points.len() >= 5, "{text}");
        let p = &points[1];
        for key in ["t", "phase", "devices", "cpu", "dirty_kib", "writeback_kib"] {
            assert!(p.get(key).is_some(), "{key} missing in {p}");
        }
        assert!(p["devices"]["fs"]["write_kib_s"].is_f64());
        assert!(p["devices"]["fs"]["in_flight"].is_u64());
        assert!(p["cpu"]["iowait"].is_f64());
        assert_eq!(p["phase"], "one");
        let load = s.host_load.as_ref().expect("/proc is readable here");
        assert!(load.seconds >= s.phases[0].seconds, "{load:?}");
        assert!(
            load.other_cpu_pct >= 0.0 && load.capacity_pct >= 100.0,
            "{load:?}"
        );
    }
}
