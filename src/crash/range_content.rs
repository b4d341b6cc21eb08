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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fio_content_follows_the_recorded_job_text() {
        let params = json!({"job_text": "[global]\nsize=64k\n[a]\nrw=write\nbs=8k\nfsync=1\n\
                                         [b]\nrw=write\nverify=md5\nfsync=1\n[c]\nrw=write\n"});
        let got = range_content("fio", &params, "jbench-fio.7/a.0.0", 8192, 4096 + 16).unwrap();
        let mut unit = b"jbfio\0\0\0".to_vec();
        unit.extend(8192u64.to_le_bytes());
        assert_eq!(&got[..16], &unit[..]);
        assert_eq!(
            &got[4096..],
            &unit[..],
            "the second 4 KiB repeats the write's start"
        );
        assert_eq!(got.len(), 4096 + 16);
        // Its own verify: the range must exist, its bytes are fio's.
        assert_eq!(
            range_content("fio", &params, "jbench-fio.7/b.0.0", 0, 10),
            None
        );
        assert_eq!(
            range_content("fio", &params, "jbench-fio.7/c.0.0", 0, 10),
            None
        );
        assert_eq!(
            range_content("fio", &params, "jbench-fio.7/zzz", 0, 10),
            None
        );
        assert_eq!(range_content("fio", &json!({}), "a.0.0", 0, 10), None);
        assert!(promises_of("fio", &params));
        assert!(!promises_of(
            "fio",
            &json!({"job_text": "[a]\nsize=1M\nrw=write\n"})
        ));
        assert!(!promises_of(
            "fio",
            &json!({"job_text": "[a]\nsize=1M\nrw=write\nioengine=libaio\nfsync=1\n"})
        ));
    }

    #[test]
    fn iozone_content_is_stamped_blocks_of_osync_runs_only() {
        let p = |osync: bool, threads: u64| json!({"osync": osync, "threads": threads, "record": "4K", "size": "64K"});
        let got = range_content("iozone", &p(true, 1), "iozone.tmp", 4096, 4096).unwrap();
        assert_eq!(&got[..4], b"jbIZ");
        assert_eq!(&got[4..8], &0u32.to_le_bytes());
        assert_eq!(&got[8..16], &4096u64.to_le_bytes());
        assert!(got[16..].iter().all(|b| *b == 0xA5));
        let got = range_content("iozone", &p(true, 3), "sub/iozone.DUMMY.2", 0, 16).unwrap();
        assert_eq!(&got[4..8], &2u32.to_le_bytes());
        assert_eq!(
            range_content("iozone", &p(true, 3), "iozone.DUMMY.3", 0, 16),
            None
        );
        assert_eq!(
            range_content("iozone", &p(true, 3), "iozone.tmp", 0, 16),
            None
        );
        assert_eq!(
            range_content("iozone", &p(false, 1), "iozone.tmp", 0, 16),
            None
        );
        assert!(promises_of("iozone", &p(true, 1)));
        assert!(!promises_of("iozone", &p(false, 1)));
        assert!(promises_of("fsync", &json!({})));
        assert!(!promises_of("fdtree", &json!({})));
        assert_eq!(range_content("postmark", &json!({}), "x", 0, 1), None);
    }

    #[test]
    fn durable_range_labels_round_trip_paths_with_spaces() {
        let l = crate::workload::durable_range_label(Path::new("/m/a b/c 1"), 4096, 8192);
        assert_eq!(l, "durable-range /m/a b/c 1 4096 8192");
        assert_eq!(
            crate::workload::parse_durable_range(&l),
            Some(("/m/a b/c 1", 4096, 8192))
        );
        assert_eq!(crate::workload::parse_durable_range("fsync /x"), None);
        assert_eq!(
            crate::workload::parse_durable_range("durable-range /x 1"),
            None
        );
    }
}
