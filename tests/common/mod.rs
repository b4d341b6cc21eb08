//! Helpers shared by the integration tests. Tests that need root, a tool or a kernel
//! feature call the `need_*` helpers of [`require`]: outside CI they skip, saying so;
//! under CI they fail.

#![allow(dead_code)]

pub mod crash;
pub mod require;
pub mod slurm;
#[allow(unused_imports)]
pub use crash::*;
pub use require::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Skips (outside CI) or fails (under CI) the calling test unless every need holds, and
/// says which test and why: `require!(root, fuse)`. The needs are `root`, `fuse`,
/// `zram`, `xfs` and `memcg` ([`need`]); a test that needs a program or anything else
/// calls [`require`] or [`need_program`] itself.
macro_rules! require {
    ($($need:ident),+ $(,)?) => {
        let here: &str = $crate::common::test_name({
            fn here() {}
            ::std::any::type_name_of_val(&here)
        });
        if !(true $(&& $crate::common::need(stringify!($need), here))+) {
            return;
        }
    };
}

/// The test's own name from the path of a function inside it
/// (`e2e::run::tiny_runs::the_test::here` -> `the_test`), for [`require!`].
pub fn test_name(path_of_inner_fn: &'static str) -> &'static str {
    let test = path_of_inner_fn.trim_end_matches("::here");
    test.rsplit("::").next().unwrap_or(test)
}

/// One need of [`require!`], by name.
pub fn need(what: &str, test: &str) -> bool {
    match what {
        "root" => need_root(test),
        "fuse" => need_fuse(test),
        "zram" => need_zram(test),
        "xfs" => need_xfs(test),
        "memcg" => need_memcg(test),
        "sqlite" => need_sqlite(test),
        "etcd" => need_program(test, "etcd", "etcd-server"),
        other => {
            panic!(
                "require!: unknown need `{other}` (root, fuse, zram, xfs, memcg, sqlite or etcd)"
            )
        }
    }
}

/// Tests that add zram devices and count them run one at a time.
pub fn zram_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The memory controller, for `memory_limit`.
pub fn need_memcg(test: &str) -> bool {
    let why = jbench::rig::memcg::check_available().err();
    require(
        test,
        why.is_none(),
        &format!(
            "needs the cgroup memory controller ({})",
            why.map(|e| format!("{e:#}")).unwrap_or_default()
        ),
    )
}

/// A scratch directory on a real disk (not tmpfs), removed on drop.
pub fn scratch(prefix: &str) -> tempfile::TempDir {
    std::fs::create_dir_all("/var/tmp/jbench-tests").unwrap();
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp/jbench-tests")
        .unwrap()
}

pub fn jbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_jbench"))
}

pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("jbench starts");
    assert!(
        out.status.success(),
        "command failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The trial records of a results directory, as JSON.
pub fn records(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Loop devices whose backing file lies under `dir`.
pub fn loops_under(dir: &Path) -> Vec<String> {
    let out = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&*dir.to_string_lossy()))
        .map(str::to_string)
        .collect()
}

/// Mount points under `dir`.
pub fn mounts_under(dir: &Path) -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|t| Path::new(t).starts_with(dir))
        })
        .map(str::to_string)
        .collect()
}

/// zram devices listed in the ledgers of session directories under `dir`.
pub fn zram_ledgers_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path().join("zram-devices")) {
                out.extend(
                    t.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(str::to_string),
                );
            }
        }
    }
    out
}

/// Live device daemons whose configuration lies under `dir`.
pub fn daemons_under(dir: &Path) -> Vec<String> {
    processes_under(dir)
        .into_iter()
        .filter(|p| p.contains("device-daemon"))
        .collect()
}

/// Live processes whose command line names a path under `dir`: device daemons, and
/// the application servers a preset starts on a rig's mount (etcd's `--data-dir`,
/// redis's `--dir`, postgres's `-D`); a zombie has no cmdline.
pub fn processes_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&*dir.to_string_lossy()) {
            out.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    out
}

pub fn assert_no_leaks(dir: &Path) {
    let loops = loops_under(dir);
    let mounts = mounts_under(dir);
    let zram = zram_ledgers_under(dir);
    let processes = processes_under(dir);
    assert!(
        loops.is_empty() && mounts.is_empty() && zram.is_empty() && processes.is_empty(),
        "leaked under {}:\nloops: {loops:#?}\nmounts: {mounts:#?}\nzram: {zram:#?}\nprocesses: {processes:#?}",
        dir.display()
    );
}

/// Writes an experiment file into `dir` and returns its path.
/// `/proc/sys/vm/<name>` now.
pub fn vm(name: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

pub fn write_spec(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, body).unwrap();
    path
}

/// A tiny experiment whose images live in `work`.
pub fn tiny_spec(work: &Path, placements: &str, reps: u32, extra: &str) -> String {
    format!(
        r#"name = "tiny"
repetitions = {reps}
seed = 7
suspect_below = "60s"
work_dir = "{}"

[filesystem]
type = "ext4"
size = "128M"
{extra}

[journal]
placement = {placements}
size = "8M"
mode = "ordered"

[[workload]]
kind = "fdtree"
name = "tiny"
dirs = 2
files = 2
blocks = 1
levels = 3
"#,
        work.display()
    )
}

pub fn sha256_of_device(dev: &str) -> String {
    let out = Command::new("sha256sum").arg(dev).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A loop device over a fresh image in `dir`, standing in for a disk; detached on drop.
pub struct FakeDisk {
    pub dev: String,
    pub image: PathBuf,
}

impl FakeDisk {
    pub fn new(dir: &Path, name: &str, size_mib: u64) -> Self {
        let image = dir.join(name);
        let f = std::fs::File::create(&image).unwrap();
        f.set_len(size_mib << 20).unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&image)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "losetup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self {
            dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            image,
        }
    }
}

impl Drop for FakeDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dev).output();
        let _ = Command::new("losetup").args(["-d", &self.dev]).output();
    }
}

/// The zram devices that exist now, sorted.
pub fn zram_devices() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .collect();
    v.sort();
    v
}

/// A 4 KiB-aligned buffer of 4 KiB, for O_DIRECT.
pub fn aligned_block() -> (Vec<u8>, usize) {
    let buf = vec![0x5au8; 8192];
    let start = buf.as_ptr().align_offset(4096);
    (buf, start)
}

/// Sends `stream` to `dev` one request at a time (queue depth 1, as the model
/// assumes) and returns how long it took.
pub fn send_qd1(dev: &std::fs::File, stream: &[jbench::emu::Request]) -> std::time::Duration {
    use jbench::emu::Kind;
    use std::os::unix::fs::FileExt;
    let (mut buf, start) = aligned_block();
    let block = &mut buf[start..start + 4096];
    let began = std::time::Instant::now();
    for r in stream {
        assert_eq!(r.len % 4096, 0);
        match r.kind {
            Kind::Read => dev.read_exact_at(block, r.offset).unwrap(),
            Kind::Write => dev.write_all_at(block, r.offset).unwrap(),
            Kind::Flush => dev.sync_data().unwrap(),
            Kind::Discard => unreachable!("no discards in these streams"),
        }
    }
    began.elapsed()
}

/// A small experiment for the hidden scripted executor (no root, no devices):
/// 2 configurations (internal, ramdisk) x 1 fdtree workload x 3 repetitions; `top` is
/// put after `repetitions` (e.g. a seed).
pub fn scripted_spec(name: &str, top: &str) -> String {
    format!(
        r#"name = "{name}"
repetitions = 3
{top}[filesystem]
size = "1G"
[journal]
placement = ["internal", "ramdisk"]
[[workload]]
kind = "fdtree"
dirs = 2
levels = 2
"#
    )
}

/// A daemon pinned to a CPU of its own with its images in memory polls, unless another
/// daemon (of a test running beside) already polls on that CPU: `read_mode` of a trial
/// record, `device floor` or the daemon's statistics, as JSON.
pub fn assert_polls_unless_another_does(read_mode: &serde_json::Value, context: &str) {
    assert!(
        read_mode["polling"] == true
            || read_mode["why_not"]
                .as_str()
                .is_some_and(|w| w.starts_with("another device daemon polls")),
        "{read_mode}: {context}"
    );
}
