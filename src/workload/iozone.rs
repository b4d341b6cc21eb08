//! iozone 3.489's write/rewrite (`-i 0`) and read/re-read (`-i 1`) tests, re-implemented
//! natively with the same system calls in the same order, so that the figures can be set
//! beside published iozone ones (Study 4: `-r 4m -s 75m [-o -e] [-t N]`).
//!
//! What iozone does, and so what this engine does:
//! - **Single-stream mode** (no `-t`; `threads = 1` here), file `iozone.tmp`: the initial
//!   write `creat()`s the file (truncating it), closes it and reopens it `O_RDWR`
//!   (`|O_SYNC` with `-o`); rewrite reopens it the same way without `creat()`. Before
//!   each write clock starts there is an untimed `fsync`.
//! - **Throughput mode** (`-t N`, N >= 2 here), files `iozone.DUMMY.<i>`, one per worker:
//!   the initial writer opens `O_RDWR|O_CREAT` (`|O_SYNC`), *without* `O_TRUNC` and with
//!   no `creat()`, so it must start from a fresh file; rewriters open `O_RDWR`. Workers
//!   open their file, then wait at a barrier and start together; the parent clock runs
//!   from the start signal until every worker has exited.
//! - Every phase moves floor(size / record) whole records with `write`/`read` of exactly
//!   one record from one buffer; a size that is not a multiple of the record leaves the
//!   tail out (iozone does the same silently; we warn).
//! - `-e` puts an `fsync` inside the write clocks. Whether or not `-e` is given, every
//!   write phase ends with an untimed `fsync` and `close` ("clean up before read starts").
//! - Throughput mode stonewalls (iozone's default, `-x` turns it off): the first worker
//!   to finish raises a flag; the others take their figures at that moment. Initial
//!   writers still finish the file (the readers need it); rewriters and readers stop.
//!   Each worker's rate is the KiB it moved before the flag over its time to the flag;
//!   "children see" is the sum of those rates, "parent sees" the sum of the counted KiB
//!   over the parent's wall time. kB in iozone's output is 1024 bytes.
//! - `-o` (O_SYNC) applies to every open, the readers' included.
//! - Files are kept from phase to phase and removed at the end (unless `-w`).
//!
//! Not reproduced: iozone's `sync(); sleep(2)` between throughput tests (we `syncfs` the
//! directory's file system untimed, without the sleep), its pre-run truncate sanity check,
//! processes instead of threads (iozone uses `fork` unless `-T`; the system calls on
//! the files are the same), and `-t 1` as a one-worker throughput run (here it is
//! single-stream mode).

use std::ffi::CString;
use std::fmt::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{bail, Context};

use super::sys::{self, FsOpError, SysError};
use super::{table_bool, table_size, Interrupted, ParamError, PhaseResult, RunControl, Workload};
use crate::units::{format_size, parse_size};

/// The iozone release whose behaviour this engine follows.
pub const IOZONE_VERSION: &str = "3.489";

/// iozone's buffer fill byte (`PATTERN`); non-zero so no layer can treat the data as
/// holes or compress it to nothing.
const PATTERN: u8 = 0xA5;

/// Most workers accepted; far above any study, low enough to catch typos.
pub const MAX_THREADS: u32 = 256;

/// Largest record accepted: one buffer of this size is allocated per worker.
pub const MAX_RECORD: u64 = 1 << 30;

/// Single-stream file name (iozone's default `-f`).
pub const SINGLE_FILE: &str = "iozone.tmp";

/// The four timed phases, in the order iozone runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    Write,
    Rewrite,
    Read,
    Reread,
}

impl Phase {
    pub const ALL: [Phase; 4] = [Phase::Write, Phase::Rewrite, Phase::Read, Phase::Reread];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Write => "write",
            Phase::Rewrite => "rewrite",
            Phase::Read => "read",
            Phase::Reread => "reread",
        }
    }

    pub fn writes(self) -> bool {
        matches!(self, Phase::Write | Phase::Rewrite)
    }

    fn op_unit(self) -> &'static str {
        if self.writes() {
            "record writes"
        } else {
            "record reads"
        }
    }

    /// iozone's throughput-mode label: "Children see throughput for 6 initial writers".
    fn iozone_label(self) -> &'static str {
        match self {
            Phase::Write => "initial writers",
            Phase::Rewrite => "rewriters",
            Phase::Read => "readers",
            Phase::Reread => "re-readers",
        }
    }
}

/// An iozone run: `-r record -s size -i 0 -i 1 [-o] [-e] [-t threads] [-x]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Iozone {
    /// `-r`, bytes.
    pub record: u64,
    /// `-s`, bytes per file.
    pub size: u64,
    /// `-i 0`: write and rewrite.
    pub write: bool,
    /// `-i 1`: read and re-read.
    pub read: bool,
    /// `-o`: O_SYNC on every open.
    pub osync: bool,
    /// `-e`: fsync inside the write clocks.
    pub flush: bool,
    /// `-t`: workers, one file each; 1 is single-stream mode.
    pub threads: u32,
    /// iozone's stonewalling (on unless `-x`); only matters with threads >= 2.
    pub stonewall: bool,
}

impl Default for Iozone {
    /// iozone's own defaults for record and file size (4 KiB in a 512 KiB file).
    fn default() -> Self {
        Iozone {
            record: 4 << 10,
            size: 512 << 10,
            write: true,
            read: true,
            osync: false,
            flush: false,
            threads: 1,
            stonewall: true,
        }
    }
}

impl Iozone {
    /// Whole records per file: iozone's `numrecs64 = (kilo64*1024)/reclen`.
    pub fn records(&self) -> u64 {
        self.size.checked_div(self.record).unwrap_or(0)
    }

    /// Bytes one worker moves in one phase.
    pub fn file_bytes(&self) -> u64 {
        self.records() * self.record
    }

    /// Bytes of `size` past the last whole record, which no phase touches.
    pub fn remainder(&self) -> u64 {
        self.size - self.file_bytes()
    }

    /// Said when `size` is not a multiple of `record`.
    pub fn size_warning(&self) -> Option<String> {
        (self.remainder() != 0).then(|| {
            format!(
                "file size {} is not a multiple of the record size {}: only {} whole \
                 records ({} bytes) are moved per file, the last {} bytes are not",
                self.size,
                self.record,
                self.records(),
                self.file_bytes(),
                self.remainder()
            )
        })
    }

    pub fn phases(&self) -> Vec<Phase> {
        Phase::ALL
            .into_iter()
            .filter(|p| if p.writes() { self.write } else { self.read })
            .collect()
    }

    pub fn throughput_mode(&self) -> bool {
        self.threads > 1
    }

    /// Refuses runs that could not start or would move nothing, naming the key to blame.
    pub fn validate(&self) -> Result<(), ParamError> {
        if self.record == 0 || self.record > MAX_RECORD {
            return Err(ParamError::new(
                "record",
                format!("record size must be 1 byte to {}", format_size(MAX_RECORD)),
            ));
        }
        if self.size < self.record {
            return Err(ParamError::new(
                "size",
                format!(
                    "file size {} is smaller than one record ({}): nothing would be moved",
                    self.size, self.record
                ),
            ));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(ParamError::new(
                "threads",
                format!("threads must be 1 to {MAX_THREADS}"),
            ));
        }
        if !self.write {
            // iozone cannot read files it has not written in the same run either.
            return Err(ParamError::new(
                "tests",
                "the read tests need the files the write test makes: include \"write\"",
            ));
        }
        if u64::from(self.threads).checked_mul(self.size).is_none() {
            return Err(ParamError::new(
                "size",
                format!(
                    "threads x size must stay below 2^64 bytes; with {} threads, size can be \
                     at most {}",
                    self.threads,
                    format_size(u64::MAX / u64::from(self.threads))
                ),
            ));
        }
        Ok(())
    }

    /// Names of the files, one per worker.
    pub fn file_names(&self) -> Vec<String> {
        if self.throughput_mode() {
            (0..self.threads)
                .map(|i| format!("iozone.DUMMY.{i}"))
                .collect()
        } else {
            vec![SINGLE_FILE.to_string()]
        }
    }

    /// The iozone command line this run corresponds to (sizes in iozone's units).
    pub fn command_line(&self) -> String {
        let mut s = format!(
            "iozone -r {} -s {}",
            iozone_size(self.record),
            iozone_size(self.size)
        );
        if self.write {
            s.push_str(" -i 0");
        }
        if self.read {
            s.push_str(" -i 1");
        }
        if self.osync {
            s.push_str(" -o");
        }
        if self.flush {
            s.push_str(" -e");
        }
        if self.throughput_mode() {
            let _ = write!(s, " -t {}", self.threads);
            if !self.stonewall {
                s.push_str(" -x");
            }
        }
        s
    }

    /// Runs the selected phases in `dir`; removes the files at the end unless `keep`.
    pub fn run_in(
        &self,
        dir: &Path,
        ctl: &RunControl,
        keep: bool,
    ) -> anyhow::Result<Vec<PhaseResult>> {
        self.validate()
            .map_err(|e| anyhow::anyhow!("iozone: {}: {}", e.key, e.message))?;
        let paths: Vec<PathBuf> = self.file_names().iter().map(|n| dir.join(n)).collect();
        let cpaths = paths
            .iter()
            .map(|p| c_path(p))
            .collect::<anyhow::Result<Vec<_>>>()?;
        // The files are truncated or overwritten in place, then removed: a file of
        // that name that the run did not make would be lost. (The throughput writer
        // opens without O_TRUNC, so an old file would not even be the test iozone runs.)
        if let Some(p) = paths.iter().find(|p| p.symlink_metadata().is_ok()) {
            bail!(
                "{} already exists and this run would overwrite, then remove it; it was left \
                 alone (remove it if an earlier run with -w left it, or use another directory)",
                p.display()
            );
        }
        let run = self
            .phases()
            .into_iter()
            .try_fold(Vec::new(), |mut results, phase| {
                let r = self
                    .run_phase(phase, dir, &paths, &cpaths, ctl)
                    .with_context(|| format!("iozone phase {}", phase.name()))?;
                results.push(r);
                anyhow::Ok(results)
            });
        match run {
            Ok(results) if keep => Ok(results),
            Ok(results) => {
                remove_files(&paths)?;
                Ok(results)
            }
            Err(e) if keep => {
                let left: Vec<String> = paths
                    .iter()
                    .filter(|p| p.symlink_metadata().is_ok())
                    .map(|p| p.display().to_string())
                    .collect();
                Err(e.context(format!(
                    "iozone failed; its files were kept as -w asks: {}",
                    if left.is_empty() {
                        "none was made".to_string()
                    } else {
                        left.join(", ")
                    }
                )))
            }
            Err(e) => Err(super::after_cleanup(e, "iozone", dir, remove_files(&paths))),
        }
    }

    fn run_phase(
        &self,
        phase: Phase,
        dir: &Path,
        paths: &[PathBuf],
        cpaths: &[CString],
        ctl: &RunControl,
    ) -> anyhow::Result<PhaseResult> {
        if ctl.stop_requested() {
            return Err(Interrupted.into());
        }
        let shared = Shared {
            stonewall: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            barrier: Barrier::new(cpaths.len() + 1),
        };
        let job = Job {
            phase,
            record: self.record as usize,
            records: self.records(),
            osync: self.osync,
            flush: self.flush,
            single: !self.throughput_mode(),
            stonewall: self.stonewall && self.throughput_mode(),
        };
        let (outcomes, started, seconds) = std::thread::scope(|s| {
            let handles: Vec<_> = cpaths
                .iter()
                .zip(paths)
                .map(|(c, p)| {
                    let (job, shared) = (&job, &shared);
                    s.spawn(move || worker(job, c, p, shared, ctl))
                })
                .collect();
            // Every worker has opened its file (or failed to): start them together,
            // as iozone's parent does with CHILD_STATE_BEGIN, and start its clock.
            ctl.phase_begin(phase.name());
            shared.barrier.wait();
            let started = Instant::now();
            let outcomes: Vec<anyhow::Result<Worker>> = handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("worker panicked")))
                })
                .collect();
            (outcomes, started, started.elapsed().as_secs_f64())
        });
        let workers = first_error(outcomes)?;
        let durable_seconds = ctl.finish_phase(dir, started)?;
        ctl.phase_end(phase.name());
        if self.throughput_mode() && durable_seconds.is_none() {
            // iozone's `sync()` between throughput tests, limited to this file system.
            syncfs(dir)?;
        }
        let mut result = self.phase_result(phase, seconds, &workers);
        result.durable_seconds = durable_seconds;
        Ok(result)
    }

    /// Figures of one phase from its workers' outcomes and the parent's wall time.
    fn phase_result(&self, phase: Phase, parent_seconds: f64, workers: &[Worker]) -> PhaseResult {
        let figures = Figures::new(workers, parent_seconds);
        // Single-stream iozone times the loop (and `-e` flush) alone; that is the
        // worker's clock, not the parent's, which also covers opening and closing.
        let seconds = if self.throughput_mode() {
            parent_seconds
        } else {
            workers[0].counted_seconds
        };
        let mut counters = std::collections::BTreeMap::new();
        counters.insert("children_kib_per_s".into(), figures.children.round() as u64);
        counters.insert("parent_kib_per_s".into(), figures.parent.round() as u64);
        counters.insert("min_kib_per_s".into(), figures.min.round() as u64);
        counters.insert("max_kib_per_s".into(), figures.max.round() as u64);
        counters.insert("kib_moved".into(), figures.moved_bytes / 1024);
        counters.insert("kib_counted".into(), figures.counted_bytes / 1024);
        counters.insert("min_xfer_kib".into(), figures.min_xfer_bytes / 1024);
        counters.insert("threads".into(), u64::from(self.threads));
        if self.remainder() != 0 {
            counters.insert("size_remainder_bytes".into(), self.remainder());
        }
        PhaseResult {
            name: phase.name().to_string(),
            seconds,
            ops: workers.iter().map(|w| w.records).sum(),
            bytes: figures.moved_bytes,
            op_unit: phase.op_unit().to_string(),
            counters,
            ..PhaseResult::default()
        }
    }
}

/// iozone's aggregate figures of one phase, in KiB/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// Sum of the workers' rates ("Children see throughput").
    pub children: f64,
    /// Counted KiB over the parent's wall time ("Parent sees throughput").
    pub parent: f64,
    pub min: f64,
    pub max: f64,
    pub moved_bytes: u64,
    pub counted_bytes: u64,
    pub min_xfer_bytes: u64,
}

impl Figures {
    fn new(workers: &[Worker], parent_seconds: f64) -> Self {
        let rates: Vec<f64> = workers.iter().map(Worker::kib_per_s).collect();
        let counted_bytes: u64 = workers.iter().map(|w| w.counted_bytes).sum();
        Figures {
            children: rates.iter().sum(),
            parent: kib_rate(counted_bytes, parent_seconds),
            min: rates.iter().copied().fold(f64::INFINITY, f64::min),
            max: rates.iter().copied().fold(0.0, f64::max),
            moved_bytes: workers.iter().map(|w| w.moved_bytes).sum(),
            counted_bytes,
            min_xfer_bytes: workers.iter().map(|w| w.counted_bytes).min().unwrap_or(0),
        }
    }
}

fn kib_rate(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / 1024.0 / seconds
    } else {
        0.0
    }
}

/// What one worker did in one phase.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Worker {
    /// Records actually written or read.
    pub records: u64,
    /// Bytes actually written or read, stonewalled or not.
    pub moved_bytes: u64,
    /// Bytes iozone counts: those moved before the stonewall flag.
    pub counted_bytes: u64,
    /// The worker's clock up to the flag or its own end (`-e` flush included).
    pub counted_seconds: f64,
}

impl Worker {
    pub fn kib_per_s(&self) -> f64 {
        kib_rate(self.counted_bytes, self.counted_seconds)
    }
}

/// What every worker of a phase does the same way.
struct Job {
    phase: Phase,
    record: usize,
    records: u64,
    osync: bool,
    flush: bool,
    single: bool,
    stonewall: bool,
}

/// State the workers of a phase share.
struct Shared {
    /// Raised by the first worker to finish (iozone's `stop_flag`).
    stonewall: AtomicBool,
    /// Raised by a worker that failed, so the others stop instead of running on.
    abort: AtomicBool,
    barrier: Barrier,
}

/// A worker that stopped because another one failed; its error is not the one to report.
#[derive(Debug, thiserror::Error)]
#[error("stopped because another worker failed")]
struct SiblingFailed;

/// Opens, waits at the barrier, runs the timed loop, then the untimed close-out.
fn worker(
    job: &Job,
    cpath: &CString,
    path: &Path,
    shared: &Shared,
    ctl: &RunControl,
) -> anyhow::Result<Worker> {
    // The buffer is made before the barrier so the timed loop allocates nothing.
    let opened = open_for(job, cpath, path).map(|fd| (fd, vec![PATTERN; job.record]));
    if opened.is_err() {
        shared.abort.store(true, Ordering::Relaxed);
    }
    shared.barrier.wait();
    let (fd, mut buf) = opened?;
    let outcome = timed_loop(job, fd.as_raw_fd(), &mut buf, path, shared, ctl);
    if outcome.is_err() {
        shared.abort.store(true, Ordering::Relaxed);
    }
    let w = outcome?;
    close_out(job, fd, path)?;
    Ok(w)
}

/// The open sequence of the phase (see the module comment), with the untimed pre-write
/// fsync of single-stream mode.
fn open_for(job: &Job, cpath: &CString, path: &Path) -> Result<OwnedFd, FsOpError> {
    let sync = if job.osync { libc::O_SYNC } else { 0 };
    // O_CLOEXEC changes nothing on disk; it keeps the descriptor out of commands the
    // rig may spawn from another thread meanwhile.
    let base = libc::O_CLOEXEC | sync;
    let flags = match (job.phase, job.single) {
        (Phase::Write, true) => {
            let fd = sys_open(
                cpath,
                path,
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
                "creat",
            )?;
            sys_close(fd, path)?;
            libc::O_RDWR | base
        }
        (Phase::Write, false) => libc::O_RDWR | libc::O_CREAT | base,
        (Phase::Rewrite, _) => libc::O_RDWR | base,
        (Phase::Read | Phase::Reread, _) => libc::O_RDONLY | base,
    };
    let fd = sys_open(cpath, path, flags, "open")?;
    if job.single && job.phase.writes() {
        sys_fsync(fd.as_raw_fd(), path)?;
    }
    Ok(fd)
}

/// The measured part: `records` records, stonewall checks, the `-e` flush.
fn timed_loop(
    job: &Job,
    fd: libc::c_int,
    buf: &mut [u8],
    path: &Path,
    shared: &Shared,
    ctl: &RunControl,
) -> anyhow::Result<Worker> {
    let started = Instant::now();
    let mut w = Worker::default();
    let mut stopped = false;
    for _ in 0..job.records {
        if ctl.stop_requested() {
            return Err(Interrupted.into());
        }
        if shared.abort.load(Ordering::Relaxed) {
            return Err(SiblingFailed.into());
        }
        if job.stonewall && !stopped && shared.stonewall.load(Ordering::Relaxed) {
            take_figures(job, fd, path, started, &mut w)?;
            stopped = true;
            // Initial writers finish the file, since the readers need all of it.
            if job.phase != Phase::Write {
                break;
            }
        }
        if job.phase.writes() {
            write_record(fd, buf, path)?;
        } else {
            read_record(fd, buf, path)?;
        }
        w.records += 1;
        w.moved_bytes += buf.len() as u64;
        if !stopped {
            w.counted_bytes = w.moved_bytes;
        }
    }
    if !stopped {
        take_figures(job, fd, path, started, &mut w)?;
        if job.stonewall {
            shared.stonewall.store(true, Ordering::Relaxed);
        }
    }
    Ok(w)
}

/// Stops the worker's clock, with the `-e` flush of write phases inside it.
#[inline]
fn take_figures(
    job: &Job,
    fd: libc::c_int,
    path: &Path,
    started: Instant,
    w: &mut Worker,
) -> anyhow::Result<()> {
    if job.flush && job.phase.writes() {
        sys_fsync(fd, path)?;
    }
    w.counted_seconds = started.elapsed().as_secs_f64();
    Ok(())
}

/// After the clock: write phases fsync (untimed, with or without `-e`), all close.
fn close_out(job: &Job, fd: OwnedFd, path: &Path) -> Result<(), FsOpError> {
    if job.phase.writes() {
        sys_fsync(fd.as_raw_fd(), path)?;
    }
    sys_close(fd, path)
}

/// One record; a short write (e.g. a full disk) is resumed, as a loop around write(2)
/// must be, and EINTR retried.
#[inline]
fn write_record(fd: libc::c_int, buf: &[u8], path: &Path) -> Result<(), FsOpError> {
    match sys::write_all(fd, buf) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.at(path.to_path_buf())),
    }
}

/// One record; the file was written whole, so an early end of file is an error.
#[inline]
fn read_record(fd: libc::c_int, buf: &mut [u8], path: &Path) -> anyhow::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match sys::read_once(fd, &mut buf[done..]) {
            Ok(0) => bail!(
                "read {}: unexpected end of file (the file is shorter than written)",
                path.display()
            ),
            Ok(n) => done += n,
            Err(e) => return Err(e.at(path.to_path_buf()).into()),
        }
    }
    Ok(())
}

fn sys_open(
    cpath: &CString,
    path: &Path,
    flags: libc::c_int,
    op: &'static str,
) -> Result<OwnedFd, FsOpError> {
    // SAFETY: `cpath` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::open(cpath.as_ptr(), flags, 0o640 as libc::c_uint) };
    if fd < 0 {
        return Err(SysError::last(op).at(path.to_path_buf()));
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sys_fsync(fd: libc::c_int, path: &Path) -> Result<(), FsOpError> {
    // SAFETY: plain system call on a descriptor we hold.
    if unsafe { libc::fsync(fd) } != 0 {
        return Err(SysError::last("fsync").at(path.to_path_buf()));
    }
    Ok(())
}

/// Closes and reports the error (a delayed write error can surface here), which
/// dropping an OwnedFd would swallow.
fn sys_close(fd: OwnedFd, path: &Path) -> Result<(), FsOpError> {
    // SAFETY: we own the descriptor and give it up here.
    if unsafe { libc::close(fd.into_raw_fd()) } != 0 {
        return Err(SysError::last("close").at(path.to_path_buf()));
    }
    Ok(())
}

fn syncfs(dir: &Path) -> anyhow::Result<()> {
    let d = std::fs::File::open(dir)
        .with_context(|| format!("cannot open {} for syncfs", dir.display()))?;
    nix::unistd::syncfs(d.as_raw_fd()).with_context(|| format!("syncfs {}", dir.display()))
}

/// Removes the run's files, those already gone included; tries every one.
fn remove_files(paths: &[PathBuf]) -> anyhow::Result<()> {
    let left: Vec<String> = paths
        .iter()
        .filter_map(|p| match std::fs::remove_file(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Some(format!("{}: {e}", p.display()))
            }
            _ => None,
        })
        .collect();
    if left.is_empty() {
        Ok(())
    } else {
        bail!("cannot remove {}", left.join("; "))
    }
}

fn c_path(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| anyhow::anyhow!("path {} contains a NUL byte", p.display()))
}

/// The first real error: one a worker met itself, not a stop because a sibling failed.
fn first_error(outcomes: Vec<anyhow::Result<Worker>>) -> anyhow::Result<Vec<Worker>> {
    let mut sibling = None;
    let mut ok = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        match o {
            Ok(w) => ok.push(w),
            Err(e) if e.downcast_ref::<SiblingFailed>().is_some() => sibling = Some(e),
            Err(e) => return Err(e),
        }
    }
    match sibling {
        Some(e) => Err(e),
        None => Ok(ok),
    }
}

// ---------------------------------------------------------------------------------
// Sizes, spec tables and the command line.

/// iozone's `-s`/`-r` units: a bare number is KiB; `k`, `m`, `g` suffixes (any case)
/// are KiB, MiB, GiB. `4m` = 4 MiB, `75m`, `1g`, `512` = 512 KiB.
pub fn parse_iozone_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_lowercase() {
                'k' => 10,
                'm' => 20,
                'g' => 30,
                _ => {
                    return Err(format!(
                        "`{text}`: unknown unit `{c}` (iozone takes k, m or g)"
                    ))
                }
            };
            (&t[..i], shift)
        }
        _ => (t, 10),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (use e.g. 512, 4k, 75m, 1g)"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// A byte count in iozone's own units, as its command line takes it.
pub fn iozone_size(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{}g", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{}m", bytes >> 20)
    } else if bytes.is_multiple_of(1 << 10) {
        format!("{}k", bytes >> 10)
    } else {
        // iozone cannot express it; the KiB figure it would round to, marked.
        format!("{}k(+{}B)", bytes >> 10, bytes % 1024)
    }
}

/// A size for `params()`: the compact string when it parses back exactly, else bytes.
fn size_param(bytes: u64) -> serde_json::Value {
    let s = format_size(bytes);
    if parse_size(&s) == Ok(bytes) {
        serde_json::Value::String(s)
    } else {
        serde_json::Value::from(bytes)
    }
}

/// `tests = ["write", "read"]`: iozone's `-i 0` and `-i 1`.
fn table_tests(t: &toml::Table) -> Result<(bool, bool), ParamError> {
    let Some(v) = t.get("tests") else {
        return Ok((true, true));
    };
    let bad = || {
        ParamError::new(
            "tests",
            format!("expected a list of \"write\" and \"read\", found {v}"),
        )
    };
    let list = v.as_array().ok_or_else(bad)?;
    let (mut write, mut read) = (false, false);
    for item in list {
        let slot = match item.as_str() {
            Some("write") => &mut write,
            Some("read") => &mut read,
            _ => return Err(bad()),
        };
        if *slot {
            return Err(ParamError::new("tests", format!("{item} is listed twice")));
        }
        *slot = true;
    }
    Ok((write, read))
}

/// Keys of a `kind = "iozone"` table.
pub const KEYS: [&str; 7] = [
    "record",
    "size",
    "tests",
    "osync",
    "flush",
    "threads",
    "stonewall",
];

impl Iozone {
    pub fn from_table(t: &toml::Table) -> Result<Self, ParamError> {
        super::reject_unknown(t, &KEYS)?;
        let d = Iozone::default();
        let (write, read) = table_tests(t)?;
        let threads = super::table_u64(t, "threads", u64::from(d.threads))?;
        let io = Iozone {
            record: table_size(t, "record", d.record)?,
            size: table_size(t, "size", d.size)?,
            write,
            read,
            osync: table_bool(t, "osync", d.osync)?,
            flush: table_bool(t, "flush", d.flush)?,
            threads: u32::try_from(threads)
                .map_err(|_| ParamError::new("threads", format!("{threads} is too large")))?,
            stonewall: table_bool(t, "stonewall", d.stonewall)?,
        };
        io.validate()?;
        Ok(io)
    }
}

pub fn from_table(t: &toml::Table) -> Result<Arc<dyn Workload>, ParamError> {
    Ok(Arc::new(Iozone::from_table(t)?))
}

impl Workload for Iozone {
    fn kind(&self) -> &'static str {
        "iozone"
    }

    fn params(&self) -> serde_json::Value {
        let tests: Vec<&str> = [(self.write, "write"), (self.read, "read")]
            .into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect();
        serde_json::json!({
            "record": size_param(self.record),
            "size": size_param(self.size),
            "tests": tests,
            "osync": self.osync,
            "flush": self.flush,
            "threads": self.threads,
            "stonewall": self.stonewall,
        })
    }

    fn default_name(&self) -> String {
        let mut s = format!(
            "iozone-r{}-s{}",
            format_size(self.record),
            format_size(self.size)
        );
        if self.osync {
            s.push_str("-o");
        }
        if self.flush {
            s.push_str("-e");
        }
        if self.throughput_mode() {
            let _ = write!(s, "-t{}", self.threads);
        }
        s
    }

    fn phase_names(&self) -> Vec<&'static str> {
        self.phases().into_iter().map(Phase::name).collect()
    }

    fn peak_data_bytes(&self) -> u64 {
        u64::from(self.threads).saturating_mul(self.size)
    }

    fn peak_inodes(&self) -> u64 {
        u64::from(self.threads)
    }

    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        self.run_in(dir, ctl, false)
    }
}

/// Command-line arguments of `jbench workload iozone`, named as iozone's flags.
#[derive(Debug, clap::Args)]
pub struct CliArgs {
    /// Directory to work in (must exist; files iozone.tmp or iozone.DUMMY.<i> go inside).
    #[arg(long)]
    pub dir: std::path::PathBuf,
    /// Record size (iozone -r): a bare number is KiB; k, m, g suffixes (4m, 1g).
    #[arg(short = 'r', default_value = "4k", value_parser = parse_iozone_size)]
    pub record: u64,
    /// File size per worker (iozone -s): a bare number is KiB; k, m, g suffixes (75m).
    #[arg(short = 's', default_value = "512k", value_parser = parse_iozone_size)]
    pub size: u64,
    /// Test to run, repeatable (iozone -i): 0 = write/rewrite, 1 = read/re-read
    /// [default: -i 0 -i 1].
    #[arg(short = 'i', value_parser = clap::value_parser!(u8).range(0..=1))]
    pub tests: Vec<u8>,
    /// O_SYNC on every open (iozone -o).
    #[arg(short = 'o')]
    pub osync: bool,
    /// Include fsync in the write timings (iozone -e).
    #[arg(short = 'e')]
    pub flush: bool,
    /// Throughput mode with N workers on N files (iozone -t); -t 1 is single-stream.
    #[arg(short = 't', value_name = "N")]
    pub threads: Option<u32>,
    /// Turn off stonewalling (iozone -x).
    #[arg(short = 'x')]
    pub no_stonewall: bool,
    /// Do not remove the files at the end (iozone -w).
    #[arg(short = 'w')]
    pub keep: bool,
    /// Print the phases as JSON instead of the report.
    #[arg(long)]
    pub json: bool,
}

impl CliArgs {
    pub fn to_iozone(&self) -> Iozone {
        let tests = if self.tests.is_empty() {
            &[0, 1][..]
        } else {
            &self.tests[..]
        };
        Iozone {
            record: self.record,
            size: self.size,
            write: tests.contains(&0),
            read: tests.contains(&1),
            osync: self.osync,
            flush: self.flush,
            threads: self.threads.unwrap_or(1),
            stonewall: !self.no_stonewall,
        }
    }
}

pub fn run_cli(args: &CliArgs, ctl: &RunControl) -> anyhow::Result<()> {
    super::require_dir(&args.dir)?;
    let io = args.to_iozone();
    io.validate()
        .map_err(|e| anyhow::anyhow!("{}: {}", cli_flag(&e.key), e.message))?;
    if let Some(w) = io.size_warning() {
        eprintln!("jbench: warning: {w}");
    }
    let results = io.run_in(&args.dir, ctl, args.keep)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        print!("{}", report(&io, &results));
    }
    Ok(())
}

fn cli_flag(key: &str) -> &'static str {
    match key {
        "record" => "-r",
        "size" => "-s",
        "threads" => "-t",
        "tests" => "-i",
        _ => "iozone",
    }
}

/// An iozone-like block: its header lines, then its single-stream table or its
/// throughput-mode figures, then precise figures iozone does not print.
pub fn report(io: &Iozone, results: &[PhaseResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\tIozone: Performance Test of File I/O (jbench native, iozone {IOZONE_VERSION} semantics)\n\
         \n\tCommand line used: {}\n\tOutput is in kBytes/sec",
        io.command_line()
    );
    if io.osync {
        out.push_str("\tSYNC Mode. \n");
    }
    if io.flush {
        out.push_str("\tInclude fsync in write timing\n");
    }
    let _ = writeln!(
        out,
        "\tRecord Size {} kB\n\tFile size set to {} kB",
        io.record / 1024,
        io.size / 1024
    );
    if let Some(w) = io.size_warning() {
        let _ = writeln!(out, "\tWarning: {w}");
    }
    if io.throughput_mode() {
        throughput_block(io, results, &mut out);
    } else {
        single_stream_table(io, results, &mut out);
    }
    out.push_str("\n\tphase       seconds   records   KiB moved      KiB/s\n");
    for r in results {
        let _ = writeln!(
            out,
            "\t{:<9} {:>9.3} {:>9} {:>11} {:>10.1}",
            r.name,
            r.seconds,
            r.ops,
            r.bytes / 1024,
            r.kib_per_sec()
        );
    }
    out
}

fn counter(r: &PhaseResult, key: &str) -> u64 {
    r.counters.get(key).copied().unwrap_or(0)
}

fn single_stream_table(io: &Iozone, results: &[PhaseResult], out: &mut String) {
    out.push_str("\n              kB  reclen");
    for r in results {
        let _ = write!(out, " {:>8}", r.name);
    }
    let _ = write!(out, "\n{:>16}{:>8}", io.size / 1024, io.record / 1024);
    for r in results {
        let _ = write!(out, " {:>8}", counter(r, "children_kib_per_s"));
    }
    out.push('\n');
}

fn throughput_block(io: &Iozone, results: &[PhaseResult], out: &mut String) {
    let n = io.threads;
    let _ = writeln!(
        out,
        "\tThroughput test with {n} threads\n\tEach thread writes a {} kByte file in {} kByte records",
        io.size / 1024,
        io.record / 1024
    );
    let phase = |name: &str| Phase::ALL.into_iter().find(|p| p.name() == name);
    for r in results {
        let label = phase(&r.name).map_or("?", Phase::iozone_label);
        let c = |k| counter(r, k) as f64;
        let _ = write!(
            out,
            "\n\tChildren see throughput for {n:2} {label:<15} = {:10.2} kB/sec\n\
             \tParent sees throughput for {n:2} {label:<16} = {:10.2} kB/sec\n\
             \tMin throughput per thread \t\t\t= {:10.2} kB/sec \n\
             \tMax throughput per thread \t\t\t= {:10.2} kB/sec\n\
             \tAvg throughput per thread \t\t\t= {:10.2} kB/sec\n\
             \tMin xfer \t\t\t\t\t= {:10.2} kB\n",
            c("children_kib_per_s"),
            c("parent_kib_per_s"),
            c("min_kib_per_s"),
            c("max_kib_per_s"),
            c("children_kib_per_s") / f64::from(n),
            c("min_xfer_kib"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::testutil::{snapshot, stop_at, SmallFs};
    use nix::errno::Errno;
    use std::os::unix::fs::MetadataExt;

    fn io(record: u64, size: u64, threads: u32) -> Iozone {
        Iozone {
            record,
            size,
            threads,
            ..Iozone::default()
        }
    }

    fn scratch() -> tempfile::TempDir {
        std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
        tempfile::Builder::new()
            .prefix("iozone-")
            .tempdir_in("/var/tmp/jbench-tests")
            .unwrap()
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn records_are_whole_and_the_tail_is_warned_about() {
        let exact = io(4 << 20, 75 << 20, 1);
        assert_eq!(exact.records(), 18);
        assert_eq!(exact.file_bytes(), 72 << 20);
        assert_eq!(exact.remainder(), 3 << 20);
        let w = exact.size_warning().unwrap();
        assert!(w.contains("18 whole records"), "{w}");
        assert!(w.contains("3145728 bytes"), "{w}");
        let even = io(4 << 20, 256 << 20, 1);
        assert_eq!(even.records(), 64);
        assert!(even.size_warning().is_none());
        assert_eq!(io(3, 10, 1).records(), 3);
    }

    #[test]
    fn iozone_sizes_parse_in_kib_by_default() {
        assert_eq!(parse_iozone_size("512").unwrap(), 512 << 10);
        assert_eq!(parse_iozone_size("4k").unwrap(), 4 << 10);
        assert_eq!(parse_iozone_size("4m").unwrap(), 4 << 20);
        assert_eq!(parse_iozone_size("75M").unwrap(), 75 << 20);
        assert_eq!(parse_iozone_size("1g").unwrap(), 1 << 30);
        assert!(parse_iozone_size("4q")
            .unwrap_err()
            .contains("unknown unit"));
        assert!(parse_iozone_size("m").is_err());
        assert!(parse_iozone_size("").is_err());
        assert_eq!(iozone_size(75 << 20), "75m");
        assert_eq!(iozone_size(1 << 30), "1g");
        assert_eq!(iozone_size(1536), "1k(+512B)");
    }

    #[test]
    fn command_line_flags_parse_like_iozone() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            a: CliArgs,
        }
        let w = Wrap::try_parse_from([
            "x", "--dir", "/tmp", "-r", "4m", "-s", "75m", "-i", "0", "-i1", "-o", "-e", "-t", "6",
        ])
        .unwrap();
        let got = w.a.to_iozone();
        assert_eq!(
            got,
            Iozone {
                record: 4 << 20,
                size: 75 << 20,
                write: true,
                read: true,
                osync: true,
                flush: true,
                threads: 6,
                stonewall: true,
            }
        );
        assert_eq!(
            got.command_line(),
            "iozone -r 4m -s 75m -i 0 -i 1 -o -e -t 6"
        );
        let d = Wrap::try_parse_from(["x", "--dir", "/tmp", "-i", "0", "-x", "--json"]).unwrap();
        assert_eq!(
            d.a.to_iozone(),
            Iozone {
                read: false,
                stonewall: false,
                ..Iozone::default()
            }
        );
        assert!(d.a.json);
        assert!(Wrap::try_parse_from(["x", "--dir", "/tmp", "-i", "2"]).is_err());
        assert!(Wrap::try_parse_from(["x", "--dir", "/tmp", "-s", "75x"]).is_err());
    }

    #[test]
    fn spec_table_parses_validates_and_round_trips_params() {
        let t = table(
            r#"kind = "iozone"
            name = "x"
            record = "4M"
            size = 78643200
            tests = ["write", "read"]
            osync = true
            flush = true
            threads = 6"#,
        );
        let parsed = Iozone::from_table(&t).unwrap();
        assert_eq!(parsed.record, 4 << 20);
        assert_eq!(parsed.size, 75 << 20);
        assert!(parsed.osync && parsed.flush && parsed.stonewall);
        assert_eq!(parsed.threads, 6);
        for case in [
            parsed,
            io(1000, 123_457, 3),
            Iozone {
                read: false,
                ..Iozone::default()
            },
        ] {
            let p = case.params();
            let back: toml::Table = toml::from_str(&toml::to_string(&p).unwrap()).unwrap();
            assert_eq!(Iozone::from_table(&back).unwrap(), case, "{p}");
        }
        assert_eq!(parsed.params()["record"], "4M");
        assert_eq!(parsed.params()["size"], "75M");
        let w = Iozone::default();
        assert_eq!(w.phase_names(), ["write", "rewrite", "read", "reread"]);
        assert_eq!(parsed.peak_data_bytes(), 6 * (75 << 20));
        assert_eq!(parsed.peak_inodes(), 6);
        assert_eq!(parsed.default_name(), "iozone-r4M-s75M-o-e-t6");
    }

    #[test]
    fn spec_table_errors_name_the_key() {
        let err = |text: &str| Iozone::from_table(&table(text)).unwrap_err().key;
        assert_eq!(err("blocks = 3"), "blocks");
        assert_eq!(err("record = \"4Q\""), "record");
        assert_eq!(err("record = 0"), "record");
        assert_eq!(err("size = 100\nrecord = 4096"), "size");
        assert_eq!(err("threads = 0"), "threads");
        assert_eq!(err("tests = [\"read\"]"), "tests");
        assert_eq!(err("tests = [\"write\", \"write\"]"), "tests");
        assert_eq!(err("tests = [2]"), "tests");
        assert_eq!(err("osync = 1"), "osync");
        assert!(from_table(&table("kind = \"iozone\"\ndurable = true")).is_ok());
    }

    #[test]
    fn single_stream_run_moves_whole_records_and_cleans_up() {
        let dir = scratch();
        // 10 KiB in 4 KiB records: two records, 2 KiB never touched.
        let io = io(4096, 10 * 1024, 1);
        let results = io.run_in(dir.path(), &RunControl::new(), true).unwrap();
        let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["write", "rewrite", "read", "reread"]);
        for r in &results {
            assert_eq!((r.ops, r.bytes), (2, 8192), "{}", r.name);
            assert_eq!(r.counters["kib_moved"], 8);
            assert_eq!(r.counters["size_remainder_bytes"], 2048);
            assert!(r.seconds > 0.0);
            assert!(r.counters["children_kib_per_s"] > 0);
        }
        let meta = std::fs::metadata(dir.path().join(SINGLE_FILE)).unwrap();
        assert_eq!(meta.size(), 8192);
        let data = std::fs::read(dir.path().join(SINGLE_FILE)).unwrap();
        assert!(data.iter().all(|&b| b == PATTERN));
        // A file the run did not make is refused and left as it was.
        let err = io.run(dir.path(), &RunControl::new()).unwrap_err();
        assert!(format!("{err:#}").contains("already exists"), "{err:#}");
        assert_eq!(std::fs::read(dir.path().join(SINGLE_FILE)).unwrap(), data);
        // The Workload entry point removes its file.
        std::fs::remove_file(dir.path().join(SINGLE_FILE)).unwrap();
        io.run(dir.path(), &RunControl::new()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn throughput_mode_with_three_workers() {
        let dir = scratch();
        let io = Iozone {
            stonewall: false,
            ..io(8192, 64 * 1024, 3)
        };
        let results = io.run_in(dir.path(), &RunControl::new(), true).unwrap();
        for r in &results {
            assert_eq!((r.ops, r.bytes), (24, 3 * 65536), "{}", r.name);
            assert_eq!(r.counters["kib_counted"], 192);
            assert_eq!(r.counters["threads"], 3);
            let (c, p) = (
                r.counters["children_kib_per_s"],
                r.counters["parent_kib_per_s"],
            );
            assert!(c > 0 && p > 0, "{r:?}");
        }
        for i in 0..3 {
            let m = std::fs::metadata(dir.path().join(format!("iozone.DUMMY.{i}"))).unwrap();
            assert_eq!(m.size(), 65536);
        }
        // The throughput writer does not truncate, so it refuses leftover files.
        let err = io
            .run_in(dir.path(), &RunControl::new(), false)
            .unwrap_err();
        assert!(format!("{err:#}").contains("already exists"), "{err:#}");
    }

    #[test]
    fn stonewalling_counts_only_until_the_first_worker_ends() {
        let dir = scratch();
        let io = io(4096, 256 * 1024, 4);
        let results = io.run_in(dir.path(), &RunControl::new(), false).unwrap();
        let write = &results[0];
        // Initial writers always finish their files.
        assert_eq!(write.bytes, 4 * 256 * 1024);
        for r in &results {
            assert!(r.counters["kib_counted"] <= r.bytes / 1024, "{r:?}");
            assert!(
                r.counters["kib_counted"] >= 256,
                "the first worker counts all: {r:?}"
            );
        }
    }

    /// The access-mode and status flags of the open descriptors on `name`.
    fn open_flags_of(name: &str) -> Vec<i32> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
            let Ok(target) = std::fs::read_link(e.path()) else {
                continue;
            };
            if !target.to_string_lossy().ends_with(name) {
                continue;
            }
            let fd = e.file_name().to_string_lossy().into_owned();
            let info =
                std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap_or_default();
            if let Some(l) = info.lines().find(|l| l.starts_with("flags:")) {
                out.push(i32::from_str_radix(l[6..].trim(), 8).unwrap());
            }
        }
        out
    }

    #[test]
    fn osync_flag_is_on_every_open() {
        let dir = scratch();
        let path = dir.path().join("probe");
        let cpath = c_path(&path).unwrap();
        for phase in Phase::ALL {
            for single in [true, false] {
                let job = Job {
                    phase,
                    record: 4096,
                    records: 1,
                    osync: true,
                    flush: false,
                    single,
                    stonewall: false,
                };
                let fd = open_for(&job, &cpath, &path).unwrap();
                let flags = open_flags_of("/probe");
                assert_eq!(flags.len(), 1);
                assert_eq!(flags[0] & libc::O_SYNC, libc::O_SYNC, "{phase:?} {single}");
                drop(fd);
                let plain = Job {
                    osync: false,
                    ..job
                };
                let fd = open_for(&plain, &cpath, &path).unwrap();
                assert_eq!(open_flags_of("/probe")[0] & libc::O_SYNC, 0);
                drop(fd);
            }
        }
    }

    #[test]
    fn full_disk_removes_the_files() {
        let Some(fs) = SmallFs::new("iozone full_disk_removes_the_files", "1m") else {
            return;
        };
        std::fs::write(fs.path().join("keep"), b"mine").unwrap();
        let before = snapshot(fs.path());
        for threads in [1, 3] {
            let err = io(64 << 10, 1 << 20, threads)
                .run(fs.path(), &RunControl::new())
                .unwrap_err();
            let os = err.downcast_ref::<FsOpError>().expect("an FsOpError");
            assert_eq!(os.errno, Errno::ENOSPC, "{err:#}");
            assert!(format!("{err:#}").contains("was removed"), "{err:#}");
            assert_eq!(snapshot(fs.path()), before, "-t {threads}");
        }
        // With -w the files stay, and the error says where.
        let err = io(64 << 10, 1 << 20, 1)
            .run_in(fs.path(), &RunControl::new(), true)
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("kept as -w asks"), "{text}");
        assert!(
            text.contains(&fs.path().join(SINGLE_FILE).display().to_string()),
            "{text}"
        );
    }

    #[test]
    fn interrupt_removes_the_files() {
        for phase in ["rewrite", "read", "reread"] {
            for threads in [1, 2] {
                let dir = scratch();
                std::fs::write(dir.path().join("iozone.tmp.not"), b"mine").unwrap();
                let before = snapshot(dir.path());
                let err = io(4096, 64 << 10, threads)
                    .run(dir.path(), &stop_at(phase))
                    .unwrap_err();
                assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
                assert_eq!(snapshot(dir.path()), before, "{phase} -t {threads}");
            }
        }
    }

    #[test]
    fn command_line_refuses_a_missing_dir() {
        let dir = scratch();
        let missing = dir.path().join("nope");
        let args = CliArgs {
            dir: missing.clone(),
            record: 4096,
            size: 8192,
            tests: vec![],
            osync: false,
            flush: false,
            threads: None,
            no_stonewall: false,
            keep: false,
            json: false,
        };
        let err = run_cli(&args, &RunControl::new()).unwrap_err();
        assert!(
            err.to_string()
                .contains("is not a directory; create it first"),
            "{err:#}"
        );
        assert!(!missing.exists());
    }

    #[test]
    fn stop_request_interrupts() {
        let dir = scratch();
        let ctl = RunControl::new();
        ctl.request_stop();
        let err = io(4096, 8192, 2).run(dir.path(), &ctl).unwrap_err();
        assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
    }

    #[test]
    fn errors_name_the_call_path_and_errno() {
        let dir = scratch();
        let missing = dir.path().join("missing");
        let err = io(4096, 8192, 2)
            .run(&missing, &RunControl::new())
            .unwrap_err();
        let fs = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(fs.errno, Errno::ENOENT);
        let text = format!("{err:#}");
        assert!(text.contains("missing/iozone.DUMMY."), "{text}");
        assert!(text.contains("No such file or directory"), "{text}");
        assert!(text.contains("iozone phase write"), "{text}");
    }

    #[test]
    fn report_block_has_iozone_labels() {
        let dir = scratch();
        let single = io(4096, 16384, 1);
        let rs = single.run(dir.path(), &RunControl::new()).unwrap();
        let text = report(&single, &rs);
        assert!(
            text.contains("Command line used: iozone -r 4k -s 16k -i 0 -i 1"),
            "{text}"
        );
        assert!(
            text.contains("kB  reclen    write  rewrite     read   reread"),
            "{text}"
        );
        let multi = Iozone {
            osync: true,
            flush: true,
            ..io(4096, 16384, 2)
        };
        let rs = multi.run(dir.path(), &RunControl::new()).unwrap();
        let text = report(&multi, &rs);
        for l in [
            "Children see throughput for  2 initial writers",
            "Parent sees throughput for  2 re-readers",
            "SYNC Mode.",
            "Include fsync in write timing",
            "Min xfer",
        ] {
            assert!(text.contains(l), "{l}\n{text}");
        }
    }
}
