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
//!
//! Here: the spec, its limits and the timed phases; `files.rs` the directory tree and
//! the calls of one durable file, `tally.rs` the workers' counts and histograms,
//! `cli.rs` the command line and its table.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use nix::errno::Errno;

use super::start_line::StartLine;
use super::sys::{self, FsOpError, SysError};
use super::{
    reject_unknown, table_bool, table_size, table_u64, Interrupted, Latency, ParamError,
    PhaseResult, RunControl, Workload,
};
use crate::units::{format_size, parse_size};

pub mod kind;
mod tally;
use tally::*;
mod files;
pub use files::*;
mod cli;
pub use cli::*;

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
        let start_line = StartLine::new(self.threads as usize);
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
            // The clock starts before any worker can run, and stops after every one
            // is joined; nothing runs while the monitor samples.
            let started = start_line.start(ctl, phase.name());
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
        // With a write log every file gets its own stamped content, so the crash lab
        // can tell its blocks from others': one buffer per thread, restamped per file
        // (a copy, no allocation), and nothing of it without a write log.
        let marks = halt.ctl.marks();
        let plain = if marks {
            self.file_content()
        } else {
            Vec::new()
        };
        let mut own = plain.clone();
        for i in 0..self.files {
            if halt.check()? {
                return Ok(());
            }
            let d = (i % self.dirs) as usize;
            let dirfd = t.subdirs[d].as_raw_fd();
            name.set(i);
            let path = marks.then(|| t.file_path(d, i));
            if let Some(p) = &path {
                own.copy_from_slice(&plain);
                stamp(&mut own, content_key(p), 0);
            }
            let op_started = Instant::now();
            let writes = if marks {
                create_one_with(dirfd, &name, &own, self.write_size)
            } else {
                create_one(dirfd, &name, buffer, self.size, self.write_size)
            }
            .map_err(|e| e.at(t.file_path(d, i)))?;
            if self.fsync_dir {
                // SAFETY: `dirfd` is the open directory this thread creates its files in.
                sys::check(unsafe { libc::fsync(dirfd) }, "fsync")
                    .map_err(|e| e.at(t.subdir_path(d)))?;
                tally.dir_fsyncs += 1;
            }
            tally.record(op_started);
            if let Some(p) = &path {
                halt.ctl.mark(&format!("fsync {}", p.display()));
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

impl FsyncSpec {
    /// The bytes every file holds once its fsync returned in a run without a write
    /// log (the same bytes in every file).
    pub fn file_content(&self) -> Vec<u8> {
        let buffer = fill_buffer(self.buffer_len());
        let mut out = Vec::with_capacity(self.size as usize);
        let mut left = self.size;
        while left > 0 {
            let chunk = left.min(self.write_size) as usize;
            out.extend_from_slice(&buffer[..chunk]);
            left -= chunk as u64;
        }
        out
    }

    /// The bytes the file at `path` holds once its fsync returned in a run that keeps
    /// a write log: [`Self::file_content`] with every 4 KiB block of the file stamped
    /// with the file's identity and the block's offset ([`stamp`]), so that a block of
    /// another file, a block moved inside the file, or a stale block of a removed file
    /// reads as different, not as the same bytes.
    pub fn file_content_of(&self, path: &Path) -> Vec<u8> {
        let mut out = self.file_content();
        stamp(&mut out, content_key(path), 0);
        out
    }

    /// The spec back from its recorded `params` (trials.jsonl), for the crash lab.
    pub fn from_params(params: &serde_json::Value) -> Option<Self> {
        let get = |k: &str| params.get(k).and_then(serde_json::Value::as_u64);
        Some(FsyncSpec {
            files: get("files")?,
            size: get("size")?,
            dirs: get("dirs")?,
            threads: get("threads")?,
            fsync_dir: params.get("fsync_dir")?.as_bool()?,
            write_size: get("write_size")?,
        })
    }
}

/// Bytes of a file stamped at each 4 KiB block: a file's blocks are its file system's.
pub const STAMP_BLOCK: u64 = 4096;

/// A file's identity in its stamps: its last three path components (`tT/dD/fI`, the
/// same in the recording and below any mount point), hashed (FNV-1a, stable across
/// Rust versions).
pub fn content_key(path: &Path) -> u64 {
    let comps: Vec<_> = path.components().collect();
    let tail = &comps[comps.len().saturating_sub(3)..];
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for c in tail {
        for b in c.as_os_str().as_encoded_bytes().iter().chain(b"/") {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Writes `key` and the file offset into the first 16 bytes of every 4 KiB block of
/// the file that starts inside `buf`, which holds the file's bytes from `file_offset`.
pub fn stamp(buf: &mut [u8], key: u64, file_offset: u64) {
    let mut o = file_offset.div_ceil(STAMP_BLOCK) * STAMP_BLOCK;
    while o < file_offset + buf.len() as u64 {
        let at = (o - file_offset) as usize;
        let mut tag = [0u8; 16];
        tag[..8].copy_from_slice(&key.to_le_bytes());
        tag[8..].copy_from_slice(&o.to_le_bytes());
        let n = (buf.len() - at).min(16);
        buf[at..at + n].copy_from_slice(&tag[..n]);
        o += STAMP_BLOCK;
    }
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

    fn phase_names(&self) -> Vec<String> {
        Phase::ALL.iter().map(|p| p.name().to_string()).collect()
    }

    fn peak_data_bytes(&self) -> u64 {
        self.total_bytes()
    }

    fn peak_inodes(&self) -> u64 {
        self.dir_count().saturating_add(self.total_files())
    }

    /// Every file's data reaches the disk on its own before the fsync's commit.
    fn work(&self) -> crate::workload::work::Work {
        let files = self.total_files();
        crate::workload::work::Work {
            // An fsync's simulated cost includes its first data block. The directory's
            // fsync finds its change already committed with the file's (measured: 200
            // files take 6.3 s on hdd-7200 with and without fsync_dir).
            syncs: files,
            random_writes: files.saturating_mul(self.size.div_ceil(4096).saturating_sub(1)),
            metadata_ops: self.peak_inodes().saturating_mul(2),
            ..Default::default()
        }
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

#[cfg(test)]
mod tests;
