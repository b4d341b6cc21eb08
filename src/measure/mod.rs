//! The measuring engine of `jbench device qualify` and `jbench device calibrate`:
//! requests sent one at a time (queue depth 1) to a file or block device, each timed.
//! Qualify measures a device with it; calibrate is a qualification of an emulated disk
//! whose figures are then set beside the model's.

mod buffer;

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub use buffer::DirectBuf;

use crate::emu::model::{Kind, Request};

/// The largest request a [`Target`] sends.
pub const MAX_REQUEST: usize = 1 << 20;

/// Whether a [`Target`] bypasses the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direct {
    /// `O_DIRECT`, or an error.
    Required,
    /// `O_DIRECT` where the file system takes it; buffered where it refuses it (tmpfs).
    Preferred,
    /// Through the page cache (a log's appends, as `fio --fdatasync=1` writes them).
    Never,
}

/// A file or block device requests are sent to.
pub struct Target {
    file: File,
    path: PathBuf,
    direct: bool,
    buf: DirectBuf,
}

impl Target {
    /// Opens `path` (which must exist) for reading and writing.
    pub fn open(path: &Path, direct: Direct) -> Result<Self> {
        let open = |flags: i32| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(flags | libc::O_NOFOLLOW)
                .open(path)
        };
        let (file, direct) = match direct {
            Direct::Never => (open(0), false),
            Direct::Required => (open(libc::O_DIRECT), true),
            Direct::Preferred => match open(libc::O_DIRECT) {
                // tmpfs and a few others refuse O_DIRECT at open.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (open(0), false),
                other => (other, true),
            },
        };
        let file = file.with_context(|| {
            format!(
                "cannot open {}{}",
                path.display(),
                if direct { " with O_DIRECT" } else { "" }
            )
        })?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            direct,
            buf: DirectBuf::new(MAX_REQUEST)?,
        })
    }

    /// Whether requests bypass the page cache.
    pub fn direct(&self) -> bool {
        self.direct
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends `stream` one request at a time (a flush is `fdatasync`); returns the
    /// elapsed time, and pushes each request's own time onto `each` when given.
    pub fn run(
        &mut self,
        stream: &[Request],
        mut each: Option<&mut Vec<Duration>>,
    ) -> Result<Duration> {
        let started = Instant::now();
        for r in stream {
            // Only read the clock per request when asked: calibrate times the stream.
            let t = each.is_some().then(Instant::now);
            let len = (r.len as usize).min(MAX_REQUEST);
            match r.kind {
                Kind::Read => self.file.read_exact_at(self.buf.get(len), r.offset),
                Kind::Write => self.file.write_all_at(self.buf.get(len), r.offset),
                Kind::Flush => nix::unistd::fdatasync(self.file.as_raw_fd()).map_err(Into::into),
                Kind::Discard => Ok(()),
            }
            .map_err(|e| explain(e, r, &self.path))?;
            if let (Some(v), Some(t)) = (each.as_deref_mut(), t) {
                v.push(t.elapsed());
            }
        }
        Ok(started.elapsed())
    }
}

/// An I/O error of request `r` on `path`, with what to do about the common ones.
fn explain(e: std::io::Error, r: &Request, path: &Path) -> anyhow::Error {
    let what = format!(
        "{} of {} bytes at {} on {}",
        r.kind,
        r.len,
        r.offset,
        path.display()
    );
    match e.raw_os_error() {
        Some(libc::ENOSPC) => anyhow::anyhow!(
            "{what}: the file system is full. Free some space or measure with a smaller --size."
        ),
        Some(libc::EROFS) => {
            anyhow::anyhow!("{what}: the file system is read-only. Pick a writable directory.")
        }
        _ => anyhow::Error::new(e).context(what),
    }
}

/// The `q` quantile of `sorted` (nearest rank, rounded); `None` when it is empty.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let last = sorted.len().checked_sub(1)?;
    Some(sorted[(last as f64 * q.clamp(0.0, 1.0)).round() as usize])
}

/// Percentiles of a set of request times, in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Latency {
    /// The percentiles of `times` (nearest rank, at 0.1% resolution: a histogram of
    /// three significant figures, as fio's).
    pub fn of(times: &[Duration]) -> Self {
        if times.is_empty() {
            return Self::default();
        }
        // 1 ns to an hour; a longer request is recorded as an hour.
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
            .expect("valid bounds");
        let mut sum = 0.0;
        for t in times {
            let ns = t.as_nanos().min(u64::MAX as u128) as u64;
            h.saturating_record(ns.max(1));
            sum += t.as_secs_f64();
        }
        let us = |ns: u64| ns as f64 / 1e3;
        Self {
            count: times.len() as u64,
            mean_us: sum * 1e6 / times.len() as f64,
            p50_us: us(h.value_at_quantile(0.50)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_within_a_tenth_of_a_percent() {
        let times: Vec<Duration> = (1..=1000).map(Duration::from_micros).collect();
        let l = Latency::of(&times);
        assert_eq!(l.count, 1000);
        assert!((l.mean_us - 500.5).abs() < 1e-6, "{l:?}");
        for (got, want) in [
            (l.p50_us, 500.0),
            (l.p99_us, 990.0),
            (l.p999_us, 999.0),
            (l.max_us, 1000.0),
        ] {
            assert!(
                (got - want).abs() <= want * 0.001 + 1e-9,
                "{got} against {want}: {l:?}"
            );
        }
        assert_eq!(Latency::of(&[]), Latency::default());
        let sorted: Vec<u32> = (0..=100).collect();
        assert_eq!(quantile(&sorted, 0.5), Some(50));
        assert_eq!(quantile(&sorted, 0.99), Some(99));
        assert_eq!(quantile(&sorted, 2.0), Some(100));
        assert_eq!(quantile::<u32>(&[], 0.5), None);
    }

    #[test]
    fn a_full_or_read_only_file_system_is_said_with_the_fix() {
        let r = Request::write(4096, 4096);
        let p = Path::new("/data/.jbench-qualify-1/data");
        let full = explain(std::io::Error::from_raw_os_error(libc::ENOSPC), &r, p).to_string();
        assert!(
            full.contains("/data/.jbench-qualify-1/data")
                && full.contains("is full")
                && full.contains("--size"),
            "{full}"
        );
        let ro = explain(std::io::Error::from_raw_os_error(libc::EROFS), &r, p).to_string();
        assert!(ro.contains("read-only") && ro.contains("writable"), "{ro}");
        let other = explain(std::io::Error::from_raw_os_error(libc::EIO), &r, p);
        assert!(
            format!("{other:#}").contains("a write of 4096 bytes at 4096"),
            "{other:#}"
        );
    }

    #[test]
    fn a_stream_is_sent_and_timed_request_by_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let mut t = Target::open(&path, Direct::Never).unwrap();
        assert!(!t.direct());
        let stream = [
            Request::write(4096, 2300),
            Request::flush(),
            Request::read(0, 4096),
        ];
        let mut each = Vec::new();
        let total = t.run(&stream, Some(&mut each)).unwrap();
        assert_eq!(each.len(), 3);
        assert!(each.iter().sum::<Duration>() <= total);
        let data = std::fs::read(&path).unwrap();
        assert!(data[4096..4096 + 2300].iter().all(|&b| b == 0x5a));
        assert!(data[4096 + 2300..8192].iter().all(|&b| b == 0));
        // A read past the end is an error naming the request and the file.
        let err = t.run(&[Request::read(2 << 20, 4096)], None).unwrap_err();
        assert!(
            format!("{err:#}").contains(&path.display().to_string()),
            "{err:#}"
        );
    }
}
