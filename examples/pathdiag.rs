// Temporary diagnostic (not committed): per-request latency through an emulated disk.
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::{Duration, Instant};
use jbench::emu::daemon::DiskSpec;
use jbench::emu::host::{self, DeviceDaemon};
use jbench::emu::EmulationOptions;

fn pct(v: &mut Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    format!("mean {:.1} p10 {:.1} p50 {:.1} p90 {:.1} p99 {:.1}", mean, p(0.1), p(0.5), p(0.9), p(0.99))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = args.get(1).cloned().unwrap_or("ssd-sata".into());
    let n: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(2000);
    let len: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(4096);
    let write = args.get(4).map(|s| s == "w").unwrap_or(false);
    let dir = tempfile::Builder::new().prefix("pathdiag-").tempdir_in("/var/tmp").unwrap();
    let session = jbench::rig::session::SessionDir::create(dir.path()).unwrap();
    let image = dir.path().join("d.img");
    let gib: u64 = args.get(5).map(|s| s.parse().unwrap()).unwrap_or(1); std::fs::File::create(&image).unwrap().set_len(gib << 30).unwrap();
    let disks = [DiskSpec { name: "d".into(), image, model: model.clone(), params: Default::default(), image_id: None }];
    let split = host::split_cpus(&host::allowed_cpus());
    let daemon = DeviceDaemon::start(&session, &disks, &EmulationOptions::default(),
        split.as_ref().map(|(d, _)| d.clone()).unwrap_or_default(), None).unwrap();
    let lo = daemon.attach_disk("d", 0, None).unwrap();
    let _ = std::process::Command::new("udevadm").arg("settle").status();
    let path = daemon.measure_path("d", &lo).unwrap();
    println!("path {path:?}");
    if let Some((_, mine)) = &split { host::pin_current_thread(mine).unwrap(); }
    if std::env::var_os("FIFO").is_some() {
        let param = libc::sched_param { sched_priority: 1 };
        unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param); }
        // and the daemon's fuse threads
        let pid = daemon.pid();
        for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
            let tid: i32 = t.file_name().to_string_lossy().parse().unwrap();
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap();
            if comm.starts_with("fuser") { unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param); } }
        }
    }
    let f = std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(lo.path()).unwrap();
    let mut buf = vec![0x5au8; len + 4096];
    let st = buf.as_ptr().align_offset(4096);
    let b = &mut buf[st..st + len];
    let slots = (gib << 30) / len as u64;
    for round in 0..2 {
        if round == 1 { daemon.set_timing(false).unwrap(); }
        daemon.set_timing(true).unwrap();
        let mut x: u64 = 12345;
        let mut t = Vec::new();
        for _ in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let off = ((x >> 33) % slots) * len as u64;
            let s = Instant::now();
            if write { f.write_all_at(b, off).unwrap(); } else { f.read_exact_at(b, off).unwrap(); }
            t.push(s.elapsed().as_secs_f64() * 1e6);
        }
        let s = daemon.stats().unwrap();
        let d = &s.disks[0];
        println!("{model} {} {len}: {}  daemon reqs {} io/req {:.1} late {}", if write {"write"} else {"read"}, pct(&mut t), d.reads + d.writes, d.io_seconds * 1e6 / (d.reads + d.writes).max(1) as f64, d.late);
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(f); drop(lo); drop(daemon);
}
