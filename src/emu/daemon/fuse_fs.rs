//! The FUSE file system: the root directory, the two control files and one file per
//! disk. Reads and writes go to the image at once; their answers go out when the
//! disk's model says (see `completion`).

use std::ffi::OsStr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request as FuseRequest, WriteFlags,
};

use super::queue::{Answer, LogEntry, INJECTED};
use super::state::Inner;
use super::{CONTROL_FILE, STATS_FILE};
use crate::emu::model::Request;
use crate::emu::writelog::RecordKind;

const INO_CONTROL: u64 = 2;
const INO_STATS: u64 = 3;
const INO_DISK0: u64 = 16;
const TTL: Duration = Duration::from_secs(1);

pub(super) struct EmuFs {
    pub(super) inner: Arc<Inner>,
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

    /// The request's `issued` tick, taken on arrival: before the model sees it, so a
    /// write acked before this tick is in the model's state when this request is
    /// served (docs/write-log.md). The clock stands still without a log.
    fn issue(&self) -> u64 {
        match self.inner.log {
            Some(_) => self.inner.tick(),
            None => 0,
        }
    }

    fn log_entry(
        &self,
        issued: u64,
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
            issued: Some(issued),
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
        INJECTED.io();
        let disk = &self.inner.disks[i];
        let len = (size as u64).min(disk.size.saturating_sub(offset));
        let mut buf = vec![0u8; len as usize];
        if let Err(e) = disk.read_at(&mut buf, offset) {
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
                Err(e) => {
                    // The caller sees only EINVAL; the reason goes to the daemon's log,
                    // which the rig quotes.
                    crate::events::emit(crate::events::Event::DaemonControl {
                        error: format!("{e:#}"),
                    });
                    reply.error(Errno::EINVAL)
                }
            };
        }
        let Some(i) = self.disk_of(ino) else {
            return reply.error(Errno::EINVAL);
        };
        INJECTED.io();
        let issued = self.issue();
        let disk = &self.inner.disks[i];
        let len = data.len() as u64;
        if offset.saturating_add(len) > disk.size {
            return reply.error(Errno::ENOSPC);
        }
        if let Err(e) = disk.write_at(data, offset) {
            return reply.error(Errno::from(e));
        }
        let at = self.inner.schedule(i, Request::write(offset, len), arrived);
        let log = self.log_entry(issued, RecordKind::Write, i, offset, len, data);
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
        INJECTED.io();
        let issued = self.issue();
        // The image is not made durable: the model, not the host's disk, says when the
        // emulated disk's data is safe, and the write log records the flush.
        let at = self.inner.schedule(i, Request::flush(), arrived);
        let log = self.log_entry(issued, RecordKind::Flush, i, 0, 0, &[]);
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
        let issued = self.issue();
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
        INJECTED.io();
        if let Err(e) = disk.zero_range(offset, length, punch) {
            return reply.error(Errno::from(e));
        }
        let (req, kind) = if punch {
            (Request::discard(offset, length), RecordKind::Discard)
        } else {
            (Request::write(offset, length), RecordKind::Zero)
        };
        let at = self.inner.schedule(i, req, arrived);
        let log = self.log_entry(issued, kind, i, offset, length, &[]);
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
