//! What a job file asks of the device, read from the options that decide it: fio lays
//! out every file first, then does `number_ios` (else `io_size`, else `size`) worth of
//! `bs` requests per clone, with a sync every `fsync`/`fdatasync` writes; a
//! `time_based` job runs its `runtime` whatever the device.

use super::jobfile::{parse_fio_size, Dir, Job, JobFile};
use crate::workload::work::Work;

impl JobFile {
    pub fn work(&self) -> Work {
        let mut w = Work::default();
        for job in &self.jobs {
            let clones = number(job, "numjobs").unwrap_or(1).max(1);
            for _ in 0..clones.min(1024) {
                add_job(job, &mut w);
            }
        }
        w.metadata_ops = self.files.saturating_mul(2);
        w
    }
}

fn number(job: &Job, key: &str) -> Option<u64> {
    job.get(key)
        .and_then(|o| o.value.as_deref())
        .and_then(parse_fio_size)
}

fn add_job(job: &Job, w: &mut Work) {
    let size = number(job, "size").unwrap_or(0);
    let bs = number(job, "bs")
        .or_else(|| number(job, "blocksize"))
        .unwrap_or(4096)
        .max(1);
    let dirs = job.dirs().unwrap_or_default();
    let writes = dirs.contains(&Dir::Write);
    let reads = dirs.contains(&Dir::Read);
    let random = job
        .get("rw")
        .or_else(|| job.get("readwrite"))
        .and_then(|o| o.value.as_deref())
        .is_some_and(|v| v.trim().starts_with("rand"));
    if job.flag("time_based") {
        let runtime = job
            .get("runtime")
            .and_then(|o| o.value.as_deref())
            .and_then(|v| v.trim().trim_end_matches('s').parse::<f64>().ok())
            .unwrap_or(0.0);
        w.fixed_seconds += runtime;
        // Laid out before the clock starts.
        w.bytes_written = w.bytes_written.saturating_add(size);
        return;
    }
    let ios = number(job, "number_ios")
        .filter(|&n| n > 0)
        .unwrap_or_else(|| number(job, "io_size").unwrap_or(size) / bs);
    // Before the job runs, fio writes a reader's file and fallocates a writer's:
    // counted as written once either way, an upper bound for writers.
    w.bytes_written = w.bytes_written.saturating_add(size);
    let share = |n: u64| if writes && reads { n / 2 } else { n };
    if writes {
        let n = share(ios);
        if random {
            w.random_writes = w.random_writes.saturating_add(n);
        } else {
            w.bytes_written = w.bytes_written.saturating_add(n.saturating_mul(bs));
        }
        // fio lays a file out with fallocate, as unwritten extents: a write into one
        // changes the extent, so even an fdatasync commits (fio-db measured 33 ms per
        // fdatasync on hdd-7200, a commit's cost). With `fallocate=none` the layout
        // wrote the blocks, and an fdatasync is the data and a flush alone.
        let laid_out_written = job
            .get("fallocate")
            .and_then(|o| o.value.as_deref())
            .is_some_and(|v| matches!(v.trim(), "none" | "0"));
        let fsync = number(job, "fsync").filter(|&e| e > 0);
        let every = number(job, "fdatasync")
            .filter(|&e| e > 0)
            .or(fsync)
            .or_else(|| (job.flag("sync") || job.flag("o_sync")).then_some(1));
        if let Some(every) = every {
            if laid_out_written && fsync.is_none() {
                w.data_syncs = w.data_syncs.saturating_add(n / every);
            } else {
                w.syncs = w.syncs.saturating_add(n / every);
            }
        }
        if random && every == Some(1) {
            // The write is paid inside its sync.
            w.random_writes = w.random_writes.saturating_sub(n);
        }
    }
    if reads {
        let n = share(ios);
        if random {
            w.random_reads = w.random_reads.saturating_add(n);
        } else {
            w.bytes_read_back = w.bytes_read_back.saturating_add(n.saturating_mul(bs));
        }
    }
}
