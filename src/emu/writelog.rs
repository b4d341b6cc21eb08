//! The write log: every write, flush and discard of every emulated disk of a trial, in
//! one globally ordered sequence, plus markers a workload inserts after an fsync
//! returns. Replaying a prefix of it onto zeroed images builds a disk state a power cut
//! could leave (what crash-consistency testing needs). Format (docs/write-log.md), all integers
//! little-endian:
//!
//! ```text
//! file    = magic "JBWLOG02" | u32 header_len | header (JSON, header_len bytes) | record*
//! record  = u64 seq | u64 time_ns | u64 offset | u64 len | u8 kind | u8 disk | 6 bytes 0
//!           | u64 issued | u64 acked
//!           | payload (len bytes for `write` and `marker`, none otherwise)
//! ```
//!
//! `seq` counts from 0 with no gaps; `time_ns` is since the daemon started. Records are
//! in acknowledgement order: a record is written when the daemon answers the request,
//! so every write acknowledged before a flush was issued precedes that flush. `issued`
//! and `acked` are ticks of one daemon-wide event clock, taken when the request arrived
//! and when its record was written: a write is covered by a flush of its disk iff its
//! `acked` is below the flush's `issued`.
//!
//! Version 1 (`JBWLOG01`) had 40-byte records without `issued` and `acked`; it is still
//! read, and its records have `None` for both.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The magic [`LogWriter`] writes: version [`VERSION`].
pub const MAGIC: &[u8; 8] = b"JBWLOG02";
/// Every magic is this followed by the version as two decimal digits.
const MAGIC_PREFIX: &[u8; 6] = b"JBWLOG";
/// The version [`LogWriter`] writes.
pub const VERSION: u32 = 2;
/// The versions [`LogReader`] reads.
pub const READ_VERSIONS: &[u32] = &[1, 2];
/// Bytes of a record before its payload.
pub const RECORD_HEADER: usize = 56;
/// Bytes of a version 1 record before its payload.
pub const RECORD_HEADER_V1: usize = 40;
/// `disk` of records that belong to no disk (markers).
pub const NO_DISK: u8 = 255;

/// What a record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    /// `len` bytes of payload written at `offset`.
    Write = 1,
    /// `len` zero bytes written at `offset` (a write whose payload was all zeros, or a
    /// write-zeroes request); no payload is stored.
    Zero = 2,
    /// The range was discarded (punch-hole): it reads back as zeros.
    Discard = 3,
    /// The writes of `disk` it covers, those with `acked` below this record's `issued`,
    /// are durable (if the disk honours flushes).
    Flush = 4,
    /// A workload's marker; the payload is its label (UTF-8).
    Marker = 5,
}

impl RecordKind {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Write,
            2 => Self::Zero,
            3 => Self::Discard,
            4 => Self::Flush,
            5 => Self::Marker,
            _ => return None,
        })
    }

    /// Whether records of this kind carry a payload.
    pub fn has_payload(self) -> bool {
        matches!(self, Self::Write | Self::Marker)
    }
}

/// One emulated disk as the log header describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogDisk {
    /// The `disk` number records use.
    pub index: u8,
    pub name: String,
    pub size: u64,
    pub model: String,
    /// The disk has a volatile write cache: an acknowledged write is durable only once
    /// a flush covers it. `None` in logs written before version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volatile_cache: Option<bool>,
    /// `false` for a disk that lies about flushes: a flush does not make its cache
    /// durable. `None` in logs written before version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honor_flush: Option<bool>,
}

/// The JSON header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub version: u32,
    pub disks: Vec<LogDisk>,
    /// Every disk starts all zeros: the images are created empty, so the log alone
    /// rebuilds any state.
    pub initial_state: String,
}

/// A decoded record: its metadata and, for `write` and `marker`, its payload (empty
/// otherwise). Reads through to the metadata's fields (`rec.seq`, `rec.kind`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub meta: RecordMeta,
    pub payload: Vec<u8>,
}

impl std::ops::Deref for Record {
    type Target = RecordMeta;
    fn deref(&self) -> &RecordMeta {
        &self.meta
    }
}

/// A record without its payload, as [`LogReader::next_meta`] returns it; the payload
/// (for `write` and `marker`) is `len` bytes at `payload_pos` in the file, which
/// [`read_payload`] reads.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordMeta {
    pub seq: u64,
    pub time_ns: u64,
    pub kind: RecordKind,
    pub disk: u8,
    pub offset: u64,
    pub len: u64,
    pub issued: Option<u64>,
    pub acked: Option<u64>,
    /// Byte offset in the log file where the payload starts (where the next record
    /// starts, for kinds without one).
    pub payload_pos: u64,
}

/// When a record was written: `time_ns` since the daemon started, and the event-clock
/// ticks of the request's arrival (`issued`) and of the record itself (`acked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub time_ns: u64,
    pub issued: u64,
    pub acked: u64,
}

/// Appends records; the daemon holds it behind a mutex so `seq` is one global order.
/// It writes version [`VERSION`] whatever `header.version` says.
pub struct LogWriter {
    out: BufWriter<File>,
    next_seq: u64,
    bytes: u64,
}

impl LogWriter {
    pub fn create(path: &Path, header: &LogHeader) -> Result<Self> {
        let file = File::create(path)
            .with_context(|| format!("cannot create the write log {}", path.display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let header = LogHeader {
            version: VERSION,
            ..header.clone()
        };
        let json = serde_json::to_vec(&header)?;
        out.write_all(MAGIC)?;
        out.write_all(&(json.len() as u32).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(Self {
            out,
            next_seq: 0,
            bytes: (MAGIC.len() + 4 + json.len()) as u64,
        })
    }

    /// Appends a record and returns its sequence number. A `Write` whose payload is all
    /// zeros is stored as `Zero`, so mkfs's zeroing costs no log space.
    pub fn append(
        &mut self,
        kind: RecordKind,
        disk: u8,
        offset: u64,
        len: u64,
        payload: &[u8],
        stamp: Stamp,
    ) -> io::Result<u64> {
        let (kind, payload) = match kind {
            RecordKind::Write if is_zero(payload) => (RecordKind::Zero, &[][..]),
            RecordKind::Write | RecordKind::Marker => (kind, payload),
            _ => (kind, &[][..]),
        };
        let len = if kind == RecordKind::Marker {
            payload.len() as u64
        } else {
            len
        };
        let seq = self.next_seq;
        let mut head = [0u8; RECORD_HEADER];
        head[0..8].copy_from_slice(&seq.to_le_bytes());
        head[8..16].copy_from_slice(&stamp.time_ns.to_le_bytes());
        head[16..24].copy_from_slice(&offset.to_le_bytes());
        head[24..32].copy_from_slice(&len.to_le_bytes());
        head[32] = kind as u8;
        head[33] = disk;
        head[40..48].copy_from_slice(&stamp.issued.to_le_bytes());
        head[48..56].copy_from_slice(&stamp.acked.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(payload)?;
        self.next_seq += 1;
        self.bytes += (RECORD_HEADER + payload.len()) as u64;
        Ok(seq)
    }

    pub fn records(&self) -> u64 {
        self.next_seq
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

fn is_zero(b: &[u8]) -> bool {
    // OR-folding fixed chunks vectorises; this runs once per logged write.
    let mut chunks = b.chunks_exact(64);
    chunks
        .by_ref()
        .all(|c| c.iter().fold(0u8, |a, &x| a | x) == 0)
        && chunks.remainder().iter().all(|&x| x == 0)
}

/// The version a magic names, `None` when it is not a jbench write log's at all.
fn magic_version(magic: &[u8; 8]) -> Option<u32> {
    let digits = magic.strip_prefix(MAGIC_PREFIX)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(u32::from(digits[0] - b'0') * 10 + u32::from(digits[1] - b'0'))
}

/// Reads a log written by [`LogWriter`], of any version in [`READ_VERSIONS`]. A torn
/// last record (the daemon was killed mid-append) ends the iteration without an
/// error; anything else malformed is one.
pub struct LogReader {
    input: BufReader<File>,
    pub header: LogHeader,
    version: u32,
    expect_seq: u64,
    /// Byte offset in the file of what `input` yields next.
    pos: u64,
    /// File length as last looked up; a payload that seems to run past it makes
    /// `next_meta` look again before calling it torn, since a live log grows.
    file_len: u64,
    /// A torn record was met: nothing follows it.
    ended: bool,
}

impl LogReader {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path)
            .with_context(|| format!("cannot open the write log {}", path.display()))?;
        let file_len = file.metadata()?.len();
        let mut input = BufReader::with_capacity(1 << 20, file);
        let mut magic = [0u8; 8];
        input
            .read_exact(&mut magic)
            .with_context(|| format!("{} is too short to be a write log", path.display()))?;
        let Some(version) = magic_version(&magic) else {
            bail!(
                "{} is not a jbench write log (it begins `{}`, a write log `{}`)",
                path.display(),
                String::from_utf8_lossy(&magic).escape_debug(),
                String::from_utf8_lossy(MAGIC).escape_debug()
            );
        };
        if !READ_VERSIONS.contains(&version) {
            bail!(
                "{} is a jbench write log of version {version} (it begins `{}`); this jbench reads versions {}",
                path.display(),
                String::from_utf8_lossy(&magic).escape_debug(),
                READ_VERSIONS
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            );
        }
        let mut n = [0u8; 4];
        input.read_exact(&mut n)?;
        let mut json = vec![0u8; u32::from_le_bytes(n) as usize];
        input.read_exact(&mut json)?;
        let header: LogHeader = serde_json::from_slice(&json)
            .with_context(|| format!("bad header in write log {}", path.display()))?;
        if header.version != version {
            bail!(
                "write log {}: its magic says version {version} but its header says {}",
                path.display(),
                header.version
            );
        }
        Ok(Self {
            input,
            header,
            version,
            expect_seq: 0,
            pos: (magic.len() + n.len() + json.len()) as u64,
            file_len,
            ended: false,
        })
    }

    /// The format version of the file (1 or 2).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The log file, for [`read_payload`]; reading it by position does not disturb
    /// this reader.
    pub fn file(&self) -> &File {
        self.input.get_ref()
    }

    /// The next record's header, the input left at its payload; `None` at the end
    /// or at a torn header.
    fn next_head(&mut self) -> Result<Option<RecordMeta>> {
        if self.ended {
            return Ok(None);
        }
        let mut head = [0u8; RECORD_HEADER];
        let size = if self.version == 1 {
            RECORD_HEADER_V1
        } else {
            RECORD_HEADER
        };
        if !read_full(&mut self.input, &mut head[..size])? {
            self.ended = true;
            return Ok(None);
        }
        self.pos += size as u64;
        let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap());
        let seq = u64_at(0);
        let kind = RecordKind::from_u8(head[32])
            .with_context(|| format!("record {seq}: unknown kind {}", head[32]))?;
        if seq != self.expect_seq {
            bail!("record {seq} found where {} was expected", self.expect_seq);
        }
        let (issued, acked) = if self.version == 1 {
            (None, None)
        } else {
            (Some(u64_at(40)), Some(u64_at(48)))
        };
        Ok(Some(RecordMeta {
            seq,
            time_ns: u64_at(8),
            kind,
            disk: head[33],
            offset: u64_at(16),
            len: u64_at(24),
            issued,
            acked,
            payload_pos: self.pos,
        }))
    }

    /// The next record, `None` at the end (or at a torn last record).
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let Some(m) = self.next_head()? else {
            return Ok(None);
        };
        let payload = if m.kind.has_payload() {
            let mut p = vec![0u8; m.len as usize];
            if !read_full(&mut self.input, &mut p)? {
                self.ended = true;
                return Ok(None);
            }
            self.pos += m.len;
            p
        } else {
            Vec::new()
        };
        self.expect_seq += 1;
        Ok(Some(Record { meta: m, payload }))
    }

    /// The next record without its payload, which is skipped rather than read: a
    /// scan of a log of large writes reads only its record headers. `None` at the end
    /// (or at a torn last record).
    pub fn next_meta(&mut self) -> Result<Option<RecordMeta>> {
        let Some(m) = self.next_head()? else {
            return Ok(None);
        };
        if m.kind.has_payload() {
            let end = m.payload_pos.saturating_add(m.len);
            if end > self.file_len {
                self.file_len = self.input.get_ref().metadata()?.len();
                if end > self.file_len {
                    self.ended = true;
                    return Ok(None);
                }
            }
            let skip = i64::try_from(m.len)
                .with_context(|| format!("record {}: length {} is too large", m.seq, m.len))?;
            self.input.seek_relative(skip)?;
            self.pos = end;
        }
        self.expect_seq += 1;
        Ok(Some(m))
    }
}

/// The payload of the record `meta` describes, read by position from `file` (the log,
/// e.g. [`LogReader::file`]); empty for kinds without one.
pub fn read_payload(file: &File, meta: &RecordMeta) -> Result<Vec<u8>> {
    if !meta.kind.has_payload() {
        return Ok(Vec::new());
    }
    let mut p = vec![0u8; meta.len as usize];
    file.read_exact_at(&mut p, meta.payload_pos)
        .with_context(|| {
            format!(
                "cannot read the {}-byte payload of record {} at byte {}",
                meta.len, meta.seq, meta.payload_pos
            )
        })?;
    Ok(p)
}

/// Fills `buf`; `false` when the input ended first (at once or part-way).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => return Ok(false),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

/// Counts of one log, for `jbench device log`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LogSummary {
    pub records: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub zero_writes: u64,
    pub discards: u64,
    pub flushes: u64,
    pub markers: Vec<(u64, String)>,
}

pub fn summarize(path: &Path) -> Result<(LogHeader, LogSummary)> {
    let mut r = LogReader::open(path)?;
    let mut s = LogSummary::default();
    // Only markers' payloads are wanted: skip the written data.
    while let Some(m) = r.next_meta()? {
        s.records += 1;
        match m.kind {
            RecordKind::Write => {
                s.writes += 1;
                s.write_bytes += m.len;
            }
            RecordKind::Zero => s.zero_writes += 1,
            RecordKind::Discard => s.discards += 1,
            RecordKind::Flush => s.flushes += 1,
            RecordKind::Marker => {
                let label = read_payload(r.file(), &m)?;
                s.markers
                    .push((m.seq, String::from_utf8_lossy(&label).into_owned()))
            }
        }
    }
    Ok((r.header, s))
}

/// Makes `len` bytes at `offset` read as zeros: what a `zero` or `discard` record does
/// to a replayed image. Within the file's length a hole is punched (mkfs discards the
/// whole disk: writing a gigabyte of zeros into every rig's base image was a fifth of
/// the crash lab's time); past it, or where the file system cannot punch, `zeros` (any
/// non-empty length) are written.
pub fn write_zeros(f: &File, zeros: &[u8], offset: u64, len: u64) -> io::Result<()> {
    let inside = f.metadata()?.len().saturating_sub(offset).min(len);
    if inside > 0 && punch_hole(f, offset, inside).is_ok() {
        return write_zero_bytes(f, zeros, offset + inside, len - inside);
    }
    write_zero_bytes(f, zeros, offset, len)
}

fn punch_hole(f: &File, offset: u64, len: u64) -> io::Result<()> {
    use nix::fcntl::FallocateFlags as F;
    nix::fcntl::fallocate(
        std::os::fd::AsRawFd::as_raw_fd(f),
        F::FALLOC_FL_PUNCH_HOLE | F::FALLOC_FL_KEEP_SIZE,
        offset as i64,
        len as i64,
    )
    .map(|_| ())
    .map_err(io::Error::from)
}

fn write_zero_bytes(f: &File, zeros: &[u8], offset: u64, len: u64) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(zeros.len() as u64) as usize;
        f.write_all_at(&zeros[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
}

/// Applies the log's records with `seq < upto` (all when `None`) to `images`, one file
/// per disk index, which must start all zeros (e.g. freshly truncated). Returns how
/// many records were applied.
pub fn replay(path: &Path, images: &[&Path], upto: Option<u64>) -> Result<u64> {
    let mut r = LogReader::open(path)?;
    let files: Vec<File> = images
        .iter()
        .map(|p| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .with_context(|| format!("cannot open {} to replay into", p.display()))
        })
        .collect::<Result<_>>()?;
    let zeros = vec![0u8; 1 << 20];
    let mut applied = 0;
    while let Some(rec) = r.next_record()? {
        if upto.is_some_and(|u| rec.seq >= u) {
            break;
        }
        if rec.disk != NO_DISK {
            let f = files.get(rec.disk as usize).with_context(|| {
                format!(
                    "record {} is for disk {}, but {} images were given",
                    rec.seq,
                    rec.disk,
                    files.len()
                )
            })?;
            match rec.kind {
                RecordKind::Write => f.write_all_at(&rec.payload, rec.offset)?,
                RecordKind::Zero | RecordKind::Discard => {
                    write_zeros(f, &zeros, rec.offset, rec.len)?
                }
                RecordKind::Flush | RecordKind::Marker => {}
            }
        }
        applied += 1;
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_read_back_as_zeros_inside_the_file_and_past_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        std::fs::write(&path, vec![0xAAu8; 3 * 4096]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        // From the middle of block 1 to past the end: punched inside, written after.
        write_zeros(&f, &[0u8; 1000], 4096 + 100, 3 * 4096).unwrap();
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), 4096 + 100 + 3 * 4096);
        assert!(got[..4196].iter().all(|&b| b == 0xAA));
        assert!(got[4196..].iter().all(|&b| b == 0));
    }

    fn header() -> LogHeader {
        LogHeader {
            version: VERSION,
            disks: vec![
                LogDisk {
                    index: 0,
                    name: "fs".into(),
                    size: 1 << 20,
                    model: "hdd-7200".into(),
                    volatile_cache: Some(true),
                    honor_flush: Some(false),
                },
                LogDisk {
                    index: 1,
                    name: "journal".into(),
                    size: 1 << 16,
                    model: "ram".into(),
                    volatile_cache: Some(false),
                    honor_flush: Some(true),
                },
            ],
            initial_state: "zeros".into(),
        }
    }

    /// Appends as the daemon does: `issued` taken on arrival, `acked` when the record
    /// is written, from one clock.
    struct Clocked {
        w: LogWriter,
        clock: u64,
    }

    impl Clocked {
        fn new(path: &Path) -> Self {
            Clocked {
                w: LogWriter::create(path, &header()).unwrap(),
                clock: 0,
            }
        }

        fn issue(&mut self) -> u64 {
            self.clock += 1;
            self.clock - 1
        }

        fn ack(&mut self, issued: u64, kind: RecordKind, disk: u8, off: u64, len: u64, p: &[u8]) {
            let acked = self.issue();
            let stamp = Stamp {
                time_ns: 100 + acked,
                issued,
                acked,
            };
            self.w.append(kind, disk, off, len, p, stamp).unwrap();
        }

        fn now(&mut self, kind: RecordKind, disk: u8, off: u64, len: u64, p: &[u8]) {
            let issued = self.issue();
            self.ack(issued, kind, disk, off, len, p);
        }
    }

    fn all_records(path: &Path) -> Vec<Record> {
        let mut r = LogReader::open(path).unwrap();
        let mut all = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            all.push(rec);
        }
        all
    }

    #[test]
    fn records_round_trip_in_order_and_zero_writes_carry_no_payload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut c = Clocked::new(&path);
        // Two writes in flight at once, acknowledged in the other order.
        let (a, b) = (c.issue(), c.issue());
        c.ack(b, RecordKind::Write, 1, 0, 4096, &[0u8; 4096]);
        c.ack(a, RecordKind::Write, 0, 4096, 3, b"abc");
        c.now(RecordKind::Flush, 1, 0, 0, &[]);
        c.now(RecordKind::Marker, NO_DISK, 0, 0, b"fsync f1");
        c.now(RecordKind::Discard, 0, 8192, 4096, &[]);
        assert_eq!(c.w.records(), 5);
        c.w.flush().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert_eq!(size, c.w.bytes());

        let r = LogReader::open(&path).unwrap();
        assert_eq!((r.version(), &r.header), (2, &header()));
        let all = all_records(&path);
        let kinds: Vec<RecordKind> = all.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RecordKind::Zero,
                RecordKind::Write,
                RecordKind::Flush,
                RecordKind::Marker,
                RecordKind::Discard
            ]
        );
        assert_eq!((all[0].len, all[0].payload.len()), (4096, 0));
        assert_eq!(all[1].payload, b"abc");
        assert_eq!(all[3].payload, b"fsync f1");
        assert_eq!(all[3].len, 8);
        assert_eq!(
            all.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        let ticks: Vec<(u64, u64)> = all
            .iter()
            .map(|r| (r.issued.unwrap(), r.acked.unwrap()))
            .collect();
        assert_eq!(ticks, [(1, 2), (0, 3), (4, 5), (6, 7), (8, 9)]);
        assert!(ticks.iter().all(|(i, a)| i < a));
        assert!(ticks.windows(2).all(|w| w[0].1 < w[1].1));
        assert_eq!(all[4].time_ns, 109);
    }

    #[test]
    fn a_torn_last_record_ends_the_log_quietly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut c = Clocked::new(&path);
        c.now(RecordKind::Write, 0, 0, 5, b"hello");
        c.now(RecordKind::Write, 0, 5, 5, b"world");
        c.now(RecordKind::Flush, 0, 0, 0, &[]);
        c.w.flush().unwrap();
        let full = std::fs::metadata(&path).unwrap().len();
        let flush_at = full - RECORD_HEADER as u64;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        // Cut in the last record's header (in its `issued`), then in the payload of
        // the record before it.
        for (cut, records) in [(flush_at + 44, 2), (flush_at - 2, 1)] {
            f.set_len(cut).unwrap();
            let (_, s) = summarize(&path).unwrap();
            assert_eq!(s.records, records, "cut at {cut}");
            assert_eq!(all_records(&path).len() as u64, records, "cut at {cut}");
        }
    }

    #[test]
    fn replay_rebuilds_images_and_stops_at_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut c = Clocked::new(&path);
        c.now(RecordKind::Write, 0, 0, 4, b"AAAA");
        c.now(RecordKind::Write, 1, 2, 2, b"JJ");
        c.now(RecordKind::Flush, 0, 0, 0, &[]);
        c.now(RecordKind::Discard, 0, 1, 2, &[]);
        c.w.flush().unwrap();
        let img0 = dir.path().join("0.img");
        let img1 = dir.path().join("1.img");
        for p in [&img0, &img1] {
            File::create(p).unwrap().set_len(8).unwrap();
        }
        assert_eq!(replay(&path, &[&img0, &img1], Some(3)).unwrap(), 3);
        assert_eq!(std::fs::read(&img0).unwrap(), b"AAAA\0\0\0\0");
        assert_eq!(std::fs::read(&img1).unwrap(), b"\0\0JJ\0\0\0\0");
        assert_eq!(replay(&path, &[&img0, &img1], None).unwrap(), 4);
        assert_eq!(std::fs::read(&img0).unwrap(), b"A\0\0A\0\0\0\0");
    }

    #[test]
    fn next_meta_and_read_payload_agree_with_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut c = Clocked::new(&path);
        c.now(RecordKind::Write, 0, 0, 5, b"hello");
        c.now(RecordKind::Write, 1, 0, 4096, &[0u8; 4096]);
        c.now(RecordKind::Flush, 0, 0, 0, &[]);
        let big: Vec<u8> = (0..3 << 20).map(|i| (i % 251) as u8 + 1).collect();
        c.now(RecordKind::Write, 0, 8192, big.len() as u64, &big);
        c.now(RecordKind::Marker, NO_DISK, 0, 0, b"fsync f2");
        c.now(RecordKind::Discard, 1, 0, 4096, &[]);
        c.w.flush().unwrap();

        let want = all_records(&path);
        let mut r = LogReader::open(&path).unwrap();
        let mut got = Vec::new();
        let mut pos = Vec::new();
        while let Some(m) = r.next_meta().unwrap() {
            let payload = read_payload(r.file(), &m).unwrap();
            pos.push(m.payload_pos);
            got.push(Record { meta: m, payload });
        }
        assert_eq!(got, want);
        assert_eq!(got[3].payload, big);
        // Each payload starts right after its record header.
        let json = serde_json::to_vec(&header()).unwrap().len() as u64;
        assert_eq!(pos[0], 12 + json + RECORD_HEADER as u64);
        assert_eq!(pos[1], pos[0] + 5 + RECORD_HEADER as u64);

        // A payload cut short ends the scan, as it ends next_record.
        let full = std::fs::metadata(&path).unwrap().len();
        let marker_end = full - RECORD_HEADER as u64;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(marker_end - 3)
            .unwrap();
        let mut r = LogReader::open(&path).unwrap();
        let mut n = 0;
        while r.next_meta().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 4);
        assert_eq!(r.next_meta().unwrap(), None);
    }

    #[test]
    fn a_version_1_log_is_still_read_without_issue_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.log");
        let json = br#"{"version":1,"disks":[{"index":0,"name":"fs","size":65536,"model":"ram"}],"initial_state":"zeros"}"#;
        let mut bytes = b"JBWLOG01".to_vec();
        bytes.extend((json.len() as u32).to_le_bytes());
        bytes.extend(json);
        let mut record = |seq: u64, kind: RecordKind, off: u64, payload: &[u8], len: u64| {
            let mut head = [0u8; RECORD_HEADER_V1];
            head[0..8].copy_from_slice(&seq.to_le_bytes());
            head[8..16].copy_from_slice(&(seq * 10).to_le_bytes());
            head[16..24].copy_from_slice(&off.to_le_bytes());
            head[24..32].copy_from_slice(&len.to_le_bytes());
            head[32] = kind as u8;
            head[33] = if kind == RecordKind::Marker {
                NO_DISK
            } else {
                0
            };
            bytes.extend(head);
            bytes.extend(payload);
        };
        record(0, RecordKind::Write, 4096, b"abcd", 4);
        record(1, RecordKind::Flush, 0, b"", 0);
        record(2, RecordKind::Marker, 0, b"m", 1);
        std::fs::write(&path, &bytes).unwrap();

        let r = LogReader::open(&path).unwrap();
        assert_eq!(r.version(), 1);
        assert_eq!(r.header.disks[0].volatile_cache, None);
        let all = all_records(&path);
        assert_eq!(all.len(), 3);
        assert_eq!((all[0].offset, &all[0].payload[..]), (4096, &b"abcd"[..]));
        assert!(all.iter().all(|r| r.issued.is_none() && r.acked.is_none()));
        assert_eq!((all[2].seq, &all[2].payload[..]), (2, &b"m"[..]));
        let (_, s) = summarize(&path).unwrap();
        assert_eq!(s.markers, [(2, "m".to_string())]);
        let img = dir.path().join("0.img");
        File::create(&img).unwrap().set_len(8192).unwrap();
        assert_eq!(replay(&path, &[&img], None).unwrap(), 3);
        assert_eq!(&std::fs::read(&img).unwrap()[4096..4100], b"abcd");
    }

    #[test]
    fn a_log_of_an_unknown_version_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.log");
        let json = br#"{"version":3,"disks":[],"initial_state":"zeros"}"#;
        let mut bytes = b"JBWLOG03".to_vec();
        bytes.extend((json.len() as u32).to_le_bytes());
        bytes.extend(json);
        std::fs::write(&path, &bytes).unwrap();
        let e = LogReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("version 3") && e.contains("JBWLOG03"), "{e}");
        assert!(e.contains("reads versions 1 and 2"), "{e}");
    }

    #[test]
    fn a_header_that_contradicts_its_magic_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let json = br#"{"version":1,"disks":[],"initial_state":"zeros"}"#;
        let mut bytes = MAGIC.to_vec();
        bytes.extend((json.len() as u32).to_le_bytes());
        bytes.extend(json);
        std::fs::write(&path, &bytes).unwrap();
        let e = LogReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("magic says version 2"), "{e}");
    }

    #[test]
    fn a_file_that_is_not_a_log_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"NOTALOG!....").unwrap();
        let e = LogReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("not a jbench write log"), "{e}");
    }

    #[test]
    fn header_fields_absent_from_a_disk_are_not_written() {
        let mut h = header();
        h.disks[1].volatile_cache = None;
        h.disks[1].honor_flush = None;
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(json.matches("volatile_cache").count(), 1, "{json}");
        assert!(
            json.contains(r#""volatile_cache":true,"honor_flush":false"#),
            "{json}"
        );
    }
}
