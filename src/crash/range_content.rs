//! What a workload's `durable-range` promises must hold after recovery, from the
//! trial's recorded `params` alone (trials.jsonl), and whether it makes promises.
//!
//! - `fio`: the jobs jbench could give a pattern to (see
//!   `workload::fio::promises`) hold `tag ‖ le64(start of the write)` repeated; the
//!   tag and the write block size follow from `params.job_text`. Files of other
//!   jobs: `None` (the range must exist).
//! - `iozone` with `osync`: every 4 KiB block starts with a 16-byte stamp of the file
//!   and the block's offset, the rest is iozone's fill byte.

use std::path::Path;

use crate::workload::fio::promises::{self, Plan, Rule};
use crate::workload::iozone;

/// The bytes `[offset, offset + len)` of `rel_path` (relative to the file system's
/// root) must hold once a `durable-range` marker promised them; `None` when the
/// workload's bytes there cannot be known (only the range's existence is checked).
pub fn range_content(
    kind: &str,
    params: &serde_json::Value,
    rel_path: &str,
    offset: u64,
    len: u64,
) -> Option<Vec<u8>> {
    // A range that cannot be held in memory is a corrupt marker, not a promise.
    if len > 1 << 32 || offset.checked_add(len).is_none() {
        return None;
    }
    match kind {
        "fio" => {
            let plan = Plan::of_text(params.get("job_text")?.as_str()?)?;
            match plan.rule(promises::within_work_dir(rel_path)) {
                Rule::Pattern(p) => Some(p.content(offset, len)),
                Rule::Exists | Rule::Ignore => None,
            }
        }
        "iozone" => {
            if !params.get("osync")?.as_bool()? {
                return None;
            }
            let id = iozone::file_id(Path::new(rel_path))?;
            let threads = params.get("threads").and_then(|t| t.as_u64()).unwrap_or(1);
            // Single-stream mode writes iozone.tmp only; throughput mode DUMMY files.
            let name = Path::new(rel_path).file_name()?.to_str()?;
            let single = name == iozone::SINGLE_FILE;
            if single != (threads <= 1) || u64::from(id) >= threads.max(1) {
                return None;
            }
            Some(iozone::stamped_content(id, offset, len))
        }
        _ => None,
    }
}

/// Whether a workload of `kind` with `params` makes promises the crash lab checks:
/// `fsync` always; `fio` when a job it can follow syncs (fsync, fdatasync,
/// sync/O_DSYNC, end_fsync, fsync_on_close); `iozone` with `osync`.
pub fn promises_of(kind: &str, params: &serde_json::Value) -> bool {
    match kind {
        "fsync" => true,
        "fio" => params
            .get("job_text")
            .and_then(|t| t.as_str())
            .and_then(Plan::of_text)
            .is_some_and(|p| p.promises()),
        "iozone" => params.get("osync").and_then(|o| o.as_bool()) == Some(true),
        _ => false,
    }
}
