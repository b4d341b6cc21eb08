//! Runs beside each other on one host (the shards of a run under GNU parallel) share
//! the kernel's dirty limits, which a trial in a memory cgroup scales to its limit: a
//! run started beside another's trial records the host's own limits, not the other's
//! scaled ones; a trial that needs other limits waits for the one holding them; and
//! only the last one out puts the host's back.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::*;

/// `(dirty_ratio, dirty_background_ratio, dirty_bytes, dirty_background_bytes)`.
fn limits() -> (u64, u64, u64, u64) {
    (
        vm("dirty_ratio"),
        vm("dirty_background_ratio"),
        vm("dirty_bytes"),
        vm("dirty_background_bytes"),
    )
}

/// The host's dirty_ratio applied to `memory` (rig::dirty::scaled). Read before a
/// trial changes them: while dirty_bytes is set, dirty_ratio reads 0.
fn scaled_for(host: (u64, u64, u64, u64), memory: u64) -> u64 {
    memory / 100 * host.0
}

/// A one-trial run in a `memory` cgroup whose command workload writes the dirty limit
/// it runs under to `seen`, then waits for `release` to exist (if given).
fn spec(
    tmp: &Path,
    name: &str,
    memory: &str,
    seen: &Path,
    release: Option<&Path>,
) -> std::path::PathBuf {
    let body = tiny_spec(tmp, r#""internal""#, 1, "");
    let body = body.replacen(
        "\n[filesystem]",
        &format!("memory_limit = \"{memory}\"\n\n[filesystem]"),
        1,
    );
    let at = body.find("[[workload]]").unwrap();
    let wait = release.map_or(String::new(), |r| {
        format!(" && while [ ! -e {} ]; do sleep 0.05; done", r.display())
    });
    let run = format!(
        "cd / && cat /proc/sys/vm/dirty_bytes > {}{wait}",
        seen.display()
    );
    let body = format!(
        "{}[[workload]]\nkind = \"command\"\nname = \"c\"\nrun = \"{run}\"\nshell = true\n",
        &body[..at]
    );
    write_spec(tmp, name, &body)
}

fn start(spec: &Path, results: &Path) -> Child {
    jbench()
        .arg("run")
        .arg(spec)
        .arg("--results")
        .arg(results)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !cond() {
        assert!(Instant::now() < deadline, "never saw: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn finish(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

fn seen(file: &Path) -> u64 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn no_restore_files() {
    let left: Vec<String> = std::fs::read_dir("/run/jbench")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("dirty-limits-"))
        .collect();
    assert!(left.is_empty(), "restore files left: {left:?}");
}

#[test]
fn a_run_beside_anothers_trial_records_the_hosts_limits_and_the_last_one_puts_them_back() {
    let _alone = crate::alone();
    require!(root, memcg);
    let host = limits();
    assert_eq!(
        host.2, 0,
        "the test needs the host on ratios (dirty_bytes 0)"
    );
    let tmp = scratch("shared-host-");
    let (seen_a, seen_b, release) = (
        tmp.path().join("seen-a"),
        tmp.path().join("seen-b"),
        tmp.path().join("release"),
    );
    let a = start(
        &spec(tmp.path(), "a", "64M", &seen_a, Some(&release)),
        &tmp.path().join("a"),
    );
    wait_for("run a's trial", || seen_a.exists());
    let scaled = scaled_for(host, 64 << 20);
    assert_eq!(limits().2, scaled, "run a's trial runs under scaled limits");

    // Run b, beside a's trial, with the same memory limit: it shares a's change.
    let b = start(
        &spec(tmp.path(), "b", "64M", &seen_b, None),
        &tmp.path().join("b"),
    );
    finish(b);
    assert_eq!(
        seen(&seen_b),
        scaled,
        "run b's trial ran under its own scaled limit"
    );
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("b/env.json")).unwrap()).unwrap();
    let w = &env["writeback"];
    assert_eq!(
        (&w["dirty_ratio"], &w["dirty_bytes"]),
        (&serde_json::json!(host.0), &serde_json::json!(host.2)),
        "run b records the host's own limits, not run a's scaled ones: {w}"
    );
    assert_eq!(
        limits().2,
        scaled,
        "run a's trial still has its limits after b ended"
    );

    std::fs::write(&release, "").unwrap();
    finish(a);
    assert_eq!(
        limits(),
        host,
        "the last one out put the host's limits back"
    );
    no_restore_files();
    assert_no_leaks(tmp.path());
}

#[test]
fn a_trial_that_needs_other_limits_waits_for_the_one_holding_them() {
    let _alone = crate::alone();
    require!(root, memcg);
    let host = limits();
    let tmp = scratch("shared-host-wait-");
    let (seen_a, seen_c, release) = (
        tmp.path().join("seen-a"),
        tmp.path().join("seen-c"),
        tmp.path().join("release"),
    );
    let a = start(
        &spec(tmp.path(), "a", "64M", &seen_a, Some(&release)),
        &tmp.path().join("a"),
    );
    wait_for("run a's trial", || seen_a.exists());
    let c = start(
        &spec(tmp.path(), "c", "96M", &seen_c, None),
        &tmp.path().join("c"),
    );
    // Its trial must not start under a's limits, nor change them under a.
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        !seen_c.exists(),
        "run c's trial started while a held other limits"
    );
    assert_eq!(limits().2, scaled_for(host, 64 << 20));

    std::fs::write(&release, "").unwrap();
    finish(a);
    let stderr = finish(c);
    assert!(stderr.contains("waiting for jbench"), "{stderr}");
    assert_eq!(
        seen(&seen_c),
        scaled_for(host, 96 << 20),
        "run c ran under its own limits"
    );
    assert_eq!(limits(), host);
    no_restore_files();
    assert_no_leaks(tmp.path());
}
