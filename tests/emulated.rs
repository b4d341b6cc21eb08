//! Emulated disks end to end: the device daemon serves images through FUSE, loop
//! devices over its files carry real file systems, the models' counters see the
//! workload's requests, and a daemon that dies or hangs fails the trial without
//! hanging the machine or leaking anything.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use jbench::config::DeviceModelSpec;
use jbench::emu::daemon::DiskSpec;
use jbench::emu::host::DeviceDaemon;
use jbench::emu::writelog;
use jbench::emu::EmulationOptions;
use jbench::executor::{Executor, RigExecutor, TrialError};
use jbench::plan::Trial;
use jbench::rig::{self, EmuSetup, Workspace};
use jbench::workload::RunControl;

fn sysfs(dev: &Path, attr: &str) -> String {
    let name = dev.file_name().unwrap().to_string_lossy();
    std::fs::read_to_string(format!("/sys/block/{name}/{attr}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn fsync_spec(work: &Path, placement: &str, files: u32) -> jbench::spec::Spec {
    let text = tiny_spec(work, &format!("\"{placement}\""), 1, "").replace(
        "[[workload]]\nkind = \"fdtree\"\nname = \"tiny\"\ndirs = 2\nfiles = 2\nblocks = 1\nlevels = 3\n",
        &format!("[[workload]]\nkind = \"fsync\"\nname = \"fs\"\nfiles = {files}\nsize = \"4K\"\n"),
    );
    jbench::spec::parse(&text, "test.toml").unwrap()
}

fn write_and_fsync(dir: &Path, n: usize) {
    use std::io::Write;
    for i in 0..n {
        let mut f = std::fs::File::create(dir.join(format!("f{i}"))).unwrap();
        f.write_all(&[7u8; 4096]).unwrap();
        f.sync_all().unwrap();
    }
}

#[test]
fn a_file_system_on_an_emulated_disk_with_its_journal_on_another() {
    if !need_root("a_file_system_on_an_emulated_disk_with_its_journal_on_another") {
        return;
    }
    let tmp = scratch("emu-second-");
    let spec = fsync_spec(tmp.path(), "second-disk", 10);
    let mut config = spec.configs[0].clone();
    config.fs_model = Some(DeviceModelSpec::builtin("hdd-7200"));
    config.journal_model = Some(DeviceModelSpec::builtin("ram"));
    {
        let mut ws = Workspace::new(tmp.path()).unwrap();
        let rig = rig::provision_with(&config, &mut ws, &[], &EmuSetup::default()).unwrap();
        let daemon = rig.daemon().expect("a device daemon serves the disks");
        let names: Vec<(&str, &str)> = rig
            .layout
            .emulated_disks
            .iter()
            .map(|d| (d.name.as_str(), d.model.as_str()))
            .collect();
        assert_eq!(names, [("fs", "hdd-7200"), ("journal", "ram")]);
        // Both loop devices go through the daemon, with direct I/O and 4 KiB sectors.
        for dev in [&rig.fs_device, rig.journal_device.as_ref().unwrap()] {
            assert_eq!(sysfs(dev, "loop/dio"), "1", "{}", dev.display());
            assert_eq!(sysfs(dev, "queue/logical_block_size"), "4096");
            let backing = sysfs(dev, "loop/backing_file");
            assert!(
                backing.starts_with(&*daemon.mountpoint().to_string_lossy()),
                "{} is backed by {backing}",
                dev.display()
            );
        }
        daemon.set_timing(true).unwrap();
        write_and_fsync(&rig.mount_point, 20);
        let stats = daemon.stats().unwrap();
        assert!(stats.timing);
        let (fs, journal) = (&stats.disks[0], &stats.disks[1]);
        // ordered mode: every fsync commits a transaction on the journal disk, with a
        // flush; the data blocks go to the file-system disk first.
        assert!(journal.writes >= 20 && journal.flushes >= 20, "{journal:?}");
        assert!(fs.writes >= 20, "{fs:?}");
        assert!(fs.seek_seconds + fs.rotation_seconds > 0.0, "{fs:?}");
        assert_eq!(journal.seek_seconds, 0.0, "a RAM disk has no seeks");
        assert!(journal.below_floor, "ram is faster than the FUSE path");
        let journal_requests = journal.reads + journal.writes + journal.flushes + journal.discards;
        assert_eq!(journal.floor_bound, journal_requests, "{journal:?}");
        // The disk's flushes pay positioning: far above the floor.
        assert!(fs.floor_bound < fs.writes + fs.reads + fs.flushes, "{fs:?}");
        rig.teardown().unwrap();
    }
    assert_no_leaks(tmp.path());
}

#[test]
fn same_disk_puts_both_regions_on_one_emulated_spindle() {
    if !need_root("same_disk_puts_both_regions_on_one_emulated_spindle") {
        return;
    }
    let tmp = scratch("emu-same-");
    let spec = fsync_spec(tmp.path(), "same-disk", 10);
    let mut config = spec.configs[0].clone();
    config.fs_model = Some(DeviceModelSpec::builtin("hdd-7200"));
    {
        let mut ws = Workspace::new(tmp.path()).unwrap();
        let rig = rig::provision_with(&config, &mut ws, &[], &EmuSetup::default()).unwrap();
        assert_eq!(rig.layout.emulated_disks.len(), 1, "{:?}", rig.layout);
        let daemon = rig.daemon().unwrap();
        let file = daemon.disk_file("fs").display().to_string();
        let jdev = rig.journal_device.clone().unwrap();
        assert_eq!(sysfs(&rig.fs_device, "loop/backing_file"), file);
        assert_eq!(sysfs(&jdev, "loop/backing_file"), file);
        assert_eq!(sysfs(&jdev, "loop/offset"), config.fs_size.to_string());
        daemon.set_timing(true).unwrap();
        write_and_fsync(&rig.mount_point, 20);
        let stats = daemon.stats().unwrap();
        assert_eq!(stats.disks.len(), 1);
        let d = &stats.disks[0];
        // Journal commits (end of the image) and data (start) share the actuator:
        // seeks between them.
        assert!(d.flushes >= 20 && d.seek_seconds > 0.02, "{d:?}");
        rig.teardown().unwrap();
    }
    assert_no_leaks(tmp.path());
}

#[test]
fn the_write_log_replays_to_the_served_image_and_orders_markers_after_flushes() {
    if !need_root("the_write_log_replays_to_the_served_image_and_orders_markers_after_flushes") {
        return;
    }
    let tmp = scratch("emu-log-");
    let session = tmp.path().join("session");
    std::fs::create_dir_all(&session).unwrap();
    let image = tmp.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let log = tmp.path().join("w.log");
    let disks = [DiskSpec {
        name: "fs".into(),
        image: image.clone(),
        model: "ram".into(),
        params: Default::default(),
    }];
    {
        let daemon = DeviceDaemon::start(
            &session,
            &disks,
            &EmulationOptions::default(),
            vec![],
            Some(log.clone()),
        )
        .unwrap();
        let lo =
            jbench::rig::loopdev::LoopDevice::attach_with(&daemon.disk_file("fs"), 0, None, true)
                .unwrap();
        let out = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-b", "4096"])
            .arg(lo.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Raw writes with a flush after each, then a marker, as an engine does.
        use std::os::unix::fs::FileExt;
        let dev = std::fs::OpenOptions::new()
            .write(true)
            .open(lo.path())
            .unwrap();
        for i in 0..5u64 {
            dev.write_all_at(&[i as u8 + 1; 4096], (40 << 20) + i * 4096)
                .unwrap();
            dev.sync_all().unwrap();
            daemon.mark(&format!("after fsync {i}")).unwrap();
        }
        drop(dev);
        drop(lo);
        drop(daemon);
    }
    let (header, summary) = writelog::summarize(&log).unwrap();
    assert_eq!(header.disks[0].size, 64 << 20);
    assert!(
        summary.zero_writes > 0,
        "mkfs zeroing is logged without payload"
    );
    let labels: Vec<&str> = summary.markers.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels.len(), 5, "{labels:?}");

    // Every marker follows a flush of the disk with no write between them.
    let mut r = writelog::LogReader::open(&log).unwrap();
    let mut last_flush = None;
    let mut last_write = None;
    while let Some(rec) = r.next_record().unwrap() {
        match rec.kind {
            writelog::RecordKind::Write | writelog::RecordKind::Zero => last_write = Some(rec.seq),
            writelog::RecordKind::Flush => last_flush = Some(rec.seq),
            writelog::RecordKind::Marker => {
                assert!(
                    last_flush > last_write,
                    "marker {} without a flush after the last write",
                    rec.seq
                )
            }
            _ => {}
        }
    }

    // Replaying the whole log onto a zeroed image gives the served image, byte for byte.
    let replayed = tmp.path().join("replayed.img");
    std::fs::File::create(&replayed)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    writelog::replay(&log, &[&replayed], None).unwrap();
    assert!(
        std::fs::read(&image).unwrap() == std::fs::read(&replayed).unwrap(),
        "replayed image differs from the served one"
    );
    assert_no_leaks(tmp.path());
}

/// The daemon's pid, once a trial under `dir` has started one.
fn wait_for_daemon(dir: &Path, within: Duration) -> Option<i32> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Some(line) = daemons_under(dir).first() {
            return line.split(':').next()?.parse().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Runs one fsync trial on an emulated disk while `attack` is done to its daemon once
/// the workload is under way; the trial must fail, promptly, leaving nothing behind.
fn trial_survives(name: &str, signal: nix::sys::signal::Signal, watchdog: Duration) {
    let tmp = scratch(name);
    let mut spec = fsync_spec(tmp.path(), "second-disk", 5_000);
    spec.configs[0].fs_model = Some(DeviceModelSpec::builtin("hdd-7200"));
    spec.configs[0].journal_model = Some(DeviceModelSpec::builtin("hdd-7200"));
    spec.emulation.watchdog = watchdog;
    let dir = tmp.path().to_path_buf();
    let attacker = std::thread::spawn(move || {
        let pid = wait_for_daemon(&dir, Duration::from_secs(60)).expect("a daemon starts");
        // Let mkfs, mount and the first fsyncs happen.
        std::thread::sleep(Duration::from_secs(4));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).unwrap();
        pid
    });
    let started = Instant::now();
    let result = {
        let mut exec = RigExecutor::new(&spec, vec![]).unwrap();
        let trial = Trial {
            index: 0,
            config: 0,
            workload: 0,
            rep: 1,
        };
        exec.run_trial(&spec, &trial, &RunControl::new(), &mut |_| {})
    };
    let pid = attacker.join().unwrap();
    let took = started.elapsed();
    match result {
        Err(TrialError::Failed(f)) => {
            eprintln!("{name}: {} after {took:?}", f.error);
            assert!(
                f.error.contains("device daemon"),
                "the error names the daemon: {}",
                f.error
            );
        }
        Err(e) => panic!("expected a failed trial, got {e:?}"),
        Ok(_) => panic!("the trial succeeded although its daemon was sent {signal}"),
    }
    assert!(took < Duration::from_secs(120), "took {took:?}");
    assert_eq!(
        jbench::emu::host::process_state(pid as u32),
        "gone",
        "the daemon was reaped"
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn a_daemon_killed_mid_trial_fails_the_trial_without_a_leak() {
    if !need_root("a_daemon_killed_mid_trial_fails_the_trial_without_a_leak") {
        return;
    }
    trial_survives(
        "emu-kill-",
        nix::sys::signal::Signal::SIGKILL,
        Duration::from_secs(30),
    );
}

#[test]
fn a_stopped_daemon_is_aborted_by_the_watchdog_and_fails_the_trial() {
    if !need_root("a_stopped_daemon_is_aborted_by_the_watchdog_and_fails_the_trial") {
        return;
    }
    trial_survives(
        "emu-stop-",
        nix::sys::signal::Signal::SIGSTOP,
        Duration::from_secs(3),
    );
}
