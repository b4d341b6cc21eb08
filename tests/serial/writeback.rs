//! `[writeback]`: the kernel's writeback settings pinned while a run lasts and put back
//! after it — when it ends, when Ctrl-C stops it, and by `jbench cleanup` after a
//! SIGKILL — and the sync that restarts the writeback clock before every workload.
//! Alone on the machine: the settings are the whole host's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::*;

fn clock() -> (u64, u64) {
    (
        vm("dirty_writeback_centisecs"),
        vm("dirty_expire_centisecs"),
    )
}

/// Settings no host has by default, so seeing them proves the pin.
const PINNED: (u64, u64) = (370, 1130);

/// The host's settings now, which must differ from the test's: otherwise putting them
/// back could not be told from leaving them pinned.
fn host_clock() -> (u64, u64) {
    let host = clock();
    assert_ne!(
        host, PINNED,
        "the host already has the test's settings (a run left them pinned?)"
    );
    host
}

/// A one-configuration run on a host image whose command workload is `run`.
fn spec(tmp: &Path, run: &str, table: &str) -> std::path::PathBuf {
    let body = tiny_spec(tmp, r#""internal""#, 1, "");
    let at = body.find("[[workload]]").unwrap();
    let body = format!(
        "{}[writeback]\n{table}\n\n[[workload]]\nkind = \"command\"\nname = \"c\"\nrun = \"{run}\"\nshell = true\n",
        &body[..at]
    );
    write_spec(tmp, "wb", &body)
}

const PIN: &str = "interval = \"3.7s\"\nexpire = \"11.3s\"";

#[test]
fn a_run_pins_the_writeback_settings_records_them_and_puts_the_hosts_back() {
    let _alone = crate::alone();
    require!(root);
    let host = host_clock();
    let tmp = scratch("writeback-pin-");
    let seen = tmp.path().join("seen");
    let run = format!(
        "cat /proc/sys/vm/dirty_writeback_centisecs /proc/sys/vm/dirty_expire_centisecs > {}",
        seen.display()
    );
    let results = tmp.path().join("results");
    run_ok(
        jbench()
            .arg("run")
            .arg(spec(tmp.path(), &run, PIN))
            .arg("--results")
            .arg(&results),
    );
    let during = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(
        during,
        format!("{}\n{}\n", PINNED.0, PINNED.1),
        "what the workload saw"
    );
    assert_eq!(clock(), host, "the host's settings are back after the run");
    let rec = &records(&results)[0];
    let w = &rec["writeback"];
    assert_eq!(w["dirty_writeback_centisecs"], PINNED.0, "{rec}");
    assert_eq!(w["dirty_expire_centisecs"], PINNED.1, "{rec}");
    assert_eq!(w["pinned"], true, "{rec}");
    assert_eq!(w["synced_at_start"], true, "{rec}");
    assert!(w["sync_seconds"].as_f64().unwrap() >= 0.0, "{rec}");
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.join("env.json")).unwrap()).unwrap();
    assert_eq!(
        env["writeback"]["dirty_writeback_centisecs"], PINNED.0,
        "env.json holds the settings the trials ran with: {env}"
    );
    let stored = std::fs::read_to_string(results.join("spec.toml")).unwrap();
    assert!(stored.contains("interval = \"3.7s\""), "{stored}");
    assert_no_leaks(tmp.path());

    // Without the table nothing is pinned and the record says the host's settings.
    let tmp = scratch("writeback-host-");
    let results = tmp.path().join("results");
    run_ok(
        jbench()
            .arg("run")
            .arg(spec(tmp.path(), "true", "sync_at_start = false"))
            .arg("--results")
            .arg(&results),
    );
    let w = &records(&results)[0]["writeback"];
    assert_eq!(w["pinned"], false);
    assert_eq!(w["synced_at_start"], false);
    assert!(w.get("sync_seconds").is_none(), "{w}");
    assert_eq!(w["dirty_writeback_centisecs"], host.0);
    assert_no_leaks(tmp.path());
}

/// Starts a run whose workload sleeps in the trial's file system, and waits until the
/// settings are pinned and the workload runs.
fn start_pinned_run(tmp: &Path) -> std::process::Child {
    let run = format!(
        "echo $$ > {} && exec sleep 120",
        tmp.join("sleeper").display()
    );
    let child = jbench()
        .arg("run")
        .arg(spec(tmp, &run, PIN))
        .arg("--results")
        .arg(tmp.join("results"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while clock() != PINNED || !tmp.join("sleeper").exists() {
        assert!(
            Instant::now() < deadline,
            "the run never pinned the settings"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn ctrl_c_puts_the_hosts_writeback_settings_back() {
    let _alone = crate::alone();
    require!(root);
    let host = host_clock();
    let tmp = scratch("writeback-sigint-");
    let child = start_pinned_run(tmp.path());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(clock(), host, "restored after Ctrl-C");
    assert!(
        !std::fs::read_dir("/run/jbench")
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("writeback-")),
        "no restore file is left"
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn cleanup_puts_back_what_a_killed_run_pinned() {
    let _alone = crate::alone();
    require!(root);
    let host = host_clock();
    let tmp = scratch("writeback-sigkill-");
    let mut child = start_pinned_run(tmp.path());
    child.kill().unwrap(); // SIGKILL: no chance to restore
    child.wait().unwrap();
    // The workload outlives a SIGKILLed jbench (it runs in its own process group) and
    // keeps the trial's file system busy: cleanup kills it before it unmounts.
    let sleeper: i32 = std::fs::read_to_string(tmp.path().join("sleeper"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Path::new(&format!("/proc/{sleeper}")).exists());
    assert_eq!(clock(), PINNED, "a killed run cannot restore them itself");
    let out = run_ok(jbench().arg("cleanup").arg("--work-dir").arg(tmp.path()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("writeback settings"), "{stdout}");
    assert!(
        stdout.contains(&format!("kill process {sleeper} (sleep)")),
        "{stdout}"
    );
    assert!(
        !Path::new(&format!("/proc/{sleeper}")).exists() || {
            let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
            stat.contains(") Z")
        }
    );
    assert_eq!(clock(), host, "restored by cleanup");
    assert_no_leaks(tmp.path());
}

/// Sectors written to block device `dev` (/dev/loopN) so far.
fn sectors_written(dev: &str) -> u64 {
    let name = dev.trim_start_matches("/dev/");
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(6).unwrap().parse().unwrap()
}

#[test]
fn the_sync_at_start_writes_back_what_is_dirty() {
    let _alone = crate::alone();
    require!(root);
    let tmp = scratch("writeback-sync-");
    let mine = FakeDisk::new(tmp.path(), "mine.img", 128);
    let theirs = FakeDisk::new(tmp.path(), "theirs.img", 128);
    let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
    let mount = |disk: &FakeDisk, name: &str| {
        let mnt = tmp.path().join(name);
        std::fs::create_dir(&mnt).unwrap();
        ok(Command::new("mkfs.ext4").args(["-q", "-F", &disk.dev]));
        ok(Command::new("mount").arg(&disk.dev).arg(&mnt));
        mnt
    };
    let (m1, m2) = (mount(&mine, "mine"), mount(&theirs, "theirs"));
    let dirty = |m: &std::path::Path| std::fs::write(m.join("dirty"), vec![7u8; 8 << 20]).unwrap();
    // A trial beside others syncs its own file systems only (`syncfs`).
    dirty(&m1);
    dirty(&m2);
    let (b1, b2) = (sectors_written(&mine.dev), sectors_written(&theirs.dev));
    // The control: left alone, 8 MiB of fresh pages wait for the flusher's clock
    // (30 s of age by default), so hardly any of it is written this soon.
    std::thread::sleep(Duration::from_millis(200));
    let idle = sectors_written(&mine.dev) - b1;
    jbench::rig::writeback::restart_clocks(Some(&[m1.as_path()]));
    let own = sectors_written(&mine.dev) - b1;
    let others = sectors_written(&theirs.dev) - b2;
    // Alone, the whole host's (`sync`).
    jbench::rig::writeback::restart_clocks(None);
    let host = sectors_written(&theirs.dev) - b2;
    for m in [&m1, &m2] {
        ok(Command::new("umount").arg(m));
    }
    assert!(idle < 8192, "{idle} sectors written without the sync");
    assert!(own >= 16384, "syncfs wrote {own} sectors; 8 MiB is 16384");
    assert!(
        others < 8192,
        "syncfs of one file system wrote {others} sectors of another"
    );
    assert!(
        host >= 16384,
        "the sync wrote {host} sectors; 8 MiB is 16384"
    );
}

#[test]
fn a_second_run_may_share_the_pin_but_not_pin_other_values() {
    let _alone = crate::alone();
    require!(root);
    let host = host_clock();
    let tmp = scratch("writeback-shared-");
    let first = start_pinned_run(tmp.path());

    let other = scratch("writeback-other-");
    let out = jbench()
        .arg("run")
        .arg(spec(other.path(), "true", "interval = \"4s\""))
        .arg("--results")
        .arg(other.path().join("results"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "other pins were accepted: {stderr}");
    assert!(
        stderr.contains(&format!("jbench {} has pinned", first.id())),
        "{stderr}"
    );
    assert_eq!(clock(), PINNED, "the refused run changed nothing");

    let same = scratch("writeback-same-");
    run_ok(
        jbench()
            .arg("run")
            .arg(spec(same.path(), "true", PIN))
            .arg("--results")
            .arg(same.path().join("results")),
    );
    let w = &records(&same.path().join("results"))[0]["writeback"];
    assert_eq!(w["dirty_writeback_centisecs"], PINNED.0, "{w}");
    assert_eq!(clock(), PINNED, "the first run still holds its pin");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    first.wait_with_output().unwrap();
    assert_eq!(clock(), host, "the last one out put the host's back");
    assert_no_leaks(tmp.path());
    assert_no_leaks(other.path());
    assert_no_leaks(same.path());
}
