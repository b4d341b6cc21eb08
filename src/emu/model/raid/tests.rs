//! Tests of the `raid6` model's timing: layout, cache, destage, flushes, reads.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::emu::model::MIB1;

const GIB8: u64 = 8 << 30;

fn raid(f: impl FnOnce(&mut RaidParams)) -> RaidModel {
    let mut p = RaidParams {
        capacity_bytes: GIB8,
        ..RaidParams::default()
    };
    f(&mut p);
    RaidModel::new(p).unwrap()
}

fn ms_of(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn reads_writes(m: &RaidModel) -> (u64, u64) {
    m.ops.iter().fold((0, 0), |(r, w), o| (r + o[0], w + o[1]))
}

/// Writes `len` bytes at `offset` at time zero, then a flush when it is acknowledged;
/// returns the flush's duration.
fn write_then_flush(m: &mut RaidModel, offset: u64, len: u64) -> Duration {
    let w = m.service(&Request::write(offset, len), Duration::ZERO);
    assert!(w.cached, "{w:?}");
    m.service(&Request::flush(), w.duration).duration
}

#[test]
fn layout_rotates_p_and_q_and_maps_data_past_them() {
    let m = raid(|_| {});
    let l = m.l;
    for s in 0..16 {
        let mut disks: Vec<usize> = (0..6).map(|i| l.data_disk(s, i)).collect();
        disks.extend([l.p_disk(s), l.q_disk(s)]);
        disks.sort();
        assert_eq!(disks, (0..8).collect::<Vec<_>>(), "stripe {s}");
    }
    assert_eq!((l.p_disk(0), l.q_disk(0), l.data_disk(0, 0)), (7, 0, 1));
    assert_eq!((l.p_disk(1), l.q_disk(1), l.data_disk(1, 0)), (6, 7, 0));
    // Data chunk 2 of stripe 3 sits at stripe 3's row of its disk.
    let (j, lo, hi) = l
        .data_ranges(3, 2 * 65536 + 4096, 2 * 65536 + 8192)
        .next()
        .unwrap();
    assert_eq!(
        (j, lo, hi),
        (l.data_disk(3, 2), 3 * 65536 + 4096, 3 * 65536 + 8192)
    );
}

#[test]
fn a_full_stripe_is_one_parallel_write_on_every_spindle() {
    let mut m = raid(|p| p.nonvolatile = false);
    let flush = write_then_flush(&mut m, 0, 6 * 65536);
    assert_eq!(reads_writes(&m), (0, 8), "{:?}", m.ops);
    assert!(
        m.ops.iter().all(|o| o[1] == 1),
        "one write per spindle: {:?}",
        m.ops
    );
    // In parallel: no more than one disk's worst single write (full stroke, a
    // revolution, 64 KiB at the inner rate), not eight of them.
    assert!(ms_of(flush) < 15.0 + 8.34 + 0.66 + 0.1, "{flush:?}");
}

#[test]
fn a_partial_stripe_reads_old_data_and_parity_before_writing() {
    let mut m = raid(|p| p.nonvolatile = false);
    let flush = write_then_flush(&mut m, 4096, 4096);
    assert_eq!(reads_writes(&m), (3, 3), "{:?}", m.ops);
    let l = m.l;
    for j in [l.data_disk(0, 0), l.p_disk(0), l.q_disk(0)] {
        assert_eq!(m.ops[j], [1, 1], "spindle {j}");
    }
    // The writes wait for every read: the flush takes at least the slowest read of
    // a fresh array plus the write's own transfer, and more than a full stripe's
    // write alone.
    let mut fresh = raid(|p| p.nonvolatile = false);
    let mut acc = Service::default();
    let t0 = Duration::from_micros(1);
    let reads = [l.data_disk(0, 0), l.p_disk(0), l.q_disk(0)]
        .map(|j| fresh.op(j, Kind::Read, 4096, 4096, t0, &mut acc))
        .into_iter()
        .max()
        .unwrap();
    assert!(flush >= reads, "{flush:?} < reads {reads:?}");
    let full = write_then_flush(&mut raid(|p| p.nonvolatile = false), 0, 6 * 65536);
    assert!(
        flush > full,
        "read-modify-write {flush:?} vs full stripe {full:?}"
    );
}

#[test]
fn a_nonvolatile_flush_is_instant_and_a_volatile_one_waits_for_the_drain() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let offsets: Vec<u64> = (0..200)
        .map(|_| rng.gen_range(0..GIB8 / 4096) * 4096)
        .collect();
    let mut flushes = Vec::new();
    for nonvolatile in [true, false] {
        let mut m = raid(|p| p.nonvolatile = nonvolatile);
        let mut now = Duration::ZERO;
        for &o in &offsets {
            now += m.service(&Request::write(o, 4096), now).duration;
        }
        assert!(m.dirty_bytes > 0, "the writes are still cached");
        flushes.push(m.service(&Request::flush(), now).duration);
        if !nonvolatile {
            assert_eq!(m.dirty_bytes, 0);
        }
    }
    assert_eq!(
        flushes[0],
        Duration::from_micros(20),
        "controller latency only"
    );
    // 200 read-modify-writes on 8 spindles: far more than a second of media time.
    assert!(flushes[1] > Duration::from_millis(500), "{:?}", flushes[1]);
}

#[test]
fn writes_stall_only_when_the_cache_is_full() {
    let mut m = raid(|p| p.cache_bytes = 2 << 20);
    let fast = m.min_service();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (mut now, mut stalls, mut quick) = (Duration::ZERO, 0, 0);
    for _ in 0..3000 {
        let o = rng.gen_range(0..GIB8 / 4096) * 4096;
        m.advance(now);
        let room = m.cached_bytes() + 4096 <= m.p.cache_bytes;
        let s = m.service(&Request::write(o, 4096), now);
        if room {
            assert_eq!((s.duration, s.cached), (fast, true), "at {now:?}");
            quick += 1;
        } else {
            assert!(s.duration > fast && !s.cached, "at {now:?}: {s:?}");
            stalls += 1;
        }
        assert!(m.cached_bytes() <= m.p.cache_bytes);
        now += s.duration;
    }
    assert!(
        quick >= 512 && stalls > 1000,
        "{quick} quick, {stalls} stalled"
    );
}

#[test]
fn a_read_waits_behind_the_destage_on_its_spindle() {
    let read = Request::read(4 << 30, 4096);
    // 64 MiB of sequential writes: full stripes, destaged at once on every spindle.
    let mut m = raid(|_| {});
    let mut now = Duration::ZERO;
    for i in 0..64 {
        now += m.service(&Request::write(i * MIB1, MIB1), now).duration;
    }
    m.advance(now);
    let (s, rel) = ((4 << 30) / m.l.stripe, (4 << 30) % m.l.stripe);
    let j = m.l.data_disk(s, rel / m.l.chunk);
    let destage_ends = m.busy[j];
    assert!(
        destage_ends > now + Duration::from_millis(1),
        "spindle {j} is destaging"
    );
    let behind = m.service(&read, now).duration;
    assert!(
        now + behind > destage_ends,
        "{behind:?} ends before the destage"
    );
    let alone = raid(|_| {}).service(&read, now).duration;
    assert!(
        behind > alone,
        "{behind:?} behind destage vs {alone:?} alone"
    );
}

#[test]
fn eight_spindles_serve_parallel_random_reads_faster_than_one() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let offsets: Vec<u64> = (0..64)
        .map(|_| rng.gen_range(0..GIB8 / 4096) * 4096)
        .collect();
    let last = |m: &mut dyn DeviceModel| {
        offsets
            .iter()
            .map(|&o| m.service(&Request::read(o, 4096), Duration::ZERO).duration)
            .max()
            .unwrap()
    };
    let array = last(&mut raid(|_| {}));
    let mut one = HddModel::new(HddParams {
        capacity_bytes: GIB8,
        write_cache: false,
        ..HddParams::default()
    })
    .unwrap();
    let disk = last(&mut one);
    assert!(array * 3 < disk, "array {array:?}, one disk {disk:?}");
}

#[test]
fn sequential_streams_fill_stripes_and_skip_read_modify_write() {
    let mut m = raid(|_| {});
    let mut now = Duration::ZERO;
    for i in 0..64 {
        now += m.service(&Request::write(i * MIB1, MIB1), now).duration;
    }
    m.advance(now + Duration::from_secs(1));
    let (reads, writes) = reads_writes(&m);
    // 64 MiB is 170 full stripes of 384 KiB and a tail of 4 chunks: only the tail,
    // left partial when the stream stopped, is read-modify-written (4 data + P + Q).
    assert_eq!((reads, writes), (6, 170 * 8 + 6), "{:?}", m.ops);
    assert_eq!(m.cached_bytes(), 0);
}

#[test]
fn careless_requests_never_panic_and_spindles_never_go_back_in_time() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut m = raid(|p| {
        p.cache_bytes = 1 << 20;
        p.nonvolatile = false;
    });
    let mut now = Duration::ZERO;
    for _ in 0..5000 {
        let offset = match rng.gen_range(0..4) {
            0 => u64::MAX - rng.gen_range(0..MIB1),
            _ => rng.gen_range(0..2 * GIB8),
        };
        let len = match rng.gen_range(0..6) {
            0 => 0,
            1 => rng.gen_range(1..5000),
            2 => 16 * MIB1,
            _ => 4096 * rng.gen_range(1..64),
        };
        let req = match rng.gen_range(0..10) {
            0 => Request::flush(),
            1 => Request::discard(offset, len),
            2..=5 => Request::read(offset, len),
            _ => Request::write(offset, len),
        };
        let before = m.busy.clone();
        let s = m.service(&req, now);
        assert!(s.duration < Duration::from_secs(3600), "{req:?}: {s:?}");
        assert!(m.busy.iter().zip(&before).all(|(a, b)| a >= b), "{req:?}");
        assert!(m.cached_bytes() <= m.p.cache_bytes);
        // Sometimes the next request comes before this one completes (queue depth).
        now += if rng.gen_bool(0.3) {
            Duration::ZERO
        } else {
            s.duration
        };
    }
    // A write of the whole array (a zero-range fallocate, say) streams through the
    // small cache: as long as the disks take to write it, and no longer than that.
    let s = m.service(&Request::write(0, u64::MAX), now);
    let secs = s.duration.as_secs_f64();
    assert!(
        !s.cached && (GIB8 as f64 / 1.5e9..100.0).contains(&secs),
        "{s:?}"
    );
}

#[test]
fn nested_spindle_overrides_change_only_their_keys() {
    let over: toml::Table = "spindle = { rpm = 5400 }\nspindles = 6".parse().unwrap();
    let p = crate::emu::model::registry::with_overrides(NAME, RaidParams::default(), Some(&over))
        .unwrap();
    assert_eq!(p.spindle.rpm, 5400.0);
    assert_eq!(p.spindles, 6);
    assert_eq!(
        p.spindle,
        HddParams {
            rpm: 5400.0,
            ..RaidParams::default().spindle
        },
        "only rpm changed; the spindles' write cache stays off"
    );
}

/// `streams` writers (or readers) at QD1 each, each going through its own region of
/// `per_stream` bytes in `req`-byte requests: the aggregate MB/s the model gives.
fn streams_mb_per_s(m: &mut RaidModel, kind: Kind, streams: u64, per_stream: u64, req: u64) -> f64 {
    let region = m.l.span / streams;
    let mut next: Vec<(Duration, u64)> =
        (0..streams).map(|i| (Duration::ZERO, i * region)).collect();
    let mut end = Duration::ZERO;
    for _ in 0..per_stream / req {
        for (at, off) in next.iter_mut() {
            let d = m
                .service(
                    &Request {
                        kind,
                        offset: *off,
                        len: req,
                    },
                    *at,
                )
                .duration;
            *at += d;
            *off += req;
            end = end.max(*at);
        }
        // Serve the streams in arrival order next round.
        next.sort();
    }
    (streams * per_stream) as f64 / 1e6 / end.as_secs_f64()
}

/// `cargo test --release --lib raid::tests::print_study4_figures -- --ignored --nocapture`
#[test]
#[ignore]
fn print_study4_figures() {
    for cache in [1u64 << 30, 16 << 20, 1 << 20] {
        let mut t = toml::Table::new();
        t.insert("capacity_bytes".into(), toml::Value::Integer(GIB8 as i64));
        t.insert("cache_bytes".into(), toml::Value::Integer(cache as i64));
        for (l, p) in crate::emu::model::predicted_set(NAME, Some(&t)).unwrap() {
            println!(
                "8 GiB array, cache {cache}: {l}: {:.1} IOPS, {:.1} MB/s",
                p.iops, p.mb_per_s
            );
        }
    }
    for (streams, per) in [(1u64, 8u64 << 30), (6, 1 << 30)] {
        for kind in [Kind::Write, Kind::Read] {
            let mut m = RaidModel::new(RaidParams {
                capacity_bytes: 16 << 30,
                ..RaidParams::default()
            })
            .unwrap();
            let r = streams_mb_per_s(&mut m, kind, streams, per, 4 * MIB1);
            println!(
                "16 GiB array, {streams} stream(s) of {} GiB, 4 MiB {kind:?}: {r:.0} MB/s",
                per >> 30
            );
        }
    }
}

#[test]
fn predictions_show_the_cache_and_what_lies_past_it() {
    let mut t = toml::Table::new();
    t.insert("capacity_bytes".into(), toml::Value::Integer(GIB8 as i64));
    let set = crate::emu::model::predicted_set(NAME, Some(&t)).unwrap();
    let iops = |label: &str| set.iter().find(|(l, _)| l == label).unwrap().1.iops;
    let (cached, past) = (
        iops("random write 4K"),
        iops("random write 4K, 16 MiB cache"),
    );
    // 20,000 random writes fit in 1 GiB; through 16 MiB they run at the pace of
    // read-modify-writes on 8 spindles (6 accesses each): about one disk's worth.
    assert!(cached > 10_000.0, "{cached}");
    assert!((80.0..300.0).contains(&past), "{past}");
    assert!(set.iter().all(|(l, _)| l != "random write 4K, no cache"));
}

/// Seven writers streaming 4 MiB records into their own files, as iozone's
/// throughput test does, arrive as interleaved 512 KiB pieces with flushes between:
/// every answer must come, and within what the spindles need for the data.
#[test]
fn seven_interleaved_streams_past_the_cache_are_all_answered() {
    let mut m = raid(|p| p.cache_bytes = 128 << 20);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let per_stream = 75 * MIB1;
    let piece = 512 << 10;
    let bases: Vec<u64> = (0..7).map(|i| i * GIB8 / 8).collect();
    let mut done = [0u64; 7];
    let mut now = Duration::ZERO;
    let mut answered = 0;
    while done.iter().any(|&d| d < per_stream) {
        let w = rng.gen_range(0..7);
        if done[w] >= per_stream {
            continue;
        }
        let req = if rng.gen_ratio(1, 40) {
            Request::flush()
        } else {
            let r = Request::write(bases[w] + done[w], piece);
            done[w] += piece;
            r
        };
        let s = m.service(&req, now);
        answered += 1;
        assert!(s.duration < Duration::from_secs(30), "{req:?}: {s:?}");
        // Up to a few requests in flight: the next often arrives before this one ends.
        if rng.gen_bool(0.5) {
            now += s.duration;
        }
    }
    assert!(answered >= 7 * per_stream / piece);
}
