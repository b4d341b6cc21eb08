//! `jbench merge` on shard attempts built here: a reference run with the scripted
//! executor gives the records, each attempt holds a subset of them and a seal made
//! with the library's own hashing and seal writer. No root, devices or scheduler.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use jbench::results::fingerprint::Fingerprint;
use jbench::scale::seal::{write_seal, Seal, SEAL_VERSION};

fn spec_text() -> String {
    common::scripted_spec("merge", "")
}

/// 2 configurations x 3 repetitions; shard i of 3 gets the trials i, i+3.
const TRIALS: usize = 6;
const SHARDS: usize = 3;

fn jbench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jbench"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn fails(out: Output) -> String {
    assert!(!out.status.success(), "should fail:\n{}", text(&out.stdout));
    text(&out.stderr)
}

struct Lab {
    tmp: tempfile::TempDir,
    /// Unsharded scripted run: the records every attempt takes its lines from.
    reference: PathBuf,
    lines: BTreeMap<usize, String>,
    here: Fingerprint,
}

impl Lab {
    fn new() -> Self {
        fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
        let tmp = tempfile::Builder::new()
            .prefix("scale-merge-")
            .tempdir_in("/var/tmp/jbench-tests")
            .unwrap();
        fs::write(tmp.path().join("merge.toml"), spec_text()).unwrap();
        fs::create_dir(tmp.path().join("results")).unwrap();
        ok(jbench(
            tmp.path(),
            &[
                "run",
                "merge.toml",
                "--results",
                "reference",
                "--executor",
                "scripted",
                "--quiet",
            ],
        ));
        let reference = tmp.path().join("reference");
        let lines = fs::read_to_string(reference.join("trials.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (v["trial"].as_u64().unwrap() as usize, l.to_string())
            })
            .collect::<BTreeMap<_, _>>();
        assert_eq!(lines.len(), TRIALS);
        // Monitor series to carry over (the scripted executor writes none).
        fs::create_dir_all(reference.join("monitor")).unwrap();
        for t in 0..TRIALS {
            fs::write(
                reference.join("monitor").join(format!("trial-{t}.jsonl")),
                "",
            )
            .unwrap();
        }
        let spec = jbench::experiment::spec::load(&reference.join("spec.toml")).unwrap();
        // The machine `--resume` will see, so a resumed merge stays homogeneous.
        let here = Fingerprint::collect(&spec.work_dir);
        Self {
            tmp,
            reference,
            lines,
            here,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// An attempt of `shard` in results/NAME, sealed unless `sealed_at` is `None`.
    fn attempt(
        &self,
        name: &str,
        shard: usize,
        sealed_at: Option<&str>,
        machine: &Fingerprint,
    ) -> PathBuf {
        let dir = self.path("results").join(name);
        fs::create_dir(&dir).unwrap();
        for f in ["spec.toml", "spec.original.toml", "env.json"] {
            fs::copy(self.reference.join(f), dir.join(f)).unwrap();
        }
        let trials: Vec<usize> = (0..TRIALS).filter(|t| t % SHARDS == shard).collect();
        let body: String = trials
            .iter()
            .map(|t| self.lines[t].clone() + "\n")
            .collect();
        fs::write(dir.join("trials.jsonl"), &body).unwrap();
        fs::create_dir(dir.join("monitor")).unwrap();
        for t in &trials {
            let name = format!("monitor/trial-{t}.jsonl");
            fs::copy(self.reference.join(&name), dir.join(&name)).unwrap();
        }
        if let Some(at) = sealed_at {
            self.seal(&dir, shard, at, machine, &trials);
        }
        dir
    }

    fn seal(&self, dir: &Path, shard: usize, at: &str, machine: &Fingerprint, trials: &[usize]) {
        let hash = |f: &str| jbench::scale::sha256_hex(&fs::read(dir.join(f)).unwrap());
        let seal = Seal {
            seal_version: SEAL_VERSION,
            shard,
            shards: SHARDS,
            shard_by: "round".into(),
            spec_sha256: hash("spec.toml"),
            jbench_version: env!("CARGO_PKG_VERSION").into(),
            schema_version: jbench::results::record::SCHEMA_VERSION,
            trials: trials.to_vec(),
            trials_sha256: hash("trials.jsonl"),
            crash_sha256: None,
            machine: machine.clone(),
            index_source: format!("--shard {shard}/{SHARDS}"),
            sealed_at: at.into(),
            scheduler: [("SLURM_ARRAY_TASK_ID".to_string(), format!("{shard}"))]
                .into_iter()
                .chain(name_id(dir))
                .collect(),
        };
        write_seal(dir, &seal).unwrap();
    }

    fn all_three(&self) {
        for s in 0..SHARDS {
            self.attempt(
                &format!("shard-{s}"),
                s,
                Some(&format!("2026-01-0{}T10:00:00+00:00", s + 1)),
                &self.here,
            );
        }
    }

    fn merge(&self, extra: &[&str]) -> Output {
        let mut args = vec!["merge", "results", "--out", "merged"];
        args.extend_from_slice(extra);
        jbench(self.tmp.path(), &args)
    }

    fn report(&self, dir: &str, format: &str) -> String {
        text(
            &ok(jbench(
                self.tmp.path(),
                &["report", dir, "--format", format],
            ))
            .stdout,
        )
    }

    fn html(&self, dir: &str) -> String {
        let file = self.path(&format!("{dir}.html"));
        ok(jbench(
            self.tmp.path(),
            &["report", dir, "--html", file.to_str().unwrap()],
        ));
        fs::read_to_string(file).unwrap()
    }

    fn merge_json(&self) -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(self.path("merged/merge.json")).unwrap()).unwrap()
    }

    fn merged_trials(&self) -> Vec<usize> {
        fs::read_to_string(self.path("merged/trials.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["trial"]
                    .as_u64()
                    .unwrap() as usize
            })
            .collect()
    }
}

/// A job id per attempt directory, so duplicates can be told apart in the listing.
fn name_id(dir: &Path) -> Option<(String, String)> {
    Some((
        "SLURM_JOB_ID".to_string(),
        dir.file_name()?.to_string_lossy().replace("shard-", "job-"),
    ))
}

#[test]
fn three_sealed_attempts_merge_into_the_single_run_with_duplicates_and_unsealed_listed() {
    let lab = Lab::new();
    lab.all_three();
    // A requeued shard 1 sealed a day later, and a killed attempt that never sealed.
    lab.attempt(
        "shard-1-requeued",
        1,
        Some("2026-01-05T10:00:00+00:00"),
        &lab.here,
    );
    let killed = lab.attempt("shard-2-killed", 2, None, &lab.here);
    fs::write(killed.join("trials.jsonl"), &lab.lines[&2]).unwrap();
    let out = ok(lab.merge(&[]));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("merged 3 of 3 shards"), "{stdout}");
    assert!(stdout.contains("duplicates ignored"), "{stdout}");
    assert!(
        stdout.contains("shard-1-requeued") && stdout.contains("SLURM_JOB_ID=job-1-requeued"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not sealed (an attempt that did not finish)"),
        "{stdout}"
    );
    assert!(stdout.contains("shard-2-killed"), "{stdout}");
    assert!(stdout.contains("trials merged: 6"), "{stdout}");
    assert!(stdout.contains("machines: 1\n"), "{stdout}");

    assert_eq!(lab.merged_trials(), (0..TRIALS).collect::<Vec<_>>());
    // Exactly the bytes each machine wrote, only reordered.
    let merged = fs::read_to_string(lab.path("merged/trials.jsonl")).unwrap();
    let expected: String = lab.lines.values().map(|l| l.clone() + "\n").collect();
    assert_eq!(merged, expected);
    for t in 0..TRIALS {
        assert!(lab
            .path(&format!("merged/monitor/trial-{t}.jsonl"))
            .is_file());
    }
    let m = lab.merge_json();
    assert_eq!(m["partial"], false);
    assert_eq!(m["heterogeneous"], false);
    assert_eq!(m["attempts"].as_array().unwrap().len(), 3);
    assert!(m["attempts"][1]["dir"]
        .as_str()
        .unwrap()
        .ends_with("shard-1"));
    assert!(m["duplicates_ignored"][0]["dir"]
        .as_str()
        .unwrap()
        .ends_with("shard-1-requeued"));
    assert!(m["unsealed_ignored"][0]
        .as_str()
        .unwrap()
        .ends_with("shard-2-killed"));
    assert_eq!(m["trial_machine"].as_object().unwrap().len(), TRIALS);

    // A homogeneous merge reports exactly like the single run of the same trials.
    for format in ["table", "markdown", "json", "csv"] {
        assert_eq!(
            lab.report("merged", format),
            lab.report("reference", format),
            "{format}"
        );
    }
    assert_eq!(
        fs::read_to_string(lab.path("merged/summary.csv")).unwrap(),
        fs::read_to_string(lab.path("reference/summary.csv")).unwrap()
    );
    let strip = |h: String| {
        h.lines()
            .filter(|l| !l.contains("Generated") && !l.contains("generated"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        strip(lab.html("merged")) == strip(lab.html("reference")),
        "HTML reports differ"
    );

    // The output directory must be new or empty.
    let err = fails(lab.merge(&[]));
    assert!(err.contains("not empty"), "{err}");
}

#[test]
fn a_changed_trials_file_breaks_the_seal_and_the_merge_names_the_directory() {
    let lab = Lab::new();
    lab.all_three();
    let dir = lab.path("results/shard-2");
    let changed = fs::read_to_string(dir.join("trials.jsonl"))
        .unwrap()
        .replacen("\"rep\":", "\"rep\": ", 1);
    fs::write(dir.join("trials.jsonl"), changed).unwrap();
    let err = fails(lab.merge(&[]));
    assert!(err.contains("shard-2") && err.contains("seal"), "{err}");
    assert!(!lab.path("merged").exists());
}

#[test]
fn attempts_of_another_spec_are_refused_with_both_hashes() {
    let lab = Lab::new();
    lab.attempt("shard-0", 0, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    lab.attempt("shard-1", 1, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    let other = lab.attempt("shard-2", 2, None, &lab.here);
    let spec = fs::read_to_string(other.join("spec.toml")).unwrap() + "# edited\n";
    fs::write(other.join("spec.toml"), spec).unwrap();
    lab.seal(&other, 2, "2026-01-01T10:00:00+00:00", &lab.here, &[2, 5]);
    let hash = |d: &Path| jbench::scale::sha256_hex(&fs::read(d.join("spec.toml")).unwrap());
    let err = fails(lab.merge(&[]));
    assert!(err.contains("spec_sha256"), "{err}");
    assert!(err.contains(&hash(&lab.path("results/shard-0"))), "{err}");
    assert!(err.contains(&hash(&other)), "{err}");
    assert!(err.contains("shard-0") && err.contains("shard-2"), "{err}");
}

#[test]
fn a_missing_shard_is_refused_unless_partial_then_reported_and_resume_runs_exactly_it() {
    let lab = Lab::new();
    lab.attempt("shard-0", 0, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    lab.attempt("shard-2", 2, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    let err = fails(lab.merge(&[]));
    assert!(
        err.contains("shard 1 of 3 has no sealed attempt") && err.contains("--partial"),
        "{err}"
    );
    assert!(!lab.path("merged").exists());

    let out = ok(lab.merge(&["--partial"]));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("missing shards: 1 (2 trials)"), "{stdout}");
    let m = lab.merge_json();
    assert_eq!(m["partial"], true);
    assert_eq!(m["missing_shards"], serde_json::json!([1]));
    assert_eq!(m["missing_trials"], serde_json::json!([1, 4]));
    let warning = "partial merge: shard 1 missing (2 trials)";
    for format in ["table", "markdown", "json"] {
        assert!(lab.report("merged", format).contains(warning), "{format}");
    }
    assert!(lab.html("merged").contains(warning));

    // Resume runs the missing shard's trials here, and nothing else.
    let out = ok(jbench(
        lab.tmp.path(),
        &[
            "run",
            "merge.toml",
            "--resume",
            "merged",
            "--executor",
            "scripted",
            "--quiet",
        ],
    ));
    assert!(
        !text(&out.stdout).contains("partial merge"),
        "{}",
        text(&out.stdout)
    );
    let trials = lab.merged_trials();
    assert_eq!(trials, vec![0, 2, 3, 5, 1, 4]);
    for format in ["table", "markdown", "json"] {
        let r = lab.report("merged", format);
        assert!(
            !r.contains("partial merge") && !r.contains("heterogeneous"),
            "{r}"
        );
    }
    // The resumed trials are recorded as run on this machine, the shards' own.
    let m = lab.merge_json();
    assert_eq!(m["trial_machine"].as_object().unwrap().len(), TRIALS);
    assert_eq!(m["heterogeneous"], false);
}

#[test]
fn different_machines_are_refused_by_field_unless_allowed_then_kept_apart() {
    let lab = Lab::new();
    let mut other = lab.here.clone();
    other.cpu_model = "Other CPU 9000".into();
    lab.attempt("shard-0", 0, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    lab.attempt("shard-1", 1, Some("2026-01-01T10:00:00+00:00"), &other);
    lab.attempt("shard-2", 2, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    let err = fails(lab.merge(&[]));
    assert!(
        err.contains("cpu_model:") && err.contains("Other CPU 9000"),
        "{err}"
    );
    assert!(
        err.contains("shard 1 (") && err.contains("--allow-heterogeneous"),
        "{err}"
    );

    ok(lab.merge(&["--allow-heterogeneous"]));
    let m = lab.merge_json();
    assert_eq!(m["heterogeneous"], true);
    let (a, b) = (lab.here.id(), other.id());
    let table = lab.report("merged", "table");
    // Shard 1 (the other machine) ran trials 1 and 4, both `ramdisk`.
    for label in [
        format!("internal@{a}"),
        format!("ramdisk@{a}"),
        format!("ramdisk@{b}"),
    ] {
        assert!(table.contains(&label), "{table}");
    }
    assert!(!table.contains(&format!("internal@{b}")), "{table}");
    assert!(table.contains("heterogeneous machines"), "{table}");
    assert!(table.contains(&format!("@{b} (Other CPU 9000")), "{table}");
    assert!(table.contains("span machines"), "{table}");
    // No row pools the machines: every configuration row carries its machine.
    let json: serde_json::Value = serde_json::from_str(&lab.report("merged", "json")).unwrap();
    for w in json["workloads"].as_array().unwrap() {
        for c in w["configs"].as_array().unwrap() {
            assert!(c["label"].as_str().unwrap().contains('@'), "{c}");
        }
    }
    assert!(lab.html("merged").contains("heterogeneous machines"));
}

#[test]
fn shards_that_differ_in_a_writeback_setting_are_refused_unless_allowed() {
    let lab = Lab::new();
    let mut other = lab.here.clone();
    let here_ratio = lab
        .here
        .writeback
        .dirty_ratio
        .expect("this machine has /proc/sys/vm/dirty_ratio");
    other.writeback.dirty_ratio = Some(here_ratio + 7);
    lab.attempt("shard-0", 0, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    lab.attempt("shard-1", 1, Some("2026-01-01T10:00:00+00:00"), &other);
    lab.attempt("shard-2", 2, Some("2026-01-01T10:00:00+00:00"), &lab.here);
    let err = fails(lab.merge(&[]));
    let want = format!("vm.dirty_ratio: {here_ratio} vs {}", here_ratio + 7);
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("--allow-heterogeneous"), "{err}");
    // Only that field differs, so only that field is named.
    assert!(!err.contains("cpu_model:"), "{err}");

    ok(lab.merge(&["--allow-heterogeneous"]));
    let m = lab.merge_json();
    assert_eq!(m["heterogeneous"], true);
    assert_eq!(m["machines"].as_object().unwrap().len(), 2);
}
