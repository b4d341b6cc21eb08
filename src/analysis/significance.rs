//! The comparisons with the baseline, per configuration and phase, read off the
//! workload's decided tests ([`super::families`]): the ratio and its interval at the
//! level the comparison was decided at, Welch's p and its adjusted p, Mann-Whitney's p
//! for reference, and the typed [`Outcome`].

use super::context::samples;
use super::families::Test;
use super::model::*;
use crate::analysis::stats;
use crate::results::record::TrialRecord;

pub(crate) fn comparisons(
    recs: &[&TrialRecord],
    configs: &[ConfigAnalysis],
    phases: &[PhaseInfo],
    baseline: &str,
    tests: &[Test],
) -> Vec<Comparison> {
    let rates = |label: &str, phase: &str| -> Vec<f64> {
        let of: Vec<&TrialRecord> = recs
            .iter()
            .copied()
            .filter(|r| r.config.label == label)
            .collect();
        samples(&of, phase).rates
    };
    let base_cfg = configs.iter().find(|c| c.label == baseline);
    configs
        .iter()
        .filter(|c| c.label != baseline)
        .map(|other| {
            let phases = phases
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    let suspect =
                        other.phases[i].suspect || base_cfg.is_some_and(|b| b.phases[i].suspect);
                    let test = tests
                        .iter()
                        .find(|t| t.is_pair(baseline, &other.label, &info.name));
                    let mw = stats::mann_whitney(
                        &rates(baseline, &info.name),
                        &rates(&other.label, &info.name),
                    )
                    .map(|m| m.p);
                    from_test(&info.name, test, suspect, mw)
                })
                .collect();
            Comparison {
                config: other.label.clone(),
                baseline: baseline.to_string(),
                phases,
            }
        })
        .collect()
}

/// The comparison of `other` with the baseline on `phase`, from its decided test
/// (oriented baseline -> other).
fn from_test(
    phase: &str,
    test: Option<&Test>,
    suspect: bool,
    mann_whitney_p: Option<f64>,
) -> PhaseComparison {
    let mut cmp = PhaseComparison {
        phase: phase.to_string(),
        n_baseline: test.map_or(0, |t| t.n_a),
        n_other: test.map_or(0, |t| t.n_b),
        pct: None,
        ci_low_pct: None,
        ci_high_pct: None,
        p: None,
        p_adjusted: None,
        ratio: None,
        ratio_ci_low: None,
        ratio_ci_high: None,
        ci_level: None,
        family: None,
        mann_whitney_p,
        significant: false,
        within_noise_band: false,
        decision: None,
        suspect,
        outcome: Outcome::NotComparable,
    };
    let Some(t) = test else {
        return cmp;
    };
    cmp.family = Some(t.family.clone());
    cmp.ratio = t.ratio;
    // Shown even with too few trials for a test: the reader still sees the means.
    cmp.pct = t.ratio.map(|r| (r - 1.0) * 100.0).and_then(finite);
    if t.n_a < 2 || t.n_b < 2 {
        cmp.outcome = Outcome::TooFewTrials;
        return cmp;
    }
    let Some(p) = t.p else {
        return cmp;
    };
    cmp.p = Some(p);
    cmp.p_adjusted = t.p_adjusted;
    cmp.ci_level = t.level;
    if let Some(ci) = t.ci {
        cmp.ratio_ci_low = Some(ci.low);
        cmp.ratio_ci_high = ci.high;
        cmp.ci_low_pct = finite((ci.low - 1.0) * 100.0);
        cmp.ci_high_pct = ci.high.and_then(|h| finite((h - 1.0) * 100.0));
    }
    cmp.decision = t.decision;
    cmp.outcome = match (t.decision, t.ratio) {
        (Some(d), Some(r)) => Outcome::of(d, r),
        _ => Outcome::NotComparable,
    };
    cmp.significant = matches!(cmp.outcome, Outcome::Faster | Outcome::Slower);
    cmp.within_noise_band = cmp.outcome == Outcome::Equivalent;
    cmp
}

/// JSON has no NaN or infinity (serde_json would write `null` and fail to read it
/// back), so non-finite derived values are dropped instead.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}
