//! The comparisons with the baseline: per configuration and phase the difference of
//! mean rates, its confidence interval and Welch (and Mann-Whitney) p; then per
//! workload the family correction (Bonferroni over adaptive looks, then Holm) and the
//! decision of each typed [`Outcome`].

use super::build::{samples, Ctx};
use super::model::*;
use crate::analysis::stats::{self, Summary};
use crate::results::record::TrialRecord;

pub(crate) fn compare_all(
    recs: &[&TrialRecord],
    configs: &[ConfigAnalysis],
    phases: &[PhaseInfo],
    baseline: &str,
    ctx: &Ctx,
) -> Vec<Comparison> {
    let of_label = |label: &str| -> Vec<&TrialRecord> {
        recs.iter()
            .copied()
            .filter(|r| r.config.label == label)
            .collect()
    };
    let base_cfg = configs.iter().find(|c| c.label == baseline);
    let base_recs = of_label(baseline);
    configs
        .iter()
        .filter(|c| c.label != baseline)
        .map(|other| {
            let other_recs = of_label(&other.label);
            let phases = phases
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    let base = samples(&base_recs, &info.name).rates;
                    let oth = samples(&other_recs, &info.name).rates;
                    let suspect =
                        other.phases[i].suspect || base_cfg.is_some_and(|b| b.phases[i].suspect);
                    compare_phase(&info.name, &base, &oth, suspect, ctx)
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

/// Compares one phase's rates of a configuration (`other`) with the baseline's.
fn compare_phase(
    phase: &str,
    base: &[f64],
    other: &[f64],
    suspect: bool,
    ctx: &Ctx,
) -> PhaseComparison {
    let mean = |xs: &[f64]| Summary::of(xs).map(|s| s.mean);
    // A zero baseline rate (a phase that did nothing) has no percentage difference.
    let base_mean = mean(base).filter(|m| *m > 0.0);
    let mut cmp = PhaseComparison {
        phase: phase.to_string(),
        n_baseline: base.len(),
        n_other: other.len(),
        // Shown even with too few trials for a test: the reader still sees the means.
        pct: base_mean
            .zip(mean(other))
            .and_then(|(b, o)| finite((o - b) / b * 100.0)),
        ci_low_pct: None,
        ci_high_pct: None,
        p: None,
        mann_whitney_p: stats::mann_whitney(base, other).map(|m| m.p),
        p_adjusted: None,
        significant: false,
        within_noise_band: false,
        suspect,
        outcome: Outcome::NotComparable,
    };
    let welch = stats::welch_with_level(base, other, ctx.confidence)
        .filter(|w| w.p.is_finite() && base_mean.is_some());
    cmp.outcome = if base.len() < 2 || other.len() < 2 {
        Outcome::TooFewTrials
    } else if let (Some(b), Some(w)) = (base_mean, welch) {
        cmp.ci_low_pct = finite(w.ci_low / b * 100.0);
        cmp.ci_high_pct = finite(w.ci_high / b * 100.0);
        cmp.p = Some(w.p);
        // Decided once the workload's family is known: see `adjust_family`.
        Outcome::NoSignificantDifference
    } else {
        Outcome::NotComparable
    };
    cmp
}

/// Adjusts the p-values of one workload's comparisons as a family: Bonferroni over
/// the adaptive looks (when the run was adaptive), then Holm over every
/// configuration x phase with a test. Then decides each outcome on the adjusted p.
/// Returns the family size.
pub(crate) fn adjust_family(comparisons: &mut [Comparison], ctx: &Ctx) -> usize {
    let tested: Vec<&mut PhaseComparison> = comparisons
        .iter_mut()
        .flat_map(|c| c.phases.iter_mut())
        .filter(|p| p.p.is_some())
        .collect();
    let raw: Vec<f64> = tested
        .iter()
        .map(|p| {
            let p = p.p.unwrap_or(1.0);
            ctx.adaptive_looks.map_or(p, |k| stats::sequential_p(p, k))
        })
        .collect();
    let adjusted = stats::holm(&raw);
    let n = tested.len();
    for (cmp, adj) in tested.into_iter().zip(adjusted) {
        cmp.p_adjusted = Some(adj);
        let band = ctx.opts.noise_band * 100.0;
        let pct = cmp.pct.unwrap_or(0.0);
        let p_small = adj < 1.0 - ctx.confidence;
        cmp.within_noise_band = p_small && pct.abs() < band;
        cmp.significant = p_small && !cmp.within_noise_band;
        cmp.outcome = match (cmp.significant, cmp.within_noise_band) {
            (true, _) if pct > 0.0 => Outcome::Faster,
            (true, _) => Outcome::Slower,
            (false, true) => Outcome::WithinNoiseBand,
            (false, false) => Outcome::NoSignificantDifference,
        };
    }
    n
}

/// JSON has no NaN or infinity (serde_json would write `null` and fail to read it
/// back), so non-finite derived values are dropped instead.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}
