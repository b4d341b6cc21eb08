//! The rig's side of the device daemon: start it, use its disks, watch it, stop it.
//!
//! A daemon that stops answering would leave every process doing I/O on its disks
//! (and `umount`) hanging in the kernel. A watchdog thread probes it once a second;
//! when a probe has gone unanswered for the configured time it aborts the FUSE
//! connection (`/sys/fs/fuse/connections/N/abort`), so outstanding and later requests
//! fail with an error instead. A daemon that dies aborts its connection by itself.
//!
//! Teardown order matters and is the rig's: unmount the file system, detach the loop
//! devices, then [`DeviceDaemon::release`] stops the daemon and unmounts its FUSE file
//! system.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::emu::daemon::{
    DaemonConfig, DaemonStats, DiskSpec, DiskStats, Ready, CONTROL_FILE, OVERDUE_AFTER, STATS_FILE,
};
use crate::emu::EmulationOptions;
use crate::file_id::FileId;
use crate::rig::loopdev::LoopDevice;
use crate::rig::session::SessionDir;
use crate::rig::{cmd, mounts};
pub use inject::{InjectedStall, StallAt, INJECT_STALL_VAR};

mod inject;
mod probe;

/// Where the FUSE control file system lives.
pub const FUSECTL: &str = "/sys/fs/fuse/connections";
/// Name of the daemon's pid file in a session directory (for `jbench cleanup`).
pub const PID_FILE: &str = "device-daemon.pid";
/// The daemon's mount point inside a session directory.
pub const MOUNT_DIR: &str = "emu";
/// The daemon's configuration, in a session directory.
pub const CONFIG_FILE: &str = "device-daemon.json";
/// The daemon's standard error, in a session directory.
pub const LOG_FILE: &str = "device-daemon.log";

/// Creates `name` afresh in the session directory (a previous trial's daemon may have
/// left one): removed, then created with `O_EXCL|O_NOFOLLOW`.
fn fresh_file(session: &SessionDir, name: &str) -> Result<File> {
    remove_at(session, name)?;
    session.create_file(name)
}

fn remove_at(session: &SessionDir, name: &str) -> Result<()> {
    use std::os::fd::AsRawFd;
    match nix::unistd::unlinkat(
        Some(session.dir_fd().as_raw_fd()),
        name,
        nix::unistd::UnlinkatFlags::NoRemoveDir,
    ) {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", session.join(name).display())),
    }
}

/// Makes directory `name` (0700) in the session directory; one already there (a
/// previous trial's mount point) must be a directory, not a symbolic link.
fn make_dir_at(session: &SessionDir, name: &str) -> Result<()> {
    use std::os::fd::AsRawFd;
    let dir = session.dir_fd().as_raw_fd();
    match nix::sys::stat::mkdirat(Some(dir), name, nix::sys::stat::Mode::S_IRWXU) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EEXIST) => {
            let st =
                nix::sys::stat::fstatat(Some(dir), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?;
            if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                bail!(
                    "{} is not a directory; refusing to mount the device daemon there",
                    session.join(name).display()
                );
            }
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("cannot create {}", session.join(name).display())),
    }
}

/// What a trial on emulated disks records (`emulation` in trials.jsonl).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmulationRecord {
    /// CPUs the daemon was pinned to (empty: not pinned).
    pub daemon_cpus: Vec<usize>,
    /// CPUs the workload was pinned to (empty: not pinned).
    pub workload_cpus: Vec<usize>,
    /// The daemon's CPU time while the workload ran.
    pub daemon_cpu_user_seconds: f64,
    pub daemon_cpu_system_seconds: f64,
    /// Per emulated disk, while the workload ran.
    pub disks: Vec<DiskStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_log: Option<String>,
    #[serde(default)]
    pub log_records: u64,
    #[serde(default)]
    pub log_bytes: u64,
    /// How the daemon read requests: polling, or asleep and why not polling.
    #[serde(default)]
    pub read_mode: crate::emu::daemon::ReadMode,
}

impl EmulationRecord {
    /// Why this trial's times cannot be the model's, when the device daemon stalled on
    /// one of its disks: answers more than [`OVERDUE_AFTER`] past their deadline, or
    /// image I/O calls longer than that (docs/devices.md, "Stalls"). One clause per
    /// stalled disk, naming it, how many and how bad.
    pub fn stall(&self) -> Option<String> {
        let bound = OVERDUE_AFTER.as_secs_f64();
        let clauses: Vec<String> = self
            .disks
            .iter()
            .filter(|d| d.stalled())
            .map(|d| {
                let mut what = Vec::new();
                if d.overdue > 0 {
                    what.push(format!(
                        "{} answer(s) more than {bound} s past the model's deadline (worst {:.2} s late, due {:.2} s into the workload)",
                        d.overdue,
                        d.worst_late_ms / 1e3,
                        d.worst_late_at_seconds
                    ));
                }
                if d.slow_io > 0 {
                    what.push(format!(
                        "{} image I/O call(s) that blocked the daemon for more than {bound} s (longest {:.2} s)",
                        d.slow_io,
                        d.worst_io_ms / 1e3
                    ));
                }
                format!("emulated {} disk ({}): {}", d.name, d.model, what.join(", "))
            })
            .collect();
        (!clauses.is_empty()).then(|| {
            format!(
                "the device daemon stalled, so the times are the host's, not the model's: {}",
                clauses.join("; ")
            )
        })
    }
}

/// The jbench executable that serves as the daemon: `JBENCH_DAEMON_BIN` if set, else
/// this executable when it is jbench, else a `jbench` next to it or one directory up
/// (where cargo puts the binary relative to test executables in `deps/`).
pub fn daemon_binary() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("JBENCH_DAEMON_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("cannot find the jbench executable")?;
    if exe.file_name().is_some_and(|n| n == "jbench") {
        return Ok(exe);
    }
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    for candidate in [dir.join("jbench"), dir.join("../jbench")] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "cannot find the jbench executable to run the device daemon (looked next to {}); set JBENCH_DAEMON_BIN",
        exe.display()
    )
}

/// CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Pins the calling thread (and the threads it starts later) to `cpus`; returns the
/// CPUs it had, to restore.
pub fn pin_current_thread(cpus: &[usize]) -> Result<Vec<usize>> {
    let before = allowed_cpus();
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).with_context(|| {
        let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
        format!("cannot pin the workload to CPUs {}", list.join(", "))
    })?;
    Ok(before)
}

/// How to split the CPUs: the daemon gets the last one, the workload the rest; `None`
/// with one CPU (nothing to separate).
pub fn split_cpus(allowed: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let (&last, rest) = allowed.split_last()?;
    if rest.is_empty() {
        return None;
    }
    Some((vec![last], rest.to_vec()))
}

/// The kernel's CPU latency request (PM QoS): while a process holds it open with a
/// value written, idle CPUs stay in states that wake within that many µs.
const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// Asks that idle CPUs wake at once (0 µs) for as long as the returned file is open;
/// `None` where that cannot be asked (not root, no such device). On a virtual machine
/// a halted vCPU takes tens of µs to come back, and the emulation path wakes one at
/// least twice per request (the daemon's CPU when the request arrives, the workload's
/// when it is answered): measured on the development VM (2 vCPUs, halt polling off),
/// a 4 KiB QD1 round trip with no model delay took 25-30 µs with this held and about
/// 100 µs without it on an idle machine, but 20-50 µs on a busy one, whose vCPUs seldom
/// halt. The path's cost, which the daemon takes off every answer, must not depend on
/// how busy the machine happens to be. The kernel drops the request when the file is
/// closed, or when jbench dies: nothing to restore.
/// Whether [`hold_cpu_latency`] can be asked here (root, and the kernel has the file).
pub fn can_hold_cpu_latency() -> bool {
    OpenOptions::new().write(true).open(CPU_DMA_LATENCY).is_ok()
}

pub fn hold_cpu_latency() -> Option<File> {
    let mut f = OpenOptions::new().write(true).open(CPU_DMA_LATENCY).ok()?;
    f.write_all(&0i32.to_ne_bytes()).ok()?;
    Some(f)
}

#[derive(Default)]
struct WatchState {
    /// Set when the watchdog aborted the connection, with why.
    aborted: Mutex<Option<String>>,
    stop: AtomicBool,
    /// Milliseconds since `base` at which the current probe started; 0: none running.
    probe_started_ms: AtomicU64,
}

/// A running device daemon with its FUSE mount and watchdog.
pub struct DeviceDaemon {
    child: Option<Child>,
    pid: u32,
    mountpoint: PathBuf,
    conn: Option<u64>,
    state: Arc<WatchState>,
    watchdog: Option<JoinHandle<()>>,
    prober: Option<JoinHandle<()>>,
    stderr: PathBuf,
    pid_file: PathBuf,
    cpus: Vec<usize>,
    write_log: Option<PathBuf>,
    /// Held open while the daemon serves: see [`hold_cpu_latency`].
    cpu_latency: Option<File>,
    released: bool,
}

impl DeviceDaemon {
    /// Starts a daemon serving `disks` on `session/emu`, and waits until it serves.
    /// Its files are created in the session directory as it was created (never through
    /// a symbolic link); the daemon gets the configuration as its standard input too,
    /// and checks that the file it was named is that one.
    pub fn start(
        session: &SessionDir,
        disks: &[DiskSpec],
        opts: &EmulationOptions,
        cpus: Vec<usize>,
        write_log: Option<PathBuf>,
    ) -> Result<Self> {
        Self::start_with(session, disks, opts, cpus, write_log, false)
    }

    /// A daemon that serves crash states: the images are bases that recovery never
    /// writes; every write goes to a copy-on-write overlay ([`Self::overlay_load`],
    /// [`Self::overlay_clear`], [`Self::overlay_lose`]).
    pub fn start_overlay(
        session: &SessionDir,
        disks: &[DiskSpec],
        opts: &EmulationOptions,
    ) -> Result<Self> {
        Self::start_with(session, disks, opts, Vec::new(), None, true)
    }

    fn start_with(
        session: &SessionDir,
        disks: &[DiskSpec],
        opts: &EmulationOptions,
        cpus: Vec<usize>,
        write_log: Option<PathBuf>,
        overlay: bool,
    ) -> Result<Self> {
        let mountpoint = session.join(MOUNT_DIR);
        make_dir_at(session, MOUNT_DIR)?;
        let ready_file = session.join("device-daemon.ready");
        remove_at(session, "device-daemon.ready")?;
        let config = DaemonConfig {
            mountpoint: mountpoint.clone(),
            disks: disks.to_vec(),
            write_log: write_log.clone(),
            cpus: cpus.clone(),
            ready_file: ready_file.clone(),
            overlay,
            poll: opts.poll,
        };
        let config_path = session.join(CONFIG_FILE);
        let mut config_file = fresh_file(session, CONFIG_FILE)?;
        config_file.write_all(&serde_json::to_vec_pretty(&config)?)?;
        config_file.rewind()?;
        let stderr = session.join(LOG_FILE);
        let err_file = fresh_file(session, LOG_FILE)?;
        let bin = daemon_binary()?;
        let child = Command::new(&bin)
            .arg("device-daemon")
            .arg(&config_path)
            .stdin(config_file)
            .stdout(Stdio::null())
            .stderr(err_file)
            // Its own process group: Ctrl-C reaches jbench, which stops the daemon last.
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start the device daemon {}", bin.display()))?;
        let pid = child.id();
        let pid_file = session.join(PID_FILE);
        fresh_file(session, PID_FILE)?.write_all(format!("{pid}\n").as_bytes())?;
        let mut d = DeviceDaemon {
            cpu_latency: hold_cpu_latency(),
            child: Some(child),
            pid,
            mountpoint,
            conn: None,
            state: Arc::new(WatchState::default()),
            watchdog: None,
            prober: None,
            stderr,
            pid_file,
            cpus,
            write_log,
            released: false,
        };
        // From here on, a failure releases what was started (Drop).
        d.wait_ready(&ready_file)?;
        d.conn = Some(connection_id(&d.mountpoint)?);
        ensure_fusectl()?;
        d.start_watchdog(opts.watchdog);
        Ok(d)
    }

    fn wait_ready(&mut self, ready_file: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read(ready_file) {
                if serde_json::from_slice::<Ready>(&text).is_ok() {
                    return Ok(());
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!(
                    "the device daemon exited ({status}) before serving: {}",
                    self.stderr_text()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "the device daemon did not start serving within 20 s: {}",
                    self.stderr_text()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stderr_text(&self) -> String {
        let t = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let t = t.trim();
        if t.is_empty() {
            "(it printed nothing)".into()
        } else {
            t.to_string()
        }
    }

    fn start_watchdog(&mut self, timeout: Duration) {
        let base = Instant::now();
        let probe_path = self.mountpoint.join(STATS_FILE);
        let st = self.state.clone();
        self.prober = std::thread::Builder::new()
            .name("emu-probe".into())
            .spawn(move || {
                while !st.stop.load(Ordering::Relaxed) {
                    let started = base.elapsed().as_millis() as u64 + 1;
                    st.probe_started_ms.store(started, Ordering::Relaxed);
                    let ok = File::open(&probe_path)
                        .and_then(|mut f| f.read(&mut [0u8; 1]))
                        .is_ok();
                    st.probe_started_ms.store(0, Ordering::Relaxed);
                    if !ok && st.aborted.lock().map(|a| a.is_some()).unwrap_or(true) {
                        return;
                    }
                    sleep_unless(&st.stop, Duration::from_secs(1));
                }
            })
            .ok();
        let st = self.state.clone();
        let (pid, conn) = (self.pid, self.conn);
        self.watchdog = std::thread::Builder::new()
            .name("emu-watchdog".into())
            .spawn(move || {
                while !st.stop.load(Ordering::Relaxed) {
                    let started = st.probe_started_ms.load(Ordering::Relaxed);
                    let now = base.elapsed().as_millis() as u64 + 1;
                    if started != 0 && now.saturating_sub(started) > timeout.as_millis() as u64 {
                        let why = format!(
                            "the device daemon (pid {pid}, {}) did not answer for {} s; its FUSE connection was aborted so I/O fails instead of hanging",
                            process_state(pid),
                            timeout.as_secs()
                        );
                        abort_connection(pid, conn);
                        *st.aborted.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                        return;
                    }
                    sleep_unless(&st.stop, Duration::from_millis(100));
                }
            })
            .ok();
    }

    /// Attaches a loop device (direct I/O, 4 KiB sectors) to the daemon's file for disk
    /// `name`, opened without following a symbolic link and checked to be the file
    /// that was attached.
    pub fn attach_disk(&self, name: &str, offset: u64, size: Option<u64>) -> Result<LoopDevice> {
        let path = self.disk_file(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .with_context(|| format!("cannot open the emulated disk {}", path.display()))?;
        let on_fuse = std::fs::metadata(&self.mountpoint)?.dev();
        let id = FileId::of(&file)?;
        if id.dev != on_fuse {
            bail!(
                "{} is not on the device daemon's file system (device {} instead of {}); refusing to attach it",
                path.display(),
                id.dev,
                on_fuse
            );
        }
        LoopDevice::attach_with(&file, &path, offset, size, true)
    }

    /// The file under the mount point that serves disk `name`.
    pub fn disk_file(&self, name: &str) -> PathBuf {
        self.mountpoint.join(name)
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    pub fn write_log(&self) -> Option<&Path> {
        self.write_log.as_deref()
    }

    fn control(&self, command: &str) -> Result<()> {
        let path = self.mountpoint.join(CONTROL_FILE);
        let mut f = OpenOptions::new()
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        f.write_all(command.as_bytes())
            .with_context(|| format!("the device daemon refused `{command}`"))
    }

    /// Turns model timing on (fresh models, zeroed counters) or off.
    pub fn set_timing(&self, on: bool) -> Result<()> {
        self.control(if on { "timing on" } else { "timing off" })
    }

    /// Makes the daemon stall once (a testing aid, docs/devices.md "Stalls"): the next
    /// disk request's image I/O waits `ms` first (`StallAt::Io`), or the next answer
    /// the completion thread sends does (`StallAt::Answer`).
    pub fn inject_stall(&self, stall: &InjectedStall) -> Result<()> {
        let at = match stall.at {
            StallAt::Io => "io",
            StallAt::Answer => "answer",
        };
        self.control(&format!("inject stall {at} {}", stall.ms))
    }

    /// Appends a marker record to the write log.
    pub fn mark(&self, label: &str) -> Result<()> {
        self.control(&format!("marker {label}"))
    }

    /// Applies the writes of the write log at `path` (a crash state's own writes) to
    /// the overlays.
    pub fn overlay_load(&self, path: &Path) -> Result<()> {
        self.control(&format!("overlay load {}", path.display()))
            .with_context(|| {
                format!(
                    "the device daemon could not load {}: {}",
                    path.display(),
                    self.stderr_tail()
                )
            })
    }

    /// Aborts the daemon's FUSE connection now (a recovery step hung on its disks):
    /// every outstanding and later request fails, so whatever waits on them returns.
    /// The daemon cannot serve again; release it and start another.
    pub fn abort(&self) {
        abort_connection(self.pid, self.conn);
        *self.state.aborted.lock().unwrap_or_else(|p| p.into_inner()) =
            Some("the device daemon's connection was aborted: a recovery step hung".into());
    }

    /// Drops every overlay write: the disks read as their bases again.
    pub fn overlay_clear(&self) -> Result<()> {
        self.control("overlay clear")
    }

    /// Disk `name` reads as zeros beneath its overlay until the next clear: a RAM disk
    /// that came back empty after the power cut.
    pub fn overlay_lose(&self, name: &str) -> Result<()> {
        self.control(&format!("overlay lose {name}"))
    }

    /// The last line the daemon printed, for errors.
    fn stderr_tail(&self) -> String {
        self.stderr_text()
            .lines()
            .last()
            .unwrap_or_default()
            .to_string()
    }

    /// Counters since timing was turned on.
    pub fn stats(&self) -> Result<DaemonStats> {
        let path = self.mountpoint.join(STATS_FILE);
        let mut text = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut text))
            .with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_slice(&text).context("the device daemon's statistics are not JSON")
    }

    /// The daemon's user and system CPU seconds so far.
    pub fn cpu_seconds(&self) -> Option<(f64, f64)> {
        cpu_seconds(self.pid)
    }

    /// Why the daemon can no longer be trusted, if it cannot: aborted by the watchdog,
    /// or gone.
    pub fn failure(&self) -> Option<String> {
        if let Some(why) = self.state.aborted.lock().ok().and_then(|a| a.clone()) {
            return Some(why);
        }
        match process_state(self.pid).as_str() {
            "running" | "sleeping" | "disk sleep" | "idle" => None,
            s => Some(format!(
                "the device daemon (pid {}) is {s}; its disks failed under the workload",
                self.pid
            )),
        }
    }

    /// Stops the daemon (SIGTERM, then SIGKILL after 5 s) and unmounts its file
    /// system. Call after the loop devices on its disks are detached.
    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        let pid = nix::unistd::Pid::from_raw(self.pid as i32);
        if let Some(child) = self.child.as_mut() {
            if child.try_wait().ok().flatten().is_none() {
                use nix::sys::signal::{kill, Signal};
                let _ = kill(pid, Signal::SIGCONT);
                let _ = kill(pid, Signal::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(5);
                while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                if child.try_wait().ok().flatten().is_none() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        self.state.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        if let Some(p) = self.prober.take() {
            // A probe stuck in the kernel returns once the connection is gone, which
            // it is now that the daemon has exited; do not wait on it regardless.
            let deadline = Instant::now() + Duration::from_secs(2);
            while !p.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if p.is_finished() {
                let _ = p.join();
            }
        }
        unmount_fuse(&self.mountpoint)?;
        let _ = release_fusectl();
        let _ = std::fs::remove_dir(&self.mountpoint);
        let _ = std::fs::remove_file(&self.pid_file);
        self.cpu_latency = None;
        self.released = true;
        Ok(())
    }
}

impl Drop for DeviceDaemon {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
    }
}

fn sleep_unless(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
}

/// The FUSE connection number of the file system mounted on `mountpoint`: the minor
/// number of its device (FUSE mounts have major 0).
fn connection_id(mountpoint: &Path) -> Result<u64> {
    let meta = std::fs::metadata(mountpoint)
        .with_context(|| format!("cannot stat the daemon's mount {}", mountpoint.display()))?;
    Ok(libc::minor(meta.dev()) as u64)
}

/// Present while the FUSE control file system is mounted because a jbench mounted it
/// (any jbench process: the last daemon to stop, or `jbench cleanup`, unmounts it).
/// /run is cleared at boot, as mounts are.
pub const FUSECTL_MARK: &str = "/run/jbench/fusectl-mounted";
/// Serialises this process's mounting and unmounting of it.
static FUSECTL_LOCK: Mutex<()> = Mutex::new(());

fn fusectl_mounted() -> bool {
    mounts::mounts().iter().any(|m| m.fstype == "fusectl")
}

/// Mounts the FUSE control file system if it is absent (systemd mounts it at boot on
/// most machines) and marks it as jbench's, for [`release_fusectl`].
pub fn ensure_fusectl() -> Result<()> {
    let _serial = FUSECTL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if fusectl_mounted() {
        return Ok(());
    }
    match cmd::run("mount", &["-t", "fusectl", "fusectl", FUSECTL]) {
        Ok(_) => {
            let mark = Path::new(FUSECTL_MARK);
            if let Some(dir) = mark.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(mark, FUSECTL);
            Ok(())
        }
        // Another process mounted it in the meantime: that is all that was needed.
        Err(_) if fusectl_mounted() => Ok(()),
        Err(e) => {
            Err(e).context("cannot mount the FUSE control file system, which the watchdog needs")
        }
    }
}

/// Unmounts the FUSE control file system if a jbench mounted it and no device daemon
/// (of any jbench) serves any more; one found mounted (by systemd) is left alone. A
/// daemon starting meanwhile would find it gone; its watchdog then falls back to
/// SIGKILL, which also ends the connection.
pub fn release_fusectl() -> Result<bool> {
    let _serial = FUSECTL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let mark = Path::new(FUSECTL_MARK);
    if !mark.exists() || daemons_serving() {
        return Ok(false);
    }
    if fusectl_mounted() {
        nix::mount::umount(FUSECTL).with_context(|| format!("cannot unmount {FUSECTL}"))?;
    }
    let _ = std::fs::remove_file(mark);
    Ok(true)
}

/// Whether any jbench device daemon's file system is mounted.
pub fn daemons_serving() -> bool {
    mounts::mounts()
        .iter()
        .any(|m| m.source == crate::emu::daemon::SUBTYPE)
}

/// Aborts the daemon's FUSE connection; if that is impossible, kills the daemon,
/// which ends the connection too.
fn abort_connection(pid: u32, conn: Option<u64>) {
    let aborted = conn
        .map(|c| std::fs::write(format!("{FUSECTL}/{c}/abort"), "1").is_ok())
        .unwrap_or(false);
    if !aborted {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Unmounts the daemon's file system if it is still mounted (a daemon that was killed
/// leaves it), lazily when it is busy.
pub fn unmount_fuse(mountpoint: &Path) -> Result<()> {
    let mounted = || mounts::mounts().iter().any(|m| m.target == mountpoint);
    if !mounted() {
        return Ok(());
    }
    if nix::mount::umount(mountpoint).is_ok() || !mounted() {
        return Ok(());
    }
    nix::mount::umount2(mountpoint, nix::mount::MntFlags::MNT_DETACH).with_context(|| {
        format!(
            "cannot unmount the device daemon's {}",
            mountpoint.display()
        )
    })?;
    Ok(())
}

/// The state letter of /proc/PID/stat as words; `gone` when there is no such process.
pub fn process_state(pid: u32) -> String {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return "gone".into();
    };
    let state = text
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or("?");
    match state {
        "R" => "running",
        "S" => "sleeping",
        "D" => "disk sleep",
        "I" => "idle",
        "T" | "t" => "stopped",
        "Z" => "dead (zombie)",
        "X" => "dead",
        _ => "in an unknown state",
    }
    .into()
}

/// User and system CPU seconds of a process (all its threads), from /proc/PID/stat.
pub fn cpu_seconds(pid: u32) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3 of stat(5), utime 14, stime 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    Some((utime / tick, stime / tick))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_injected_stall_names_its_trial_place_and_length() {
        assert_eq!(
            InjectedStall::parse("3:io:2500").unwrap(),
            InjectedStall {
                trial: 3,
                at: StallAt::Io,
                ms: 2500
            }
        );
        assert_eq!(
            InjectedStall::parse(" 0:answer:1200\n").unwrap().at,
            StallAt::Answer
        );
        for bad in ["", "io:2500", "x:io:1", "0:disk:1", "0:io:1s", "0:io:1:2"] {
            let e = InjectedStall::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains(INJECT_STALL_VAR) && e.contains("TRIAL:io:MS"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_stall_is_described_per_disk_with_count_and_worst_delay() {
        let disk = |name: &str| DiskStats {
            name: name.into(),
            model: "hdd-7200".into(),
            writes: 100,
            ..DiskStats::default()
        };
        let mut rec = EmulationRecord {
            disks: vec![disk("fs"), disk("journal")],
            ..EmulationRecord::default()
        };
        // Late answers below the bound are the `late` warning's, not a stall.
        rec.disks[0].late = 40;
        rec.disks[0].worst_late_ms = 900.0;
        assert_eq!(rec.stall(), None);
        rec.disks[1].overdue = 2;
        rec.disks[1].late = 2;
        rec.disks[1].worst_late_ms = 3_021.0;
        rec.disks[1].worst_late_at_seconds = 0.412;
        rec.disks[1].slow_io = 1;
        rec.disks[1].worst_io_ms = 2_998.0;
        assert_eq!(
            rec.stall().unwrap(),
            "the device daemon stalled, so the times are the host's, not the model's: emulated journal disk (hdd-7200): 2 answer(s) more than 1 s past the model's deadline (worst 3.02 s late, due 0.41 s into the workload), 1 image I/O call(s) that blocked the daemon for more than 1 s (longest 3.00 s)"
        );
        rec.disks[0].slow_io = 1;
        rec.disks[0].worst_io_ms = 1_500.0;
        let both = rec.stall().unwrap();
        assert!(
            both.contains("emulated fs disk (hdd-7200): 1 image I/O call(s) that blocked the daemon for more than 1 s (longest 1.50 s); emulated journal disk"),
            "{both}"
        );
    }

    #[test]
    fn cpus_split_into_one_for_the_daemon_and_the_rest_for_the_workload() {
        assert_eq!(split_cpus(&[0, 1]), Some((vec![1], vec![0])));
        assert_eq!(split_cpus(&[0, 2, 5]), Some((vec![5], vec![0, 2])));
        assert_eq!(split_cpus(&[3]), None);
        assert_eq!(split_cpus(&[]), None);
    }

    #[test]
    fn process_state_and_cpu_time_read_proc() {
        let me = std::process::id();
        assert!(["running", "sleeping"].contains(&process_state(me).as_str()));
        let (u, s) = cpu_seconds(me).unwrap();
        assert!(u >= 0.0 && s >= 0.0);
        assert_eq!(process_state(u32::MAX - 1), "gone");
        assert!(cpu_seconds(u32::MAX - 1).is_none());
    }
}
