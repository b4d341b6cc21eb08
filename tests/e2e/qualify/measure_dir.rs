//! `jbench device qualify DIR`: measures in a scratch directory it removes, says what
//! the device is as a log device, and refuses what it must not measure in, clearly.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn qualify(dir: &Path, extra: &[&str]) -> Output {
    jbench()
        .args(["device", "qualify"])
        .arg(dir)
        .args(extra)
        .output()
        .unwrap()
}

/// Nothing of qualify's is left in `dir`.
fn assert_nothing_left(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".jbench-qualify-"))
        .collect();
    assert!(
        left.is_empty(),
        "left behind in {}: {left:?}",
        dir.display()
    );
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "qualify failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut at = v;
    for k in path {
        at = &at[*k];
    }
    at.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number in {v}"))
}

#[test]
fn a_disk_directory_is_measured_and_left_as_it_was() {
    let tmp = scratch("qualify-disk-");
    let q = json_of(&qualify(
        tmp.path(),
        &["--seconds", "3", "--size", "32M", "--json", "--fit", "mine"],
    ));
    assert_eq!(q["memory"], false, "{q}");
    assert_eq!(q["direct_io"], true, "{q}");
    assert_eq!(q["size"], 32u64 << 20);
    // The whole scratch file was written in 1 MiB requests.
    assert_eq!(q["sequential_write_1m"]["requests"], 32, "{q}");
    for p in ["sequential_read_1m", "random_read_4k", "random_write_4k"] {
        assert!(f(&q, &[p, "iops"]) > 0.0, "{p}: {q}");
        let l = &q[p]["latency"];
        assert!(
            f(l, &["p50_us"]) > 0.0 && f(l, &["p50_us"]) <= f(l, &["p99_us"]),
            "{p}: {q}"
        );
    }
    let wf = q["write_flush"].as_array().unwrap();
    let sizes: Vec<u64> = wf.iter().map(|w| w["bytes"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [4096, 16384, 65536, 262144, 1048576]);
    for w in wf {
        assert!(
            f(w, &["write_flush", "p50_us"]) >= f(w, &["write", "p50_us"]),
            "{w}"
        );
    }
    assert_eq!(q["append_bytes"], 2300);
    // As root, through a loop image as a trial's file system sees the directory, with
    // writes to never-written blocks (a trial's image is sparse); nothing left attached.
    if nix::unistd::geteuid().is_root() {
        assert_eq!(q["through_loop_image"], true, "{q}");
        let fresh: Vec<u64> = q["fresh_write_flush"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["bytes"].as_u64().unwrap())
            .collect();
        assert_eq!(fresh, [4096, 65536], "{q}");
        assert_no_leaks(tmp.path());
    }
    // A fitted model an experiment file can use, and what each figure came from.
    assert_eq!(q["fit"]["name"], "mine", "{q}");
    assert!(
        ["hdd-7200", "ssd-sata"].contains(&q["fit"]["model"].as_str().unwrap()),
        "{q}"
    );
    assert!(!q["fit"]["basis"].as_array().unwrap().is_empty(), "{q}");
    jbench::emu::model_by_name(
        q["fit"]["model"].as_str().unwrap(),
        Some(&serde_json::from_value::<toml::Table>(q["fit"]["params"].clone()).unwrap()),
    )
    .unwrap_or_else(|e| panic!("the fitted entry is not a model: {e}; {q}"));
    assert!(f(&q, &["rewrite_flush", "count"]) >= 5.0, "{q}");
    let fs = &q["fdatasync"];
    assert!(f(fs, &["count"]) >= 10.0, "{q}");
    assert!(
        f(fs, &["p50_us"]) <= f(fs, &["p99_us"]) && f(fs, &["p99_us"]) <= f(fs, &["p999_us"]),
        "{q}"
    );
    assert!(
        ["cheap", "drains-cache"].contains(&q["flush_shape"].as_str().unwrap()),
        "{q}"
    );
    let findings: Vec<&str> = q["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        findings
            .iter()
            .any(|l| l.contains("the 10 ms a log device should stay under")),
        "{findings:?}"
    );
    assert!(
        findings
            .iter()
            .any(|l| l.contains("times per second with the journal here")),
        "{findings:?}"
    );
    assert!(
        !findings.iter().any(|l| l.contains("memory's")),
        "{findings:?}"
    );
    assert_nothing_left(tmp.path());
    // The table and its findings, without --json.
    let out = qualify(tmp.path(), &["--seconds", "1", "--size", "32M"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("append, then fdatasync")
            && text.contains("- fdatasync after 2300-byte appends"),
        "{text}"
    );
    assert_nothing_left(tmp.path());
}

#[test]
fn a_tmpfs_directory_is_measured_but_called_memory() {
    let tmp = tempfile::Builder::new()
        .prefix("jbench-tests-qualify-")
        .tempdir_in("/dev/shm")
        .unwrap();
    let q = json_of(&qualify(
        tmp.path(),
        &["--seconds", "1", "--size", "32M", "--json"],
    ));
    assert_eq!(q["memory"], true, "{q}");
    assert_eq!(q["filesystem"], "tmpfs", "{q}");
    // Whether tmpfs takes O_DIRECT depends on the kernel (6.6 and later do); either
    // way the figures are said to be memory's.
    let first = q["findings"][0].as_str().unwrap();
    assert!(first.contains("memory's, not a disk's"), "{first}");
    assert_nothing_left(tmp.path());
}

/// A tmpfs mounted on `dir` with `options`, unmounted on drop.
struct Mounted<'a>(&'a Path);

impl<'a> Mounted<'a> {
    fn tmpfs(dir: &'a Path, options: &str) -> Self {
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "jbench-test"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(
            st.success(),
            "mount tmpfs -o {options} on {}",
            dir.display()
        );
        Mounted(dir)
    }
}

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn what_it_must_not_or_cannot_measure_in_is_refused_clearly() {
    require!(root);
    let tmp = scratch("qualify-bad-");
    let err = |out: Output| {
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    // No such directory; a file, not a directory.
    let e = err(qualify(&tmp.path().join("nope"), &["--seconds", "1"]));
    assert!(e.contains("does not exist"), "{e}");
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let e = err(qualify(&file, &["--seconds", "1"]));
    assert!(e.contains("is not a directory"), "{e}");

    // A directory others may write in (not sticky): refused, nothing made in it.
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::os::unix::fs::chown(&open, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let e = err(qualify(&open, &["--seconds", "1", "--size", "32M"]));
    assert!(
        e.contains("refusing to measure in") && e.contains("trust"),
        "{e}"
    );
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);

    // Read-only.
    let ro = tmp.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    {
        let _m = Mounted::tmpfs(&ro, "ro,size=256m,mode=0755");
        let e = err(qualify(&ro, &["--seconds", "1", "--size", "32M"]));
        assert!(e.contains("read-only"), "{e}");
    }

    // Too small for the scratch file: refused before anything is written.
    let small = tmp.path().join("small");
    std::fs::create_dir(&small).unwrap();
    {
        let _m = Mounted::tmpfs(&small, "size=24m,mode=0755");
        let e = err(qualify(&small, &["--seconds", "1", "--size", "32M"]));
        assert!(e.contains("free") && e.contains("--size"), "{e}");
        assert_nothing_left(&small);
    }

    // A full file system: refused before anything is written, whatever --only says.
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    {
        let _m = Mounted::tmpfs(&full, "size=8m,mode=0755");
        let _ = std::fs::write(full.join("filler"), vec![7u8; 9 << 20]);
        let e = err(qualify(&full, &["--seconds", "1", "--only", "fdatasync"]));
        assert!(e.contains("free") && e.contains("needs"), "{e}");
        assert_nothing_left(&full);
    }

    // Bad options.
    let out = qualify(tmp.path(), &["--only", "fdatasync", "--fit"]);
    assert_eq!(out.status.code(), Some(2), "--fit needs every pattern");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--only") && e.contains("--fit"), "{e}");
    let out = qualify(tmp.path(), &["--only", "seeks"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("fdatasync") && e.contains("write-flush"), "{e}");
    let e = err(qualify(tmp.path(), &["--seconds", "0"]));
    assert!(e.contains("--seconds"), "{e}");
    let out = qualify(tmp.path(), &["--size", "1M"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--size"));
    assert!(common::mounts_under(tmp.path()).is_empty());
}

#[test]
fn ctrl_c_stops_it_and_leaves_no_scratch_file() {
    let tmp = scratch("qualify-int-");
    let child = jbench()
        .args(["device", "qualify"])
        .arg(tmp.path())
        .args(["--seconds", "60", "--size", "32M"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it measures (its scratch directory exists), then interrupt it.
    let until = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(tmp.path()).unwrap().count() == 0 {
        assert!(
            Instant::now() < until,
            "qualify never made its scratch directory"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_nothing_left(tmp.path());
}

#[test]
fn a_real_device_is_measured_only_when_named_and_never_while_mounted() {
    require!(root);
    let tmp = scratch("qualify-dev-");
    let disk = FakeDisk::new(tmp.path(), "disk.img", 96);
    let run = |extra: &[&str]| {
        jbench()
            .args(["device", "qualify", "--destroy-data-on", &disk.dev])
            .args(extra)
            .output()
            .unwrap()
    };
    // Named: measured on the device itself, its first --size bytes and its last 22 MiB.
    let q = json_of(&run(&["--seconds", "2", "--size", "32M", "--json"]));
    assert_eq!(q["device"], disk.dev.as_str(), "{q}");
    assert_eq!(q["size"], 96u64 << 20, "{q}");
    assert_eq!(
        q["sequential_write_1m"]["requests"], 32,
        "only --size is written: {q}"
    );
    assert!(f(&q, &["fdatasync", "count"]) >= 10.0, "{q}");

    // Mounted: refused, and the file system on it is untouched.
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F", &disk.dev])
        .status()
        .unwrap();
    assert!(st.success());
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("mount")
        .arg(&disk.dev)
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::write(mnt.join("keep"), b"precious").unwrap();
    let out = run(&["--seconds", "1", "--size", "32M"]);
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is mounted on") && err.contains("refusing"),
        "{err}"
    );

    // Not a block device.
    let out = jbench()
        .args(["device", "qualify", "--destroy-data-on"])
        .arg(&disk.image)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a block device"));
    drop(disk);
    assert!(common::mounts_under(tmp.path()).is_empty());
}

#[test]
fn only_the_patterns_named_are_run() {
    let tmp = scratch("qualify-only-");
    let out = qualify(
        tmp.path(),
        &["--only", "fdatasync", "--seconds", "1", "--json"],
    );
    let q = json_of(&out);
    assert_eq!(q["measured"], serde_json::json!(["fdatasync"]), "{q}");
    assert!(f(&q, &["fdatasync", "count"]) >= 10.0, "{q}");
    assert!(f(&q, &["fdatasync", "p99_us"]) > 0.0, "{q}");
    assert_eq!(f(&q, &["random_read_4k", "requests"]), 0.0, "{q}");
    assert_eq!(
        f(&q, &["sequential_write_1m", "requests"]),
        0.0,
        "no prefill: {q}"
    );
    assert!(q.get("flush_shape").is_none(), "not measured: {q}");
    let all = q["findings"].to_string();
    assert!(all.contains("fdatasync after 2300-byte appends"), "{all}");
    assert!(
        !all.contains("O_DIRECT") && !all.contains("a flush costs"),
        "{all}"
    );
    assert_nothing_left(tmp.path());

    let out = qualify(
        tmp.path(),
        &[
            "--only",
            "write-flush,rewrite",
            "--seconds",
            "1",
            "--size",
            "32M",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "write, then flush",
        "4K rewritten in place",
        "sequential write 1M",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    for not in ["random read 4K", "append, then fdatasync"] {
        assert!(!text.contains(not), "{not}: {text}");
    }
    assert_nothing_left(tmp.path());
}

/// docs/own-hardware.md's recipe: the fitted entry goes into a copy of the preset,
/// replacing the example's, and the file is still an experiment `jbench plan` takes.
#[test]
fn a_fit_is_written_into_a_copy_of_the_own_hardware_preset() {
    let tmp = scratch("qualify-fitto-");
    let mine = tmp.path().join("mine.toml");
    let preset = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/own-hardware.toml"),
    )
    .unwrap();
    std::fs::write(&mine, &preset).unwrap();
    let measure = tmp.path().join("m");
    std::fs::create_dir(&measure).unwrap();
    // `--fit NAME --fit-to [FILE]` in a short measurement.
    let fit_into = |name: &str, file: Option<&Path>| {
        let mut cmd = jbench();
        cmd.args(["device", "qualify"]).arg(&measure);
        cmd.args(["--seconds", "2", "--size", "32M", "--fit", name, "--fit-to"]);
        if let Some(f) = file {
            cmd.arg(f);
        }
        cmd.output().unwrap()
    };
    // The flag needs its file: a usage error, nothing written.
    assert_eq!(fit_into("disk", None).status.code(), Some(2));
    let out = fit_into("disk", Some(&mine));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[models.disk] replaced in"), "{err}");
    let text = std::fs::read_to_string(&mine).unwrap();
    // The preset's opening comments and the other entry are kept; one `disk` entry, ours.
    assert!(text.starts_with(preset.lines().next().unwrap()), "{text}");
    assert_eq!(text.matches("[models.disk]").count(), 1, "{text}");
    assert_eq!(text.matches("[models.log]").count(), 1, "{text}");
    assert!(
        text.contains(&format!("--fit from {}", measure.display())),
        "{text}"
    );
    let v: toml::Table = text.parse().unwrap();
    let fitted = v["models"]["disk"]["read_latency_us"].as_float().unwrap();
    let example: toml::Table = preset.parse().unwrap();
    assert_ne!(
        Some(fitted),
        example["models"]["disk"]["read_latency_us"].as_float(),
        "the example's figure is replaced by this measurement's"
    );
    run_ok(jbench().arg("plan").arg(&mine));
    assert_nothing_left(&measure);

    // A built-in model's name is refused before anything is measured.
    let out = fit_into("nvme", Some(&mine));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in"));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), text);
}

/// `--check-copy`: the placement experiment on the directory and on the fitted copy,
/// in two passes; the verdict and the exit status follow the intervals printed.
#[test]
fn the_fitted_copy_is_checked_against_the_directory_and_the_verdict_follows_the_numbers() {
    require!(root, fuse);
    let tmp = scratch("qualify-copy-");
    let results = tmp.path().join("check");
    let out = qualify(
        tmp.path(),
        &[
            "--seconds",
            "3",
            "--size",
            "32M",
            "--json",
            "--fit",
            "mine",
            "--check-copy",
            "--check-files",
            "100",
            "--check-repetitions",
            "2",
            "--check-results",
            results.to_str().unwrap(),
        ],
    );
    let q: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let c = &q["check_copy"];
    // The pass that decided: its records give every mean the check printed.
    let decided = std::path::PathBuf::from(c["results"].as_str().unwrap());
    let records: Vec<Value> = std::fs::read_to_string(decided.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Mean over one side's trials of a placement of a figure of the main phase.
    let mean_of = |placement: &str, copy: bool, fig: &dyn Fn(&Value) -> f64| {
        let v: Vec<f64> = records
            .iter()
            .filter(|r| {
                r["status"] == "ok"
                    && r["config"]["placement"] == placement
                    && r["config"]["label"].as_str().unwrap().starts_with("copy") == copy
            })
            .map(|r| {
                let main = r["phases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == "create_fsync")
                    .unwrap();
                fig(main)
            })
            .collect();
        assert!(!v.is_empty(), "no {placement} trial (copy: {copy})");
        v.iter().sum::<f64>() / v.len() as f64
    };
    let placements = c["placements"].as_array().unwrap();
    let names: Vec<&str> = placements
        .iter()
        .map(|p| p["placement"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["internal", "second-disk"], "{c}");
    let mut decisions = Vec::new();
    for p in placements {
        for (fig, tol) in [("rate", 0.15), ("p50", 0.20)] {
            let x = &p[fig];
            assert_eq!(f(x, &["tolerance"]), tol, "{p}");
            // Each ratio is the copy's mean over the real one's, as the kept records
            // give them.
            let placement = p["placement"].as_str().unwrap();
            let of: &dyn Fn(&Value) -> f64 = match fig {
                "rate" => &|m| f(m, &["ops"]) / f(m, &["seconds"]),
                _ => &|m| f(m, &["latency", "p50_us"]),
            };
            let (copy, real) = (mean_of(placement, true, of), mean_of(placement, false, of));
            let (copy_key, real_key) = match fig {
                "rate" => ("copy_rate", "real_rate"),
                _ => ("copy_p50_us", "real_p50_us"),
            };
            assert!((f(p, &[copy_key]) / copy - 1.0).abs() < 1e-9, "{p}");
            assert!((f(p, &[real_key]) / real - 1.0).abs() < 1e-9, "{p}");
            assert!((f(x, &["ratio"]) / (copy / real) - 1.0).abs() < 1e-9, "{p}");
            let (low, high) = (f(x, &["interval", "low"]), x["interval"]["high"].as_f64());
            // The word follows the interval against the band (1/(1+tol), 1+tol).
            let word = x["decision"].as_str().unwrap();
            let (lo, hi) = (1.0 / (1.0 + tol), 1.0 + tol);
            let expect = if low > hi || high.is_some_and(|h| h < lo) {
                "different"
            } else if low > lo && high.is_some_and(|h| h < hi) {
                "equivalent"
            } else {
                "undecided"
            };
            assert_eq!(word, expect, "{p}");
            decisions.push(word.to_string());
        }
    }
    let verdict = c["verdict"].as_str().unwrap();
    // A copy whose answers took the path's time (a busy machine measures a slow
    // path) cannot stand for the device, whatever its ratios, and says why.
    let cannot: Vec<&str> = c["cannot_stand"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let expect = if !cannot.is_empty() {
        "cannot-stand"
    } else if decisions.iter().any(|d| d == "different") {
        "misses"
    } else if decisions.iter().all(|d| d == "equivalent") {
        "predicts"
    } else {
        "undecided"
    };
    assert_eq!(verdict, expect, "{c}");
    assert_eq!(
        out.status.success(),
        ["predicts", "undecided"].contains(&verdict),
        "exit status {:?} for {verdict}",
        out.status
    );
    // Starved trials are named by the trial numbers the decided pass recorded.
    for t in c["starved_trials"].as_array().unwrap() {
        assert!(records.iter().any(|r| r["trial"] == *t), "{t} in {c}");
    }
    // Both passes' records are kept: 2 placements x real and copy x 2 repetitions,
    // and the first pass set the flush latency the second used (the model printed).
    // A first pass that cannot stand (a busy machine measures a slow path) decides
    // alone: no refit, no second pass.
    let passes: &[&str] = if c["refit"].is_null() {
        assert_eq!(verdict, "cannot-stand", "{c}");
        assert!(!results.join("check-pass").exists());
        &["fit-pass"]
    } else {
        assert_eq!(
            f(&c["fit"], &["params", "flush_latency_us"]),
            f(&c["refit"], &["to_us"]),
            "{c}"
        );
        &["fit-pass", "check-pass"]
    };
    assert_eq!(decided, results.join(passes.last().unwrap()), "{c}");
    for pass in passes {
        let text = std::fs::read_to_string(results.join(pass).join("trials.jsonl")).unwrap();
        assert_eq!(
            text.lines().filter(|l| l.contains("\"trial\"")).count(),
            8,
            "{pass}"
        );
    }
    assert_nothing_left(tmp.path());
    assert_no_leaks(tmp.path());
}
