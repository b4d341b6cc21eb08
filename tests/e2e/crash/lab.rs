//! The crash lab for real: `jbench crash` on emulated disks, its negative controls
//! (a disk that lies about flushes, flushes turned off), a state corrupted on purpose,
//! a recovery that hangs, and the refusals of bad input. Every test checks that
//! nothing it made is left attached.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::*;
use jbench::crash::lab::{self, load_log};
use jbench::crash::oracle::{self, Promises};
use jbench::crash::recover::RecoveryRig;
use jbench::crash::states::{plan_states, StatePlan};
use jbench::crash::{CrashOptions, Strategy};
use jbench::emu::writelog::RecordKind;
use jbench::results::crash::{load_crash_records, CacheUse, JudgedBy, Verdict};

fn crash_spec(work: &Path, configs: &str, states: u32, extra: &str) -> String {
    format!(
        r#"name = "crash-test"
seed = 3
suspect_below = "60s"
work_dir = "{}"

[models.liar]
model = "hdd-7200"
honor_flush = false

[filesystem]
type = "ext4"
size = "128M"
device_model = "hdd-7200"

[journal]
size = "8M"
mode = "ordered"

{configs}

[[workload]]
kind = "fsync"
name = "fsync"
files = 30
size = "4K"
fsync_dir = true

[crash]
states = {states}
recovery_timing = 2
strategies = ["prefix", "subset"]
{extra}
"#,
        work.display()
    )
}

#[test]
fn placements_in_ordered_and_journal_mode_survive_every_crash_state() {
    require!(root, fuse);
    let tmp = scratch("crash-ok-");
    let configs = r#"
[[config]]
label = "internal"
journal.placement = "internal"

[[config]]
label = "second-disk"
journal.placement = "second-disk"

[[config]]
label = "ram"
journal.placement = "ramdisk"
journal.device_model = "ram"

[[config]]
label = "nvram"
journal.placement = "ramdisk"
journal.device_model = "nvram"

[[config]]
label = "internal-journal-mode"
journal.placement = "internal"
journal.mode = "journal"
"#;
    let spec = write_spec(
        tmp.path(),
        "crash.toml",
        &crash_spec(tmp.path(), configs, 40, ""),
    );
    let results = tmp.path().join("results");
    let records = crash_ok(&spec, &results);
    let groups = by_config(&records);
    assert_eq!(groups.len(), 5, "{:?}", groups.keys());
    for (config, states) in &groups {
        assert!(states.len() >= 30, "{config}: only {} states", states.len());
        for s in [Strategy::Prefix, Strategy::Subset] {
            assert!(
                states.iter().any(|r| r.strategy == s.as_str()),
                "{config}: no {s} state"
            );
        }
        let bad: Vec<_> = states.iter().filter(|r| r.verdict != Verdict::Ok).collect();
        assert!(
            bad.is_empty(),
            "{config}: {} states not ok, first {:?}",
            bad.len(),
            bad[0]
        );
        // The oracle had something to check: states after fsyncs returned.
        assert!(
            states.iter().any(|r| r.fsynced_files >= 10),
            "{config}: no state checked 10 fsync'ed files"
        );
        assert!(states.iter().all(|r| r.checks_fsync && !r.negative_control));
        let timed: Vec<_> = states.iter().filter_map(|r| r.timings.as_ref()).collect();
        assert_eq!(timed.len(), 2, "{config}: recovery_timing = 2");
        assert!(timed
            .iter()
            .all(|t| t.mount_seconds > 0.0 && t.full_fsck_seconds.is_some()));
        // What the replay applied, read from the journal before it ran: debugfs reads
        // an internal journal; it misreads an external one, whose records leave it
        // out and say what the replay walks in `journal_live` (from the write log).
        let external = states.iter().any(|r| r.placement != "internal");
        assert!(
            timed
                .iter()
                .all(|t| t.replayed_blocks.is_some() != external),
            "{config}: replayed_blocks in {timed:?}"
        );
        assert!(
            states.iter().all(|r| r.journal_live.is_some()),
            "{config}: every ext4 state records its live journal"
        );
    }
    // A RAM journal is lost with the power: the mount fails, the procedure recovers
    // the file system, and what only the journal held is gone.
    let ram = &groups["ram"];
    let lost: Vec<_> = ram.iter().filter_map(|r| r.lost_journal.as_ref()).collect();
    assert_eq!(
        lost.len(),
        ram.len(),
        "every ram state is also recovered without its journal"
    );
    assert!(
        lost.iter().all(|l| l.mount_failed),
        "a mount succeeded without the journal"
    );
    assert!(
        lost.iter().all(|l| l.recovered),
        "{:?}",
        lost.iter().find(|l| !l.recovered)
    );
    assert!(
        lost.iter()
            .any(|l| l.fsynced_missing + l.fsynced_different > 0),
        "no lost-journal state lost an fsync'ed file"
    );
    // The power-cut verdict of a state whose journal is also lost comes from user
    // space like any other's; the lost-journal procedure stays the kernel's, run again
    // for a sample of the states that repeat an input, never contradicted.
    assert!(
        ram.iter().any(|r| r.judged_by == Some(JudgedBy::UserSpace)),
        "no ram state judged in user space"
    );
    assert!(
        lost.iter().all(|l| l.reuse != Some(CacheUse::Disagreed)),
        "{:?}",
        lost.iter().find(|l| l.reuse == Some(CacheUse::Disagreed))
    );
    assert!(lost
        .iter()
        .filter(|l| l.reuse == Some(CacheUse::Hit))
        .all(|l| l.evidence[0].starts_with("reused:") && l.mount_failed && l.recovered));
    // NVRAM keeps its contents: nothing is recovered as lost.
    assert!(groups["nvram"].iter().all(|r| r.lost_journal.is_none()));
    assert!(groups["internal"].iter().all(|r| r.lost_journal.is_none()));
    // The report carries the crash section.
    let report = run_ok(jbench().arg("report").arg(&results));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.to_lowercase().contains("crash"),
        "no crash section:\n{text}"
    );
    // At a glance the RAM-disk journal leads with the power cut that empties it; the
    // NVRAM one, kept through the cut, does not.
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"))
            .to_string()
    };
    let ram_line = line("ram");
    assert!(
        ram_line.trim_start()[3..]
            .trim_start()
            .starts_with("power cut empties journal: mount fails"),
        "{ram_line}"
    );
    assert!(
        !line("nvram").contains("power cut empties"),
        "{}",
        line("nvram")
    );
    assert!(
        text.contains("a crash that keeps RAM (kernel panic, reset)"),
        "the detail names the other case:\n{text}"
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn negative_controls_lose_fsynced_data_and_the_lab_says_so() {
    require!(root, fuse);
    let tmp = scratch("crash-neg-");
    let configs = r#"
[[config]]
label = "lying-disk"
journal.placement = "internal"
filesystem.device_model = "liar"

[[config]]
label = "no-barrier"
journal.placement = "internal"
filesystem.mount_options = ["barrier=0"]
"#;
    let spec = write_spec(
        tmp.path(),
        "crash.toml",
        &crash_spec(tmp.path(), configs, 30, "").replace(
            r#"strategies = ["prefix", "subset"]"#,
            r#"strategies = ["subset"]"#,
        ),
    );
    let results = tmp.path().join("results");
    // Negative controls that fail as they should are the expected outcome: exit 0.
    let records = crash_ok(&spec, &results);
    for (config, states) in by_config(&records) {
        assert!(
            states.iter().all(|r| r.negative_control),
            "{config} not marked a negative control"
        );
        let lost = states
            .iter()
            .filter(|r| r.verdict == Verdict::LostFsynced)
            .count();
        assert!(
            lost > 0,
            "{config}: no lost-fsynced state among {}",
            states.len()
        );
        let r = states
            .iter()
            .find(|r| r.verdict == Verdict::LostFsynced)
            .unwrap();
        assert!(
            r.evidence.iter().any(|e| e.contains("promises broken")),
            "{:?}",
            r.evidence
        );
    }
    answers_safety_alone(&results, &records);
    assert_no_leaks(tmp.path());
}

/// The report of a `jbench crash` directory: its trials are crash recordings, so the
/// answer has no speed half, and each configuration's count of failed states is every
/// failed state of its records, worst verdict first, in the line and the table alike.
fn answers_safety_alone(results: &Path, records: &[jbench::results::crash::CrashRecord]) {
    let trials = jbench::results::store::load_records(results).unwrap();
    assert!(!trials.is_empty() && trials.iter().all(|t| t.crash_recording));
    let report = |format: &str| {
        String::from_utf8(
            run_ok(
                jbench()
                    .arg("report")
                    .arg(results)
                    .args(["--format", format]),
            )
            .stdout,
        )
        .unwrap()
    };
    let text = report("table");
    assert!(
        text.starts_with("Answer: safety and recovery"),
        "safety first:\n{text}"
    );
    for speed in ["as fast as", "slowest", "== Workload", "Trust:"] {
        assert!(!text.contains(speed), "`{speed}` in\n{text}");
    }
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    assert_eq!(json["workloads"], serde_json::json!([]), "no speed figures");
    for (config, states) in by_config(records) {
        let failed: Vec<Verdict> = Verdict::BY_SEVERITY
            .into_iter()
            .filter(|v| v.is_failure() && states.iter().any(|r| r.verdict == *v))
            .collect();
        let n = states.iter().filter(|r| r.verdict.is_failure()).count();
        let answer = json["answer"][0]["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["config"] == config.as_str())
            .unwrap();
        assert_eq!(answer["crash_failures"], n);
        assert_eq!(answer["rate_mean"], serde_json::Value::Null);
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("  {config}: ")))
            .unwrap_or_else(|| panic!("no answer line of {config}:\n{text}"));
        let words = format!(
            "{config}: a negative control, caught: {n} of {} power cuts failed ({} {}",
            states.len(),
            states.iter().filter(|r| r.verdict == failed[0]).count(),
            failed[0]
        );
        assert!(line.contains(&words), "`{words}` in {line}");
        // The answer table's row: crash states, then failed.
        let row: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with(&format!("{config} (negative control) ")))
            .unwrap_or_else(|| panic!("no table row of {config}:\n{text}"))
            .split_whitespace()
            .collect();
        assert_eq!(
            row[3..5],
            [states.len().to_string(), n.to_string()],
            "{row:?}"
        );
    }
}

/// Records one trial of `config` with the write log on and returns the results
/// directory, for the tests that drive the lab's parts by hand.
fn record_one(tmp: &Path, config: &str) -> (std::path::PathBuf, jbench::experiment::spec::Spec) {
    let spec_path = write_spec(tmp, "one.toml", &crash_spec(tmp, config, 5, ""));
    let results = tmp.join("results");
    run_ok(
        jbench()
            .arg("crash")
            .arg(&spec_path)
            .arg("--results")
            .arg(&results)
            .arg("-q"),
    );
    (results, jbench::experiment::spec::load(&spec_path).unwrap())
}

#[test]
fn a_state_with_a_dropped_commit_block_is_judged_and_the_base_stays_untouched() {
    require!(root, fuse);
    let tmp = scratch("crash-corrupt-");
    let (results, spec) = record_one(
        tmp.path(),
        "[[config]]\nlabel = \"ram\"\njournal.placement = \"ramdisk\"\njournal.device_model = \"ram\"\n",
    );
    let log_path = results.join("write-logs/trial-0.wlog");
    let log = load_log(&log_path).unwrap();
    // The last commit block: the journal disk's last single-block write before its
    // last flush in the workload. Dropping it while keeping later writes is what no
    // real disk can do; the lab must judge the result, not fail on it.
    let journal = log
        .header
        .disks
        .iter()
        .position(|d| d.name == "journal")
        .unwrap() as u8;
    let flushes: Vec<u64> = log
        .recs
        .iter()
        .filter(|r| r.kind == RecordKind::Flush && r.disk == journal)
        .map(|r| r.seq)
        .collect();
    let f = flushes[flushes.len() / 2];
    let commit = log.recs[..f as usize]
        .iter()
        .rev()
        .find(|r| r.disk == journal && r.kind == RecordKind::Write && r.len == 4096)
        .unwrap()
        .seq;
    let cut = log.recs.len() as u64;
    let plan = StatePlan {
        strategy: Strategy::Subset,
        cut,
        base: commit,
        overlay: (commit + 1..cut)
            .filter(|&s| log.recs[s as usize].is_write())
            .map(jbench::crash::states::Piece::whole)
            .collect(),
        kept: 0,
        dropped: 1,
        dropped_blocks: 1,
        torn: None,
        stratum: String::new(),
    };
    let mut rig = rig_for(&spec, &log, &log_path, Duration::from_secs(60));
    rig.load(&log.recs, &plan).unwrap();
    let judged = oracle::judge(&rig, &Promises::default(), None).unwrap();
    assert!(!judged.evidence.is_empty());
    // Whatever the verdict, recovery wrote only the overlay: the base is the log
    // replayed up to the plan's base.
    let images: Vec<std::path::PathBuf> = log
        .header
        .disks
        .iter()
        .map(|d| {
            let p = tmp.path().join(format!("replay-{}.img", d.name));
            std::fs::File::create(&p).unwrap().set_len(d.size).unwrap();
            p
        })
        .collect();
    let refs: Vec<&Path> = images.iter().map(|p| p.as_path()).collect();
    jbench::emu::writelog::replay(&log_path, &refs, Some(plan.base)).unwrap();
    for (d, replayed) in log.header.disks.iter().zip(&images) {
        let base = rig.session().join(format!("base-{}.img", d.name));
        assert!(
            std::fs::read(&base).unwrap() == std::fs::read(replayed).unwrap(),
            "base image of disk {} was changed by recovery",
            d.name
        );
    }
    rig.release().unwrap();
    assert_no_leaks(tmp.path());
}

#[test]
fn a_recovery_step_that_hangs_gives_no_verdict_and_leaves_nothing_behind() {
    require!(root, fuse);
    let tmp = scratch("crash-hang-");
    let (results, spec) = record_one(
        tmp.path(),
        "[[config]]\nlabel = \"internal\"\njournal.placement = \"internal\"\n",
    );
    let log_path = results.join("write-logs/trial-0.wlog");
    let log = load_log(&log_path).unwrap();
    let traits = lab::disk_traits(&log.header);
    let plans = plan_states(
        &log.recs,
        &traits,
        &CrashOptions {
            states: 3,
            ..CrashOptions::default()
        },
        1,
    )
    .unwrap();
    // Model timing on a 7200 rpm disk makes the mount take far longer than a 1 ms
    // limit: the step is stopped as a hung one would be.
    let mut rig = rig_for(&spec, &log, &log_path, Duration::from_millis(1));
    rig.load(&log.recs, &plans[0]).unwrap();
    rig.daemon().set_timing(true).unwrap();
    let judged = oracle::judge(&rig, &Promises::default(), None).unwrap();
    assert_eq!(judged.verdict, Verdict::NoVerdict, "{:?}", judged.evidence);
    assert!(judged.hung);
    assert!(judged.evidence[0].contains("hung"), "{:?}", judged.evidence);
    // The aborted daemon is replaced and the next state is judged normally.
    rig.restart_daemon().unwrap();
    rig.timeout = Duration::from_secs(60);
    rig.load(&log.recs, &plans[1]).unwrap();
    let judged = oracle::judge(&rig, &Promises::default(), None).unwrap();
    assert_eq!(judged.verdict, Verdict::Ok, "{:?}", judged.evidence);
    rig.release().unwrap();
    assert_no_leaks(tmp.path());
}

#[test]
fn a_configuration_without_emulated_disks_is_refused_before_anything_is_made() {
    let tmp = scratch("crash-refuse-");
    // The file system on the host's own disk: no device daemon, no write log.
    let body = crash_spec(
        tmp.path(),
        "[[config]]\nlabel = \"host\"\njournal.placement = \"internal\"\n",
        5,
        "",
    )
    .replace("device_model = \"hdd-7200\"\n", "");
    let spec = write_spec(tmp.path(), "crash.toml", &body);
    let out = jbench().arg("crash").arg(&spec).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("`host`") && stderr.contains("device_model"),
        "the refusal names the configuration and the key: {stderr}"
    );
    assert!(!tmp.path().join("results").exists());
}

#[test]
fn logs_of_another_version_are_refused_and_a_torn_log_is_cut_where_it_tears() {
    let tmp = scratch("crash-badlog-");
    let path = tmp.path().join("x.wlog");
    std::fs::write(&path, b"JBWLOG09\x02\x00\x00\x00{}").unwrap();
    let e = load_log(&path).err().expect("version 9 is refused");
    assert!(format!("{e:#}").contains('9'), "{e:#}");
    // A torn log: a real one cut in the middle of its last records.
    let header = jbench::emu::writelog::LogHeader {
        version: 2,
        disks: vec![jbench::emu::writelog::LogDisk {
            index: 0,
            name: "fs".into(),
            size: 1 << 20,
            model: "hdd-7200".into(),
            volatile_cache: Some(true),
            honor_flush: Some(true),
        }],
        initial_state: "zeros".into(),
    };
    let mut w = jbench::emu::writelog::LogWriter::create(&path, &header).unwrap();
    let mut clock = 0;
    let mut stamp = || {
        clock += 2;
        jbench::emu::writelog::Stamp {
            time_ns: clock,
            issued: clock - 2,
            acked: clock - 1,
        }
    };
    w.append(RecordKind::Marker, 255, 0, 0, b"timing on", stamp())
        .unwrap();
    for i in 0..20u64 {
        w.append(
            RecordKind::Write,
            0,
            i * 4096,
            4096,
            &[i as u8 + 1; 4096],
            stamp(),
        )
        .unwrap();
        w.append(RecordKind::Flush, 0, 0, 0, &[], stamp()).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let full = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(full - 100)
        .unwrap();
    let log = load_log(&path).unwrap();
    // The last flush and part of the last write's payload are gone: the torn write
    // ends the log.
    assert_eq!(log.recs.len(), 39);
    let plans = plan_states(
        &log.recs,
        &lab::disk_traits(&log.header),
        &CrashOptions::default(),
        1,
    )
    .unwrap();
    assert!(!plans.is_empty() && plans.iter().all(|p| p.cut <= 39));
}

#[test]
fn an_interrupted_crash_run_stops_cleanly_and_resumes_where_it_stopped() {
    require!(root, fuse);
    let tmp = scratch("crash-resume-");
    let body = crash_spec(
        tmp.path(),
        "[[config]]\nlabel = \"internal\"\njournal.placement = \"internal\"\n",
        400,
        "",
    );
    let spec = write_spec(tmp.path(), "crash.toml", &body);
    let results = tmp.path().join("results");
    let crash_file = results.join("crash.jsonl");
    let child = jbench()
        .arg("crash")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once the lab has judged some states.
    let out = interrupt_in_the_lab(child, &crash_file, 5, 120);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "says how to finish: {stderr}");
    assert_no_leaks(tmp.path());
    let before = load_crash_records(&crash_file).unwrap();
    assert!(
        before.len() < 400,
        "the run was not interrupted: {} states",
        before.len()
    );
    // Resume: the states already judged are kept, the rest are added, none twice.
    run_ok(
        jbench()
            .arg("crash")
            .arg(&spec)
            .arg("--resume")
            .arg(&results)
            .arg("-q"),
    );
    let after = load_crash_records(&crash_file).unwrap();
    let numbers: std::collections::BTreeSet<u64> = after.iter().map(|r| r.state).collect();
    assert_eq!(numbers.len(), after.len(), "a state was judged twice");
    assert!(after.len() > before.len());
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(
        *numbers.iter().next_back().unwrap() as usize,
        after.len() - 1,
        "states 0..n, none missing"
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn a_state_read_right_after_another_sees_its_own_bytes_not_cached_ones() {
    require!(root, fuse);
    let tmp = scratch("crash-cache-");
    let (results, spec) = record_one(
        tmp.path(),
        "[[config]]\nlabel = \"internal\"\njournal.placement = \"internal\"\n",
    );
    let log_path = results.join("write-logs/trial-0.wlog");
    let log = load_log(&log_path).unwrap();
    let plans = plan_states(
        &log.recs,
        &lab::disk_traits(&log.header),
        &CrashOptions {
            states: 20,
            strategies: vec![Strategy::Prefix],
            ..CrashOptions::default()
        },
        1,
    )
    .unwrap();
    let (a, b) = (&plans[0], plans.last().unwrap());
    // A prefix state is the log replayed up to its cut: replay both and find a block
    // of the file system that differs between them.
    let fs_disk = log
        .header
        .disks
        .iter()
        .position(|d| d.name == "fs")
        .unwrap();
    let replayed = |cut: u64, name: &str| -> Vec<u8> {
        let images: Vec<std::path::PathBuf> = log
            .header
            .disks
            .iter()
            .map(|d| {
                let p = tmp.path().join(format!("{name}-{}.img", d.name));
                std::fs::File::create(&p).unwrap().set_len(d.size).unwrap();
                p
            })
            .collect();
        let refs: Vec<&Path> = images.iter().map(|p| p.as_path()).collect();
        jbench::emu::writelog::replay(&log_path, &refs, Some(cut)).unwrap();
        let mut bytes = std::fs::read(&images[fs_disk]).unwrap();
        bytes.truncate(spec.configs[0].fs_size as usize);
        bytes
    };
    let (in_a, in_b) = (replayed(a.cut, "a"), replayed(b.cut, "b"));
    let block = (0..in_a.len() / 4096)
        .find(|&k| in_a[k * 4096..(k + 1) * 4096] != in_b[k * 4096..(k + 1) * 4096])
        .expect("the first and last states differ somewhere");
    let range = block * 4096..(block + 1) * 4096;
    let mut rig = rig_for(&spec, &log, &log_path, Duration::from_secs(60));
    // Read through the rig's own loop device, which it keeps open between states: the
    // block lands in the device's page cache.
    let read_block = |rig: &RecoveryRig| -> Vec<u8> {
        use std::os::unix::fs::FileExt;
        let dev = std::fs::File::open(rig.attached().unwrap().fs_path()).unwrap();
        let mut buf = vec![0u8; 4096];
        dev.read_exact_at(&mut buf, range.start as u64).unwrap();
        buf
    };
    rig.load(&log.recs, a).unwrap();
    assert!(
        read_block(&rig) == in_a[range.clone()],
        "state a reads as a"
    );
    rig.clear().unwrap();
    rig.load(&log.recs, b).unwrap();
    assert!(
        read_block(&rig) == in_b[range.clone()],
        "state b read block {block} as state a had it: the block cache was not dropped"
    );
    rig.release().unwrap();
    assert_no_leaks(tmp.path());
}

#[test]
fn fill_states_hold_the_fullest_journal_and_their_replay_applies_it() {
    require!(root, fuse);
    let tmp = scratch("crash-fill-");
    let body = format!(
        r#"name = "crash-fill"
seed = 9
suspect_below = "60s"
work_dir = "{}"

[filesystem]
type = "ext4"
size = "128M"
device_model = "hdd-7200"

[journal]
size = "16M"
mode = "ordered"

[[config]]
label = "internal"
journal.placement = "internal"

[[workload]]
kind = "fsync"
name = "fsync"
files = 30
size = "16K"
fsync_dir = true

[crash]
states = 10
strategies = ["prefix", "fill"]
recovery_timing = 10
"#,
        tmp.path().display()
    );
    let spec = write_spec(tmp.path(), "crash.toml", &body);
    let records = crash_ok(&spec, &tmp.path().join("results"));
    let live = |r: &jbench::results::crash::CrashRecord| {
        r.journal_live
            .unwrap_or_else(|| panic!("state {} has no journal_live", r.state))
    };
    let fill: Vec<_> = records.iter().filter(|r| r.strategy == "fill").collect();
    let prefix: Vec<_> = records.iter().filter(|r| r.strategy == "prefix").collect();
    assert_eq!((fill.len(), prefix.len()), (5, 5), "{records:#?}");
    let least_fill = fill.iter().map(|r| live(r).blocks).min().unwrap();
    let most_prefix = prefix.iter().map(|r| live(r).blocks).max().unwrap();
    assert!(least_fill > 0, "a fill state with an empty journal");
    assert!(
        least_fill >= most_prefix,
        "a prefix state holds {most_prefix} live blocks, a fill state only {least_fill}"
    );
    let cov = records[0].coverage.as_ref().unwrap();
    assert!(
        cov.space(jbench::crash::options::Strategy::Fill) >= 5.0
            && cov.planned(jbench::crash::options::Strategy::Fill) == 5,
        "{cov:?}"
    );
    for r in &records {
        let t = r
            .timings
            .as_ref()
            .unwrap_or_else(|| panic!("state {} was not timed", r.state));
        // The scan of the log and debugfs on the state see the same transactions.
        assert_eq!(
            t.replayed_transactions,
            Some(live(r).transactions),
            "state {} ({}): {t:?}, {:?}",
            r.state,
            r.strategy,
            r.journal_live
        );
        if r.strategy == "fill" {
            let replayed = t.replayed_blocks.unwrap_or(0);
            assert!(replayed > 0, "fill state {} replayed nothing", r.state);
            // Each transaction adds at least its commit block to what it logs (jbd2
            // commits some with nothing logged: a commit block alone).
            assert!(live(r).blocks >= replayed + live(r).transactions);
        }
    }
    assert_no_leaks(tmp.path());
}
