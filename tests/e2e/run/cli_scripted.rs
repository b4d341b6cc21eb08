//! The whole command-line path of `jbench run` (spec -> plan -> runner -> store ->
//! report -> summary.csv -> report.html, then `report` and `--resume`) through the
//! hidden `--executor scripted`, which provisions nothing: the test runs the real
//! binary as an unprivileged user (nobody, when the tests run as root), so it needs
//! neither root nor devices.

use crate::common;

use std::os::unix::fs::{chown, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: u32 = 65534;

fn spec_text() -> String {
    common::scripted_spec("scripted", "")
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A scratch directory the unprivileged user owns, with the experiment file in it.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    let tmp = tempfile::Builder::new()
        .prefix("cli-scripted-")
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap();
    let spec = tmp.path().join("scripted.toml");
    std::fs::write(&spec, spec_text()).unwrap();
    if is_root() {
        for p in [tmp.path(), spec.as_path()] {
            chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (tmp, spec)
}

/// jbench, run in `dir` as nobody when the tests run as root, else as the caller.
fn jbench(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_jbench"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_jbench"))
    };
    cmd.args(args).current_dir(dir).output().unwrap()
}

/// `jbench run scripted.toml` through the scripted executor into `results`.
fn run_scripted(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "scripted.toml",
        "--executor",
        "scripted",
        "--results",
        "results",
    ];
    args.extend_from_slice(extra);
    jbench(dir, &args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn trial_lines(results: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(results.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_scripted_run_goes_from_spec_to_html_without_root_and_resume_adds_nothing() {
    let (tmp, _spec) = scratch();
    let results = tmp.path().join("results");
    let out = run_scripted(tmp.path(), &["-q"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let records = trial_lines(&results);
    assert_eq!(records.len(), 6, "2 configurations x 3 repetitions");
    assert!(records.iter().all(|r| r["status"] == "ok"), "{records:?}");
    let mut indices: Vec<u64> = records
        .iter()
        .map(|r| r["trial"].as_u64().unwrap())
        .collect();
    indices.sort();
    assert_eq!(indices, [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        records[0]["phases"].as_array().unwrap().len(),
        4,
        "fdtree's phases"
    );
    for file in ["summary.csv", "report.html", "spec.toml", "env.json"] {
        let len = std::fs::metadata(results.join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .len();
        assert!(len > 0, "{file} is empty");
    }
    let csv = std::fs::read_to_string(results.join("summary.csv")).unwrap();
    assert!(
        csv.lines().any(|l| l.contains(",ramdisk,dir_create,3,")),
        "{csv}"
    );
    let html = std::fs::read_to_string(results.join("report.html")).unwrap();
    assert!(html.contains("ramdisk") && html.contains("internal"));
    // The text table names both configurations, and where the HTML report went.
    assert!(stdout.contains("\ninternal "), "{stdout}");
    assert!(stdout.contains("\nramdisk "), "{stdout}");
    assert!(
        stdout.contains("HTML report: results/report.html"),
        "{stdout}"
    );
    assert!(stderr.is_empty(), "quiet, and nothing went wrong: {stderr}");

    let out = jbench(tmp.path(), &["report", "results", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["baseline"], "internal");
    assert_eq!(report["workloads"].as_array().unwrap().len(), 1);

    let before = std::fs::read(results.join("trials.jsonl")).unwrap();
    let out = jbench(
        tmp.path(),
        &[
            "run",
            "scripted.toml",
            "--executor",
            "scripted",
            "--resume",
            "results",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(results.join("trials.jsonl")).unwrap(),
        before,
        "every trial was recorded: a resumed run runs none"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("resuming: 6 of 6 trials already recorded"),
        "{stderr}"
    );
    assert!(!stderr.contains("trial 0 "), "no trial ran again: {stderr}");
}

/// Without a terminal, a run tells its progress in plain lines, drawn by the command
/// line from the library's events: each trial as it starts (with the time left once
/// one has ended) and its summary as it ends.
#[test]
fn a_run_in_a_log_tells_each_trial_as_it_starts_and_ends() {
    let (tmp, _) = scratch();
    let out = run_scripted(tmp.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let started: Vec<&&str> = lines.iter().filter(|l| l.starts_with('[')).collect();
    assert_eq!(started.len(), 6, "{stderr}");
    assert!(
        started[0].starts_with("[1/6] ") && started[0].ends_with(" ..."),
        "{stderr}"
    );
    assert!(started[1].starts_with("[2/6, ETA "), "{stderr}");
    let ended = lines.iter().filter(|l| l.starts_with("trial ")).count();
    assert_eq!(ended, 6, "{stderr}");
    // Each trial's start comes before its end.
    let first_end = lines.iter().position(|l| l.starts_with("trial ")).unwrap();
    let first_start = lines.iter().position(|l| l.starts_with("[1/6] ")).unwrap();
    assert!(first_start < first_end, "{stderr}");
}

#[test]
fn the_scripted_executor_is_not_in_the_help() {
    let out = Command::new(env!("CARGO_BIN_EXE_jbench"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(help.contains("--resume"), "{help}");
    assert!(!help.contains("executor"), "{help}");
}

#[test]
fn without_the_scripted_executor_a_run_still_needs_root() {
    let (tmp, _spec) = scratch();
    let out = jbench(
        tmp.path(),
        &["run", "scripted.toml", "--results", "results"],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("needs root"),
        "{}",
        text(&out.stderr)
    );
    assert!(!tmp.path().join("results").exists(), "nothing was written");
}

#[test]
fn adaptive_extra_rounds_run_through_the_command_line_up_to_max() {
    let (tmp, _spec) = scratch();
    // The scripted times vary about 1% (CV): a 0.1% target on the main phase asks for
    // every trial up to max. The rule never chases a suspect main phase: with no
    // threshold, none is suspect.
    let adaptive = spec_text().replace(
        "repetitions = 3",
        "repetitions = { min = 3, max = 6, target_cv = 0.001 }\nsuspect_below = \"0s\"",
    );
    let spec = tmp.path().join("adaptive.toml");
    std::fs::write(&spec, adaptive).unwrap();
    if is_root() {
        chown(&spec, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let args = [
        "run",
        "adaptive.toml",
        "--executor",
        "scripted",
        "--results",
        "results",
    ];
    let out = jbench(tmp.path(), &args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("trial 4 of at most 6"), "{stderr}");
    let results = tmp.path().join("results");
    let records = trial_lines(&results);
    let count = |label: &str| {
        records
            .iter()
            .filter(|r| r["config"]["label"] == label)
            .count()
    };
    assert_eq!((count("internal"), count("ramdisk")), (6, 6));
    let mut indices: Vec<u64> = records
        .iter()
        .map(|r| r["trial"].as_u64().unwrap())
        .collect();
    indices.sort();
    assert_eq!(
        indices,
        (0..12).collect::<Vec<u64>>(),
        "extra trials follow the plan's"
    );

    let out = jbench(
        tmp.path(),
        &[
            "run",
            "adaptive.toml",
            "--executor",
            "scripted",
            "--resume",
            "results",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        trial_lines(&results).len(),
        12,
        "every pair is at max: nothing more"
    );
}

fn seal_of(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("shard.json")).unwrap()).unwrap()
}

/// (config label, workload name, rep) of each trial number.
fn trial_keys(records: &[serde_json::Value]) -> std::collections::BTreeMap<u64, String> {
    records
        .iter()
        .map(|r| {
            (
                r["trial"].as_u64().unwrap(),
                format!(
                    "{}|{}|{}",
                    r["config"]["label"], r["workload"]["name"], r["rep"]
                ),
            )
        })
        .collect()
}

#[test]
fn shards_run_the_unsharded_plan_exactly_once_and_are_sealed() {
    let (tmp, _spec) = scratch();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = if is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_jbench"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_jbench"))
        };
        for v in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_MIN",
            "JOB_COMPLETION_INDEX",
        ] {
            cmd.env_remove(v);
        }
        cmd.envs(env.iter().copied());
        let out = cmd.args(args).current_dir(tmp.path()).output().unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{args:?}\n{stdout}\n{stderr}");
        stderr
    };
    run(
        &[
            "run",
            "scripted.toml",
            "--executor",
            "scripted",
            "--results",
            "whole",
            "-q",
        ],
        &[],
    );
    let whole = trial_keys(&trial_lines(&tmp.path().join("whole")));
    assert_eq!(whole.len(), 6);

    let mut seen = std::collections::BTreeMap::new();
    for i in 0..3 {
        let dir = format!("shard{i}");
        let shard = format!("{i}/3");
        let stderr = run(
            &[
                "run",
                "scripted.toml",
                "--executor",
                "scripted",
                "--shard",
                &shard,
                "--results",
                &dir,
                "-q",
            ],
            &[],
        );
        assert!(stderr.contains(&format!("--shard {i}/3")), "{stderr}");
        let dir = tmp.path().join(&dir);
        let seal = seal_of(&dir);
        assert_eq!(seal["shard"], i);
        assert_eq!(seal["shards"], 3);
        assert_eq!(seal["shard_by"], "round");
        let trials = std::fs::read(dir.join("trials.jsonl")).unwrap();
        assert_eq!(seal["trials_sha256"], jbench::scale::sha256_hex(&trials));
        let spec = std::fs::read(dir.join("spec.toml")).unwrap();
        assert_eq!(seal["spec_sha256"], jbench::scale::sha256_hex(&spec));
        let sealed: jbench::scale::seal::Seal = serde_json::from_value(seal.clone()).unwrap();
        jbench::scale::seal::verify(&dir, &sealed).unwrap();
        let keys = trial_keys(&trial_lines(&dir));
        let listed: Vec<u64> = seal["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect();
        assert_eq!(keys.keys().copied().collect::<Vec<_>>(), listed);
        for (t, k) in keys {
            assert_eq!(whole[&t], k, "trial {t} differs from the unsharded plan");
            assert!(seen.insert(t, i).is_none(), "trial {t} in two shards");
        }
    }
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        whole.keys().copied().collect::<Vec<_>>()
    );

    let stderr = run(
        &[
            "run",
            "scripted.toml",
            "--executor",
            "scripted",
            "--shard",
            "auto/3",
            "--results",
            "auto",
            "-q",
        ],
        &[("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_MIN", "1")],
    );
    assert!(stderr.contains("SLURM_ARRAY_TASK_ID=2"), "{stderr}");
    let seal = seal_of(&tmp.path().join("auto"));
    assert_eq!(seal["shard"], 1);
    assert_eq!(seal["scheduler"]["SLURM_ARRAY_TASK_ID"], "2");
    assert_eq!(
        seal["trials"],
        seal_of(&tmp.path().join("shard1"))["trials"]
    );

    // `plan --shards` prints the same split.
    let out = jbench(tmp.path(), &["plan", "scripted.toml", "--shards", "3"]);
    let stdout = text(&out.stdout);
    for i in 0..3 {
        let listed = seal_of(&tmp.path().join(format!("shard{i}")))["trials"]
            .as_array()
            .unwrap()
            .len();
        assert!(
            stdout.contains(&format!("shard {i}/3: {listed} trials")),
            "{stdout}"
        );
    }
}
