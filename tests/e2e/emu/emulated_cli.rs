//! Emulated disks through the `jbench` binary: a run on `hdd-7200` disks with the write
//! log on, Ctrl-C and SIGKILL (then `jbench cleanup`) while the device daemon serves a
//! trial, `jbench device calibrate`, and the spec-time refusals of `device_model`.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// An experiment with its file system on an emulated `hdd-7200` disk, running an
/// fsync workload of `files` files of 4 KiB; `emulation` is the body of `[emulation]`.
fn emu_spec(work: &Path, placements: &str, files: u32, emulation: &str) -> String {
    format!(
        r#"name = "emu-cli"
repetitions = 1
seed = 7
suspect_below = "60s"
work_dir = "{}"

[filesystem]
type = "ext4"
size = "128M"
device_model = "hdd-7200"

[journal]
placement = {placements}
size = "8M"
mode = "ordered"

[emulation]
{emulation}

[[workload]]
kind = "fsync"
name = "fsync"
files = {files}
size = "4K"
"#,
        work.display()
    )
}

/// Session directories (`jbench-<pid>-<n>`) left in `dir`.
fn sessions_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("jbench-"))
        .collect()
}

fn f64_of(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number: {v}"))
}

fn cpus_of(v: &Value, key: &str) -> BTreeSet<u64> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is a list: {v}"))
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}

#[test]
fn a_run_on_emulated_disks_records_counters_cpus_and_write_logs() {
    require!(root, fuse);
    const FILES: usize = 30;
    let tmp = scratch("emucli-run-");
    let spec = write_spec(
        tmp.path(),
        "emu",
        &emu_spec(
            tmp.path(),
            r#"["same-disk", "second-disk"]"#,
            FILES as u32,
            "write_log = true",
        ),
    );

    // The plan names both configurations and the disks they are on.
    let out = run_ok(jbench().arg("plan").arg(&spec));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        plan.contains("2 configurations x 1 workload x 1 repetition = 2 trials"),
        "{plan}"
    );
    let config_line = |label: &str| {
        plan.lines()
            .find(|l| l.split_whitespace().next() == Some(label) && l.contains("ext4 128M"))
            .unwrap_or_else(|| panic!("configuration `{label}` listed: {plan}"))
            .to_string()
    };
    let same = config_line("same-disk");
    assert!(
        same.contains("on an emulated hdd-7200 disk") && same.contains("on the same image"),
        "{same}"
    );
    let second = config_line("second-disk");
    assert!(
        second.contains("on a second image (an emulated hdd-7200 disk)"),
        "the second disk gets the file system's model: {second}"
    );

    let results = tmp.path().join("results");
    run_ok(
        jbench()
            .arg("run")
            .arg(&spec)
            .arg("--results")
            .arg(&results)
            .arg("-q"),
    );
    assert_no_leaks(tmp.path());
    assert!(
        sessions_in(tmp.path()).is_empty(),
        "session directory removed"
    );

    let recs = records(&results);
    assert_eq!(
        recs.len(),
        2,
        "2 configurations x 1 workload x 1 repetition"
    );
    let mut labels: Vec<&str> = recs
        .iter()
        .map(|r| r["config"]["label"].as_str().unwrap())
        .collect();
    labels.sort();
    assert_eq!(labels, ["same-disk", "second-disk"]);
    let allowed = jbench::rig::emulated::allowed_cpus();
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let placement = r["config"]["placement"].as_str().unwrap();
        assert_eq!(r["config"]["fs_device_model"], "hdd-7200", "{r}");
        let want_disks: &[&str] = match placement {
            "same-disk" => {
                assert!(r["config"]["journal_device_model"].is_null(), "{r}");
                &["fs"]
            }
            "second-disk" => {
                assert_eq!(r["config"]["journal_device_model"], "hdd-7200", "{r}");
                &["fs", "journal"]
            }
            other => panic!("unexpected placement {other}"),
        };
        assert_eq!(r["phases"][0]["name"], "create_fsync");
        assert_eq!(r["phases"][0]["ops"], FILES as u64);

        // The layout says which disks were emulated, and how.
        let layout_disks = r["layout"]["emulated_disks"]
            .as_array()
            .unwrap_or_else(|| panic!("layout.emulated_disks present: {r}"));
        let names: Vec<&str> = layout_disks
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, want_disks, "{r}");
        for d in layout_disks {
            assert_eq!(d["model"], "hdd-7200");
            assert_eq!(d["base_model"], "hdd-7200");
            assert!(
                d["served_as"]
                    .as_str()
                    .unwrap()
                    .ends_with(&format!("/emu/{}", d["name"].as_str().unwrap())),
                "{d}"
            );
        }
        assert!(r["layout"]["device_daemon_pid"].as_u64().is_some(), "{r}");

        // Counters per disk, taken while the workload ran.
        let emu = &r["emulation"];
        assert!(emu.is_object(), "an emulation record: {r}");
        let disks = emu["disks"].as_array().unwrap();
        let names: Vec<&str> = disks.iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(names, want_disks, "{emu}");
        for d in disks {
            assert_eq!(d["model"], "hdd-7200", "{d}");
            assert!(d["writes"].as_u64().unwrap() > 0, "{d}");
            assert!(d["flushes"].as_u64().unwrap() > 0, "{d}");
            assert!(f64_of(d, "response_seconds") > 0.0, "{d}");
        }
        // Every fsync commits the journal, and a commit ends with a flush of the
        // journal's disk.
        let journal_disk = disks.last().unwrap();
        assert!(
            journal_disk["flushes"].as_u64().unwrap() >= FILES as u64,
            "{journal_disk}"
        );
        assert!(f64_of(emu, "daemon_cpu_user_seconds") >= 0.0, "{emu}");
        assert!(f64_of(emu, "daemon_cpu_system_seconds") >= 0.0, "{emu}");
        let (daemon_cpus, workload_cpus) =
            (cpus_of(emu, "daemon_cpus"), cpus_of(emu, "workload_cpus"));
        if allowed.len() >= 2 {
            assert!(!daemon_cpus.is_empty(), "daemon pinned: {emu}");
            assert!(!workload_cpus.is_empty(), "workload pinned: {emu}");
            assert!(
                daemon_cpus.is_disjoint(&workload_cpus),
                "the daemon and the workload share no CPU: {emu}"
            );
            for c in daemon_cpus.iter().chain(&workload_cpus) {
                assert!(
                    allowed.contains(&(*c as usize)),
                    "CPU {c} is allowed: {emu}"
                );
            }
            // Its own CPU and its images in memory (the default image_dir): the daemon
            // polls, unless a daemon of another test already polls on that CPU.
            assert_polls_unless_another_does(&emu["read_mode"], &emu.to_string());
        } else {
            assert!(
                daemon_cpus.is_empty() && workload_cpus.is_empty(),
                "one CPU: nothing to pin: {emu}"
            );
        }

        // The write log of this trial, and what it holds.
        let n = r["trial"].as_u64().unwrap();
        let wlog = results.join("write-logs").join(format!("trial-{n}.wlog"));
        assert!(wlog.is_file(), "{} written", wlog.display());
        assert_eq!(emu["write_log"], wlog.display().to_string(), "{emu}");
        let log_records = emu["log_records"].as_u64().unwrap();
        assert!(log_records > 0, "{emu}");
        let out = run_ok(jbench().args(["device", "log", "--json"]).arg(&wlog));
        let log: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(log["header"]["version"], 2, "{}", log["header"]);
        let header_disks: Vec<&str> = log["header"]["disks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(header_disks, want_disks, "{}", log["header"]);
        let summary = &log["summary"];
        assert!(
            summary["records"].as_u64().unwrap() >= log_records,
            "the log holds at least what the daemon counted during the workload: {summary}"
        );
        assert!(summary["writes"].as_u64().unwrap() > 0, "{summary}");
        assert!(summary["flushes"].as_u64().unwrap() > 0, "{summary}");
        let markers: Vec<(u64, String)> = summary["markers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m[0].as_u64().unwrap(), m[1].as_str().unwrap().to_string()))
            .collect();
        let timing_on: Vec<u64> = markers
            .iter()
            .filter(|(_, l)| l == "timing on")
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(timing_on.len(), 1, "{markers:?}");
        let fsyncs: Vec<&(u64, String)> = markers
            .iter()
            .filter(|(_, l)| l.starts_with("fsync "))
            .collect();
        assert_eq!(
            fsyncs.len(),
            FILES,
            "one marker per fsync'ed file: {markers:?}"
        );
        assert!(
            fsyncs.iter().all(|(s, _)| *s > timing_on[0]),
            "the workload runs after timing is on: {markers:?}"
        );
        let files: BTreeSet<String> = fsyncs
            .iter()
            .map(|(_, l)| l.rsplit('/').next().unwrap().to_string())
            .collect();
        let want: BTreeSet<String> = (0..FILES).map(|i| format!("f{i}")).collect();
        assert_eq!(files, want, "every file's fsync is marked once");
        assert!(
            markers.iter().all(|(_, l)| l.starts_with("fsync ")
                || l.starts_with("timing ")
                || l.starts_with("phase ")
                || l.starts_with("end ")),
            "{markers:?}"
        );
        // Each phase's start is marked, after timing is on and in the engine's order.
        let phases: Vec<&str> = markers
            .iter()
            .filter_map(|(_, l)| l.strip_prefix("phase "))
            .collect();
        assert_eq!(phases, ["create_fsync", "remove"], "{markers:?}");
    }
    let logs = std::fs::read_dir(results.join("write-logs"))
        .unwrap()
        .count();
    assert_eq!(logs, 2, "one write log per trial");
    assert_no_leaks(tmp.path());
}

/// Column `name` of the `summary.csv` rows of configuration `config`.
fn csv_column(results: &Path, config: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(results.join("summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (at, label) = (
        header.iter().position(|h| *h == name).unwrap(),
        header.iter().position(|h| *h == "config").unwrap(),
    );
    // These rows have no quoted field: labels and phases hold no comma here.
    lines
        .map(|l| l.split(',').collect::<Vec<&str>>())
        .filter(|row| row[label] == config)
        .map(|row| row[at].to_string())
        .collect()
}

#[test]
fn a_trial_whose_daemon_stalls_is_failed_and_named_in_every_report() {
    require!(root, fuse);
    let tmp = scratch("emucli-stall-");
    let spec = write_spec(
        tmp.path(),
        "stall",
        &emu_spec(tmp.path(), r#""internal""#, 30, "")
            .replace("repetitions = 1", "repetitions = 2"),
    );
    let results = tmp.path().join("results");
    // Trial 0's daemon holds its first request after timing is on for 2 s before the
    // image write: below the 30 s watchdog, far past the 1 s bound.
    let out = jbench()
        .env(jbench::rig::emulated::INJECT_STALL_VAR, "0:io:2000")
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "a failed trial: {stdout}\n{stderr}"
    );
    assert!(stderr.contains("1 trial(s) failed"), "{stderr}");
    assert_no_leaks(tmp.path());

    let recs = records(&results);
    assert_eq!(recs.len(), 2);
    let of = |n: u64| recs.iter().find(|r| r["trial"] == n).unwrap();
    // The stalled trial: failed, the reason in its record, its counters kept.
    let stalled = of(0);
    assert_eq!(stalled["status"], "failed", "{stalled}");
    let error = stalled["error"].as_str().unwrap();
    assert!(error.starts_with("stalled: "), "{error}");
    assert!(
        error.contains("emulated fs disk (hdd-7200)")
            && error.contains("1 image I/O call(s) that blocked the daemon for more than 1 s"),
        "{error}"
    );
    // Its phase times are kept, as evidence, and never averaged.
    assert_eq!(stalled["phases"][0]["name"], "create_fsync", "{stalled}");
    let fs = &stalled["emulation"]["disks"][0];
    assert_eq!(fs["slow_io"], 1, "{fs}");
    assert!(f64_of(fs, "worst_io_ms") >= 2000.0, "{fs}");
    // The daemon's other FUSE threads serve on while one is held, and the held
    // request queues in the model behind what they served, so how late its own answer
    // is depends on the stream (CI saw 59 ms once, more than 100 ms most runs): the
    // blocked image I/O alone names the stall, and no bound on lateness is asserted.
    assert!(fs["late"].as_u64().is_some(), "{fs}");
    // Its sibling, without the injection: an ordinary measurement.
    let sibling = of(1);
    assert_eq!(sibling["status"], "ok", "{sibling}");
    let fs = &sibling["emulation"]["disks"][0];
    assert_eq!(
        (fs["overdue"].as_u64(), fs["slow_io"].as_u64()),
        (Some(0), Some(0)),
        "{fs}"
    );

    // The text report printed by the run: the warning and the Trust line.
    assert!(
        stdout.contains("fsync/internal: STALLED trial 0 (rep 1), excluded from the statistics: the device daemon stalled"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 trial(s) excluded because the device daemon stalled"),
        "{stdout}"
    );
    // summary.csv, the JSON report and the HTML page.
    assert!(
        csv_column(&results, "internal", "stalled")
            .iter()
            .all(|c| c == "1"),
        "{:?}",
        csv_column(&results, "internal", "stalled")
    );
    let out = run_ok(
        jbench()
            .arg("report")
            .arg(&results)
            .args(["--format", "json"]),
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["workloads"][0]["configs"][0]["stalled"], 1, "{json}");
    assert_eq!(json["workloads"][0]["configs"][0]["ok"], 1, "{json}");
    let html = std::fs::read_to_string(results.join("report.html")).unwrap();
    assert!(
        html.contains("stalled (failed)"),
        "the trial's line says so"
    );
    assert!(
        html.contains("STALLED trial 0 (rep 1)"),
        "the warning is listed"
    );
}

/// Starts a run whose single trial fsyncs far more files than a test waits for, on
/// two emulated `hdd-7200` disks, and waits until the device daemon serves and the
/// file system is mounted. jbench's stderr goes to `<tmp>/jbench.err`.
fn start_long_emulated_run(tmp: &Path) -> (Child, PathBuf) {
    let spec = write_spec(tmp, "long", &emu_spec(tmp, r#""second-disk""#, 5000, ""));
    let results = tmp.join("results");
    let err = std::fs::File::create(tmp.join("jbench.err")).unwrap();
    let mut child = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mounted = || {
        mounts_under(tmp)
            .iter()
            .any(|m| m.split_whitespace().nth(2) == Some("ext4"))
    };
    while daemons_under(tmp).is_empty() || !mounted() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "jbench exited ({status}) before the trial ran: {}",
                std::fs::read_to_string(tmp.join("jbench.err")).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "the run never mounted a file system on an emulated disk"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Wait for the workload to be under way: its directory exists on the mount.
    let workload_started = || {
        sessions_in(tmp).iter().any(|s| {
            std::fs::read_dir(tmp.join(s).join("mnt")).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("jbench-fsync."))
            })
        })
    };
    while !workload_started() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "jbench exited before the workload started: {}",
            std::fs::read_to_string(tmp.join("jbench.err")).unwrap_or_default()
        );
        assert!(Instant::now() < deadline, "the workload never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    (child, results)
}

/// Waits for `child` at most `secs` seconds (killing it and failing after that).
fn wait_at_most(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("jbench did not exit within {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_mid_emulated_trial_stops_the_daemon_and_releases_everything() {
    require!(root, fuse);
    let tmp = scratch("emucli-sigint-");
    let (mut child, results) = start_long_emulated_run(tmp.path());
    assert!(
        mounts_under(tmp.path())
            .iter()
            .any(|m| m.starts_with("jbench-emu ")),
        "the daemon's FUSE file system is mounted: {:?}",
        mounts_under(tmp.path())
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let status = wait_at_most(&mut child, 60);
    let stderr = std::fs::read_to_string(tmp.path().join("jbench.err")).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "tells how to finish: {stderr}");
    assert_no_leaks(tmp.path());
    assert!(
        sessions_in(tmp.path()).is_empty(),
        "session directory removed: {:?}",
        sessions_in(tmp.path())
    );
    assert!(
        records(&results).is_empty(),
        "the interrupted trial is not recorded as a result"
    );
}

#[test]
fn cleanup_after_sigkill_mid_emulated_trial_stops_the_daemon_and_unmounts_fuse() {
    require!(root, fuse);
    let tmp = scratch("emucli-sigkill-");
    let (mut child, _) = start_long_emulated_run(tmp.path());
    let sessions = sessions_in(tmp.path());
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session = tmp.path().join(&sessions[0]);
    child.kill().unwrap(); // SIGKILL: jbench releases nothing
    child.wait().unwrap();
    // The daemon gets SIGTERM when jbench dies and may be exiting by now; either way
    // the file system, its loop devices and the FUSE mount are left behind.
    assert!(
        loops_under(tmp.path()).len() >= 2,
        "a killed run leaves its loop devices: {:?}",
        loops_under(tmp.path())
    );
    assert!(!mounts_under(tmp.path()).is_empty());

    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fuse_mount = session.join("emu");
    assert!(
        stdout.contains(&format!("unmount {}", session.join("mnt").display())),
        "{stdout}"
    );
    assert!(stdout.contains("detach"), "{stdout}");
    assert!(
        stdout.contains("stop device daemon")
            || stdout.contains(&format!("unmount {}", fuse_mount.display())),
        "cleanup stops the daemon or unmounts its FUSE file system: {stdout}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("cleanup:"),
        "no cleanup errors: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_leaks(tmp.path());
    assert!(
        sessions_in(tmp.path()).is_empty(),
        "session directory removed: {:?}",
        sessions_in(tmp.path())
    );
    // A second cleanup finds nothing of this run.
    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(&*tmp.path().to_string_lossy()),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn calibrate_measures_every_pattern_and_leaves_nothing_behind() {
    require!(root, fuse);
    let tmp = scratch("emucli-calibrate-");
    let specs = scratch("emucli-calibrate-spec-");
    // A model of the experiment file's [models] table, calibrated by name.
    let spec = write_spec(
        specs.path(),
        "models",
        &emu_spec(tmp.path(), r#""second-disk""#, 20, "").replace(
            "[filesystem]",
            "[models.slow-ram]\nmodel = \"nvram\"\nwrite_latency_us = 500.0\n\n[filesystem]",
        ),
    );
    let out = jbench()
        .args(["device", "calibrate", "slow-ram", "--spec"])
        .arg(&spec)
        .args([
            "--set",
            "read_latency_us=400.0",
            "--size",
            "256M",
            "--seconds",
            "0.5",
            "--json",
            "--work-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    // 0: every pattern within 10%; 4: measured, but some pattern outside (this
    // machine's path may be slower than the model, or busy). Never an error.
    let status = out.status.code();
    assert!(
        matches!(status, Some(0 | 4)),
        "status {status:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(c["model"], "slow-ram");
    assert_eq!(c["base_model"], "nvram");
    assert_eq!(c["params"]["write_latency_us"], 500.0, "{c}");
    assert_eq!(c["params"]["read_latency_us"], 400.0, "--set on top: {c}");
    assert_eq!(c["size"], 256u64 << 20);
    assert!(f64_of(&c, "floor_us") > 0.0, "{c}");
    assert!(f64_of(&c["path"], "transport_4k_us") > 0.0, "{c}");
    let within = c["within_tolerance"].as_bool().unwrap();
    assert_eq!(within, status == Some(0), "{c}");
    let verdict = c["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("verdict: slow-ram "), "{verdict}");
    // A name the file does not define is refused with its entries.
    let out = jbench()
        .args(["device", "calibrate", "atlas-v", "--spec"])
        .arg(&spec)
        .args(["--work-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no [models.atlas-v] entry") && err.contains("slow-ram"),
        "{err}"
    );
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "{c}");
    let patterns: BTreeSet<&str> = rows
        .iter()
        .map(|r| r["pattern"].as_str().unwrap())
        .collect();
    assert_eq!(patterns.len(), 5, "five different patterns: {patterns:?}");
    for r in rows {
        assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
        assert!(f64_of(r, "measured_iops") > 0.0, "{r}");
    }
    assert_no_leaks(tmp.path());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(
        left.is_empty(),
        "nothing left in the work directory: {left:?}"
    );
}

#[test]
fn floor_times_every_part_and_leaves_nothing_behind() {
    require!(root, fuse);
    let work = scratch("emucli-floor-");
    let plain = scratch("emucli-floor-plain-");
    let images = tempfile::tempdir_in("/dev/shm").unwrap();
    let out = run_ok(
        jbench()
            .args([
                "device",
                "floor",
                "--requests",
                "100",
                "--json",
                "--work-dir",
            ])
            .arg(work.path())
            .arg("--tmpfs-dir")
            .arg(plain.path())
            .arg("--image-dir")
            .arg(images.path()),
    );
    let f: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let parts = f["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 5, "{f}");
    for p in parts {
        for kind in ["read", "write"] {
            let lat = &p[kind];
            assert!(f64_of(lat, "median_us") > 0.0, "{p}");
            assert!(f64_of(lat, "p10_us") <= f64_of(lat, "median_us"), "{p}");
            assert!(f64_of(lat, "median_us") <= f64_of(lat, "p90_us"), "{p}");
        }
    }
    // The daemon counted its image I/O for both kinds on both FUSE parts.
    for part in f["daemon_io_us"].as_array().unwrap() {
        for v in part.as_array().unwrap() {
            assert!(v.as_f64().unwrap() > 0.0, "{f}");
        }
    }
    // How a trial is served here: the transport, and the CPUs of every CPU jbench may
    // use (not of the pinned measuring thread's).
    let setup = &f["setup"];
    assert_eq!(setup["transport"], "classic", "{setup}");
    assert!(setup["fuse_threads"].as_u64().unwrap() > 0, "{setup}");
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        let cpus = |k: &str| setup[k].as_array().map_or(0, |a| a.len());
        assert!(
            cpus("daemon_cpus") >= 1 && cpus("workload_cpus") >= 1,
            "{setup}"
        );
        // Split, its image in memory: the floor's daemon polled (or another test's
        // daemon held that CPU's polling lock), and says which.
        assert_polls_unless_another_does(&setup["read_mode"], &setup.to_string());
    }
    assert_no_leaks(work.path());
    for dir in [work.path(), plain.path(), images.path()] {
        let left: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        assert!(
            left.is_empty(),
            "nothing left in {}: {left:?}",
            dir.display()
        );
    }
}

/// `jbench plan` on `body`, expected to fail; returns its stderr.
fn plan_fails(dir: &Path, name: &str, body: &str) -> String {
    let spec = write_spec(dir, name, body);
    let out: Output = jbench().arg("plan").arg(&spec).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{name} refused: {stderr}");
    stderr
}

/// The 1-based line of the first line of `body` starting with `prefix`.
fn line_of(body: &str, prefix: &str) -> usize {
    body.lines().position(|l| l.starts_with(prefix)).unwrap() + 1
}

#[test]
fn device_model_refusals_and_labels_through_the_cli() {
    let tmp = scratch("emucli-spec-");
    let base = emu_spec(tmp.path(), r#""second-disk""#, 20, "")
        .replace("device_model = \"hdd-7200\"\n", "");
    assert!(!base.contains("device_model"));

    // A zram journal is timed by itself.
    let body = base.replace(
        "placement = \"second-disk\"",
        "placement = \"zram\"\ndevice_model = \"ram\"",
    );
    let err = plan_fails(tmp.path(), "zram", &body);
    let line = line_of(&body, "device_model");
    assert!(
        err.contains(&format!("zram.toml:{line}: journal.device_model")),
        "{err}"
    );
    assert!(err.contains("zram"), "{err}");
    assert!(
        err.contains("ramdisk"),
        "says how to emulate a RAM disk: {err}"
    );
    // `run` refuses it the same way before touching anything.
    let out = jbench()
        .arg("run")
        .arg(tmp.path().join("zram.toml"))
        .arg("--results")
        .arg(tmp.path().join("results"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("journal.device_model"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.path().join("results").exists(), "nothing was started");

    // An unknown model is named, with the models there are.
    for key in ["filesystem", "journal"] {
        let body = match key {
            "filesystem" => base.replace(
                "size = \"128M\"",
                "size = \"128M\"\ndevice_model = \"floppy-9000\"",
            ),
            _ => base.replace(
                "placement = \"second-disk\"",
                "placement = \"second-disk\"\ndevice_model = \"floppy-9000\"",
            ),
        };
        let err = plan_fails(tmp.path(), key, &body);
        let line = line_of(&body, "device_model");
        assert!(
            err.contains(&format!("{key}.toml:{line}: {key}.device_model")),
            "{err}"
        );
        assert!(err.contains("floppy-9000"), "{err}");
        for known in ["hdd-7200", "ssd-sata", "nvme", "nvram", "ram"] {
            assert!(err.contains(known), "lists {known}: {err}");
        }
    }
    // ... including the experiment's own `[models]` entries.
    let body = format!(
        "{}\n[models.slow-journal]\nmodel = \"hdd-7200\"\nwrite_cache = false\n",
        base.replace(
            "placement = \"second-disk\"",
            "placement = \"second-disk\"\ndevice_model = \"fast-journal\"",
        )
    );
    let err = plan_fails(tmp.path(), "models", &body);
    assert!(
        err.contains("fast-journal") && err.contains("slow-journal"),
        "{err}"
    );

    // Configurations that differ only in their models are labelled by them.
    let body = base.replace(
        "placement = \"second-disk\"",
        "placement = \"second-disk\"\ndevice_model = [\"hdd-7200\", \"ram\"]",
    );
    let spec = write_spec(tmp.path(), "labels", &body);
    let out = run_ok(jbench().arg("plan").arg(&spec));
    let plan = String::from_utf8_lossy(&out.stdout);
    let labels: Vec<&str> = plan
        .lines()
        .filter(|l| l.contains("ext4 128M"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(labels, ["journal=hdd-7200", "journal=ram"], "{plan}");
    assert!(plan.contains("(an emulated ram disk)"), "{plan}");
    assert_no_leaks(tmp.path());
}
