//! Tests of the models through their public face: construction by name, the
//! fixed-latency and RAM models, the FUSE floor and the predicted figures.

use super::registry::with_overrides;
use super::*;

fn hdd(p: HddParams) -> HddModel {
    HddModel::new(p).unwrap()
}

fn table(s: &str) -> toml::Table {
    s.parse().unwrap()
}

fn ms_of(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
fn queued_request_waits_for_the_previous_one() {
    let mut m = model_by_name("ssd-sata", None).unwrap();
    let a = m.service(&Request::read(0, KIB4), Duration::ZERO);
    let b = m.service(&Request::read(0, KIB4), Duration::ZERO);
    assert_eq!(b.duration, a.duration * 2);
}

#[test]
fn zero_length_and_out_of_range_requests_do_not_panic() {
    for name in MODEL_NAMES {
        let mut m = model_by_name(name, None).unwrap();
        for req in [
            Request::read(0, 0),
            Request::write(u64::MAX, 0),
            Request::read(u64::MAX, KIB4),
            Request::write(u64::MAX - 1, MIB1),
            Request::discard(u64::MAX, u64::MAX),
            Request::flush(),
        ] {
            let s = m.service(&req, Duration::MAX / 2);
            if req.len == 0 && req.kind != Kind::Flush {
                assert_eq!(s.duration, Duration::ZERO, "{name} {req:?}");
            }
            assert!(s.duration < Duration::from_secs(1), "{name} {req:?} {s:?}");
        }
    }
}

#[test]
fn ssd_and_nvme_bandwidth_cap() {
    for (name, lat_us, mbps) in [("ssd-sata", 100.0, 500.0), ("nvme", 20.0, 3000.0)] {
        let mut m = model_by_name(name, None).unwrap();
        let s = m.service(&Request::read(0, 64 * MIB1), Duration::ZERO);
        let expect = lat_us / 1e3 + 64.0 * MIB1 as f64 / (mbps * 1e6) * 1e3;
        assert!((ms_of(s.duration) - expect).abs() < 1e-6, "{name}: {s:?}");
        // A fresh model: `m` is still busy with the 64 MiB read.
        let mut fresh = model_by_name(name, None).unwrap();
        let p = predicted(
            fresh.as_mut(),
            &CalibrationRun::new(Pattern::SequentialRead1m, 1 << 30),
        );
        assert!(
            p.mb_per_s < mbps && p.mb_per_s > 0.9 * mbps,
            "{name}: {p:?}"
        );
    }
}

#[test]
fn nvram_flush_is_free_and_writes_take_microseconds() {
    let mut m = model_by_name("nvram", None).unwrap();
    let w = m.service(&Request::write(0, KIB4), Duration::ZERO);
    assert!(w.duration < Duration::from_micros(10) && w.duration > Duration::ZERO);
    assert_eq!(
        m.service(&Request::flush(), w.duration).duration,
        Duration::ZERO
    );
}

#[test]
fn a_flush_writes_back_what_was_written_since_the_last_one_when_asked() {
    // 100 µs per flush, plus what was written since the last one at 1000 MB/s.
    let params = table("flush_latency_us = 100.0\nflush_mb_per_s = 1000.0\n");
    let mut m = model_by_name("ssd-sata", Some(&params)).unwrap();
    let far = Duration::from_secs(1);
    m.service(&Request::write(0, MIB1), Duration::ZERO);
    m.service(&Request::write(MIB1, MIB1), Duration::ZERO);
    let f = m.service(&Request::flush(), far).duration;
    let want = 100e-6 + 2.0 * MIB1 as f64 / 1e9;
    assert!((f.as_secs_f64() - want).abs() < 1e-9, "{f:?}");
    // Nothing written since: the latency alone.
    let again = m.service(&Request::flush(), far * 2).duration;
    assert_eq!(again, Duration::from_micros(100));
    assert!(m.cache_words().flush.contains("writing back"));
    // The built-in models' flushes do not depend on it (0, the default).
    let mut plain = model_by_name("ssd-sata", None).unwrap();
    plain.service(&Request::write(0, MIB1), Duration::ZERO);
    assert_eq!(
        plain.service(&Request::flush(), far).duration,
        Duration::from_micros(1500)
    );
    let bad = table("flush_mb_per_s = -1.0\n");
    let e = model_by_name("ssd-sata", Some(&bad))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("flush_mb_per_s must be a number >= 0"), "{e}");
}

#[test]
fn ram_adds_nothing() {
    let mut m = model_by_name("ram", None).unwrap();
    for req in [
        Request::read(0, MIB1),
        Request::write(7, MIB1),
        Request::flush(),
    ] {
        assert_eq!(m.service(&req, Duration::ZERO).duration, Duration::ZERO);
    }
    assert_eq!(m.min_service(), Duration::ZERO);
}

#[test]
fn model_by_name_errors() {
    let e = model_by_name("hdd-5400", None).err().unwrap().to_string();
    assert!(
        e.contains("hdd-5400") && e.contains("hdd-7200") && e.contains("nvram"),
        "{e}"
    );
    let e = model_by_name("hdd-7200", Some(&table("rmp = 5400")))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("rmp") && e.contains("rpm"), "{e}");
    let e = model_by_name("nvme", Some(&table("read_latency_us = \"fast\"")))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("bad parameter"), "{e}");
    assert!(model_by_name("ram", Some(&table("x = 1"))).is_err());
    assert!(model_by_name("hdd-7200", Some(&table("rpm = 0"))).is_err());
    assert!(model_by_name("hdd-7200", Some(&table("cylinders = 1"))).is_err());
    assert!(model_by_name("ssd-sata", Some(&table("read_mb_per_s = -1"))).is_err());
}

/// The words users see when a model cannot be built (spec errors, `jbench device
/// calibrate --set`, the daemon's log), pinned so a change of error type keeps them.
#[test]
fn model_error_texts_are_stable() {
    let text = |name: &str, params: &str| {
        model_by_name(name, Some(&table(params)))
            .err()
            .unwrap()
            .to_string()
    };
    let cases = [
        ("hdd-7200", "rmp = 5400", "hdd-7200: unknown parameter `rmp`; known parameters: capacity_bytes, cylinders, honor_flush, interface_mb_per_s, rate_inner_mb_per_s, rate_outer_mb_per_s, read_buffer_bytes, rpm, seed, seek_avg_ms, seek_full_stroke_ms, seek_track_to_track_ms, sequential_write_slip, write_cache, write_cache_bytes"),
        ("ram", "x = 1", "ram: unknown parameter `x`; known parameters: (none)"),
        ("hdd-7200", "rpm = 0", "hdd-7200: rpm must be a positive number, got 0"),
        ("hdd-7200", "capacity_bytes = 0", "hdd-7200: capacity_bytes must be positive"),
        ("hdd-7200", "cylinders = 2", "hdd-7200: cylinders must be at least 3"),
        ("hdd-7200", "honor_flush = false\nwrite_cache = false", "hdd-7200: honor_flush = false needs write_cache = true: without a write cache a flush has nothing to leave undone"),
        ("hdd-7200", "seek_avg_ms = 14.0", "hdd-7200: no monotonic seek curve through track-to-track 0.8 ms, average 14 ms, full stroke 15 ms; the average must lie between a + (full-a)/3 and a + 8(full-a)/15"),
        ("ssd-sata", "read_mb_per_s = -1", "ssd-sata: read_mb_per_s must be a positive number, got -1"),
        ("nvme", "flush_latency_us = -1.5", "nvme: flush_latency_us must be a number >= 0, got -1.5"),
        ("raid6", "spindles = 3", "raid6: spindles must be 4 to 64 (RAID 6 keeps two chunks of every stripe for parity), got 3"),
        ("raid6", "chunk_bytes = 1000", "raid6: chunk_bytes must be a multiple of 4096 from 4096 to 16777216, got 1000"),
        ("raid6", "cache_bytes = 65536", "raid6: cache_bytes must hold at least two stripes (786432 bytes with 8 spindles of 65536-byte chunks), got 65536"),
        ("raid6", "destage_high_water = 0.0", "raid6: destage_high_water must be a fraction of the cache above 0 and at most 1, got 0"),
        ("raid6", "destage_delay_ms = nan", "raid6: destage_delay_ms must be a number >= 0, got NaN"),
        ("raid6", "spindle = { rpm = 0 }", "raid6: spindle: rpm must be a positive number, got 0"),
        ("raid6", "spindle = { seed = 3 }", "raid6: spindle.seed is set by the array (spindle i is seeded with seed + i); set raid6's `seed` instead"),
        ("raid6", "spindle = { capacity_bytes = 3 }", "raid6: spindle.capacity_bytes is set by the array (capacity_bytes / (spindles - 2)); set raid6's `capacity_bytes` instead"),
        ("raid6", "spindle = { rmp = 5400 }", "raid6: unknown parameter `spindle.rmp`; known parameters: spindle.capacity_bytes, spindle.cylinders, spindle.honor_flush, spindle.interface_mb_per_s, spindle.rate_inner_mb_per_s, spindle.rate_outer_mb_per_s, spindle.read_buffer_bytes, spindle.rpm, spindle.seed, spindle.seek_avg_ms, spindle.seek_full_stroke_ms, spindle.seek_track_to_track_ms, spindle.sequential_write_slip, spindle.write_cache, spindle.write_cache_bytes"),
    ];
    for (name, params, want) in cases {
        assert_eq!(text(name, params), want, "{name} with {params}");
    }
    let unknown =
        "unknown device model `hdd-5400`; known models: hdd-7200, raid6, ssd-sata, nvme, nvram, ram, ssd-sata-plp, nvme-consumer, nvme-plp";
    assert_eq!(
        model_by_name("hdd-5400", None).err().unwrap().to_string(),
        unknown
    );
    assert_eq!(
        predicted_set("hdd-5400", None).unwrap_err().to_string(),
        unknown
    );
    let bad = text("nvme", "read_latency_us = \"fast\"");
    assert!(bad.starts_with("nvme: bad parameter value: "), "{bad}");
    assert!(bad.contains("read_latency_us"), "{bad}");
}

/// What the write log's header says of each built-in model's disk.
#[test]
fn which_models_keep_acknowledged_writes_in_a_volatile_cache() {
    let cases = [
        ("hdd-7200", "", true, true),
        ("hdd-7200", "honor_flush = false", true, false),
        ("hdd-7200", "write_cache = false", false, true),
        ("raid6", "", false, true),
        ("raid6", "nonvolatile = false", true, true),
        ("raid6", "spindle = { write_cache = true }", true, false),
        (
            "raid6",
            "nonvolatile = false\nspindle = { write_cache = true }",
            true,
            true,
        ),
        (
            "raid6",
            "nonvolatile = false\nspindle = { write_cache = true, honor_flush = false }",
            true,
            false,
        ),
        ("ssd-sata", "", true, true),
        ("nvme", "", true, true),
        ("nvram", "", false, true),
        ("ram", "", false, true),
        ("ssd-sata-plp", "", false, true),
        ("nvme-consumer", "", true, true),
        ("nvme-plp", "", false, true),
        ("ssd-sata", "power_loss_protection = true", false, true),
    ];
    for (name, params, volatile, honest) in cases {
        let m = model_by_name(name, Some(&table(params))).unwrap();
        assert_eq!(
            (m.volatile_cache(), m.honors_flush()),
            (volatile, honest),
            "{name} with {params:?}"
        );
    }
}

#[test]
fn toml_overrides_change_the_model() {
    let p = with_overrides("hdd-7200", HddParams::default(), Some(&table("rpm = 5400"))).unwrap();
    assert_eq!(p.rpm, 5400.0);
    let m = hdd(p);
    assert!((ms_of(m.rotation_period()) - 60_000.0 / 5400.0).abs() < 1e-6);
    let mut m = model_by_name("hdd-7200", Some(&table("write_cache = false"))).unwrap();
    assert!(
        !m.service(&Request::write(MIB1, KIB4), Duration::ZERO)
            .cached
    );
    let mut m = model_by_name("nvme", Some(&table("flush_latency_us = 1000"))).unwrap();
    assert_eq!(
        m.service(&Request::flush(), Duration::ZERO).duration,
        Duration::from_millis(1)
    );
}

#[test]
fn min_service_and_floor() {
    let hdd_nc = model_by_name("hdd-7200", Some(&table("write_cache = false"))).unwrap();
    assert!((hdd_nc.min_service().as_secs_f64() - 4096.0 / 200e6).abs() < 1e-9);
    let hdd = model_by_name("hdd-7200", None).unwrap();
    assert!(
        hdd.min_service() < hdd_nc.min_service(),
        "cached writes are faster"
    );
    let sata = model_by_name("ssd-sata", None).unwrap();
    assert!(sata.min_service() > Duration::from_micros(60));
    assert!(below_floor(
        model_by_name("nvram", None).unwrap().as_ref(),
        FUSE_FLOOR
    ));
    let slow = model_by_name("ssd-sata", Some(&table("write_latency_us = 200.0"))).unwrap();
    assert!(!below_floor(slow.as_ref(), FUSE_FLOOR));
    // A measured floor of 30 µs: the SATA SSD's 68 µs buffered write is above it.
    assert!(!below_floor(sata.as_ref(), Duration::from_micros(30)));
}

fn figure(set: &[(String, Prediction)], label: &str) -> Prediction {
    set.iter().find(|(l, _)| l == label).unwrap().1
}

#[test]
fn hdd_predictions_land_in_the_issue_ranges() {
    let set = predicted_set("hdd-7200", None).unwrap();
    // Issue 4 hopes for 100-130 random 4K IOPS. With its own anchors a QD1 random
    // read over the whole stroke costs 6.3 ms seek + 4.17 ms half revolution +
    // 0.03 ms transfer = 10.5 ms, i.e. 95 IOPS; the range's lower end is only
    // reached over a shorter span. The bound below admits the physics.
    let rr = figure(&set, "random read 4K").iops;
    assert!((90.0..=130.0).contains(&rr), "random read {rr}");
    assert!(
        (rr - 1e3 / 10.5).abs() / (1e3 / 10.5) < 0.03,
        "random read {rr}"
    );
    let rw_nc = figure(&set, "random write 4K, no cache").iops;
    assert!(
        (90.0..=130.0).contains(&rw_nc),
        "random write, no cache {rw_nc}"
    );
    let rw = figure(&set, "random write 4K").iops;
    assert!(
        rw > 1.3 * rw_nc,
        "cache + elevator should help: {rw} vs {rw_nc}"
    );
    // Sequential from offset 0 runs at the outer zone's 200 MB/s.
    let sr = figure(&set, "sequential read 1M").mb_per_s;
    assert!((sr - 200.0).abs() / 200.0 < 0.10, "sequential read {sr}");
    let sw = figure(&set, "sequential write 1M").mb_per_s;
    assert!((sw - 200.0).abs() / 200.0 < 0.10, "sequential write {sw}");
    // One fsync'ed append per revolution: about 120/s at 7200 rpm.
    let fs = figure(&set, "fsync'ed write 4K").iops;
    assert!((100.0..=125.0).contains(&fs), "fsync'ed write {fs}");
}

#[test]
fn half_stroke_random_reads_reach_the_issue_range() {
    let mut m = model_by_name("hdd-7200", None).unwrap();
    let w = CalibrationRun::new(
        Pattern::RandomRead4k,
        HddParams::default().capacity_bytes / 2,
    );
    let iops = predicted(m.as_mut(), &w).iops;
    assert!((100.0..=130.0).contains(&iops), "{iops}");
}

#[test]
fn predictions_are_deterministic() {
    assert_eq!(
        predicted_set("hdd-7200", None).unwrap(),
        predicted_set("hdd-7200", None).unwrap()
    );
}

/// `cargo test --release emu::model::tests::print_predicted_table -- --ignored --nocapture`
#[test]
#[ignore]
fn print_predicted_table() {
    println!(
        "{:<10} {:<28} {:>12} {:>10}",
        "model", "workload", "IOPS", "MB/s"
    );
    for name in MODEL_NAMES {
        let floor = model_by_name(name, None).unwrap();
        for (label, p) in predicted_set(name, None).unwrap() {
            let iops = if p.iops.is_finite() {
                format!("{:.1}", p.iops)
            } else {
                "inf".into()
            };
            println!("{name:<10} {label:<28} {iops:>12} {:>10.1}", p.mb_per_s);
        }
        println!(
            "{name:<10} min_service {:?}{}",
            floor.min_service(),
            if below_floor(floor.as_ref(), FUSE_FLOOR) {
                " (below the FUSE floor)"
            } else {
                ""
            }
        );
    }
}

/// The published drives' models give back the figures they were made from
/// (docs/devices.md): `diskinfo -wS`'s 4 KiB write+flush, the data sheets' rates.
#[test]
fn the_published_drives_give_back_their_published_figures() {
    let write_flush = |name: &str, bytes: u64| {
        let mut m = model_by_name(name, None).unwrap();
        let w = m.service(&Request::write(0, bytes), Duration::ZERO);
        let f = m.service(&Request::flush(), w.duration);
        (w.duration + f.duration).as_secs_f64() * 1e6
    };
    let near = |got: f64, want: f64, tol: f64, what: &str| {
        assert!(
            (got / want - 1.0).abs() <= tol,
            "{what}: {got:.1}, published {want}"
        );
    };
    near(
        write_flush("ssd-sata-plp", 4096),
        158.2,
        0.005,
        "Intel 710 4 KiB write+flush",
    );
    near(
        write_flush("ssd-sata-plp", 512),
        138.3,
        0.03,
        "Intel 710 0.5 KiB write+flush",
    );
    near(
        write_flush("ssd-sata-plp", 65536),
        416.5,
        0.10,
        "Intel 710 64 KiB write+flush",
    );
    near(
        write_flush("nvme-consumer", 4096),
        2090.7,
        0.005,
        "950 PRO 4 KiB write+flush",
    );
    let mut m = model_by_name("nvme-consumer", None).unwrap();
    let r = m.service(&Request::read(0, 4096), Duration::ZERO).duration;
    near(
        1e6 / (r.as_secs_f64() * 1e6),
        12_000.0,
        0.01,
        "950 PRO QD1 read IOPS",
    );
    let mut m = model_by_name("nvme-plp", None).unwrap();
    let r = m.service(&Request::read(0, 4096), Duration::ZERO).duration;
    near(r.as_secs_f64() * 1e6, 85.0, 0.01, "P4500 4 KiB read");
    near(
        write_flush("nvme-plp", 4096),
        20.0,
        0.01,
        "P4500 4 KiB write, no flush cost",
    );
    let mut m = model_by_name("nvme-consumer", None).unwrap();
    let w = m.service(&Request::write(0, 4096), Duration::ZERO).duration;
    near(
        1e6 / (w.as_secs_f64() * 1e6),
        43_000.0,
        0.01,
        "950 PRO QD1 write IOPS",
    );
}
