//! The JSON export: the [`Analysis`], pretty-printed, with each comparison's verdict in
//! words (`verdict`, a field programs have read since the first release) put in at
//! export time. The model keeps only the typed outcome; the views below borrow it and
//! add the words in the place the field has always had, so the file is unchanged.

use serde::Serialize;

use super::words::Wording;
use super::Exporter;
use crate::analysis::{
    Analysis, Comparison, ConfigAnalysis, CrashAnalysis, HighVariance, Outcome, PhaseComparison,
    PhaseInfo, SuspectPhase, WorkloadAnalysis, WorkloadSummary,
};

/// The [`Analysis`], pretty-printed.
pub struct Json;

impl Exporter for Json {
    fn render(&self, a: &Analysis) -> String {
        // Cannot fail: every map key is a string and every float is finite by design.
        let mut out = serde_json::to_string_pretty(&AnalysisView::of(a))
            .expect("Analysis serialises to JSON");
        out.push('\n');
        out
    }
}

// The views list the model's fields in the model's order (a test checks that they
// serialise to the model plus `verdict`).

#[derive(Serialize)]
pub(crate) struct AnalysisView<'a> {
    suspect_below_secs: f64,
    confidence: f64,
    baseline: &'a Option<String>,
    workloads: Vec<WorkloadView<'a>>,
    warnings: &'a [String],
    adaptive_looks: Option<u32>,
    /// Absent without crash records, so such a report is what it always was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    crash: Vec<CrashView<'a>>,
    /// Speed, safety and recovery per configuration; absent without crash records.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    answer: Vec<crate::analysis::answer::WorkloadAnswer>,
}

impl<'a> AnalysisView<'a> {
    pub(crate) fn of(a: &'a Analysis) -> Self {
        Self {
            suspect_below_secs: a.suspect_below_secs,
            confidence: a.confidence,
            baseline: &a.baseline,
            workloads: a.workloads.iter().map(|w| WorkloadView::of(w, a)).collect(),
            warnings: &a.warnings,
            adaptive_looks: a.adaptive_looks,
            crash: a.crash.iter().map(CrashView::of).collect(),
            answer: crate::analysis::answer::of(a),
        }
    }
}

/// A configuration x workload of the crash lab: the model's figures, then its notes
/// and warnings in words.
#[derive(Serialize)]
struct CrashView<'a> {
    #[serde(flatten)]
    figures: &'a CrashAnalysis,
    notes: Vec<String>,
    warnings: Vec<String>,
}

impl<'a> CrashView<'a> {
    fn of(c: &'a CrashAnalysis) -> Self {
        Self {
            figures: c,
            notes: super::crash::crash_notes(c),
            warnings: super::crash::crash_warnings(c),
        }
    }
}

#[derive(Serialize)]
struct WorkloadView<'a> {
    name: &'a str,
    kind: &'a str,
    params: &'a serde_json::Value,
    phases: &'a [PhaseInfo],
    configs: &'a [ConfigAnalysis],
    baseline: &'a Option<String>,
    family_size: usize,
    families: &'a [crate::analysis::families::Family],
    comparisons: Vec<ComparisonView<'a>>,
    pairs: &'a [crate::analysis::PairComparison],
    suspect_phases: &'a [SuspectPhase],
    high_variance: &'a [HighVariance],
    warnings: &'a [String],
    /// The model's summary with its words (`text`) added after its figures.
    summary: Option<SummaryView<'a>>,
    /// Per-operation tail latency and the p99 comparisons, with their lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    tail: Option<TailView<'a>>,
}

#[derive(Serialize)]
struct TailView<'a> {
    #[serde(flatten)]
    figures: &'a crate::analysis::tail::TailAnalysis,
    text: Vec<String>,
}

#[derive(Serialize)]
struct SummaryView<'a> {
    #[serde(flatten)]
    figures: &'a WorkloadSummary,
    text: Vec<String>,
}

impl<'a> WorkloadView<'a> {
    fn of(w: &'a WorkloadAnalysis, a: &Analysis) -> Self {
        let words = Wording::of(w, a);
        Self {
            name: &w.name,
            kind: &w.kind,
            params: &w.params,
            phases: &w.phases,
            configs: &w.configs,
            baseline: &w.baseline,
            family_size: w.family_size,
            families: &w.families,
            comparisons: w
                .comparisons
                .iter()
                .map(|c| ComparisonView::of(c, &words))
                .collect(),
            pairs: &w.pairs,
            suspect_phases: &w.suspect_phases,
            high_variance: &w.high_variance,
            warnings: &w.warnings,
            summary: w.summary.as_ref().map(|s| SummaryView {
                figures: s,
                text: super::summary::summary_lines(w, a),
            }),
            tail: w.tail.as_ref().map(|t| TailView {
                figures: t,
                text: super::tail::tail_lines(t),
            }),
        }
    }
}

#[derive(Serialize)]
struct ComparisonView<'a> {
    config: &'a str,
    baseline: &'a str,
    phases: Vec<PhaseComparisonView<'a>>,
}

impl<'a> ComparisonView<'a> {
    fn of(c: &'a Comparison, words: &Wording) -> Self {
        Self {
            config: &c.config,
            baseline: &c.baseline,
            phases: c
                .phases
                .iter()
                .map(|p| PhaseComparisonView::of(p, words))
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct PhaseComparisonView<'a> {
    phase: &'a str,
    n_baseline: usize,
    n_other: usize,
    pct: Option<f64>,
    ci_low_pct: Option<f64>,
    ci_high_pct: Option<f64>,
    p: Option<f64>,
    p_adjusted: Option<f64>,
    ratio: Option<f64>,
    ratio_ci_low: Option<f64>,
    ratio_ci_high: Option<f64>,
    ci_level: Option<f64>,
    family: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mann_whitney_p: Option<f64>,
    significant: bool,
    within_noise_band: bool,
    /// `different`, `equivalent` or `undecided` (the interval against the noise
    /// band); null without a test.
    decision: Option<crate::analysis::Decision>,
    suspect: bool,
    verdict: String,
    outcome: Outcome,
}

impl<'a> PhaseComparisonView<'a> {
    fn of(p: &'a PhaseComparison, words: &Wording) -> Self {
        Self {
            phase: &p.phase,
            n_baseline: p.n_baseline,
            n_other: p.n_other,
            pct: p.pct,
            ci_low_pct: p.ci_low_pct,
            ci_high_pct: p.ci_high_pct,
            p: p.p,
            p_adjusted: p.p_adjusted,
            ratio: p.ratio,
            ratio_ci_low: p.ratio_ci_low,
            ratio_ci_high: p.ratio_ci_high,
            ci_level: p.ci_level,
            family: p.family.as_deref(),
            mann_whitney_p: p.mann_whitney_p,
            significant: p.significant,
            within_noise_band: p.within_noise_band,
            decision: p.decision,
            suspect: p.suspect,
            verdict: words.verdict(p),
            outcome: p.outcome,
        }
    }
}
