//! The answer on top of a report: per workload, the configurations ranked by mean rate
//! on the workload's main phase, each with its ratio to the next slower one (Fieller
//! confidence interval), whether that difference is real, and how much to trust the
//! whole (trials, worst spread, suspect phases). Typed figures only; the words are
//! written by `report/summary.rs`.

use serde::{Deserialize, Serialize};

use super::build::{samples, Ctx};
use super::model::{Comparison, ConfigAnalysis, PhaseInfo};
use super::stats;
use super::DURABLE_SUFFIX;
use crate::results::record::TrialRecord;

/// One workload's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    /// The phase the ranking is on.
    pub main_phase: String,
    /// Rate unit of that phase, e.g. `files/s`.
    pub rate_unit: String,
    /// Fastest first. Each but the last carries its comparison with the next one.
    pub ranking: Vec<Ranked>,
    pub trust: Trust,
}

/// One configuration's place in the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    pub config: String,
    /// Mean rate on the main phase.
    pub mean: f64,
    /// Successful trials that measured the main phase.
    pub n: usize,
    /// Against the next slower configuration; `None` for the slowest.
    pub versus: Option<Ratio>,
}

/// A configuration against the next slower one on the main phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// The next slower configuration.
    pub slower: String,
    /// mean(this) / mean(slower); `None` when the slower mean is not above 0.
    pub ratio: Option<f64>,
    /// Fieller confidence interval of the ratio at the report's level; `None` with
    /// too few trials or when the slower mean is too noisy for a bounded interval.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The p the decision uses: Holm-adjusted when the pair is a comparison with the
    /// baseline, else the pair's own two-sided Welch p.
    pub p: Option<f64>,
    pub p_source: PSource,
    /// p below 1 - confidence and the difference outside the noise band.
    pub significant: bool,
    /// p below 1 - confidence but the difference inside the noise band.
    pub within_noise_band: bool,
}

/// Where a [`Ratio`]'s p comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PSource {
    /// The workload's comparison with the baseline, adjusted with Holm.
    BaselineHolm,
    /// Welch's test of this pair alone, not adjusted.
    PairWelch,
    /// No test: fewer than 2 trials on a side, or unusable values.
    None,
}

/// How much to trust a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trust {
    /// Fewest and most successful trials of a ranked configuration on the main phase.
    pub min_trials: usize,
    pub max_trials: usize,
    /// The largest coefficient of variation of a ranked configuration's rate on the
    /// main phase, and whose it is.
    pub worst_cv: Option<f64>,
    pub worst_cv_config: Option<String>,
    /// Suspect (configuration, phase) pairs of the workload, every phase counted.
    pub suspect_phases: usize,
    /// Whether the main phase itself is suspect for a ranked configuration.
    pub main_phase_suspect: bool,
}

/// The phase that answers an engine's question: fsync's `create_fsync`, fdtree's
/// `file_create`, postmark's `transactions`, iozone's `write`; any other engine, or
/// an engine whose phase is absent (iozone without its write test), its first phase.
/// When the workload was timed up to `syncfs` (`durable = true`), the `+syncfs`
/// variant of that phase. `None` without phases.
pub fn default_main_phase(kind: &str, phases: &[&str]) -> Option<String> {
    let preferred = match kind {
        "fsync" => Some("create_fsync"),
        "fdtree" => Some("file_create"),
        "postmark" => Some("transactions"),
        "iozone" => Some("write"),
        _ => None,
    };
    let base = preferred
        .filter(|p| phases.contains(p))
        .or_else(|| {
            phases
                .iter()
                .copied()
                .find(|p| !p.ends_with(DURABLE_SUFFIX))
        })
        .or_else(|| phases.first().copied())?;
    let durable = format!("{base}{DURABLE_SUFFIX}");
    Some(if phases.contains(&durable.as_str()) {
        durable
    } else {
        base.to_string()
    })
}

/// What the summary of one workload is built from.
pub(crate) struct Inputs<'a> {
    pub(crate) name: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) recs: &'a [&'a TrialRecord],
    pub(crate) phases: &'a [PhaseInfo],
    pub(crate) configs: &'a [ConfigAnalysis],
    pub(crate) baseline: Option<&'a str>,
    pub(crate) comparisons: &'a [Comparison],
    pub(crate) suspect_phases: usize,
}

/// The summary of one workload; a warning goes to `warnings` when the spec's
/// `main_phase` is not a phase of the records.
pub(crate) fn summarise(
    i: &Inputs,
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Option<WorkloadSummary> {
    let names: Vec<&str> = i.phases.iter().map(|p| p.name.as_str()).collect();
    let default = default_main_phase(i.kind, &names)?;
    let main = match ctx.opts.main_phases.get(i.name) {
        Some(p) if names.contains(&p.as_str()) => p.clone(),
        Some(p) => {
            warnings.push(format!(
                "{}: main_phase `{p}` is not a phase of this workload's results (phases: {}); the summary ranks on `{default}` instead",
                i.name,
                names.join(", ")
            ));
            default
        }
        None => default,
    };
    let idx = names.iter().position(|n| *n == main)?;
    let mut ranked: Vec<(&ConfigAnalysis, f64)> = i
        .configs
        .iter()
        .filter_map(|c| Some((c, c.phases[idx].rate?.mean)))
        .filter(|(_, m)| m.is_finite())
        .collect();
    if ranked.is_empty() {
        return None;
    }
    // Stable: equal means keep the configuration order.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let rates = |label: &str| -> Vec<f64> {
        let of: Vec<&TrialRecord> = i
            .recs
            .iter()
            .copied()
            .filter(|r| r.config.label == label)
            .collect();
        samples(&of, &main).rates
    };
    let ranking = ranked
        .iter()
        .enumerate()
        .map(|(k, (c, mean))| Ranked {
            config: c.label.clone(),
            mean: *mean,
            n: c.phases[idx].n,
            versus: ranked.get(k + 1).map(|(slower, slower_mean)| {
                let pair = Pair {
                    fast: (&c.label, *mean, rates(&c.label)),
                    slow: (&slower.label, *slower_mean, rates(&slower.label)),
                };
                ratio(&pair, &main, i, ctx)
            }),
        })
        .collect();
    Some(WorkloadSummary {
        rate_unit: i.phases[idx].rate_unit.clone(),
        trust: trust(&ranked, idx, i.suspect_phases),
        main_phase: main,
        ranking,
    })
}

struct Pair<'a> {
    fast: (&'a str, f64, Vec<f64>),
    slow: (&'a str, f64, Vec<f64>),
}

fn ratio(pair: &Pair, phase: &str, i: &Inputs, ctx: &Ctx) -> Ratio {
    let (fast, slow) = (&pair.fast, &pair.slow);
    let value = (slow.1 > 0.0)
        .then(|| fast.1 / slow.1)
        .filter(|r| r.is_finite());
    let (ci_low, ci_high) = fieller(&fast.2, &slow.2, ctx.confidence).unzip();
    let mut out = Ratio {
        slower: slow.0.to_string(),
        ratio: value,
        ci_low,
        ci_high,
        p: None,
        p_source: PSource::None,
        significant: false,
        within_noise_band: false,
    };
    // A pair with the baseline reuses its comparison, so the summary and the
    // comparison table never disagree.
    let other = match i.baseline {
        Some(b) if b == fast.0 => Some(slow.0),
        Some(b) if b == slow.0 => Some(fast.0),
        _ => None,
    };
    let from_baseline = other.and_then(|o| {
        i.comparisons
            .iter()
            .find(|c| c.config == o)?
            .phases
            .iter()
            .find(|p| p.phase == phase)
    });
    if let Some(c) = from_baseline {
        if let Some(p) = c.p_adjusted {
            out.p = Some(p);
            out.p_source = PSource::BaselineHolm;
            out.significant = c.significant;
            out.within_noise_band = c.within_noise_band;
        }
        return out;
    }
    let welch = stats::welch_with_level(&slow.2, &fast.2, ctx.confidence)
        .filter(|w| w.p.is_finite() && value.is_some());
    if let (Some(w), Some(r)) = (welch, value) {
        let p_small = w.p < 1.0 - ctx.confidence;
        out.p = Some(w.p);
        out.p_source = PSource::PairWelch;
        out.within_noise_band = p_small && (r - 1.0).abs() < ctx.opts.noise_band;
        out.significant = p_small && !out.within_noise_band;
    }
    out
}

/// Fieller's confidence interval of mean(num) / mean(den) for independent samples,
/// with the Welch–Satterthwaite degrees of freedom of the pair. `None` with fewer than
/// 2 values on a side, or when the denominator's mean is not clearly above zero (the
/// interval is then unbounded).
pub fn fieller(num: &[f64], den: &[f64], level: f64) -> Option<(f64, f64)> {
    let w = stats::welch_with_level(den, num, level)?;
    let (sa, sb) = (stats::Summary::of(num)?, stats::Summary::of(den)?);
    let (a, b) = (sa.mean, sb.mean);
    let va = sa.sd? * sa.sd? / sa.n as f64;
    let vb = sb.sd? * sb.sd? / sb.n as f64;
    let t = stats::t_quantile(level, w.df);
    let t2 = t * t;
    let denom = b * b - t2 * vb;
    if denom.is_nan() || denom <= 0.0 || b <= 0.0 {
        return None;
    }
    let disc = (a * a * vb + b * b * va - t2 * va * vb).max(0.0);
    let half = t * disc.sqrt();
    let (lo, hi) = ((a * b - half) / denom, (a * b + half) / denom);
    (lo.is_finite() && hi.is_finite()).then_some((lo, hi))
}

fn trust(ranked: &[(&ConfigAnalysis, f64)], idx: usize, suspect_phases: usize) -> Trust {
    let trials: Vec<usize> = ranked.iter().map(|(c, _)| c.phases[idx].n).collect();
    let worst = ranked
        .iter()
        .filter_map(|(c, _)| Some((c, c.phases[idx].rate?.cv())))
        .filter(|(_, cv)| cv.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1));
    Trust {
        min_trials: trials.iter().copied().min().unwrap_or(0),
        max_trials: trials.iter().copied().max().unwrap_or(0),
        worst_cv: worst.map(|w| w.1),
        worst_cv_config: worst.map(|w| w.0.label.clone()),
        suspect_phases,
        main_phase_suspect: ranked.iter().any(|(c, _)| c.phases[idx].suspect),
    }
}
