//! The emulated disk's timing against its model: a request stream through the loop
//! device, FUSE and the daemon takes the model's time, the path's measured cost taken
//! off each answer (issue 25). In a binary of its own, so that no other test of the
//! suite runs beside it and disturbs the timing (cargo runs test binaries one after
//! another, the tests of one binary in parallel).

use crate::common;

use std::time::Duration;

use common::*;
use jbench::emu::daemon::DiskSpec;
use jbench::emu::EmulationOptions;
use jbench::monitor::host_load::CpuSplit;
use jbench::rig::emulated::DeviceDaemon;

/// Size of the emulated disk.
const TIMED_DISK: u64 = 256 << 20;

/// The time `model` (fresh) gives `stream` sent at queue depth 1, each request taking
/// at least what the measured path alone costs it.
fn expected_time(
    model: &str,
    stream: &[jbench::emu::Request],
    path: &jbench::emu::daemon::PathCost,
) -> Duration {
    let mut model = jbench::emu::model_by_name(model, None).unwrap();
    let mut now = Duration::ZERO;
    for r in stream {
        now += model.service(r, now).duration.max(path.floor(r));
    }
    now
}

/// One attempt of the `ssd-sata` stream: the model's time over the time taken, and
/// what the host made the stream's work wait for a CPU meanwhile.
struct Attempt {
    ratio: f64,
    seconds: f64,
    wait: jbench::monitor::host_load::CpuWait,
}

impl Attempt {
    fn starved(&self) -> bool {
        self.wait.starved(self.seconds)
    }
}

/// The attempts, and whether the path measured before them was slower than the model's
/// requests (a busy host makes it so: 154-470 µs a 4 KiB request against 15-25 µs
/// idle), so that the path, not the model, set the stream's time.
struct Stream {
    attempts: Vec<Attempt>,
    path_bound: bool,
}

/// Up to three attempts of an `ssd-sata` request stream (reads, buffered writes and
/// their flush, fsync'ed appends) at queue depth 1, until one is within 10% of the
/// model; each with the CPU wait the monitor would record for a trial. `beside` starts
/// what runs beside the attempts (held until they end), after the path is measured:
/// a path measured on a busy host costs what the host made it wait (1.7 ms a request
/// beside spinning processes), and would leave no model time to test.
fn ssd_stream_attempts<B>(beside: impl FnOnce() -> B) -> Stream {
    use jbench::emu::{CalibrationRun, Pattern};
    let tmp = scratch("emu-ssd-");
    let session = jbench::rig::session::SessionDir::create(tmp.path()).unwrap();
    // In memory, as a trial's image is by default (`[emulation] image_dir`).
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let image = shm.path().join("ssd.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(TIMED_DISK)
        .unwrap();
    let disks = [DiskSpec {
        name: "ssd".into(),
        image,
        model: "ssd-sata".into(),
        params: Default::default(),
        image_id: None,
    }];
    // Pinned as a trial is: the daemon on one CPU, the requests from the others.
    let split = jbench::rig::emulated::split_cpus(&jbench::rig::emulated::allowed_cpus());
    let daemon = DeviceDaemon::start(
        &session,
        &disks,
        &EmulationOptions::default(),
        split.as_ref().map(|(d, _)| d.clone()).unwrap_or_default(),
        None,
    )
    .unwrap();
    let read_mode = daemon.stats().unwrap().read_mode;
    // Pinned apart with its image in memory, the daemon polls: the serial tests run
    // alone, so no other daemon may hold its CPU's polling lock.
    if split.is_some() {
        assert!(read_mode.polling, "{read_mode:?}");
    }
    eprintln!("ssd-sata: the daemon reads requests {read_mode:?}");
    let lo = daemon.attach_disk("ssd", 0, None).unwrap();
    let _ = std::process::Command::new("udevadm").arg("settle").status();
    let path = daemon.measure_path("ssd", &lo).unwrap();
    let restore = split
        .as_ref()
        .map(|(_, mine)| jbench::rig::emulated::pin_current_thread(mine).unwrap());

    // Reads (100 µs each), buffered writes (68 µs) and their flush, fsync'ed appends
    // (a 1.5 ms flush each): about 0.5 s of model time in all.
    let run = |pattern, requests| {
        CalibrationRun {
            requests,
            ..CalibrationRun::new(pattern, TIMED_DISK)
        }
        .stream()
    };
    let parts = [
        run(Pattern::RandomRead4k, 2000),
        run(Pattern::RandomWrite4k, 1500),
        run(Pattern::FsyncWrite4k, 150),
    ];
    let stream: Vec<_> = parts.concat();
    let expected = expected_time("ssd-sata", &stream, &path);
    let model_alone = expected_time("ssd-sata", &stream, &Default::default());
    // Where the path sets the figure the model's time cannot be tested; what can be is
    // that the product says so rather than passing the path's time off as the model's.
    let path_bound = expected.as_secs_f64() >= model_alone.as_secs_f64() * 1.05;
    if path_bound {
        eprintln!(
            "ssd-sata: this machine's path ({path:?}) is slower than the model's requests ({expected:?} expected against {model_alone:?} for the model alone): checking that the daemon flags it"
        );
    }
    let dev = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_DIRECT)
            .open(lo.path())
            .unwrap()
    };
    // A busy host can slow one attempt; a daemon that ignores the model, or adds the
    // path on top of it (issue 25: 0.69-0.85 of the model), misses every time.
    let neighbours = beside();
    let mut attempts = Vec::new();
    for _ in 0..3 {
        daemon.set_timing(true).unwrap();
        let clock = std::time::Instant::now();
        let before = CpuSplit::now().expect("/proc is readable");
        // Part by part (each the model's continuation of the one before), for the
        // message; the sum is what is judged.
        let times: Vec<Duration> = parts.iter().map(|p| send_qd1(&dev, p)).collect();
        let measured: Duration = times.iter().sum();
        let seconds = clock.elapsed().as_secs_f64();
        let wait = before.wait_until(&CpuSplit::now().unwrap(), seconds);
        eprintln!("ssd-sata parts: {times:?} measured");
        let ratio = expected.as_secs_f64() / measured.as_secs_f64();
        eprintln!(
            "ssd-sata: {measured:?} measured, {expected:?} expected ({model_alone:?} the model alone), rate ratio {ratio:.3}; path {path:?}"
        );
        eprintln!("ssd-sata: the stream's work waited {wait:?} for a CPU in {seconds:.3} s");
        let within = (ratio - 1.0).abs() <= 0.10;
        attempts.push(Attempt {
            ratio,
            seconds,
            wait,
        });
        if within {
            break;
        }
    }
    drop(neighbours);
    let d = &daemon.stats().unwrap().disks[0];
    assert_eq!(d.path, Some(path), "the disk's counters record the path");
    assert!(
        d.reads >= 2000 && d.writes >= 1650 && d.flushes >= 151,
        "{d:?}"
    );
    // Every answer of the last attempt is in the lateness distribution, once.
    let lateness = d.lateness.as_ref().expect("the daemon counts every answer");
    assert_eq!(
        lateness.answers.iter().sum::<u64>(),
        d.reads + d.writes + d.flushes + d.discards,
        "{lateness:?}"
    );
    eprintln!("ssd-sata: the daemon's answers by lateness: {lateness:?}");
    if path_bound {
        // Every report turns these counts into its path-bound warning.
        assert!(
            d.floor_bound > 0 && d.floor_excess_seconds > 0.0,
            "the path ({path:?}) is slower than ssd-sata's requests, yet the daemon counted none as bound by it, so no report would flag it: {d:?}"
        );
    }
    if let Some(cpus) = restore {
        jbench::rig::emulated::pin_current_thread(&cpus).unwrap();
    }
    drop(dev);
    drop(lo);
    drop(daemon);
    assert_no_leaks(tmp.path());
    Stream {
        attempts,
        path_bound,
    }
}

/// What the emulator controls: the stream takes the model's time, or the host kept its
/// work from a CPU long enough that a trial would be flagged for it, or the path was
/// slower than the model and the daemon counted it (checked where it is measured).
/// Never a slow figure without a recorded cause.
fn within_10_percent_or_flagged(stream: &Stream) {
    if stream.path_bound {
        return;
    }
    let attempts = &stream.attempts;
    let ratios: Vec<f64> = attempts.iter().map(|a| a.ratio).collect();
    assert!(
        attempts
            .iter()
            .any(|a| (a.ratio - 1.0).abs() <= 0.10 || a.starved()),
        "measured/expected rate ratios {ratios:?}: not within 10% of the ssd-sata model, and the host did not keep the stream from a CPU: {:?}",
        attempts.iter().map(|a| &a.wait).collect::<Vec<_>>()
    );
}

#[test]
fn an_ssd_request_stream_takes_the_models_time_within_10_percent() {
    let _alone = crate::alone();
    require!(root, fuse);
    within_10_percent_or_flagged(&ssd_stream_attempts(|| ()));
}

/// Beside processes that keep every CPU busy, the stream is slow (on the development
/// VM 0.65-0.67 of the model's rate with the daemon polling, 0.60-0.88 asleep) and the device daemon answers every request on
/// time: the time goes to the stream's own thread and the loop device's worker
/// waiting for a CPU. That wait is what the trial records and flags.
#[test]
fn beside_cpu_burners_a_slow_stream_is_flagged_never_silent() {
    let _alone = crate::alone();
    require!(root, fuse);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stream = ssd_stream_attempts(|| Burners::start(cpus + 1));
    within_10_percent_or_flagged(&stream);
    assert!(
        stream.attempts.iter().all(|a| a.wait.own_seconds > 0.0),
        "the burners kept nothing waiting? {:?}",
        stream.attempts.iter().map(|a| &a.wait).collect::<Vec<_>>()
    );
}

/// Processes spinning on the CPU, killed on drop. Outside this process's tree (each a
/// shell's background child, reparented when the shell exits), as another program's
/// are: their own waits are not the stream's.
struct Burners(Vec<i32>);

impl Burners {
    fn start(n: usize) -> Self {
        Burners(
            (0..n)
                .map(|_| {
                    let out = std::process::Command::new("sh")
                        .args([
                            "-c",
                            "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
                        ])
                        .output()
                        .expect("sh");
                    String::from_utf8_lossy(&out.stdout)
                        .trim()
                        .parse()
                        .expect("a pid")
                })
                .collect(),
        )
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
