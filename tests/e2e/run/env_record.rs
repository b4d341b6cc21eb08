//! env.json on this machine: a run (scripted executor, no devices) writes what decides
//! journaling figures, read back here against /proc and /sys, and the reports show it.

use std::fs;
use std::path::Path;
use std::process::Command;

const SPEC: &str = r#"name = "env"
repetitions = 1
[filesystem]
size = "1G"
device_model = "hdd-7200"
[journal]
placement = "internal"
[[workload]]
kind = "fdtree"
dirs = 2
levels = 2
"#;

fn jbench(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_jbench"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "jbench {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn proc_u64(path: &str) -> u64 {
    fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

/// `(mount options, super options)` of the mount `path` is under, read here apart
/// from jbench's own parser.
fn mountinfo_of(path: &Path) -> (String, String) {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut best: Option<(usize, String, String)> = None;
    for line in text.lines() {
        let (head, tail) = line.split_once(" - ").unwrap();
        let h: Vec<&str> = head.split(' ').collect();
        let point = h[4].replace("\\040", " ");
        if !path.starts_with(&point) {
            continue;
        }
        let depth = Path::new(&point).components().count();
        if best.as_ref().is_none_or(|b| depth >= b.0) {
            let sup = tail.split(' ').nth(2).unwrap_or("").to_string();
            best = Some((depth, h[5].to_string(), sup));
        }
    }
    let (_, opts, sup) = best.unwrap();
    (opts, sup)
}

#[test]
fn env_json_records_what_decides_journaling_figures_and_the_reports_show_it() {
    fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    let tmp = tempfile::Builder::new()
        .prefix("env-record-")
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap();
    fs::write(tmp.path().join("env.toml"), SPEC).unwrap();
    let printed = jbench(
        tmp.path(),
        &[
            "run",
            "env.toml",
            "--results",
            "r",
            "--executor",
            "scripted",
            "--quiet",
        ],
    );
    let dir = tmp.path().join("r");
    let env: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.join("env.json")).unwrap()).unwrap();

    // The writeback sysctls are /proc/sys/vm's.
    let wb = &env["writeback"];
    for name in [
        "dirty_ratio",
        "dirty_background_ratio",
        "dirty_bytes",
        "dirty_background_bytes",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
    ] {
        assert_eq!(
            wb[name].as_u64(),
            Some(proc_u64(&format!("/proc/sys/vm/{name}"))),
            "{name}: {wb}"
        );
    }

    // The work_dir's mount and disk queue.
    let spec = jbench::experiment::spec::load(&dir.join("spec.toml")).unwrap();
    let work = &env["image_locations"][0];
    let probe = spec
        .work_dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap()
        .canonicalize()
        .unwrap();
    let (opts, sup) = mountinfo_of(&probe);
    assert_eq!(work["mount_options"], opts.as_str(), "{work}");
    assert_eq!(work["superblock_options"], sup.as_str(), "{work}");
    if let Some(q) = work.get("queue") {
        let disk = q["disk"].as_str().unwrap();
        let listed = fs::read_to_string(format!("/sys/block/{disk}/queue/scheduler")).unwrap();
        let names: Vec<&str> = listed
            .split_whitespace()
            .map(|s| s.trim_matches(['[', ']']))
            .collect();
        assert!(
            names.contains(&q["scheduler"].as_str().unwrap()),
            "{q} vs {listed}"
        );
        assert!(listed.contains(&format!("[{}]", q["scheduler"].as_str().unwrap())));
        let wc = fs::read_to_string(format!("/sys/block/{disk}/queue/write_cache")).unwrap();
        assert_eq!(q["write_cache"], wc.trim());
        let rot = proc_u64(&format!("/sys/block/{disk}/queue/rotational"));
        assert_eq!(q["rotational"].as_bool(), Some(rot == 1));
    }

    // The governor: absent without cpufreq, else what cpu0 runs among the list.
    match fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") {
        Ok(g) => assert!(
            env["cpu_governors"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!(g.trim())),
            "{env}"
        ),
        Err(_) => assert!(env.get("cpu_governors").is_none(), "{env}"),
    }

    // The emulated disk as its model resolves it.
    let defaults = jbench::emu::model::default_params("hdd-7200").unwrap();
    let disk = &env["disks"][0];
    assert_eq!(disk["kind"], "emulated");
    assert_eq!(disk["model"], "hdd-7200");
    assert_eq!(
        disk["cache"] == "write back",
        defaults["write_cache"].as_bool().unwrap(),
        "{disk}"
    );

    // The reports' headers.
    let line = format!(
        "expire {} s",
        proc_u64("/proc/sys/vm/dirty_expire_centisecs") as f64 / 100.0
    );
    let table = jbench(tmp.path(), &["report", "r"]);
    for text in [&printed, &table] {
        // Under the summary that opens the report, above the warnings and tables.
        let at = text.find("\nwriteback: ").expect("the environment lines");
        assert!(text.starts_with("Summary") && at < text.find("== Workload").unwrap());
        assert!(text.contains(&line), "{text}");
        assert!(text.contains(&format!("mount {opts}")), "{text}");
        assert!(text.contains("emulated hdd-7200"), "{text}");
    }
    let md = jbench(tmp.path(), &["report", "r", "--format", "markdown"]);
    assert!(md.contains("\nwriteback: dirty_"), "{md}");
    assert!(md.find("\nwriteback: ") < md.find("## Workload"), "{md}");
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("What decides journaling figures"), "html");
    assert!(html.contains(&line), "html");
}
