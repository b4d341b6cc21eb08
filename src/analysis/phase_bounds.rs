//! Phase times their own operations rule out. A phase whose threads each run their
//! operations one after another cannot be shorter than its slowest operation, nor
//! than half its operations at the median latency shared among its threads (at least
//! half took the median or more). A recorded time below either bound was not measured
//! around the whole phase: a jbench older than the start line (`workload/start_line.rs`)
//! read a threaded phase's clock after releasing its workers, which could then run,
//! even finish, first.
//!
//! Each engine declares whether its threads run their operations one at a time
//! (`sequential_threads` in its `kind.rs`): the fsync engine's do; fio's latencies
//! overlap with `iodepth` and its jobs, so it has no such bound.

use crate::results::record::TrialRecord;
use crate::workload::Latency;

/// Kept below each bound before a time is called impossible: the histogram's median
/// is its bucket's upper edge (within 0.1 %), and the record's figures are rounded.
const SLACK: f64 = 0.99;

/// Trials named in the warning, at most.
const LISTED: usize = 3;

/// The least time, in seconds, a phase of `latency.count` operations can take on
/// `threads` threads that each run theirs one at a time: the larger of
/// `count * p50 / (2 * threads)` and the slowest operation (`max_us`).
pub fn phase_floor_seconds(latency: &Latency, threads: u64) -> f64 {
    if threads == 0 || latency.count == 0 {
        return 0.0;
    }
    let half_at_median = latency.count as f64 * latency.p50_us / (2.0 * threads as f64);
    half_at_median.max(latency.max_us) / 1e6
}

/// `Some(floor)` when `seconds` is impossibly short for the phase's operations (below
/// [`phase_floor_seconds`] by more than rounding allows), else `None`.
pub fn impossible_phase_time(seconds: f64, threads: u64, latency: &Latency) -> Option<f64> {
    let floor = phase_floor_seconds(latency, threads);
    (seconds < floor * SLACK).then_some(floor)
}

/// Threads of a recorded workload whose phase latencies [`impossible_phase_time`]
/// can judge, as its engine declares (`None` for engines whose operations overlap).
fn sequential_threads(r: &TrialRecord) -> Option<u64> {
    (crate::workload::kind::kind_of(&r.workload.kind).sequential_threads)(&r.workload.params)
}

/// One line naming a workload's successful trials with a phase shorter than its
/// operations allow, so their figures are not taken for measurements.
pub(crate) fn impossible_phases_warning(workload: &str, recs: &[&TrialRecord]) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    for r in recs.iter().filter(|r| r.is_ok()) {
        let Some(threads) = sequential_threads(r) else {
            continue;
        };
        for p in &r.phases {
            let Some(l) = &p.latency else { continue };
            if p.name.ends_with(crate::workload::DURABLE_SUFFIX) {
                continue;
            }
            if let Some(floor) = impossible_phase_time(p.seconds, threads, l) {
                found.push(format!(
                    "trial {} ({}) {} took {} for {} operations of median {} µs (max {} µs) on {threads} thread(s), at least {}",
                    r.trial,
                    r.config.label,
                    p.name,
                    fmt_seconds(p.seconds),
                    l.count,
                    super::warnings::fmt_num(l.p50_us),
                    super::warnings::fmt_num(l.max_us),
                    fmt_seconds(floor)
                ));
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    let more = found.len().saturating_sub(LISTED);
    found.truncate(LISTED);
    let tail = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "{workload}: phase times shorter than their own operations allow (the clock did not cover the whole phase; recorded by a jbench that started it after releasing the workers?): {}{tail}; do not use these figures",
        found.join("; ")
    ))
}

/// µs, ms or s, whichever reads best.
fn fmt_seconds(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0} µs", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.3} s", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::PhaseResult;

    fn lat(count: u64, p50_us: f64, max_us: f64) -> Latency {
        Latency {
            count,
            p50_us,
            p95_us: p50_us,
            p99_us: p50_us,
            p999_us: None,
            max_us,
        }
    }

    #[test]
    fn issue_45s_remove_phase_is_impossible() {
        // 200 unlinks of median 19 µs on one thread timed at 32 µs in all.
        let l = lat(200, 19.0, 250.0);
        let floor = phase_floor_seconds(&l, 1);
        assert!((floor - 1.9e-3).abs() < 1e-12, "{floor}");
        assert_eq!(impossible_phase_time(32e-6, 1, &l), Some(floor));
        // 11.6 ms for the same phase is possible.
        assert_eq!(impossible_phase_time(11.6e-3, 1, &l), None);
    }

    #[test]
    fn threads_share_the_median_bound_but_not_the_slowest_operation() {
        let l = lat(400, 10.0, 100.0);
        // 400 x 10 µs / (2 x 4 threads) = 500 µs.
        assert!((phase_floor_seconds(&l, 4) - 500e-6).abs() < 1e-12);
        // 400 x 10 µs / (2 x 40) = 50 µs: the slowest operation's 100 µs rules.
        assert!((phase_floor_seconds(&l, 40) - 100e-6).abs() < 1e-12);
        assert_eq!(impossible_phase_time(99e-6, 40, &l), Some(100e-6));
        assert_eq!(impossible_phase_time(101e-6, 40, &l), None);
    }

    #[test]
    fn rounding_at_the_bound_is_not_impossible() {
        let l = lat(100, 20.0, 20.0);
        let floor = phase_floor_seconds(&l, 1);
        assert_eq!(impossible_phase_time(floor, 1, &l), None);
        assert_eq!(impossible_phase_time(floor * 0.995, 1, &l), None);
        assert!(impossible_phase_time(floor * 0.98, 1, &l).is_some());
    }

    #[test]
    fn nothing_known_bounds_nothing() {
        assert_eq!(impossible_phase_time(0.0, 1, &Latency::default()), None);
        assert_eq!(impossible_phase_time(0.0, 0, &lat(10, 5.0, 9.0)), None);
    }

    fn fsync_rec(trial: usize, threads: u64, remove_seconds: f64) -> TrialRecord {
        let mut r = crate::run::adaptive::tests::rec(trial, "internal", "fsync", 100.0);
        r.workload.kind = "fsync".into();
        r.workload.params = serde_json::json!({"files": 200, "threads": threads});
        r.phases = vec![PhaseResult {
            name: "remove".into(),
            seconds: remove_seconds,
            ops: 200,
            op_unit: "file removals".into(),
            durable_seconds: Some(1.0),
            latency: Some(lat(200, 19.0, 250.0)),
            ..Default::default()
        }];
        r
    }

    #[test]
    fn the_warning_names_the_trials_and_skips_other_kinds() {
        let recs = [fsync_rec(0, 1, 32e-6), fsync_rec(1, 1, 11.6e-3)];
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        assert_eq!(
            impossible_phases_warning("fsync", &refs).as_deref(),
            Some("fsync: phase times shorter than their own operations allow (the clock did not cover the whole phase; recorded by a jbench that started it after releasing the workers?): trial 0 (internal) remove took 32 µs for 200 operations of median 19.00 µs (max 250.0 µs) on 1 thread(s), at least 1.90 ms; do not use these figures")
        );
        assert_eq!(impossible_phases_warning("fsync", &refs[1..]), None);
        let mut fio = fsync_rec(2, 1, 32e-6);
        fio.workload.kind = "fio".into();
        assert_eq!(impossible_phases_warning("fio", &[&fio]), None);
    }

    #[test]
    fn the_warning_reaches_the_workloads_warnings() {
        let recs = vec![fsync_rec(0, 2, 1e-5), fsync_rec(1, 2, 0.5)];
        let a = crate::analysis::analyse(
            &recs,
            &crate::analysis::ReportOptions {
                suspect_below_secs: 0.0,
                ..Default::default()
            },
        );
        let w = &a.workloads[0].warnings;
        let hits: Vec<_> = w
            .iter()
            .filter(|l| l.contains("shorter than their own operations allow"))
            .collect();
        assert_eq!(hits.len(), 1, "{w:?}");
        // The plain phase only, not its `+syncfs` copy.
        assert!(
            hits[0].contains("trial 0 (internal) remove took 10 µs"),
            "{w:?}"
        );
        assert!(!hits[0].contains("trial 1"), "{w:?}");
    }
}
