//! `jbench device floor`: what one 4 KiB request at queue depth 1 costs on its way
//! through the emulated disk's path, part by part (docs/devices.md, "The floor").
//!
//! The floor is the time of a request to a `ram` disk (a model that adds nothing):
//! loop device → FUSE → the daemon, which applies it to its image and answers. Each
//! part is timed on its own, with the same random 4 KiB reads and writes:
//!
//! - the image I/O alone: `pread`/`pwrite` from this process through the page cache,
//!   on the daemon's image (in `--image-dir`, where a trial's is: tmpfs by default) and
//!   on a file in `--work-dir` (ext4 on the development VM: what an image on a disk's
//!   file system would cost);
//! - a loop device alone: direct I/O over a file in `--tmpfs-dir`;
//! - FUSE alone: `O_DIRECT` on the daemon's file, no loop device;
//! - the whole path: `O_DIRECT` on the loop device over the daemon's file;
//!
//! and the daemon's own count of the time it spent on image I/O. The differences say
//! what the loop device and the FUSE round trip cost. The daemon is pinned as in a
//! trial unless `--placement` says otherwise. Latencies are per request (median, 10th
//! and 90th percentiles, mean): on a shared host the median is the figure to compare,
//! the mean carries the host's hiccups.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::emu::daemon::DiskSpec;
use crate::emu::EmulationOptions;
use crate::events::{step, Activity};
use crate::file_id::FileId;
use crate::measure::{quantile, DirectBuf};
use crate::rig::emulated::{self, DeviceDaemon};
use crate::rig::image::ImageFile;
use crate::rig::loopdev::LoopDevice;
use crate::rig::session::SessionDir;

/// What to measure and where.
#[derive(Debug, Clone)]
pub struct FloorOptions {
    /// Directory for the session (the daemon's mount point and files).
    pub work_dir: PathBuf,
    /// Directory on tmpfs for the plain loop device's file.
    pub tmpfs_dir: PathBuf,
    /// Directory for the daemon's image, as a trial's `[emulation] image_dir`.
    pub image_dir: PathBuf,
    /// Requests of each kind per part.
    pub requests: u64,
    /// Where the daemon and this process run.
    pub placement: Placement,
}

/// Where the daemon's threads run relative to the requests' submitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
pub enum Placement {
    /// As in a trial: the daemon on the last CPU, this process on the others.
    Split,
    /// This process on the first CPUs as in a trial, the daemon on every CPU.
    Shared,
    /// Everything on the last CPU.
    One,
}

/// Size of the images.
const SPAN: u64 = 256 << 20;
const BS: usize = 4096;

/// Per-request latencies of one kind, in µs.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Lat {
    pub median_us: f64,
    pub p10_us: f64,
    pub p90_us: f64,
    pub mean_us: f64,
}

impl Lat {
    fn of(mut ns: Vec<u64>) -> Self {
        if ns.is_empty() {
            return Self::default();
        }
        ns.sort_unstable();
        let q = |p: f64| quantile(&ns, p).unwrap_or(0) as f64 / 1e3;
        Self {
            median_us: q(0.5),
            p10_us: q(0.1),
            p90_us: q(0.9),
            mean_us: ns.iter().sum::<u64>() as f64 / ns.len() as f64 / 1e3,
        }
    }
}

/// One part of the path.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub part: String,
    pub read: Lat,
    pub write: Lat,
}

#[derive(Debug, Clone, Serialize)]
pub struct Floor {
    pub requests: u64,
    pub placement: Placement,
    pub parts: Vec<Part>,
    /// Image I/O per request as the daemon counted it (µs): [FUSE only, whole path]
    /// × [read, write].
    pub daemon_io_us: [[f64; 2]; 2],
    /// How a trial's emulated disk is served on this machine.
    pub setup: PathSetup,
}

/// How a trial's emulated disk is served here: the transport, and where the path waits
/// by polling instead of sleeping.
#[derive(Debug, Clone, Serialize)]
pub struct PathSetup {
    /// `classic`: requests read from `/dev/fuse` by this many threads at real-time
    /// priority, or by one polling reader (`read_mode`).
    pub transport: String,
    pub fuse_threads: usize,
    /// How the floor's daemon (pinned as a trial's, images where a trial's are) read
    /// its requests: polling, or asleep and why (`None` before it ran).
    pub read_mode: Option<crate::emu::daemon::ReadMode>,
    /// The kernel's `enable_uring` for FUSE (`Y`, `N`; `None`: no such parameter):
    /// FUSE over io_uring, which jbench's daemon does not speak.
    pub fuse_io_uring_in_kernel: Option<String>,
    /// Idle CPUs poll instead of halting while the daemon serves timed disks (the CPU
    /// latency request held at 0 µs); `false` where it cannot be asked.
    pub idle_cpus_poll: bool,
    /// The completion thread spins this long before each deadline, µs.
    pub spin_before_deadline_us: u64,
    /// The daemon's CPUs and the workload's, as a trial pins them (`None`: one CPU,
    /// nothing to separate).
    pub daemon_cpus: Option<Vec<usize>>,
    pub workload_cpus: Option<Vec<usize>>,
}

impl PathSetup {
    /// This machine's.
    pub fn here() -> Self {
        let split = emulated::split_cpus(&emulated::allowed_cpus());
        PathSetup {
            transport: "classic".into(),
            fuse_threads: crate::emu::daemon::FUSE_THREADS,
            read_mode: None,
            fuse_io_uring_in_kernel: std::fs::read_to_string(
                "/sys/module/fuse/parameters/enable_uring",
            )
            .ok()
            .map(|s| s.trim().to_string()),
            idle_cpus_poll: emulated::can_hold_cpu_latency(),
            spin_before_deadline_us: crate::emu::daemon::SPIN_BEFORE_DEADLINE.as_micros() as u64,
            daemon_cpus: split.as_ref().map(|(d, _)| d.clone()),
            workload_cpus: split.map(|(_, w)| w),
        }
    }

    /// One paragraph for the terminal.
    pub fn describe(&self) -> String {
        let uring = match self.fuse_io_uring_in_kernel.as_deref() {
            Some("Y") => "the kernel offers FUSE over io_uring (enable_uring=Y), which the daemon does not speak".to_string(),
            Some(v) => format!("FUSE over io_uring: the kernel has it, off (enable_uring={v}), and the daemon does not speak it"),
            None => "this kernel has no FUSE over io_uring".to_string(),
        };
        let cpus = match (&self.daemon_cpus, &self.workload_cpus) {
            (Some(d), Some(w)) => format!("the daemon on CPU(s) {d:?}, the workload on {w:?}"),
            _ => "one CPU: the daemon and the workload share it".to_string(),
        };
        let readers = match &self.read_mode {
            Some(m) if m.polling => {
                "one reader polling at normal priority (the daemon has a CPU of its own, its images are in memory)".to_string()
            }
            Some(m) => format!(
                "{} reading threads asleep at real-time priority (no polling: {})",
                self.fuse_threads,
                m.why_not.as_deref().unwrap_or("not asked")
            ),
            None => format!(
                "one polling reader where the daemon has a CPU of its own and its images are in memory, else {} reading threads at real-time priority",
                self.fuse_threads
            ),
        };
        format!(
            "a trial here uses: {} FUSE (/dev/fuse, {readers}); {uring}; idle CPUs {}; the completion thread spins the last {} µs before each deadline; {cpus}",
            self.transport,
            if self.idle_cpus_poll {
                "poll instead of halting (CPU latency request held at 0 µs)"
            } else {
                "may halt (the CPU latency request cannot be held here)"
            },
            self.spin_before_deadline_us
        )
    }
}

/// A small deterministic generator of block offsets within `SPAN`.
struct Offsets(u64);

impl Iterator for Offsets {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        Some((self.0 >> 33) % (SPAN / BS as u64) * BS as u64)
    }
}

/// Times `n` random 4 KiB reads (or writes), one at a time, on `f`.
fn time_one(f: &File, n: u64, write: bool, offs: &mut Offsets) -> Result<Lat> {
    let mut buf = DirectBuf::new(BS)?;
    let mut ns = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let off = offs.next().unwrap_or(0);
        let t = Instant::now();
        if write {
            f.write_all_at(buf.get(BS), off)?;
        } else {
            f.read_exact_at(buf.get(BS), off)?;
        }
        ns.push(t.elapsed().as_nanos() as u64);
    }
    Ok(Lat::of(ns))
}

/// Times `n` random 4 KiB reads, then `n` writes, on `f`, after a warm-up (the first
/// requests fault in pages and wake idle threads); `between` runs before each timed
/// stream and after the last (to reset and read the daemon's counters).
fn time_rw(
    f: &File,
    n: u64,
    between: &mut dyn FnMut(Option<bool>) -> Result<()>,
) -> Result<(Lat, Lat)> {
    let mut offs = Offsets(42);
    time_one(f, (n / 10).clamp(10, 200), false, &mut offs)?;
    between(None)?;
    let r = time_one(f, n, false, &mut offs)?;
    between(Some(false))?;
    let w = time_one(f, n, true, &mut offs)?;
    between(Some(true))?;
    Ok((r, w))
}

fn nothing(_: Option<bool>) -> Result<()> {
    Ok(())
}

fn open(path: &Path, direct: bool) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(if direct { libc::O_DIRECT } else { 0 })
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// Measures the parts, telling each as an event.
pub fn floor(opts: &FloorOptions) -> Result<Floor> {
    // Before this thread is pinned: a trial's split is of every CPU jbench may use.
    let setup = PathSetup::here();
    let session = SessionDir::create(&opts.work_dir)?;
    // The work dir's page cache, for comparison: where an image on a disk's file system
    // would be served from.
    let disk_img = ImageFile::create(&session, "page-cache.img", SPAN)?;
    fill(disk_img.file())?;
    // The daemon's image where a trial's is, allocated and written, as a ram disk's
    // image is once written.
    let img_session = SessionDir::create(&opts.image_dir)?;
    let img = ImageFile::create_allocated(&img_session, "floor.img", SPAN)?;
    fill(img.file())?;
    let tmp_session = SessionDir::create(&opts.tmpfs_dir)?;
    let tmp_img = ImageFile::create_allocated(&tmp_session, "plain.img", SPAN)?;

    let allowed = emulated::allowed_cpus();
    let split = emulated::split_cpus(&allowed);
    let (daemon_cpus, mine) = match (opts.placement, &split) {
        (_, None) => (Vec::new(), None),
        (Placement::Split, Some((d, w))) => (d.clone(), Some(w.clone())),
        (Placement::Shared, Some((_, w))) => (allowed.clone(), Some(w.clone())),
        (Placement::One, Some((d, _))) => (d.clone(), Some(d.clone())),
    };
    let restore = match &mine {
        Some(m) => Some(emulated::pin_current_thread(m)?),
        None => None,
    };
    let result = (|| {
        let n = opts.requests;
        let mut parts = Vec::new();
        let mut push = |name: &str, (read, write): (Lat, Lat)| {
            step(
                Activity::Selftest,
                format!(
                    "{name}: read {:.1} µs, write {:.1} µs (median)",
                    read.median_us, write.median_us
                ),
            );
            parts.push(Part {
                part: name.to_string(),
                read,
                write,
            });
        };

        push(
            "image I/O, work dir's page cache (pread/pwrite)",
            time_rw(disk_img.file(), n, &mut nothing)?,
        );
        push(
            "image I/O, the daemon's image (pread/pwrite)",
            time_rw(img.file(), n, &mut nothing)?,
        );

        let mut plain = LoopDevice::attach_with(tmp_img.file(), tmp_img.path(), 0, None, true)?;
        let r = time_rw(&open(plain.path(), true)?, n, &mut nothing);
        plain.release()?;
        push("loop device over a tmpfs file", r?);

        let disks = [DiskSpec {
            name: "floor".into(),
            image: img.path().to_path_buf(),
            model: "ram".into(),
            params: toml::Table::new(),
            image_id: Some(FileId::of(img.file())?),
        }];
        let cpus = daemon_cpus.clone();
        // Polling only where a trial would: the daemon on CPUs of its own.
        let emulation = EmulationOptions {
            poll: opts.placement == Placement::Split,
            ..EmulationOptions::default()
        };
        let mut daemon = DeviceDaemon::start(&session, &disks, &emulation, cpus, None)?;
        let mut read_mode = daemon.stats()?.read_mode;
        if opts.placement != Placement::Split {
            // Asleep because the floor asked so, not because of anything set.
            read_mode.why_not = Some(format!(
                "--placement {}: the daemon shares the workload's CPUs",
                clap::ValueEnum::to_possible_value(&opts.placement)
                    .map_or_else(String::new, |v| v.get_name().to_string())
            ));
        }
        // The daemon's image I/O per request, [part][read, write], in µs.
        let mut io_us = [[0.0; 2]; 2];
        let r = (|| -> Result<()> {
            for (part, io) in io_us.iter_mut().enumerate() {
                let mut lo = None;
                let path = if part == 0 {
                    daemon.disk_file("floor")
                } else {
                    let l = daemon.attach_disk("floor", 0, None)?;
                    let p = l.path().to_path_buf();
                    lo = Some(l);
                    p
                };
                let f = open(&path, true)?;
                let d = &daemon;
                let rw = time_rw(&f, n, &mut |phase| {
                    if let Some(write) = phase {
                        let st = d.stats()?;
                        let disk = &st.disks[0];
                        let count = if write { disk.writes } else { disk.reads };
                        io[write as usize] = disk.io_seconds * 1e6 / count.max(1) as f64;
                    }
                    // Fresh counters for the next stream.
                    d.set_timing(true)
                })?;
                drop(f);
                if let Some(mut l) = lo {
                    l.release()?;
                }
                push(
                    if part == 0 {
                        "FUSE file, O_DIRECT (no loop device)"
                    } else {
                        "loop device over the FUSE file (the floor)"
                    },
                    rw,
                );
            }
            Ok(())
        })();
        let released = daemon.release();
        r?;
        released?;
        Ok(Floor {
            requests: n,
            placement: opts.placement,
            parts,
            daemon_io_us: io_us,
            setup: PathSetup {
                // One reader polls; the others are asleep.
                fuse_threads: if read_mode.polling {
                    1
                } else {
                    setup.fuse_threads
                },
                read_mode: Some(read_mode),
                ..setup.clone()
            },
        })
    })();
    if let Some(cpus) = restore {
        let _ = emulated::pin_current_thread(&cpus);
    }
    result
}

/// Writes every block of `f`, so reads find data in the page cache, not holes.
fn fill(f: &File) -> Result<()> {
    let block = vec![0x33u8; 1 << 20];
    let mut off = 0;
    while off < SPAN {
        f.write_all_at(&block, off)?;
        off += block.len() as u64;
    }
    Ok(())
}

/// The parts as a table, with the differences that say what the loop device and the
/// FUSE round trip cost.
pub fn render(f: &Floor) -> String {
    let mut out = format!(
        "4 KiB requests at queue depth 1, {} of each kind per part; placement {:?}\n\n",
        f.requests, f.placement
    );
    out.push_str(&format!(
        "{:<44} {:>11} {:>11} {:>11} {:>11}\n",
        "part", "read med", "read mean", "write med", "write mean"
    ));
    for p in &f.parts {
        out.push_str(&format!(
            "{:<44} {:>8.1} µs {:>8.1} µs {:>8.1} µs {:>8.1} µs\n",
            p.part, p.read.median_us, p.read.mean_us, p.write.median_us, p.write.mean_us
        ));
    }
    if let [.., fuse, whole] = &f.parts[..] {
        let io = &f.daemon_io_us;
        out.push_str(&format!(
            "\ndaemon's image I/O per request (its own count): FUSE only read {:.1} µs, write {:.1} µs; whole path read {:.1} µs, write {:.1} µs\n",
            io[0][0], io[0][1], io[1][0], io[1][1]
        ));
        out.push_str(&format!(
            "loop device's share (whole path − FUSE only, medians): read {:.1} µs, write {:.1} µs\n",
            whole.read.median_us - fuse.read.median_us,
            whole.write.median_us - fuse.write.median_us
        ));
        out.push_str(&format!(
            "FUSE round trip besides the image I/O (FUSE only − daemon's image I/O): read {:.1} µs, write {:.1} µs\n",
            fuse.read.median_us - io[0][0],
            fuse.write.median_us - io[0][1]
        ));
    }
    out.push_str(&format!("\n{}\n", f.setup.describe()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_says_transport_polling_and_cpus() {
        let mut setup = PathSetup {
            transport: "classic".into(),
            fuse_threads: 4,
            read_mode: Some(crate::emu::daemon::ReadMode {
                polling: false,
                why_not: Some("[emulation] poll = false".into()),
            }),
            fuse_io_uring_in_kernel: Some("N".into()),
            idle_cpus_poll: true,
            spin_before_deadline_us: 80,
            daemon_cpus: Some(vec![1]),
            workload_cpus: Some(vec![0]),
        };
        let d = setup.describe();
        assert!(
            d.starts_with("a trial here uses: classic FUSE (/dev/fuse, 4 reading threads asleep at real-time priority (no polling: [emulation] poll = false))"),
            "{d}"
        );
        assert!(
            d.contains("enable_uring=N") && d.contains("poll instead of halting"),
            "{d}"
        );
        assert!(
            d.contains("spins the last 80 µs")
                && d.contains("daemon on CPU(s) [1], the workload on [0]"),
            "{d}"
        );
        setup.read_mode = Some(crate::emu::daemon::ReadMode {
            polling: true,
            why_not: None,
        });
        assert!(setup
            .describe()
            .contains("(/dev/fuse, one reader polling at normal priority"));
        setup.fuse_io_uring_in_kernel = None;
        setup.idle_cpus_poll = false;
        setup.daemon_cpus = None;
        let d = setup.describe();
        assert!(
            d.contains("no FUSE over io_uring") && d.contains("may halt") && d.contains("share it"),
            "{d}"
        );
        // What this machine says is one of those.
        assert!(PathSetup::here()
            .describe()
            .starts_with("a trial here uses: classic FUSE"));
    }

    #[test]
    fn latencies_are_quantiles_of_the_requests() {
        let l = Lat::of((1..=11).map(|us| us * 1000).collect());
        assert_eq!(l.median_us, 6.0);
        assert_eq!(l.p10_us, 2.0);
        assert_eq!(l.p90_us, 10.0);
        assert_eq!(l.mean_us, 6.0);
        let none = Lat::of(Vec::new());
        assert_eq!(none.median_us, 0.0);
    }

    #[test]
    fn offsets_are_aligned_blocks_inside_the_image_and_spread() {
        let offs: Vec<u64> = Offsets(42).take(1000).collect();
        assert!(offs
            .iter()
            .all(|&o| o % BS as u64 == 0 && o + BS as u64 <= SPAN));
        let distinct: std::collections::BTreeSet<_> = offs.iter().collect();
        assert!(distinct.len() > 990, "{}", distinct.len());
    }
}
