//! End-to-end runs of the `jbench` binary on tiny experiments: results, reports,
//! resume, failing trials, Ctrl-C and SIGKILL followed by `jbench cleanup`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

#[test]
fn tiny_run_records_verified_trials_and_reports_them() {
    require!(root, zram);
    let _serial = zram_lock();
    let tmp = scratch("run-");
    let spec = write_spec(
        tmp.path(),
        "tiny",
        &tiny_spec(
            tmp.path(),
            r#"["internal", "same-disk", "second-disk", "ramdisk", "zram"]"#,
            2,
            "",
        ),
    );
    let results = tmp.path().join("results");
    let out = run_ok(
        jbench()
            .arg("run")
            .arg(&spec)
            .arg("--results")
            .arg(&results),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Times (s)"), "{stdout}");
    assert_no_leaks(tmp.path());

    for f in [
        "spec.toml",
        "spec.original.toml",
        "env.json",
        "trials.jsonl",
        "summary.csv",
    ] {
        assert!(results.join(f).is_file(), "{f} written");
    }
    // The HTML report is written beside the results and its path printed.
    let page = results.join("report.html");
    assert!(
        stdout.contains(&format!("HTML report: {}", page.display())),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("data-kind=\"bar\"").count(),
        4,
        "one bar chart per phase"
    );
    // The monitor's series gives a trial a timeline (write throughput and CPU) when it
    // has enough samples to draw a line; a shorter trial says why it has none.
    let samples = |trial: usize| {
        std::fs::read_to_string(results.join(format!("monitor/trial-{trial}.jsonl")))
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0)
    };
    let drawn = (0..10)
        .filter(|t| samples(*t) >= jbench::report::html::MIN_TIMELINE_SAMPLES)
        .count();
    assert_eq!(html.matches("data-kind=\"timeline-write\"").count(), drawn);
    assert_eq!(html.matches("data-kind=\"timeline-cpu\"").count(), drawn);
    let short = (0..10)
        .filter(|t| (1..jbench::report::html::MIN_TIMELINE_SAMPLES).contains(&samples(*t)))
        .count();
    assert_eq!(
        html.matches("sampling intervals (").count(),
        short,
        "a short trial says why it has no timeline"
    );
    assert_eq!(
        html.matches("<svg").count(),
        4 + 2 * drawn,
        "no chart without its figure"
    );
    for label in ["internal", "same-disk", "second-disk", "ramdisk", "zram"] {
        assert!(html.contains(label), "report.html lacks {label}");
    }
    for bad in ["http://", "https://", "src=", "<link", "@import", "url("] {
        assert!(!html.contains(bad), "report.html contains {bad}");
    }
    let recs = records(&results);
    assert_eq!(
        recs.len(),
        10,
        "5 configurations x 1 workload x 2 repetitions"
    );
    let mut indices: Vec<u64> = recs.iter().map(|r| r["trial"].as_u64().unwrap()).collect();
    indices.sort();
    assert_eq!(indices, (0..10).collect::<Vec<u64>>());
    for r in &recs {
        assert_eq!(r["schema_version"], 1);
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["config"]["journal_size"], 8 << 20);
        assert_eq!(r["config"]["mode"], "ordered");
        assert_eq!(r["workload"]["kind"], "fdtree");
        assert_eq!(r["workload"]["params"]["levels"], 3);
        let placement = r["config"]["placement"].as_str().unwrap();
        // The monitor: a summary per phase, the journal's own device beside the file
        // system's unless internal, jbd2 found either way, and the series on disk.
        let m = &r["monitor"];
        let mphases = m["phases"].as_array().expect("a monitor summary");
        assert_eq!(mphases.len(), 4, "{m}");
        for p in mphases {
            let roles: Vec<&str> = p["devices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["role"].as_str().unwrap())
                .collect();
            let want: &[&str] = if placement == "internal" {
                &["fs"]
            } else {
                &["fs", "journal"]
            };
            assert_eq!(roles, want, "{placement}: {p}");
            let jbd2 = p["jbd2"]["name"].as_str().expect("a jbd2 entry");
            if placement == "internal" {
                assert!(jbd2.contains('-'), "{jbd2}");
            }
        }
        let series = m["series_file"].as_str().unwrap();
        assert_eq!(series, format!("monitor/trial-{}.jsonl", r["trial"]));
        assert!(results.join(series).is_file(), "{series}");
        let v = &r["verified"];
        assert_eq!(v["mode"], "ordered");
        assert_eq!(v["journal_bytes"], 8 << 20);
        if placement == "internal" {
            assert_eq!(v["journal_device"], "internal");
        } else {
            assert!(
                v["journal_device"].as_str().unwrap().starts_with("/dev/"),
                "{v}"
            );
        }
        let phases: Vec<&str> = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            phases,
            ["dir_create", "file_create", "file_remove", "dir_remove"]
        );
        // fdtree -d 2 -l 3: 15 directories, 30 files of 4 KiB.
        assert_eq!(r["phases"][0]["ops"], 15);
        assert_eq!(r["phases"][1]["ops"], 30);
        assert_eq!(r["phases"][1]["bytes"], 30 * 4096);
    }
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("env.json")).unwrap()).unwrap();
    assert!(env["kernel"].as_str().unwrap().contains("Linux"));
    assert!(env["e2fsprogs"].as_str().unwrap().contains("mke2fs"));

    for (format, needle) in [
        ("markdown", "| configuration"),
        ("csv", "workload,config,phase"),
        ("json", "\"workloads\""),
    ] {
        let out = run_ok(jbench().args(["report", "--format", format]).arg(&results));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(needle), "{format}: {text}");
        assert!(text.contains("zram"), "{format} lists every configuration");
    }
    let out = jbench()
        .args(["report", "--baseline", "nvram"])
        .arg(&results)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no configuration `nvram`"));
    let out = run_ok(
        jbench()
            .args(["report", "--format", "csv", "--baseline", "zram"])
            .arg(&results),
    );
    let csv_zram = String::from_utf8_lossy(&out.stdout);
    // Columns are appended over time: find the verdict by its header, not its place.
    let verdict = csv_zram
        .lines()
        .next()
        .and_then(|h| h.split(',').position(|c| c == "verdict"))
        .expect("a verdict column");
    assert!(
        csv_zram
            .lines()
            .any(|l| l.starts_with("tiny,zram,") && l.split(',').nth(verdict) == Some("baseline")),
        "{csv_zram}"
    );
    let csv = std::fs::read_to_string(results.join("summary.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 5 * 4,
        "header + 5 configurations x 4 phases"
    );
}

/// `jbench run` of the tiny fdtree spec with a second-disk journal, two repetitions.
fn run_second_disk_tiny(dir: &Path, name: &str, extra: &str) -> (Output, PathBuf) {
    let spec = write_spec(dir, name, &tiny_spec(dir, r#"["second-disk"]"#, 2, extra));
    let results = dir.join("results");
    let out = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    (out, results)
}

#[test]
fn a_failing_workload_is_recorded_and_the_run_goes_on() {
    require!(root);
    let tmp = scratch("fail-");
    // A read-only mount lets provisioning and verification pass; fdtree's first mkdir fails.
    let (out, results) =
        run_second_disk_tiny(tmp.path(), "fail", r#"mount_options = [["ro"], []]"#);
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit 2 when trials failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_leaks(tmp.path());
    let recs = records(&results);
    assert_eq!(recs.len(), 4);
    let failed: Vec<&Value> = recs.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 2);
    for r in &failed {
        assert_eq!(r["config"]["mount_options"][0], "ro");
        assert!(
            r["error"].as_str().unwrap().contains("Read-only"),
            "{}",
            r["error"]
        );
    }
    assert_eq!(recs.iter().filter(|r| r["status"] == "ok").count(), 2);
}

#[test]
fn a_run_whose_every_trial_failed_exits_3_and_says_so() {
    require!(root);
    let tmp = scratch("allfail-");
    // Every configuration mounts read-only: provisioning passes, every workload fails.
    let (out, results) = run_second_disk_tiny(tmp.path(), "allfail", r#"mount_options = ["ro"]"#);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "exit 3 when nothing was measured: {stderr}"
    );
    assert!(stderr.contains("every trial failed (2 of 2)"), "{stderr}");
    assert_no_leaks(tmp.path());
    assert!(records(&results).iter().all(|r| r["status"] == "failed"));
}

#[test]
fn resume_runs_only_missing_trials_and_keeps_the_rest() {
    require!(root);
    let tmp = scratch("resume-");
    let spec = write_spec(
        tmp.path(),
        "r",
        &tiny_spec(tmp.path(), r#"["internal", "ramdisk"]"#, 3, ""),
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
    let path = results.join("trials.jsonl");
    let full = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 6);
    // Keep the first four trials and a torn fifth line, as a crash mid-write would leave.
    let kept = format!("{}\n{}", lines[..4].join("\n"), &lines[4][..20]);
    std::fs::write(&path, &kept).unwrap();
    let kept_indices: Vec<u64> = lines[..4]
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["trial"]
                .as_u64()
                .unwrap()
        })
        .collect();

    let out = run_ok(jbench().arg("run").arg(&spec).arg("--resume").arg(&results));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("resuming: 4 of 6"), "{stderr}");
    assert!(
        stderr.contains("torn last line"),
        "the torn record is reported: {stderr}"
    );
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(
        after.starts_with(&format!("{}\n", lines[..4].join("\n"))),
        "earlier records untouched"
    );
    let recs = records(&results);
    assert_eq!(recs.len(), 6);
    let mut all: Vec<u64> = recs.iter().map(|r| r["trial"].as_u64().unwrap()).collect();
    all.sort();
    assert_eq!(
        all,
        (0..6).collect::<Vec<_>>(),
        "no trial repeated, none missing"
    );
    assert!(kept_indices.iter().all(|i| all.contains(i)));

    // A changed experiment is refused.
    let other = write_spec(
        tmp.path(),
        "r2",
        &tiny_spec(tmp.path(), r#"["internal", "ramdisk"]"#, 4, ""),
    );
    let out = jbench()
        .arg("run")
        .arg(&other)
        .arg("--resume")
        .arg(&results)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("differs"));
    assert_no_leaks(tmp.path());
}

/// Starts a run big enough to be interrupted, and waits until a trial is under way.
fn start_long_run(tmp: &Path) -> (std::process::Child, std::path::PathBuf) {
    let body =
        tiny_spec(tmp, r#"["same-disk", "zram"]"#, 50, "").replace("levels = 3", "levels = 9");
    let spec = write_spec(
        tmp,
        "long",
        &body.replace("size = \"128M\"", "size = \"1G\""),
    );
    let results = tmp.join("results");
    let child = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Wait for a zram trial to be mounted, so the interruption finds a zram device,
    // loop devices (the file-system image) and a mount to release.
    while mounts_under(tmp).is_empty() || zram_ledgers_under(tmp).is_empty() {
        assert!(Instant::now() < deadline, "the run never mounted anything");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, results)
}

#[test]
fn ctrl_c_mid_run_releases_everything_and_records_only_finished_trials() {
    require!(root, zram);
    let _serial = zram_lock();
    let tmp = scratch("sigint-");
    let zram_before = zram_devices();
    let (child, results) = start_long_run(tmp.path());
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "tells how to finish: {stderr}");
    assert_no_leaks(tmp.path());
    assert_eq!(zram_devices(), zram_before, "the zram device is removed");
    let recs = records(&results);
    assert!(recs.len() < 100);
    assert!(
        recs.iter().all(|r| r["status"] == "ok"),
        "the interrupted trial is not recorded as a result"
    );
}

/// `n` SIGINTs to `child` back to back, as `timeout -s INT` and a terminal's process
/// group (or an impatient second Ctrl-C) deliver them.
fn interrupt_times(child: &std::process::Child, n: usize) {
    for _ in 0..n {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::SIGINT,
        )
        .unwrap();
    }
}

#[test]
fn two_ctrl_c_at_once_still_release_everything() {
    require!(root, zram);
    let _serial = zram_lock();
    let tmp = scratch("sigint2-");
    let zram_before = zram_devices();
    let (child, _) = start_long_run(tmp.path());
    std::thread::sleep(Duration::from_millis(300));
    interrupt_times(&child, 2);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // (Sent at once, the kernel may merge the two into one: the acknowledgement of a
    // second is checked by the next test, whose signals are apart.)
    assert!(stderr.contains("--resume"), "tells how to finish: {stderr}");
    assert_no_leaks(tmp.path());
    assert_eq!(zram_devices(), zram_before, "the zram device is removed");
}

#[test]
fn a_third_ctrl_c_exits_at_once_and_names_what_is_left() {
    require!(root, zram);
    let _serial = zram_lock();
    let tmp = scratch("sigint3-");
    let zram_before = zram_devices();
    let (child, _) = start_long_run(tmp.path());
    // What a forced exit would name: this live run's mounts and loop devices, read
    // while a trial holds them (between trials nothing is mounted).
    let ours = tmp.path().to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let held = jbench::run::cleanup::held_by_live_sessions();
        if held
            .iter()
            .any(|h| h.starts_with("mount ") && h.contains(&ours))
        {
            break held;
        }
        assert!(
            Instant::now() < deadline,
            "never saw the run's mounts: {held:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        held.iter().any(|h| h.starts_with("loop device ")),
        "{held:?}"
    );
    // Three signals a little apart (the kernel merges a signal sent while the same one
    // is pending): the third usually lands while the cleanup is still running.
    for _ in 0..3 {
        interrupt_times(&child, 1);
        std::thread::sleep(Duration::from_millis(15));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    // On a busy machine the first signal's cleanup can finish before the second
    // arrives; then there is no second to acknowledge, and the run said so.
    assert!(
        stderr.contains("releasing mounts and devices first")
            || stderr.contains("interrupted; everything was released"),
        "the second signal is acknowledged, or the cleanup ended before it: {stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    eprintln!("the run's last line: {last}");
    // Either the cleanup won the race and said how to resume, or the third signal
    // forced the exit and the last line says what is left and how to release it.
    assert!(
        last.contains("--resume")
            || (last.contains("exiting at once")
                && (last.contains("Release them with: jbench cleanup")
                    || last.contains("nothing of this run"))),
        "{stderr}"
    );
    // Whatever the forced exit left, cleanup releases.
    run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    assert_no_leaks(tmp.path());
    assert_eq!(zram_devices(), zram_before, "the zram device is removed");
}

#[test]
fn cleanup_releases_what_a_killed_run_left_and_nothing_else() {
    require!(root, zram);
    let _serial = zram_lock();
    let tmp = scratch("sigkill-");
    let foreign = FakeDisk::new(tmp.path(), "foreign.img", 64);
    let zram_before = zram_devices();
    let (mut child, _) = start_long_run(tmp.path());
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert!(
        loops_under(tmp.path()).len() > 1,
        "a killed run leaves devices behind (besides the test's own disk)"
    );
    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("detach"), "{stdout}");
    let left = loops_under(tmp.path());
    assert_eq!(
        left.len(),
        1,
        "only the foreign loop device remains: {left:?}"
    );
    assert!(left[0].starts_with(&format!("{}:", foreign.dev)));
    assert!(mounts_under(tmp.path()).is_empty());
    assert!(zram_ledgers_under(tmp.path()).is_empty());
    assert_eq!(
        zram_devices(),
        zram_before,
        "a zram device the killed run added is removed"
    );
    let sessions: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("jbench-"))
        .collect();
    assert!(sessions.is_empty(), "session directory removed");
    // A second cleanup finds nothing of this run.
    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&*tmp.path().to_string_lossy()));
}

#[test]
fn cleanup_leaves_a_running_jbench_alone() {
    require!(root, zram);
    let _serial = zram_lock();
    let tmp = scratch("live-");
    let (child, _) = start_long_run(tmp.path());
    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("left alone"), "{stdout}");
    assert!(!stdout.contains("detach"), "{stdout}");
    let after = loops_under(tmp.path());
    assert!(
        !after.is_empty(),
        "the live run's devices are still attached"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_no_leaks(tmp.path());
}

#[test]
fn problems_found_before_provisioning_stop_the_run_at_once() {
    require!(root);
    let tmp = scratch("preflight-");
    let missing = tmp.path().join("no-such-dir");
    let body = tiny_spec(tmp.path(), r#""second-disk""#, 1, "").replace(
        "mode = \"ordered\"",
        &format!(
            "mode = \"ordered\"\nsecond_disk_dir = \"{}\"",
            missing.display()
        ),
    );
    let spec = write_spec(tmp.path(), "pf", &body);
    let out = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(tmp.path().join("results"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("second_disk_dir") && err.contains("no-such-dir"),
        "{err}"
    );
    assert!(!tmp.path().join("results").exists(), "nothing was started");
    assert!(loops_under(tmp.path()).is_empty());
}

#[test]
fn plan_prints_the_trials_without_running_anything() {
    let tmp = scratch("plan-");
    let spec = write_spec(
        tmp.path(),
        "p",
        &tiny_spec(tmp.path(), r#"["internal", "same-disk"]"#, 2, ""),
    );
    let out = run_ok(jbench().arg("plan").arg(&spec));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 configurations x 1 workload x 2 repetitions = 4 trials"),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.contains(" rep ")).count(), 4);
    assert!(loops_under(tmp.path()).is_empty());
}

#[test]
fn spec_errors_name_the_key_and_line() {
    let tmp = scratch("specerr-");
    let body = tiny_spec(tmp.path(), r#"["internal", "floppy"]"#, 1, "");
    let spec = write_spec(tmp.path(), "bad", &body);
    let out = jbench().arg("plan").arg(&spec).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let line = body
        .lines()
        .position(|l| l.starts_with("placement"))
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!("bad.toml:{line}: journal.placement")),
        "{err}"
    );
    assert!(err.contains("floppy"), "{err}");
}

#[test]
fn workload_subcommand_runs_fdtree_in_a_directory() {
    let tmp = scratch("wl-");
    let out = run_ok(
        jbench()
            .args(["workload", "fdtree", "--dir"])
            .arg(tmp.path())
            .args(["-d", "2", "-f", "3", "-s", "1", "-l", "2", "--json"]),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["phases"][0]["ops"], 7);
    assert_eq!(v["phases"][1]["ops"], 21);
    let out = run_ok(
        jbench()
            .args(["workload", "fdtree", "--dir"])
            .arg(tmp.path())
            .args(["-d", "2", "-f", "3", "-s", "1", "-l", "2"]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("DIRECTORY CREATE TIME IN, OUT, TOTAL"),
        "{text}"
    );
    assert!(text.contains("File removals per second"), "{text}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "the tree is removed"
    );
}

#[test]
fn non_root_is_told_to_use_sudo() {
    if is_root() {
        // Drop privileges for the child only.
        let tmp = scratch("nonroot-");
        let spec = write_spec(
            tmp.path(),
            "n",
            &tiny_spec(tmp.path(), r#""internal""#, 1, ""),
        );
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        std::fs::set_permissions(&spec, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_jbench"))
            .arg("run")
            .arg(&spec)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("needs root"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    } else {
        let out = jbench().args(["cleanup"]).output().unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains("needs root"));
    }
}

/// Runs an experiment written into `dir`, checks nothing leaked, and returns the
/// results directory and its trial records.
fn run_quietly(dir: &Path, name: &str, body: &str) -> (std::path::PathBuf, Vec<Value>) {
    let spec = write_spec(dir, name, body);
    let results = dir.join("results");
    run_ok(
        jbench()
            .arg("run")
            .arg(&spec)
            .arg("--results")
            .arg(&results)
            .arg("-q"),
    );
    assert_no_leaks(dir);
    let recs = records(&results);
    (results, recs)
}

#[test]
fn every_engine_runs_end_to_end_with_memory_limits_and_durable_timing() {
    require!(root, memcg, xfs);
    let tmp = scratch("engines-");
    let body = format!(
        r#"name = "engines"
repetitions = 1
work_dir = "{}"
memory_limit = "64M"

[filesystem]
size = "512M"

[journal]
size = "64M"

[[config]]
label = "ext4-ordered"

[[config]]
label = "ext3-journal"
filesystem.type = "ext3"
journal.mode = "journal"

[[config]]
label = "xfs"
filesystem.type = "xfs"

[[workload]]
kind = "iozone"
name = "bigger-than-memory"
record = "1M"
size = "160M"
tests = ["write", "read"]
durable = true

[[workload]]
kind = "fsync"
name = "fsync"
files = 50
size = 4096

[[workload]]
kind = "postmark"
name = "postmark"
size = [500, 5000]
number = 100
transactions = 200
"#,
        tmp.path().display()
    );
    let (results, recs) = run_quietly(tmp.path(), "engines", &body);
    assert_eq!(recs.len(), 9);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let mem = &r["memory"];
        assert_eq!(mem["limit_bytes"], 64 << 20, "{r}");
        let peak = mem["peak_bytes"].as_u64().unwrap();
        assert!(peak > 0 && peak <= 64 << 20, "peak {peak} within the limit");
        let label = r["config"]["label"].as_str().unwrap();
        let want_mode = match label {
            "ext4-ordered" => "ordered",
            "ext3-journal" => "journal",
            _ => "metadata",
        };
        assert_eq!(r["verified"]["mode"], want_mode, "{r}");
        let phases = r["phases"].as_array().unwrap();
        match r["workload"]["kind"].as_str().unwrap() {
            "iozone" => {
                // 160 MiB written through a 64 MiB limit: only the limit keeps the
                // peak below the data size.
                assert_eq!(phases[0]["bytes"], 160 << 20);
                assert!(
                    phases[0]["durable_seconds"].as_f64().unwrap()
                        >= phases[0]["seconds"].as_f64().unwrap()
                );
            }
            "fsync" => {
                assert_eq!(phases[0]["ops"], 50);
                assert_eq!(phases[0]["latency"]["count"], 50);
            }
            "postmark" => {
                let c = &phases[1]["counters"];
                assert!(c["transactions"].as_u64().unwrap() == 200, "{c}");
            }
            other => panic!("unexpected workload {other}"),
        }
    }
    let out = run_ok(jbench().args(["report"]).arg(&results));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("bigger-than-memory") && text.contains("postmark"),
        "{text}"
    );
}

#[test]
fn every_file_system_type_and_data_mode_is_verified_end_to_end() {
    require!(root, xfs);
    let tmp = scratch("types-e2e-");
    let body = format!(
        r#"name = "types"
repetitions = 1
work_dir = "{}"

[filesystem]
size = "512M"

[journal]
size = "64M"
placement = "second-disk"

[[config]]
journal.mode = ["ordered", "journal", "writeback"]
filesystem.type = ["ext4", "ext3"]

[[config]]
label = "ext4-no-journal"
journal.placement = "none"

[[config]]
label = "xfs-external-log"
filesystem.type = "xfs"

[[workload]]
kind = "fdtree"
dirs = 2
files = 2
blocks = 1
levels = 2
durable = true
"#,
        tmp.path().display()
    );
    let (results, recs) = run_quietly(tmp.path(), "types", &body);
    assert_eq!(recs.len(), 8);
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let (fs, mode) = (
            r["config"]["filesystem"].as_str().unwrap(),
            r["config"]["mode"].as_str().unwrap(),
        );
        assert_eq!(r["verified"]["mode"], mode, "{r}");
        let jdev = r["verified"]["journal_device"].as_str().unwrap();
        match mode {
            "none" => assert_eq!(jdev, "none"),
            _ => assert!(jdev.starts_with("/dev/loop"), "{fs} {mode}: {jdev}"),
        }
        let checks = r["verified"]["checks"].to_string();
        assert!(
            checks.contains(&format!(" {fs} ")),
            "mounted as {fs}: {checks}"
        );
        for p in r["phases"].as_array().unwrap() {
            assert!(p["durable_seconds"].as_f64().unwrap() >= p["seconds"].as_f64().unwrap());
        }
    }
    let modes: std::collections::BTreeSet<String> = recs
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["config"]["filesystem"].as_str().unwrap(),
                r["config"]["mode"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(modes.len(), 8, "{modes:?}");
    let out = run_ok(jbench().args(["report", "--format", "csv"]).arg(&results));
    assert!(String::from_utf8_lossy(&out.stdout).contains("file_create+syncfs"));
}

#[test]
fn adaptive_repetitions_run_compare_and_replay_end_to_end() {
    require!(root);
    let tmp = scratch("adaptive-");
    // A target no real run meets: every pair goes to max, each extra trial announced.
    // The rule never chases a suspect main phase, and the tiny tree's phases last
    // milliseconds: with no threshold, none is suspect.
    let body = tiny_spec(tmp.path(), r#"["internal", "ramdisk"]"#, 2, "")
        .replace(
            "repetitions = 2",
            "repetitions = { min = 2, max = 3, target_cv = 0.00001 }",
        )
        .replace(r#"suspect_below = "60s""#, r#"suspect_below = "0s""#);
    let spec = write_spec(tmp.path(), "adaptive", &body);
    let plan = run_ok(jbench().arg("plan").arg(&spec));
    let plan = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.contains("adaptive repetitions: 2..3"), "{plan}");
    let results = tmp.path().join("results");
    let out = run_ok(
        jbench()
            .arg("run")
            .arg(&spec)
            .arg("--results")
            .arg(&results),
    );
    assert_no_leaks(tmp.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for label in ["internal", "ramdisk"] {
        let why = format!("tiny/{label}: ");
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(&why) && l.ends_with("trial 3 of at most 3")),
            "{stderr}"
        );
    }
    let recs = records(&results);
    let mut indices: Vec<u64> = recs.iter().map(|r| r["trial"].as_u64().unwrap()).collect();
    indices.sort();
    assert_eq!(
        indices,
        (0..6).collect::<Vec<u64>>(),
        "2 configurations x 3"
    );

    let page = tmp.path().join("compare.html");
    // The same run twice is refused; a copy of it is another run that agrees.
    let same = jbench()
        .arg("compare")
        .arg(&results)
        .arg(&results)
        .output()
        .unwrap();
    assert!(!same.status.success());
    let copy = tmp.path().join("copy").join("results");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&results)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(cp.success());
    let out = run_ok(
        jbench()
            .arg("compare")
            .arg(&results)
            .arg(&copy)
            .arg("--html")
            .arg(&page),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("results:internal"), "{text}");
    assert!(text.contains("results-2:ramdisk"), "{text}");
    assert!(
        text.contains("Verdicts (rate vs results:internal"),
        "{text}"
    );
    let html = std::fs::read_to_string(&page).expect("compare --html writes the page");
    assert!(html.contains("results-2:ramdisk") && html.contains("<svg"));
    assert!(!html.contains("http://") && !html.contains("https://"));

    let out = run_ok(
        jbench()
            .args(["selftest", "adaptive"])
            .arg(&results)
            .args(["--target-cv", "0.5"]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("min 2, target CV 50%"), "{text}");
    assert!(text.contains("internal"), "{text}");
}
