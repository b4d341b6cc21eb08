//! Tail latency as an answer of its own: per configuration, the p50, p99 and p99.9 of
//! each operation of the workload's latency phase (a commit, an fsync'ed write), as
//! the mean over trials of each trial's own percentile with its interval, and each
//! configuration's p99 against the baseline's with the rule rates are decided by
//! ([`super::decision`]), at the tail's own band.
//!
//! Why per trial: a percentile is a property of one trial's operations (never averaged
//! inside a trial, never pooled across trials that ran on fresh file systems at
//! different moments); the trials are the independent units, so the spread between
//! them is what an interval must carry. The ratio's interval is Fieller's over the
//! trials' p99s, the same interval the rates' comparisons print.
//!
//! Why a band of its own: a p99 moves more between trials than a mean rate does, so
//! the rates' ±2% would leave every tail comparison undecided; ±10% (`tail_band`) is
//! still well inside what a person sizing for the tail acts on.

use serde::{Deserialize, Serialize};

use super::decision::{self, Decision};
use super::ratio::fieller;
use super::stats::Summary;
use crate::results::record::TrialRecord;
use crate::workload::Latency;

pub use crate::experiment::spec::DEFAULT_TAIL_BAND;

/// One workload's tail latencies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailAnalysis {
    /// The phase whose operations were timed, and what one operation is.
    pub phase: String,
    pub op_unit: String,
    /// The band the p99 comparisons were decided against (0.10 = ±10%).
    pub band: f64,
    /// Confidence of every interval here.
    pub level: f64,
    pub baseline: Option<String>,
    pub configs: Vec<ConfigTail>,
}

/// One configuration's percentiles over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigTail {
    pub config: String,
    /// Trials with a latency summary of the phase.
    pub trials: usize,
    /// Operations timed per trial (the smallest): a p99.9 of fewer than 1000 is
    /// the trial's slowest operation or close to it.
    pub ops_per_trial: u64,
    pub p50: Percentile,
    pub p99: Percentile,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999: Option<Percentile>,
    /// p99(config) / p99(baseline) with its interval and decision; below 1 is a
    /// lower (better) tail. `None` for the baseline and with fewer than 2 trials a side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_vs_baseline: Option<TailVersus>,
}

/// A percentile's mean over trials (µs) and the interval of that mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    pub mean_us: f64,
    pub ci_low_us: Option<f64>,
    pub ci_high_us: Option<f64>,
}

/// A configuration's p99 against the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailVersus {
    pub baseline: String,
    pub baseline_p99_us: f64,
    /// p99(config) / p99(baseline).
    pub ratio: f64,
    pub ci_low: f64,
    /// `None`: unbounded above.
    pub ci_high: Option<f64>,
    pub decision: Decision,
}

/// The phase whose per-operation latency the tail is read from: the main phase when
/// its trials carry one, else the first phase that does in every timed trial.
fn latency_phase(recs: &[&TrialRecord], main_phase: Option<&str>) -> Option<(String, String)> {
    let ok: Vec<&TrialRecord> = recs.iter().copied().filter(|r| r.is_ok()).collect();
    let has = |name: &str| {
        !ok.is_empty()
            && ok.iter().all(|r| {
                r.phases
                    .iter()
                    .any(|p| p.name == name && p.latency.as_ref().is_some_and(|l| l.count > 0))
            })
    };
    let names = ok.first()?.phases.iter().map(|p| p.name.as_str());
    let name = main_phase
        .filter(|m| has(m))
        .or_else(|| names.into_iter().find(|n| has(n)))?;
    let unit = ok[0]
        .phases
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.op_unit.clone())
        .unwrap_or_default();
    Some((name.to_string(), unit))
}

/// Each timed trial's latency summary of `phase`, for one configuration.
fn trial_tails(recs: &[&TrialRecord], config: &str, phase: &str) -> Vec<Latency> {
    recs.iter()
        .filter(|r| r.is_ok() && r.config.label == config)
        .filter_map(|r| r.phases.iter().find(|p| p.name == phase)?.latency.clone())
        .filter(|l| l.count > 0)
        .collect()
}

fn percentile(xs: &[f64], level: f64) -> Option<Percentile> {
    let s = Summary::of(xs)?;
    let ci = s.ci(level);
    Some(Percentile {
        mean_us: s.mean,
        ci_low_us: ci.map(|c| c.0),
        ci_high_us: ci.map(|c| c.1),
    })
}

/// The tail of one workload's records; `None` when no phase carries per-operation
/// latency in every timed trial.
pub fn analyse(
    recs: &[&TrialRecord],
    configs: &[String],
    main_phase: Option<&str>,
    baseline: Option<&str>,
    band: f64,
    level: f64,
) -> Option<TailAnalysis> {
    let (phase, op_unit) = latency_phase(recs, main_phase)?;
    let base_p99: Vec<f64> = baseline
        .map(|b| {
            trial_tails(recs, b, &phase)
                .iter()
                .map(|t| t.p99_us)
                .collect()
        })
        .unwrap_or_default();
    let configs: Vec<ConfigTail> = configs
        .iter()
        .filter_map(|c| {
            let t = trial_tails(recs, c, &phase);
            let p50: Vec<f64> = t.iter().map(|x| x.p50_us).collect();
            let p99: Vec<f64> = t.iter().map(|x| x.p99_us).collect();
            let p999: Option<Vec<f64>> = t.iter().map(|x| x.p999_us).collect();
            let versus = baseline.filter(|b| *b != c).and_then(|b| {
                let ci = fieller(&p99, &base_p99, level)?;
                let base_mean = Summary::of(&base_p99)?.mean;
                Some(TailVersus {
                    baseline: b.to_string(),
                    baseline_p99_us: base_mean,
                    ratio: Summary::of(&p99)?.mean / base_mean,
                    ci_low: ci.low,
                    ci_high: ci.high,
                    decision: decision::of(ci, band),
                })
            });
            Some(ConfigTail {
                config: c.clone(),
                trials: t.len(),
                ops_per_trial: t.iter().map(|x| x.count).min()?,
                p50: percentile(&p50, level)?,
                p99: percentile(&p99, level)?,
                p999: p999.and_then(|v| percentile(&v, level)),
                p99_vs_baseline: versus,
            })
        })
        .collect();
    (!configs.is_empty()).then(|| TailAnalysis {
        phase,
        op_unit,
        band,
        level,
        baseline: baseline.map(str::to_string),
        configs,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::workload::PhaseResult;

    fn trials(config: &str, p99s: &[f64]) -> Vec<TrialRecord> {
        trials_of("pg", config, p99s)
    }

    /// Trials of `config` on `workload` whose commit p99s are `p99s` (p50 a tenth).
    pub(crate) fn trials_of(workload: &str, config: &str, p99s: &[f64]) -> Vec<TrialRecord> {
        p99s.iter()
            .enumerate()
            .map(|(i, &p99)| {
                let mut r = crate::run::adaptive::tests::rec(i, config, workload, 1.0);
                r.phases = vec![PhaseResult {
                    name: "commit".into(),
                    seconds: 10.0,
                    ops: 2000,
                    op_unit: "commits".into(),
                    latency: Some(Latency {
                        count: 2000,
                        p50_us: p99 / 10.0,
                        p95_us: p99 / 2.0,
                        p99_us: p99,
                        p999_us: Some(p99 * 2.0),
                        max_us: p99 * 3.0,
                    }),
                    ..Default::default()
                }];
                r
            })
            .collect()
    }

    fn run(recs: &[TrialRecord]) -> TailAnalysis {
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        let configs = vec!["internal".to_string(), "wal-disk".to_string()];
        analyse(
            &refs,
            &configs,
            Some("commit"),
            Some("internal"),
            DEFAULT_TAIL_BAND,
            0.95,
        )
        .unwrap()
    }

    #[test]
    fn a_tail_four_times_lower_is_different_with_its_interval_round_the_ratio() {
        let mut recs = trials("internal", &[40_000.0, 41_000.0, 42_000.0, 41_000.0]);
        recs.extend(trials("wal-disk", &[9_000.0, 9_200.0, 9_100.0, 9_300.0]));
        let t = run(&recs);
        assert_eq!(t.phase, "commit");
        let w = &t.configs[1];
        let v = w.p99_vs_baseline.as_ref().unwrap();
        // 9150 / 41000
        assert!((v.ratio - 9150.0 / 41_000.0).abs() < 1e-9, "{v:?}");
        assert!(v.ci_low < v.ratio && v.ci_high.unwrap() > v.ratio, "{v:?}");
        assert!(v.ci_high.unwrap() < 1.0 / 1.1, "{v:?}");
        assert_eq!(v.decision, Decision::Different);
        assert!((w.p999.unwrap().mean_us - 18_300.0).abs() < 1e-6);
        assert!(t.configs[0].p99_vs_baseline.is_none());
    }

    #[test]
    fn steady_equal_tails_are_equivalent_and_noisy_ones_undecided() {
        let mut recs = trials("internal", &[10_000.0, 10_100.0, 9_900.0, 10_000.0]);
        recs.extend(trials("wal-disk", &[10_050.0, 9_950.0, 10_000.0, 10_020.0]));
        let v = run(&recs).configs[1].p99_vs_baseline.clone().unwrap();
        assert_eq!(v.decision, Decision::Equivalent, "{v:?}");

        let mut recs = trials("internal", &[10_000.0, 14_000.0, 7_000.0]);
        recs.extend(trials("wal-disk", &[8_000.0, 13_000.0, 9_000.0]));
        let v = run(&recs).configs[1].p99_vs_baseline.clone().unwrap();
        assert_eq!(v.decision, Decision::Undecided, "{v:?}");
        // The word follows the interval: neither wholly inside nor outside ±10%.
        assert!(v.ci_low < 1.0 / 1.1 || v.ci_high.is_none_or(|h| h > 1.1));
    }

    #[test]
    fn no_latency_means_no_tail_and_one_trial_no_comparison() {
        let mut recs = trials("internal", &[10_000.0]);
        recs.extend(trials("wal-disk", &[5_000.0]));
        let t = run(&recs);
        assert!(t.configs[1].p99_vs_baseline.is_none());
        assert!(t.configs[1].p99.ci_low_us.is_none());
        for r in &mut recs {
            r.phases[0].latency = None;
        }
        let refs: Vec<&TrialRecord> = recs.iter().collect();
        assert!(analyse(&refs, &["internal".into()], None, None, 0.1, 0.95).is_none());
    }
}
