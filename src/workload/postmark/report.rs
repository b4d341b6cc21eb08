//! PostMark's printed report (its labels, whole seconds and scaled figures), the
//! terse line, and jbench's precise and JSON figures.

use super::*;

/// PostMark's `diff_time`: whole seconds, never below 1 (it divides by them).
pub(super) fn diff_time(t1: u64, t0: u64) -> u64 {
    t1.saturating_sub(t0).max(1)
}

/// PostMark's `scalef`: its `float` figure in megabytes (of 1024 KiB), kilobytes
/// or bytes.
pub(super) fn scalef(v: f32) -> String {
    pub(super) const KB: f32 = 1024.0;
    pub(super) const MB: f32 = 1024.0 * 1024.0;
    if v / MB > 1.0 {
        format!("{:.2} megabytes", f64::from(v / MB))
    } else if v / KB != 0.0 {
        format!("{:.2} kilobytes", f64::from(v / KB))
    } else {
        format!("{:.6} bytes", f64::from(v))
    }
}

/// PostMark's verbose report, figure for figure (integer rates, `time()` seconds).
pub fn compat_report(cfg: &Postmark, tally: &Tally, wall: &WallClock) -> String {
    let c = &tally.counts;
    let elapsed = diff_time(wall.end, wall.start);
    let t_elapsed = diff_time(wall.t_end, wall.t_start);
    let create_alone = diff_time(wall.t_start, wall.start);
    let delete_alone = diff_time(wall.end, wall.t_end);
    let number = u64::from(cfg.number);
    let mixed_created = c.created - number;
    let mixed_deleted = c.deleted - tally.deletion_alone;
    let mut out = String::new();
    let _ = write!(
        out,
        "Time:\n\
         \t{elapsed} seconds total\n\
         \t{t_elapsed} seconds of transactions ({} per second)\n\
         \nFiles:\n\
         \t{} created ({} per second)\n\
         \t\tCreation alone: {number} files ({} per second)\n\
         \t\tMixed with transactions: {mixed_created} files ({} per second)\n\
         \t{} read ({} per second)\n\
         \t{} appended ({} per second)\n\
         \t{} deleted ({} per second)\n\
         \t\tDeletion alone: {} files ({} per second)\n\
         \t\tMixed with transactions: {mixed_deleted} files ({} per second)\n\
         \nData:\n\
         \t{} read ({} per second)\n\
         \t{} written ({} per second)\n",
        u64::from(cfg.transactions) / t_elapsed,
        c.created,
        c.created / elapsed,
        number / create_alone,
        mixed_created / t_elapsed,
        c.read,
        c.read / t_elapsed,
        c.appended,
        c.appended / t_elapsed,
        c.deleted,
        c.deleted / elapsed,
        tally.deletion_alone,
        tally.deletion_alone / delete_alone,
        mixed_deleted / t_elapsed,
        scalef(c.bytes_read_f32),
        scalef(c.bytes_read_f32 / elapsed as f32),
        scalef(c.bytes_written_f32),
        scalef(c.bytes_written_f32 / elapsed as f32),
    );
    out
}

/// PostMark's terse report (`set report terse`): one line of float rates.
pub fn terse_report(cfg: &Postmark, tally: &Tally, wall: &WallClock) -> String {
    let c = &tally.counts;
    let elapsed = diff_time(wall.end, wall.start) as f32;
    let t_elapsed = diff_time(wall.t_end, wall.t_start) as f32;
    let number = cfg.number as f32;
    let rate = |n: f32, d: f32| f64::from(n / d);
    format!(
        "{} {} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2} {:.2}\n",
        elapsed,
        t_elapsed,
        rate(cfg.transactions as f32, t_elapsed),
        rate(c.created as f32, elapsed),
        rate(number, diff_time(wall.t_start, wall.start) as f32),
        rate(c.created as f32 - number, t_elapsed),
        rate(c.read as f32, t_elapsed),
        rate(c.appended as f32, t_elapsed),
        rate(c.deleted as f32, elapsed),
        rate(
            tally.deletion_alone as f32,
            diff_time(wall.end, wall.t_end) as f32
        ),
        rate((c.deleted - tally.deletion_alone) as f32, t_elapsed),
        rate(c.bytes_read_f32, elapsed),
        rate(c.bytes_written_f32, elapsed),
    )
}

/// The same figures from the monotonic clock, with fractional rates; data rates
/// over the total time as PostMark computes them, in MiB/s.
pub fn precise_report(cfg: &Postmark, outcome: &Outcome) -> String {
    let c = &outcome.tally.counts;
    let total: f64 = outcome.phases.iter().map(|p| p.seconds).sum();
    let per = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut out = format!("postmark {}\n", cfg.describe());
    let _ = writeln!(
        out,
        "{:<13} {:>10} {:>10} {:>14} {:<14}",
        "phase", "seconds", "ops", "rate", "unit"
    );
    for p in &outcome.phases {
        let _ = writeln!(
            out,
            "{:<13} {:>10.3} {:>10} {:>14.1} {:<14}",
            p.name,
            p.seconds,
            p.ops,
            p.ops_per_sec(),
            format!("{}/s", p.op_unit)
        );
    }
    let _ = writeln!(
        out,
        "total {total:.3} s; files created {:.1}/s, deleted {:.1}/s; \
         read {:.3} MiB ({:.3} MiB/s), written {:.3} MiB ({:.3} MiB/s)",
        per(c.created, total),
        per(c.deleted, total),
        mib(c.bytes_read),
        mib(c.bytes_read) / total.max(f64::MIN_POSITIVE),
        mib(c.bytes_written),
        mib(c.bytes_written) / total.max(f64::MIN_POSITIVE),
    );
    out
}

/// The run as JSON: PostMark's counts, exact byte totals and both clocks.
pub fn json_report(cfg: &Postmark, outcome: &Outcome) -> serde_json::Value {
    let t = &outcome.tally;
    let c = &t.counts;
    let w = &outcome.wall;
    let seconds: f64 = outcome.phases.iter().map(|p| p.seconds).sum();
    serde_json::json!({
        "workload": "postmark",
        "postmark_version": POSTMARK_VERSION,
        "params": cfg.params(),
        "created": c.created,
        "creation_alone": t.creation_alone,
        "created_mixed": c.created - t.creation_alone,
        "read": c.read,
        "appended": c.appended,
        "deleted": c.deleted,
        "deletion_alone": t.deletion_alone,
        "deleted_mixed": c.deleted - t.deletion_alone,
        "bytes_read": c.bytes_read,
        "bytes_written": c.bytes_written,
        "transactions": t.transactions_done,
        "out_of_files": t.out_of_files(cfg),
        "seconds": seconds,
        "transaction_seconds": outcome.phases.get(1).map_or(0.0, |p| p.seconds),
        "time_seconds": {
            "total": diff_time(w.end, w.start),
            "transactions": diff_time(w.t_end, w.t_start),
        },
        "phases": outcome.phases,
    })
}
