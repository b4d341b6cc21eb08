//! What a workload asks of the device, counted before it runs: the figures `jbench plan`
//! turns into an expected time with the device's own costs (`experiment::estimate`).
//! Each engine counts what it knows from its parameters; none of it is measured.

/// Counts of the device-level work one run of a workload does.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Work {
    /// Bytes written through the page cache that reach the device in large runs.
    pub bytes_written: u64,
    /// Bytes read back from the device (the page cache dropped or too small).
    pub bytes_read: u64,
    /// fsync/fdatasync calls and synchronous writes: each waits for a journal commit.
    pub syncs: u64,
    /// fdatasync calls after overwrites of allocated blocks: the data and a flush,
    /// no journal commit.
    pub data_syncs: u64,
    /// Small writes at scattered places that each reach the device on their own.
    pub random_writes: u64,
    /// Small reads at scattered places that miss the page cache.
    pub random_reads: u64,
    /// Bytes read back soon after they were written: from the page cache when the
    /// trial's memory holds them, else from the device.
    pub bytes_read_back: u64,
    /// Creates, removes and other metadata calls that stay in memory.
    pub metadata_ops: u64,
    /// Seconds the workload runs whatever the device (a time-based fio job).
    pub fixed_seconds: f64,
    /// True when the counts are a guess from sizes alone (a user's command).
    pub guessed: bool,
    /// True when `bytes_written` reaches the device as the writeback of many separate
    /// files, each at its own place (PostMark). It is priced as streamed, which is far
    /// too little on a disk whose scattered writes wait for the medium; which of the
    /// files reach the disk before they are deleted is not modelled, so the estimate
    /// says so instead (`TrialEstimate::writeback_unpriced`).
    pub scattered_writeback: bool,
}

impl Work {
    /// What is known of a workload that says only how much it holds at its peak:
    /// its data written once and its inodes made and removed.
    pub fn from_peaks(data_bytes: u64, inodes: u64) -> Self {
        Work {
            bytes_written: data_bytes,
            metadata_ops: inodes.saturating_mul(2),
            guessed: true,
            ..Work::default()
        }
    }
}
