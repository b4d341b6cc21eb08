//! `jbench run --jobs N` through the hidden `--executor scripted` (no devices, no root):
//! trials run side by side in `jbench trial` child processes, the run stores what they
//! report, and the results are the ones a run of one trial at a time gives; trials the
//! slots keep apart never overlap; `--resume` finishes a concurrent run.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn emulated_spec() -> String {
    r#"name = "jobs"
repetitions = 3
[filesystem]
size = "1G"
device_model = "hdd-7200"
[[config]]
label = "internal"
journal.placement = "internal"
[[config]]
label = "ramdisk"
journal.placement = "ramdisk"
journal.device_model = "ram"
[[workload]]
kind = "fdtree"
dirs = 2
levels = 2
"#
    .to_string()
}

fn jbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jbench"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn run(dir: &Path, spec: &str, results: &str, jobs: &str) -> Output {
    let out = jbench(
        dir,
        &[
            "run",
            spec,
            "--executor",
            "scripted",
            "--results",
            results,
            "--jobs",
            jobs,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn records(results: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(results.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn beside(r: &serde_json::Value) -> Vec<u64> {
    r["concurrency"]["beside"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_u64().unwrap()).collect())
        .unwrap_or_default()
}

fn scratch() -> tempfile::TempDir {
    std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    tempfile::Builder::new()
        .prefix("jobs-scripted-")
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap()
}

#[test]
fn trials_side_by_side_give_the_results_of_one_at_a_time() {
    let tmp = scratch();
    std::fs::write(tmp.path().join("e.toml"), emulated_spec()).unwrap();
    let out = run(tmp.path(), "e.toml", "three", "3");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("6 trials, up to 3 at once"), "{said}");
    run(tmp.path(), "e.toml", "one", "1");
    let three = records(&tmp.path().join("three"));
    let one = records(&tmp.path().join("one"));
    assert_eq!(three.len(), 6);
    assert_eq!(one.len(), 6);
    // Every trial ran beside another, and "beside" is mutual.
    for r in &three {
        assert_eq!(r["concurrency"]["jobs"], 3, "{r}");
        let me = r["trial"].as_u64().unwrap();
        let others = beside(r);
        assert!(
            !others.is_empty(),
            "trial {me} ran alone in a run of 3 jobs"
        );
        for o in others {
            let other = three.iter().find(|x| x["trial"] == o).unwrap();
            assert!(beside(other).contains(&me), "{me} beside {o} but not back");
        }
    }
    assert!(one.iter().all(|r| r.get("concurrency").is_none()));
    // The scripted figures depend on the trial alone: the same summary either way.
    let summary =
        |d: &str| std::fs::read_to_string(tmp.path().join(d).join("summary.csv")).unwrap();
    assert_eq!(summary("three"), summary("one"));
}

#[test]
fn trials_timed_on_the_hosts_disk_never_overlap() {
    let tmp = scratch();
    // No device_model: images on the host's disk, so every trial runs alone.
    std::fs::write(tmp.path().join("h.toml"), common::scripted_spec("host", "")).unwrap();
    run(tmp.path(), "h.toml", "r", "4");
    let rs = records(&tmp.path().join("r"));
    assert_eq!(rs.len(), 6);
    for r in &rs {
        assert_eq!(beside(r), Vec::<u64>::new(), "{r}");
    }
}

#[test]
fn resume_finishes_a_concurrent_run() {
    let tmp = scratch();
    std::fs::write(tmp.path().join("e.toml"), emulated_spec()).unwrap();
    run(tmp.path(), "e.toml", "r", "2");
    let file = tmp.path().join("r/trials.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let kept: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&file, kept.join("\n") + "\n").unwrap();
    let out = jbench(
        tmp.path(),
        &[
            "run",
            "e.toml",
            "--executor",
            "scripted",
            "--resume",
            "r",
            "--jobs",
            "2",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rs = records(&tmp.path().join("r"));
    let mut trials: Vec<u64> = rs.iter().map(|r| r["trial"].as_u64().unwrap()).collect();
    trials.sort();
    assert_eq!(trials, vec![0, 1, 2, 3, 4, 5]);
}

#[test]
fn the_a_a_check_compares_the_trial_alone_and_beside_others() {
    let tmp = scratch();
    std::fs::write(tmp.path().join("e.toml"), emulated_spec()).unwrap();
    let out = jbench(
        tmp.path(),
        &[
            "selftest",
            "jobs",
            "e.toml",
            "--config",
            "ramdisk",
            "--jobs",
            "4",
            "--jobs",
            "2",
            "--rounds",
            "3",
            "--results",
            "aa",
            "--executor",
            "scripted",
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("aa/jobs-check.json")).unwrap())
            .unwrap();
    let shifted = report["shifts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["phases"][0]["decision"] == "different");
    assert_eq!(
        out.status.code(),
        Some(if shifted { 4 } else { 0 }),
        "{said}"
    );
    assert_eq!(report["configuration"], "ramdisk");
    assert_eq!(
        report["alone_trials"], 6,
        "3 rounds for each of 2 and 4 jobs"
    );
    let shifts = report["shifts"].as_array().unwrap();
    assert_eq!(shifts.len(), 2);
    assert_eq!(shifts[0]["jobs"], 2, "in order");
    assert_eq!(shifts[1]["label"], "beside-3");
    for s in shifts {
        // fdtree ranks on file_create+syncfs when durable, else file_create.
        let main = s["phases"][0]["phase"].as_str().unwrap();
        assert!(main.starts_with("file_create"), "{s}");
        let low = s["phases"][0]["low"].as_f64().unwrap();
        let ratio = s["phases"][0]["ratio"].as_f64().unwrap();
        assert!(low <= ratio, "{s}");
    }
    assert!(
        said.contains("--jobs 2:") && said.contains("(main phase)"),
        "{said}"
    );
    // The records: alone ones ran with nothing beside them, the others beside 1 or 3.
    let rs = records(&tmp.path().join("aa"));
    assert_eq!(rs.len(), 12);
    for r in &rs {
        let label = r["config"]["label"].as_str().unwrap();
        let others = beside(r).len();
        match label {
            "alone" => assert_eq!(others, 0, "{r}"),
            "beside-1" | "beside-3" => assert!(others >= 1, "{r}"),
            other => panic!("label {other}"),
        }
    }
}

#[test]
fn the_a_a_check_refuses_a_trial_timed_on_the_hosts_disk() {
    let tmp = scratch();
    std::fs::write(tmp.path().join("h.toml"), common::scripted_spec("host", "")).unwrap();
    let out = jbench(
        tmp.path(),
        &[
            "selftest",
            "jobs",
            "h.toml",
            "--results",
            "aa",
            "--executor",
            "scripted",
        ],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(said.contains("a disk of the host times"), "{said}");
    let one = jbench(
        tmp.path(),
        &[
            "selftest",
            "jobs",
            "h.toml",
            "--jobs",
            "1",
            "--executor",
            "scripted",
        ],
    );
    assert!(String::from_utf8_lossy(&one.stderr).contains("--jobs must be 2 or more"));
}

#[test]
fn trials_under_a_memory_limit_share_the_host_only_where_cgroups_keep_dirty_limits_apart() {
    let tmp = scratch();
    let spec = emulated_spec().replace(
        "repetitions = 3\n",
        "repetitions = 3\nmemory_limit = \"512M\"\n",
    );
    std::fs::write(tmp.path().join("m.toml"), spec).unwrap();
    run(tmp.path(), "m.toml", "r", "3");
    let rs = records(&tmp.path().join("r"));
    assert_eq!(rs.len(), 6);
    let overlapped = rs.iter().filter(|r| !beside(r).is_empty()).count();
    if jbench::rig::memcg::is_v1() {
        assert_eq!(overlapped, 0, "v1: a memory limit runs alone");
        let aa = jbench(
            tmp.path(),
            &[
                "selftest",
                "jobs",
                "m.toml",
                "--results",
                "aa",
                "--executor",
                "scripted",
            ],
        );
        assert!(
            String::from_utf8_lossy(&aa.stderr).contains("memory cgroups are v1"),
            "{}",
            String::from_utf8_lossy(&aa.stderr)
        );
    } else {
        assert_eq!(overlapped, 6, "v2: every trial ran beside another");
    }
}
