//! The emulated disk never stalls: concurrent writers through the whole path
//! (`jbench device stress`), and the workload that stalled it — more writers of 4 MiB
//! records than a small memory limit holds — as a run, with the host's dirty limits
//! put back afterwards.

use crate::common;

use common::*;

fn dirty_limits() -> (String, String, String, String) {
    let read = |n: &str| std::fs::read_to_string(format!("/proc/sys/vm/{n}")).unwrap();
    (
        read("dirty_ratio"),
        read("dirty_bytes"),
        read("dirty_background_ratio"),
        read("dirty_background_bytes"),
    )
}

/// The two tests time the daemon's answers; run alone, neither loads the other's CPU.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn eight_writers_with_flushes_get_every_answer_on_time() {
    let _alone = crate::alone();
    require!(root, fuse);
    let _alone = one_at_a_time();
    let tmp = scratch("stress-");
    let out = jbench()
        .args([
            "device",
            "stress",
            "--writers",
            "8",
            "--seconds",
            "10",
            "--json",
        ])
        .arg("--work-dir")
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reports: Vec<serde_json::Value> = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("JSON ({e}):\n{stdout}\nstderr:\n{stderr}"));
    let models: Vec<&str> = reports
        .iter()
        .map(|r| r["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["hdd-7200", "raid6", "ssd-sata"], "{stdout}");
    for r in &reports {
        assert!(r["aborted"].is_null(), "no watchdog abort: {r}");
        assert_eq!(r["errors"].as_array().unwrap().len(), 0, "{r}");
        assert_eq!(r["overdue"], 0, "no answer past the overdue bound: {r}");
        assert_eq!(r["slow_io"], 0, "no image I/O blocked past it: {r}");
        assert!(r["worst_late_ms"].as_f64().unwrap() <= 100.0, "{r}");
        assert!(
            r["writes"].as_u64().unwrap() > 50,
            "the writers got through: {r}"
        );
        assert!(
            r["flushes"].as_u64().unwrap() > 0,
            "flushes were mixed in: {r}"
        );
        // The raid6 run's 8 MiB cache must have filled, or it measured no stall risk.
        if r["model"] == "raid6" {
            assert!(r["bytes"].as_u64().unwrap() > 64 << 20, "{r}");
        }
    }
    assert_eq!(
        out.status.success(),
        reports.iter().all(|r| r["ok"] == true)
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn writers_that_outgrow_a_small_memory_limit_do_not_stall_the_emulated_disk() {
    let _alone = crate::alone();
    require!(root, fuse, memcg);
    let _alone = one_at_a_time();
    let tmp = scratch("stall-");
    // Eight writers of 24 MiB in 4 MiB records: 192 MiB into a 96 MiB memory limit,
    // on a RAID 6 whose 8 MiB cache fills. Before the fix the cgroup filled with dirty
    // pages and the trial hung until the watchdog (10 s here) gave up.
    let spec = write_spec(
        tmp.path(),
        "stall",
        &format!(
            r#"name = "stall"
repetitions = 2
seed = 1
suspect_below = "60s"
work_dir = "{}"
memory_limit = "96M"

[models.raid6-small]
model = "raid6"
cache_bytes = 8388608
nonvolatile = true

[filesystem]
type = "ext4"
size = "1G"
device_model = "raid6-small"

[journal]
size = "16M"

[emulation]
watchdog = "10s"

[[workload]]
kind = "iozone"
name = "throughput-8"
record = "4M"
size = "24M"
tests = ["write"]
threads = 8
"#,
            tmp.path().display()
        ),
    );
    let before = dirty_limits();
    let results = tmp.path().join("results");
    let out = jbench()
        .arg("run")
        .arg(&spec)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        dirty_limits(),
        before,
        "the host's dirty limits are put back"
    );
    assert!(!stderr.contains("did not answer"), "{stderr}");
    let recs = records(&results);
    assert_eq!(recs.len(), 2, "{stderr}");
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}\n{stderr}");
        let mem = &r["memory"];
        if mem["cgroup"] == "v1" {
            // Under cgroup v1 the kernel has no per-cgroup dirty limit; the run scaled
            // the host's to the memory limit for the trial and recorded it.
            let applied = &mem["dirty_limits"];
            let dirty = applied["dirty_bytes"].as_u64().unwrap();
            assert!(dirty > 0 && dirty < 96 << 20, "{mem}");
        }
    }
    assert!(out.status.success(), "{stderr}");
    assert_no_leaks(tmp.path());
}
