//! `jbench submit` against real schedulers: a Kubernetes manifest checked field by
//! field (no cluster here), GNU parallel running the shards on this machine, and a
//! private single-node Slurm cluster running an array job, a requeue and a
//! cancellation, each followed by `jbench merge`. The shards use the hidden scripted
//! executor so they take seconds and need no devices; what is tested is the
//! scheduling, the attempts and the merge.

use crate::common;
use crate::common::slurm;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::{jbench, need_program, need_root, records, require, run_ok, scratch};

/// 2 configurations x 1 workload x 3 repetitions: 6 trials in 3 rounds.
fn spec_text() -> String {
    common::scripted_spec("sched", "seed = 11\n")
}

const SCRIPTED: &str = "--executor scripted";

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// (trial, rep, config label, workload name) of every trial the unsharded plan runs.
fn unsharded_plan() -> Vec<(u64, u64, String, String)> {
    let spec = jbench::experiment::spec::parse(&spec_text(), "sched.toml").unwrap();
    let records: Vec<_> = jbench::experiment::plan::plan(&spec)
        .into_iter()
        .map(|t| {
            (
                t.index as u64,
                t.rep as u64,
                spec.configs[t.config].label.clone(),
                spec.workloads[t.workload].name.clone(),
            )
        })
        .collect();
    assert_eq!(records.len(), 6);
    records
}

/// Every trial of the plan exactly once in `merged`, with the plan's numbers, and
/// each trial's phase times identical to those of the attempt that ran it.
fn assert_whole_plan(merged: &Path) {
    let recs = records(merged);
    let mut got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r["trial"].as_u64().unwrap(),
                r["rep"].as_u64().unwrap(),
                r["config"]["label"].as_str().unwrap().to_string(),
                r["workload"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        unsharded_plan(),
        "merged trials of {}",
        merged.display()
    );
}

fn write_spec(dir: &Path) -> PathBuf {
    let p = dir.join("sched.toml");
    std::fs::write(&p, spec_text()).unwrap();
    p
}

/// Sealed attempt directories under `root`.
fn seals(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.join("shard.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn merge(inputs: &[&Path], out: &Path, extra: &[&str]) -> Output {
    let mut c = jbench();
    c.arg("merge")
        .args(inputs)
        .arg("--out")
        .arg(out)
        .args(extra);
    c.output().unwrap()
}

#[test]
fn k8s_manifest_is_an_indexed_job_of_privileged_pods() {
    let tmp = scratch("k8s-");
    let spec = write_spec(tmp.path());
    let out = tmp.path().join("k8s");
    let o = run_ok(
        jbench()
            .args(["submit", "k8s"])
            .arg(&spec)
            .args([
                "--shards",
                "3",
                "--throttle",
                "2",
                "--retries",
                "3",
                "--image",
                "reg/jb:1",
            ])
            .arg("--out")
            .arg(&out),
    );
    assert!(
        text(&o).contains("e2fsprogs"),
        "no image note: {}",
        text(&o)
    );
    let yaml = std::fs::read_to_string(out.join("jbench-sched-job.yaml")).unwrap();
    for want in [
        "kind: ConfigMap",
        "kind: Job",
        "apiVersion: batch/v1",
        "completionMode: Indexed",
        "completions: 3",
        "parallelism: 2",
        "backoffLimitPerIndex: 3",
        "maxFailedIndexes: 1",
        "preferredDuringSchedulingIgnoredDuringExecution",
        "Needs Kubernetes 1.29 or later",
        "emptyDir: {}",
        "mountPath: \"/var/tmp/jbench\"",
        "restartPolicy: Never",
        "privileged: true",
        "mountPath: /dev",
        "mountPath: /results",
        "image: \"reg/jb:1\"",
        "\"auto/3\"",
        "\"/spec/sched.toml\"",
        "\"/results/shard-$(JOB_COMPLETION_INDEX)-$(NODE_NAME)-$(POD_NAME)\"",
        "    name = \"sched\"",
    ] {
        assert!(yaml.contains(want), "manifest lacks {want:?}:\n{yaml}");
    }
    // Valid YAML, when a parser is at hand (python3 with PyYAML): the same fields,
    // read as data.
    let check = r#"
import sys, yaml
cm, job = list(yaml.safe_load_all(open(sys.argv[1])))
assert cm["data"]["sched.toml"] == open(sys.argv[2]).read(), cm["data"]
s = job["spec"]
assert s["completionMode"] == "Indexed" and s["completions"] == 3 and s["backoffLimitPerIndex"] == 3
c = s["template"]["spec"]["containers"][0]
assert c["securityContext"]["privileged"] is True
assert c["command"][:5] == ["jbench", "run", "/spec/sched.toml", "--shard", "auto/3"], c["command"]
"#;
    if std::process::Command::new("python3")
        .args(["-c", "import yaml"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let o = std::process::Command::new("python3")
            .args(["-c", check])
            .arg(out.join("jbench-sched-job.yaml"))
            .arg(&spec)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
}

/// The manifest against the Kubernetes API's own schema (strict: no unknown field),
/// offline: for 1.29, the version it says it needs, it validates; for 1.27, before
/// `backoffLimitPerIndex`, it must not, or the check would not be looking.
#[test]
fn k8s_manifest_validates_against_the_kubernetes_schema_it_names() {
    const T: &str = "k8s_manifest_validates_against_the_kubernetes_schema_it_names";
    if !need_program(
        T,
        "kubernetes-validate",
        "kubernetes-validate (pip install kubernetes-validate)",
    ) {
        return;
    }
    let tmp = scratch("k8s-schema-");
    let spec = write_spec(tmp.path());
    for (extra, file) in [
        (vec![], "default"),
        (
            vec![
                "--pvc",
                "results-claim",
                "--work-host-path",
                "/var/lib/jbench-work",
                "--max-failed-shards",
                "2",
            ],
            "host",
        ),
    ] {
        let out = tmp.path().join(file);
        run_ok(
            jbench()
                .args(["submit", "k8s"])
                .arg(&spec)
                .args(["--shards", "3"])
                .args(&extra)
                .arg("--out")
                .arg(&out),
        );
        let yaml = out.join("jbench-sched-job.yaml");
        let text = std::fs::read_to_string(&yaml).unwrap();
        if file == "host" {
            assert!(
                text.contains("maxFailedIndexes: 2")
                    && text.contains("path: \"/var/lib/jbench-work\""),
                "{text}"
            );
        }
        let validate = |version: &str| {
            std::process::Command::new("kubernetes-validate")
                .args(["--strict", "-k", version])
                .arg(&yaml)
                .output()
                .unwrap()
        };
        let ok = validate("1.29.0");
        assert!(
            ok.status.success(),
            "{file}: {}\n{text}",
            String::from_utf8_lossy(&ok.stdout)
        );
        let old = validate("1.27.0");
        assert!(!old.status.success(), "{file}: 1.27 accepted it");
        assert!(String::from_utf8_lossy(&old.stdout).contains("backoffLimitPerIndex"));
    }
}

fn have_gnu_parallel() -> bool {
    std::process::Command::new("parallel")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU parallel"))
}

#[test]
fn gnu_parallel_runs_every_shard_here_and_merge_gets_the_whole_plan() {
    const T: &str = "gnu_parallel_runs_every_shard_here_and_merge_gets_the_whole_plan";
    if !require(
        T,
        have_gnu_parallel(),
        "GNU parallel is not installed (apt-get install parallel)",
    ) {
        return;
    }
    let tmp = scratch("parallel-");
    let spec = write_spec(tmp.path());
    let out = tmp.path().join("par");
    run_ok(
        jbench()
            .args(["submit", "parallel"])
            .arg(&spec)
            .args([
                "--shards",
                "3",
                "--shard-by",
                "round",
                "--run-args",
                SCRIPTED,
            ])
            .arg("--out")
            .arg(&out),
    );
    let script = out.join("jbench-sched-parallel.sh");
    // GNU parallel asks once for a citation unless told it was seen; HOME keeps that
    // note out of the caller's home.
    std::fs::create_dir_all(tmp.path().join("home/.parallel")).unwrap();
    std::fs::write(tmp.path().join("home/.parallel/will-cite"), "").unwrap();
    let o = std::process::Command::new("bash")
        .arg(&script)
        .env("HOME", tmp.path().join("home"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}: {}", script.display(), text(&o));
    let joblog = std::fs::read_to_string(out.join("joblog")).unwrap();
    assert_eq!(joblog.lines().count(), 4, "header + 3 jobs:\n{joblog}");
    assert_eq!(seals(&out.join("results")).len(), 3);
    let merged = tmp.path().join("merged");
    let o = merge(&[&out.join("results")], &merged, &[]);
    assert!(o.status.success(), "merge: {}", text(&o));
    assert_whole_plan(&merged);
}

fn need_slurm(test: &str) -> bool {
    need_root(test)
        && need_program(test, "sbatch", "slurm-client")
        && need_program(test, "slurmctld", "slurmctld")
        && need_program(test, "slurmd", "slurmd")
        && need_program(test, "munged", "munge")
}

fn submit_slurm(s: &slurm::Slurm, spec: &Path, out: &Path, submit: bool) -> Output {
    let mut c = jbench();
    c.env("SLURM_CONF", &s.conf)
        .args(["submit", "slurm"])
        .arg(spec)
        .args(["--shards", "3", "--run-args", SCRIPTED])
        .arg("--out")
        .arg(out);
    if submit {
        c.arg("--submit");
    }
    run_ok(&mut c)
}

fn job_id(o: &Output) -> String {
    let t = String::from_utf8_lossy(&o.stdout);
    t.lines()
        .find_map(|l| l.strip_prefix("submitted Slurm job "))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no job id in:\n{t}"))
        .to_string()
}

/// Array tasks' output files, for failure messages.
fn task_logs(out: &Path) -> String {
    let mut s = String::new();
    for e in std::fs::read_dir(out.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        s += &format!(
            "--- {}\n{}\n",
            e.path().display(),
            std::fs::read_to_string(e.path()).unwrap_or_default()
        );
    }
    s
}

#[test]
fn slurm_array_runs_merges_survives_a_requeue_and_refuses_a_cancelled_shard() {
    const T: &str = "slurm_array_runs_merges_survives_a_requeue_and_refuses_a_cancelled_shard";
    if !need_slurm(T) {
        return;
    }
    let tmp = scratch("slurm-");
    let spec = write_spec(tmp.path());
    let s = slurm::Slurm::start();
    let limit = Duration::from_secs(120);

    // 1. The whole array, submitted by jbench.
    let out = tmp.path().join("run1");
    let results = out.join("results");
    let job = job_id(&submit_slurm(&s, &spec, &out, true));
    s.wait_for("the array to finish", limit, |s| s.job_done(&job));
    let sealed = seals(&results);
    assert_eq!(
        sealed.len(),
        3,
        "sealed attempts: {sealed:?}\n{}",
        task_logs(&out)
    );
    let merged = tmp.path().join("merged1");
    let o = merge(&[&results], &merged, &[]);
    assert!(
        o.status.success(),
        "merge: {}\n{}",
        text(&o),
        task_logs(&out)
    );
    assert_whole_plan(&merged);
    let by_trial: BTreeMap<u64, serde_json::Value> = records(&merged)
        .into_iter()
        .map(|r| (r["trial"].as_u64().unwrap(), r["phases"].clone()))
        .collect();

    // 2. A requeue runs task 0 again (at-least-once): a second sealed attempt, which
    // merge lists as a duplicate it ignored.
    s.ok(&["scontrol", "requeue", &format!("{job}_0")]);
    // Slurm delays a requeued job's start by two minutes; this one may start now.
    s.ok(&[
        "scontrol",
        "update",
        &format!("jobid={job}_0"),
        "StartTime=now",
    ]);
    s.wait_for("the requeued task's second attempt", limit, |s| {
        seals(&results).len() == 4 && s.job_done(&job)
    });
    let restarted: Vec<_> = seals(&results)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("-r1-"))
        .collect();
    assert_eq!(restarted.len(), 1, "{:?}", seals(&results));
    let merged2 = tmp.path().join("merged2");
    let o = merge(&[&results], &merged2, &[]);
    assert!(o.status.success(), "merge after requeue: {}", text(&o));
    assert_whole_plan(&merged2);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged2.join("merge.json")).unwrap())
            .unwrap();
    let dups = record["duplicates_ignored"].as_array().unwrap();
    assert_eq!(
        dups.len(),
        1,
        "one duplicate attempt of shard 0: {record:#}"
    );
    assert_eq!(dups[0]["shard"], 0, "{record:#}");
    assert!(
        text(&o).to_lowercase().contains("duplicate"),
        "merge does not say so: {}",
        text(&o)
    );
    // Either attempt may be the one kept: the scripted times are the same.
    for r in records(&merged2) {
        assert_eq!(r["phases"], by_trial[&r["trial"].as_u64().unwrap()]);
    }

    // 3. Task 1 cancelled before it ran (held first, so it cannot start early): merge
    // refuses without --partial, naming the missing shard.
    let out3 = tmp.path().join("run3");
    submit_slurm(&s, &spec, &out3, false);
    let id = s.ok(&[
        "sbatch",
        "--parsable",
        "--hold",
        &out3.join("jbench-sched.sbatch").to_string_lossy(),
    ]);
    let job3 = id.trim().split(';').next().unwrap().to_string();
    s.ok(&["scancel", &format!("{job3}_1")]);
    s.ok(&["scontrol", "release", &job3]);
    s.wait_for("the array without task 1 to finish", limit, |s| {
        s.job_done(&job3)
    });
    assert_eq!(
        seals(&out3.join("results")).len(),
        2,
        "{}",
        task_logs(&out3)
    );
    let merged3 = tmp.path().join("merged3");
    let o = merge(&[&out3.join("results")], &merged3, &[]);
    assert!(
        !o.status.success(),
        "merge accepted a missing shard: {}",
        text(&o)
    );
    let said = text(&o);
    assert!(
        said.contains("--partial") && said.contains('1') && said.to_lowercase().contains("missing"),
        "merge's refusal does not name the missing shard: {said}"
    );
    let merged4 = tmp.path().join("merged4");
    let o = merge(&[&out3.join("results")], &merged4, &["--partial"]);
    assert!(o.status.success(), "merge --partial: {}", text(&o));
    assert_eq!(records(&merged4).len(), 4, "two of three rounds");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged4.join("merge.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["missing_shards"],
        serde_json::json!([1]),
        "{record:#}"
    );
    drop(s);
}
