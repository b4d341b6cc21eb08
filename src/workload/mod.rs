//! Workload engines: native re-implementations of the classic benchmarks.
//!
//! An engine runs its phases in a directory it is given and reports, per phase, the
//! elapsed time from a monotonic clock, the operation count and the bytes moved. It
//! knows nothing of devices or file systems: the rig prepares the directory.
//!
//! One folder per engine (its spec, timed loop, system calls, command line and
//! reports apart); `sys.rs` holds the system-call loops and the error type they share,
//! `start_line.rs` the start of a threaded phase (its clock before its workers run).

pub mod command;
pub mod declare;
pub mod fdtree;
pub mod fio;
pub mod fsync;
pub mod iozone;
pub mod kind;
#[cfg(test)]
mod made_up;
pub mod neighbour;
pub mod postmark;
pub mod start_line;
pub mod sys;
#[cfg(test)]
pub(crate) mod test_support;
pub mod work;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Per-operation latency of a phase, in microseconds, from a histogram of every
/// operation (percentiles are never averaged across trials; keep the histograms'
/// figures per trial).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    /// The 99.9th percentile, where the engine or application gives one (records
    /// from before it, and summaries of fewer than 1000 operations, may not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    pub max_us: f64,
}

/// fio's latencies of one job and direction, named as fio names them. `None` where
/// fio's output has no histogram for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FioLatency {
    /// Completion latency (`clat_ns`): from submission to the I/O's completion. With
    /// a synchronous engine (`psync`, the default) this is the write or read call
    /// itself, without any fsync or fdatasync that follows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat: Option<Latency>,
    /// The fsync/fdatasync/sync_file_range calls of a job that makes them
    /// (`fsync=`, `fdatasync=`; fio's job-wide `sync.lat_ns`), kept with the job's
    /// write direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<Latency>,
    /// Total latency (`lat_ns`): submission plus completion; like `clat`, without the
    /// sync calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<Latency>,
}

/// Suffix of the pseudo-phase holding a phase's time up to `syncfs`
/// ([`PhaseResult::durable_seconds`]) in the statistics and the experiment file's
/// `main_phase`.
pub const DURABLE_SUFFIX: &str = "+syncfs";

/// One measured phase of a workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    /// Stable identifier, e.g. `dir_create`.
    pub name: String,
    /// Elapsed wall-clock seconds (monotonic clock).
    pub seconds: f64,
    /// Operations completed (directories made, files created, ...).
    pub ops: u64,
    /// Payload bytes written or read.
    pub bytes: u64,
    /// What one operation is, for rate labels: "dir creates", "file creates", ...
    pub op_unit: String,
    /// With `durable = true`: seconds until the phase's work was on the devices
    /// (`syncfs` inside the clock). `seconds` stays the plain figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable_seconds: Option<f64>,
    /// Per-operation latency, for engines that time each operation. For fio, its
    /// completion latency (`clat`), as in `fio_latency.clat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// fio's completion, sync and total latency apart (fio jobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fio_latency: Option<FioLatency>,
    /// Engine-specific counts (PostMark's `created`, `read`, `appended`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
}

impl PhaseResult {
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// KiB/s, the unit fdtree reports data rates in.
    pub fn kib_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1024.0 / self.seconds
        } else {
            0.0
        }
    }
}

/// Lets a long phase stop early when the user presses Ctrl-C, so the rig can tear
/// down instead of the process dying with devices attached.
#[derive(Debug, Default, Clone)]
pub struct RunControl {
    stop: Arc<AtomicBool>,
    durable: bool,
    /// The device daemon's control file when the trial keeps a write log: engines
    /// [`mark`](Self::mark) the log right after an fsync returns.
    marker: Option<Arc<std::fs::File>>,
    /// Told where each measured phase begins and ends (the trial's monitor).
    phases: Option<PhaseHook>,
    /// Told the same, for the run's progress output (the phase a long trial is in).
    progress: Option<PhaseHook>,
    /// Where the trial keeps what a workload prints (`<results>/outputs/trial-N`);
    /// `None` outside a run (`jbench workload`): engines then keep nothing.
    output_dir: Option<PathBuf>,
    /// The configuration's `env`: a command workload's application settings, over the
    /// workload's own `env` (engines of jbench's own ignore it).
    env: std::collections::BTreeMap<String, String>,
    /// Sees every marker as well (tests: an engine's markers without a device daemon).
    mark_hook: Option<MarkHook>,
    /// Tests: how long a threaded phase's coordinator sleeps right after releasing its
    /// workers ([`start_line::StartLine::start`]), as a descheduled one would.
    #[cfg(test)]
    coordinator_lag: Option<std::time::Duration>,
}

/// What [`RunControl::mark`] also calls, with the label.
#[derive(Clone)]
pub struct MarkHook(Arc<dyn Fn(&str) + Send + Sync>);

impl MarkHook {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl std::fmt::Debug for MarkHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MarkHook")
    }
}

/// A phase boundary, as engines report it to [`RunControl::phase_begin`] and
/// [`RunControl::phase_end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseEvent<'a> {
    /// The phase's clock starts right after this.
    Begin(&'a str),
    /// The phase's clock (and its durable clock, with `durable`) stopped right before.
    End(&'a str),
}

/// What [`RunControl`] calls at phase boundaries.
#[derive(Clone)]
pub struct PhaseHook(Arc<dyn Fn(PhaseEvent<'_>) + Send + Sync>);

impl PhaseHook {
    pub fn new(f: impl Fn(PhaseEvent<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub fn call(&self, ev: PhaseEvent<'_>) {
        (self.0)(ev)
    }
}

impl std::fmt::Debug for PhaseHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PhaseHook")
    }
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Shares a flag that signal handlers set (see `interrupt`).
    pub fn from_flag(stop: Arc<AtomicBool>) -> Self {
        Self {
            stop,
            ..Self::default()
        }
    }

    /// Reports phase boundaries to `hook` too, for the progress output; kept apart from
    /// the monitor's hook, which the executor sets per trial.
    pub fn with_progress_hook(mut self, hook: Option<PhaseHook>) -> Self {
        self.progress = hook;
        self
    }

    /// Reports phase boundaries to `hook` (the trial's monitor).
    pub fn with_phase_hook(mut self, hook: Option<PhaseHook>) -> Self {
        self.phases = hook;
        self
    }

    /// Engines call this right before a measured phase's clock starts, outside the
    /// timed region. Without a hook it costs a branch.
    #[inline]
    pub fn phase_begin(&self, name: &str) {
        // The crash lab needs to know where a phase starts in the write log (files
        // fsync'ed in one phase may be removed in the next).
        if self.marks() {
            self.mark(&format!("phase {name}"));
        }
        if let Some(h) = &self.phases {
            h.call(PhaseEvent::Begin(name));
        }
        if let Some(h) = &self.progress {
            h.call(PhaseEvent::Begin(name));
        }
    }

    /// Engines call this right after a measured phase's clock stops (after
    /// [`Self::finish_phase`], so a durable phase's flush is inside the window).
    #[inline]
    pub fn phase_end(&self, name: &str) {
        // Where the phase's clock stopped: the crash lab calls what follows the last
        // phase `teardown` (the final unmount is there).
        if self.marks() {
            self.mark(&format!("end {name}"));
        }
        if let Some(h) = &self.phases {
            h.call(PhaseEvent::End(name));
        }
        if let Some(h) = &self.progress {
            h.call(PhaseEvent::End(name));
        }
    }

    /// Lets engines insert markers into the trial's write log through `control` (the
    /// device daemon's control file).
    pub fn with_marker(mut self, control: Option<Arc<std::fs::File>>) -> Self {
        self.marker = control;
        self
    }

    /// Makes [`Self::marks`] true and hands every label to `hook` too: the engines'
    /// tests see what a write log would hold.
    pub fn with_mark_hook(mut self, hook: Option<MarkHook>) -> Self {
        self.mark_hook = hook;
        self
    }

    /// Whether [`Self::mark`] records anything; engines skip building labels otherwise.
    pub fn marks(&self) -> bool {
        self.marker.is_some() || self.mark_hook.is_some()
    }

    /// Appends a marker to the write log: call right after an fsync returns, so every
    /// record before the marker was acknowledged when the workload saw success. A
    /// marker that cannot be written means the daemon failed, which fails the trial
    /// anyway; the engine is not stopped for it.
    pub fn mark(&self, label: &str) {
        if let Some(f) = &self.marker {
            use std::io::Write;
            let _ = (&**f).write_all(format!("marker {label}").as_bytes());
        }
        if let Some(h) = &self.mark_hook {
            (h.0)(label);
        }
    }

    /// Where this trial's workload output goes (made by the engine when it has any).
    pub fn with_output_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.output_dir = dir;
        self
    }

    pub fn output_dir(&self) -> Option<&Path> {
        self.output_dir.as_deref()
    }

    /// Hands the configuration's `env` to the workload (see [`Self::env`]).
    pub fn with_env(mut self, env: std::collections::BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }

    /// The configuration's `env`.
    pub fn env(&self) -> &std::collections::BTreeMap<String, String> {
        &self.env
    }

    /// Asks engines to also time each phase up to `syncfs` (see [`Self::finish_phase`]).
    pub fn with_durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    pub fn durable(&self) -> bool {
        self.durable
    }

    /// Ends a phase that started at `started` with its plain time already taken:
    /// with `durable`, flushes the file system holding `dir` (`syncfs`) and returns
    /// the time including the flush. Engines call this right after stopping their
    /// plain clock, so the two figures differ by the flush alone.
    pub fn finish_phase(&self, dir: &Path, started: Instant) -> anyhow::Result<Option<f64>> {
        if !self.durable {
            return Ok(None);
        }
        let d = std::fs::File::open(dir)
            .map_err(|e| anyhow::anyhow!("cannot open {} for syncfs: {e}", dir.display()))?;
        nix::unistd::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d))
            .map_err(|e| anyhow::anyhow!("syncfs {}: {e}", dir.display()))?;
        Ok(Some(started.elapsed().as_secs_f64()))
    }

    /// Makes the coordinator of every threaded phase sleep `lag` right after it
    /// releases the workers: a test that the clock started before they could run.
    #[cfg(test)]
    pub fn with_coordinator_lag(mut self, lag: std::time::Duration) -> Self {
        self.coordinator_lag = Some(lag);
        self
    }

    /// Called by [`start_line::StartLine::start`] right after the release; nothing
    /// outside tests.
    #[inline]
    pub(crate) fn coordinator_lag(&self) {
        #[cfg(test)]
        if let Some(lag) = self.coordinator_lag {
            std::thread::sleep(lag);
        }
    }

    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    #[inline]
    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The label of a `durable-range` marker: bytes `[offset, offset + len)` of `path` were
/// made durable by a call the workload saw complete (see docs/write-log.md).
pub fn durable_range_label(path: &Path, offset: u64, len: u64) -> String {
    format!("durable-range {} {offset} {len}", path.display())
}

/// `(path, offset, len)` of a `durable-range` label. The path may hold spaces: the
/// offset and length are the last two tokens.
pub fn parse_durable_range(label: &str) -> Option<(&str, u64, u64)> {
    let rest = label.strip_prefix("durable-range ")?;
    let (rest, len) = rest.rsplit_once(' ')?;
    let (path, offset) = rest.rsplit_once(' ')?;
    Some((path, offset.parse().ok()?, len.parse().ok()?))
}

/// Raised by an engine that stopped because [`RunControl::request_stop`] was called.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Refuses a `--dir` that is missing or not a directory: engines never make the
/// directory they are given, so a typo cannot scatter files over a new tree.
pub fn require_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!("{} is not a directory; create it first", dir.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("{} is not a directory; create it first", dir.display())
        }
        Err(e) => anyhow::bail!("cannot use {}: {e}", dir.display()),
    }
}

/// Says, in front of an engine's error, what became of what the run made in `dir`:
/// removed (the directory is as the run found it) or, when removal failed too, what
/// was left and why. `Interrupted` and `FsOpError` stay reachable by downcasting.
pub fn after_cleanup(
    err: anyhow::Error,
    engine: &str,
    dir: &Path,
    cleanup: anyhow::Result<()>,
) -> anyhow::Error {
    let note = match cleanup {
        Ok(()) => format!(
            "{engine} failed; everything it made in {} was removed (the directory is as it was)",
            dir.display()
        ),
        Err(c) => format!(
            "{engine} failed and could not remove everything it made in {}: {c:#}; \
             remove what is left by hand",
            dir.display()
        ),
    };
    err.context(note)
}

/// `rm -r` of a tree this run made itself (never one it found): symbolic links
/// inside are removed, not followed.
pub fn remove_own_tree(root: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(root) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(anyhow::anyhow!("{} left: {e}", root.display())),
    }
}

/// A parameter error of a `[[workload]]` table: the key to blame and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    pub key: String,
    pub message: String,
}

impl ParamError {
    pub fn new(key: &str, message: impl Into<String>) -> Self {
        Self {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// Keys every `[[workload]]` table may hold whatever its kind; the spec handles them.
pub const COMMON_KEYS: [&str; 5] = ["kind", "name", "durable", "main_phase", "neighbour_rate"];

/// Reads an unsigned integer key of a workload table, or its default.
pub fn table_u64(t: &toml::Table, key: &str, default: u64) -> Result<u64, ParamError> {
    match t.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(i)) if *i >= 0 => Ok(*i as u64),
        Some(v) => Err(ParamError::new(
            key,
            format!("expected a whole number >= 0, found {v}"),
        )),
    }
}

/// Reads a size key: a whole number of bytes or a string such as "4M".
pub fn table_size(t: &toml::Table, key: &str, default: u64) -> Result<u64, ParamError> {
    match t.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(i)) if *i >= 0 => Ok(*i as u64),
        Some(toml::Value::String(s)) => {
            crate::units::parse_size(s).map_err(|e| ParamError::new(key, e))
        }
        Some(v) => Err(ParamError::new(
            key,
            format!("expected a size in bytes or a string like \"4M\", found {v}"),
        )),
    }
}

/// Reads a boolean key.
pub fn table_bool(t: &toml::Table, key: &str, default: bool) -> Result<bool, ParamError> {
    match t.get(key) {
        None => Ok(default),
        Some(toml::Value::Boolean(b)) => Ok(*b),
        Some(v) => Err(ParamError::new(
            key,
            format!("expected true or false, found {v}"),
        )),
    }
}

/// Refuses keys a workload kind does not know.
pub fn reject_unknown(t: &toml::Table, known: &[&str]) -> Result<(), ParamError> {
    for k in t.keys() {
        if !known.contains(&k.as_str()) && !COMMON_KEYS.contains(&k.as_str()) {
            let mut all: Vec<&str> = known.to_vec();
            all.extend(COMMON_KEYS);
            return Err(ParamError::new(
                k,
                format!("unknown key `{k}` (known: {})", all.join(", ")),
            ));
        }
    }
    Ok(())
}

pub use kind::from_table;

/// A workload engine. Later workloads (PostMark, iozone-style, fsync-heavy) implement
/// this trait and slot into the runner unchanged.
pub trait Workload: Send + Sync {
    /// Engine name as used in experiment files: `fdtree`.
    fn kind(&self) -> &'static str;
    /// Parameters as recorded in results (`{"dirs":3,"files":4,...}`). They use the
    /// experiment file's key names, so the resolved spec can write them back.
    fn params(&self) -> serde_json::Value;
    /// Name used when the experiment gives none.
    fn default_name(&self) -> String {
        self.kind().to_string()
    }
    /// Phase identifiers in the order they run (engines that read a job file, like
    /// fio, know them only from it).
    fn phase_names(&self) -> Vec<String>;
    /// Payload bytes the workload will hold on the file system at its peak.
    fn peak_data_bytes(&self) -> u64;
    /// Inodes (files + directories) the workload will hold at its peak.
    fn peak_inodes(&self) -> u64;
    /// The device-level work one run does, for `jbench plan`'s time estimate. The
    /// default knows only the peaks and says it guessed.
    fn work(&self) -> work::Work {
        work::Work::from_peaks(self.peak_data_bytes(), self.peak_inodes())
    }
    /// Runs every phase in `dir`, which must exist and be empty of the workload's
    /// names. Returns one result per phase, in order.
    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>>;
}

/// Helpers for the engines' tests: a small file system to fill, and a listing to
/// tell whether a failed run left its directory as it found it.
#[cfg(test)]
pub(crate) mod testutil {
    use std::collections::BTreeMap;
    use std::os::unix::fs::MetadataExt;
    use std::path::{Path, PathBuf};

    /// A size-limited tmpfs mounted for one test and unmounted when dropped, panics
    /// included, so a failing test leaks no mount.
    pub struct SmallFs {
        _base: tempfile::TempDir,
        mount: PathBuf,
    }

    impl SmallFs {
        /// `None`, saying why, when not root; under CI (`CI` set) that fails instead,
        /// so the test cannot pass by not running.
        pub fn new(test: &str, size: &str) -> Option<Self> {
            let root = crate::test_require::is_root();
            if !crate::test_require::require(test, root, "needs root to mount a small tmpfs") {
                return None;
            }
            std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
            let base = tempfile::Builder::new()
                .prefix("smallfs-")
                .tempdir_in("/var/tmp/jbench-tests")
                .unwrap();
            let mount = base.path().join("mnt");
            std::fs::create_dir(&mount).unwrap();
            let status = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755")])
                .arg("jbench-test-smallfs")
                .arg(&mount)
                .status()
                .unwrap();
            assert!(status.success(), "mount -t tmpfs at {}", mount.display());
            Some(SmallFs { _base: base, mount })
        }

        pub fn path(&self) -> &Path {
            &self.mount
        }
    }

    impl Drop for SmallFs {
        fn drop(&mut self) {
            let ok = std::process::Command::new("umount")
                .arg(&self.mount)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                // Busy (a descriptor still open after a panic): detach it anyway.
                let _ = std::process::Command::new("umount")
                    .arg("-l")
                    .arg(&self.mount)
                    .status();
            }
        }
    }

    /// Every entry below `dir`, relative, with its kind, size and (for small files)
    /// contents: equal listings mean nothing was made, changed or removed.
    pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
        fn visit(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                let what = if meta.file_type().is_symlink() {
                    format!("link -> {}", std::fs::read_link(&path).unwrap().display())
                } else if meta.is_dir() {
                    visit(base, &path, out);
                    "dir".to_string()
                } else {
                    let data = std::fs::read(&path).unwrap();
                    format!(
                        "file {} bytes, {:?}",
                        meta.size(),
                        &data[..data.len().min(64)]
                    )
                };
                out.insert(rel, what);
            }
        }
        let mut out = BTreeMap::new();
        visit(dir, dir, &mut out);
        out
    }

    /// Asks the run to stop as soon as phase `at` begins, as Ctrl-C would.
    pub fn stop_at(at: &'static str) -> super::RunControl {
        let ctl = super::RunControl::new();
        let inner = ctl.clone();
        ctl.with_phase_hook(Some(super::PhaseHook::new(move |ev| {
            if ev == super::PhaseEvent::Begin(at) {
                inner.request_stop();
            }
        })))
    }
}
