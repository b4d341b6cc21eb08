//! Tests of the `hdd-7200` model's geometry, rotation, zones and write cache.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::emu::model::MIB1;

fn hdd(p: HddParams) -> HddModel {
    HddModel::new(p).unwrap()
}

fn ms_of(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Random aligned 4 KiB offsets over the default disk.
fn random_offsets(n: usize, seed: u64, cap: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| rng.gen_range(0..cap / KIB4) * KIB4)
        .collect()
}

#[test]
fn seek_anchors_track_to_track_and_full_stroke() {
    let p = HddParams::default();
    let c = SeekCurve::fit(&p).unwrap();
    assert!((c.time_ms(1) - 0.8).abs() < 1e-9);
    assert!((c.time_ms(p.cylinders - 1) - 15.0).abs() < 1e-9);
    assert_eq!(c.time_ms(0), 0.0);
    // Monotonic: longer seeks never faster.
    let mut last = 0.0;
    for n in (0..p.cylinders).step_by(997) {
        let t = c.time_ms(n);
        assert!(t >= last, "seek({n}) = {t} < {last}");
        last = t;
    }
}

#[test]
fn seek_random_average_is_6_3_ms_within_2_percent() {
    let p = HddParams::default();
    let m = hdd(p.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let n = 200_000;
    let total: f64 = (0..n)
        .map(|_| {
            let a = m.cylinder(rng.gen_range(0..p.capacity_bytes));
            let b = m.cylinder(rng.gen_range(0..p.capacity_bytes));
            m.seek.time_ms(a.abs_diff(b))
        })
        .sum();
    let avg = total / n as f64;
    assert!((avg - 6.3).abs() / 6.3 < 0.02, "average seek {avg} ms");
}

#[test]
fn infeasible_seek_anchors_are_an_error() {
    let p = HddParams {
        seek_avg_ms: 14.0,
        ..HddParams::default()
    };
    assert!(HddModel::new(p).is_err());
    let p = HddParams {
        seek_avg_ms: 1.0,
        ..HddParams::default()
    };
    assert!(HddModel::new(p).is_err());
}

#[test]
fn rotation_period_is_8_333_ms_at_7200_rpm() {
    let m = hdd(HddParams::default());
    assert!((ms_of(m.rotation_period()) - 60_000.0 / 7200.0).abs() < 1e-6);
    // Rotational waits stay within one revolution and average half of one.
    let mut m = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let mut now = Duration::ZERO;
    let offs = random_offsets(5000, 3, m.p.capacity_bytes);
    let mut total = 0.0;
    for &o in &offs {
        let s = m.service(&Request::read(o, KIB4), now);
        assert!(s.rotation < m.rotation_period());
        total += ms_of(s.rotation);
        now += s.duration;
    }
    let avg = total / offs.len() as f64;
    assert!(
        (avg - 4.1667).abs() < 0.25,
        "mean rotational latency {avg} ms"
    );
}

#[test]
fn zoned_rate_at_both_ends() {
    let m = hdd(HddParams::default());
    assert!((m.rate_mb_per_s(0) - 200.0).abs() < 1e-9);
    assert!((m.rate_mb_per_s(m.p.capacity_bytes) - 100.0).abs() < 1e-9);
    assert!(
        (m.rate_mb_per_s(u64::MAX) - 100.0).abs() < 1e-9,
        "clamped beyond capacity"
    );
    let mut m = hdd(HddParams::default());
    let outer = m.service(&Request::read(0, MIB1), Duration::ZERO).transfer;
    let inner_off = m.p.capacity_bytes - MIB1;
    let inner = m
        .service(&Request::read(inner_off, MIB1), Duration::from_secs(1))
        .transfer;
    assert!((ms_of(outer) - MIB1 as f64 / 200e6 * 1e3).abs() < 1e-6);
    assert!((ms_of(inner) / ms_of(outer) - 2.0).abs() < 0.01);
}

#[test]
fn sequential_requests_pay_no_seek_nor_rotation() {
    let mut m = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let mut now = Duration::ZERO;
    let first = m.service(&Request::read(1 << 30, MIB1), now);
    assert!(first.seek > Duration::ZERO);
    now += first.duration + Duration::from_micros(100);
    for i in 1..10 {
        let s = m.service(&Request::read((1 << 30) + i * MIB1, MIB1), now);
        assert_eq!((s.seek, s.rotation), (Duration::ZERO, Duration::ZERO));
        assert_eq!(s.duration, s.transfer);
        now += s.duration + Duration::from_micros(100);
    }
    // Back-to-back sequential writes also pay only transfer.
    let s = m.service(
        &Request::write((1 << 30) + 10 * MIB1, MIB1),
        now - Duration::from_micros(100),
    );
    assert_eq!((s.seek, s.rotation), (Duration::ZERO, Duration::ZERO));
}

#[test]
fn sequential_write_after_a_gap_waits_for_its_sector() {
    let base = HddParams {
        write_cache: false,
        ..HddParams::default()
    };
    let mut m = hdd(base.clone());
    let a = m.service(&Request::write(0, KIB4), Duration::ZERO);
    let gap = Duration::from_micros(200);
    let b = m.service(&Request::write(KIB4, KIB4), a.duration + gap);
    assert_eq!(b.seek, Duration::ZERO);
    let expect = m.rotation_period() - gap;
    assert!(
        (ms_of(b.rotation) - ms_of(expect)).abs() < 1e-6,
        "{:?}",
        b.rotation
    );
    let mut m = hdd(HddParams {
        sequential_write_slip: false,
        ..base
    });
    let a = m.service(&Request::write(0, KIB4), Duration::ZERO);
    let b = m.service(&Request::write(KIB4, KIB4), a.duration + gap);
    assert_eq!(b.rotation, Duration::ZERO);
}

/// A log's partly filled last block is written again at the next commit: on a real
/// disk it has just gone by and waits most of a revolution, on a disk of any capacity
/// (a trial sizes the geometry to its small disk) and at either zone.
#[test]
fn a_block_written_again_after_a_gap_waits_most_of_a_revolution() {
    for capacity in [512u64 << 20, 8 << 30, HddParams::default().capacity_bytes] {
        for at in [0, capacity / 2, capacity - (1 << 20)] {
            let mut m = hdd(HddParams {
                write_cache: false,
                capacity_bytes: capacity,
                ..HddParams::default()
            });
            let gap = Duration::from_micros(300);
            let period = ms_of(m.rotation_period());
            // Two 4 KiB pages, then the second one again (an append's tail), then the
            // same page once more.
            let a = m.service(&Request::write(at, 2 * KIB4), Duration::ZERO);
            let b = m.service(&Request::write(at + KIB4, KIB4), a.duration + gap);
            let c = m.service(
                &Request::write(at + KIB4, KIB4),
                a.duration + gap + b.duration + gap,
            );
            for (what, s) in [("the tail", b), ("the same page", c)] {
                let wait = ms_of(s.seek + s.rotation);
                assert!(
                    wait > period - 0.5 && wait < period,
                    "{what} at {at} of {capacity}: waited {wait:.3} ms of a {period:.3} ms revolution"
                );
            }
        }
    }
}

#[test]
fn write_cache_absorbs_until_flush_then_elevator_beats_arrival_order() {
    let cap = HddParams::default().capacity_bytes;
    let offs = random_offsets(500, 7, cap);
    let mut cached = hdd(HddParams::default());
    let mut now = Duration::ZERO;
    for &o in &offs {
        let s = cached.service(&Request::write(o, KIB4), now);
        assert!(s.cached && s.duration < Duration::from_micros(20), "{s:?}");
        now += s.duration;
    }
    assert_eq!(cached.dirty_bytes(), 500 * KIB4);
    let flush = cached.service(&Request::flush(), now);
    assert!(!flush.cached && flush.seek > Duration::ZERO);
    assert_eq!(cached.dirty_bytes(), 0);
    // A second flush has nothing to do.
    assert_eq!(
        cached
            .service(&Request::flush(), now + flush.duration)
            .duration,
        Duration::ZERO
    );

    let mut through = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let mut t = Duration::ZERO;
    for &o in &offs {
        t += through.service(&Request::write(o, KIB4), t).duration;
    }
    // Sorted, the seeks shrink from 6.3 ms to about 1.5; the rotational waits (4.2 ms
    // on average) stay: about 1.9x, as an elevator without rotational ordering gives.
    assert!(
        flush.duration.as_secs_f64() * 1.8 < t.as_secs_f64(),
        "elevator {:?} vs arrival order {:?}",
        flush.duration,
        t
    );
}

#[test]
fn elevator_serves_in_offset_order() {
    let mut m = hdd(HddParams::default());
    let cap = m.p.capacity_bytes;
    for o in [cap / 2, cap / 8, cap - KIB4, cap / 4] {
        m.service(&Request::write(o, KIB4), Duration::ZERO);
    }
    let f = m.service(&Request::flush(), Duration::ZERO);
    // One ascending sweep from the outer edge ends at the innermost write...
    assert_eq!(m.head, Some(cap));
    // ...and seeks less than the arrival order's back-and-forth.
    let mut through = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let mut arrival_seek = Duration::ZERO;
    for o in [cap / 2, cap / 8, cap - KIB4, cap / 4] {
        arrival_seek += through
            .service(&Request::write(o, KIB4), Duration::ZERO)
            .seek;
    }
    assert!(f.seek < arrival_seek, "{:?} vs {:?}", f.seek, arrival_seek);
}

#[test]
fn full_cache_forces_a_drain() {
    let p = HddParams {
        write_cache_bytes: 64 * KIB4,
        ..HddParams::default()
    };
    let mut m = hdd(p);
    let offs = random_offsets(65, 11, m.p.capacity_bytes);
    let mut now = Duration::ZERO;
    for &o in &offs[..64] {
        let s = m.service(&Request::write(o, KIB4), now);
        assert!(s.cached);
        now += s.duration;
    }
    let s = m.service(&Request::write(offs[64], KIB4), now);
    assert!(!s.cached && s.seek > Duration::ZERO && s.duration > Duration::from_millis(64));
    assert_eq!(m.dirty_bytes(), KIB4);
    // A write larger than the cache goes through to the media.
    let big = m.service(&Request::write(0, 65 * KIB4), now + s.duration);
    assert!(!big.cached && m.dirty_bytes() == 0);
}

#[test]
fn overwrites_in_cache_count_once() {
    let mut m = hdd(HddParams::default());
    for _ in 0..10 {
        m.service(&Request::write(8192, KIB4), Duration::ZERO);
    }
    m.service(&Request::write(8192 + KIB4, KIB4), Duration::ZERO);
    m.service(&Request::write(4096, 2 * KIB4), Duration::ZERO);
    assert_eq!(m.dirty_bytes(), 3 * KIB4);
    assert_eq!(m.dirty.map.len(), 1);
}

#[test]
fn write_cache_off_makes_every_write_pay() {
    let mut m = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let mut now = Duration::ZERO;
    for &o in &random_offsets(50, 5, m.p.capacity_bytes) {
        let s = m.service(&Request::write(o, KIB4), now);
        assert!(!s.cached && s.seek > Duration::ZERO, "{s:?}");
        now += s.duration;
    }
    assert_eq!(m.service(&Request::flush(), now).duration, Duration::ZERO);
}

#[test]
fn reads_of_dirty_cached_data_are_fast() {
    let mut m = hdd(HddParams::default());
    let off = 123 * MIB1;
    m.service(&Request::write(off, 4 * KIB4), Duration::ZERO);
    let hit = m.service(
        &Request::read(off + KIB4, 2 * KIB4),
        Duration::from_millis(1),
    );
    assert!(
        hit.cached && hit.duration < Duration::from_micros(50),
        "{hit:?}"
    );
    let miss = m.service(
        &Request::read(off + 3 * KIB4, 2 * KIB4),
        Duration::from_millis(2),
    );
    assert!(
        !miss.cached && miss.duration > Duration::from_micros(50),
        "{miss:?}"
    );
}

#[test]
fn same_seed_same_times_other_seed_differs() {
    let run = |seed: u64| -> Vec<Duration> {
        let mut m = hdd(HddParams {
            seed,
            ..HddParams::default()
        });
        let mut now = Duration::ZERO;
        let offs = random_offsets(300, 9, m.p.capacity_bytes);
        let mut out = Vec::new();
        for (i, &o) in offs.iter().enumerate() {
            let req = match i % 3 {
                0 => Request::read(o, KIB4),
                1 => Request::write(o, KIB4),
                _ => Request::flush(),
            };
            let d = m.service(&req, now).duration;
            out.push(d);
            now += d;
        }
        out
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn a_disk_that_lies_answers_a_flush_at_once_and_keeps_its_cache() {
    let lying = HddParams {
        honor_flush: false,
        write_cache_bytes: 64 * KIB4,
        ..HddParams::default()
    };
    let mut m = hdd(lying);
    let offs = random_offsets(65, 3, m.p.capacity_bytes);
    let mut now = Duration::ZERO;
    for &o in &offs[..10] {
        now += m.service(&Request::write(o, KIB4), now).duration;
    }
    let f = m.service(&Request::flush(), now);
    assert_eq!(f.duration, Duration::ZERO);
    assert!(f.cached && f.seek == Duration::ZERO, "{f:?}");
    assert_eq!(m.dirty_bytes(), 10 * KIB4);
    // The cache still drains when it fills.
    for &o in &offs[10..] {
        now += m.service(&Request::write(o, KIB4), now).duration;
    }
    assert_eq!(m.dirty_bytes(), KIB4);
    // The honest disk empties it at a flush, at the media's pace.
    let mut honest = hdd(HddParams::default());
    let mut t = Duration::ZERO;
    for &o in &offs[..10] {
        t += honest.service(&Request::write(o, KIB4), t).duration;
    }
    assert!(honest.service(&Request::flush(), t).duration > Duration::from_millis(10));
    assert_eq!(honest.dirty_bytes(), 0);
}

#[test]
fn cache_and_flush_honesty_are_what_the_write_log_reports() {
    use crate::emu::model::model_by_name;
    let table = |s: &str| s.parse::<toml::Table>().unwrap();
    let m = model_by_name("hdd-7200", None).unwrap();
    assert!(m.volatile_cache() && m.honors_flush());
    let m = model_by_name("hdd-7200", Some(&table("honor_flush = false"))).unwrap();
    assert!(m.volatile_cache() && !m.honors_flush());
    let m = model_by_name("hdd-7200", Some(&table("write_cache = false"))).unwrap();
    assert!(!m.volatile_cache() && m.honors_flush());
}

#[test]
fn a_lying_disk_without_a_write_cache_is_refused() {
    let e = HddModel::new(HddParams {
        honor_flush: false,
        write_cache: false,
        ..HddParams::default()
    })
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("honor_flush = false needs write_cache = true"),
        "{e}"
    );
}

/// Reads of 8 adjacent 4 KiB blocks arriving together in a scrambled order, as jbd2's
/// unplugged readahead reaches the disk through several threads: (batch time, reads
/// after the first that waited for a seek or a rotation, over 0.1 ms).
fn scrambled_batch(m: &mut HddModel, base: u64, now: Duration) -> (Duration, usize) {
    const ORDER: [u64; 8] = [3, 1, 0, 2, 5, 4, 7, 6];
    let mut done = now;
    let mut waits = 0;
    for (i, b) in ORDER.iter().enumerate() {
        let s = m.service(&Request::read(base + b * KIB4, KIB4), now);
        if i > 0 && s.seek + s.rotation > Duration::from_micros(100) {
            waits += 1;
        }
        done = done.max(now + s.duration);
    }
    (done - now, waits)
}

#[test]
fn scrambled_adjacent_reads_are_answered_from_the_read_buffer() {
    let batches = random_offsets(300, 11, 400 << 30);
    let run = |buffer: u64| {
        let mut m = hdd(HddParams {
            read_buffer_bytes: buffer,
            ..HddParams::default()
        });
        let mut now = Duration::ZERO;
        let (mut total, mut waits) = (Duration::ZERO, 0);
        for &base in &batches {
            let (t, w) = scrambled_batch(&mut m, base, now);
            total += t;
            waits += w;
            now += t + Duration::from_millis(20);
        }
        (total / batches.len() as u32, waits)
    };
    let (with, waits) = run(1 << 20);
    let (without, waits_without) = run(0);
    let rev = ms_of(hdd(HddParams::default()).rotation_period());
    // One seek and one rotational wait per batch: the sectors before the first read
    // passed under the head while it waited, the ones after are read ahead.
    assert!(
        ms_of(with) < 6.3 + rev,
        "a batch took {} ms on average with the read buffer",
        ms_of(with)
    );
    assert!(
        waits <= 300 * 7 / 100,
        "{waits} of {} reads waited",
        300 * 7
    );
    // Without one, every read behind the last waits most of a revolution.
    assert!(
        waits_without >= 300 * 3,
        "only {waits_without} reads waited without the buffer"
    );
    assert!(
        ms_of(without) > ms_of(with) + 2.0 * rev,
        "{} ms without the buffer against {} ms with it",
        ms_of(without),
        ms_of(with)
    );
}

#[test]
fn the_drive_reads_ahead_while_idle_and_stops_when_the_media_is_wanted() {
    let base = 10 << 30;
    let mut m = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let first = m.service(&Request::read(base, KIB4), Duration::ZERO);
    assert!(!first.cached);
    // 2 ms idle at ~200 MB/s: some 400 KB read ahead.
    let t = first.duration + Duration::from_millis(2);
    let ahead = m.service(&Request::read(base + 256 * 1024, KIB4), t);
    assert!(ahead.cached, "256 KiB on was not read ahead: {ahead:?}");
    // Ahead by up to a whole buffer beyond the read, whatever it kept from before.
    let t = t + Duration::from_millis(20);
    let whole = m.service(&Request::read(base + 900 * 1024, KIB4), t);
    assert!(whole.cached, "900 KiB on was not read ahead: {whole:?}");
    let beyond = m.service(&Request::read(base + (4 << 20), KIB4), t);
    assert!(!beyond.cached, "4 MiB on cannot be in a 1 MiB buffer");

    // A write to the media ends the read-ahead: after it, nothing more was read.
    let mut m = hdd(HddParams {
        write_cache: false,
        ..HddParams::default()
    });
    let first = m.service(&Request::read(base, KIB4), Duration::ZERO);
    let w = m.service(&Request::write(200 << 30, KIB4), first.duration);
    let later = first.duration + w.duration + Duration::from_millis(5);
    let s = m.service(&Request::read(base + 512 * 1024, KIB4), later);
    assert!(!s.cached, "read ahead while the head was writing elsewhere");
}

#[test]
fn a_read_far_behind_the_buffer_goes_to_the_media() {
    let base = 10 << 30;
    let mut m = hdd(HddParams::default());
    let first = m.service(&Request::read(base, KIB4), Duration::ZERO);
    // What passed under the head during the rotational wait, plus a margin.
    let passed = (first.rotation.as_secs_f64() * m.rate_mb_per_s(base) * MB) as u64;
    let far = base - (passed + (64 << 10)).min(1 << 20) - KIB4;
    let s = m.service(&Request::read(far, KIB4), first.duration);
    assert!(!s.cached);
    assert!(s.rotation > Duration::ZERO || s.seek > Duration::ZERO);
}

#[test]
fn a_short_hop_on_a_small_disk_is_on_the_track_under_the_head() {
    // A trial's 1 GiB disk: 150,000 cylinders of some 7 KiB each.
    let mut m = hdd(HddParams {
        capacity_bytes: 1 << 30,
        read_buffer_bytes: 0,
        ..HddParams::default()
    });
    let base = 512 << 20;
    let first = m.service(&Request::read(base, KIB4), Duration::ZERO);
    let t = first.duration + Duration::from_micros(50);
    let hop = m.service(&Request::read(base + 32 * 1024, KIB4), t);
    assert_eq!(hop.seek, Duration::ZERO, "{hop:?}");
    // 28 KiB at ~150 MB/s is some 0.2 ms of turning, less the 50 us already waited.
    assert!(
        hop.rotation < Duration::from_micros(300),
        "a 32 KiB hop waited {:?} for its sector",
        hop.rotation
    );
    // Far away is a seek as before.
    let far = m.service(&Request::read(64 << 20, KIB4), t + hop.duration);
    assert!(far.seek > Duration::ZERO);
}
