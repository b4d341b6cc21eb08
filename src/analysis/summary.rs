//! The answer on top of a report: per workload, the configurations ranked by mean rate
//! on the workload's main phase, each with its ratio to the next slower one (Fieller
//! confidence interval), whether that difference is real, and how much to trust the
//! whole (trials, worst spread, suspect phases). Typed figures only; the words are
//! written by `report/summary.rs`.

use super::context::{Ctx, DURABLE_SUFFIX};
use super::decision::Decision;
use super::families::Test;
use super::model::{ConfigAnalysis, PhaseInfo};

pub use super::ranking::{PSource, Ranked, Ratio, Trust, WorkloadSummary};

/// The phase that answers an engine's question (its declared main phase:
/// `workload/<engine>/kind.rs`); an engine that declares none, or whose phase is
/// absent (iozone without its write test), its first phase.
/// When the workload was timed up to `syncfs` (`durable = true`), the `+syncfs`
/// variant of that phase. `None` without phases.
pub fn default_main_phase(kind: &str, phases: &[&str]) -> Option<String> {
    let preferred = crate::workload::kind::kind_of(kind).main_phase;
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
    pub(crate) main_phase: Option<&'a str>,
    pub(crate) phases: &'a [PhaseInfo],
    pub(crate) configs: &'a [ConfigAnalysis],
    pub(crate) tests: &'a [Test],
    pub(crate) suspect_phases: usize,
}

/// The phase workload `name` (engine `kind`) is ranked and tested on first: the
/// spec's `main_phase` when it is a phase of the records (a warning to `warnings`
/// when not), else the engine's default among the phases some trial did something
/// in (`empty`: the phases, without `+syncfs`, where none did: fdtree with
/// `files = 0` creates no file, and 0 file creates/s answers nothing). `None`
/// without phases.
pub(crate) fn main_phase(
    name: &str,
    kind: &str,
    phases: &[PhaseInfo],
    empty: &[&str],
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
    let busy: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !empty.contains(&n.strip_suffix(DURABLE_SUFFIX).unwrap_or(n)))
        .collect();
    let default = default_main_phase(kind, &busy).or_else(|| default_main_phase(kind, &names))?;
    Some(match ctx.opts.main_phases.get(name) {
        Some(p) if names.contains(&p.as_str()) => p.clone(),
        Some(p) => {
            warnings.push(format!(
                "{name}: main_phase `{p}` is not a phase of this workload's results (phases: {}); the summary ranks on `{default}` instead",
                names.join(", ")
            ));
            default
        }
        None => default,
    })
}

/// The summary of one workload.
pub(crate) fn summarise(i: &Inputs) -> Option<WorkloadSummary> {
    let main = i.main_phase?;
    let idx = i.phases.iter().position(|p| p.name == main)?;
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
    let ranking = ranked
        .iter()
        .enumerate()
        .map(|(k, (c, mean))| Ranked {
            config: c.label.clone(),
            mean: *mean,
            n: c.phases[idx].n,
            suspect: c.phases[idx].suspect
                || ranked
                    .get(k + 1)
                    .is_some_and(|(s, _)| s.phases[idx].suspect),
            path_bound: c.path_bound.clone(),
            versus: ranked.get(k + 1).map(|(slower, slower_mean)| {
                let test = i
                    .tests
                    .iter()
                    .find(|t| t.is_pair(&c.label, &slower.label, main));
                let mut r = ratio(&c.label, &slower.label, *slower_mean > 0.0, test);
                r.family_size = test.map(|t| {
                    i.tests
                        .iter()
                        .filter(|o| o.family == t.family && o.p.is_some())
                        .count()
                });
                r
            }),
        })
        .collect();
    Some(WorkloadSummary {
        rate_unit: i.phases[idx].rate_unit.clone(),
        trust: Trust {
            stalled_trials: i.configs.iter().map(|c| c.stalled).sum(),
            ..trust(&ranked, idx, i.suspect_phases)
        },
        main_phase: main.to_string(),
        ranking,
    })
}

/// `fast` against the next slower configuration, from their decided test in the
/// primary family: the summary and the comparison tables read the same test, so they
/// never disagree.
fn ratio(fast: &str, slower: &str, slower_positive: bool, test: Option<&Test>) -> Ratio {
    let (value, ci) = test.map(|t| t.oriented(fast)).unwrap_or((None, None));
    let value = value.filter(|_| slower_positive);
    let mut out = Ratio {
        slower: slower.to_string(),
        ratio: value,
        ci_low: ci.map(|c| c.low),
        ci_high: ci.and_then(|c| c.high),
        ci_level: None,
        family: test.map(|t| t.family.clone()),
        family_size: None,
        p: None,
        p_source: PSource::None,
        significant: false,
        within_noise_band: false,
        decision: None,
    };
    let decided = test.filter(|t| t.n_a >= 2 && t.n_b >= 2);
    if let (Some(t), Some(_), Some(p)) = (decided, value, decided.and_then(|t| t.p_adjusted)) {
        out.p = Some(p);
        out.p_source = PSource::FamilyHolm;
        out.ci_level = t.level;
        out.decision = t.decision;
        out.significant = t.decision == Some(Decision::Different);
        out.within_noise_band = t.decision == Some(Decision::Equivalent);
    }
    out
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
        stalled_trials: 0,
    }
}
