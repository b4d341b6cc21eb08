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

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, HashMap};
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request as FuseRequest, WriteFlags,
};
use serde::{Deserialize, Serialize};

use super::model::{below_floor, model_by_name, DeviceModel, Request, Service, FUSE_FLOOR};
use super::writelog::{LogDisk, LogHeader, LogWriter, RecordKind, NO_DISK};
use crate::rig::loopdev::FileId;

/// Name of the file a control command is written to.
pub const CONTROL_FILE: &str = ".control";
/// Name of the file the daemon's statistics are read from.
pub const STATS_FILE: &str = ".stats";
/// File-system type the mount shows in /proc/mounts (`fuse.` + this).
pub const SUBTYPE: &str = "jbench-emu";

const INO_CONTROL: u64 = 2;
const INO_STATS: u64 = 3;
const INO_DISK0: u64 = 16;
const TTL: Duration = Duration::from_secs(1);

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
}

/// Counters of one emulated disk since timing was last turned on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskStats {
    pub name: String,
    pub model: String,
    /// The model answers some requests faster than the FUSE path can (see
    /// `emu::FUSE_FLOOR`): those requests take the path's time, not the model's.
    pub below_floor: bool,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub discards: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Requests the model served from the drive's cache.
    pub cached: u64,
    /// Sum of the model's response times (including waits behind earlier requests).
    pub response_seconds: f64,
    pub seek_seconds: f64,
    pub rotation_seconds: f64,
    pub transfer_seconds: f64,
    /// Answers sent later than their deadline by more than 1 ms (the host was slow).
    pub late: u64,
    /// Time the daemon spent applying requests to the image (pread, pwrite,
    /// fallocate), inside the model's time when the model is slower.
    #[serde(default)]
    pub io_seconds: f64,
    /// Requests the model answered faster than the FUSE path can (`emu::FUSE_FLOOR`):
    /// they took the path's time instead.
    pub floor_bound: u64,
    /// How much longer than the model said those requests took, at least (the floor
    /// minus the model's time, summed).
    pub floor_excess_seconds: f64,
}

/// `.stats`: what the daemon did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DaemonStats {
    /// Whether model timing is on.
    pub timing: bool,
    pub disks: Vec<DiskStats>,
    #[serde(default)]
    pub log_records: u64,
    #[serde(default)]
    pub log_bytes: u64,
}

/// The ready file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ready {
    pub pid: u32,
}

// ---------------------------------------------------------------------------------

struct DiskState {
    model: Box<dyn DeviceModel>,
    /// Model time zero.
    start: Instant,
    stats: DiskStats,
}

struct Disk {
    spec: DiskSpec,
    image: File,
    size: u64,
    state: Mutex<DiskState>,
}

impl Disk {
    fn open(spec: &DiskSpec) -> Result<Self> {
        let image = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&spec.image)
            .with_context(|| format!("cannot open disk image {}", spec.image.display()))?;
        if let Some(want) = spec.image_id {
            let got = FileId::of(&image)?;
            if got != want {
                bail!(
                    "disk image {} is inode {} on dev {}, not the image jbench created (inode {} on dev {}): the session directory was changed while jbench worked; refusing to serve it",
                    spec.image.display(),
                    got.ino,
                    got.dev,
                    want.ino,
                    want.dev
                );
            }
        }
        let size = image.metadata()?.len();
        if size == 0 || size % 4096 != 0 {
            bail!(
                "disk image {} is {size} bytes; it must be a non-zero multiple of 4096",
                spec.image.display()
            );
        }
        let model = build_model(spec, size)?;
        let stats = DiskStats {
            name: spec.name.clone(),
            model: spec.model.clone(),
            below_floor: below_floor(model.as_ref()),
            ..DiskStats::default()
        };
        Ok(Self {
            spec: spec.clone(),
            image,
            size,
            state: Mutex::new(DiskState {
                model,
                start: Instant::now(),
                stats,
            }),
        })
    }
}

/// A model for a disk of `size` bytes: a positional model's geometry spans the whole
/// image unless the spec sets `capacity_bytes`, as the studies' partitions spanned
/// their drives.
pub fn build_model(spec: &DiskSpec, size: u64) -> Result<Box<dyn DeviceModel>> {
    let mut params = spec.params.clone();
    if spec.model == "hdd-7200" && !params.contains_key("capacity_bytes") {
        params.insert(
            "capacity_bytes".into(),
            toml::Value::Integer(size.min(i64::MAX as u64) as i64),
        );
    }
    model_by_name(&spec.model, Some(&params))
        .map_err(|e| anyhow::anyhow!("disk `{}`: {e}", spec.name))
}

enum Answer {
    Write(ReplyWrite, u32),
    Data(ReplyData, Vec<u8>),
    Empty(ReplyEmpty),
}

impl Answer {
    fn send(self) {
        match self {
            Answer::Write(r, n) => r.written(n),
            Answer::Data(r, d) => r.data(&d),
            Answer::Empty(r) => r.ok(),
        }
    }
}

struct LogEntry {
    kind: RecordKind,
    disk: u8,
    offset: u64,
    len: u64,
    payload: Vec<u8>,
}

struct Pending {
    at: Instant,
    seq: u64,
    disk: Option<usize>,
    answer: Answer,
    log: Option<LogEntry>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // Reversed: BinaryHeap is a max-heap and the earliest deadline must come first.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Pending>,
    closed: bool,
}

struct Inner {
    disks: Vec<Disk>,
    timing: AtomicBool,
    epoch: Instant,
    log: Option<Mutex<LogWriter>>,
    queue: Mutex<Queue>,
    wake: Condvar,
    seq: AtomicU64,
    snapshots: Mutex<HashMap<u64, Vec<u8>>>,
    next_fh: AtomicU64,
}

impl Inner {
    fn time_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn write_log(&self, e: &LogEntry) {
        if let Some(log) = &self.log {
            let mut w = log.lock().unwrap_or_else(|p| p.into_inner());
            // A log that cannot be written is reported by the stats (records stop
            // growing) rather than by failing the disk's I/O.
            let _ = w.append(e.kind, e.disk, e.offset, e.len, &e.payload, self.time_ns());
        }
    }

    /// Answers at `at`: inline when it is already due and no log order is at stake,
    /// else through the completion thread.
    fn complete(&self, at: Instant, disk: Option<usize>, answer: Answer, log: Option<LogEntry>) {
        if self.log.is_none() && at <= Instant::now() {
            answer.send();
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.heap.push(Pending {
            at,
            seq,
            disk,
            answer,
            log,
        });
        drop(q);
        self.wake.notify_one();
    }

    /// Runs `req` through disk `i`'s model (when timing is on); returns when to answer.
    fn schedule(&self, i: usize, req: Request, arrived: Instant) -> Instant {
        let disk = &self.disks[i];
        let mut st = disk.state.lock().unwrap_or_else(|p| p.into_inner());
        let s = &mut st.stats;
        // Requests reach here right after their image I/O, which began on arrival.
        s.io_seconds += arrived.elapsed().as_secs_f64();
        match req.kind {
            super::Kind::Read => {
                s.reads += 1;
                s.read_bytes += req.len;
            }
            super::Kind::Write => {
                s.writes += 1;
                s.write_bytes += req.len;
            }
            super::Kind::Flush => s.flushes += 1,
            super::Kind::Discard => s.discards += 1,
        }
        if !self.timing.load(Ordering::Acquire) {
            return arrived;
        }
        let now = arrived.saturating_duration_since(st.start);
        let svc: Service = st.model.service(&req, now);
        let s = &mut st.stats;
        s.cached += svc.cached as u64;
        s.response_seconds += svc.duration.as_secs_f64();
        s.seek_seconds += svc.seek.as_secs_f64();
        s.rotation_seconds += svc.rotation.as_secs_f64();
        s.transfer_seconds += svc.transfer.as_secs_f64();
        if svc.duration < FUSE_FLOOR {
            s.floor_bound += 1;
            s.floor_excess_seconds += (FUSE_FLOOR - svc.duration).as_secs_f64();
        }
        arrived + svc.duration
    }

    fn set_timing(&self, on: bool) -> Result<()> {
        for d in &self.disks {
            let mut st = d.state.lock().unwrap_or_else(|p| p.into_inner());
            // A fresh model per measurement: the same seed and request stream give the
            // same answers in every trial.
            let model = build_model(&d.spec, d.size)?;
            st.stats = DiskStats {
                name: d.spec.name.clone(),
                model: d.spec.model.clone(),
                below_floor: below_floor(model.as_ref()),
                ..DiskStats::default()
            };
            st.model = model;
            st.start = Instant::now();
        }
        self.timing.store(on, Ordering::Release);
        self.write_log(&LogEntry {
            kind: RecordKind::Marker,
            disk: NO_DISK,
            offset: 0,
            len: 0,
            payload: if on {
                b"timing on".to_vec()
            } else {
                b"timing off".to_vec()
            },
        });
        Ok(())
    }

    fn stats(&self) -> DaemonStats {
        let (log_records, log_bytes) = self
            .log
            .as_ref()
            .map(|l| {
                let w = l.lock().unwrap_or_else(|p| p.into_inner());
                (w.records(), w.bytes())
            })
            .unwrap_or((0, 0));
        DaemonStats {
            timing: self.timing.load(Ordering::Acquire),
            disks: self
                .disks
                .iter()
                .map(|d| {
                    d.state
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .stats
                        .clone()
                })
                .collect(),
            log_records,
            log_bytes,
        }
    }

    fn control(&self, text: &str) -> Result<()> {
        let text = text.trim_end_matches(['\n', '\0']);
        match text {
            "timing on" => self.set_timing(true),
            "timing off" => self.set_timing(false),
            _ => match text.strip_prefix("marker ") {
                Some(label) => {
                    self.write_log(&LogEntry {
                        kind: RecordKind::Marker,
                        disk: NO_DISK,
                        offset: 0,
                        len: 0,
                        payload: label.as_bytes().to_vec(),
                    });
                    Ok(())
                }
                None => bail!("unknown control command `{text}`"),
            },
        }
    }
}

/// The completion thread: answers each pending request at its deadline, in deadline
/// order, writing its log record first.
fn completer(inner: Arc<Inner>) {
    // The receiving thread shares the daemon's CPU and can be busy copying a burst of
    // writes into the image; answers must not wait for it. Real-time priority lets
    // this thread preempt it the moment a deadline is due (it never runs long: it
    // sleeps until the next deadline and spins at most the last 80 µs). Without the
    // privilege it stays at normal priority, and late answers are counted.
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: plain syscall on the calling thread with a valid parameter block.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
    let mut q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let now = Instant::now();
        match q.heap.peek() {
            None if q.closed => return,
            None => {
                q = inner.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            Some(p) if p.at <= now => {
                let p = q.heap.pop().expect("peeked");
                drop(q);
                if let Some(e) = &p.log {
                    inner.write_log(e);
                }
                if let Some(i) = p.disk {
                    if now.saturating_duration_since(p.at) > Duration::from_millis(1) {
                        let mut st = inner.disks[i]
                            .state
                            .lock()
                            .unwrap_or_else(|p| p.into_inner());
                        st.stats.late += 1;
                    }
                }
                p.answer.send();
                q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            }
            Some(p) => {
                let wait = p.at - now;
                if wait < Duration::from_micros(80) {
                    // Condvar timeouts overshoot by tens of µs; spin the last stretch.
                    drop(q);
                    while Instant::now() < now + wait {
                        std::hint::spin_loop();
                    }
                    q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
                } else {
                    q = inner
                        .wake
                        .wait_timeout(q, wait - Duration::from_micros(50))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
    }
}

struct EmuFs {
    inner: Arc<Inner>,
}

impl EmuFs {
    fn disk_of(&self, ino: INodeNo) -> Option<usize> {
        let i = ino.0.checked_sub(INO_DISK0)? as usize;
        (i < self.inner.disks.len()).then_some(i)
    }

    fn attr(&self, ino: u64) -> Option<FileAttr> {
        let (kind, perm, size) = match ino {
            1 => (FileType::Directory, 0o755, 0),
            INO_CONTROL => (FileType::RegularFile, 0o200, 0),
            INO_STATS => (FileType::RegularFile, 0o400, 0),
            _ => {
                let i = self.disk_of(INodeNo(ino))?;
                (FileType::RegularFile, 0o600, self.inner.disks[i].size)
            }
        };
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1);
        Some(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size / 512,
            atime: t,
            mtime: t,
            ctime: t,
            crtime: t,
            kind,
            perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn names(&self) -> Vec<(u64, FileType, String)> {
        let mut v = vec![
            (1, FileType::Directory, ".".to_string()),
            (1, FileType::Directory, "..".to_string()),
            (INO_CONTROL, FileType::RegularFile, CONTROL_FILE.to_string()),
            (INO_STATS, FileType::RegularFile, STATS_FILE.to_string()),
        ];
        for (i, d) in self.inner.disks.iter().enumerate() {
            v.push((
                INO_DISK0 + i as u64,
                FileType::RegularFile,
                d.spec.name.clone(),
            ));
        }
        v
    }

    fn log_entry(
        &self,
        kind: RecordKind,
        disk: usize,
        offset: u64,
        len: u64,
        data: &[u8],
    ) -> Option<LogEntry> {
        self.inner.log.as_ref().map(|_| LogEntry {
            kind,
            disk: disk as u8,
            offset,
            len,
            payload: data.to_vec(),
        })
    }
}

impl Filesystem for EmuFs {
    fn init(&mut self, _req: &FuseRequest, config: &mut KernelConfig) -> std::io::Result<()> {
        // Without async direct I/O the kernel waits for each request before sending the
        // next, and a loop device could never have more than one request in flight.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        let _ = config.set_max_write(1 << 20);
        let _ = config.set_max_background(128);
        let _ = config.set_congestion_threshold(96);
        Ok(())
    }

    fn lookup(&self, _req: &FuseRequest, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent.0 != 1 {
            return reply.error(Errno::ENOENT);
        }
        let found = self
            .names()
            .into_iter()
            .skip(2)
            .find(|(_, _, n)| OsStr::new(n) == name);
        match found.and_then(|(ino, _, _)| self.attr(ino)) {
            Some(a) => reply.entry(&TTL, &a, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &FuseRequest, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino.0) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(a) = self.attr(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        // A disk's size is fixed; truncating the control files is what `>` does.
        if size.is_some_and(|s| s != a.size) && self.disk_of(ino).is_some() {
            return reply.error(Errno::EPERM);
        }
        reply.attr(&TTL, &a)
    }

    fn open(&self, _req: &FuseRequest, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.attr(ino.0).is_none() {
            return reply.error(Errno::ENOENT);
        }
        let fh = self.inner.next_fh.fetch_add(1, Ordering::Relaxed);
        if ino.0 == INO_STATS {
            let json = serde_json::to_vec_pretty(&self.inner.stats()).unwrap_or_default();
            self.inner
                .snapshots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(fh, json);
        }
        // Direct I/O: no page cache between the loop device and the model.
        reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO)
    }

    fn read(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let arrived = Instant::now();
        if ino.0 == INO_STATS {
            let snaps = self
                .inner
                .snapshots
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let data = snaps.get(&fh.0).map(Vec::as_slice).unwrap_or(&[]);
            let start = (offset as usize).min(data.len());
            let end = (start + size as usize).min(data.len());
            return reply.data(&data[start..end]);
        }
        let Some(i) = self.disk_of(ino) else {
            return reply.error(Errno::EINVAL);
        };
        let disk = &self.inner.disks[i];
        let len = (size as u64).min(disk.size.saturating_sub(offset));
        let mut buf = vec![0u8; len as usize];
        if let Err(e) = disk.image.read_exact_at(&mut buf, offset) {
            return reply.error(Errno::from(e));
        }
        let at = self.inner.schedule(i, Request::read(offset, len), arrived);
        self.inner
            .complete(at, Some(i), Answer::Data(reply, buf), None);
    }

    fn write(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let arrived = Instant::now();
        if ino.0 == INO_CONTROL {
            return match self.inner.control(&String::from_utf8_lossy(data)) {
                Ok(()) => reply.written(data.len() as u32),
                Err(_) => reply.error(Errno::EINVAL),
            };
        }
        let Some(i) = self.disk_of(ino) else {
            return reply.error(Errno::EINVAL);
        };
        let disk = &self.inner.disks[i];
        let len = data.len() as u64;
        if offset.saturating_add(len) > disk.size {
            return reply.error(Errno::ENOSPC);
        }
        if let Err(e) = disk.image.write_all_at(data, offset) {
            return reply.error(Errno::from(e));
        }
        let at = self.inner.schedule(i, Request::write(offset, len), arrived);
        let log = self.log_entry(RecordKind::Write, i, offset, len, data);
        self.inner
            .complete(at, Some(i), Answer::Write(reply, data.len() as u32), log);
    }

    fn flush(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        _fh: FileHandle,
        _lo: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Called on close(), not a device flush: that arrives as fsync.
        reply.ok()
    }

    fn release(
        &self,
        _req: &FuseRequest,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.inner
            .snapshots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&fh.0);
        reply.ok()
    }

    fn fsync(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let arrived = Instant::now();
        let Some(i) = self.disk_of(ino) else {
            return reply.ok();
        };
        // The image is not made durable: the model, not the host's disk, says when the
        // emulated disk's data is safe, and the write log records the flush.
        let at = self.inner.schedule(i, Request::flush(), arrived);
        let log = self.log_entry(RecordKind::Flush, i, 0, 0, &[]);
        self.inner.complete(at, Some(i), Answer::Empty(reply), log);
    }

    fn fallocate(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let arrived = Instant::now();
        let Some(i) = self.disk_of(ino) else {
            return reply.error(Errno::EINVAL);
        };
        let disk = &self.inner.disks[i];
        if offset.saturating_add(length) > disk.size {
            return reply.error(Errno::ENOSPC);
        }
        let punch = mode & libc::FALLOC_FL_PUNCH_HOLE != 0;
        let zero = mode & libc::FALLOC_FL_ZERO_RANGE != 0;
        if !punch && !zero {
            // Plain preallocation: a disk's blocks always exist.
            return reply.ok();
        }
        let flags = if punch {
            nix::fcntl::FallocateFlags::FALLOC_FL_PUNCH_HOLE
                | nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE
        } else {
            nix::fcntl::FallocateFlags::FALLOC_FL_ZERO_RANGE
                | nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE
        };
        if let Err(e) = nix::fcntl::fallocate(
            std::os::fd::AsRawFd::as_raw_fd(&disk.image),
            flags,
            offset as i64,
            length as i64,
        ) {
            return reply.error(Errno::from_i32(e as i32));
        }
        let (req, kind) = if punch {
            (Request::discard(offset, length), RecordKind::Discard)
        } else {
            (Request::write(offset, length), RecordKind::Zero)
        };
        let at = self.inner.schedule(i, req, arrived);
        let log = self.log_entry(kind, i, offset, length, &[]);
        self.inner.complete(at, Some(i), Answer::Empty(reply), log);
    }

    fn readdir(
        &self,
        _req: &FuseRequest,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino.0 != 1 {
            return reply.error(Errno::ENOTDIR);
        }
        for (k, (ino, kind, name)) in self.names().into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (k + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok()
    }
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
    if !config.cpus.is_empty() {
        let mut set = nix::sched::CpuSet::new();
        for &c in &config.cpus {
            set.set(c)?;
        }
        // Before any thread starts, so every thread inherits it.
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .context("cannot pin the device daemon")?;
    }

    let disks: Vec<Disk> = config.disks.iter().map(Disk::open).collect::<Result<_>>()?;
    let log = match &config.write_log {
        Some(path) => {
            let header = LogHeader {
                version: 1,
                disks: disks
                    .iter()
                    .enumerate()
                    .map(|(i, d)| LogDisk {
                        index: i as u8,
                        name: d.spec.name.clone(),
                        size: d.size,
                        model: d.spec.model.clone(),
                    })
                    .collect(),
                initial_state: "zeros".into(),
            };
            Some(Mutex::new(LogWriter::create(path, &header)?))
        }
        None => None,
    };
    let inner = Arc::new(Inner {
        disks,
        timing: AtomicBool::new(false),
        epoch: Instant::now(),
        log,
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        seq: AtomicU64::new(0),
        snapshots: Mutex::new(HashMap::new()),
        next_fh: AtomicU64::new(1),
    });
    let done = std::thread::Builder::new()
        .name("completer".into())
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
    let mut unmounter = session.unmount_callable();
    let serving = std::thread::Builder::new()
        .name("fuse".into())
        .spawn(move || session.run())?;

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
