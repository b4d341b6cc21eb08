//! Cross-checks `jbench workload iozone` against fio on the same file system: the same
//! bytes moved, and under strace the same system-call pattern (one write or read of
//! exactly one record per record, O_SYNC on every open with `-o`).
//!
//! fio and strace are required: without them these tests skip, saying how to get them,
//! and under CI they fail rather than pass without having checked anything.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const RECORD: u64 = 64 * 1024;
const SIZE: u64 = 1024 * 1024;
const THREADS: u64 = 3;
const RECORDS: u64 = SIZE / RECORD;

fn scratch() -> tempfile::TempDir {
    std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    tempfile::Builder::new()
        .prefix("iozone-fio-")
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap()
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("command starts");
    assert!(
        out.status.success(),
        "command failed: {cmd:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `jbench workload iozone` with 64 KiB records, 1 MiB files, 3 workers, no
/// stonewalling (so every worker moves its whole file, as fio does).
fn jbench_args(dir: &Path, osync: bool) -> Vec<String> {
    let mut a: Vec<String> = [
        "workload", "iozone", "--dir", "", "-r", "64k", "-s", "1m", "-i", "0", "-i", "1", "-t",
        "3", "-x", "-e", "--json",
    ]
    .map(String::from)
    .to_vec();
    a[3] = dir.display().to_string();
    if osync {
        a.push("-o".into());
    }
    a
}

/// fio doing what iozone's initial writers (`rw=write`) or readers (`rw=read`) do:
/// plain write/read calls of one record, no preallocation, fsync at the end (`-e`),
/// page cache kept (iozone does not drop it), O_SYNC with `osync`.
fn fio_args(dir: &Path, rw: &str, osync: bool) -> Vec<String> {
    vec![
        "--name=ioz".into(),
        format!("--directory={}", dir.display()),
        format!("--rw={rw}"),
        format!("--bs={RECORD}"),
        format!("--size={SIZE}"),
        format!("--numjobs={THREADS}"),
        "--ioengine=sync".into(),
        "--fallocate=none".into(),
        "--invalidate=0".into(),
        "--end_fsync=1".into(),
        format!("--sync={}", u8::from(osync)),
        "--output-format=json".into(),
    ]
}

fn jbench_phases(dir: &Path) -> Vec<Value> {
    let out = run_ok(Command::new(env!("CARGO_BIN_EXE_jbench")).args(jbench_args(dir, false)));
    serde_json::from_slice(&out.stdout).expect("jbench --json prints JSON")
}

/// Total io_bytes and summed bandwidth (KiB/s) of a fio run, for `dir` ("read"/"write").
fn fio_totals(json: &Value, dir: &str) -> (u64, f64) {
    let jobs = json["jobs"].as_array().expect("fio jobs");
    let bytes = jobs
        .iter()
        .map(|j| j[dir]["io_bytes"].as_u64().unwrap())
        .sum();
    let bw = jobs.iter().map(|j| j[dir]["bw"].as_f64().unwrap()).sum();
    (bytes, bw)
}

fn fio(dir: &Path, rw: &str) -> Value {
    let out = run_ok(Command::new("fio").args(fio_args(dir, rw, false)));
    serde_json::from_slice(&out.stdout).expect("fio prints JSON")
}

#[test]
fn jbench_and_fio_move_the_same_bytes() {
    if !common::need_program("jbench_and_fio_move_the_same_bytes", "fio", "fio") {
        return;
    }
    let tmp = scratch();
    let (a, b) = (tmp.path().join("jbench"), tmp.path().join("fio"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();

    let phases = jbench_phases(&a);
    let fio_write = fio(&b, "write");
    for i in 0..THREADS {
        let len = std::fs::metadata(b.join(format!("ioz.{i}.0")))
            .unwrap()
            .len();
        assert_eq!(len, SIZE, "fio file {i}");
    }
    let fio_read = fio(&b, "read");

    let (w_bytes, w_bw) = fio_totals(&fio_write, "write");
    let (r_bytes, r_bw) = fio_totals(&fio_read, "read");
    let phase = |name: &str| phases.iter().find(|p| p["name"] == name).unwrap().clone();
    for (name, fio_bytes) in [
        ("write", w_bytes),
        ("rewrite", w_bytes),
        ("read", r_bytes),
        ("reread", r_bytes),
    ] {
        let p = phase(name);
        assert_eq!(
            p["bytes"].as_u64().unwrap(),
            fio_bytes,
            "{name}: bytes moved differ from fio"
        );
        assert_eq!(p["bytes"].as_u64().unwrap(), THREADS * SIZE);
        assert_eq!(p["ops"].as_u64().unwrap(), THREADS * RECORDS);
        assert_eq!(
            p["counters"]["kib_moved"].as_u64().unwrap(),
            THREADS * SIZE / 1024
        );
    }
    // Rates on one small run are noise; they are printed for the record, not compared.
    eprintln!(
        "iozone-vs-fio on {}: -r 64k -s 1m -t 3 -e\n  fio write {w_bytes} B, {w_bw:.0} KiB/s; \
         jbench write children {} parent {} KiB/s\n  fio read {r_bytes} B, {r_bw:.0} KiB/s; \
         jbench read children {} parent {} KiB/s",
        tmp.path().display(),
        phase("write")["counters"]["children_kib_per_s"],
        phase("write")["counters"]["parent_kib_per_s"],
        phase("read")["counters"]["children_kib_per_s"],
        phase("read")["counters"]["parent_kib_per_s"],
    );
}

/// Runs `cmd` under `strace -ff` and returns every traced line of every task.
fn strace_lines(tmp: &Path, tag: &str, program: &str, args: &[String]) -> Vec<String> {
    let prefix = tmp.join(format!("trace-{tag}"));
    run_ok(
        Command::new("strace")
            .arg("-ff")
            .arg("-e")
            .arg("trace=openat,write,read,fsync,pwrite64,pread64")
            .arg("-o")
            .arg(&prefix)
            .arg(program)
            .args(args),
    );
    let name = prefix.file_name().unwrap().to_string_lossy().into_owned();
    let files: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{name}."))
        })
        .collect();
    assert!(!files.is_empty(), "strace wrote no trace for {program}");
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// System calls of one record's size (`write(fd, ..., 65536) = 65536`).
fn record_calls(lines: &[String], call: &str) -> usize {
    let tail = format!(", {RECORD}) = {RECORD}");
    lines
        .iter()
        .filter(|l| l.starts_with(&format!("{call}(")) && l.ends_with(&tail))
        .count()
}

fn opens_of<'a>(lines: &'a [String], marker: &str) -> Vec<&'a String> {
    lines
        .iter()
        .filter(|l| l.starts_with("openat(") && l.contains(marker))
        .collect()
}

#[test]
fn strace_shows_the_same_pattern_as_fio() {
    let test = "strace_shows_the_same_pattern_as_fio";
    if !(common::need_program(test, "fio", "fio") && common::need_program(test, "strace", "strace"))
    {
        return;
    }
    let tmp = scratch();
    let (a, b) = (tmp.path().join("jbench"), tmp.path().join("fio"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();

    let jb = strace_lines(
        tmp.path(),
        "jbench",
        env!("CARGO_BIN_EXE_jbench"),
        &jbench_args(&a, true),
    );
    let fw = strace_lines(tmp.path(), "fio-w", "fio", &fio_args(&b, "write", true));
    let fr = strace_lines(tmp.path(), "fio-r", "fio", &fio_args(&b, "read", true));

    // iozone -i 0 writes every file twice (write, rewrite), -i 1 reads it twice.
    let (jw, jr) = (record_calls(&jb, "write"), record_calls(&jb, "read"));
    let (fwc, frc) = (record_calls(&fw, "write"), record_calls(&fr, "read"));
    assert_eq!(fwc as u64, THREADS * RECORDS, "fio writes");
    assert_eq!(frc as u64, THREADS * RECORDS, "fio reads");
    assert_eq!(jw, 2 * fwc, "jbench record writes vs fio");
    assert_eq!(jr, 2 * frc, "jbench record reads vs fio");
    assert_eq!(
        record_calls(&jb, "pwrite64") + record_calls(&jb, "pread64"),
        0
    );

    // -o: O_SYNC on every open of the data files. fio first creates each file with a
    // setup open (O_WRONLY|O_CREAT, no I/O on it); its I/O opens are the O_RDWR and
    // O_RDONLY ones, and those are what iozone's writers and readers do.
    let jopens = opens_of(&jb, "iozone.DUMMY.");
    assert_eq!(
        jopens.len() as u64,
        4 * THREADS,
        "one open per worker per phase"
    );
    assert!(jopens.iter().all(|l| l.contains("O_SYNC")), "{jopens:#?}");
    let fio_io: Vec<&String> = opens_of(&fw, "ioz.")
        .into_iter()
        .chain(opens_of(&fr, "ioz."))
        .filter(|l| !l.contains("O_WRONLY"))
        .collect();
    assert_eq!(fio_io.len() as u64, 2 * THREADS, "{fio_io:#?}");
    assert!(fio_io.iter().all(|l| l.contains("O_SYNC")), "{fio_io:#?}");
    // Same flags, O_CLOEXEC (no effect on the file) aside: the initial writer creates
    // without truncating, the readers open read-only.
    let flags = |l: &str| {
        let f = l
            .split(", ")
            .nth(2)
            .unwrap_or_default()
            .split(')')
            .next()
            .unwrap();
        f.replace("|O_CLOEXEC", "")
    };
    let mut jflags: Vec<String> = jopens.iter().map(|l| flags(l)).collect();
    jflags.sort();
    jflags.dedup();
    let mut fflags: Vec<String> = fio_io.iter().map(|l| flags(l)).collect();
    fflags.sort();
    fflags.dedup();
    eprintln!("open flags: jbench {jflags:?}, fio {fflags:?}");
    assert_eq!(
        jflags,
        ["O_RDONLY|O_SYNC", "O_RDWR|O_CREAT|O_SYNC", "O_RDWR|O_SYNC"],
        "{jopens:#?}"
    );
    for f in &fflags {
        assert!(jflags.contains(f), "fio opens with {f}, jbench never does");
    }
    // -e: a timed fsync and the untimed one after each write phase, per worker.
    let jfsync = jb.iter().filter(|l| l.starts_with("fsync(")).count() as u64;
    assert_eq!(jfsync, 2 * 2 * THREADS);
    eprintln!(
        "strace: jbench {jw} record writes, {jr} record reads, {jfsync} fsyncs; \
         fio {fwc} writes + {frc} reads per pass, {} + {} fsyncs",
        fw.iter().filter(|l| l.starts_with("fsync(")).count(),
        fr.iter().filter(|l| l.starts_with("fsync(")).count(),
    );
}
