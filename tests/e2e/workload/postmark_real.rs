//! The PostMark engine against the real thing: Debian's `postmark` (1.53) and
//! `jbench workload postmark` run the same configuration file in separate
//! directories, and every count and data figure of PostMark's report must agree.
//!
//! Needs `postmark` on PATH (`apt-get install postmark`, or `bash .ci/run`): without
//! it the tests skip, saying so, and fail under CI rather than pass unseen.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

fn postmark_binary() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("postmark"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the real `postmark` is not installed; these tests compare against it. \
             Install it with `apt-get install postmark` (or run `bash .ci/run`)"
        )
    })
}

/// A scratch directory on tmpfs when there is one, so the comparison is quick.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new().prefix("pm-real-").tempdir_in(shm) {
            return d;
        }
    }
    tempfile::Builder::new()
        .prefix("pm-real-")
        .tempdir()
        .unwrap()
}

/// What both reports say, as text, figure for figure (rates left out: they
/// depend on the clock).
#[derive(Debug, PartialEq, Eq)]
struct Figures {
    created: u64,
    creation_alone: u64,
    created_mixed: u64,
    read: u64,
    appended: u64,
    deleted: u64,
    deletion_alone: u64,
    deleted_mixed: u64,
    /// e.g. "1579.51 megabytes"
    data_read: String,
    data_written: String,
}

/// Parses PostMark's verbose report (the engine prints the same layout).
fn figures(report: &str) -> Figures {
    let first_number = |prefix: &str| -> u64 {
        let line = report
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix) || l.contains(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{report}"));
        let rest = line.strip_prefix(prefix).unwrap_or(line);
        rest.split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no number in `{line}`"))
    };
    // The two "Mixed with transactions" lines: created first, deleted second.
    let mixed: Vec<u64> = report
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("Mixed with transactions: "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(mixed.len(), 2, "{report}");
    // Only the lines after "Data:": the Files section has "N read (...)" lines too.
    let data_section: Vec<&str> = report
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "Data:")
        .collect();
    let data = |what: &str| -> String {
        let marker = format!(" {what} (");
        let line = data_section
            .iter()
            .find(|l| l.contains(&marker))
            .unwrap_or_else(|| panic!("no data `{what}` line in:\n{report}"));
        let figure = line.split(&marker).next().unwrap();
        // "117.88 kilobytes": a number and its unit, nothing else.
        let mut words = figure.split_whitespace();
        let (number, unit) = (words.next(), words.next());
        assert!(
            number.is_some_and(|n| n.parse::<f64>().is_ok())
                && unit.is_some_and(|u| u.ends_with("bytes"))
                && words.next().is_none(),
            "not a data figure: `{line}`"
        );
        figure.to_string()
    };
    let count = |what: &str| -> u64 {
        let line = report
            .lines()
            .map(str::trim)
            .find(|l| l.split_whitespace().nth(1) == Some(what))
            .unwrap_or_else(|| panic!("no `N {what}` line in:\n{report}"));
        line.split_whitespace().next().unwrap().parse().unwrap()
    };
    Figures {
        created: count("created"),
        creation_alone: first_number("Creation alone: "),
        created_mixed: mixed[0],
        read: count("read"),
        appended: count("appended"),
        deleted: count("deleted"),
        deletion_alone: first_number("Deletion alone: "),
        deleted_mixed: mixed[1],
        data_read: data("read"),
        data_written: data("written"),
    }
}

/// PostMark's report for `set number 20`, `set transactions 30` (Debian 1.53).
const SAMPLE: &str = "Time:
\t1 seconds total
\t1 seconds of transactions (30 per second)

Files:
\t34 created (34 per second)
\t\tCreation alone: 20 files (20 per second)
\t\tMixed with transactions: 14 files (14 per second)
\t19 read (19 per second)
\t11 appended (11 per second)
\t34 deleted (34 per second)
\t\tDeletion alone: 18 files (18 per second)
\t\tMixed with transactions: 16 files (16 per second)

Data:
\t117.88 kilobytes read (117.88 kilobytes per second)
\t221.92 kilobytes written (221.92 kilobytes per second)
";

/// The data figures come from the Data section, so a different amount read (or
/// written) makes two reports differ even when every file count agrees.
#[test]
fn parser_reads_the_data_section() {
    let f = figures(SAMPLE);
    assert_eq!(f.read, 19);
    assert_eq!(f.data_read, "117.88 kilobytes");
    assert_eq!(f.data_written, "221.92 kilobytes");
    let other_read = SAMPLE.replace("117.88 kilobytes read", "117.87 kilobytes read");
    assert_ne!(figures(&other_read), f, "a different read figure must show");
    let other_written = SAMPLE.replace("221.92 kilobytes written", "1.02 megabytes written");
    assert_ne!(figures(&other_written), f);
}

/// Runs the real postmark on `pmrc` in a fresh directory made of `dirs`.
fn run_real(pmrc: &str, dirs: &[&str]) -> (String, f64) {
    let work = scratch();
    for d in dirs {
        std::fs::create_dir_all(work.path().join(d)).unwrap();
    }
    let cfg = work.path().join("pmrc");
    std::fs::write(&cfg, pmrc).unwrap();
    let started = Instant::now();
    let out = Command::new(postmark_binary())
        .arg(&cfg)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .output()
        .expect("postmark runs");
    let seconds = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "postmark failed: {out:?}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), seconds)
}

/// Runs the engine through the `jbench` binary; returns its report and JSON.
fn run_engine(pmrc: &str) -> (String, Value, f64) {
    let work = scratch();
    let cfg = work.path().join("pmrc");
    std::fs::write(&cfg, pmrc).unwrap();
    let dir = work.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_jbench"))
        .args(["workload", "postmark", "--json", "--pmrc"])
        .arg(&cfg)
        .arg("--dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("jbench runs");
    let seconds = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "jbench failed: {stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "the engine left files behind: {left:?}");
    (stderr, json, seconds)
}

fn compare(name: &str, pmrc: &str, dirs: &[&str]) {
    let (real, _) = run_real(pmrc, dirs);
    let (ours, json, _) = run_engine(pmrc);
    let expected = figures(&real);
    let got = figures(&ours);
    assert_eq!(got, expected, "{name}: engine vs postmark\n{pmrc}");
    // The JSON carries the same counts.
    let j = |k: &str| json[k].as_u64().unwrap_or_else(|| panic!("{k} in {json}"));
    assert_eq!(j("created"), expected.created, "{name}");
    assert_eq!(j("creation_alone"), expected.creation_alone, "{name}");
    assert_eq!(j("read"), expected.read, "{name}");
    assert_eq!(j("appended"), expected.appended, "{name}");
    assert_eq!(j("deleted"), expected.deleted, "{name}");
    assert_eq!(j("deletion_alone"), expected.deletion_alone, "{name}");
    // The exact byte totals agree with PostMark's rounded float figures.
    for (key, figure) in [
        ("bytes_read", &expected.data_read),
        ("bytes_written", &expected.data_written),
    ] {
        let (want, unit) = in_bytes(figure);
        let got = j(key) as f64;
        // Two decimals of the unit, plus what PostMark's float sums lose.
        let slack = unit * 0.005 + want * 2e-3;
        assert!(
            (got - want).abs() <= slack,
            "{name}: {key} {got} vs postmark's {figure}"
        );
    }
    assert!(json["seconds"].as_f64().unwrap() > 0.0, "{name}");
}

/// "117.88 kilobytes" as bytes, with the unit's size.
fn in_bytes(figure: &str) -> (f64, f64) {
    let mut words = figure.split_whitespace();
    let n: f64 = words.next().unwrap().parse().unwrap();
    let unit = match words.next().unwrap() {
        "megabytes" => 1024.0 * 1024.0,
        "kilobytes" => 1024.0,
        _ => 1.0,
    };
    (n * unit, unit)
}

fn pmrc(lines: &[&str]) -> String {
    let mut s = lines.join("\n");
    s.push_str("\nrun\nquit\n");
    s
}

/// The study's three size ranges, with fewer files and transactions where the
/// study's would take seconds.
#[test]
fn study_size_ranges_match_postmark() {
    if !common::need_program("study_size_ranges_match_postmark", "postmark", "postmark") {
        return;
    }
    let cases = [
        (
            "small and medium",
            "set size 1000 100000",
            "set number 2000",
            "set transactions 5000",
        ),
        (
            "very small",
            "set size 1 1000",
            "set number 10000",
            "set transactions 20000",
        ),
        (
            "medium and larger",
            "set size 1000 300000",
            "set number 1000",
            "set transactions 3000",
        ),
    ];
    for (name, size, number, tx) in cases {
        compare(name, &pmrc(&[size, number, tx]), &[]);
    }
}

/// Subdirectories, other seeds, biases, raw I/O, block sizes, fixed sizes.
#[test]
fn variations_match_postmark() {
    if !common::need_program("variations_match_postmark", "postmark", "postmark") {
        return;
    }
    let cases: [(&str, &[&str]); 8] = [
        ("defaults", &[]),
        (
            "subdirectories",
            &[
                "set subdirectories 7",
                "set number 800",
                "set transactions 3000",
            ],
        ),
        (
            "seed 7",
            &["set seed 7", "set number 300", "set transactions 4000"],
        ),
        (
            "seed 123456",
            &[
                "set seed 123456",
                "set size 10 50000",
                "set transactions 2000",
            ],
        ),
        (
            "read-heavy, create-heavy",
            &[
                "set bias read 9",
                "set bias create 8",
                "set number 200",
                "set transactions 3000",
            ],
        ),
        (
            "append-only, delete-heavy",
            &[
                "set bias read 0",
                "set bias create 3",
                "set number 2000",
                "set transactions 2500",
            ],
        ),
        (
            "no create/delete, raw I/O, odd blocks",
            &[
                "set bias create -1",
                "set buffering false",
                "set read 3000",
                "set write 5000",
                "set size 100 20000",
                "set transactions 3000",
            ],
        ),
        (
            "fixed size, subdirectories 1",
            &["set size 4096", "set subdirectories 1", "set seed 99"],
        ),
    ];
    for (name, lines) in cases {
        compare(name, &pmrc(lines), &[]);
    }
}

/// Weighted locations draw from the stream too.
#[test]
fn weighted_locations_match_postmark() {
    if !common::need_program("weighted_locations_match_postmark", "postmark", "postmark") {
        return;
    }
    let text = pmrc(&[
        "set location a 2",
        "set location +b",
        "set location +c 3",
        "set subdirectories 3",
        "set number 600",
        "set transactions 2000",
    ]);
    // PostMark needs its locations to exist; the engine makes missing ones.
    compare("locations", &text, &["a", "b", "c"]);
}

/// Both stop early and print no report when every file is gone.
#[test]
fn out_of_files_matches_postmark() {
    if !common::need_program("out_of_files_matches_postmark", "postmark", "postmark") {
        return;
    }
    let text = pmrc(&["set bias create 0", "set number 50", "set transactions 200"]);
    let (real, _) = run_real(&text, &[]);
    assert!(real.contains("out of files!"), "{real}");
    assert!(!real.contains("Time:"), "{real}");
    let (ours, json, _) = run_engine(&text);
    assert!(ours.contains("out of files!"), "{ours}");
    assert!(!ours.contains("Time:"), "{ours}");
    assert_eq!(json["out_of_files"], Value::Bool(true));
    assert_eq!(json["transactions"], 50);
}

/// Transaction rates of both on tmpfs, for the record:
/// `cargo test --release -- --ignored postmark --nocapture`.
#[test]
#[ignore]
fn postmark_rates_on_tmpfs() {
    assert!(Path::new("/dev/shm").is_dir(), "needs /dev/shm (tmpfs)");
    let configs = [
        (
            "1000..100000 / 2000 / 50000",
            "set size 1000 100000\nset number 2000\nset transactions 50000",
        ),
        (
            "1..1000 / 30000 / 50000",
            "set size 1 1000\nset number 30000\nset transactions 50000",
        ),
        (
            "1..1000 / 2000 / 500000",
            "set size 1 1000\nset number 2000\nset transactions 500000",
        ),
    ];
    for (name, body) in configs {
        let text = format!("{body}\nrun\nquit\n");
        let (real, real_s) = run_real(&text, &[]);
        let (ours, json, ours_s) = run_engine(&text);
        assert_eq!(figures(&ours), figures(&real), "{name}");
        let tx_line = |r: &str| {
            r.lines()
                .find(|l| l.contains("seconds of transactions"))
                .unwrap()
                .trim()
                .to_string()
        };
        let precise =
            json["transactions"].as_f64().unwrap() / json["transaction_seconds"].as_f64().unwrap();
        println!("{name}:");
        println!("  postmark: {} ; process {real_s:.2} s", tx_line(&real));
        println!(
            "  jbench:   {} ; precise {precise:.0} transactions/s ; process {ours_s:.2} s",
            tx_line(&ours)
        );
    }
}
