//! Standard output closed or full, and a bug: jbench never panics at the user. A closed
//! pipe (`jbench plan ... | head -1`) ends it quietly; a full disk (`> /dev/full`) gives
//! one error line and a non-zero status; a panic gives one `internal error` line.

use crate::common;
use crate::html_fixture;

use std::fs::File;
use std::os::fd::OwnedFd;
use std::process::{Command, Output, Stdio};

use common::*;

const FULL: &str = "jbench: error: cannot write to standard output: No space left on device";
const SIGPIPE_STATUS: i32 = 141;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `cmd` with its standard output on `out`; returns what it printed on stderr.
fn with_stdout(cmd: &mut Command, out: impl Into<Stdio>) -> Output {
    cmd.stdout(out)
        .stderr(Stdio::piped())
        .output()
        .expect("jbench starts")
}

fn no_panic(what: &str, out: &Output) {
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{what} panicked: {stderr}"
    );
}

/// A pipe whose reading end is already closed: what `| head -1` leaves once head
/// has exited. Every write to it fails with EPIPE, at once and every time.
fn closed_pipe() -> OwnedFd {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    write
}

fn full() -> File {
    File::options().write(true).open("/dev/full").unwrap()
}

fn results_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    html_fixture::write_results_dir(dir.path());
    let spec = "name = \"journal-sweep\"\n[[workload]]\nkind = \"fdtree\"\nname = \"small-deep\"\n";
    std::fs::write(dir.path().join("spec.toml"), spec).unwrap();
    dir
}

#[test]
fn every_printing_command_prints_when_it_can() {
    // The commands the tests below starve of standard output work otherwise, so what
    // those tests see is the output's fault alone.
    let results = results_dir();
    for (what, mut cmd) in printing_commands(results.path()) {
        let out = with_stdout(&mut cmd, Stdio::piped());
        assert!(out.status.success(), "{what}: {}", text(&out.stderr));
        assert!(
            out.stdout.len() > 10,
            "{what} printed {:?}",
            text(&out.stdout)
        );
    }
}

/// Every command that prints: the plan of the quick preset, a report, the device
/// models, the help.
fn printing_commands(results: &std::path::Path) -> Vec<(String, Command)> {
    let mut v = Vec::new();
    let mut plan = jbench();
    plan.args([
        "plan",
        concat!(env!("CARGO_MANIFEST_DIR"), "/presets/quick.toml"),
    ]);
    v.push(("plan presets/quick.toml".to_string(), plan));
    for format in ["table", "csv", "json", "markdown"] {
        let mut report = jbench();
        report.args(["report", "--format", format]).arg(results);
        v.push((format!("report --format {format}"), report));
    }
    let mut models = jbench();
    models.args(["device", "models"]);
    v.push(("device models".to_string(), models));
    let mut help = jbench();
    help.arg("--help");
    v.push(("--help".to_string(), help));
    let mut version = jbench();
    version.arg("--version");
    v.push(("--version".to_string(), version));
    v
}

#[test]
fn a_closed_pipe_ends_jbench_quietly() {
    let results = results_dir();
    for (what, mut cmd) in printing_commands(results.path()) {
        let out = with_stdout(&mut cmd, closed_pipe());
        no_panic(&what, &out);
        assert_eq!(
            text(&out.stderr),
            "",
            "{what}: nothing on stderr for a closed pipe"
        );
        assert_eq!(
            out.status.code(),
            Some(SIGPIPE_STATUS),
            "{what}: the status of a process ended by SIGPIPE"
        );
    }
}

#[test]
fn a_full_stdout_gives_one_error_line_and_a_failure() {
    let results = results_dir();
    for (what, mut cmd) in printing_commands(results.path()) {
        let out = with_stdout(&mut cmd, full());
        no_panic(&what, &out);
        assert_eq!(text(&out.stderr), format!("{FULL}\n"), "{what}");
        assert_eq!(out.status.code(), Some(1), "{what}");
    }
}

#[test]
fn a_workload_run_from_the_command_line_reports_a_full_stdout_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = with_stdout(
        jbench()
            .args(["workload", "fsync", "-n", "3", "-s", "4096", "--dir"])
            .arg(dir.path())
            .env_remove("RUST_BACKTRACE"),
        full(),
    );
    no_panic("workload fsync", &out);
    assert_eq!(text(&out.stderr), format!("{FULL}\n"));
    assert!(!out.status.success());
    let out = with_stdout(
        jbench()
            .args(["workload", "fsync", "-n", "3", "-s", "4096", "--dir"])
            .arg(dir.path()),
        closed_pipe(),
    );
    assert_eq!(text(&out.stderr), "", "a closed pipe: quiet");
}

#[test]
fn head_dash_1_of_a_plan_prints_one_line_and_no_error() {
    // The real thing, through a shell: whether jbench has written everything before
    // head exits or not, nothing but the first line appears.
    let bin = env!("CARGO_BIN_EXE_jbench");
    let preset = concat!(env!("CARGO_MANIFEST_DIR"), "/presets/quick.toml");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("'{bin}' plan '{preset}' | head -1"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        text(&out.stdout).lines().count(),
        1,
        "{}",
        text(&out.stdout)
    );
    assert_eq!(text(&out.stderr), "", "nothing on stderr");
}

#[test]
fn a_bug_shows_as_one_internal_error_line_without_a_backtrace() {
    let out = jbench()
        .args(["selftest", "panic"])
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("jbench: internal error: a panic on purpose at src/main.rs:")
            && stderr.ends_with("; please report it\n"),
        "{stderr}"
    );
    assert!(!out.status.success());

    // Asked for, the backtrace follows the line.
    let out = jbench()
        .args(["selftest", "panic"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("jbench: internal error: "), "{stderr}");
    assert!(stderr.lines().count() > 1, "a backtrace: {stderr}");
}

/// Ctrl-C during `jbench workload` ends it as a shell expects (status 130), after the
/// engine removed what it made: the directory is left as it was found.
#[test]
fn an_interrupted_workload_exits_130_and_leaves_the_directory_as_it_was() {
    let tmp = scratch("cli-int-");
    let dir = tmp.path();
    std::fs::write(dir.join("keep"), b"not jbench's").unwrap();
    let child = jbench()
        .args(["workload", "fsync", "-n", "1000000", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jbench starts");
    // Wait until the run has made its tree, so the interrupt lands mid-phase.
    let started = std::time::Instant::now();
    while std::fs::read_dir(dir).unwrap().count() < 2 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the workload never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    no_panic("an interrupted workload", &out);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["keep".to_string()], "{stderr}");
}

/// Without the repository at hand, an installed binary gives its shell completions,
/// its man pages, its presets and the pointer to the experiment format; the licenses
/// Cargo.toml declares are in the tree.
#[test]
fn an_installed_binary_explains_itself() {
    for shell in ["bash", "zsh", "fish"] {
        let out = jbench().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        for word in ["jbench", "qualify", "fit-to", "preset"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let out = jbench().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );

    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man1");
    let out = jbench().arg("man").arg(&man).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    for page in [
        "jbench.1",
        "jbench-run.1",
        "jbench-device-qualify.1",
        "jbench-preset-show.1",
    ] {
        let roff =
            std::fs::read_to_string(man.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(
            roff.starts_with(".ie") || roff.contains(".TH"),
            "{page} is not roff: {roff:.200}"
        );
    }
    assert!(
        !man.join("jbench-device-daemon.1").exists(),
        "the hidden daemon has no page"
    );
    // Readable by man itself (man-db; CI installs it).
    match Command::new("man")
        .arg("-l")
        .arg(man.join("jbench-device-qualify.1"))
        .env("MANWIDTH", "100")
        .output()
    {
        Ok(out) => {
            let page = text(&out.stdout);
            assert!(out.status.success(), "man -l: {}", text(&out.stderr));
            assert!(
                page.contains("--fit-to") && page.contains("SYNOPSIS"),
                "{page}"
            );
        }
        Err(e) => {
            let why = format!("man is not installed ({e})");
            assert!(!require("an_installed_binary_explains_itself", false, &why));
        }
    }

    let out = jbench().args(["preset", "list"]).output().unwrap();
    assert!(out.status.success());
    let list = text(&out.stdout);
    for name in ["quick", "tradeoff", "own-hardware", "study3-hdd"] {
        assert!(
            list.lines().any(|l| l.starts_with(name)),
            "{name} not listed: {list}"
        );
    }
    assert!(
        list.contains("where should the ext4 journal live"),
        "{list}"
    );
    let out = jbench().args(["preset", "show", "quick"]).output().unwrap();
    let file = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/quick.toml"))
        .unwrap();
    assert_eq!(text(&out.stdout), file, "the built-in quick is the file");
    let out = jbench().args(["preset", "show", "quik"]).output().unwrap();
    // A name that is no preset is a usage error, worded as every command words it.
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(
        e.contains("no preset `quik`; did you mean `quick`?") && e.contains("quick, quick-host"),
        "{e}"
    );

    let help = text(&jbench().arg("--help").output().unwrap().stdout);
    assert!(
        help.contains("docs/experiment.md") && help.contains("jbench preset show"),
        "{help}"
    );

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mit = std::fs::read_to_string(root.join("LICENSE-MIT")).unwrap();
    assert!(mit.contains("Permission is hereby granted"), "{mit}");
    let apache = std::fs::read_to_string(root.join("LICENSE-APACHE")).unwrap();
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0"));
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("license = \"MIT OR Apache-2.0\""));
}
