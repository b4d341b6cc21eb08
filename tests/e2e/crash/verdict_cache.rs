//! The application's verdict reused for a state with the same recovered content and
//! promises: hits happen, failures never come from the cache, and a check that stops
//! agreeing with itself is caught by an audit, which turns the cache off.

use crate::common;

use std::path::Path;

use common::*;
use jbench::results::crash::{CacheUse, Verdict};

fn spec(work: &Path) -> String {
    // `recover` marks a workload that starts an application: the cache is for those.
    // The check counts its runs in a file outside the state (appends: several rigs
    // check states at once). With FLIP=1 it also fails on files it has seen before, as
    // an application whose answer does not follow its input would: the first audit
    // runs it on a state it has seen, and must catch it.
    let check = r#"echo run >> "$COUNTER"; s=$(cat f1 f2 f3 2>/dev/null | sha256sum | cut -c1-16); if [ "$FLIP" = 1 ] && grep -qx "$s" "$COUNTER.seen" 2>/dev/null; then echo "seen $s before"; exit 1; fi; echo "$s" >> "$COUNTER.seen"; exit 0"#;
    format!(
        r#"name = "verdict-cache"
seed = 1
suspect_below = "60s"
work_dir = "{work}"

[filesystem]
type = "ext4"
size = "64M"
device_model = "hdd-7200"

[journal]
size = "4M"
mode = "ordered"
placement = "internal"

[[config]]
label = "steady"
env = {{ FLIP = "0", COUNTER = "{work}/steady.count" }}

[[config]]
label = "flips"
env = {{ FLIP = "1", COUNTER = "{work}/flips.count" }}

[[workload]]
kind = "command"
name = "files"
run = ["/bin/sh", "-c", "for i in 1 2 3; do head -c 32768 /dev/urandom > f$i && sync f$i; done"]
recover = ["/bin/sh", "-c", "exit 0"]
check = ["/bin/sh", "-c", '{check}']
check_timeout = "20s"

[crash]
states = 40
recovery_timing = 0
"#,
        work = work.display(),
    )
}

#[test]
fn a_passing_verdict_is_reused_audited_and_dropped_when_the_check_disagrees() {
    require!(root, fuse);
    let tmp = scratch("crash-verdict-cache-");
    let path = write_spec(tmp.path(), "cache", &spec(tmp.path()));
    let results = tmp.path().join("results");
    let out = jbench()
        .arg("crash")
        .arg(&path)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let records = jbench::results::crash::load_crash_records(&results.join("crash.jsonl"))
        .unwrap_or_else(|e| panic!("{e:#}\n{stderr}"));
    let groups = by_config(&records);
    let used = |cfg: &str, u: CacheUse| {
        groups[cfg]
            .iter()
            .filter(|r| r.check_cache == Some(u))
            .count()
    };

    // Three files and a handful of flushes: many states recover to the same files.
    let steady = &groups["steady"];
    assert_eq!(steady.len(), 40, "{stderr}");
    assert!(steady.iter().all(|r| r.verdict == Verdict::Ok), "{stderr}");
    let (hits, audits) = (
        used("steady", CacheUse::Hit),
        used("steady", CacheUse::Audited),
    );
    assert!(
        hits > 0 && audits > 0,
        "hits {hits}, audits {audits}\n{stderr}"
    );
    assert!(audits <= hits, "one hit in five is audited, the first too");
    let ran = std::fs::read_to_string(tmp.path().join("steady.count")).unwrap();
    assert_eq!(
        ran.lines().count(),
        40 - hits,
        "the check runs on every state but the hits"
    );
    assert!(
        stderr.contains("steady / files: ") && stderr.contains("reused its verdict"),
        "{stderr}"
    );

    // The flipping check: an audit catches it, its state fails on its own verdict, and
    // no failure anywhere comes from the cache.
    let flips = &groups["flips"];
    let caught: Vec<_> = flips
        .iter()
        .filter(|r| r.check_cache == Some(CacheUse::Disagreed))
        .collect();
    // Rigs audit side by side: a second audit may be under way when the first one
    // turns the cache off, and it disagrees too.
    assert!(!caught.is_empty(), "{stderr}");
    for c in &caught {
        assert_eq!(c.verdict, Verdict::CheckFailed);
        assert!(
            c.evidence
                .iter()
                .any(|e| e.starts_with("the verdict cache was wrong here")),
            "{:?}",
            c.evidence
        );
    }
    assert!(
        stderr.contains(&format!("{} DISAGREED", caught.len())),
        "{stderr}"
    );
    for r in &records {
        if r.verdict.is_failure() {
            assert_ne!(r.check_cache, Some(CacheUse::Hit), "{r:?}");
        }
    }
    assert_no_leaks(tmp.path());
}
