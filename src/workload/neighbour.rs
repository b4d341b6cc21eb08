//! A neighbour writing beside the workload, as in production: a log rarely has its
//! disk to itself, and the cost of sharing one shows in the tail of its commits. The
//! workload's `neighbour_rate` starts one writer thread in the file system under test
//! for the whole of the workload's run: it writes 256 KiB chunks at the set rate into
//! a rotation of four 8 MiB files (a new file is truncated and filled again, so its
//! blocks are allocated afresh, as a bulk loader's or a log rotator's are), and makes
//! every 1 MiB durable with `fdatasync`, so its writes reach the disk steadily rather
//! than in writeback's bursts. What it achieved is recorded with the trial: a disk too
//! slow for the rate shows as a neighbour below its target, never as a silent change
//! of the experiment.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

/// The directory the neighbour writes in, at the top of the file system under test.
pub const DIR_NAME: &str = ".jbench-neighbour";
const CHUNK: usize = 256 << 10;
const SYNC_EVERY: u64 = 1 << 20;
const FILE_BYTES: u64 = 8 << 20;
const FILES: usize = 4;
/// The most space the neighbour holds: what a file system under test needs besides
/// the workload's own data.
pub const FOOTPRINT_BYTES: u64 = FILE_BYTES * FILES as u64;

/// What the neighbour did during one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighbourLoad {
    /// The workload's `neighbour_rate`, bytes per second.
    pub target_bytes_per_sec: u64,
    /// Bytes written and made durable, and over how long.
    pub bytes: u64,
    pub seconds: f64,
    pub fdatasyncs: u64,
}

impl NeighbourLoad {
    /// Bytes per second the neighbour achieved.
    pub fn achieved_bytes_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// A running neighbour, stopped by [`Neighbour::stop`] (or on drop).
pub struct Neighbour {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<NeighbourLoad>>>,
    dir: PathBuf,
}

impl Neighbour {
    /// Starts writing at `bytes_per_sec` in [`DIR_NAME`] under `mount`.
    pub fn start(mount: &Path, bytes_per_sec: u64) -> Result<Neighbour> {
        if bytes_per_sec == 0 {
            return Err(anyhow!("a neighbour writes at more than 0 bytes/s"));
        }
        let dir = mount.join(DIR_NAME);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create the neighbour's {}", dir.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s, d) = (stop.clone(), dir.clone());
        let handle = std::thread::Builder::new()
            .name("jbench-neighbour".into())
            .spawn(move || write_loop(&d, bytes_per_sec, &s))
            .context("cannot start the neighbour's thread")?;
        Ok(Neighbour {
            stop,
            handle: Some(handle),
            dir,
        })
    }

    /// Stops the writer, removes its files and returns what it did.
    pub fn stop(mut self) -> Result<NeighbourLoad> {
        self.stop.store(true, Ordering::SeqCst);
        let load = self
            .handle
            .take()
            .expect("joined once")
            .join()
            .map_err(|_| anyhow!("the neighbour's thread panicked"))?;
        let _ = std::fs::remove_dir_all(&self.dir);
        load.with_context(|| format!("the neighbour writing in {} failed", self.dir.display()))
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn open_fresh(dir: &Path, i: usize) -> Result<File> {
    let path = dir.join(format!("n{i}"));
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))
}

fn write_loop(dir: &Path, rate: u64, stop: &AtomicBool) -> Result<NeighbourLoad> {
    // Not zeros: a file system or device that compresses or skips zero blocks would
    // write less than the neighbour claims.
    let chunk: Vec<u8> = (0..CHUNK).map(|i| (i * 131 % 251) as u8).collect();
    let started = Instant::now();
    let mut load = NeighbourLoad {
        target_bytes_per_sec: rate,
        bytes: 0,
        seconds: 0.0,
        fdatasyncs: 0,
    };
    let (mut file_no, mut in_file, mut unsynced) = (0usize, 0u64, 0u64);
    let mut f = open_fresh(dir, file_no)?;
    while !stop.load(Ordering::SeqCst) {
        // Paced: the next chunk is due when the bytes so far are the rate's worth.
        let due = started + Duration::from_secs_f64(load.bytes as f64 / rate as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep((due - now).min(Duration::from_millis(20)));
            continue;
        }
        f.write_all(&chunk).context("neighbour write")?;
        load.bytes += CHUNK as u64;
        in_file += CHUNK as u64;
        unsynced += CHUNK as u64;
        if unsynced >= SYNC_EVERY {
            f.sync_data().context("neighbour fdatasync")?;
            load.fdatasyncs += 1;
            unsynced = 0;
        }
        if in_file >= FILE_BYTES {
            file_no = (file_no + 1) % FILES;
            f = open_fresh(dir, file_no)?;
            in_file = 0;
        }
    }
    load.seconds = started.elapsed().as_secs_f64();
    Ok(load)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_neighbour_keeps_its_rate_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let n = Neighbour::start(dir.path(), 8 << 20).unwrap();
        std::thread::sleep(Duration::from_millis(600));
        let load = n.stop().unwrap();
        assert!(load.seconds >= 0.5, "{load:?}");
        // Paced, never ahead of the rate by more than one chunk.
        let allowed = (8u64 << 20) as f64 * load.seconds + CHUNK as f64;
        assert!(load.bytes as f64 <= allowed, "{load:?}");
        assert!(
            load.bytes >= CHUNK as u64 && load.fdatasyncs >= 1,
            "{load:?}"
        );
        assert!(!dir.path().join(DIR_NAME).exists());
        assert!(Neighbour::start(dir.path(), 0).is_err());
    }
}
