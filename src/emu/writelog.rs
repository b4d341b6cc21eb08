//! The write log: every write, flush and discard of every emulated disk of a trial, in
//! one globally ordered sequence, plus markers a workload inserts after an fsync
//! returns. Replaying a prefix of it onto zeroed images builds a disk state a power cut
//! could leave (what crash-consistency testing needs). Format (docs/write-log.md), all integers
//! little-endian:
//!
//! ```text
//! file    = magic "JBWLOG01" | u32 header_len | header (JSON, header_len bytes) | record*
//! record  = u64 seq | u64 time_ns | u64 offset | u64 len | u8 kind | u8 disk | 6 bytes 0
//!           | payload (len bytes for `write` and `marker`, none otherwise)
//! ```
//!
//! `seq` counts from 0 with no gaps; `time_ns` is since the daemon started. Records are
//! in acknowledgement order: a record is written when the daemon answers the request,
//! so every write acknowledged before a flush was issued precedes that flush.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub const MAGIC: &[u8; 8] = b"JBWLOG01";
/// Bytes of a record before its payload.
pub const RECORD_HEADER: usize = 40;
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
    /// Everything acknowledged before this record is durable on `disk`.
    Flush = 4,
    /// A workload's marker; the payload is its label (UTF-8).
    Marker = 5,
}

impl RecordKind {
    fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Write,
            2 => Self::Zero,
            3 => Self::Discard,
            4 => Self::Flush,
            5 => Self::Marker,
            _ => return None,
        })
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

/// A decoded record; `payload` is empty except for `write` and `marker`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub seq: u64,
    pub time_ns: u64,
    pub kind: RecordKind,
    pub disk: u8,
    pub offset: u64,
    pub len: u64,
    pub payload: Vec<u8>,
}

/// Appends records; the daemon holds it behind a mutex so `seq` is one global order.
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
        let json = serde_json::to_vec(header)?;
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
        time_ns: u64,
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
        head[8..16].copy_from_slice(&time_ns.to_le_bytes());
        head[16..24].copy_from_slice(&offset.to_le_bytes());
        head[24..32].copy_from_slice(&len.to_le_bytes());
        head[32] = kind as u8;
        head[33] = disk;
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

/// Reads a log written by [`LogWriter`]. A torn last record (the daemon was killed
/// mid-append) ends the iteration without an error; anything else malformed is one.
pub struct LogReader {
    input: BufReader<File>,
    pub header: LogHeader,
    expect_seq: u64,
}

impl LogReader {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path)
            .with_context(|| format!("cannot open the write log {}", path.display()))?;
        let mut input = BufReader::with_capacity(1 << 20, file);
        let mut magic = [0u8; 8];
        input
            .read_exact(&mut magic)
            .with_context(|| format!("{} is too short to be a write log", path.display()))?;
        if &magic != MAGIC {
            bail!(
                "{} is not a jbench write log (magic {:?}, expected {:?})",
                path.display(),
                String::from_utf8_lossy(&magic),
                String::from_utf8_lossy(MAGIC)
            );
        }
        let mut n = [0u8; 4];
        input.read_exact(&mut n)?;
        let mut json = vec![0u8; u32::from_le_bytes(n) as usize];
        input.read_exact(&mut json)?;
        let header: LogHeader = serde_json::from_slice(&json)
            .with_context(|| format!("bad header in write log {}", path.display()))?;
        Ok(Self {
            input,
            header,
            expect_seq: 0,
        })
    }

    /// The next record, `None` at the end (or at a torn last record).
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let mut head = [0u8; RECORD_HEADER];
        if !read_full(&mut self.input, &mut head)? {
            return Ok(None);
        }
        let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap());
        let seq = u64_at(0);
        let kind = RecordKind::from_u8(head[32])
            .with_context(|| format!("record {seq}: unknown kind {}", head[32]))?;
        if seq != self.expect_seq {
            bail!("record {seq} found where {} was expected", self.expect_seq);
        }
        let len = u64_at(24);
        let payload = match kind {
            RecordKind::Write | RecordKind::Marker => {
                let mut p = vec![0u8; len as usize];
                if !read_full(&mut self.input, &mut p)? {
                    return Ok(None);
                }
                p
            }
            _ => Vec::new(),
        };
        self.expect_seq += 1;
        Ok(Some(Record {
            seq,
            time_ns: u64_at(8),
            kind,
            disk: head[33],
            offset: u64_at(16),
            len,
            payload,
        }))
    }
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
    while let Some(rec) = r.next_record()? {
        s.records += 1;
        match rec.kind {
            RecordKind::Write => {
                s.writes += 1;
                s.write_bytes += rec.len;
            }
            RecordKind::Zero => s.zero_writes += 1,
            RecordKind::Discard => s.discards += 1,
            RecordKind::Flush => s.flushes += 1,
            RecordKind::Marker => s
                .markers
                .push((rec.seq, String::from_utf8_lossy(&rec.payload).into_owned())),
        }
    }
    Ok((r.header, s))
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
                    let mut done = 0;
                    while done < rec.len {
                        let n = (rec.len - done).min(zeros.len() as u64) as usize;
                        f.write_all_at(&zeros[..n], rec.offset + done)?;
                        done += n as u64;
                    }
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

    fn header() -> LogHeader {
        LogHeader {
            version: 1,
            disks: vec![
                LogDisk {
                    index: 0,
                    name: "fs".into(),
                    size: 1 << 20,
                    model: "hdd-7200".into(),
                },
                LogDisk {
                    index: 1,
                    name: "journal".into(),
                    size: 1 << 16,
                    model: "ram".into(),
                },
            ],
            initial_state: "zeros".into(),
        }
    }

    #[test]
    fn records_round_trip_in_order_and_zero_writes_carry_no_payload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut w = LogWriter::create(&path, &header()).unwrap();
        w.append(RecordKind::Write, 0, 4096, 3, b"abc", 10).unwrap();
        w.append(RecordKind::Write, 1, 0, 4096, &[0u8; 4096], 11)
            .unwrap();
        w.append(RecordKind::Flush, 1, 0, 0, &[], 12).unwrap();
        w.append(RecordKind::Marker, NO_DISK, 0, 0, b"fsync f1", 13)
            .unwrap();
        w.append(RecordKind::Discard, 0, 8192, 4096, &[], 14)
            .unwrap();
        assert_eq!(w.records(), 5);
        w.flush().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert_eq!(size, w.bytes());

        let mut r = LogReader::open(&path).unwrap();
        assert_eq!(r.header, header());
        let mut all = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            all.push(rec);
        }
        let kinds: Vec<RecordKind> = all.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                RecordKind::Write,
                RecordKind::Zero,
                RecordKind::Flush,
                RecordKind::Marker,
                RecordKind::Discard
            ]
        );
        assert_eq!(all[0].payload, b"abc");
        assert_eq!((all[1].len, all[1].payload.len()), (4096, 0));
        assert_eq!(all[3].payload, b"fsync f1");
        assert_eq!(all[3].len, 8);
        assert_eq!(
            all.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(all[4].time_ns, 14);
    }

    #[test]
    fn a_torn_last_record_ends_the_log_quietly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut w = LogWriter::create(&path, &header()).unwrap();
        w.append(RecordKind::Write, 0, 0, 5, b"hello", 1).unwrap();
        w.append(RecordKind::Write, 0, 5, 5, b"world", 2).unwrap();
        w.flush().unwrap();
        let full = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 2).unwrap();
        let (_, s) = summarize(&path).unwrap();
        assert_eq!(s.records, 1);
    }

    #[test]
    fn replay_rebuilds_images_and_stops_at_a_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.log");
        let mut w = LogWriter::create(&path, &header()).unwrap();
        w.append(RecordKind::Write, 0, 0, 4, b"AAAA", 1).unwrap();
        w.append(RecordKind::Write, 1, 2, 2, b"JJ", 2).unwrap();
        w.append(RecordKind::Flush, 0, 0, 0, &[], 3).unwrap();
        w.append(RecordKind::Discard, 0, 1, 2, &[], 4).unwrap();
        w.flush().unwrap();
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
    fn a_file_that_is_not_a_log_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        std::fs::write(&path, b"NOTALOG!....").unwrap();
        let e = LogReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("not a jbench write log"), "{e}");
    }
}
