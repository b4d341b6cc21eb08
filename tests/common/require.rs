//! The one rule for tests that cannot run everywhere: outside CI a test whose needs
//! (root, a tool, a kernel feature) are not met skips, saying why on stderr; under CI
//! (`CI` set, as CI services do) it fails, so a suite cannot pass by not running.
//! Shared by the integration tests (through `common`) and the unit tests (through a
//! `#[path]` module in the library).

#![allow(dead_code)]

use std::path::Path;

/// The prefix `.ci/run` counts: every skip prints one line starting with it.
pub const SKIPPED: &str = "SKIPPED";

/// Whether `CI` holds a value that means "this is CI": anything but unset, empty,
/// `0` or `false`.
pub fn ci_value_means_ci(value: Option<&std::ffi::OsStr>) -> bool {
    match value.map(|v| v.to_string_lossy().trim().to_ascii_lowercase()) {
        None => false,
        Some(v) => !(v.is_empty() || v == "0" || v == "false"),
    }
}

/// Whether the tests run under CI.
pub fn under_ci() -> bool {
    ci_value_means_ci(std::env::var_os("CI").as_deref())
}

/// What a test whose needs are (not) met does.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// The line to print: `SKIPPED <test>: <reason>`.
    Skip(String),
    /// The panic message.
    Fail(String),
}

/// The rule itself, with the CI decision given so both sides can be tested.
pub fn verdict(ci: bool, test: &str, condition: bool, reason: &str) -> Verdict {
    if condition {
        Verdict::Run
    } else if ci {
        Verdict::Fail(format!(
            "{test} cannot run here: {reason}. CI is set, so a test that cannot run fails \
             instead of skipping (`bash .ci/run` as root installs and loads what the tests need)"
        ))
    } else {
        Verdict::Skip(format!("{SKIPPED} {test}: {reason}"))
    }
}

/// True when `condition` holds. Otherwise, under CI, panics naming the test and the
/// reason; elsewhere prints `SKIPPED <test>: <reason>` and returns false. The line
/// goes straight to stderr, past the test harness's capture, so a plain `cargo test`
/// shows every skip and `.ci/run` can count them.
pub fn require(test: &str, condition: bool, reason: &str) -> bool {
    match verdict(under_ci(), test, condition, reason) {
        Verdict::Run => true,
        Verdict::Skip(line) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{line}");
            false
        }
        Verdict::Fail(message) => panic!("{message}"),
    }
}

/// Whether `program` is on PATH or in /sbin, /usr/sbin (where mkfs tools live).
pub fn have_program(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
        .unwrap_or(false)
        || ["/sbin", "/usr/sbin"]
            .iter()
            .any(|p| Path::new(p).join(program).is_file())
}

/// Requires `program`, installed by Debian's `package`.
pub fn need_program(test: &str, program: &str, package: &str) -> bool {
    require(
        test,
        have_program(program),
        &format!("`{program}` is not installed (apt-get install {package})"),
    )
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Root and loop devices: what every test that provisions a rig needs.
pub fn need_root(test: &str) -> bool {
    require(test, is_root(), "needs root (loop devices, mkfs, mount)")
        && require(
            test,
            Path::new("/dev/loop-control").exists(),
            "needs loop devices (/dev/loop-control is missing: modprobe loop)",
        )
}

/// zram's control files (the module loaded with hot_add).
pub fn need_zram(test: &str) -> bool {
    require(
        test,
        Path::new("/sys/class/zram-control/hot_add").exists(),
        "needs zram (/sys/class/zram-control is missing: modprobe zram num_devices=0)",
    )
}

/// /dev/fuse, for the device daemon of emulated disks.
pub fn need_fuse(test: &str) -> bool {
    require(
        test,
        Path::new("/dev/fuse").exists(),
        "needs FUSE for emulated disks (/dev/fuse is missing: modprobe fuse)",
    )
}

/// mkfs.xfs and xfs_info.
/// Debian's SQLite: the `sqlite3` shell and python3's sqlite3 module (libsqlite3).
pub fn need_sqlite(test: &str) -> bool {
    need_program(test, "sqlite3", "sqlite3")
        && require(
            test,
            std::process::Command::new("/usr/bin/python3")
                .args(["-c", "import sqlite3"])
                .output()
                .is_ok_and(|o| o.status.success()),
            "/usr/bin/python3 cannot import sqlite3 (apt-get install python3)",
        )
}

pub fn need_xfs(test: &str) -> bool {
    need_program(test, "mkfs.xfs", "xfsprogs") && need_program(test, "xfs_info", "xfsprogs")
}
