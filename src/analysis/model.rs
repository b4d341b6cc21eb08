//! The data model of a report, built once by [`super::analyse`] and only formatted by
//! the exporters of `report/`: per workload, the statistics of every configuration and
//! phase, the comparisons with the baseline (typed [`Outcome`]s and their figures) and
//! the warnings. Serialised as the JSON report.

use serde::{Deserialize, Serialize};

use crate::analysis::stats::Summary;
use crate::results::record::ConfigRecord;

/// Used when [`ReportOptions::confidence`] is not a usable level.
pub(crate) const FALLBACK_CONFIDENCE: f64 = 0.95;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportOptions {
    /// A phase whose mean elapsed time is below this many seconds is suspect
    /// (the studies' rule: 60 s).
    pub suspect_below_secs: f64,
    /// Configuration label to compare against; `None`: the first configuration in
    /// trial order.
    pub baseline: Option<String>,
    /// Confidence level of intervals (before Holm's steps); alpha is 1 - level.
    pub confidence: f64,
    /// Configuration labels in the experiment's matrix order. An interleaved plan's
    /// first trials are shuffled, so trial order alone would list configurations (and
    /// pick the default baseline) at random.
    #[serde(default)]
    pub config_order: Vec<String>,
    /// Workload names in the experiment's order.
    #[serde(default)]
    pub workload_order: Vec<String>,
    /// The noise band (0.02 = ±2%, the spec's `noise_band`): a comparison is
    /// "different" only when its whole interval lies outside it, "equivalent" only
    /// when its whole interval lies inside it ([`crate::analysis::decision`]).
    #[serde(default = "default_noise_band")]
    pub noise_band: f64,
    /// The band tail-latency comparisons are decided against (the spec's
    /// `tail_band`, 0.10 = ±10%; [`crate::analysis::tail`]).
    #[serde(default = "default_tail_band")]
    pub tail_band: f64,
    /// With adaptive repetitions: how many looks at the data the stopping rule could
    /// take per (configuration, workload), `max - min + 1`. Each p-value is then
    /// multiplied by it before Holm's correction ([`crate::analysis::stats::sequential_p`]), because a
    /// run that stops when a comparison looks decided makes a plain p too small.
    #[serde(default)]
    pub adaptive_looks: Option<u32>,
    /// Workload name -> the phase its summary ranks configurations on (the spec's
    /// `main_phase`); a workload not listed uses its engine's default
    /// ([`crate::analysis::default_main_phase`]).
    #[serde(default)]
    pub main_phases: std::collections::BTreeMap<String, String>,
    /// Warnings the records cannot show by themselves (a partial or heterogeneous
    /// merge, `merge.json`): first among the run-wide warnings of every report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Comparing several runs (`jbench compare`): which configurations each run holds,
    /// so a pair inside one run is decided in that run's family, as its own report
    /// decides it ([`crate::analysis::families`]). Empty for one run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunScope>,
}

/// One run of a comparison of runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunScope {
    pub name: String,
    /// Its configurations' labels as the compared records carry them.
    pub labels: Vec<String>,
    /// Its adaptive rule's possible looks, if it was adaptive.
    pub adaptive_looks: Option<u32>,
}

fn default_noise_band() -> f64 {
    crate::experiment::spec::DEFAULT_NOISE_BAND
}

fn default_tail_band() -> f64 {
    crate::analysis::tail::DEFAULT_TAIL_BAND
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            suspect_below_secs: 60.0,
            baseline: None,
            confidence: FALLBACK_CONFIDENCE,
            config_order: Vec::new(),
            workload_order: Vec::new(),
            noise_band: default_noise_band(),
            tail_band: default_tail_band(),
            adaptive_looks: None,
            main_phases: Default::default(),
            warnings: Vec::new(),
            runs: Vec::new(),
        }
    }
}

/// Everything the renderers show. Serialised as the JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub suspect_below_secs: f64,
    /// Confidence level actually used (after validation of the option).
    pub confidence: f64,
    /// Baseline configuration label, `None` when there are no records.
    pub baseline: Option<String>,
    pub workloads: Vec<WorkloadAnalysis>,
    /// Run-wide warnings (unknown baseline, bad option, no records). Per-workload
    /// warnings are in [`WorkloadAnalysis::warnings`]; [`Analysis::all_warnings`]
    /// returns both.
    pub warnings: Vec<String>,
    /// Looks of the adaptive stopping rule the p-values were corrected for
    /// ([`ReportOptions::adaptive_looks`]); `None` for a fixed number of repetitions.
    #[serde(default)]
    pub adaptive_looks: Option<u32>,
    /// [`ReportOptions::noise_band`], for the words of verdicts. Not written to the
    /// JSON report, whose `verdict` fields state it where it matters.
    #[serde(skip_serializing, default = "default_noise_band")]
    pub noise_band: f64,
    /// The crash lab's states (`crash.jsonl`), per configuration x workload; empty
    /// (and absent from the JSON report) without crash records. Set by
    /// [`Analysis::with_crash`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crash: Vec<crate::analysis::crash::CrashAnalysis>,
    /// The results directory's `env.json`, for the header of the text and Markdown
    /// reports; not in the JSON report, which sits beside `env.json` itself.
    #[serde(skip)]
    pub environment: Option<crate::results::envinfo::Environment>,
}

impl Analysis {
    /// This analysis with the crash section of `records` (replacing any before).
    pub fn with_crash(mut self, records: &[crate::results::crash::CrashRecord]) -> Self {
        self.crash = crate::analysis::crash::analyse_crash(records);
        self
    }

    /// Run-wide warnings followed by each workload's, in report order.
    pub fn all_warnings(&self) -> Vec<String> {
        let per_workload = self.workloads.iter().flat_map(|w| w.warnings.iter());
        self.warnings.iter().chain(per_workload).cloned().collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadAnalysis {
    /// Workload (scenario) name from the experiment file.
    pub name: String,
    /// Engine, e.g. `fdtree`.
    pub kind: String,
    pub params: serde_json::Value,
    pub phases: Vec<PhaseInfo>,
    pub configs: Vec<ConfigAnalysis>,
    /// Baseline used for this workload's comparisons; `None` when the baseline
    /// configuration has no trial of this workload.
    pub baseline: Option<String>,
    /// Tests with a p-value in the primary family (families, when runs are
    /// compared): the main phase, every pair of configurations.
    #[serde(default)]
    pub family_size: usize,
    /// Every family of tests of this workload, primary first; see
    /// [`crate::analysis::families`].
    #[serde(default)]
    pub families: Vec<Family>,
    /// One per non-baseline configuration, in configuration order.
    pub comparisons: Vec<Comparison>,
    /// The primary family decided: every pair of configurations on the main phase,
    /// in configuration order (the baseline, when in a pair, as its reference `a`).
    #[serde(default)]
    pub pairs: Vec<PairComparison>,
    /// Every (configuration, phase) whose mean time is under the suspect threshold, in
    /// configuration then phase order. [`WorkloadAnalysis::warnings`] sums them up in
    /// one line.
    #[serde(default)]
    pub suspect_phases: Vec<SuspectPhase>,
    /// Every (configuration, phase) whose rate's coefficient of variation exceeds 10%,
    /// in configuration then phase order; summed up in one warning line.
    #[serde(default)]
    pub high_variance: Vec<HighVariance>,
    /// Human-readable warnings, aggregated: at most one line per workload for
    /// suspect phases and one for high variance (details in the two lists above).
    pub warnings: Vec<String>,
    /// The answer on top: configurations ranked on the main phase; `None` when no
    /// configuration has a rate on it.
    #[serde(default)]
    pub summary: Option<crate::analysis::ranking::WorkloadSummary>,
    /// Per-operation tail latency (p50, p99, p99.9) per configuration, with the p99
    /// against the baseline's; `None` when no phase carries per-operation latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<crate::analysis::tail::TailAnalysis>,
}

/// A phase of one configuration whose mean elapsed time is under the threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspectPhase {
    pub config: String,
    pub phase: String,
    pub mean_seconds: f64,
}

/// A phase of one configuration whose rate varies too much between trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HighVariance {
    pub config: String,
    pub phase: String,
    /// Coefficient of variation of the rate, sd / mean (0.25 = 25%).
    pub cv: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseInfo {
    /// Phase identifier, e.g. `file_create`.
    pub name: String,
    /// Rate unit, e.g. `file creates/s`.
    pub rate_unit: String,
    /// Whether the phase moves payload (then KiB/s is reported too).
    pub has_bytes: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigAnalysis {
    pub label: String,
    /// The configuration as recorded by its first trial (placement, sizes, mode...),
    /// so charts can plot rate against journal size without re-parsing labels.
    pub config: ConfigRecord,
    /// Successful trials; only these enter the statistics.
    pub ok: usize,
    pub failed: usize,
    /// Of the failed trials, those failed because the device daemon stalled on an
    /// emulated disk (docs/devices.md, "Stalls").
    #[serde(default)]
    pub stalled: usize,
    /// One per workload phase, in [`WorkloadAnalysis::phases`] order.
    pub phases: Vec<PhaseStats>,
    /// An emulated disk whose service time was more than a tenth the emulation
    /// path's rather than its model's: this configuration's speed is partly a property
    /// of this host's path. `None` on real devices and model-bound disks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bound: Option<PathBound>,
}

/// An emulated disk whose figures are partly the path's (docs/devices.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathBound {
    /// The disk's name in the configuration (`journal`, `data`).
    pub disk: String,
    /// Its model (`ram`, `hdd-7200`).
    pub model: String,
    /// Share of its service time that was the path's floor, 0..1.
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    pub phase: String,
    /// Successful trials that recorded this phase.
    pub n: usize,
    /// Elapsed seconds.
    pub seconds: Option<Summary>,
    /// Operations per second (fdtree's units).
    pub rate: Option<Summary>,
    /// KiB per second, for phases that move payload.
    pub kib_per_sec: Option<Summary>,
    /// Mean elapsed time below the threshold: too short to trust.
    pub suspect: bool,
    /// Each successful trial's rate, in trial order: the figures `rate` summarises
    /// (the report's dots). Not exported: the records hold them.
    #[serde(skip)]
    pub trial_rates: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub config: String,
    pub baseline: String,
    pub phases: Vec<PhaseComparison>,
}

/// Configuration `b` against `a` on the main phase, as the primary family decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairComparison {
    pub a: String,
    pub b: String,
    pub phase: String,
    /// mean(b) / mean(a).
    pub ratio: Option<f64>,
    /// Fieller's interval of the ratio at `ci_level`; `ci_high` `None` when
    /// unbounded above.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub ci_level: Option<f64>,
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub family: String,
    /// The whole interval lies outside the noise band ([`Decision::Different`]).
    pub different: bool,
    /// Different, equivalent or undecided, by the interval ([`super::decision`]);
    /// `None` without an interval.
    #[serde(default)]
    pub decision: Option<super::decision::Decision>,
}

/// One configuration against the baseline on one phase's operation rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseComparison {
    pub phase: String,
    pub n_baseline: usize,
    pub n_other: usize,
    /// (mean_other - mean_base) / mean_base * 100; positive = faster.
    pub pct: Option<f64>,
    /// [`PhaseComparison::ratio_ci_low`] and `_high` as percentage changes: the
    /// interval the verdict was decided with, at [`PhaseComparison::ci_level`]. Never
    /// below -100%; `ci_high_pct` is `None` (with `ci_low_pct` set) when the interval
    /// is unbounded above.
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// Two-sided Welch p-value, as computed for this comparison alone.
    pub p: Option<f64>,
    /// The p the verdict uses: `p` after a Bonferroni correction over the adaptive
    /// looks (when the run was adaptive), then Holm over the comparison's family.
    #[serde(default)]
    pub p_adjusted: Option<f64>,
    /// mean(other) / mean(baseline).
    #[serde(default)]
    pub ratio: Option<f64>,
    /// Fieller's interval of [`PhaseComparison::ratio`] at [`PhaseComparison::ci_level`];
    /// never below 0, `ratio_ci_high` `None` when unbounded above. It excludes 1
    /// exactly when the adjusted p is below alpha; the outcome is read from where it
    /// lies against the noise band ([`super::decision`]).
    #[serde(default)]
    pub ratio_ci_low: Option<f64>,
    #[serde(default)]
    pub ratio_ci_high: Option<f64>,
    /// The level the comparison was decided at: 1 - alpha / (Holm's divisor at its
    /// step x adaptive looks); the report's confidence for a family of one.
    #[serde(default)]
    pub ci_level: Option<f64>,
    /// The [`crate::analysis::families::Family::id`] it was corrected in.
    #[serde(default)]
    pub family: Option<String>,
    /// Two-sided Mann-Whitney U p-value, when both sides have at least 4 trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mann_whitney_p: Option<f64>,
    /// The whole interval lies outside the noise band: a difference larger than the
    /// band ([`Outcome::Faster`] or [`Outcome::Slower`]).
    pub significant: bool,
    /// The whole interval lies inside the noise band: equivalent within it
    /// ([`Outcome::Equivalent`]).
    #[serde(default)]
    pub within_noise_band: bool,
    /// Different, equivalent or undecided ([`super::decision`]); `None` without a
    /// test.
    #[serde(default)]
    pub decision: Option<super::decision::Decision>,
    /// Either side's phase is suspect (too short).
    pub suspect: bool,
    /// What the comparison says. Its words ("12.3% faster", "no significant
    /// difference (p = 0.41)", "too few trials", with " (suspect: phase < 60 s)"
    /// appended when suspect) are written by the exporters
    /// (the report's `Wording`); the JSON report carries them as `verdict`
    /// just before this field.
    #[serde(default)]
    pub outcome: Outcome,
}

/// What a [`PhaseComparison`] found; decided by the analysis, put in words only by
/// the exporters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The whole interval lies beyond the band's upper edge.
    Faster,
    /// The whole interval lies beyond the band's lower edge.
    Slower,
    /// The whole interval lies inside the band: equivalent within it.
    #[serde(alias = "within_noise_band")]
    Equivalent,
    /// The interval reaches across an edge of the band: neither a difference nor an
    /// equivalence is shown. (Records written before the three-outcome rule said
    /// `no_significant_difference` or `within_noise_band` for what may be this.)
    #[serde(alias = "no_significant_difference")]
    Undecided,
    /// Fewer than 2 successful trials on a side.
    TooFewTrials,
    /// No test possible: zero baseline rate or unusable values.
    #[default]
    NotComparable,
}

impl Outcome {
    /// The outcome of a decided test seen from the side whose ratio is `ratio`.
    pub fn of(decision: super::decision::Decision, ratio: f64) -> Self {
        use super::decision::Decision;
        match decision {
            Decision::Different if ratio > 1.0 => Outcome::Faster,
            Decision::Different => Outcome::Slower,
            Decision::Equivalent => Outcome::Equivalent,
            Decision::Undecided => Outcome::Undecided,
        }
    }

    /// The three-outcome word of a decided comparison; `None` before a test.
    pub fn decision(self) -> Option<super::decision::Decision> {
        use super::decision::Decision;
        match self {
            Outcome::Faster | Outcome::Slower => Some(Decision::Different),
            Outcome::Equivalent => Some(Decision::Equivalent),
            Outcome::Undecided => Some(Decision::Undecided),
            Outcome::TooFewTrials | Outcome::NotComparable => None,
        }
    }
}

/// The kind of a [`Family`] of tests; see [`crate::analysis::families`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FamilyKind {
    Primary,
    Secondary,
    Suspect,
}

impl FamilyKind {
    pub fn name(self) -> &'static str {
        match self {
            FamilyKind::Primary => "primary",
            FamilyKind::Secondary => "secondary",
            FamilyKind::Suspect => "suspect",
        }
    }
}

/// A set of tests corrected together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Family {
    /// `primary`, `secondary` or `suspect`; comparing runs, followed by ` (run NAME)`
    /// or ` (across runs)`.
    pub id: String,
    pub kind: FamilyKind,
    /// Comparing runs: the run whose pairs these are, or `across runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Phases of the family's tests, in phase order.
    pub phases: Vec<String>,
    /// Tests with a p-value: what Holm's correction is over.
    pub size: usize,
}
