//! One worker of a phase: its open sequence, the timed loop of records with its
//! stonewall checks, the untimed close-out, and the figures it hands back. Records go
//! through the engines' shared [`sys`] layer.

use super::*;

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
    pub(super) fn new(workers: &[Worker], parent_seconds: f64) -> Self {
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

pub(super) fn kib_rate(bytes: u64, seconds: f64) -> f64 {
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
pub(super) struct Job {
    pub(super) phase: Phase,
    pub(super) record: usize,
    pub(super) records: u64,
    pub(super) osync: bool,
    pub(super) flush: bool,
    pub(super) single: bool,
    pub(super) stonewall: bool,
}

/// State the workers of a phase share.
pub(super) struct Shared {
    /// Raised by the first worker to finish (iozone's `stop_flag`).
    pub(super) stonewall: AtomicBool,
    /// Raised by a worker that failed, so the others stop instead of running on.
    pub(super) abort: AtomicBool,
    pub(super) start_line: StartLine,
}

/// A worker that stopped because another one failed; its error is not the one to report.
#[derive(Debug, thiserror::Error)]
#[error("stopped because another worker failed")]
pub(super) struct SiblingFailed;

/// Opens, waits at the start line, runs the timed loop, then the untimed close-out.
pub(super) fn worker(
    job: &Job,
    cpath: &CString,
    path: &Path,
    shared: &Shared,
    ctl: &RunControl,
) -> anyhow::Result<Worker> {
    // The buffer is made before the start line so the timed loop allocates nothing.
    let opened = open_for(job, cpath, path).map(|fd| (fd, vec![PATTERN; job.record]));
    if opened.is_err() {
        shared.abort.store(true, Ordering::Relaxed);
    }
    shared.start_line.wait();
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
pub(super) fn open_for(job: &Job, cpath: &CString, path: &Path) -> Result<OwnedFd, FsOpError> {
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
pub(super) fn timed_loop(
    job: &Job,
    fd: libc::c_int,
    buf: &mut [u8],
    path: &Path,
    shared: &Shared,
    ctl: &RunControl,
) -> anyhow::Result<Worker> {
    // With O_SYNC a write is durable when it returns: a promise the crash lab
    // checks, with bytes it can predict (see `stamp`).
    let promise = job.osync && job.phase.writes() && ctl.marks();
    let id = promise.then(|| file_id(path)).flatten();
    let mut offset = 0u64;
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
            if let Some(id) = id {
                // Records that are not whole blocks put the stamps elsewhere each time.
                if !(buf.len() as u64).is_multiple_of(STAMP_BLOCK) {
                    buf.fill(PATTERN);
                }
                stamp(buf, id, offset);
            }
            write_record(fd, buf, path)?;
            if id.is_some() {
                ctl.mark(&crate::workload::durable_range_label(
                    path,
                    offset,
                    buf.len() as u64,
                ));
            }
            offset += buf.len() as u64;
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

/// The first bytes of every 4 KiB block of a file written while the crash lab
/// records: `jbIZ`, the file's number (u32 LE) and the block's offset (u64 LE), so
/// a block misdirected, swapped or left stale is told apart. The rest is `PATTERN`.
pub const STAMP_LEN: usize = 16;

/// Blocks stamped: the crash lab's unit of misplacement.
pub const STAMP_BLOCK: u64 = 4096;

fn stamp_of(id: u32, block: u64) -> [u8; STAMP_LEN] {
    let mut s = [0u8; STAMP_LEN];
    s[..4].copy_from_slice(b"jbIZ");
    s[4..8].copy_from_slice(&id.to_le_bytes());
    s[8..].copy_from_slice(&block.to_le_bytes());
    s
}

/// Stamps the blocks of file `id` that a write of `buf` at `offset` covers.
pub fn stamp(buf: &mut [u8], id: u32, offset: u64) {
    let end = offset + buf.len() as u64;
    let mut block = offset.div_ceil(STAMP_BLOCK) * STAMP_BLOCK;
    while block < end {
        let at = (block - offset) as usize;
        let n = STAMP_LEN.min(buf.len() - at);
        buf[at..at + n].copy_from_slice(&stamp_of(id, block)[..n]);
        block += STAMP_BLOCK;
    }
}

/// What bytes `[offset, offset + len)` of file `id` hold after stamped writes.
pub fn stamped_content(id: u32, offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len)
        .map(|x| {
            let block = x - x % STAMP_BLOCK;
            let i = (x - block) as usize;
            if i < STAMP_LEN {
                stamp_of(id, block)[i]
            } else {
                PATTERN
            }
        })
        .collect()
}

/// The number of a file of the run: 0 for `iozone.tmp`, `i` for `iozone.DUMMY.i`.
pub fn file_id(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    if name == SINGLE_FILE {
        return Some(0);
    }
    name.strip_prefix("iozone.DUMMY.")?.parse().ok()
}

/// Stops the worker's clock, with the `-e` flush of write phases inside it.
#[inline]
pub(super) fn take_figures(
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
pub(super) fn close_out(job: &Job, fd: OwnedFd, path: &Path) -> Result<(), FsOpError> {
    if job.phase.writes() {
        sys_fsync(fd.as_raw_fd(), path)?;
    }
    sys_close(fd, path)
}

/// One record; a short write (e.g. a full disk) is resumed, as a loop around write(2)
/// must be, and EINTR retried.
#[inline]
pub(super) fn write_record(fd: libc::c_int, buf: &[u8], path: &Path) -> Result<(), FsOpError> {
    match sys::write_all(fd, buf) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.at(path.to_path_buf())),
    }
}

/// One record; the file was written whole, so an early end of file is an error.
#[inline]
pub(super) fn read_record(fd: libc::c_int, buf: &mut [u8], path: &Path) -> anyhow::Result<()> {
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

pub(super) fn sys_open(
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

pub(super) fn sys_fsync(fd: libc::c_int, path: &Path) -> Result<(), FsOpError> {
    // SAFETY: plain system call on a descriptor we hold.
    if unsafe { libc::fsync(fd) } != 0 {
        return Err(SysError::last("fsync").at(path.to_path_buf()));
    }
    Ok(())
}

/// Closes and reports the error (a delayed write error can surface here), which
/// dropping an OwnedFd would swallow.
pub(super) fn sys_close(fd: OwnedFd, path: &Path) -> Result<(), FsOpError> {
    // SAFETY: we own the descriptor and give it up here.
    if unsafe { libc::close(fd.into_raw_fd()) } != 0 {
        return Err(SysError::last("close").at(path.to_path_buf()));
    }
    Ok(())
}

pub(super) fn syncfs(dir: &Path) -> anyhow::Result<()> {
    let d = std::fs::File::open(dir)
        .with_context(|| format!("cannot open {} for syncfs", dir.display()))?;
    nix::unistd::syncfs(d.as_raw_fd()).with_context(|| format!("syncfs {}", dir.display()))
}

/// Removes the run's files, those already gone included; tries every one.
pub(super) fn remove_files(paths: &[PathBuf]) -> anyhow::Result<()> {
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

pub(super) fn c_path(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| anyhow::anyhow!("path {} contains a NUL byte", p.display()))
}

/// The first real error: one a worker met itself, not a stop because a sibling failed.
pub(super) fn first_error(outcomes: Vec<anyhow::Result<Worker>>) -> anyhow::Result<Vec<Worker>> {
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
