//! Running `jbench crash` in the crash tests and reading what it recorded.

use std::collections::BTreeMap;
use std::path::Path;

use jbench::crash::lab::LoadedLog;
use jbench::crash::recover::RecoveryRig;
use jbench::experiment::spec::Spec;
use jbench::results::crash::{load_crash_records, CrashRecord};

use super::jbench;

/// `jbench crash SPEC --results DIR`: its exit code, stderr and crash records.
pub fn crash_run(spec: &Path, results: &Path) -> (Option<i32>, String, Vec<CrashRecord>) {
    let out = jbench()
        .arg("crash")
        .arg(spec)
        .arg("--results")
        .arg(results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let records = load_crash_records(&results.join("crash.jsonl")).unwrap();
    (out.status.code(), stderr, records)
}

/// [`crash_run`], which must exit 0; its crash records.
pub fn crash_ok(spec: &Path, results: &Path) -> Vec<CrashRecord> {
    let (code, stderr, records) = crash_run(spec, results);
    assert_eq!(code, Some(0), "jbench crash failed:\n{stderr}");
    records
}

/// The records per configuration.
pub fn by_config(records: &[CrashRecord]) -> BTreeMap<String, Vec<&CrashRecord>> {
    let mut m: BTreeMap<String, Vec<&CrashRecord>> = BTreeMap::new();
    for r in records {
        m.entry(r.config.clone()).or_default().push(r);
    }
    m
}

/// The block labels kept beside the first write log of a crash run's results.
pub fn block_map_of(results: &Path) -> jbench::crash::block_map::BlockMap {
    let map = std::fs::read_dir(results.join("write-logs"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".blocks.json"))
        .expect("a block map beside the write log");
    serde_json::from_slice(&std::fs::read(&map).unwrap()).unwrap()
}

/// A recovery rig for the recorded trial of the experiment's first configuration.
pub fn rig_for(
    spec: &Spec,
    log: &LoadedLog,
    log_path: &Path,
    timeout: std::time::Duration,
) -> RecoveryRig {
    RecoveryRig::new(
        &spec.work_dir,
        &spec.configs[0],
        &log.header,
        log_path,
        timeout,
    )
    .unwrap()
}

/// Sends Ctrl-C to `child` once `crash_file` holds `states` crash records (failing
/// after `secs` seconds, or if the child ends first), and returns its output.
pub fn interrupt_in_the_lab(
    mut child: std::process::Child,
    crash_file: &Path,
    states: usize,
    secs: u64,
) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while load_crash_records(crash_file).map(|r| r.len()).unwrap_or(0) < states {
        assert!(
            std::time::Instant::now() < deadline,
            "no {states} crash states after {secs} s"
        );
        assert!(child.try_wait().unwrap().is_none(), "jbench ended early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    child.wait_with_output().unwrap()
}
