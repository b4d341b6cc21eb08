//! A second file system on a disk of its own (`filesystem.second_size`): made and
//! mounted beside the first, named to the workload in `$JBENCH_SECOND_FS`, cut at the
//! same instant as the first by the crash lab and recovered with it. A log kept there
//! with fsync loses nothing; the same log without it (the negative control) must lose
//! records, or the lab is not reading the second disk at all.

use jbench::results::crash::{load_crash_records, Verdict};
use jbench::results::store;

use crate::common::*;

const RECORDS: u64 = 120;

fn spec(work: &std::path::Path) -> String {
    format!(
        r#"name = "second-fs"
repetitions = 1
work_dir = "{work}"

[filesystem]
type = "ext4"
size = "128M"
device_model = "ram"
second_size = "64M"

[journal]
size = "8M"

[[config]]
label = "synced"
env = {{ SYNC = "1" }}

[[config]]
label = "unsynced"
env = {{ SYNC = "0" }}
negative_control = true

[[workload]]
kind = "command"
name = "split-log"
shell = true
run = '''
set -e
S="$JBENCH_SECOND_FS"
# The second file system is its own mount, not a folder of the first.
mountpoint -q "$S"
[ "$(stat -c %d "$S")" != "$(stat -c %d .)" ]
[ "$SYNC" = 1 ] && sync "$S"
i=0
while [ $i -lt {RECORDS} ]; do
  echo "rec $i" >> "$S/log"
  [ "$SYNC" = 1 ] && sync "$S/log"
  echo "durable-key $i" >> "$JBENCH_DURABLE"
  i=$((i + 1))
done
echo "the log is in $S" > where.txt
'''
check = '''
S="$JBENCH_SECOND_FS"
mountpoint -q "$S" || {{ echo "$S is not mounted"; exit 1; }}
missing=0
: > "$JBENCH_MISSING_KEYS"
while read -r k; do
  grep -qx "rec $k" "$S/log" 2>/dev/null || {{ echo "$k" >> "$JBENCH_MISSING_KEYS"; missing=$((missing + 1)); }}
done < "$JBENCH_PROMISED_KEYS"
[ $missing -eq 0 ] || {{ echo "$missing promised records missing"; exit 3; }}
'''

[crash]
states = 24
recovery_timing = 2
"#,
        work = work.display()
    )
}

#[test]
fn a_second_file_system_is_made_beside_the_first_and_recovered_with_it() {
    require!(root, fuse);
    let tmp = scratch("second-fs-");
    let spec = write_spec(tmp.path(), "second.toml", &spec(&tmp.path().join("work")));
    let dir = tmp.path().join("results");
    run_ok(jbench().arg("run").arg(&spec).arg("--results").arg(&dir));
    let trials = store::load_records(&dir).unwrap();
    assert!(!trials.is_empty());
    for t in &trials {
        assert!(t.is_ok(), "trial {} failed", t.trial);
        let layout = &t.layout;
        let mnt = layout["second_mount_point"].as_str().expect("recorded");
        assert_ne!(mnt, layout["mount_point"].as_str().unwrap());
        assert!(layout["second_fs_device"].as_str().is_some(), "{layout:#}");
        let disks: Vec<&str> = layout["emulated_disks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(disks, ["fs", "second"], "both disks emulated and logged");
    }
    let crash = load_crash_records(&dir.join("crash.jsonl")).unwrap();
    for config in ["synced", "unsynced"] {
        let states: Vec<_> = crash.iter().filter(|r| r.config == config).collect();
        assert!(states.len() >= 6, "{config}: {} states", states.len());
        assert!(states.iter().all(|r| r.user_check), "{config}");
        let promised = states.iter().map(|r| r.records_promised).max().unwrap();
        assert!(promised > 0 && promised <= RECORDS, "{config}: {promised}");
        let lost = states
            .iter()
            .filter(|r| r.verdict == Verdict::LostFsynced)
            .count();
        if config == "synced" {
            let bad: Vec<String> = states
                .iter()
                .filter(|r| r.verdict != Verdict::Ok)
                .map(|r| format!("state {}: {:?} {:?}", r.state, r.verdict, r.evidence))
                .collect();
            assert!(bad.is_empty(), "fsync'ed records lost:\n{}", bad.join("\n"));
        } else {
            assert!(
                lost > 0,
                "no state lost an unsynced record: the second disk is not cut"
            );
            assert!(states.iter().filter_map(|r| r.records_lost).any(|n| n > 0));
        }
    }
    assert_no_leaks(tmp.path());
}
