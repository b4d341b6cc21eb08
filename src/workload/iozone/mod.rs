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
//!   open their file, then wait at the start line (`start_line.rs`) and start together;
//!   the parent clock starts before the start signal and runs until every worker has
//!   exited.
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
//!
//! Here: the run, its phases and their results; `worker.rs` one worker's timed loop
//! and system calls, `params.rs` sizes and the spec table, `cli.rs` the command line
//! and its iozone-like block.

use std::ffi::CString;
use std::fmt::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};

use super::start_line::StartLine;
use super::sys::{self, FsOpError, SysError};
use super::{table_bool, table_size, Interrupted, ParamError, PhaseResult, RunControl, Workload};
use crate::units::{format_size, parse_size};

pub mod kind;
mod worker;
pub use worker::*;
mod params;
pub use params::*;
mod cli;
pub use cli::*;

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
        // The crash lab must not count the removal of promised files as a loss.
        if !keep && ctl.marks() {
            ctl.mark("phase remove");
        }
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
            start_line: StartLine::new(cpaths.len()),
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
            // Once every worker has opened its file (or failed to), start the clock,
            // then the workers together, as iozone's parent does with CHILD_STATE_BEGIN.
            let started = shared.start_line.start(ctl, phase.name());
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

#[cfg(test)]
mod tests;
