//! The held-out bug classes found by the user-space path and confirmed by the kernel's
//! audit (every state the path calls broken is judged again by the kernel), and a
//! replay broken on purpose (revoke records skipped) caught by the audit. The first
//! class, a journal write persisted in part, is in `crash_bugs.rs`.

use crate::common;

use std::path::Path;

use common::*;
use jbench::results::crash::{load_crash_records, CrashRecord, JudgedBy, Verdict};

fn spec(work: &Path, configs: &str, workload: &str, crash: &str) -> String {
    super::crash_bugs::spec(work, "", configs, workload, crash)
}

/// The states the user-space path called broken and the kernel agreed were.
fn found_and_confirmed<'a>(records: &[&'a CrashRecord]) -> Vec<&'a CrashRecord> {
    records
        .iter()
        .copied()
        .filter(|r| r.judged_by == Some(JudgedBy::Audited) && r.verdict != Verdict::Ok)
        .collect()
}

fn no_disagreement(records: &[CrashRecord], stderr: &str) {
    assert!(
        records
            .iter()
            .all(|r| r.judged_by != Some(JudgedBy::Disagreed)),
        "the user-space path disagreed with the kernel:\n{stderr}"
    );
    assert!(!stderr.contains("DISAGREED"), "{stderr}");
}

#[test]
fn the_user_space_path_finds_a_rename_without_fsync_under_noauto_da_alloc() {
    require!(root, fuse);
    let tmp = scratch("fast-rename-");
    // The application replaces `target` by writing a new file and renaming it over,
    // without fsync, and promises only that `target` is never empty. ext4 writes the
    // new file's blocks before the rename commits only with auto_da_alloc.
    let configs = r#"
[[config]]
label = "default"
journal.placement = "internal"
journal.commit = "1s"

[[config]]
label = "noauto-da-alloc"
journal.placement = "internal"
journal.commit = "1s"
filesystem.mount_options = ["noauto_da_alloc"]
"#;
    let workload = r#"[[workload]]
kind = "command"
name = "replace"
shell = true
run = "head -c 8192 /dev/urandom > target && sync target && echo 'durable target nonempty' >> \"$JBENCH_DURABLE\" && for i in $(seq 1 25); do head -c 8192 /dev/urandom > tmp && mv tmp target; sleep 0.1; done"
"#;
    let body = spec(tmp.path(), configs, workload, "states = 150");
    let path = write_spec(tmp.path(), "crash.toml", &body);
    let (code, stderr, records) = crash_run(&path, &tmp.path().join("results"));
    no_disagreement(&records, &stderr);
    let groups = by_config(&records);
    let found = found_and_confirmed(&groups["noauto-da-alloc"]);
    assert!(
        !found.is_empty(),
        "no empty target found by the user-space path and confirmed:\n{stderr}"
    );
    assert!(
        found.iter().all(|r| r.verdict == Verdict::LostFsynced
            && r.evidence.iter().any(|e| e.contains("target: empty"))),
        "{:?}",
        found[0].evidence
    );
    let default = &groups["default"];
    assert!(default.iter().all(|r| r.verdict == Verdict::Ok));
    assert!(
        default
            .iter()
            .any(|r| r.judged_by == Some(JudgedBy::UserSpace)),
        "the user-space path judged none of the default states"
    );
    assert_eq!(code, Some(5), "{stderr}");
    assert_no_leaks(tmp.path());
}

#[test]
fn the_user_space_path_finds_torn_writes_on_a_disk_whose_flushes_are_not_asked_for() {
    require!(root, fuse);
    let tmp = scratch("fast-torn-");
    // barrier=0 on a disk with a volatile cache: fsync returns before the cache is
    // drained, so a promised file's write can be left torn at a logical block.
    let configs = r#"
[[config]]
label = "barrier0"
journal.placement = "internal"
filesystem.mount_options = ["barrier=0"]
"#;
    let body = spec(
        tmp.path(),
        configs,
        super::crash_bugs::FSYNC,
        "states = 60\nstrategies = [\"torn\"]",
    );
    let path = write_spec(tmp.path(), "crash.toml", &body);
    let (_, stderr, records) = crash_run(&path, &tmp.path().join("results"));
    no_disagreement(&records, &stderr);
    let all: Vec<&CrashRecord> = records.iter().collect();
    let found = found_and_confirmed(&all);
    assert!(
        found.iter().any(|r| r.verdict == Verdict::LostFsynced),
        "no torn promise found by the user-space path and confirmed:\n{stderr}"
    );
    for r in &found {
        let t = r.torn.as_ref().expect("a torn state names its write");
        assert!(t.kept_bytes % 4096 == 0 && t.kept_bytes < t.len, "{t:?}");
    }
    assert_no_leaks(tmp.path());
}

#[test]
fn a_replay_that_skips_revoke_records_is_caught_by_the_audit() {
    require!(root, fuse);
    let tmp = scratch("fast-revoke-");
    // A directory's blocks are logged, the directory removed (its blocks revoked) and
    // the blocks reused at once for new files' data, written in place: the file
    // system is filled first, so that the freed blocks are the only free ones. A
    // replay that skips the revoke records writes the old directory blocks over the
    // files' data.
    let configs = "[[config]]\nlabel = \"internal\"\njournal.placement = \"internal\"\n";
    let workload = r#"[[workload]]
kind = "command"
name = "reuse"
shell = true
run = "echo 0 > /sys/fs/ext4/$(basename $(findmnt -n -o SOURCE --target .))/reserved_clusters && mkdir big && for i in $(seq 1 600); do : > big/an-entry-with-a-rather-long-name-to-fill-blocks-$i; done && sync big && n=0 && for k in 4096 256 16 1; do while fallocate -l $((k*4096)) fill.$n 2>/dev/null; do n=$((n+1)); done; done && sync fill.0 && rm -rf big && sync . && for i in $(seq 1 6); do head -c 8192 /dev/urandom > f$i && sync f$i && echo \"durable f$i sha256=$(sha256sum f$i | cut -c1-64)\" >> \"$JBENCH_DURABLE\"; done"
"#;
    let body = spec(tmp.path(), configs, workload, "states = 120");
    let path = write_spec(tmp.path(), "crash.toml", &body);
    let honest = crash_ok(&path, &tmp.path().join("honest"));
    assert!(honest.iter().all(|r| r.verdict == Verdict::Ok));
    assert!(honest
        .iter()
        .all(|r| r.judged_by != Some(JudgedBy::Disagreed)));
    assert!(honest
        .iter()
        .any(|r| r.judged_by == Some(JudgedBy::UserSpace) && r.fsynced_files > 0));
    let out = jbench()
        .arg("crash")
        .arg(&path)
        .arg("--results")
        .arg(tmp.path().join("broken"))
        .env(jbench::crash::user_verdict::BREAK_VAR, "skip-revokes")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let broken = load_crash_records(&tmp.path().join("broken/crash.jsonl")).unwrap();
    let caught: Vec<_> = broken
        .iter()
        .filter(|r| r.judged_by == Some(JudgedBy::Disagreed))
        .collect();
    assert!(
        !caught.is_empty(),
        "the broken replay was not caught:\n{stderr}"
    );
    // The kernel's verdict stands, and the path is off for the rest of the trial:
    // only a state another rig had under way may still be judged in user space.
    assert!(broken.iter().all(|r| r.verdict == Verdict::Ok));
    let first = caught.iter().map(|r| r.state).min().unwrap();
    let rigs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let after: Vec<_> = broken.iter().filter(|r| r.state > first).collect();
    assert!(after.len() > rigs, "{stderr}");
    assert!(
        after
            .iter()
            .filter(|r| r.judged_by != Some(JudgedBy::Kernel))
            .count()
            < rigs,
        "{:?}",
        after.iter().map(|r| r.judged_by).collect::<Vec<_>>()
    );
    assert!(
        stderr.contains("THE USER-SPACE VERDICT DISAGREED WITH THE KERNEL")
            && stderr.contains("REPLAY WAS BROKEN ON PURPOSE"),
        "{stderr}"
    );
    assert_no_leaks(tmp.path());
}
