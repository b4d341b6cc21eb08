//! Builds the [`Analysis`] from the trial records of one run: ordering of workloads,
//! configurations and phases, the baseline, and per configuration and phase the
//! summaries the exporters show.
//!
//! Ordering (deterministic, independent of the order of the input slice):
//! - workloads and configurations: as [`ReportOptions::workload_order`] and
//!   [`ReportOptions::config_order`] list them (the experiment's order; the first
//!   configuration of the matrix is the default baseline); any not listed follow, by
//!   the smallest `trial` index among their records, over the whole run (not per
//!   workload), so every workload's table lists them in the same order;
//! - phases: by first appearance in the records sorted by `trial`.

use super::context::{samples, Ctx, DURABLE_SUFFIX};
use super::families::{test_all, Design};
use super::model::*;
use super::significance::comparisons;
use super::warnings::{
    all_failed_warning, config_warnings, excluded_warning, high_variance, suspect_phases,
    suspect_warning, variance_warning,
};
use crate::analysis::stats::Summary;
use crate::results::record::TrialRecord;

/// Builds the report's data model from the trial records of one run.
pub fn analyse(records: &[TrialRecord], opts: &ReportOptions) -> Analysis {
    let mut warnings = opts.warnings.clone();
    let confidence = checked_confidence(opts.confidence, &mut warnings);
    // The crash lab's recordings ran with every write logged: their times are not the
    // configuration's, so they never enter the speed statistics. One that failed left
    // the crash half without states, which the report must say.
    for r in records.iter().filter(|r| r.crash_recording && !r.is_ok()) {
        warnings.push(format!(
            "the crash recording of {} / {} (trial {}) failed, so it has no crash states: {}",
            r.config.label,
            r.workload.name,
            r.trial,
            r.error
                .as_deref()
                .unwrap_or("no error recorded")
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    let recordings = records.iter().filter(|r| r.crash_recording).count();
    let timed: Vec<TrialRecord> = records
        .iter()
        .filter(|r| !r.crash_recording)
        .cloned()
        .map(|mut r| {
            // The runner and the reader fail such a trial already; a record that
            // reaches here otherwise is never averaged either.
            r.fail_if_stalled();
            r
        })
        .collect();
    let with_durable = with_durable_phases(&timed);
    let records = with_durable.as_slice();
    let mut sorted: Vec<&TrialRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.trial);
    // Crash recordings alone (`jbench crash`) are a report of crash states, not an
    // empty one.
    if sorted.is_empty() && recordings == 0 {
        warnings.push("no trial records: nothing to report".to_string());
    }
    warnings.extend(excluded_warning(&sorted));
    warnings.extend(all_failed_warning(&sorted));
    let config_order = preferred_first(
        &opts.config_order,
        first_appearance(&sorted, |r| r.config.label.as_str()),
    );
    let baseline = choose_baseline(opts.baseline.as_deref(), &config_order, &mut warnings);
    let ctx = Ctx {
        opts,
        confidence,
        config_order: &config_order,
        baseline: baseline.as_deref(),
        adaptive_looks: opts.adaptive_looks,
    };
    let workload_order = preferred_first(
        &opts.workload_order,
        first_appearance(&sorted, |r| r.workload.name.as_str()),
    );
    let workloads = workload_order
        .into_iter()
        .map(|name| {
            let recs: Vec<&TrialRecord> = sorted
                .iter()
                .copied()
                .filter(|r| r.workload.name == name)
                .collect();
            analyse_workload(&recs, &ctx)
        })
        .collect();
    Analysis {
        suspect_below_secs: opts.suspect_below_secs,
        confidence,
        baseline,
        workloads,
        warnings,
        adaptive_looks: opts.adaptive_looks,
        noise_band: opts.noise_band,
        crash: Vec::new(),
        environment: None,
    }
}

/// A phase timed with `durable = true` gets a companion phase `<name>+syncfs` whose
/// seconds are the durable figure, so every table, comparison and export shows the
/// cost of getting the work onto the devices beside the plain figure.
fn with_durable_phases(records: &[TrialRecord]) -> Vec<TrialRecord> {
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let durable: Vec<_> = r
                .phases
                .iter()
                .filter_map(|p| {
                    p.durable_seconds.map(|d| crate::workload::PhaseResult {
                        name: format!("{}{DURABLE_SUFFIX}", p.name),
                        seconds: d,
                        durable_seconds: None,
                        ..p.clone()
                    })
                })
                .collect();
            r.phases.extend(durable);
            r
        })
        .collect()
}

fn checked_confidence(level: f64, warnings: &mut Vec<String>) -> f64 {
    if level > 0.0 && level < 1.0 {
        level
    } else {
        warnings.push(format!(
            "confidence level {level} is not between 0 and 1; using {FALLBACK_CONFIDENCE}"
        ));
        FALLBACK_CONFIDENCE
    }
}

/// Distinct keys in order of first appearance in `sorted` (records sorted by trial).
fn first_appearance<'a>(
    sorted: &[&'a TrialRecord],
    key: impl Fn(&'a TrialRecord) -> &'a str,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in sorted {
        let k = key(r);
        if !out.iter().any(|o| o == k) {
            out.push(k.to_string());
        }
    }
    out
}

/// The `preferred` keys that occur in `seen`, in preferred order, then the rest of
/// `seen` in its own order.
fn preferred_first(preferred: &[String], seen: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = preferred
        .iter()
        .filter(|p| seen.contains(p))
        .cloned()
        .collect();
    out.extend(seen.into_iter().filter(|s| !preferred.contains(s)));
    out
}

fn choose_baseline(
    wanted: Option<&str>,
    config_order: &[String],
    warnings: &mut Vec<String>,
) -> Option<String> {
    let first = config_order.first().cloned();
    match wanted {
        Some(label) if config_order.iter().any(|c| c == label) => Some(label.to_string()),
        Some(label) => {
            if let Some(f) = &first {
                warnings.push(format!(
                    "baseline configuration `{label}` has no trials; comparing with `{f}` instead"
                ));
            }
            first
        }
        None => first,
    }
}

fn analyse_workload(recs: &[&TrialRecord], ctx: &Ctx) -> WorkloadAnalysis {
    let first = recs[0];
    let name = first.workload.name.clone();
    let phases = phase_infos(recs);
    let mut warnings = Vec::new();
    let configs: Vec<ConfigAnalysis> = ctx
        .config_order
        .iter()
        .filter_map(|label| {
            let of_config: Vec<&TrialRecord> = recs
                .iter()
                .copied()
                .filter(|r| &r.config.label == label)
                .collect();
            (!of_config.is_empty()).then(|| analyse_config(&of_config, &phases, ctx.opts))
        })
        .collect();
    for c in &configs {
        config_warnings(&name, c, recs, &mut warnings);
    }
    let baseline = ctx
        .baseline
        .filter(|b| configs.iter().any(|c| c.label == *b))
        .map(str::to_string);
    if let (None, Some(b)) = (&baseline, ctx.baseline) {
        warnings.push(format!(
            "{name}: baseline configuration `{b}` has no trials of this workload; no comparisons"
        ));
    }
    let empty = empty_phases(recs);
    let main_phase = super::summary::main_phase(
        &name,
        &first.workload.kind,
        &phases,
        &empty,
        ctx,
        &mut warnings,
    );
    let design = Design {
        recs,
        configs: &configs,
        phases: &phases,
        main_phase: main_phase.as_deref(),
        baseline: baseline.as_deref(),
    };
    let (tests, families) = test_all(&design, ctx);
    let comparisons = baseline
        .as_deref()
        .map(|b| comparisons(recs, &configs, &phases, b, &tests))
        .unwrap_or_default();
    let pairs = tests
        .iter()
        .filter(|t| Some(t.phase.as_str()) == main_phase.as_deref())
        .map(|t| PairComparison {
            a: t.a.clone(),
            b: t.b.clone(),
            phase: t.phase.clone(),
            ratio: t.ratio,
            ci_low: t.ci.map(|c| c.low),
            ci_high: t.ci.and_then(|c| c.high),
            ci_level: t.level,
            p: t.p,
            p_adjusted: t.p_adjusted,
            family: t.family.clone(),
            different: t.decision == Some(super::decision::Decision::Different),
            decision: t.decision,
        })
        .collect();
    let family_size = families
        .iter()
        .filter(|f| f.kind == super::families::FamilyKind::Primary)
        .map(|f| f.size)
        .sum();
    let suspect_phases = suspect_phases(&configs);
    let high_variance = high_variance(&configs);
    let threshold = ctx.opts.suspect_below_secs;
    warnings.extend(suspect_warning(
        &name,
        &configs,
        &phases,
        &suspect_phases,
        threshold,
    ));
    warnings.extend(variance_warning(&name, &high_variance));
    warnings.extend(super::warnings::busy_host_warning(&name, recs));
    warnings.extend(super::warnings::starved_warning(&name, recs));
    warnings.extend(super::phase_bounds::impossible_phases_warning(&name, recs));
    let inputs = super::summary::Inputs {
        main_phase: main_phase.as_deref(),
        phases: &phases,
        configs: &configs,
        tests: &tests,
        suspect_phases: suspect_phases.len(),
    };
    let summary = super::summary::summarise(&inputs);
    let labels: Vec<String> = configs.iter().map(|c| c.label.clone()).collect();
    let (phase, base) = (main_phase.as_deref(), baseline.as_deref());
    let tail = super::tail::analyse(
        recs,
        &labels,
        phase,
        base,
        ctx.opts.tail_band,
        ctx.confidence,
    );
    WorkloadAnalysis {
        name,
        kind: first.workload.kind.clone(),
        params: first.workload.params.clone(),
        phases,
        configs,
        baseline,
        family_size,
        families,
        comparisons,
        pairs,
        suspect_phases,
        high_variance,
        warnings,
        summary,
        tail,
    }
}

/// Phases of a workload in order of first appearance. Failed trials count for the
/// phase list (so a configuration whose trials all failed still gets its columns),
/// but only successful ones decide whether a phase moves payload.
/// The phases that successful trials ran but did nothing in (no operation in any).
fn empty_phases<'a>(recs: &[&'a TrialRecord]) -> Vec<&'a str> {
    let ok: Vec<&TrialRecord> = recs.iter().copied().filter(|r| r.is_ok()).collect();
    let mut out: Vec<&str> = Vec::new();
    for r in ok.iter().copied() {
        for p in &r.phases {
            let idle = ok.iter().all(|o| {
                o.phases
                    .iter()
                    .filter(|q| q.name == p.name)
                    .all(|q| q.ops == 0)
            });
            if idle && !out.contains(&p.name.as_str()) {
                out.push(&p.name);
            }
        }
    }
    out
}

fn phase_infos(recs: &[&TrialRecord]) -> Vec<PhaseInfo> {
    let mut out: Vec<PhaseInfo> = Vec::new();
    for r in recs {
        for p in &r.phases {
            let moves_bytes = r.is_ok() && p.bytes > 0;
            match out.iter_mut().find(|i| i.name == p.name) {
                Some(info) => info.has_bytes |= moves_bytes,
                None => out.push(PhaseInfo {
                    name: p.name.clone(),
                    rate_unit: rate_unit(&p.op_unit),
                    has_bytes: moves_bytes,
                }),
            }
        }
    }
    out
}

pub(crate) fn rate_unit(op_unit: &str) -> String {
    if op_unit.trim().is_empty() {
        "ops/s".to_string()
    } else {
        format!("{}/s", op_unit.trim())
    }
}

fn analyse_config(
    recs: &[&TrialRecord],
    phases: &[PhaseInfo],
    opts: &ReportOptions,
) -> ConfigAnalysis {
    let ok = recs.iter().filter(|r| r.is_ok()).count();
    let phase_stats = phases
        .iter()
        .map(|info| {
            let s = samples(recs, &info.name);
            let seconds = Summary::of(&s.seconds);
            PhaseStats {
                phase: info.name.clone(),
                n: s.seconds.len(),
                suspect: seconds.is_some_and(|t| t.mean < opts.suspect_below_secs),
                seconds,
                rate: Summary::of(&s.rates),
                kib_per_sec: if info.has_bytes {
                    Summary::of(&s.kib)
                } else {
                    None
                },
                trial_rates: s.rates,
            }
        })
        .collect();
    ConfigAnalysis {
        label: recs[0].config.label.clone(),
        config: recs[0].config.clone(),
        ok,
        failed: recs.len() - ok,
        stalled: recs.iter().filter(|r| r.is_stalled()).count(),
        phases: phase_stats,
        path_bound: super::warnings::path_bound(
            &recs
                .iter()
                .copied()
                .filter(|r| r.is_ok())
                .collect::<Vec<_>>(),
        ),
    }
}
