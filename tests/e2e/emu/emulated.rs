//! Emulated disks end to end: the device daemon serves images through FUSE, loop
//! devices over its files carry real file systems, the models' counters see the
//! workload's requests, and a daemon that dies or hangs fails the trial without
//! hanging the machine or leaking anything.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use jbench::emu::daemon::DiskSpec;
use jbench::emu::writelog;
use jbench::emu::EmulationOptions;
use jbench::experiment::config::DeviceModelSpec;
use jbench::experiment::plan::Trial;
use jbench::rig::emulated::DeviceDaemon;
use jbench::rig::{self, EmuSetup, Workspace};
use jbench::run::executor::{Executor, RigExecutor, TrialError};
use jbench::workload::RunControl;

fn sysfs(dev: &Path, attr: &str) -> String {
    let name = dev.file_name().unwrap().to_string_lossy();
    std::fs::read_to_string(format!("/sys/block/{name}/{attr}"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn fsync_spec(work: &Path, placement: &str, files: u32) -> jbench::experiment::spec::Spec {
    let text = tiny_spec(work, &format!("\"{placement}\""), 1, "").replace(
        "[[workload]]\nkind = \"fdtree\"\nname = \"tiny\"\ndirs = 2\nfiles = 2\nblocks = 1\nlevels = 3\n",
        &format!("[[workload]]\nkind = \"fsync\"\nname = \"fs\"\nfiles = {files}\nsize = \"4K\"\n"),
    );
    jbench::experiment::spec::parse(&text, "test.toml").unwrap()
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
    require!(root, fuse);
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
    require!(root, fuse);
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
    require!(root, fuse);
    let tmp = scratch("emu-log-");
    let session = jbench::rig::session::SessionDir::create(tmp.path()).unwrap();
    let image = tmp.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let log = tmp.path().join("w.log");
    // Timing stays off, so the hdd costs no time; it is there for the header.
    let disks = [DiskSpec {
        name: "fs".into(),
        image: image.clone(),
        model: "hdd-7200".into(),
        params: Default::default(),
        image_id: None,
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
        let lo = daemon.attach_disk("fs", 0, None).unwrap();
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
    assert_eq!(header.version, writelog::VERSION);
    assert_eq!(header.disks[0].size, 64 << 20);
    assert_eq!(header.disks[0].volatile_cache, Some(true));
    assert_eq!(header.disks[0].honor_flush, Some(true));
    assert!(
        summary.zero_writes > 0,
        "mkfs zeroing is logged without payload"
    );
    let labels: Vec<&str> = summary.markers.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels.len(), 5, "{labels:?}");

    // Every marker follows a flush of the disk with no write between them, and that
    // flush was issued after the last write was acknowledged: it covers it.
    // Every request is issued before it is acknowledged, in acknowledgement order.
    let mut r = writelog::LogReader::open(&log).unwrap();
    assert_eq!(r.version(), writelog::VERSION);
    let mut last_flush = None;
    let mut last_write = None;
    let mut last_acked = None;
    while let Some(rec) = r.next_record().unwrap() {
        let (issued, acked) = (rec.issued.unwrap(), rec.acked.unwrap());
        assert!(
            issued < acked,
            "record {}: issued {issued}, acked {acked}",
            rec.seq
        );
        assert!(
            last_acked < Some(acked),
            "record {}: acked {acked} after {last_acked:?}",
            rec.seq
        );
        last_acked = Some(acked);
        match rec.kind {
            writelog::RecordKind::Write | writelog::RecordKind::Zero => {
                last_write = Some((rec.seq, acked))
            }
            writelog::RecordKind::Flush => last_flush = Some((rec.seq, issued)),
            writelog::RecordKind::Marker => {
                let (Some((w_seq, w_acked)), Some((f_seq, f_issued))) = (last_write, last_flush)
                else {
                    panic!("marker {} without a write and a flush before it", rec.seq)
                };
                assert!(
                    f_seq > w_seq,
                    "marker {} without a flush after the last write",
                    rec.seq
                );
                assert!(
                    w_acked < f_issued,
                    "marker {}: flush {f_seq} (issued {f_issued}) does not cover write {w_seq} (acked {w_acked})",
                    rec.seq
                );
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
            recording: false,
        };
        exec.run_trial(&spec, &trial, &RunControl::new())
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
        jbench::rig::emulated::process_state(pid as u32),
        "gone",
        "the daemon was reaped"
    );
    assert_no_leaks(tmp.path());
}

#[test]
fn a_daemon_killed_mid_trial_fails_the_trial_without_a_leak() {
    require!(root, fuse);
    trial_survives(
        "emu-kill-",
        nix::sys::signal::Signal::SIGKILL,
        Duration::from_secs(30),
    );
}

#[test]
fn a_stopped_daemon_is_aborted_by_the_watchdog_and_fails_the_trial() {
    require!(root, fuse);
    trial_survives(
        "emu-stop-",
        nix::sys::signal::Signal::SIGSTOP,
        Duration::from_secs(3),
    );
}

// ---- timing: the daemon answers no sooner than its model says ----

/// Size of the emulated disks the timing tests use; the model's geometry spans it.
const TIMED_DISK: u64 = 256 << 20;

/// An `hdd-7200` disk served by a daemon, with a direct-I/O loop device over it and
/// timing on (a fresh model). Fields drop in order: loop device, daemon, directory.
struct TimedHdd {
    lo: jbench::rig::loopdev::LoopDevice,
    daemon: DeviceDaemon,
    _session: jbench::rig::session::SessionDir,
    tmp: tempfile::TempDir,
}

impl TimedHdd {
    fn start(prefix: &str) -> Self {
        let tmp = scratch(prefix);
        let session = jbench::rig::session::SessionDir::create(tmp.path()).unwrap();
        let image = tmp.path().join("hdd.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(TIMED_DISK)
            .unwrap();
        let disks = [DiskSpec {
            name: "hdd".into(),
            image,
            model: "hdd-7200".into(),
            params: Default::default(),
            image_id: None,
        }];
        let daemon =
            DeviceDaemon::start(&session, &disks, &EmulationOptions::default(), vec![], None)
                .unwrap();
        let lo = daemon.attach_disk("hdd", 0, None).unwrap();
        // Let udev's probe of the new device pass before the model starts counting.
        let _ = std::process::Command::new("udevadm").arg("settle").status();
        daemon.set_timing(true).unwrap();
        Self {
            lo,
            daemon,
            _session: session,
            tmp,
        }
    }

    fn open(&self) -> std::fs::File {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_DIRECT)
            .open(self.lo.path())
            .unwrap()
    }

    fn finish(self) {
        let dir = self.tmp.path().to_path_buf();
        drop(self.lo);
        drop(self.daemon);
        assert_no_leaks(&dir);
    }
}

/// What a fresh `hdd-7200` model of the timed disk answers for each request of
/// `stream`, each sent when the previous one completes: the daemon's own model for
/// the same stream, without the host's cost (which only adds to it).
fn model_times(stream: &[jbench::emu::Request]) -> Vec<Duration> {
    let mut params = toml::Table::new();
    params.insert(
        "capacity_bytes".into(),
        toml::Value::Integer(TIMED_DISK as i64),
    );
    let mut model = jbench::emu::model_by_name("hdd-7200", Some(&params)).unwrap();
    let mut now = Duration::ZERO;
    stream
        .iter()
        .map(|r| {
            let d = model.service(r, now).duration;
            now += d;
            d
        })
        .collect()
}

/// A margin no busy machine can break: the daemon only ever adds to the model's time,
/// so measuring half of it means the model's delays were not applied.
fn assert_at_least_half(what: &str, measured: Duration, predicted: Duration) {
    // The bound must be far above what the FUSE path costs with no model at all, or a
    // daemon that answered at once could meet it.
    assert!(
        predicted > jbench::emu::FUSE_FLOOR * 100,
        "{what}: the model predicts only {predicted:?}; the test needs a stream the path alone cannot take that long on"
    );
    assert!(
        measured >= predicted / 2,
        "{what}: took {measured:?}, less than half the {predicted:?} the hdd-7200 model predicts"
    );
    eprintln!("{what}: {measured:?} measured, {predicted:?} predicted by the model");
}

#[test]
fn random_reads_and_fsynced_writes_take_at_least_the_hdd_models_time() {
    require!(root, fuse);
    use jbench::emu::{CalibrationRun, Pattern};
    let reads = CalibrationRun {
        requests: 60,
        ..CalibrationRun::new(Pattern::RandomRead4k, TIMED_DISK)
    };
    let appends = CalibrationRun {
        requests: 40,
        ..CalibrationRun::new(Pattern::FsyncWrite4k, TIMED_DISK)
    };
    let mut stream = reads.stream();
    stream.extend(appends.stream());
    let predicted: Duration = model_times(&stream).iter().sum();

    let disk = TimedHdd::start("emu-timing-");
    let measured = send_qd1(&disk.open(), &stream);
    let stats = disk.daemon.stats().unwrap();
    let d = &stats.disks[0];
    // The stream reached the model request for request (udev may add a read or two).
    assert!(d.reads >= 60 && d.writes >= 40 && d.flushes >= 40, "{d:?}");
    assert_at_least_half(
        "60 random 4K reads + 40 fsync'ed 4K appends",
        measured,
        predicted,
    );
    disk.finish();
}

#[test]
fn a_flush_after_cached_writes_takes_at_least_the_hdd_models_drain_time() {
    require!(root, fuse);
    use jbench::emu::{CalibrationRun, Pattern, Request};
    // Random writes the 16 MB write cache absorbs, then the flush that drains them.
    let writes = CalibrationRun {
        requests: 200,
        ..CalibrationRun::new(Pattern::RandomWrite4k, TIMED_DISK)
    }
    .stream();
    assert_eq!(writes.last(), Some(&Request::flush()));
    let times = model_times(&writes);
    let predicted_flush = *times.last().unwrap();

    let disk = TimedHdd::start("emu-flush-");
    let dev = disk.open();
    send_qd1(&dev, &writes[..writes.len() - 1]);
    let measured_flush = send_qd1(&dev, &[Request::flush()]);
    let d = &disk.daemon.stats().unwrap().disks[0];
    assert!(d.writes >= 200 && d.flushes >= 1, "{d:?}");
    assert!(d.cached >= 200, "the writes were cached: {d:?}");
    assert_at_least_half(
        "a flush after 200 cached random 4K writes",
        measured_flush,
        predicted_flush,
    );
    drop(dev);
    disk.finish();
}

// ---- stalls: an answer far later than the model's is counted, never lost ----

#[test]
fn an_injected_stall_is_counted_as_overdue_and_a_punctual_daemon_has_none() {
    require!(root, fuse);
    use jbench::emu::daemon::OVERDUE_AFTER;
    use jbench::emu::Request;
    use jbench::rig::emulated::{InjectedStall, StallAt};
    let disk = TimedHdd::start("emu-stall-");
    let dev = disk.open();
    let stream = [Request::write(0, 4096), Request::flush()];
    let counters = |what: &str| {
        let stats = disk.daemon.stats().unwrap();
        let d = stats.disks[0].clone();
        eprintln!("{what}: {d:?}");
        d
    };

    // Punctual: nothing overdue, nothing blocked.
    send_qd1(&dev, &stream);
    let d = counters("punctual");
    assert!(d.writes >= 1 && d.flushes >= 1, "{d:?}");
    assert_eq!((d.overdue, d.slow_io), (0, 0), "{d:?}");
    assert!(!d.stalled());

    // The FUSE thread held 1.5 s before the next request's image I/O.
    let stall = |at| InjectedStall {
        trial: 0,
        at,
        ms: 1500,
    };
    disk.daemon.inject_stall(&stall(StallAt::Io)).unwrap();
    let took = send_qd1(&dev, &stream);
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    let d = counters("io stall");
    assert_eq!(d.slow_io, 1, "{d:?}");
    assert!(d.worst_io_ms >= 1500.0, "{d:?}");
    assert!(
        d.overdue >= 1,
        "the held request's answer is overdue: {d:?}"
    );
    assert!(d.worst_late_ms > OVERDUE_AFTER.as_secs_f64() * 1e3, "{d:?}");
    assert!(d.stalled());

    // Fresh counters; then the completion thread held 1.5 s before an answer.
    disk.daemon.set_timing(true).unwrap();
    assert!(!counters("reset").stalled());
    disk.daemon.inject_stall(&stall(StallAt::Answer)).unwrap();
    let took = send_qd1(&dev, &stream);
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    let d = counters("answer stall");
    assert!(d.overdue >= 1, "{d:?}");
    assert_eq!(d.slow_io, 0, "the image I/O was not held: {d:?}");
    assert!(d.worst_late_ms >= 1400.0, "{d:?}");
    assert!(d.stalled());

    // An unknown place is refused.
    let err = std::fs::write(
        disk.daemon
            .mountpoint()
            .join(jbench::emu::daemon::CONTROL_FILE),
        "inject stall disk 10",
    );
    assert!(err.is_err(), "refused");
    drop(dev);
    disk.finish();
}
