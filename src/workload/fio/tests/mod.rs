use super::jobfile::{check, Dir, JobError};
use super::*;

const SAFE: &str = "\
; a database-like job and a scan
[global]
ioengine=psync
size=4M
# comments either way

[db]
rw=randwrite
bs=8k
fdatasync=1
filename=data/db.file
write_lat_log=db

[scan]
rw=read:8
bs = 64k
numjobs=2
cpus_allowed=0-1
";

fn refused(text: &str) -> JobError {
    check(text).expect_err("refused")
}

fn with(option: &str) -> String {
    format!("[global]\nioengine=sync\nsize=1M\n\n[job]\nrw=write\n{option}\n")
}

#[test]
fn fio_safe_job_passes_with_phases_and_sizes() {
    let j = check(SAFE).unwrap();
    assert_eq!(
        j.phase_names(),
        ["db:write", "scan:read", "scan.1:read"],
        "two scan clones report apart under one name"
    );
    assert_eq!(j.data_bytes, 3 * (4 << 20));
    assert_eq!(j.files, 3);
    for engine in jobfile::SAFE_ENGINES {
        check(&with(&format!("ioengine={engine}"))).unwrap();
    }
    check(&with("time_based\nruntime=5")).unwrap();
    check(&with("filename=a:b/c")).unwrap();
    check(&with("filename_format=$jobname.$jobnum")).unwrap();
}

#[test]
fn fio_each_refusal_names_the_option_and_its_line() {
    // The option goes on line 7 of `with`.
    for (option, key, says) in [
        ("filename=/etc/passwd", "filename", "absolute"),
        ("filename=../../x", "filename", ".."),
        ("filename=ok:/dev/sda", "filename", "device"),
        (
            "filename_format=/tmp/$jobname",
            "filename_format",
            "absolute",
        ),
        ("directory=/tmp", "directory", "jbench sets"),
        ("ioengine=rbd", "ioengine", "rbd"),
        ("ioengine=external:/x.so", "ioengine", "external"),
        ("exec_prerun=rm -rf /", "exec_prerun", "command"),
        ("exec_postrun=true", "exec_postrun", "command"),
        ("trigger_cmd=reboot", "trigger_cmd", "command"),
        ("write_bw_log=/tmp/bw", "write_bw_log", "absolute"),
        ("write_iolog=../log", "write_iolog", ".."),
        ("read_iolog=/var/log/x", "read_iolog", "absolute"),
        ("write_hist_log=/h", "write_hist_log", "absolute"),
        ("cgroup=other", "cgroup", "cgroup"),
        ("cgroup_weight=100", "cgroup_weight", "cgroup"),
        ("numa_cpu_nodes=0", "numa_cpu_nodes", "NUMA"),
        ("ioscheduler=none", "ioscheduler", "scheduler"),
        ("filename=${HOME}/x", "filename", "environment"),
        ("size=50%", "size", "percentage"),
        ("time_based", "time_based", "runtime"),
        ("rw=sideways", "rw", "sideways"),
        ("numjobs=0", "numjobs", "1 to"),
    ] {
        let e = refused(&with(option));
        assert_eq!((e.line, e.option.as_str()), (7, key), "{option}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("line 7") && text.contains(&format!("`{key}`")) && text.contains(says),
            "{option}: {text}"
        );
    }
    // In [global] too, with that line.
    let e = refused("[global]\nsize=1M\nexec_prerun=true\n[j]\n");
    assert_eq!((e.line, e.option.as_str()), (3, "exec_prerun"));
    let e = refused("[j]\nrw=write\n");
    assert_eq!((e.line, e.option.as_str()), (1, "size"));
    assert!(e.to_string().contains("no size"), "{e}");
    let e = refused("size=1M\n[j]\n");
    assert_eq!(e.line, 1);
    let e = refused("[global]\nsize=1M\ninclude other.fio\n[j]\n");
    assert_eq!((e.line, e.option.as_str()), (3, "include"));
    assert!(refused("[global]\nsize=1M\n")
        .to_string()
        .contains("no job section"));
}

#[test]
fn fio_entries_follow_fios_reporting_groups() {
    // What fio 3.33 reported for this file: a, a (with b merged), c (3 clones
    // merged, new group by stonewall), dee.
    let j = check(
        "[global]\nsize=64k\n[a]\nrw=write\nnumjobs=2\n[b]\nrw=randread\ngroup_reporting\n\
         [c]\nstonewall\nrw=randrw\nnumjobs=3\ngroup_reporting\n[d]\nrw=trimwrite\nname=dee\n",
    )
    .unwrap();
    let got: Vec<(&str, &str, Vec<Dir>)> = j
        .entries
        .iter()
        .map(|e| (e.jobname.as_str(), e.phase.as_str(), e.dirs.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("a", "a", vec![Dir::Write]),
            ("a", "a.1", vec![Dir::Read, Dir::Write]),
            ("c", "c", vec![Dir::Read, Dir::Write]),
            ("dee", "dee", vec![Dir::Write, Dir::Trim]),
        ]
    );
}

const FIXTURE_JOB: &str = include_str!("../../../../tests/fixtures/fio_jsonplus.fio");
const FIXTURE_JSON: &str = include_str!("../../../../tests/fixtures/fio_jsonplus.json");

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= b * 0.001 + 0.001
}

#[test]
fn fio_json_plus_fixture_gives_counts_bytes_and_percentiles_from_bins() {
    let j = check(FIXTURE_JOB).unwrap();
    assert_eq!(j.phase_names(), ["db:write", "mix:read", "mix:write"]);
    let p = json::phases(FIXTURE_JSON, &j.entries).unwrap();
    let names: Vec<&str> = p.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["db:write", "mix:read", "mix:write"]);
    // (ops, bytes, ms, p50, p95, p99, max in ns), the percentiles worked out by hand
    // from the bins (smallest value with at least q of the samples at or below).
    let want = [
        (16, 131072, 5, 3856, 33024, 33024, 33259),
        (26, 106496, 2, 79360, 123392, 128422, 128422),
        (38, 155648, 2, 2544, 7840, 15296, 15343),
    ];
    for (r, (ops, bytes, ms, p50, p95, p99, max)) in p.iter().zip(want) {
        assert_eq!((r.ops, r.bytes), (ops, bytes), "{}", r.name);
        assert!(close(r.seconds, ms as f64 / 1000.0), "{}", r.name);
        let l = r.latency.clone().expect("json+ has bins");
        assert_eq!(l.count, ops, "{}", r.name);
        for (got, ns) in [
            (l.p50_us, p50),
            (l.p95_us, p95),
            (l.p99_us, p99),
            (l.max_us, max),
        ] {
            assert!(
                close(got, ns as f64 / 1000.0),
                "{}: {got} us vs {ns} ns",
                r.name
            );
        }
        assert!(l.p50_us <= l.p95_us && l.p95_us <= l.p99_us && l.p99_us <= l.max_us);
        assert_eq!(
            r.op_unit,
            format!("{} IOs", r.name.split(':').nth(1).unwrap())
        );
    }
    // The merged group: two clones' IOs in one entry.
    assert_eq!(p[1].ops + p[2].ops, 64);
    // Output that does not match the job file is an error, not a silent mismatch.
    let other = check("[global]\nsize=1M\n[x]\n").unwrap();
    assert!(json::phases(FIXTURE_JSON, &other.entries).is_err());
}

#[test]
fn fio_plain_json_has_no_latency() {
    let clat = serde_json::json!({"min": 1, "max": 2, "N": 2});
    assert_eq!(json::latency(&clat, "clat_ns").unwrap(), None);
}

#[test]
fn fio_table_keys() {
    let t = |s: &str| -> toml::Table { toml::from_str(s).unwrap() };
    let e = from_table(&t("job = \"a\"\njob_text = \"b\""))
        .err()
        .unwrap();
    assert_eq!(e.key, "job_text");
    let e = from_table(&t("")).err().unwrap();
    assert_eq!(e.key, "job");
    let e = from_table(&t("job_text = \"[j]\\nsize=1M\\n\"\nbs = 4"))
        .err()
        .unwrap();
    assert_eq!(e.key, "bs");
    let e = from_table(&t("job = \"/no/such/file.fio\"")).err().unwrap();
    assert_eq!(e.key, "job");
    let e = from_table(&t("job_text = \"[j]\\nsize=1M\\ndirectory=/\\n\""))
        .err()
        .unwrap();
    assert!(
        e.message.contains("line 3") && e.message.contains("`directory`"),
        "{}",
        e.message
    );
    let w = from_table(&t("job_text = \"[j]\\nsize=1M\\nrw=randrw\\n\"")).unwrap();
    assert_eq!(w.kind(), "fio");
    assert_eq!(w.phase_names(), ["j:read", "j:write"]);
    assert_eq!(w.peak_data_bytes(), 1 << 20);
    // The resolved spec records the text, which parses back to the same workload.
    let back = toml::Table::try_from(w.params()).unwrap();
    assert_eq!(from_table(&back).unwrap().phase_names(), w.phase_names());
}

#[test]
fn fio_runs_in_a_directory_and_leaves_it_as_found() {
    let test = "fio_runs_in_a_directory_and_leaves_it_as_found";
    if !crate::test_require::need_program(test, "fio", "fio") {
        return;
    }
    let base = std::env::temp_dir().join(format!("jbench-fio-unit.{}", std::process::id()));
    let (dir, out) = (base.join("dir"), base.join("out"));
    std::fs::create_dir_all(&dir).unwrap();
    let w = Fio::new(
        "[global]\nioengine=psync\nsize=256k\n[w]\nrw=write\nbs=64k\nwrite_bw_log=w\n".into(),
        None,
    )
    .unwrap();
    let ctl = RunControl::new().with_output_dir(Some(out.clone()));
    let p = w.run(&dir, &ctl).unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(
        (p[0].name.as_str(), p[0].ops, p[0].bytes),
        ("w:write", 4, 256 << 10)
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "fio's files removed"
    );
    for f in ["fio-job.fio", "fio.json", "fio.stderr", "w_bw.1.log"] {
        assert!(out.join(f).exists(), "{f} kept in the output folder");
    }
    // A failing job is an error carrying fio's own message.
    let bad = Fio::new("[global]\nsize=1M\n[t]\nrw=trim\nbs=4k\n".into(), None).unwrap();
    let e = format!("{:#}", bad.run(&dir, &RunControl::new()).unwrap_err());
    assert!(e.contains("fio exited"), "{e}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // A stop request kills fio.
    let slow = Fio::new(
        "[global]\nsize=1M\n[s]\nrw=read\ntime_based\nruntime=60\n".into(),
        None,
    )
    .unwrap();
    let ctl = RunControl::new();
    let stopper = ctl.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stopper.request_stop();
    });
    let started = Instant::now();
    let e = slow.run(&dir, &ctl).unwrap_err();
    t.join().unwrap();
    assert!(e.downcast_ref::<Interrupted>().is_some(), "{e:#}");
    assert!(started.elapsed() < Duration::from_secs(20));
    std::fs::remove_dir_all(&base).unwrap();
}

const FDATASYNC_JOB: &str = include_str!("../../../../tests/fixtures/fio_fdatasync.fio");
/// fio 3.33's json+ of that job with `--lat_percentiles=1`, as the engine runs it.
const FDATASYNC_JSON: &str = include_str!("../../../../tests/fixtures/fio_fdatasync.json");

#[test]
fn fio_fdatasync_job_keeps_clat_sync_and_lat_apart() {
    let j = check(FDATASYNC_JOB).unwrap();
    let p = json::phases(FDATASYNC_JSON, &j.entries).unwrap();
    assert_eq!(p.len(), 1);
    let doc: serde_json::Value = serde_json::from_str(FDATASYNC_JSON).unwrap();
    let job = &doc["jobs"][0];
    let f = p[0]
        .fio_latency
        .clone()
        .expect("a fio phase has fio_latency");
    let (clat, sync, lat) = (
        f.clat.expect("clat bins"),
        f.sync.expect("sync bins"),
        f.lat.expect("lat bins with lat_percentiles"),
    );
    // `latency` stays the completion latency it always was.
    assert_eq!(p[0].latency.as_ref(), Some(&clat));
    for (l, src) in [
        (&clat, &job["write"]["clat_ns"]),
        (&sync, &job["sync"]["lat_ns"]),
        (&lat, &job["write"]["lat_ns"]),
    ] {
        assert_eq!(l.count, src["N"].as_u64().unwrap());
        assert!(close(
            l.max_us,
            src["max"].as_u64().unwrap() as f64 / 1000.0
        ));
        // fio's own median, within the histogram's three significant digits.
        let p50 = src["percentile"]["50.000000"].as_u64().unwrap() as f64 / 1000.0;
        assert!(
            (l.p50_us - p50).abs() <= p50 * 0.01,
            "{} vs {p50}",
            l.p50_us
        );
    }
    // The sync calls are where an fdatasync job's time goes.
    assert!(sync.p50_us > 10.0 * clat.p50_us, "{sync:?} vs {clat:?}");
    assert!(lat.p50_us >= clat.p50_us);
    let fio = Fio::new(FDATASYNC_JOB.to_string(), None).unwrap();
    let table = super::cli::report(&fio, Path::new("/x"), &p);
    for kind in ["clat", "sync", "lat"] {
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().any(|w| w == kind)),
            "{table}"
        );
    }
}
