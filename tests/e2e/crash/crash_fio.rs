//! The crash lab on fio and iozone: their `durable-range` promises (fio's fdatasync
//! relayed from strace, iozone's O_SYNC writes) are checked against the bytes
//! `range_content` predicts; an honest disk keeps every one, a disk that lies about
//! flushes loses some.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use jbench::results::crash::{CrashRecord, Verdict};

fn spec(work: &Path) -> String {
    format!(
        r#"name = "crash-fio"
seed = 11
suspect_below = "60s"
work_dir = "{}"

[models.liar]
model = "hdd-7200"
honor_flush = false

[filesystem]
type = "ext4"
size = "128M"
device_model = "hdd-7200"

[journal]
size = "8M"
mode = "ordered"
placement = "internal"

[[config]]
label = "honest"

[[config]]
label = "lying-disk"
filesystem.device_model = "liar"

[[workload]]
kind = "fio"
name = "fio-fdatasync"
job_text = """
[global]
ioengine=psync
size=256k
bs=4k
[db]
rw=randwrite
fdatasync=1
"""

[[workload]]
kind = "iozone"
name = "iozone-osync"
record = "16K"
size = "128K"
tests = ["write"]
osync = true

[crash]
states = 30
recovery_timing = 0
strategies = ["prefix", "subset"]
"#,
        work.display()
    )
}

#[test]
fn fio_and_iozone_promises_hold_on_an_honest_disk_and_break_on_a_lying_one() {
    let test = "fio_and_iozone_promises_hold_on_an_honest_disk_and_break_on_a_lying_one";
    if !(need_root(test)
        && need_fuse(test)
        && need_program(test, "fio", "fio")
        && need_program(test, "strace", "strace"))
    {
        return;
    }
    let tmp = scratch("crash-fio-");
    let spec = write_spec(tmp.path(), "crash.toml", &spec(tmp.path()));
    let results = tmp.path().join("results");
    let records = crash_ok(&spec, &results);
    let mut groups: BTreeMap<(String, String), Vec<&CrashRecord>> = BTreeMap::new();
    for r in &records {
        groups
            .entry((r.config.clone(), r.workload.clone()))
            .or_default()
            .push(r);
    }
    assert_eq!(groups.len(), 4, "{:?}", groups.keys());
    for ((config, workload), states) in &groups {
        assert!(
            states.iter().all(|r| r.checks_fsync),
            "{config} / {workload}: the lab does not check its promises"
        );
        assert!(
            states.iter().any(|r| r.fsynced_files > 0),
            "{config} / {workload}: no state had a promise to check"
        );
        if config == "honest" {
            let bad: Vec<_> = states.iter().filter(|r| r.verdict != Verdict::Ok).collect();
            assert!(
                bad.is_empty(),
                "{config} / {workload}: {} states not ok, first {:?}",
                bad.len(),
                bad.first()
            );
        } else {
            assert!(states.iter().all(|r| r.negative_control));
            let lost: Vec<_> = states
                .iter()
                .filter(|r| r.verdict == Verdict::LostFsynced)
                .collect();
            assert!(
                !lost.is_empty(),
                "{config} / {workload}: no lost-fsynced state among {}",
                states.len()
            );
        }
    }
    // The relayed promises name fio's file, as the recording saw it.
    let lost_fio = records
        .iter()
        .filter(|r| r.workload == "fio-fdatasync" && r.verdict == Verdict::LostFsynced)
        .flat_map(|r| r.evidence.iter())
        .any(|e| e.contains("jbench-fio.") && e.contains("db.0.0"));
    assert!(lost_fio, "no evidence names fio's file");
    assert_no_leaks(tmp.path());
}
