//! The device daemon (`jbench device-daemon`, started by the rig): a FUSE file system
//! with one file per emulated disk, each backed by an image file. A loop device over
//! such a file (direct I/O on both sides) is a block device whose every read, write,
//! flush and discard reaches this process, which applies it to the image and answers
//! when the disk's model says the request completes.
//!
//! Requests are answered by a completion thread at their deadlines, so the FUSE thread
//! never sleeps: a disk model queues its own requests (one actuator per disk) while
//! requests to other disks proceed, as on separate spindles.
//!
//! Besides the disks, the root holds two control files: `.control` (write `timing on`,
//! `timing off` or `marker LABEL`) and `.stats` (read: JSON [`DaemonStats`]).
//!
//! This file holds what the rig and the daemon exchange (the config, the disks, the
//! ready file) and `run`, which mounts and serves. `disk` opens an image and builds its
//! model; `state` is what the FUSE and completion threads share (timing, the request
//! accounting, control commands); `fuse_fs` is the file system; `completion` answers
//! requests at their deadlines; `stats` is the `.stats` record.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use fuser::MountOption;
use serde::{Deserialize, Serialize};

use super::writelog::{LogDisk, LogHeader, LogWriter};
use crate::file_id::FileId;
use completion::completer;
use disk::Disk;
use fuse_fs::EmuFs;
use queue::Queue;
use state::Inner;

mod completion;
mod disk;
mod fuse_fs;
mod overlay;
mod path;
mod polling;
mod priority;
mod queue;
mod state;
mod stats;

pub use completion::SPIN_BEFORE_DEADLINE;
pub use disk::build_model;
pub use path::PathCost;
pub use polling::ReadMode;
pub use stats::{is_overdue, DaemonStats, DiskStats, Lateness, OVERDUE_AFTER};

/// Name of the file a control command is written to.
pub const CONTROL_FILE: &str = ".control";
/// Name of the file the daemon's statistics are read from.
pub const STATS_FILE: &str = ".stats";
/// File-system type the mount shows in /proc/mounts (`fuse.` + this).
pub const SUBTYPE: &str = "jbench-emu";
/// Name of the daemon's real-time completion thread, as the host-load monitor finds it.
pub const COMPLETER_THREAD: &str = "completer";
/// How fuser names its request readers' threads (`fuser-0`, ...): a polling reader is
/// always runnable, which the host-load monitor must not take for starvation.
pub const FUSE_READER_PREFIX: &str = "fuser-";

/// One emulated disk to serve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskSpec {
    /// File name under the mount point, e.g. `fs` or `journal`.
    pub name: String,
    /// Backing image; its size is the disk's size.
    pub image: PathBuf,
    /// Built-in model name (`emu::MODEL_NAMES`).
    pub model: String,
    /// Overrides of the model's defaults.
    #[serde(default)]
    pub params: toml::Table,
    /// The image jbench created; the daemon refuses to serve any other file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<FileId>,
}

/// What the rig hands the daemon, as a JSON file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonConfig {
    pub mountpoint: PathBuf,
    pub disks: Vec<DiskSpec>,
    /// Record every request in this write log (docs/write-log.md).
    #[serde(default)]
    pub write_log: Option<PathBuf>,
    /// Pin the daemon to these CPUs.
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// Written (atomically) once the file system is mounted and serving.
    pub ready_file: PathBuf,
    /// Serve crash states: writes go to a copy-on-write overlay, never to the images
    /// (control commands `overlay load|clear|lose`, see `state`).
    #[serde(default)]
    pub overlay: bool,
    /// Poll `/dev/fuse` where a CPU can be spared (`polling`).
    #[serde(default)]
    pub poll: bool,
}

/// The ready file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub pid: u32,
}

/// The daemon's configuration: `path`, opened without following a symbolic link. When
/// standard input is a regular file (the rig hands the daemon the file it wrote), the
/// two must be the same file, so a path swapped since is refused.
fn read_config(path: &Path) -> Result<String> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot read daemon config {}", path.display()))?;
    let stdin = File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    if stdin.metadata().is_ok_and(|m| m.is_file()) {
        let (named, given) = (FileId::of(&file)?, FileId::of(&stdin)?);
        if named != given {
            bail!(
                "daemon config {} is inode {} on dev {}, not the file jbench wrote (inode {} on dev {}): the session directory was changed; refusing to start",
                path.display(),
                named.ino,
                named.dev,
                given.ino,
                given.dev
            );
        }
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("cannot read daemon config {}", path.display()))?;
    Ok(text)
}

/// Threads reading FUSE requests. Requests are short (an image read or write, then a
/// deadline); four cover the loop devices' concurrency on hosts this size without the
/// threads contending for the queue lock.
pub const FUSE_THREADS: usize = 4;

/// Marks the daemon as part of the block I/O path (`PR_SET_IO_FLUSHER`, Linux 5.6):
/// its own writes to the images are throttled only by the host disk's dirty pages, not
/// by the whole machine's. Without it the kernel throttles the daemon's image writes
/// for dirty pages of the file system under test, which only the daemon can clean: a
/// workload that dirties more than the dirty limit stalls the disk that would drain
/// them (docs/devices.md, "Why the emulated disk never stalls"). The flag also keeps
/// the daemon's allocations from recursing into I/O. Every thread inherits it.
fn io_flusher() {
    // From include/uapi/linux/prctl.h; the libc crate names it for Android only.
    const PR_SET_IO_FLUSHER: libc::c_int = 57;
    // SAFETY: plain prctl on the calling thread with integer arguments.
    let rc = unsafe { libc::prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0) };
    if rc != 0 {
        crate::events::emit(crate::events::Event::NoIoFlusher {
            error: std::io::Error::last_os_error().to_string(),
        });
    }
}

/// `jbench device-daemon CONFIG`: serve until SIGTERM (or until the file system is
/// unmounted), then flush the write log and exit.
pub fn run(config_path: &Path) -> Result<()> {
    let text = read_config(config_path)?;
    let config: DaemonConfig = serde_json::from_str(&text)
        .with_context(|| format!("bad daemon config {}", config_path.display()))?;
    if config.disks.is_empty() || config.disks.len() > 64 {
        bail!("a daemon serves 1 to 64 disks, got {}", config.disks.len());
    }

    // If jbench dies the daemon must not serve on forever; the rig's cleanup finds
    // and releases what is left.
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)?;
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, term.clone())?;
    }
    // Ctrl-C belongs to jbench, which stops the daemon last, after the file system.
    // SAFETY: setting a signal to SIG_IGN has no handler to race with.
    unsafe {
        nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGINT,
            nix::sys::signal::SigHandler::SigIgn,
        )?;
    }
    io_flusher();
    if !config.cpus.is_empty() {
        let mut set = nix::sched::CpuSet::new();
        for &c in &config.cpus {
            set.set(c)?;
        }
        // Before any thread starts, so every thread inherits it.
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .context("cannot pin the device daemon")?;
    }

    let disks: Vec<Disk> = config
        .disks
        .iter()
        .map(|d| Disk::open(d, config.overlay))
        .collect::<Result<_>>()?;
    let log = match &config.write_log {
        Some(path) => {
            let header = LogHeader {
                version: super::writelog::VERSION,
                disks: disks
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        // Timing rebuilds the model from the same spec: what it says
                        // of its cache holds for the whole log.
                        let st = d.state.lock().unwrap_or_else(|p| p.into_inner());
                        LogDisk {
                            index: i as u8,
                            name: d.spec.name.clone(),
                            size: d.size,
                            model: d.spec.model.clone(),
                            volatile_cache: Some(st.model.volatile_cache()),
                            honor_flush: Some(st.model.honors_flush()),
                        }
                    })
                    .collect(),
                initial_state: "zeros".into(),
            };
            Some(Mutex::new(LogWriter::create(path, &header)?))
        }
        None => None,
    };
    let images: Vec<&Path> = config.disks.iter().map(|d| d.image.as_path()).collect();
    let polling = polling::decide(config.poll, &config.cpus, &images);
    let inner = Arc::new(Inner {
        read_mode: polling.mode.clone(),
        disks,
        timing: AtomicBool::new(false),
        epoch: Instant::now(),
        log,
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        seq: AtomicU64::new(0),
        clock: AtomicU64::new(0),
        snapshots: Mutex::new(HashMap::new()),
        next_fh: AtomicU64::new(1),
    });
    let done = std::thread::Builder::new()
        .name(COMPLETER_THREAD.into())
        .spawn({
            let inner = inner.clone();
            move || completer(inner)
        })?;

    let mut fuse_config = fuser::Config::default();
    fuse_config.mount_options = vec![
        MountOption::FSName(SUBTYPE.into()),
        MountOption::Subtype(SUBTYPE.into()),
        MountOption::NoExec,
        MountOption::NoSuid,
        MountOption::NoDev,
    ];
    // More than one thread reads requests, so one blocked in the kernel (an image write
    // waiting on the host's disk) does not hold back the rest, the watchdog's probe
    // among them. Each has its own /dev/fuse descriptor.
    // A polling daemon has one reader, spinning (`polling`); else several asleep.
    fuse_config.n_threads = Some(if polling.mode.polling {
        1
    } else {
        FUSE_THREADS
    });
    fuse_config.clone_fd = true;
    let mut session = fuser::Session::new(
        EmuFs {
            inner: inner.clone(),
        },
        &config.mountpoint,
        &fuse_config,
    )
    .with_context(|| {
        format!(
            "cannot mount the device daemon on {}",
            config.mountpoint.display()
        )
    })?;
    if polling.mode.polling {
        polling::make_nonblocking(session.as_fd())?;
    }
    let mut unmounter = session.unmount_callable();
    let poll = polling.mode.polling;
    let serving = std::thread::Builder::new()
        .name("fuse".into())
        .spawn(move || {
            // Before the session starts its threads, so they inherit it.
            if !poll {
                priority::serve_realtime();
            }
            session.run()
        })?;

    let tmp = config.ready_file.with_extension("tmp");
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?
        .write_all(&serde_json::to_vec(&Ready {
            pid: std::process::id(),
        })?)?;
    std::fs::rename(&tmp, &config.ready_file)?;

    while !term.load(Ordering::Relaxed) && !serving.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !serving.is_finished() {
        let _ = unmounter.unmount();
        let deadline = Instant::now() + Duration::from_secs(2);
        while !serving.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    {
        let mut q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.closed = true;
    }
    inner.wake.notify_all();
    if serving.is_finished() {
        let _ = done.join();
    }
    if let Some(log) = &inner.log {
        log.lock()
            .unwrap_or_else(|p| p.into_inner())
            .flush()
            .context("cannot flush the write log")?;
    }
    Ok(())
}
