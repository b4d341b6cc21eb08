//! `jbench run` on an experiment with `[crash]`: speed and the crash lab in one results
//! directory, one report whose answer joins both halves (checked in every format
//! against the records themselves), a crash half that resumes after Ctrl-C to what an
//! uninterrupted lab gives, and a two-shard run whose merge is the report of the whole.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;
use jbench::report::{self, Format};
use jbench::results::crash::{load_crash_records, CrashRecord};
use jbench::results::record::TrialRecord;
use jbench::results::store;

const STATES: usize = 10;

fn spec_text(work: &Path) -> String {
    format!(
        r#"name = "run-crash"
repetitions = 2
seed = 5
suspect_below = "1ms"
work_dir = "{}"
baseline = "internal"

[filesystem]
type = "ext4"
size = "128M"
device_model = "hdd-7200"

[journal]
size = "8M"
mode = "ordered"

[[config]]
label = "internal"
journal.placement = "internal"

[[config]]
label = "ramdisk"
journal.placement = "ramdisk"
journal.device_model = "ram"

[[workload]]
kind = "fsync"
name = "fsync"
files = 30
size = "4K"
fsync_dir = true

[[workload]]
kind = "fdtree"
name = "tree"
dirs = 2
files = 3
blocks = 1
levels = 1

[crash]
states = {STATES}
recovery_timing = 4
"#,
        work.display()
    )
}

fn ready(test: &str) -> bool {
    need_root(test) && need_fuse(test)
}

/// The main-phase mean rate of `config` on `workload` from the timed records alone.
fn timed_mean(records: &[TrialRecord], config: &str, workload: &str, phase: &str) -> f64 {
    let rates: Vec<f64> = records
        .iter()
        .filter(|r| r.is_ok() && !r.crash_recording)
        .filter(|r| r.config.label == config && r.workload.name == workload)
        .filter_map(|r| {
            // `<phase>+syncfs` is the phase timed up to syncfs (its durable time).
            match phase.strip_suffix("+syncfs") {
                Some(base) => {
                    let p = r.phases.iter().find(|p| p.name == base)?;
                    Some(p.ops as f64 / p.durable_seconds?)
                }
                None => Some(r.phases.iter().find(|p| p.name == phase)?.ops_per_sec()),
            }
        })
        .collect();
    assert!(!rates.is_empty(), "{config}/{workload} has timed trials");
    rates.iter().sum::<f64>() / rates.len() as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Every number the answer shows, checked against the trial and crash records, in
/// JSON (typed), CSV (columns), text, Markdown and HTML.
fn check_answer_against_records(dir: &Path) {
    let records = store::load_records(dir).unwrap();
    let crash = load_crash_records(&dir.join("crash.jsonl")).unwrap();
    let json: serde_json::Value = serde_json::from_slice(
        &run_ok(jbench().arg("report").arg(dir).args(["--format", "json"])).stdout,
    )
    .unwrap();
    let csv =
        String::from_utf8(run_ok(jbench().arg("report").arg(dir).args(["--format", "csv"])).stdout)
            .unwrap();
    let text = String::from_utf8(run_ok(jbench().arg("report").arg(dir)).stdout).unwrap();
    let md = String::from_utf8(
        run_ok(
            jbench()
                .arg("report")
                .arg(dir)
                .args(["--format", "markdown"]),
        )
        .stdout,
    )
    .unwrap();
    let html_file = dir.with_extension("html");
    run_ok(
        jbench()
            .arg("report")
            .arg(dir)
            .arg("--html")
            .arg(&html_file),
    );
    // The page's text as a reader sees it (minijinja escapes `/` and `'`).
    let html = std::fs::read_to_string(&html_file)
        .unwrap()
        .replace("&#x2f;", "/")
        .replace("&#x27;", "'");
    let mut lines = csv.lines().map(csv_fields);
    let header: Vec<String> = lines.next().unwrap();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<Vec<String>> = lines.collect();
    let answers = json["answer"]
        .as_array()
        .expect("an answer in the JSON report");
    assert_eq!(answers.len(), 2, "one per workload: {json:#}");
    let mut fitted = 0;
    for w in answers {
        let workload = w["workload"].as_str().unwrap();
        let phase = w["main_phase"].as_str().unwrap();
        for c in w["configs"].as_array().unwrap() {
            let config = c["config"].as_str().unwrap();
            let states: Vec<&CrashRecord> = crash
                .iter()
                .filter(|r| r.config == config && r.workload == workload)
                .collect();
            assert_eq!(states.len(), STATES, "{config}/{workload}");
            let failures = states.iter().filter(|r| r.verdict.is_failure()).count();
            assert_eq!(c["crash_states"], states.len());
            assert_eq!(c["crash_failures"], failures);
            assert_eq!(failures, 0, "an honest configuration loses nothing");
            let mean = timed_mean(&records, config, workload, phase);
            let got = c["rate_mean"].as_f64().unwrap();
            assert!(
                (got - mean).abs() <= 1e-9 * mean,
                "{config}/{workload}: the answer's mean {got} is the timed trials' {mean} (recordings excluded)"
            );
            assert_eq!(c["trials"], 2, "the recording is not a timed trial");
            let mounts: Vec<f64> = states
                .iter()
                .filter_map(|r| r.timings.as_ref())
                .map(|t| t.mount_seconds)
                .collect();
            assert_eq!(c["recovery_timed"], mounts.len());
            let replay = c["replay_median_s"].as_f64().unwrap();
            assert!((replay - median(mounts.clone())).abs() < 1e-12);
            // The figure to plan on follows from the records: the worst timed mount,
            // the fullest journal of any state, and a least-squares line through the
            // timed states' (live blocks, seconds) with its prediction there.
            let pts: Vec<(f64, f64)> = states
                .iter()
                .filter_map(|r| {
                    Some((
                        r.journal_live?.blocks as f64,
                        r.timings.as_ref()?.mount_seconds,
                    ))
                })
                .collect();
            let worst = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            assert!((c["recovery_worst_s"].as_f64().unwrap() - worst).abs() < 1e-12);
            let model = &c["recovery_model"];
            let fullest = states
                .iter()
                .filter_map(|r| r.journal_live.map(|l| l.blocks))
                .max()
                .unwrap();
            assert_eq!(model["fullest_blocks"], fullest);
            assert_eq!(model["points"], pts.len());
            let plan = c["recovery_plan_s"].as_f64().unwrap();
            assert!(plan >= worst - 1e-12, "{plan} < worst {worst}");
            if let Some(k) = model["per_kblock_s"].as_f64() {
                fitted += 1;
                let n = pts.len() as f64;
                let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
                let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
                let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
                let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
                let slope = sxy / sxx;
                assert!((k - slope * 1000.0).abs() <= 1e-9 * (slope * 1000.0).abs().max(1e-9));
                let at = my + slope * (fullest as f64 - mx);
                assert!((model["at_fullest_s"].as_f64().unwrap() - at).abs() < 1e-9);
                let high = model["at_fullest_high_s"].as_f64().unwrap();
                assert!((plan - high.max(worst)).abs() < 1e-12);
            }
            // CSV: the main phase's row carries the same numbers.
            let row = rows
                .iter()
                .find(|r| r[0] == workload && r[1] == config && r[2] == phase)
                .unwrap_or_else(|| panic!("a CSV row for {config}/{workload}/{phase}"));
            assert_eq!(row[col("crash_states")], states.len().to_string());
            assert_eq!(row[col("crash_failures")], failures.to_string());
            // serde_json's float parsing may be off by an ulp: compare closely, not exactly.
            let csv_replay = row[col("replay_p50_s")].parse::<f64>().unwrap();
            assert!((csv_replay - replay).abs() <= 1e-12 * replay.abs().max(1.0));
            let csv_plan = row[col("recovery_plan_s")].parse::<f64>().unwrap();
            assert!((csv_plan - plan).abs() <= 1e-12 * plan.max(1.0));
            assert_eq!(row[col("recovery_fullest_blocks")], fullest.to_string());
            let csv_mean = row[col("rate_mean")].parse::<f64>().unwrap();
            assert!((csv_mean - got).abs() <= 1e-9 * got, "{csv_mean} vs {got}");
            // The words: the same counts in text, Markdown and HTML.
            let n = states.len();
            // A RAM-disk journal's states keep RAM: a crash that keeps the power on.
            let cuts = if config == "ramdisk" {
                "such crashes"
            } else {
                "power cuts"
            };
            let needle = if workload == "fsync" {
                format!("{n}/{n} {cuts} lost nothing")
            } else {
                format!("{n}/{n} {cuts} left a consistent file system")
            };
            for (name, out) in [("text", &text), ("markdown", &md), ("html", &html)] {
                assert!(
                    out.lines()
                        .any(|l| l.contains(&format!("{config}: ")) && l.contains(&needle)),
                    "{name} report says `{config}: ... {needle}`:\n{out}"
                );
            }
            // The lost RAM-disk journal: the count of states it was tried on.
            let lost: Vec<_> = states
                .iter()
                .filter_map(|r| r.lost_journal.as_ref())
                .collect();
            if config == "ramdisk" {
                assert_eq!(lost.len(), n, "every state of a ram journal is also lost");
                assert_eq!(c["lost_journal"]["states"], n);
                let words = format!(
                    "the mount fails in {}/{n}",
                    lost.iter().filter(|l| l.mount_failed).count()
                );
                assert!(text.contains(&words), "{words} in\n{text}");
                // It leads with the power cut, in the detail and at a glance.
                assert!(
                    text.contains("ramdisk: a power cut empties the journal's RAM disk"),
                    "{text}"
                );
                assert!(
                    text.contains("power cut empties journal: mount fails"),
                    "{text}"
                );
            } else {
                assert!(lost.is_empty() && c["lost_journal"].is_null());
            }
        }
    }
    assert!(
        fitted > 0,
        "no configuration had a line of recovery against live blocks:\n{json:#}"
    );
    assert!(text.contains(" s per 1000 blocks ["), "{text}");
    assert!(
        text.starts_with("Answer: speed, safety and recovery"),
        "{text}"
    );
    assert!(md.contains("## Answer: speed, safety and recovery"));
    assert!(html.contains("id=\"answer\""));
}

/// The fields of one RFC 4180 line (no field of these reports spans lines).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            (c, _) => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// (configuration, workload, state, strategy, cut, kept, dropped, verdict).
type StateKey = (String, String, u64, String, u64, u64, u64, String);

/// The states of a crash.jsonl without what timing decides: what the lab built and
/// what it concluded.
fn states_of(crash: &[CrashRecord]) -> BTreeSet<StateKey> {
    crash
        .iter()
        .map(|r| {
            (
                r.config.clone(),
                r.workload.clone(),
                r.state,
                r.strategy.clone(),
                r.cut,
                r.kept,
                r.dropped,
                r.verdict.to_string(),
            )
        })
        .collect()
}

#[test]
fn a_run_with_crash_resumed_after_ctrl_c_in_the_lab_answers_both_halves_as_an_uninterrupted_one() {
    let test = "a_run_with_crash_resumed_after_ctrl_c_in_the_lab_answers_both_halves_as_an_uninterrupted_one";
    if !ready(test) {
        return;
    }
    let tmp = scratch("run-crash-");
    let spec = write_spec(tmp.path(), "exp.toml", &spec_text(&tmp.path().join("work")));
    let results = tmp.path().join("results");
    let crash_file = results.join("crash.jsonl");
    let child = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once the lab has judged a few states: the timed trials are all done.
    let out = interrupt_in_the_lab(child, &crash_file, 3, 600);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("jbench run") && stderr.contains("--resume"),
        "{stderr}"
    );
    assert_no_leaks(tmp.path());
    let before = load_crash_records(&crash_file).unwrap();
    assert!(
        before.len() < 4 * STATES,
        "interrupted in the lab: {}",
        before.len()
    );
    let records = store::load_records(&results).unwrap();
    assert_eq!(
        records.len(),
        2 * 2 * 2 + 4,
        "8 timed trials and 4 recordings"
    );
    assert_eq!(records.iter().filter(|r| r.crash_recording).count(), 4);

    // An uninterrupted lab on the same recordings, for comparison: a copy of the
    // directory without its crash states, resumed (every trial is done).
    let fresh = tmp.path().join("fresh");
    assert!(std::process::Command::new("cp")
        .args(["-a"])
        .arg(&results)
        .arg(&fresh)
        .status()
        .unwrap()
        .success());
    std::fs::remove_file(fresh.join("crash.jsonl")).unwrap();

    for dir in [&results, &fresh] {
        run_ok(
            jbench()
                .arg("run")
                .arg(&spec)
                .arg("--resume")
                .arg(dir)
                .arg("-q"),
        );
        assert_no_leaks(tmp.path());
    }
    let after = load_crash_records(&crash_file).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the states judged before are kept"
    );
    let mut keys = BTreeMap::new();
    for r in &after {
        assert!(
            keys.insert((r.config.clone(), r.workload.clone(), r.state), ())
                .is_none(),
            "state {} of {}/{} judged twice",
            r.state,
            r.config,
            r.workload
        );
    }
    let uninterrupted = load_crash_records(&fresh.join("crash.jsonl")).unwrap();
    assert_eq!(
        states_of(&after),
        states_of(&uninterrupted),
        "the resumed lab built and judged what an uninterrupted one does"
    );
    check_answer_against_records(&results);
    // The same report, but for times: the JSON answers' counts agree.
    let strip = |dir: &Path| {
        let out = run_ok(jbench().arg("report").arg(dir).args(["--format", "json"])).stdout;
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        v["answer"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|w| w["configs"].as_array().unwrap().clone())
            .map(|c| {
                (
                    c["config"].clone(),
                    c["crash_states"].clone(),
                    c["verdicts"].clone(),
                )
            })
            .map(|t| format!("{t:?}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&results), strip(&fresh));
}

#[test]
fn a_two_shard_run_with_crash_merges_into_the_report_of_the_whole() {
    let test = "a_two_shard_run_with_crash_merges_into_the_report_of_the_whole";
    if !ready(test) {
        return;
    }
    let tmp = scratch("run-crash-shards-");
    let spec = write_spec(tmp.path(), "exp.toml", &spec_text(&tmp.path().join("work")));
    let mut dirs = Vec::new();
    for i in 0..2 {
        let dir = tmp.path().join(format!("shard{i}"));
        run_ok(
            jbench()
                .arg("run")
                .arg(&spec)
                .args(["--shard", &format!("{i}/2"), "--shard-by", "workload"])
                .arg("--results")
                .arg(&dir)
                .arg("-q"),
        );
        let seal: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("shard.json")).unwrap())
                .unwrap();
        assert!(
            seal["crash_sha256"].is_string(),
            "the seal covers the shard's crash states: {seal}"
        );
        dirs.push(dir);
    }
    assert_no_leaks(tmp.path());
    let merged = tmp.path().join("merged");
    run_ok(jbench().arg("merge").args(&dirs).arg("--out").arg(&merged));
    let mut records: Vec<TrialRecord> = Vec::new();
    let mut crash: Vec<CrashRecord> = Vec::new();
    for d in &dirs {
        let c = load_crash_records(&d.join("crash.jsonl")).unwrap();
        assert!(
            !c.is_empty(),
            "each shard ran the lab on its own recordings"
        );
        crash.extend(c);
        records.extend(store::load_records(d).unwrap());
    }
    let merged_crash = load_crash_records(&merged.join("crash.jsonl")).unwrap();
    assert_eq!(states_of(&merged_crash), states_of(&crash));
    assert_eq!(merged_crash.len(), 2 * 2 * STATES);
    // The merged directory's report is the report of every shard's records together.
    let spec_v = jbench::experiment::spec::load(&merged.join("spec.toml")).unwrap();
    let opts = jbench::report::ReportOptions::of_spec(&spec_v, None, None).unwrap();
    records.sort_by_key(|r| r.trial);
    let want = report::render_with_crash(&records, &crash, &opts, Format::Json);
    let got = run_ok(
        jbench()
            .arg("report")
            .arg(&merged)
            .args(["--format", "json"]),
    )
    .stdout;
    assert_eq!(String::from_utf8(got).unwrap(), want);
    check_answer_against_records(&merged);
}
