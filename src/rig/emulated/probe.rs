//! Measuring what the emulation path costs a disk's requests (the loop device, FUSE,
//! the daemon receiving a request and answering it), so the daemon can take it off
//! every deadline: `DeviceDaemon::measure_path`.

use std::fs::OpenOptions;
use std::io::Seek;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{allowed_cpus, pin_current_thread, DeviceDaemon};
use crate::emu::daemon::PathCost;
use crate::measure::DirectBuf;
use crate::rig::loopdev::LoopDevice;

/// Timed requests of each phase of the path probe: 4 KiB, and 1 MiB ([`PROBE_BIG`]);
/// the warm-up requests before each phase.
const PROBE_SMALL: usize = 300;
const PROBE_LARGE: usize = 40;
const PROBE_WARM: usize = 5;
const PROBE_BIG: usize = 1 << 20;
/// The deadlines of the transport phases: longer than the image I/O of the request
/// (a few µs for 4 KiB, about 100 µs for 1 MiB), which runs inside them.
const PROBE_DELAY_SMALL: Duration = Duration::from_micros(250);
const PROBE_DELAY_BIG: Duration = Duration::from_micros(1500);
/// What a phase of the path probe sends.
#[derive(Clone, Copy)]
enum Probe {
    Read,
    /// The bytes just read, written back.
    Write,
    /// `fdatasync`: a flush.
    Flush,
}

/// The share of the slowest round trips a probe phase leaves out of its mean.
const PROBE_TRIM: f64 = 0.02;

/// The mean of `v` without its slowest `trim` share: what a request costs on average,
/// a rare host hiccup (a preempted thread, a stolen vCPU) left out.
fn trimmed_mean(v: &mut [f64], trim: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let keep = ((v.len() as f64 * (1.0 - trim)).ceil() as usize).min(v.len());
    if keep == 0 {
        return 0.0;
    }
    v[..keep].iter().sum::<f64>() / keep as f64
}

impl DeviceDaemon {
    /// Measures what the path costs disk `name`'s requests through `dev` (a loop
    /// device over it, just attached, nothing else using it) and tells the daemon,
    /// which takes that cost off every deadline from then on (see [`PathCost`]).
    /// Timing must be off: the probe's requests must cost no model time. At queue
    /// depth 1 with `O_DIRECT`, from the workload's CPUs when the daemon is pinned (as
    /// a trial's workload is), the probe reads the device's first 4 KiB and first MiB,
    /// writes its first 4 KiB back as read, and flushes: first answered at once (the
    /// mean round trip is the floor), then reads and flushes each answered a fixed
    /// delay after arrival through the daemon's completion thread, as a timed answer is
    /// (the mean round trip minus the delay is the transport). Each mean leaves out the
    /// slowest 2% (host hiccups, which no constant can compensate). The disk's content
    /// is unchanged and the probe's requests stay out of the write log.
    pub fn measure_path(&self, name: &str, dev: &LoopDevice) -> Result<PathCost> {
        let others: Vec<usize> = allowed_cpus()
            .into_iter()
            .filter(|c| !self.cpus.contains(c))
            .collect();
        let restore = if !self.cpus.is_empty() && !others.is_empty() {
            Some(pin_current_thread(&others)?)
        } else {
            None
        };
        // udev probes a new block device (blkid reads it): let that pass first, or
        // the probe's first requests queue behind its reads.
        let _ = Command::new("udevadm")
            .args(["settle", "--timeout=5"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let cost = self.probe_path(name, dev.path());
        let off = self
            .control(&format!("path {name} delay off"))
            .and_then(|_| self.control(&format!("path {name} probe off")));
        if let Some(cpus) = restore {
            let _ = pin_current_thread(&cpus);
        }
        let cost = cost.and_then(|c| off.map(|_| c)).with_context(|| {
            format!(
                "cannot measure the emulation path of disk `{name}` through {}",
                dev.path().display()
            )
        })?;
        let json = serde_json::to_string(&cost)?;
        self.control(&format!("path {name} {json}"))
            .with_context(|| format!("the device daemon refused the path cost of `{name}`"))?;
        Ok(cost)
    }

    fn probe_path(&self, name: &str, dev: &Path) -> Result<PathCost> {
        use std::os::unix::fs::FileExt;
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(dev)
            .with_context(|| format!("cannot open {} with O_DIRECT", dev.display()))?;
        let size = f.seek(std::io::SeekFrom::End(0))?;
        let big_len = (PROBE_BIG as u64).min(size / 4096 * 4096);
        if big_len < 4096 {
            bail!("the device is smaller than 4 KiB");
        }
        let mut buf = DirectBuf::new(big_len as usize)?;
        // The disk's read count and image I/O seconds so far.
        let counters = || -> Result<(u64, u64, f64)> {
            let s = self.stats()?;
            if s.timing {
                bail!("model timing is on; the path is measured with it off");
            }
            let d = s
                .disks
                .iter()
                .find(|d| d.name == name)
                .with_context(|| format!("the daemon serves no disk `{name}`"))?;
            Ok((d.reads, d.writes, d.io_seconds))
        };
        self.control(&format!("path {name} probe on"))?;
        // `op` of `len` bytes at offset 0, each answered `delay` after it arrives: the
        // trimmed mean round trip minus the delay, the daemon's image I/O per request
        // (µs), and how many requests the daemon saw per request sent.
        let mut phase = |op: Probe, len: usize, timed: usize, delay: Option<Duration>| {
            let setting = match delay {
                Some(d) => d.as_nanos().to_string(),
                None => "off".into(),
            };
            self.control(&format!("path {name} delay {setting}"))?;
            // A write puts back the bytes just read: the disk's content is unchanged.
            f.read_exact_at(buf.get(len), 0)?;
            let once = |buf: &mut DirectBuf| -> std::io::Result<()> {
                match op {
                    Probe::Read => f.read_exact_at(buf.get(len), 0),
                    Probe::Write => f.write_all_at(buf.get(len), 0),
                    Probe::Flush => f.sync_data(),
                }
            };
            for _ in 0..PROBE_WARM {
                once(&mut buf)?;
            }
            let (reads, writes, io) = counters()?;
            let mut times = Vec::with_capacity(timed);
            for _ in 0..timed {
                let t = Instant::now();
                once(&mut buf)?;
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let (reads_after, writes_after, io_after) = counters()?;
            let n = timed as f64;
            let seen = (reads_after - reads) + (writes_after - writes);
            anyhow::Ok((
                trimmed_mean(&mut times, PROBE_TRIM)
                    - delay.unwrap_or_default().as_secs_f64() * 1e6,
                (io_after - io).max(0.0) * 1e6 / n,
                seen as f64 / n,
            ))
        };
        let small = 4096;
        let (floor_4k_us, io_4k_us, _) = phase(Probe::Read, small, PROBE_SMALL, None)?;
        let (transport_4k_us, _, _) =
            phase(Probe::Read, small, PROBE_SMALL, Some(PROBE_DELAY_SMALL))?;
        let (floor_write_4k_us, io_write_4k_us, _) = phase(Probe::Write, small, PROBE_SMALL, None)?;
        let (floor_flush_us, _, _) = phase(Probe::Flush, 0, PROBE_SMALL, None)?;
        let (transport_flush_us, _, _) =
            phase(Probe::Flush, 0, PROBE_SMALL, Some(PROBE_DELAY_SMALL))?;
        // The big figures are for one request as the daemon sees it: a size the kernel
        // splits (the buffer got no huge page) is halved until it arrives whole. udev
        // may read the new device meanwhile: a few extra requests are not a split.
        let mut big_len = big_len;
        let (floor_big_us, io_big_us, transport_big_us) = loop {
            let big = big_len as usize;
            let (floor, io, per_read) = phase(Probe::Read, big, PROBE_LARGE, None)?;
            if per_read > 1.25 && big_len > 64 << 10 {
                big_len /= 2;
                continue;
            }
            let (transport, _, _) = phase(Probe::Read, big, PROBE_LARGE, Some(PROBE_DELAY_BIG))?;
            break (floor, io, transport);
        };
        let cost = PathCost {
            floor_4k_us,
            transport_4k_us: transport_4k_us.max(0.0),
            io_4k_us: io_4k_us.min(floor_4k_us),
            floor_big_us,
            transport_big_us: transport_big_us.max(0.0),
            io_big_us: io_big_us.min(floor_big_us),
            big_len,
            floor_write_4k_us,
            io_write_4k_us: io_write_4k_us.min(floor_write_4k_us),
            floor_flush_us,
            transport_flush_us: transport_flush_us.max(0.0),
        };
        cost.check()?;
        Ok(cost)
    }
}
