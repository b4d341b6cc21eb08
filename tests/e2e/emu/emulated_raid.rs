//! The `raid6` model served end to end: a QD1 stream through the loop device, FUSE
//! and the device daemon takes at least half of what the model predicts for it (a
//! lower bound only: the path adds its own cost, never subtracts).

use crate::common;

use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use common::*;
use jbench::emu::daemon::DiskSpec;
use jbench::emu::{CalibrationRun, EmulationOptions, Pattern, Request};
use jbench::rig::emulated::DeviceDaemon;

const DISK: u64 = 256 << 20;
/// A cache the stream overflows, so that writes pay the destage (the default 1 GiB
/// would absorb it whole at interface speed).
const CACHE: i64 = 1 << 20;

fn params(capacity: bool) -> toml::Table {
    let mut t = toml::Table::new();
    t.insert("cache_bytes".into(), toml::Value::Integer(CACHE));
    if capacity {
        // What the daemon sets for a disk that spans its image.
        t.insert("capacity_bytes".into(), toml::Value::Integer(DISK as i64));
    }
    t
}

/// What a fresh model answers for the stream sent at QD1 (each request when the
/// previous one completes), without the path's cost.
fn predicted(stream: &[Request]) -> Duration {
    let mut model = jbench::emu::model_by_name("raid6", Some(&params(true))).unwrap();
    let mut now = Duration::ZERO;
    for r in stream {
        now += model.service(r, now).duration;
    }
    now
}

#[test]
fn random_writes_past_the_cache_and_reads_take_at_least_the_raid_models_time() {
    require!(root, fuse);
    let writes = CalibrationRun {
        requests: 400,
        ..CalibrationRun::new(Pattern::RandomWrite4k, DISK)
    };
    let reads = CalibrationRun {
        requests: 40,
        ..CalibrationRun::new(Pattern::RandomRead4k, DISK)
    };
    let mut stream = writes.stream();
    stream.extend(reads.stream());
    let model = predicted(&stream);
    // Far above what the path alone costs, so a daemon that answered at once fails.
    assert!(
        model > jbench::emu::FUSE_FLOOR * 1000,
        "the stream must be slow on the model: {model:?}"
    );

    let tmp = scratch("emu-raid-");
    {
        let session = jbench::rig::session::SessionDir::create(tmp.path()).unwrap();
        let image = tmp.path().join("raid.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(DISK)
            .unwrap();
        let disks = [DiskSpec {
            name: "raid".into(),
            image,
            model: "raid6".into(),
            // capacity_bytes left to the daemon, as in a trial.
            params: params(false),
            image_id: None,
        }];
        let daemon =
            DeviceDaemon::start(&session, &disks, &EmulationOptions::default(), vec![], None)
                .unwrap();
        let lo = daemon.attach_disk("raid", 0, None).unwrap();
        let _ = std::process::Command::new("udevadm").arg("settle").status();
        daemon.set_timing(true).unwrap();
        let dev = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(nix::libc::O_DIRECT)
            .open(lo.path())
            .unwrap();
        let measured = send_qd1(&dev, &stream);
        let d = &daemon.stats().unwrap().disks[0];
        assert!(d.writes >= 400 && d.reads >= 40, "{d:?}");
        // The stream overflowed the cache: some writes waited for the destage.
        assert!(d.cached < d.writes + d.reads + d.flushes, "{d:?}");
        assert!(
            measured >= model / 2,
            "took {measured:?}, less than half the {model:?} the raid6 model predicts"
        );
        eprintln!("raid6: {measured:?} measured, {model:?} predicted by the model");
        drop(dev);
        drop(lo);
        drop(daemon);
    }
    assert_no_leaks(tmp.path());
}
