//! What a qualification says, in words and in a table.

use super::{FlushShape, Pattern, Qualification, Rate, FDATASYNC_P99_LIMIT_MS};
use crate::units::format_size;

/// The findings: what the device is as a journal or log device.
pub fn findings(q: &Qualification) -> Vec<String> {
    let mut out = Vec::new();
    if q.memory {
        out.push(format!(
            "{} is on {}: these figures are memory's, not a disk's. Measure in a directory on the device that will hold the journal.",
            q.target, q.filesystem
        ));
    }
    let measured = |p: Pattern| q.measured.contains(&p);
    if !q.direct_io && q.measured.iter().any(|p| p.uses_data()) {
        out.push(
            "the file system refused O_DIRECT: reads and writes went through the page cache, so only the flushes reached the device".into(),
        );
    }
    let f = &q.fdatasync;
    let p99_ms = f.p99_us / 1e3;
    if measured(Pattern::Fdatasync) && f.count > 0 {
        out.push(format!(
        "fdatasync after {}-byte appends: p50 {}, p99 {}, p99.9 {} ({} appends): the p99 is {} the {FDATASYNC_P99_LIMIT_MS:.0} ms a log device should stay under (etcd's rule of thumb)",
        q.append_bytes,
        ms(f.p50_us),
        ms(f.p99_us),
        ms(f.p999_us),
        f.count,
        if p99_ms <= FDATASYNC_P99_LIMIT_MS { "within" } else { "OVER" }
    ));
    }
    if let (Some(small), Some(shape)) = (q.write_flush.first(), q.flush_shape) {
        out.push(match shape {
        FlushShape::Cheap => format!(
            "a flush costs about what a write does ({} after a {} write of {}): power-loss protection, a write-through cache, or a disk that ignores flushes (only the crash lab can tell the last apart)",
            ms(small.flush.p50_us),
            format_size(small.bytes),
            ms(small.write.p50_us)
        ),
        FlushShape::DrainsCache => format!(
            "a flush costs {} after a {} write of {}: a volatile write cache is being drained, and every commit waits for it",
            ms(small.flush.p50_us),
            format_size(small.bytes),
            ms(small.write.p50_us)
        ),
    });
    }
    if q.looks_rotational {
        out.push(format!(
            "random 4 KiB reads take {} at the median: a rotating disk (seek and rotation)",
            ms(q.random_read_4k.latency.p50_us)
        ));
    }
    if q.rotational == Some(true) && !q.looks_rotational && !q.memory && measured(Pattern::Random) {
        out.push(format!(
            "the kernel calls {} rotational, but random 4 KiB reads take {} at the median: no seek in sight (a virtual disk, or a cache in front of the platters); trust the measurement",
            q.device,
            ms(q.random_read_4k.latency.p50_us)
        ));
    }
    if measured(Pattern::Fdatasync) && f.count > 0 {
        let per_s = 1e6 / f.p50_us.max(1e-3);
        out.push(format!(
        "an fsync-heavy workload will commit at most ~{} times per second with the journal here (one fdatasync of {} per commit), fewer when a commit writes more",
        round_sig(per_s),
        ms(f.p50_us)
    ));
    }
    out
}

/// The measurement as a table, then the findings.
pub fn render(q: &Qualification) -> String {
    let uses_data = q.measured.iter().any(|p| p.uses_data());
    let mut s = format!(
        "qualify {} ({}{}{})\n\n",
        q.target,
        q.filesystem,
        if q.device.is_empty() {
            String::new()
        } else {
            format!(
                " on {}{}",
                q.device,
                match q.rotational {
                    Some(true) => ", rotational",
                    Some(false) => ", non-rotational",
                    None => "",
                }
            )
        },
        if uses_data {
            format!(
                "; {} scratch file, {}",
                format_size(q.size),
                if q.direct_io { "O_DIRECT" } else { "buffered" }
            )
        } else {
            String::new()
        }
    );
    if uses_data {
        s.push_str(&format!(
            "{:<26} {:>8} {:>10} {:>9} {:>10} {:>10} {:>10}\n",
            "pattern (queue depth 1)", "requests", "IOPS", "MB/s", "p50", "p99", "p99.9"
        ));
    }
    let measured = |p: Pattern| q.measured.contains(&p);
    let mut row = |name: String, r: &Rate| {
        if r.requests == 0 {
            return;
        }
        s.push_str(&format!(
            "{:<26} {:>8} {:>10.1} {:>9.1} {:>10} {:>10} {:>10}\n",
            name,
            r.requests,
            r.iops,
            r.mb_per_s,
            ms(r.latency.p50_us),
            ms(r.latency.p99_us),
            ms(r.latency.p999_us)
        ));
    };
    row("sequential write 1M".into(), &q.sequential_write_1m);
    row("sequential read 1M".into(), &q.sequential_read_1m);
    row("  the same, at the end".into(), &q.sequential_read_1m_end);
    row("random read 4K".into(), &q.random_read_4k);
    row("random write 4K (+flush)".into(), &q.random_write_4k);
    if measured(Pattern::WriteFlush) || measured(Pattern::Rewrite) {
        s.push_str(&format!(
            "\n{:<26} {:>8} {:>10} {:>10} {:>12} {:>12}\n",
            "write, then flush", "requests", "write p50", "flush p50", "both p50", "both p99"
        ));
        let fresh = q
            .fresh_write_flush
            .iter()
            .map(|w| (format!("{}, never-written", format_size(w.bytes)), w));
        let rows = q
            .write_flush
            .iter()
            .map(|w| (format_size(w.bytes), w))
            .chain(fresh);
        for (label, w) in rows {
            s.push_str(&format!(
                "{:<26} {:>8} {:>10} {:>10} {:>12} {:>12}\n",
                label,
                w.write.count,
                ms(w.write.p50_us),
                ms(w.flush.p50_us),
                ms(w.write_flush.p50_us),
                ms(w.write_flush.p99_us)
            ));
        }
        if measured(Pattern::Rewrite) {
            s.push_str(&format!(
                "{:<26} {:>8} {:>10} {:>10} {:>12} {:>12}\n",
                "4K rewritten in place",
                q.rewrite_flush.count,
                "",
                "",
                ms(q.rewrite_flush.p50_us),
                ms(q.rewrite_flush.p99_us)
            ));
        }
    }
    if measured(Pattern::Fdatasync) {
        if uses_data {
            s.push('\n');
        }
        s.push_str(&format!(
            "{:<26} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
            "append, then fdatasync", "requests", "p50", "p99", "p99.9", "max"
        ));
        s.push_str(&format!(
            "{:<26} {:>8} {:>10} {:>10} {:>10} {:>10}\n\n",
            format!("{} bytes", q.append_bytes),
            q.fdatasync.count,
            ms(q.fdatasync.p50_us),
            ms(q.fdatasync.p99_us),
            ms(q.fdatasync.p999_us),
            ms(q.fdatasync.max_us)
        ));
    } else {
        s.push('\n');
    }
    for f in &q.findings {
        s.push_str(&format!("- {f}\n"));
    }
    s
}

/// µs as µs below a millisecond, else ms.
fn ms(us: f64) -> String {
    if us < 10.0 {
        format!("{us:.1} µs")
    } else if us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1e3)
    }
}

/// Two significant figures: a rate that is an estimate reads as one.
fn round_sig(v: f64) -> String {
    if v >= 100.0 {
        let mag = 10f64.powi(v.log10().floor() as i32 - 1);
        format!("{:.0}", (v / mag).round() * mag)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::measure::Latency;
    use crate::qualify::{WriteFlush, APPEND_BYTES};

    pub(in crate::qualify) fn lat(p50: f64, p99: f64) -> Latency {
        Latency {
            count: 100,
            mean_us: p50,
            p50_us: p50,
            p99_us: p99,
            p999_us: p99 * 1.2,
            max_us: p99 * 2.0,
        }
    }

    pub(in crate::qualify) fn q(
        fsync_p50: f64,
        fsync_p99: f64,
        write: f64,
        flush: f64,
    ) -> Qualification {
        let wf = WriteFlush {
            bytes: 4096,
            write: lat(write, write * 2.0),
            flush: lat(flush, flush * 2.0),
            write_flush: lat(write + flush, (write + flush) * 2.0),
        };
        let small = wf;
        let mut q = Qualification {
            target: "/data".into(),
            filesystem: "ext4".into(),
            device: "/dev/vda1".into(),
            rotational: Some(false),
            write_cache: "write back".into(),
            memory: false,
            direct_io: true,
            through_loop_image: false,
            size: 1 << 30,
            seconds: 60.0,
            measured: Pattern::ALL.to_vec(),
            sequential_write_1m: Rate::default(),
            sequential_read_1m: Rate::default(),
            sequential_read_1m_end: Rate::default(),
            random_read_4k: Rate::default(),
            random_write_4k: Rate::default(),
            write_flush: vec![wf],
            fresh_write_flush: Vec::new(),
            rewrite_flush: lat(write + flush, (write + flush) * 2.0),
            fdatasync: lat(fsync_p50, fsync_p99),
            append_bytes: APPEND_BYTES,
            flush_shape: Some(super::super::shape(&small)),
            looks_rotational: false,
            model: None,
            findings: Vec::new(),
        };
        q.findings = findings(&q);
        q
    }

    #[test]
    fn a_protected_ssd_is_within_the_rule_and_its_flush_is_cheap() {
        let q = q(158.0, 400.0, 60.0, 90.0);
        assert_eq!(q.flush_shape, Some(FlushShape::Cheap));
        let all = q.findings.join("\n");
        assert!(all.contains("p99 is within the 10 ms"), "{all}");
        assert!(all.contains("costs about what a write does"), "{all}");
        assert!(all.contains("~6300 times per second"), "{all}");
        assert!(!all.contains("memory's"), "{all}");
    }

    #[test]
    fn a_drained_cache_and_a_slow_p99_are_named() {
        let q = q(1600.0, 12_500.0, 20.0, 2000.0);
        assert_eq!(q.flush_shape, Some(FlushShape::DrainsCache));
        let all = q.findings.join("\n");
        assert!(all.contains("p99 is OVER the 10 ms"), "{all}");
        assert!(
            all.contains("volatile write cache is being drained"),
            "{all}"
        );
        assert!(all.contains("~630 times per second"), "{all}");
        let table = render(&q);
        assert!(
            table.contains("12.50 ms") && table.contains("- fdatasync after 2300-byte appends"),
            "{table}"
        );
    }

    #[test]
    fn memory_is_said_to_be_memory() {
        let mut q = q(2.0, 5.0, 1.0, 1.0);
        q.memory = true;
        q.filesystem = "tmpfs".into();
        q.direct_io = false;
        let all = findings(&q).join("\n");
        assert!(
            all.contains("memory's, not a disk's") && all.contains("refused O_DIRECT"),
            "{all}"
        );
    }
}
