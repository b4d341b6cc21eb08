//! A results directory for the HTML report tests: one fdtree workload with a durable
//! phase, a journal-size sweep (16M, 64M, 256M) on two placements, two more
//! configurations with longer labels (eight in all), a failed trial, a short (suspect)
//! phase, a noisy configuration, `env.json`, and monitor samples for trial 0 only.

#![allow(dead_code)] // each test file uses part of it

use std::path::Path;

use jbench::results::record::{
    ConfigRecord, Status, TrialRecord, Verified, WorkloadRecord, SCHEMA_VERSION,
};
use jbench::workload::{Latency, PhaseResult};

pub const SIZES: [u64; 3] = [16 << 20, 64 << 20, 256 << 20];

/// Phases in the report: dir_create, file_create and their `+syncfs` companions,
/// each with a bar chart and a journal-size chart, plus trial 0's two timelines.
pub const PHASES_IN_REPORT: usize = 4;
pub const EXPECTED_CHARTS: usize = PHASES_IN_REPORT * 2 + 2;
pub const CONFIGS: usize = 8;

fn config(label: &str, placement: &str, journal_size: u64, model: Option<&str>) -> ConfigRecord {
    ConfigRecord {
        label: label.to_string(),
        filesystem: "ext4".to_string(),
        fs_size: 1 << 30,
        placement: placement.to_string(),
        journal_size,
        mode: "ordered".to_string(),
        mkfs_options: vec![],
        mount_options: vec![],
        fast_commit: false,
        commit_seconds: None,
        memory_limit: None,
        ramdisk_size: None,
        fs_device_model: None,
        journal_device_model: model.map(str::to_string),
    }
}

fn record(
    trial: usize,
    rep: u32,
    cfg: &ConfigRecord,
    dir_rate: f64,
    file_rate: f64,
) -> TrialRecord {
    // dir_create: 20 s (suspect under the 60 s rule); file_create: about 100 s.
    let phase = |name: &str, unit: &str, ops: u64, rate: f64, bytes: u64| PhaseResult {
        name: name.to_string(),
        seconds: ops as f64 / rate,
        ops,
        bytes,
        op_unit: unit.to_string(),
        durable_seconds: Some(ops as f64 / rate + 1.5),
        ..PhaseResult::default()
    };
    let dir_ops = (dir_rate * 20.0) as u64;
    let file_ops = 100_000;
    TrialRecord {
        schema_version: SCHEMA_VERSION,
        trial,
        rep,
        crash_recording: false,
        config: cfg.clone(),
        workload: WorkloadRecord {
            kind: "fdtree".to_string(),
            name: "small-deep".to_string(),
            params: serde_json::json!({"dirs": 3, "files": 4, "blocks": 1, "levels": 5}),
            durable: true,
            neighbour_rate: None,
        },
        layout: serde_json::Value::Null,
        verified: Some(Verified {
            journal_device: format!("/dev/loop{}", trial % 4),
            journal_bytes: cfg.journal_size,
            mode: "ordered".to_string(),
            checks: vec![
                format!(
                    "dumpe2fs: journal size {} bytes = requested",
                    cfg.journal_size
                ),
                format!("/proc/mounts: data=ordered ({})", cfg.placement),
            ],
        }),
        phases: vec![
            phase("dir_create", "dir creates", dir_ops, dir_rate, 0),
            phase(
                "file_create",
                "file creates",
                file_ops,
                file_rate,
                file_ops * 4096,
            ),
        ],
        memory: None,
        emulation: None,
        monitor: None,
        writeback: None,
        neighbour: None,
        concurrency: None,
        status: Status::Ok,
        error: None,
        started_at: format!("2026-11-23T10:{:02}:00+00:00", trial % 60),
        wall_seconds: 140.0,
    }
}

/// The configurations, in matrix order.
pub fn configs() -> Vec<ConfigRecord> {
    let mut out = Vec::new();
    for placement in ["same-disk", "ramdisk"] {
        for size in SIZES {
            let label = format!("{placement},{}", jbench::units::format_size(size));
            out.push(config(&label, placement, size, None));
        }
    }
    out.push(config("internal", "internal", 64 << 20, None));
    out.push(config(
        "second-disk,hdd-7200,journal-on-slow-disk",
        "second-disk",
        64 << 20,
        Some("hdd-7200"),
    ));
    out
}

pub const FAILED_ERROR: &str = "mkfs.ext4 failed: journal device busy";

/// Three repetitions of each configuration, interleaved; the last trial of the
/// second-disk configuration failed.
pub fn records() -> Vec<TrialRecord> {
    let cfgs = configs();
    let mut out = Vec::new();
    let mut trial = 0;
    for rep in 1..=3u32 {
        for (i, c) in cfgs.iter().enumerate() {
            let base = 1000.0 + 150.0 * i as f64;
            // ramdisk,16M is noisy (high variance); the others vary by about 2%.
            let jitter = if c.label == "ramdisk,16M" {
                [0.6, 1.0, 1.5][rep as usize - 1]
            } else {
                [0.98, 1.0, 1.02][rep as usize - 1]
            };
            let mut r = record(trial, rep, c, base * jitter, (base * 0.8) * jitter);
            if rep == 3 && c.placement == "second-disk" {
                r.status = Status::Failed;
                r.phases.clear();
                r.verified = None;
                r.error = Some(FAILED_ERROR.to_string());
            }
            out.push(r);
            trial += 1;
        }
    }
    out
}

pub fn env_json() -> serde_json::Value {
    serde_json::json!({
        "jbench_version": "0.1.0",
        "recorded_at": "2026-11-23T10:00:00+00:00",
        "hostname": "bench-host-7",
        "kernel": "Linux 6.1.0-28-amd64 x86_64",
        "e2fsprogs": "mke2fs 1.47.0 (5-Feb-2023)",
        "xfsprogs": "mkfs.xfs version 6.1.0",
        "cpu_model": "Fixture CPU 9000",
        "cores": 8,
        "memory_bytes": 17179869184u64,
        "mkfs_extended_options": "lazy_itable_init=0,lazy_journal_init=0",
        "image_locations": []
    })
}

/// Monitor samples of trial 0: 40 s over the two phases, with a stall at 12-15 s on
/// the file-system device while the journal keeps writing.
pub fn monitor_lines() -> String {
    let mut out = String::new();
    for i in 0..40 {
        let t = i as f64;
        let phase = if t < 20.0 {
            "dir_create"
        } else {
            "file_create"
        };
        let stall = (12.0..15.0).contains(&t);
        let fs = if stall {
            0.0
        } else {
            30000.0 + 2000.0 * (t * 0.7).sin()
        };
        let journal = 8000.0 + 1000.0 * (t * 0.3).cos();
        let line = serde_json::json!({
            "t": t,
            "phase": phase,
            "devices": {
                "fs": {"write_kib_s": fs, "read_kib_s": 10.0, "in_flight": 3},
                "journal": {"write_kib_s": journal, "read_kib_s": 0.0, "in_flight": 1}
            },
            "cpu": {"user": 12.0, "system": 30.0 + t % 5.0, "iowait": if stall { 60.0 } else { 8.0 }},
            "dirty_kib": 20480,
            "writeback_kib": 1024
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// Writes `records` as the results directory's `trials.jsonl`.
fn write_trials(dir: &Path, records: &[TrialRecord]) {
    let lines: String = records
        .iter()
        .map(|r| format!("{}\n", serde_json::to_string(r).unwrap()))
        .collect();
    std::fs::write(dir.join("trials.jsonl"), lines).unwrap();
}

/// Writes the results directory: spec.toml, trials.jsonl, env.json,
/// monitor/trial-0.jsonl.
pub fn write_results_dir(dir: &Path) -> Vec<TrialRecord> {
    let records = records();
    let spec = "name = \"journal-sweep\"\n[[workload]]\nkind = \"fdtree\"\nname = \"small-deep\"\n";
    std::fs::write(dir.join("spec.toml"), spec).unwrap();
    write_trials(dir, &records);
    std::fs::write(
        dir.join("env.json"),
        serde_json::to_vec_pretty(&env_json()).unwrap(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("monitor")).unwrap();
    std::fs::write(dir.join("monitor/trial-0.jsonl"), monitor_lines()).unwrap();
    records
}

/// The fixture's results directory in a fresh temporary directory, and its HTML
/// report as `jbench report --html` renders it.
pub fn rendered() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    write_results_dir(dir.path());
    let html = jbench::report::html::render_results(
        &jbench::results::open(dir.path()).unwrap(),
        &options(),
    )
    .unwrap();
    (dir, html)
}

pub fn options() -> jbench::report::ReportOptions {
    jbench::report::ReportOptions {
        config_order: configs().into_iter().map(|c| c.label).collect(),
        ..Default::default()
    }
}

/// minijinja's HTML escaping, to look for text in the page.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

/// The `<svg ...</svg>` elements of a page, in order.
pub fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("unclosed <svg>") + start + 6;
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}

/// Elements of `svg` drawn in a data colour (the palette): bars,
/// lines, points, error-bar-free legend marks included.
pub fn data_marks(svg: &str) -> usize {
    let colours: Vec<String> = jbench::report::html::PALETTE
        .iter()
        .map(|c| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2))
        .collect();
    svg.split('<')
        .filter(|el| {
            (el.starts_with("rect") || el.starts_with("polyline") || el.starts_with("circle"))
                && colours.iter().any(|c| el.contains(c.as_str()))
        })
        .count()
}

/// Text that must never appear in a self-contained page.
pub const EXTERNAL: [&str; 6] = ["http://", "https://", "src=", "<link", "@import", "url("];

/// The fsync workload of [`write_results_dir_with_fsync`]: its configurations with
/// their repetitions (`internal` runs once: one trial, no interval).
pub const FSYNC_WORKLOAD: &str = "fsync-mail";
pub const FSYNC_CONFIGS: [(&str, u32); 3] =
    [("same-disk,16M", 3), ("ramdisk,16M", 3), ("internal", 1)];
/// create_fsync (about 70 s) and remove (short: suspect), both with latency
/// percentiles: a bar chart and a latency chart each.
pub const FSYNC_PHASES: [&str; 2] = ["create_fsync", "remove"];
pub const EXPECTED_CHARTS_WITH_FSYNC: usize = EXPECTED_CHARTS + 2 * FSYNC_PHASES.len();
/// Monitor samples of the first fsync trial: too few for a timeline.
pub const SHORT_MONITOR_SAMPLES: usize = 2;

/// The fsync trials, numbered from `first_trial`.
pub fn fsync_records(first_trial: usize) -> Vec<TrialRecord> {
    let cfgs = configs();
    let mut out = Vec::new();
    let mut trial = first_trial;
    for rep in 1..=3u32 {
        for (i, (label, reps)) in FSYNC_CONFIGS.iter().enumerate() {
            if rep > *reps {
                continue;
            }
            let cfg = cfgs.iter().find(|c| c.label == *label).unwrap();
            let mut r = record(trial, rep, cfg, 1.0, 1.0);
            let slow = 1.0 + 0.5 * i as f64;
            let jitter = [0.97, 1.0, 1.04][rep as usize - 1];
            let latency = |p50: f64| Latency {
                count: 2000,
                p50_us: p50,
                p95_us: p50 * 2.5,
                p99_us: p50 * 6.0,
                p999_us: None,
                max_us: p50 * 40.0,
            };
            let phase = |name: &str, unit: &str, seconds: f64, p50: f64| PhaseResult {
                name: name.to_string(),
                seconds,
                ops: 2000,
                bytes: 0,
                op_unit: unit.to_string(),
                latency: Some(latency(p50)),
                ..PhaseResult::default()
            };
            r.workload = WorkloadRecord {
                kind: "fsync".to_string(),
                name: FSYNC_WORKLOAD.to_string(),
                params: serde_json::json!({"files": 2000, "size": 4096}),
                durable: false,
                neighbour_rate: None,
            };
            r.phases = vec![
                phase(
                    "create_fsync",
                    "file creates",
                    70.0 * slow * jitter,
                    1500.0 * slow * jitter,
                ),
                phase("remove", "file removals", 0.4 * jitter, 9.0 * jitter),
            ];
            r.wall_seconds = 75.0;
            out.push(r);
            trial += 1;
        }
    }
    out
}

/// [`write_results_dir`] plus an fsync workload with latency percentiles, whose first
/// trial has [`SHORT_MONITOR_SAMPLES`] monitor samples.
pub fn write_results_dir_with_fsync(dir: &Path) -> Vec<TrialRecord> {
    let mut records = write_results_dir(dir);
    let fsync = fsync_records(records.len());
    let short: String = monitor_lines()
        .lines()
        .take(SHORT_MONITOR_SAMPLES)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        dir.join(format!("monitor/trial-{}.jsonl", fsync[0].trial)),
        short,
    )
    .unwrap();
    records.extend(fsync);
    write_trials(dir, &records);
    records
}

pub fn options_with_fsync() -> jbench::report::ReportOptions {
    jbench::report::ReportOptions {
        workload_order: vec!["small-deep".to_string(), FSYNC_WORKLOAD.to_string()],
        ..options()
    }
}

/// A results directory of [`fsync_records`] alone with `states` crash states per
/// configuration, every one passed; the RAM-disk journal's states also recovered
/// without their journal (the mount failed, fsck brought the file system back, 12
/// fsync'ed files lost): a run like `quick`'s, for what a person sees first.
pub fn write_crash_results_dir(dir: &Path, states: u64) {
    use jbench::results::crash::{
        CrashRecord, LostJournal, RecoveryTimes, Verdict, CRASH_SCHEMA_VERSION,
    };
    let records = fsync_records(0);
    let spec = format!(
        "name = \"quick-like\"\n[[workload]]\nkind = \"fsync\"\nname = \"{FSYNC_WORKLOAD}\"\n"
    );
    std::fs::write(dir.join("spec.toml"), spec).unwrap();
    write_trials(dir, &records);
    std::fs::write(
        dir.join("env.json"),
        serde_json::to_string(&env_json()).unwrap(),
    )
    .unwrap();
    let cfgs = configs();
    let mut lines = String::new();
    for (k, (label, _)) in FSYNC_CONFIGS.iter().enumerate() {
        let cfg = cfgs.iter().find(|c| c.label == *label).unwrap();
        let ram = cfg.placement == "ramdisk";
        for state in 0..states {
            let r = CrashRecord {
                schema: CRASH_SCHEMA_VERSION,
                config: label.to_string(),
                workload: FSYNC_WORKLOAD.into(),
                trial: 100 + k,
                state,
                strategy: "prefix".into(),
                cut: 100 + state,
                kept: 90,
                dropped: 0,
                torn: None,
                last_fsync: None,
                fsynced_files: 40,
                verdict: Verdict::Ok,
                evidence: vec!["mount: ok".into()],
                timings: (state < 4).then(|| RecoveryTimes {
                    mount_seconds: 0.1 + 0.02 * state as f64,
                    journal_only_seconds: Some(0.2),
                    full_fsck_seconds: Some(0.5),
                    replayed_blocks: None,
                    replayed_transactions: None,
                    application_seconds: None,
                    application: None,
                    mount_io: Vec::new(),
                }),
                journal_live: None,
                lost_journal: ram.then(|| LostJournal {
                    mount_failed: true,
                    mount_error: "can't find ext4 filesystem journal".into(),
                    recovered: true,
                    fsynced_missing: 12,
                    fsynced_different: 0,
                    lost_found: 3,
                    fsck_repairs: 20,
                    evidence: Vec::new(),
                    reuse: None,
                }),
                check_seconds: 0.05,
                filesystem: "ext4".into(),
                placement: cfg.placement.clone(),
                mode: "ordered".into(),
                journal_size: cfg.journal_size,
                inodes: 65536,
                negative_control: false,
                torn_page_control: false,
                checks_fsync: true,
                dropped_blocks: 0,
                stratum: String::new(),
                coverage: None,
                user_check: false,
                hung: false,
                records_promised: 0,
                records_lost: None,
                check_cache: None,
                judged_by: None,
                fast_fallback: None,
                outcome: None,
            };
            lines.push_str(&serde_json::to_string(&r).unwrap());
            lines.push('\n');
        }
    }
    std::fs::write(jbench::results::layout::crash_file(dir), lines).unwrap();
}
