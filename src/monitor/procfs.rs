//! Readers of the kernel's counters: `/proc/diskstats`, `/proc/stat`,
//! `/proc/meminfo` and `/proc/fs/jbd2/<dev>/info`, each a pure function of the text.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The counters of one `/proc/diskstats` line (Documentation/admin-guide/iostats.rst).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub sectors_read: u64,
    pub writes: u64,
    pub sectors_written: u64,
    pub in_flight: u64,
    pub io_ms: u64,
    /// Flush requests completed (field 16; 0 on kernels before 5.5).
    pub flushes: u64,
}

/// Parses one line of `/proc/diskstats`: `(device name, counters)`.
pub fn parse_diskstats_line(line: &str) -> Option<(&str, DiskCounters)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 14 {
        return None;
    }
    let n = |i: usize| -> Option<u64> { f.get(i).map_or(Some(0), |s| s.parse().ok()) };
    Some((
        f[2],
        DiskCounters {
            reads: n(3)?,
            sectors_read: n(5)?,
            writes: n(7)?,
            sectors_written: n(9)?,
            in_flight: n(11)?,
            io_ms: n(12)?,
            flushes: n(18)?,
        },
    ))
}

/// The counters of device `name` in the text of `/proc/diskstats`.
pub fn diskstats_of(text: &str, name: &str) -> Option<DiskCounters> {
    text.lines()
        .filter_map(parse_diskstats_line)
        .find(|(n, _)| *n == name)
        .map(|(_, c)| c)
}

/// Cumulative CPU time of the `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice.
    pub user: u64,
    /// system + irq + softirq.
    pub system: u64,
    pub iowait: u64,
    /// Every column but guest and guest_nice (already counted in user and nice).
    pub total: u64,
}

pub fn parse_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(CpuTicks {
        user: at(0) + at(1),
        system: at(2) + at(5) + at(6),
        iowait: at(4),
        total: (0..8).map(at).sum(),
    })
}

/// `Dirty` and `Writeback` of `/proc/meminfo`, KiB.
pub fn parse_meminfo(text: &str) -> (u64, u64) {
    let mut dirty = 0;
    let mut writeback = 0;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(key), Some(v)) = (f.next(), f.next()) else {
            continue;
        };
        let v = v.parse().unwrap_or(0);
        match key {
            "Dirty:" => dirty = v,
            "Writeback:" => writeback = v,
            _ => {}
        }
    }
    (dirty, writeback)
}

/// What `/proc/fs/jbd2/<dev>/info` shows. Averages are the kernel's: per transaction
/// since the journal was loaded (the commit time is a running average).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Jbd2Info {
    pub transactions: u64,
    pub requested: u64,
    /// Blocks a transaction may hold.
    pub max_blocks: u64,
    /// "running transaction", ms.
    pub avg_transaction_ms: u64,
    /// "logging transaction", ms.
    pub avg_logging_ms: u64,
    /// "average transaction commit time", µs.
    pub avg_commit_us: u64,
    pub handles_per_transaction: u64,
    pub blocks_per_transaction: u64,
    pub logged_blocks_per_transaction: u64,
}

pub fn parse_jbd2_info(text: &str) -> Option<Jbd2Info> {
    let mut info = Jbd2Info::default();
    let first = text.lines().next()?;
    // "3 transactions (3 requested), each up to 1365 blocks"
    let mut words = first.split_whitespace();
    info.transactions = words.next()?.parse().ok()?;
    if words.next()? != "transactions" {
        return None;
    }
    let nums: Vec<u64> = first
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    info.requested = nums.get(1).copied().unwrap_or(0);
    info.max_blocks = nums.get(2).copied().unwrap_or(0);
    for line in text.lines().skip(1) {
        let line = line.trim();
        let Some((num, rest)) = line.split_once(' ') else {
            continue;
        };
        let digits: String = num.chars().take_while(char::is_ascii_digit).collect();
        let Ok(v) = digits.parse::<u64>() else {
            continue;
        };
        match rest.trim() {
            "running transaction" => info.avg_transaction_ms = v,
            "logging transaction" => info.avg_logging_ms = v,
            "average transaction commit time" => info.avg_commit_us = v,
            "handles per transaction" => info.handles_per_transaction = v,
            "blocks per transaction" => info.blocks_per_transaction = v,
            "logged blocks per transaction" => info.logged_blocks_per_transaction = v,
            _ => {}
        }
    }
    Some(info)
}

/// The jbd2 instance of a mounted file system: named after the journal device, or
/// `<fs device>-<inode>` for an internal journal.
pub fn find_jbd2(fs_dev: &str, journal_dev: Option<&str>) -> Option<String> {
    if let Some(j) = journal_dev {
        return Path::new("/proc/fs/jbd2")
            .join(j)
            .join("info")
            .exists()
            .then(|| j.to_string());
    }
    let prefix = format!("{fs_dev}-");
    std::fs::read_dir("/proc/fs/jbd2")
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(&prefix))
}

/// The kernel's name of a block device (`loop3` for `/dev/loop3` or a symlink to it).
pub fn kernel_name(dev: &Path) -> String {
    let real = std::fs::canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    real.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
