//! A metadata + fsync workload in the spirit of fs_mark `-S 1`: every thread creates
//! `files` files of `size` bytes spread over `dirs` subdirectories of its own, and
//! each file is written, `fsync`ed and closed before the next one is opened.
//!
//! fdtree, PostMark and plain iozone never fsync, so on a machine with far more RAM
//! than data they mostly time the page cache. Here every file waits for a journal
//! commit, which is exactly where the journal's placement shows.
//!
//! Layout in the run directory: `jbench-fsync.<pid>/t<thread>/d<dir>/f<file>`; file
//! `i` of a thread goes to directory `i % dirs` (fs_mark's round-robin `-D`). The pid
//! keeps two processes on one file system apart.
//!
//! Phases:
//! - `create_fsync` (timed): per file `openat(O_WRONLY|O_CREAT|O_EXCL, 0644)`, `size`
//!   bytes in `write_size` writes, `fsync`, `close`, and with `fsync_dir` an `fsync`
//!   of the file's directory. One latency sample per file covers all of that.
//! - `remove` (timed): every thread unlinks its files (one latency sample per unlink,
//!   no fsync: removal is what a cleaner does, not what a mail server acknowledges),
//!   then removes its directories; the run directory is left as it was found.
//!
//! Directories are made, and the file system is flushed with `syncfs`, before each
//! phase's clock starts, so the first fsync does not pay for set-up or for the
//! previous phase's leftovers.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use nix::errno::Errno;

use super::sys::{self, FsOpError, SysError};
use super::{
    reject_unknown, table_bool, table_size, table_u64, Interrupted, Latency, ParamError,
    PhaseResult, RunControl, Workload,
};
use crate::units::{format_size, parse_size};

/// Default bytes per write call: fs_mark's default buffer is 16 KiB.
const DEFAULT_WRITE_SIZE: u64 = 16 << 10;

/// Largest `write_size`: one buffer of this size is held in memory, and Linux
/// writes at most 0x7ffff000 bytes per call anyway.
const MAX_WRITE_SIZE: u64 = 1 << 30;

/// Most files of a run (files x threads): ext4 and XFS inode counts are 32-bit.
const MAX_FILES: u64 = 1 << 32;

/// More threads than this is a typo, not an experiment.
const MAX_THREADS: u64 = 1024;

/// Latency samples are nanoseconds; an operation over an hour is saturated to it.
const HIST_MAX_NS: u64 = 3_600 * 1_000_000_000;

/// Three significant digits: percentiles within 0.1 %.
const HIST_SIGFIG: u8 = 3;

/// Descriptors kept for the process's own use beyond the tree's directories.
const FD_MARGIN: u64 = 64;

/// Spec keys this kind accepts besides the common ones.
const KEYS: [&str; 6] = [
    "files",
    "size",
    "dirs",
    "threads",
    "fsync_dir",
    "write_size",
];

/// One fsync workload: what `[[workload]] kind = "fsync"` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FsyncSpec {
    /// Files created per thread.
    pub files: u64,
    /// Bytes written to every file.
    pub size: u64,
    /// Subdirectories per thread the files are spread over.
    pub dirs: u64,
    /// Threads, each in its own subtree, started together.
    pub threads: u64,
    /// Also fsync the file's directory after each file, like a mail server.
    pub fsync_dir: bool,
    /// Bytes per write call.
    pub write_size: u64,
}

/// The phases, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    CreateFsync,
    Remove,
}

impl Phase {
    pub const ALL: [Phase; 2] = [Phase::CreateFsync, Phase::Remove];

    pub fn name(self) -> &'static str {
        match self {
            Phase::CreateFsync => "create_fsync",
            Phase::Remove => "remove",
        }
    }

    pub fn op_unit(self) -> &'static str {
        match self {
            Phase::CreateFsync => "file creates",
            Phase::Remove => "file removals",
        }
    }
}

impl Default for FsyncSpec {
    fn default() -> Self {
        FsyncSpec::new(1000, 4096)
    }
}

impl FsyncSpec {
    /// `files` files of `size` bytes, one thread, one directory, default write size.
    pub fn new(files: u64, size: u64) -> Self {
        FsyncSpec {
            files,
            size,
            dirs: 1,
            threads: 1,
            fsync_dir: false,
            write_size: default_write_size(size),
        }
    }

    pub fn total_files(&self) -> u64 {
        self.files.saturating_mul(self.threads)
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_files().saturating_mul(self.size)
    }

    /// Root, one directory per thread, its subdirectories.
    pub fn dir_count(&self) -> u64 {
        1 + self.threads.saturating_mul(1 + self.dirs)
    }

    /// Refuses specs that cannot run or could not be written back to TOML (which
    /// holds integers up to i64::MAX only); returns the key to blame.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.files == 0 {
            return Err(ParamError::new("files", "must be at least 1"));
        }
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(ParamError::new(
                "threads",
                format!("must be between 1 and {MAX_THREADS}"),
            ));
        }
        // An empty subdirectory would only add set-up work and inodes.
        if !(1..=self.files).contains(&self.dirs) {
            return Err(ParamError::new(
                "dirs",
                format!("must be between 1 and files ({})", self.files),
            ));
        }
        if !(1..=MAX_WRITE_SIZE).contains(&self.write_size) {
            return Err(ParamError::new(
                "write_size",
                format!("must be between 1 and {}", format_size(MAX_WRITE_SIZE)),
            ));
        }
        let limit = i64::MAX as u64;
        let bytes = self
            .files
            .checked_mul(self.threads)
            .and_then(|f| f.checked_mul(self.size));
        if bytes.is_none_or(|b| b > limit) || self.size > limit {
            return Err(ParamError::new(
                "size",
                format!("files x threads x size must stay below 2^63 bytes ({limit})"),
            ));
        }
        // No file system the rig makes holds more inodes than this.
        if self.files.saturating_mul(self.threads) > MAX_FILES {
            return Err(ParamError::new(
                "files",
                format!(
                    "files x threads is {}; at most {MAX_FILES} files in all",
                    self.files.saturating_mul(self.threads)
                ),
            ));
        }
        Ok(())
    }

    /// Bytes of the write buffer: never more than one file needs.
    fn buffer_len(&self) -> usize {
        self.write_size.min(self.size) as usize
    }

    /// Runs both phases; `after_create` sees the run directory between them (the
    /// tests check the files there).
    fn run_with(
        &self,
        dir: &Path,
        ctl: &RunControl,
        after_create: &mut dyn FnMut(&Path),
    ) -> anyhow::Result<Vec<PhaseResult>> {
        if ctl.stop_requested() {
            return Err(Interrupted.into());
        }
        self.validate()
            .map_err(|e| anyhow::anyhow!("fsync {}: {}", e.key, e.message))?;
        let buffer = fill_buffer(self.buffer_len());
        ensure_fd_limit(self.threads * (self.dirs + 1) + 1 + FD_MARGIN)?;
        // A root that cannot be made (one that exists included) is not ours to remove.
        let root = dir.join(root_name());
        let root_fd = make_dir(&root).context("fsync set-up")?;
        let run = Tree::make(root.clone(), root_fd, self)
            .context("fsync set-up")
            .and_then(|tree| {
                let create = self
                    .timed_phase(Phase::CreateFsync, &tree, dir, ctl, &|t, tally, halt| {
                        self.create_files(t, &buffer, tally, halt)
                    })
                    .context("fsync phase create_fsync")?;
                after_create(&tree.root);
                let remove = self
                    .timed_phase(Phase::Remove, &tree, dir, ctl, &|t, tally, halt| {
                        self.remove_files(t, tally, halt)
                    })
                    .context("fsync phase remove")?;
                Ok(vec![create, remove])
            });
        run.map_err(|e| super::after_cleanup(e, "fsync", dir, super::remove_own_tree(&root)))
    }

    /// Flushes, starts every thread at once on `work`, times until the last one is
    /// done (and, for `remove`, the root is gone), and merges their tallies.
    fn timed_phase(
        &self,
        phase: Phase,
        tree: &Tree,
        dir: &Path,
        ctl: &RunControl,
        work: &(dyn Fn(&ThreadDirs, &mut Tally, &Halt) -> anyhow::Result<()> + Sync),
    ) -> anyhow::Result<PhaseResult> {
        tree.syncfs()?;
        // Histograms are allocated here so that no thread allocates once the clock runs.
        let tallies = (0..self.threads)
            .map(|_| Tally::new())
            .collect::<anyhow::Result<Vec<_>>>()?;
        let abort = AtomicBool::new(false);
        let halt = Halt { ctl, abort: &abort };
        let start_line = Barrier::new(self.threads as usize + 1);
        let (started, outcomes) = std::thread::scope(|s| {
            let handles: Vec<_> = tree
                .threads
                .iter()
                .zip(tallies)
                .map(|(t, mut tally)| {
                    let (halt, start_line) = (&halt, &start_line);
                    s.spawn(move || {
                        start_line.wait();
                        let outcome = work(t, &mut tally, halt);
                        if outcome.is_err() {
                            // Siblings stop too, so an error does not wait for them.
                            halt.abort.store(true, Ordering::Relaxed);
                        }
                        outcome.map(|()| tally)
                    })
                })
                .collect();
            // Every worker waits at the line: nothing runs while the monitor samples.
            ctl.phase_begin(phase.name());
            start_line.wait();
            let started = Instant::now();
            let outcomes: Vec<_> = handles
                .into_iter()
                .map(|h| h.join().expect("fsync worker panicked"))
                .collect();
            (started, outcomes)
        });
        let tallies = first_error(outcomes)?;
        if phase == Phase::Remove {
            tree.remove_root()?;
        }
        let seconds = started.elapsed().as_secs_f64();
        // `dir`, not the tree's root: the remove phase deletes the root.
        let durable_seconds = ctl.finish_phase(dir, started)?;
        ctl.phase_end(phase.name());
        let mut result = self.phase_result(phase, seconds, merge(tallies)?);
        result.durable_seconds = durable_seconds;
        Ok(result)
    }

    /// The timed loop of `create_fsync` for one thread.
    fn create_files(
        &self,
        t: &ThreadDirs,
        buffer: &[u8],
        tally: &mut Tally,
        halt: &Halt,
    ) -> anyhow::Result<()> {
        let mut name = NameBuf::new(b'f');
        for i in 0..self.files {
            if halt.check()? {
                return Ok(());
            }
            let d = (i % self.dirs) as usize;
            let dirfd = t.subdirs[d].as_raw_fd();
            name.set(i);
            let op_started = Instant::now();
            let writes = create_one(dirfd, &name, buffer, self.size, self.write_size)
                .map_err(|e| e.at(t.file_path(d, i)))?;
            if self.fsync_dir {
                sys::check(unsafe { libc::fsync(dirfd) }, "fsync")
                    .map_err(|e| e.at(t.subdir_path(d)))?;
                tally.dir_fsyncs += 1;
            }
            tally.record(op_started);
            if halt.ctl.marks() {
                halt.ctl
                    .mark(&format!("fsync {}", t.file_path(d, i).display()));
            }
            tally.writes += writes;
            tally.fsyncs += 1;
            tally.bytes += self.size;
        }
        Ok(())
    }

    /// The timed loop of `remove` for one thread: its files, then its directories.
    fn remove_files(&self, t: &ThreadDirs, tally: &mut Tally, halt: &Halt) -> anyhow::Result<()> {
        let mut name = NameBuf::new(b'f');
        for i in 0..self.files {
            if halt.check()? {
                return Ok(());
            }
            let d = (i % self.dirs) as usize;
            name.set(i);
            let op_started = Instant::now();
            // SAFETY: the fd is open for the tree's lifetime; `name` is NUL-terminated.
            let rc = unsafe { libc::unlinkat(t.subdirs[d].as_raw_fd(), name.as_ptr(), 0) };
            sys::check(rc, "unlink").map_err(|e| e.at(t.file_path(d, i)))?;
            tally.record(op_started);
        }
        let mut dname = NameBuf::new(b'd');
        for d in 0..self.dirs {
            dname.set(d);
            // SAFETY: as above.
            let rc =
                unsafe { libc::unlinkat(t.fd.as_raw_fd(), dname.as_ptr(), libc::AT_REMOVEDIR) };
            sys::check(rc, "rmdir").map_err(|e| e.at(t.subdir_path(d as usize)))?;
            tally.rmdirs += 1;
        }
        Ok(())
    }

    fn phase_result(&self, phase: Phase, seconds: f64, merged: Tally) -> PhaseResult {
        let latency = merged.latency();
        let mut counters = std::collections::BTreeMap::new();
        match phase {
            Phase::CreateFsync => {
                counters.insert("fsyncs".to_string(), merged.fsyncs + merged.dir_fsyncs);
                counters.insert("dir_fsyncs".to_string(), merged.dir_fsyncs);
                counters.insert("write_calls".to_string(), merged.writes);
            }
            Phase::Remove => {
                // + the thread directories and the root, removed outside the tallies.
                counters.insert("rmdirs".to_string(), merged.rmdirs + self.threads + 1);
            }
        }
        PhaseResult {
            name: phase.name().to_string(),
            seconds,
            ops: latency.count,
            bytes: merged.bytes,
            op_unit: phase.op_unit().to_string(),
            latency: Some(latency),
            counters,
            ..PhaseResult::default()
        }
    }
}

/// `min(size, 16K)`, at least 1 so that a zero-byte spec still validates.
fn default_write_size(size: u64) -> u64 {
    size.clamp(1, DEFAULT_WRITE_SIZE)
}

/// Pseudo-random bytes (xorshift64), not zeros: a compressing or deduplicating file
/// system would otherwise write far less than `size` per file.
fn fill_buffer(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        })
        .collect()
}

/// Stops a worker when the user interrupts (an error) or a sibling failed (a quiet
/// return: the sibling's error is the one to report).
struct Halt<'a> {
    ctl: &'a RunControl,
    abort: &'a AtomicBool,
}

impl Halt<'_> {
    #[inline]
    fn check(&self) -> anyhow::Result<bool> {
        if self.ctl.stop_requested() {
            return Err(Interrupted.into());
        }
        Ok(self.abort.load(Ordering::Relaxed))
    }
}

/// Reports a real failure before an interruption, so the cause is never masked.
fn first_error(outcomes: Vec<anyhow::Result<Tally>>) -> anyhow::Result<Vec<Tally>> {
    let (ok, errs): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
    let mut errs: Vec<anyhow::Error> = errs.into_iter().filter_map(Result::err).collect();
    if let Some(i) = errs
        .iter()
        .position(|e| e.downcast_ref::<Interrupted>().is_none())
    {
        return Err(errs.swap_remove(i));
    }
    if let Some(e) = errs.pop() {
        return Err(e);
    }
    Ok(ok.into_iter().filter_map(Result::ok).collect())
}

/// One thread's counts and latency histogram for one phase.
struct Tally {
    hist: Histogram<u64>,
    /// Exact largest sample: the histogram only knows it to 0.1 %.
    max_ns: u64,
    bytes: u64,
    fsyncs: u64,
    dir_fsyncs: u64,
    writes: u64,
    rmdirs: u64,
}

impl Tally {
    fn new() -> anyhow::Result<Self> {
        let hist = Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG)
            .map_err(|e| anyhow::anyhow!("latency histogram: {e:?}"))?;
        Ok(Tally {
            hist,
            max_ns: 0,
            bytes: 0,
            fsyncs: 0,
            dir_fsyncs: 0,
            writes: 0,
            rmdirs: 0,
        })
    }

    /// One operation that began at `started`; no allocation (the histogram's
    /// counts were sized up front).
    #[inline]
    fn record(&mut self, started: Instant) {
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.hist.saturating_record(ns.max(1));
        self.max_ns = self.max_ns.max(ns);
    }

    /// Percentiles from the merged histogram, capped at the exact maximum (a bucket's
    /// upper edge may lie above it), so p50 <= p95 <= p99 <= max always holds.
    fn latency(&self) -> Latency {
        let us = |ns: u64| ns as f64 / 1000.0;
        let at = |q: f64| us(self.hist.value_at_quantile(q).min(self.max_ns));
        if self.hist.is_empty() {
            return Latency::default();
        }
        Latency {
            count: self.hist.len(),
            p50_us: at(0.50),
            p95_us: at(0.95),
            p99_us: at(0.99),
            max_us: us(self.max_ns),
        }
    }
}

/// Adds histograms (never averages percentiles) and sums the counts.
fn merge(tallies: Vec<Tally>) -> anyhow::Result<Tally> {
    let mut total = Tally::new()?;
    for t in tallies {
        total
            .hist
            .add(&t.hist)
            .map_err(|e| anyhow::anyhow!("merging latency histograms: {e:?}"))?;
        total.max_ns = total.max_ns.max(t.max_ns);
        total.bytes += t.bytes;
        total.fsyncs += t.fsyncs;
        total.dir_fsyncs += t.dir_fsyncs;
        total.writes += t.writes;
        total.rmdirs += t.rmdirs;
    }
    Ok(total)
}

/// `f<n>` (or `d<n>`) and its NUL in a fixed buffer: u64 has at most 20 digits.
struct NameBuf {
    buf: [u8; 22],
}

impl NameBuf {
    fn new(prefix: u8) -> Self {
        let mut buf = [0u8; 22];
        buf[0] = prefix;
        NameBuf { buf }
    }

    #[inline]
    fn set(&mut self, mut n: u64) {
        let len = n.checked_ilog10().map_or(1, |l| l as usize + 1);
        for slot in self.buf[1..=len].iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
        self.buf[len + 1] = 0;
    }

    fn as_ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }
}

/// open, write `size` bytes, fsync, close: one durable file. Returns the number of
/// write calls. O_EXCL makes a leftover file an error instead of a silent rewrite;
/// O_CLOEXEC keeps the descriptor out of commands the rig may spawn meanwhile.
#[inline]
fn create_one(
    dirfd: RawFd,
    name: &NameBuf,
    buffer: &[u8],
    size: u64,
    write_size: u64,
) -> Result<u64, SysError> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
    // SAFETY: `name` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(SysError::last("open"));
    }
    let written = write_file(fd, buffer, size, write_size)
        .and_then(|writes| sys::check(unsafe { libc::fsync(fd) }, "fsync").map(|()| writes));
    // close even after a failure; its own error (e.g. a deferred EIO) counts too.
    let closed = sys::check(unsafe { libc::close(fd) }, "close");
    let writes = written?;
    closed.map(|()| writes)
}

/// `size` bytes in chunks of `write_size` from `buffer`, which holds at least
/// `min(size, write_size)` bytes.
#[inline]
fn write_file(fd: RawFd, buffer: &[u8], size: u64, write_size: u64) -> Result<u64, SysError> {
    let mut left = size;
    let mut calls = 0;
    while left > 0 {
        let chunk = left.min(write_size) as usize;
        calls += sys::write_all(fd, &buffer[..chunk])?;
        left -= chunk as u64;
    }
    Ok(calls)
}

/// The directories of a run, made and opened before any clock starts. Files are
/// opened relative to their directory's descriptor, which `fsync_dir` also syncs.
struct Tree {
    root: PathBuf,
    root_fd: OwnedFd,
    threads: Vec<ThreadDirs>,
}

/// One thread's directory `t<n>` and its subdirectories `d<k>`.
struct ThreadDirs {
    path: PathBuf,
    fd: OwnedFd,
    subdirs: Vec<OwnedFd>,
}

impl ThreadDirs {
    #[cold]
    fn subdir_path(&self, d: usize) -> PathBuf {
        self.path.join(format!("d{d}"))
    }

    #[cold]
    fn file_path(&self, d: usize, i: u64) -> PathBuf {
        self.subdir_path(d).join(format!("f{i}"))
    }
}

/// The run's root directory name inside the run directory.
pub fn root_name() -> String {
    format!("jbench-fsync.{}", std::process::id())
}

impl Tree {
    /// The thread directories below `root`, which the caller made.
    fn make(root: PathBuf, root_fd: OwnedFd, spec: &FsyncSpec) -> anyhow::Result<Tree> {
        let threads = (0..spec.threads)
            .map(|t| {
                let path = root.join(format!("t{t}"));
                let fd = make_dir(&path)?;
                let subdirs = (0..spec.dirs)
                    .map(|d| make_dir(&path.join(format!("d{d}"))))
                    .collect::<anyhow::Result<_>>()?;
                Ok(ThreadDirs { path, fd, subdirs })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Tree {
            root,
            root_fd,
            threads,
        })
    }

    fn syncfs(&self) -> anyhow::Result<()> {
        nix::unistd::syncfs(self.root_fd.as_raw_fd())
            .map_err(|errno| fs_error("syncfs", &self.root, errno))
    }

    /// The thread directories and the root, after the workers removed the rest.
    fn remove_root(&self) -> anyhow::Result<()> {
        for t in &self.threads {
            std::fs::remove_dir(&t.path).map_err(|e| io_error("rmdir", &t.path, e))?;
        }
        std::fs::remove_dir(&self.root).map_err(|e| io_error("rmdir", &self.root, e))
    }
}

fn make_dir(path: &Path) -> anyhow::Result<OwnedFd> {
    nix::unistd::mkdir(path, nix::sys::stat::Mode::from_bits_truncate(0o755))
        .map_err(|errno| fs_error("mkdir", path, errno))?;
    let dir = std::fs::File::open(path).map_err(|e| io_error("open", path, e))?;
    Ok(dir.into())
}

fn fs_error(op: &'static str, path: &Path, errno: Errno) -> anyhow::Error {
    FsOpError::new(op, path, errno).into()
}

fn io_error(op: &'static str, path: &Path, e: std::io::Error) -> anyhow::Error {
    FsOpError::from_io(op, path, e)
}

/// Every subdirectory's descriptor stays open for the whole run, so raise the soft
/// RLIMIT_NOFILE (1024 on most systems) to what the tree needs when the hard limit
/// allows it, and say so plainly when it does not.
fn ensure_fd_limit(needed: u64) -> anyhow::Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        bail!("getrlimit(RLIMIT_NOFILE): {}", Errno::last().desc());
    }
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max < needed {
        bail!(
            "fsync needs {needed} open descriptors (threads x (dirs + 1)) but RLIMIT_NOFILE's \
             hard limit is {}; use fewer threads or dirs",
            lim.rlim_max
        );
    }
    lim.rlim_cur = needed;
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        bail!(
            "setrlimit(RLIMIT_NOFILE, {needed}): {}",
            Errno::last().desc()
        );
    }
    Ok(())
}

impl Workload for FsyncSpec {
    fn kind(&self) -> &'static str {
        "fsync"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "files": self.files,
            "size": self.size,
            "dirs": self.dirs,
            "threads": self.threads,
            "fsync_dir": self.fsync_dir,
            "write_size": self.write_size,
        })
    }

    /// `fsync-f1000-s4096-t1`, plus what differs from the defaults, so that two
    /// workloads of one experiment that differ only there get different names.
    fn default_name(&self) -> String {
        let mut name = format!("fsync-f{}-s{}-t{}", self.files, self.size, self.threads);
        if self.dirs != 1 {
            name += &format!("-D{}", self.dirs);
        }
        if self.write_size != default_write_size(self.size) {
            name += &format!("-w{}", self.write_size);
        }
        if self.fsync_dir {
            name += "-dirsync";
        }
        name
    }

    fn phase_names(&self) -> Vec<&'static str> {
        Phase::ALL.iter().map(|p| p.name()).collect()
    }

    fn peak_data_bytes(&self) -> u64 {
        self.total_bytes()
    }

    fn peak_inodes(&self) -> u64 {
        self.dir_count().saturating_add(self.total_files())
    }

    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        self.run_with(dir, ctl, &mut |_| {})
    }
}

/// The spec from a `[[workload]]` table; see the module docs for the keys.
pub fn spec_from_table(t: &toml::Table) -> Result<FsyncSpec, ParamError> {
    reject_unknown(t, &KEYS)?;
    let size = table_size(t, "size", 4096)?;
    let spec = FsyncSpec {
        files: table_u64(t, "files", 1000)?,
        size,
        dirs: table_u64(t, "dirs", 1)?,
        threads: table_u64(t, "threads", 1)?,
        fsync_dir: table_bool(t, "fsync_dir", false)?,
        write_size: table_size(t, "write_size", default_write_size(size))?,
    };
    spec.validate()?;
    Ok(spec)
}

pub fn from_table(t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    Ok(Arc::new(spec_from_table(t)?))
}

/// Command-line arguments of `jbench workload fsync`.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in (must exist; files go to jbench-fsync.<pid> inside and are
    /// removed at the end).
    #[arg(long)]
    pub dir: PathBuf,
    /// Files per thread.
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub files: u64,
    /// Bytes per file: 4096, 16K, 1M.
    #[arg(short = 's', long, default_value = "4096", value_parser = parse_size)]
    pub size: u64,
    /// Threads, each in its own subtree, started together.
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: u64,
    /// Subdirectories per thread, filled round-robin (fs_mark -D).
    #[arg(short = 'D', long, default_value_t = 1)]
    pub dirs: u64,
    /// Also fsync the directory after each file, like a mail server.
    #[arg(long)]
    pub fsync_dir: bool,
    /// Bytes per write call [default: min(size, 16K)].
    #[arg(short = 'w', long, value_parser = parse_size)]
    pub write_size: Option<u64>,
    /// Also time each phase up to syncfs of the file system.
    #[arg(long)]
    pub durable: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl CliArgs {
    pub fn spec(&self) -> Result<FsyncSpec, ParamError> {
        let spec = FsyncSpec {
            files: self.files,
            size: self.size,
            dirs: self.dirs,
            threads: self.threads,
            fsync_dir: self.fsync_dir,
            write_size: self.write_size.unwrap_or(default_write_size(self.size)),
        };
        spec.validate()?;
        Ok(spec)
    }
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    let spec = args
        .spec()
        .map_err(|e| anyhow::anyhow!("--{}: {}", e.key.replace('_', "-"), e.message))?;
    super::require_dir(&args.dir)?;
    let ctl = ctl.clone().with_durable(args.durable || ctl.durable());
    let phases = spec.run(&args.dir, &ctl)?;
    if args.json {
        let out =
            serde_json::json!({"workload": "fsync", "params": spec.params(), "phases": phases});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", report(&spec, &args.dir, &phases));
    }
    Ok(())
}

/// The human table: rates, MiB/s and latency percentiles per phase.
pub fn report(spec: &FsyncSpec, dir: &Path, phases: &[PhaseResult]) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "fsync in {}: {} thread(s) x {} files of {} in {} dir(s), {} per write, fsync dir: {}\n",
        dir.display(),
        spec.threads,
        spec.files,
        format_size(spec.size),
        spec.dirs,
        format_size(spec.write_size),
        if spec.fsync_dir { "yes" } else { "no" },
    );
    let _ = writeln!(
        out,
        "{:<13} {:>9} {:>9} {:>11} {:>8} {:>9} {:>9} {:>9} {:>9}",
        "phase", "seconds", "files", "files/s", "MiB/s", "p50", "p95", "p99", "max"
    );
    for r in phases {
        let lat = r.latency.clone().unwrap_or_default();
        let mib = r.kib_per_sec() / 1024.0;
        let _ = writeln!(
            out,
            "{:<13} {:>9.3} {:>9} {:>11.1} {:>8.2} {:>9} {:>9} {:>9} {:>9}",
            r.name,
            r.seconds,
            r.ops,
            r.ops_per_sec(),
            mib,
            fmt_latency(lat.p50_us),
            fmt_latency(lat.p95_us),
            fmt_latency(lat.p99_us),
            fmt_latency(lat.max_us),
        );
        if let Some(d) = r.durable_seconds {
            let _ = writeln!(out, "{:<13} {:>9.3} (up to syncfs)", "", d);
        }
        if !r.counters.is_empty() {
            let list: Vec<String> = r.counters.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "{:<13} {}", "", list.join(" "));
        }
    }
    out
}

/// Microseconds below 10 ms, milliseconds above, three significant-ish digits.
fn fmt_latency(us: f64) -> String {
    if us < 10_000.0 {
        format!("{us:.1}us")
    } else {
        format!("{:.2}ms", us / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testutil::{snapshot, stop_at, SmallFs};
    use std::os::unix::fs::MetadataExt;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    fn small(files: u64, threads: u64, dirs: u64) -> FsyncSpec {
        FsyncSpec {
            files,
            size: 5000,
            dirs,
            threads,
            fsync_dir: false,
            write_size: 1024,
        }
    }

    /// Every file below `dir` with its size, relative to `dir`.
    fn list_files(dir: &Path) -> Vec<(String, u64)> {
        fn visit(base: &Path, dir: &Path, out: &mut Vec<(String, u64)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    visit(base, &path, out);
                } else {
                    let rel = path
                        .strip_prefix(base)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    out.push((rel, std::fs::metadata(&path).unwrap().size()));
                }
            }
        }
        let mut out = Vec::new();
        visit(dir, dir, &mut out);
        out.sort();
        out
    }

    #[test]
    fn defaults_and_params_round_trip() {
        let spec =
            spec_from_table(&table("kind = \"fsync\"\nname = \"x\"\ndurable = true")).unwrap();
        assert_eq!(spec, FsyncSpec::default());
        assert_eq!(
            spec.params(),
            serde_json::json!({"files": 1000, "size": 4096, "dirs": 1, "threads": 1,
                "fsync_dir": false, "write_size": 4096})
        );
        assert_eq!(spec.default_name(), "fsync-f1000-s4096-t1");
        // The loader reaches this engine through the kind dispatch.
        let engine = crate::workload::from_table("fsync", &table("files = 5")).unwrap();
        assert_eq!(
            (engine.kind(), engine.params()["files"].as_u64()),
            ("fsync", Some(5))
        );
        // What the resolved spec writes back must parse to the same engine.
        let custom = spec_from_table(&table(
            "files = 7\nsize = \"64K\"\ndirs = 3\nthreads = 2\nfsync_dir = true\nwrite_size = 1000",
        ))
        .unwrap();
        let back: toml::Table = serde_json::from_value(custom.params()).unwrap();
        assert_eq!(spec_from_table(&back).unwrap(), custom);
        assert_eq!(custom.default_name(), "fsync-f7-s65536-t2-D3-w1000-dirsync");
    }

    #[test]
    fn size_accepts_integers_and_strings() {
        let get = |text: &str| spec_from_table(&table(text)).unwrap();
        assert_eq!(get("size = 16384").size, 16384);
        assert_eq!(get("size = \"16K\"").size, 16384);
        assert_eq!(
            get("size = \"1M\"").write_size,
            16384,
            "default min(size, 16K)"
        );
        assert_eq!(get("size = 100").write_size, 100);
        assert_eq!(get("size = 0").write_size, 1);
        assert_eq!(get("size = \"1M\"\nwrite_size = \"4K\"").write_size, 4096);
    }

    #[test]
    fn bad_tables_blame_the_key() {
        let key = |text: &str| spec_from_table(&table(text)).unwrap_err().key;
        assert_eq!(key("file = 3"), "file");
        assert!(spec_from_table(&table("bogus = 1"))
            .unwrap_err()
            .message
            .contains("unknown key `bogus`"));
        assert_eq!(key("size = \"16Q\""), "size");
        assert_eq!(key("size = -1"), "size");
        assert_eq!(key("files = 0"), "files");
        assert_eq!(key("threads = 0"), "threads");
        assert_eq!(key("threads = 5000"), "threads");
        assert_eq!(key("dirs = 0"), "dirs");
        assert_eq!(key("files = 3\ndirs = 4"), "dirs");
        assert_eq!(key("write_size = 0"), "write_size");
        assert_eq!(key("fsync_dir = 1"), "fsync_dir");
        assert_eq!(key("files = 4611686018427387904\nsize = 4"), "size");
    }

    #[test]
    fn peak_counts_are_exact() {
        let spec = small(10, 3, 4);
        assert_eq!(spec.peak_data_bytes(), 3 * 10 * 5000);
        assert_eq!(spec.peak_inodes(), 1 + 3 * (1 + 4) + 3 * 10);
        assert_eq!(spec.phase_names(), ["create_fsync", "remove"]);
    }

    #[test]
    fn run_creates_every_file_full_then_removes_all() {
        let dir = tempfile::tempdir().unwrap();
        let spec = small(7, 1, 3);
        let mut seen = Vec::new();
        let results = spec
            .run_with(dir.path(), &RunControl::new(), &mut |root| {
                assert_eq!(root, dir.path().join(root_name()));
                seen = list_files(dir.path());
            })
            .unwrap();
        let root = root_name();
        let expected: Vec<(String, u64)> = (0..7)
            .map(|i| (format!("{root}/t0/d{}/f{i}", i % 3), 5000))
            .collect();
        let mut expected = expected;
        expected.sort();
        assert_eq!(seen, expected);
        let create = &results[0];
        assert_eq!(
            (create.name.as_str(), create.ops, create.bytes),
            ("create_fsync", 7, 35000)
        );
        assert_eq!(create.counters["fsyncs"], 7);
        assert_eq!(create.counters["dir_fsyncs"], 0);
        // 5000 bytes in 1024-byte writes: 5 calls per file.
        assert_eq!(create.counters["write_calls"], 35);
        let remove = &results[1];
        assert_eq!(
            (remove.name.as_str(), remove.ops, remove.bytes),
            ("remove", 7, 0)
        );
        assert_eq!(remove.counters["rmdirs"], 3 + 1 + 1);
        assert!(results
            .iter()
            .all(|r| r.seconds > 0.0 && r.durable_seconds.is_none()));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "cleaned up"
        );
    }

    #[test]
    fn files_hold_the_buffer_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FsyncSpec {
            write_size: 3000,
            ..small(1, 1, 1)
        };
        let mut data = Vec::new();
        spec.run_with(dir.path(), &RunControl::new(), &mut |root| {
            data = std::fs::read(root.join("t0/d0/f0")).unwrap();
        })
        .unwrap();
        let pattern = fill_buffer(3000);
        let expected: Vec<u8> = pattern.iter().chain(&pattern[..2000]).copied().collect();
        assert_eq!(data, expected);
        assert!(pattern.iter().any(|&b| b != 0));
    }

    #[test]
    fn three_threads_make_three_times_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FsyncSpec {
            fsync_dir: true,
            ..small(5, 3, 2)
        };
        let mut count = 0;
        let results = spec
            .run_with(dir.path(), &RunControl::new(), &mut |_| {
                count = list_files(dir.path()).len();
            })
            .unwrap();
        assert_eq!(count, 15);
        assert_eq!(results[0].ops, 15);
        assert_eq!(results[0].bytes, 15 * 5000);
        assert_eq!(results[0].counters["fsyncs"], 30, "file and directory");
        assert_eq!(results[0].counters["dir_fsyncs"], 15);
        assert_eq!(results[1].ops, 15);
        assert_eq!(results[1].counters["rmdirs"], 3 * 2 + 3 + 1);
    }

    #[test]
    fn latency_percentiles_are_ordered_and_count_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let results = small(20, 2, 1).run(dir.path(), &RunControl::new()).unwrap();
        for r in &results {
            let l = r.latency.as_ref().unwrap();
            assert_eq!(l.count, 40, "{}", r.name);
            assert!(l.p50_us > 0.0, "{l:?}");
            assert!(
                l.p50_us <= l.p95_us && l.p95_us <= l.p99_us && l.p99_us <= l.max_us,
                "{l:?}"
            );
        }
    }

    #[test]
    fn merged_histogram_adds_samples_not_percentiles() {
        let mut a = Tally::new().unwrap();
        let mut b = Tally::new().unwrap();
        for _ in 0..90 {
            a.hist.record(1_000).unwrap();
        }
        a.max_ns = 1_000;
        for _ in 0..10 {
            b.hist.record(1_000_000).unwrap();
        }
        b.max_ns = 1_000_000;
        let l = merge(vec![a, b]).unwrap().latency();
        assert_eq!(l.count, 100);
        assert!((l.p50_us - 1.0).abs() < 0.01, "{l:?}");
        assert!((l.p95_us - 1000.0).abs() < 1.0, "{l:?}");
        assert_eq!(l.max_us, 1000.0);
    }

    #[test]
    fn stop_before_the_run_is_interrupted_and_makes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ctl = RunControl::new();
        ctl.request_stop();
        let err = small(3, 2, 1).run(dir.path(), &ctl).unwrap_err();
        assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn stop_between_phases_interrupts_remove_and_removes_the_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep"), b"mine").unwrap();
        let before = snapshot(dir.path());
        let ctl = RunControl::new();
        let mut seen = 0;
        let err = small(3, 2, 1)
            .run_with(dir.path(), &ctl, &mut |root| {
                seen = list_files(root).len();
                ctl.request_stop()
            })
            .unwrap_err();
        assert_eq!(seen, 6, "the files existed when the stop came");
        assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
        assert!(format!("{err:#}").contains("was removed"), "{err:#}");
        assert_eq!(
            snapshot(dir.path()),
            before,
            "the run's tree is gone, the rest kept"
        );
    }

    #[test]
    fn full_disk_removes_what_the_run_made() {
        let Some(fs) = SmallFs::new("fsync full_disk_removes_what_the_run_made", "1m") else {
            return;
        };
        std::fs::write(fs.path().join("keep"), b"mine").unwrap();
        let before = snapshot(fs.path());
        // 200 files of 16 KiB: 3.2 MiB on a 1 MiB file system.
        let spec = FsyncSpec {
            size: 16 << 10,
            write_size: 16 << 10,
            ..small(100, 2, 3)
        };
        let err = spec.run(fs.path(), &RunControl::new()).unwrap_err();
        let os = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(os.errno, Errno::ENOSPC, "{err:#}");
        assert!(format!("{err:#}").contains("was removed"), "{err:#}");
        assert_eq!(snapshot(fs.path()), before);
    }

    #[test]
    fn interrupt_during_remove_leaves_the_directory_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let before = snapshot(dir.path());
        let err = small(5, 2, 2)
            .run(dir.path(), &stop_at("remove"))
            .unwrap_err();
        assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn an_existing_root_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(root_name());
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("f0"), b"not the run's").unwrap();
        let before = snapshot(dir.path());
        let err = small(2, 1, 1)
            .run(dir.path(), &RunControl::new())
            .unwrap_err();
        let os = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(os.errno, Errno::EEXIST, "{err:#}");
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn cli_refuses_a_missing_dir_and_absurd_counts() {
        let dir = tempfile::tempdir().unwrap();
        let args = |extra: &[&str], d: &Path| {
            use clap::Parser;
            #[derive(clap::Parser)]
            struct W {
                #[command(flatten)]
                a: CliArgs,
            }
            let mut argv = vec!["w".to_string(), "--dir".into(), d.display().to_string()];
            argv.extend(extra.iter().map(|s| s.to_string()));
            W::try_parse_from(argv).unwrap().a
        };
        let missing = dir.path().join("nope");
        let err = run_cli(&args(&["-n", "1"], &missing), &RunControl::new()).unwrap_err();
        assert!(
            err.to_string()
                .contains("is not a directory; create it first"),
            "{err:#}"
        );
        assert!(!missing.exists(), "the missing directory was made");
        // 2^40 files of 0 bytes counted as "nothing to write" before.
        let err = run_cli(
            &args(&["-n", "1099511627776", "-s", "0"], dir.path()),
            &RunControl::new(),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("--files: "), "{err:#}");
        assert!(err.to_string().contains("at most 4294967296"), "{err:#}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn errors_name_the_call_path_and_errno() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = small(1, 1, 1)
            .run(&missing, &RunControl::new())
            .unwrap_err();
        let fs = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(fs.errno, Errno::ENOENT);
        let expected = format!(
            "mkdir {}/{}: No such file or directory",
            missing.display(),
            root_name()
        );
        assert!(format!("{err:#}").contains(&expected), "{err:#}");

        // A failure inside the timed loop names the file.
        let err = SysError {
            op: "open",
            errno: Errno::EEXIST,
        }
        .at(PathBuf::from("/x/t0/d0/f3"));
        assert_eq!(err.to_string(), "open /x/t0/d0/f3: File exists");
    }

    #[test]
    fn names_are_nul_terminated_decimals() {
        let mut n = NameBuf::new(b'f');
        for (v, text) in [
            (0u64, "f0"),
            (9, "f9"),
            (10, "f10"),
            (u64::MAX, "f18446744073709551615"),
        ] {
            n.set(v);
            let c = unsafe { std::ffi::CStr::from_ptr(n.as_ptr()) };
            assert_eq!(c.to_str().unwrap(), text);
        }
    }

    #[test]
    fn report_shows_rates_and_percentiles() {
        let spec = small(10, 1, 1);
        let phase = PhaseResult {
            name: "create_fsync".into(),
            seconds: 2.0,
            ops: 1000,
            bytes: 4 << 20,
            latency: Some(Latency {
                count: 1000,
                p50_us: 1500.0,
                p95_us: 2500.0,
                p99_us: 12_345.0,
                max_us: 20_000.0,
            }),
            ..PhaseResult::default()
        };
        let text = report(&spec, Path::new("/mnt"), &[phase]);
        let row: Vec<&str> = text.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(
            row,
            [
                "create_fsync",
                "2.000",
                "1000",
                "500.0",
                "2.00",
                "1500.0us",
                "2500.0us",
                "12.35ms",
                "20.00ms"
            ]
        );
    }

    // ---- fsync really reaches the kernel: the engine run under strace ----

    const TRACE_DIR_ENV: &str = "JBENCH_FSYNC_TRACE_DIR";
    const TRACE_DIRSYNC_ENV: &str = "JBENCH_FSYNC_TRACE_DIRSYNC";
    const TRACE_FILES: u64 = 6;
    const TRACE_THREADS: u64 = 2;

    /// Not a test of its own: the body [`fsync_syscalls_reach_the_kernel`] runs under
    /// strace in a child process. Without the environment it does nothing.
    #[test]
    #[ignore = "run by fsync_syscalls_reach_the_kernel under strace"]
    fn traced_child() {
        let Some(dir) = std::env::var_os(TRACE_DIR_ENV) else {
            return;
        };
        let spec = FsyncSpec {
            fsync_dir: std::env::var_os(TRACE_DIRSYNC_ENV).is_some(),
            ..small(TRACE_FILES, TRACE_THREADS, 2)
        };
        spec.run(Path::new(&dir), &RunControl::new()).unwrap();
    }

    /// Calls of each syscall `strace -c -f` counted in the child run.
    fn traced_counts(dirsync: bool) -> std::collections::BTreeMap<String, u64> {
        let dir = tempfile::tempdir().unwrap();
        let summary = dir.path().join("strace.txt");
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let mut cmd = std::process::Command::new("strace");
        cmd.args([
            "-f",
            "-c",
            "-e",
            "trace=fsync,fdatasync,sync_file_range,syncfs",
            "-o",
        ])
        .arg(&summary)
        .arg(std::env::current_exe().unwrap())
        .args([
            "workload::fsync::tests::traced_child",
            "--exact",
            "--ignored",
        ])
        .args(["--test-threads=1", "--quiet"])
        .env(TRACE_DIR_ENV, &work);
        if dirsync {
            cmd.env(TRACE_DIRSYNC_ENV, "1");
        }
        let out = cmd.output().expect("strace starts");
        assert!(out.status.success(), "strace run failed: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("1 passed"),
            "child test did not run: {stdout}"
        );
        let text = std::fs::read_to_string(&summary).unwrap();
        // Rows: % time, seconds, usecs/call, calls, [errors,] syscall.
        let counts = text
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let calls = f.get(3)?.parse().ok()?;
                Some((f.last()?.to_string(), calls))
            })
            .collect();
        counts
    }

    #[test]
    fn fsync_syscalls_reach_the_kernel() {
        let test = "fsync_syscalls_reach_the_kernel";
        if !crate::test_require::need_program(test, "strace", "strace") {
            return;
        }
        let plain = traced_counts(false);
        let files = TRACE_FILES * TRACE_THREADS;
        assert_eq!(plain.get("fsync"), Some(&files), "{plain:?}");
        assert_eq!(plain.get("fdatasync"), None, "{plain:?}");
        // One syncfs before each phase.
        assert_eq!(plain.get("syncfs"), Some(&2), "{plain:?}");
        let dirsync = traced_counts(true);
        assert_eq!(dirsync.get("fsync"), Some(&(2 * files)), "{dirsync:?}");
    }
}
