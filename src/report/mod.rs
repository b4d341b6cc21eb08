//! Turns trial records into the studies' tables: per workload, elapsed times and rates
//! (mean ± sd per configuration and phase), a comparison of every configuration with a
//! baseline (percent difference, its confidence interval, Welch p and a verdict), and
//! warnings about anything that makes a figure untrustworthy.
//!
//! [`analyse`] builds the data model ([`Analysis`]); the renderers only format it, so
//! the terminal table, Markdown, CSV and JSON can never disagree.
//!
//! Ordering (deterministic, independent of the order of the input slice):
//! - workloads and configurations: as [`ReportOptions::workload_order`] and
//!   [`ReportOptions::config_order`] list them (the experiment's order; the first
//!   configuration of the matrix is the default baseline); any not listed follow, by
//!   the smallest `trial` index among their records, over the whole run (not per
//!   workload), so every workload's table lists them in the same order;
//! - phases: by first appearance in the records sorted by `trial`.

pub mod html;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::analysis::stats::{self, Summary};
use crate::results::record::{ConfigRecord, TrialRecord};

/// A rate whose coefficient of variation exceeds this is flagged: the studies' sd
/// columns show such spread hides any but large differences.
const HIGH_CV: f64 = 0.10;

/// Used when [`ReportOptions::confidence`] is not a usable level.
const FALLBACK_CONFIDENCE: f64 = 0.95;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportOptions {
    /// A phase whose mean elapsed time is below this many seconds is suspect
    /// (the studies' rule: 60 s).
    pub suspect_below_secs: f64,
    /// Configuration label to compare against; `None`: the first configuration in
    /// trial order.
    pub baseline: Option<String>,
    /// Confidence level of intervals; a difference is significant when p < 1 - level.
    pub confidence: f64,
    /// Configuration labels in the experiment's matrix order. An interleaved plan's
    /// first trials are shuffled, so trial order alone would list configurations (and
    /// pick the default baseline) at random.
    #[serde(default)]
    pub config_order: Vec<String>,
    /// Workload names in the experiment's order.
    #[serde(default)]
    pub workload_order: Vec<String>,
    /// Relative difference of means (0.02 = 2%) under which a significant difference
    /// is still "no meaningful difference" (the spec's `noise_band`).
    #[serde(default = "default_noise_band")]
    pub noise_band: f64,
    /// With adaptive repetitions: how many looks at the data the stopping rule could
    /// take per (configuration, workload), `max - min + 1`. Each p-value is then
    /// multiplied by it before Holm's correction ([`stats::sequential_p`]), because a
    /// run that stops when a comparison looks decided makes a plain p too small.
    #[serde(default)]
    pub adaptive_looks: Option<u32>,
}

fn default_noise_band() -> f64 {
    crate::experiment::spec::DEFAULT_NOISE_BAND
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
            adaptive_looks: None,
        }
    }
}

/// Output format of [`render`]; on the command line `table|markdown|csv|json`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned plain text for a terminal.
    #[default]
    Table,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// One row per (workload, configuration, phase).
    Csv,
    /// The [`Analysis`], pretty-printed.
    Json,
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
}

impl Analysis {
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
    /// Comparisons with a p-value in this workload (every configuration x phase
    /// against the baseline): the family Holm's correction is over.
    #[serde(default)]
    pub family_size: usize,
    /// One per non-baseline configuration, in configuration order.
    pub comparisons: Vec<Comparison>,
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
    /// One per workload phase, in [`WorkloadAnalysis::phases`] order.
    pub phases: Vec<PhaseStats>,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub config: String,
    pub baseline: String,
    pub phases: Vec<PhaseComparison>,
}

/// One configuration against the baseline on one phase's operation rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseComparison {
    pub phase: String,
    pub n_baseline: usize,
    pub n_other: usize,
    /// (mean_other - mean_base) / mean_base * 100; positive = faster.
    pub pct: Option<f64>,
    /// Welch confidence interval of the difference of means divided by the baseline
    /// mean, in percent. This treats the baseline mean as exact (it ignores the
    /// uncertainty of the denominator), which is a fair approximation when the
    /// baseline's relative standard error is small; a Fieller interval would be exact.
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// Two-sided Welch p-value, as computed for this comparison alone.
    pub p: Option<f64>,
    /// The p the verdict uses: `p` adjusted with Holm–Bonferroni over the workload's
    /// comparisons ([`WorkloadAnalysis::family_size`]), after a Bonferroni correction
    /// over the adaptive looks when the run was adaptive.
    #[serde(default)]
    pub p_adjusted: Option<f64>,
    /// Two-sided Mann-Whitney U p-value, when both sides have at least 4 trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mann_whitney_p: Option<f64>,
    /// p < 1 - confidence and the difference of means is outside the noise band.
    pub significant: bool,
    /// p < 1 - confidence but the difference is inside the noise band: no
    /// meaningful difference.
    #[serde(default)]
    pub within_noise_band: bool,
    /// Either side's phase is suspect (too short).
    pub suspect: bool,
    /// "12.3% faster", "8.1% slower", "no significant difference (p = 0.41)",
    /// "too few trials", with " (suspect: phase < 60 s)" appended when suspect.
    pub verdict: String,
    /// What the verdict says, for programs: never parse `verdict`.
    #[serde(default)]
    pub outcome: Outcome,
}

/// The kind of a [`PhaseComparison`]'s verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Faster,
    Slower,
    /// Adjusted p not below alpha.
    NoSignificantDifference,
    /// Adjusted p below alpha, but the difference is inside the noise band.
    WithinNoiseBand,
    /// Fewer than 2 successful trials on a side.
    TooFewTrials,
    /// No test possible: zero baseline rate or unusable values.
    #[default]
    NotComparable,
}

// ---------------------------------------------------------------------------------
// Analysis
// ---------------------------------------------------------------------------------

/// Builds the report's data model from the trial records of one run.
pub fn analyse(records: &[TrialRecord], opts: &ReportOptions) -> Analysis {
    let mut warnings = Vec::new();
    let confidence = checked_confidence(opts.confidence, &mut warnings);
    let with_durable = with_durable_phases(records);
    let records = with_durable.as_slice();
    let mut sorted: Vec<&TrialRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.trial);
    if sorted.is_empty() {
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
    }
}

/// Records the reader refused to average ([`TrialRecord::is_excluded`]), in one line.
fn excluded_warning(sorted: &[&TrialRecord]) -> Option<String> {
    let why: Vec<&str> = sorted
        .iter()
        .filter(|r| r.is_excluded())
        .filter_map(|r| r.error.as_deref())
        .map(|e| e.trim_start_matches(crate::results::record::EXCLUDED))
        .collect();
    (!why.is_empty()).then(|| {
        format!(
            "{} invalid trial record(s) excluded from the statistics (counted as failed): {}",
            why.len(),
            why.join("; ")
        )
    })
}

/// "every trial failed (...): <first errors>" when no record is `ok`, else `None`.
pub fn every_trial_failed(records: &[TrialRecord]) -> Option<String> {
    all_failed_warning(&records.iter().collect::<Vec<_>>())
}

/// "every trial failed: ..." with the first distinct errors, so a run that measured
/// nothing never shows only empty tables.
fn all_failed_warning(sorted: &[&TrialRecord]) -> Option<String> {
    if sorted.is_empty() || sorted.iter().any(|r| r.is_ok()) {
        return None;
    }
    let mut firsts: Vec<String> = Vec::new();
    for r in sorted {
        let e = first_line(r.error.as_deref().unwrap_or("no error recorded")).to_string();
        if !firsts.contains(&e) {
            firsts.push(e);
        }
    }
    let more = firsts.len().saturating_sub(3);
    firsts.truncate(3);
    let tail = if more > 0 {
        format!(" (and {more} other error(s))")
    } else {
        String::new()
    };
    Some(format!(
        "every trial failed ({} of {}): {}{tail}",
        sorted.len(),
        sorted.len(),
        firsts.join("; ")
    ))
}

/// Suffix of the pseudo-phase holding a phase's time up to `syncfs`.
pub const DURABLE_SUFFIX: &str = "+syncfs";

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

/// Settings shared by the per-workload analysis.
struct Ctx<'a> {
    opts: &'a ReportOptions,
    confidence: f64,
    config_order: &'a [String],
    baseline: Option<&'a str>,
    adaptive_looks: Option<u32>,
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
    let mut comparisons = baseline
        .as_deref()
        .map(|b| compare_all(recs, &configs, &phases, b, ctx))
        .unwrap_or_default();
    let family_size = adjust_family(&mut comparisons, ctx);
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
    WorkloadAnalysis {
        name,
        kind: first.workload.kind.clone(),
        params: first.workload.params.clone(),
        phases,
        configs,
        baseline,
        family_size,
        comparisons,
        suspect_phases,
        high_variance,
        warnings,
    }
}

/// Phases of a workload in order of first appearance. Failed trials count for the
/// phase list (so a configuration whose trials all failed still gets its columns),
/// but only successful ones decide whether a phase moves payload.
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

fn rate_unit(op_unit: &str) -> String {
    if op_unit.trim().is_empty() {
        "ops/s".to_string()
    } else {
        format!("{}/s", op_unit.trim())
    }
}

/// Per-trial values of one phase over the successful trials of one configuration.
#[derive(Default)]
struct Samples {
    seconds: Vec<f64>,
    rates: Vec<f64>,
    kib: Vec<f64>,
}

fn samples(recs: &[&TrialRecord], phase: &str) -> Samples {
    let mut s = Samples::default();
    for r in recs.iter().filter(|r| r.is_ok()) {
        if let Some(p) = r.phases.iter().find(|p| p.name == phase) {
            s.seconds.push(p.seconds);
            s.rates.push(p.ops_per_sec());
            s.kib.push(p.kib_per_sec());
        }
    }
    s
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
            }
        })
        .collect();
    ConfigAnalysis {
        label: recs[0].config.label.clone(),
        config: recs[0].config.clone(),
        ok,
        failed: recs.len() - ok,
        phases: phase_stats,
    }
}

/// Failed and single trials, and phases missing from some trials, of one
/// configuration. Suspect phases and high variance are summed up per workload by
/// [`suspect_warning`] and [`variance_warning`].
fn config_warnings(
    workload: &str,
    c: &ConfigAnalysis,
    recs: &[&TrialRecord],
    out: &mut Vec<String>,
) {
    let at = format!("{workload}/{}", c.label);
    // A configuration is listed only when it has trials, so with no successful trial
    // this line already says "N of N trials failed".
    if c.failed > 0 {
        out.push(failed_warning(&at, c, recs));
    }
    if c.ok == 1 {
        out.push(format!(
            "{at}: only 1 successful trial: no spread and no comparison possible"
        ));
    }
    for p in c.phases.iter().filter(|p| p.n < c.ok) {
        out.push(format!(
            "{at}/{}: recorded by only {} of {} successful trials",
            p.phase, p.n, c.ok
        ));
    }
    let ok: Vec<&TrialRecord> = recs
        .iter()
        .copied()
        .filter(|r| r.is_ok() && r.config.label == c.label)
        .collect();
    out.extend(emulation_warnings(&at, &ok));
}

/// Emulated disks whose figures are partly the FUSE path's rather than the model's,
/// or whose answers the host delivered late.
fn emulation_warnings(at: &str, recs: &[&TrialRecord]) -> Vec<String> {
    use std::collections::BTreeMap;
    #[derive(Default)]
    struct Sum {
        model: String,
        requests: u64,
        floor_bound: u64,
        excess: f64,
        response: f64,
        late: u64,
    }
    let mut disks: BTreeMap<String, Sum> = BTreeMap::new();
    for r in recs {
        for d in r.emulation.iter().flat_map(|e| e.disks.iter()) {
            let s = disks.entry(d.name.clone()).or_default();
            s.model = d.model.clone();
            s.requests += d.reads + d.writes + d.flushes + d.discards;
            s.floor_bound += d.floor_bound;
            s.excess += d.floor_excess_seconds;
            s.response += d.response_seconds;
            s.late += d.late;
        }
    }
    let mut out = Vec::new();
    for (name, s) in disks {
        let share = s.excess / (s.excess + s.response).max(f64::MIN_POSITIVE);
        if s.floor_bound > 0 && share > 0.10 {
            out.push(format!(
                "{at}: the emulated {name} disk ({}) answered {:.0}% of its requests faster than the FUSE path can; at least {:.0}% of its service time is the path's, not the model's (docs/devices.md)",
                s.model,
                100.0 * s.floor_bound as f64 / s.requests.max(1) as f64,
                100.0 * share
            ));
        }
        if s.late * 100 > s.requests {
            out.push(format!(
                "{at}: the emulated {name} disk's daemon answered {} of {} requests more than 1 ms late (a busy host): its times are longer than the model's",
                s.late, s.requests
            ));
        }
    }
    out
}

fn failed_warning(at: &str, c: &ConfigAnalysis, recs: &[&TrialRecord]) -> String {
    let first_error = recs
        .iter()
        .filter(|r| !r.is_ok() && r.config.label == c.label)
        .find_map(|r| r.error.as_deref())
        .map(|e| format!(" (first error: {})", first_line(e)))
        .unwrap_or_default();
    format!(
        "{at}: {} of {} trials failed and are excluded from the statistics{first_error}",
        c.failed,
        c.failed + c.ok
    )
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

fn suspect_phases(configs: &[ConfigAnalysis]) -> Vec<SuspectPhase> {
    configs
        .iter()
        .flat_map(|c| c.phases.iter().map(move |p| (c, p)))
        .filter_map(|(c, p)| {
            let t = p.seconds.filter(|_| p.suspect)?;
            Some(SuspectPhase {
                config: c.label.clone(),
                phase: p.phase.clone(),
                mean_seconds: t.mean,
            })
        })
        .collect()
}

fn high_variance(configs: &[ConfigAnalysis]) -> Vec<HighVariance> {
    configs
        .iter()
        .flat_map(|c| c.phases.iter().map(move |p| (c, p)))
        .filter_map(|(c, p)| {
            let r = p
                .rate
                .filter(|r| r.n >= 2 && r.mean > 0.0 && r.cv() > HIGH_CV)?;
            Some(HighVariance {
                config: c.label.clone(),
                phase: p.phase.clone(),
                cv: r.cv(),
            })
        })
        .collect()
}

/// One line for all of a workload's suspect phases: when every measured phase is
/// suspect, how many and the longest; otherwise the suspect ones grouped by phase,
/// e.g. `dir_create (all configurations), file_remove (same-disk, ramdisk)`.
fn suspect_warning(
    workload: &str,
    configs: &[ConfigAnalysis],
    phases: &[PhaseInfo],
    suspect: &[SuspectPhase],
    threshold: f64,
) -> Option<String> {
    let longest = suspect
        .iter()
        .max_by(|a, b| a.mean_seconds.total_cmp(&b.mean_seconds))?;
    let measured = configs
        .iter()
        .flat_map(|c| &c.phases)
        .filter(|p| p.seconds.is_some())
        .count();
    let limit = format!("the {threshold} s suspect threshold");
    let (verb, pronoun) = if suspect.len() == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    let advice = format!("do not draw conclusions from {pronoun}");
    if suspect.len() == measured {
        let what = format!(
            "{} on {}, {} s",
            longest.phase,
            longest.config,
            fmt_num(longest.mean_seconds)
        );
        return Some(if measured == 1 {
            format!("{workload}: the only phase mean ({what}) is under {limit}; {advice}")
        } else {
            format!(
                "{workload}: all {measured} phase means are under {limit} (longest: {what}); {advice}"
            )
        });
    }
    let groups: Vec<String> = phases
        .iter()
        .filter_map(|info| {
            let who: Vec<&str> = suspect
                .iter()
                .filter(|s| s.phase == info.name)
                .map(|s| s.config.as_str())
                .collect();
            let who = match who.len() {
                0 => return None,
                n if n == configs.len() && n > 1 => "all configurations".to_string(),
                _ => who.join(", "),
            };
            Some(format!("{} ({who})", info.name))
        })
        .collect();
    Some(format!(
        "{workload}: {} of {measured} phase means {verb} under {limit}: {}; {advice}",
        suspect.len(),
        groups.join(", ")
    ))
}

/// One line for all of a workload's high-variance rates, grouped by configuration:
/// `high variance (rate CV > 10%): same-disk dir_create 32%, file_create 24%; ...`.
fn variance_warning(workload: &str, high: &[HighVariance]) -> Option<String> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for h in high {
        let item = format!("{} {}", h.phase, fmt_cv(h.cv));
        match groups.last_mut() {
            Some((config, items)) if *config == h.config => items.push(item),
            _ => groups.push((&h.config, vec![item])),
        }
    }
    if groups.is_empty() {
        return None;
    }
    let groups: Vec<String> = groups
        .iter()
        .map(|(config, items)| format!("{config} {}", items.join(", ")))
        .collect();
    Some(format!(
        "{workload}: high variance (rate CV > {:.0}%): {}",
        HIGH_CV * 100.0,
        groups.join("; ")
    ))
}

/// A coefficient of variation in whole percent, or with one decimal when rounding
/// would hide that it exceeds the threshold ("10.4%", not "10%").
fn fmt_cv(cv: f64) -> String {
    let pct = cv * 100.0;
    if pct.round() <= (HIGH_CV * 100.0).round() {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}

fn compare_all(
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
        verdict: String::new(),
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
    let zero_baseline = Summary::of(base).is_some_and(|s| s.mean <= 0.0);
    cmp.verdict = verdict_of(&cmp, ctx, zero_baseline);
    cmp
}

/// Adjusts the p-values of one workload's comparisons as a family: Bonferroni over
/// the adaptive looks (when the run was adaptive), then Holm over every
/// configuration x phase with a test. Then decides each verdict on the adjusted p.
/// Returns the family size.
fn adjust_family(comparisons: &mut [Comparison], ctx: &Ctx) -> usize {
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
        cmp.verdict = verdict_of(cmp, ctx, false);
    }
    n
}

/// The verdict in words; never empty.
fn verdict_of(cmp: &PhaseComparison, ctx: &Ctx, zero_baseline: bool) -> String {
    let pct = cmp.pct.unwrap_or(0.0);
    let p = cmp.p.unwrap_or(1.0);
    let adj = cmp.p_adjusted.unwrap_or(p);
    let verdict = match cmp.outcome {
        Outcome::TooFewTrials => "too few trials".to_string(),
        Outcome::NotComparable if zero_baseline => {
            "not comparable (baseline rate is 0)".to_string()
        }
        Outcome::NotComparable => "not comparable (invalid values)".to_string(),
        Outcome::WithinNoiseBand => format!(
            "no meaningful difference ({pct:+.1}% is within the {}% noise band, {})",
            fmt_num_short(ctx.opts.noise_band * 100.0),
            p_pair(p, adj, true)
        ),
        Outcome::NoSignificantDifference => {
            format!("no significant difference ({})", p_pair(p, adj, true))
        }
        Outcome::Faster | Outcome::Slower => verdict_text(pct, adj, true),
    };
    if cmp.suspect {
        format!(
            "{verdict} (suspect: phase < {} s)",
            ctx.opts.suspect_below_secs
        )
    } else {
        verdict
    }
}

/// "p = 0.03, adjusted p = 0.21", or just "p = 0.03" when the adjustment changed
/// nothing (a family of one).
fn p_pair(p: f64, adjusted: f64, spaced: bool) -> String {
    if p_expr(p, spaced) == p_expr(adjusted, spaced) {
        p_expr(p, spaced)
    } else {
        format!(
            "{}, adjusted {}",
            p_expr(p, spaced),
            p_expr(adjusted, spaced)
        )
    }
}

/// 2, 2.5: a percentage without trailing zeros.
fn fmt_num_short(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn verdict_text(pct: f64, p: f64, significant: bool) -> String {
    if !significant {
        return format!("no significant difference ({})", p_expr(p, true));
    }
    let direction = if pct > 0.0 { "faster" } else { "slower" };
    let magnitude = pct.abs();
    // Keep a tiny but significant difference from printing as "0.0% faster".
    if magnitude < 0.1 {
        format!("{magnitude:.2}% {direction}")
    } else {
        format!("{magnitude:.1}% {direction}")
    }
}

/// JSON has no NaN or infinity (serde_json would write `null` and fail to read it
/// back), so non-finite derived values are dropped instead.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

// ---------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------

/// Analyses `records` and renders the report in `format`.
pub fn render(records: &[TrialRecord], opts: &ReportOptions, format: Format) -> String {
    let analysis = analyse(records, opts);
    match format {
        Format::Table => render_text(&analysis, Style::Plain),
        Format::Markdown => render_text(&analysis, Style::Markdown),
        Format::Csv => render_csv(&analysis),
        Format::Json => render_json(&analysis),
    }
}

pub fn render_json(analysis: &Analysis) -> String {
    // Cannot fail: every map key is a string and every float is finite by design.
    let mut out = serde_json::to_string_pretty(analysis).expect("Analysis serialises to JSON");
    out.push('\n');
    out
}

/// One table of the text report (times, rates or the comparison with the baseline),
/// cells formatted as the Markdown report shows them, for other renderers (HTML).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The tables [`render`] prints for workload `w` of `a`, in the same order: times,
/// rates, then the comparison with the baseline when there is one.
pub fn workload_tables(w: &WorkloadAnalysis, a: &Analysis) -> Vec<Table> {
    let mut grids = vec![
        times_grid(w, Style::Markdown),
        rates_grid(w, Style::Markdown),
    ];
    if let Some(base) = &w.baseline {
        if !w.comparisons.is_empty() {
            grids.push(comparison_grid(w, base, a.confidence));
        }
    }
    grids
        .into_iter()
        .map(|g| Table {
            title: g.title,
            headers: g.headers,
            rows: g.rows,
        })
        .collect()
}

/// The verdict lines [`render`] prints for workload `w` (plain text), `None` without
/// comparisons.
pub fn workload_verdicts(w: &WorkloadAnalysis, a: &Analysis) -> Option<String> {
    let base = w.baseline.as_ref()?;
    (!w.comparisons.is_empty()).then(|| verdict_lines(w, base, a, Style::Plain))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Markdown,
}

/// A titled table: first column left-aligned (labels), the others right-aligned.
struct Grid {
    title: String,
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

fn width(s: &str) -> usize {
    // Characters, not bytes: cells contain "±".
    s.chars().count()
}

fn pad(s: &str, w: usize, left: bool) -> String {
    let fill = " ".repeat(w.saturating_sub(width(s)));
    if left {
        format!("{s}{fill}")
    } else {
        format!("{fill}{s}")
    }
}

impl Grid {
    fn widths(&self) -> Vec<usize> {
        (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| width(&r[c]))
                    .chain([width(&self.headers[c])])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    fn plain(&self) -> String {
        let widths = self.widths();
        let line = |cells: &[String]| -> String {
            let padded: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(c, s)| pad(s, widths[c], c == 0))
                .collect();
            padded.join("  ")
        };
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        let mut out = format!(
            "{}\n{}\n{}\n",
            self.title,
            line(&self.headers),
            rule.join("  ")
        );
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    fn markdown(&self) -> String {
        let line = |cells: &[String]| -> String {
            let escaped: Vec<String> = cells.iter().map(|c| md_escape(c)).collect();
            format!("| {} |", escaped.join(" | "))
        };
        let align: Vec<&str> = (0..self.headers.len())
            .map(|c| if c == 0 { "---" } else { "---:" })
            .collect();
        let mut out = format!(
            "### {}\n\n{}\n| {} |\n",
            md_escape(&self.title),
            line(&self.headers),
            align.join(" | ")
        );
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    fn render(&self, style: Style) -> String {
        match style {
            Style::Plain => self.plain(),
            Style::Markdown => self.markdown(),
        }
    }
}

/// Keeps labels and markers from being read as Markdown syntax.
fn md_escape(s: &str) -> String {
    s.trim()
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('*', "\\*")
}

fn render_text(a: &Analysis, style: Style) -> String {
    let mut out = String::new();
    if style == Style::Markdown {
        out.push_str("# jbench report\n\n");
    }
    if !a.warnings.is_empty() {
        out.push_str(&warning_block("Warnings", &a.warnings, style));
    }
    for w in &a.workloads {
        out.push_str(&render_workload(w, a, style));
    }
    out
}

fn render_workload(w: &WorkloadAnalysis, a: &Analysis, style: Style) -> String {
    let mut out = match style {
        Style::Plain => format!("== Workload {} ({}) ==\n\n", w.name, w.kind),
        Style::Markdown => format!("## Workload `{}` ({})\n\n", w.name, w.kind),
    };
    let marked = w.configs.iter().flat_map(|c| &c.phases).any(|p| p.suspect);
    let legend = marked.then(|| suspect_legend(a.suspect_below_secs, style));
    for grid in [times_grid(w, style), rates_grid(w, style)] {
        out.push_str(&grid.render(style));
        if let Some(l) = &legend {
            out.push_str(l);
        }
        out.push('\n');
    }
    if let Some(line) = trials_needed_line(w, style) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(base) = &w.baseline {
        if !w.comparisons.is_empty() {
            out.push_str(&comparison_grid(w, base, a.confidence).render(style));
            out.push('\n');
            out.push_str(&verdict_lines(w, base, a, style));
            out.push('\n');
        }
    }
    if !w.warnings.is_empty() {
        out.push_str(&warning_block("Warnings", &w.warnings, style));
    }
    out
}

/// "Trials per configuration: same-disk 3, ramdisk 7": shown when configurations ran
/// different numbers of trials (adaptive repetitions, failures, a merged comparison).
fn trials_needed_line(w: &WorkloadAnalysis, style: Style) -> Option<String> {
    let counts: Vec<usize> = w.configs.iter().map(|c| c.ok + c.failed).collect();
    if counts.windows(2).all(|p| p[0] == p[1]) {
        return None;
    }
    let items: Vec<String> = w
        .configs
        .iter()
        .zip(&counts)
        .map(|(c, n)| match style {
            Style::Plain => format!("{} {n}", c.label),
            Style::Markdown => format!("`{}` {n}", md_escape(&c.label)),
        })
        .collect();
    Some(format!("Trials per configuration: {}\n", items.join(", ")))
}

fn suspect_legend(threshold: f64, style: Style) -> String {
    let text =
        format!("suspect: mean phase time under {threshold} s, too short to draw conclusions from");
    match style {
        Style::Plain => format!("* {text}\n"),
        Style::Markdown => format!("\n\\* {text}\n"),
    }
}

fn warning_block(title: &str, warnings: &[String], style: Style) -> String {
    let mut out = match style {
        Style::Plain => format!("{title}:\n"),
        Style::Markdown => format!("### {title}\n\n"),
    };
    for w in warnings {
        let _ = match style {
            Style::Plain => writeln!(out, "  - {w}"),
            Style::Markdown => writeln!(out, "- {}", md_escape(w)),
        };
    }
    out.push('\n');
    out
}

/// One "mean ± sd" column of a table. One number of decimals for the whole column
/// (from its largest mean), so 999 and 1000 read alike; in plain text aligned on the
/// "±" so means and spreads line up even when their widths differ; the suspect marker
/// (or a space) sits in a slot of its own at the end for the same reason.
fn mean_sd_column(values: &[(Option<Summary>, bool)], style: Style) -> Vec<String> {
    let largest = values
        .iter()
        .filter_map(|(s, _)| s.map(|s| s.mean.abs()))
        .fold(0.0, f64::max);
    let d = decimals(largest);
    let parts: Vec<Option<(String, String, bool)>> = values
        .iter()
        .map(|(s, suspect)| {
            s.map(|s| {
                // One trial has no spread: "-", never a 0 that reads as "no noise".
                let sd = s.sd.map_or("-".to_string(), |sd| format!("{:.*}", d, sd));
                (format!("{:.*}", d, s.mean), sd, *suspect)
            })
        })
        .collect();
    let aligned = style == Style::Plain;
    let mean_w = parts
        .iter()
        .flatten()
        .map(|p| width(&p.0))
        .max()
        .unwrap_or(0);
    let sd_w = parts
        .iter()
        .flatten()
        .map(|p| width(&p.1))
        .max()
        .unwrap_or(0);
    let any_marker = parts.iter().flatten().any(|p| p.2);
    parts
        .into_iter()
        .map(|p| match p {
            None => "-".to_string(),
            Some((mean, sd, suspect)) => {
                let marker = match (suspect, aligned && any_marker) {
                    (true, _) => "*",
                    (false, true) => " ",
                    (false, false) => "",
                };
                if !aligned {
                    let sd = if sd.is_empty() {
                        sd
                    } else {
                        format!(" ± {sd}")
                    };
                    return format!("{mean}{sd}{marker}");
                }
                let sd_part = if sd.is_empty() {
                    " ".repeat(sd_w + 3)
                } else {
                    format!(" ± {}", pad(&sd, sd_w, false))
                };
                format!("{}{sd_part}{marker}", pad(&mean, mean_w, false))
            }
        })
        .collect()
}

/// Decimals for a figure of this magnitude: about four significant digits, never
/// scientific notation (the studies' tables read 12345 and 0.123 alike).
fn decimals(x: f64) -> usize {
    match x.abs() {
        a if a >= 1000.0 => 0,
        a if a >= 100.0 => 1,
        a if a >= 1.0 => 2,
        _ => 3,
    }
}

fn fmt_num(x: f64) -> String {
    format!("{:.*}", decimals(x), x)
}

fn trials_cell(c: &ConfigAnalysis) -> String {
    if c.failed > 0 {
        format!("{} (+{} failed)", c.ok, c.failed)
    } else {
        c.ok.to_string()
    }
}

/// Builds a table whose rows are configurations: label, trial count, then `columns`.
fn config_grid(title: String, w: &WorkloadAnalysis, columns: Vec<(String, Vec<String>)>) -> Grid {
    let mut headers = vec!["configuration".to_string(), "n".to_string()];
    headers.extend(columns.iter().map(|(h, _)| h.clone()));
    let rows = w
        .configs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut row = vec![c.label.clone(), trials_cell(c)];
            row.extend(columns.iter().map(|(_, cells)| cells[i].clone()));
            row
        })
        .collect();
    Grid {
        title,
        headers,
        rows,
    }
}

fn column_of(
    w: &WorkloadAnalysis,
    i: usize,
    pick: impl Fn(&PhaseStats) -> Option<Summary>,
    style: Style,
) -> Vec<String> {
    let values: Vec<(Option<Summary>, bool)> = w
        .configs
        .iter()
        .map(|c| (pick(&c.phases[i]), c.phases[i].suspect))
        .collect();
    mean_sd_column(&values, style)
}

fn times_grid(w: &WorkloadAnalysis, style: Style) -> Grid {
    let columns = w
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), column_of(w, i, |s| s.seconds, style)))
        .collect();
    config_grid("Times (s), mean ± sd".to_string(), w, columns)
}

fn rates_grid(w: &WorkloadAnalysis, style: Style) -> Grid {
    let mut columns = Vec::new();
    for (i, p) in w.phases.iter().enumerate() {
        columns.push((p.rate_unit.clone(), column_of(w, i, |s| s.rate, style)));
        if p.has_bytes {
            let header = format!("{} KiB/s", p.name);
            columns.push((header, column_of(w, i, |s| s.kib_per_sec, style)));
        }
    }
    config_grid("Rates, mean ± sd".to_string(), w, columns)
}

fn comparison_grid(w: &WorkloadAnalysis, base: &str, confidence: f64) -> Grid {
    let mut headers = vec!["configuration".to_string()];
    headers.extend(w.phases.iter().map(|p| p.name.clone()));
    let rows = w
        .comparisons
        .iter()
        .map(|c| {
            let mut row = vec![c.config.clone()];
            row.extend(c.phases.iter().map(comparison_cell));
            row
        })
        .collect();
    Grid {
        title: format!(
            "Compared with {base}: rate difference of means [{}% CI], Welch p{} (Mann-Whitney p with 4+ trials a side)",
            fmt_level(confidence),
            if w.family_size > 1 || w.comparisons.iter().flat_map(|c| &c.phases).any(|p| p.p != p.p_adjusted) {
                ", adjusted p (Holm)"
            } else {
                ""
            }
        ),
        headers,
        rows,
    }
}

/// "+12.3% [+8.1, +16.5] p=0.002", or the verdict when there is no test.
fn comparison_cell(c: &PhaseComparison) -> String {
    let marker = if c.suspect { "*" } else { "" };
    let (Some(pct), Some(p)) = (c.pct, c.p) else {
        return format!("{}{marker}", short_verdict(c));
    };
    let ci = match (c.ci_low_pct, c.ci_high_pct) {
        (Some(lo), Some(hi)) => format!(" [{lo:+.1}, {hi:+.1}]"),
        _ => String::new(),
    };
    let mw = c
        .mann_whitney_p
        .map(|m| format!(" (MW {})", p_expr(m, false)))
        .unwrap_or_default();
    let adjusted = c.p_adjusted.unwrap_or(p);
    format!("{pct:+.1}%{ci} {}{mw}{marker}", p_pair(p, adjusted, false))
}

/// The verdict without the suspect suffix (the cell carries a `*` instead).
fn short_verdict(c: &PhaseComparison) -> &str {
    c.verdict
        .split(" (suspect")
        .next()
        .unwrap_or(c.verdict.as_str())
}

/// One line per configuration: significant differences one by one with their p,
/// then the other phases grouped by verdict ("no significant difference in
/// dir_create, file_create"). The suspect condition is stated once: above the lines
/// when every comparison involves a suspect phase, otherwise as a `*` on the phases
/// that do, explained below the lines.
fn verdict_lines(w: &WorkloadAnalysis, base: &str, a: &Analysis, style: Style) -> String {
    let alpha = fmt_alpha(1.0 - a.confidence);
    let rule = significance_rule(&alpha, w.family_size, a.adaptive_looks);
    let mut out = match style {
        Style::Plain => format!("Verdicts (rate vs {base}, {rule}):\n"),
        Style::Markdown => format!("Verdicts (rate vs `{}`, {rule}):\n\n", md_escape(base)),
    };
    let all = || w.comparisons.iter().flat_map(|c| &c.phases);
    let n_suspect = all().filter(|p| p.suspect).count();
    let every = n_suspect > 0 && n_suspect == all().count();
    let threshold = a.suspect_below_secs;
    let note = format!("mean phase time under {threshold} s");
    if every {
        let _ = match style {
            Style::Plain => writeln!(
                out,
                "  (all comparisons below involve suspect phases: {note})"
            ),
            Style::Markdown => writeln!(
                out,
                "All comparisons below involve suspect phases: {note}.\n"
            ),
        };
    }
    for c in &w.comparisons {
        let line = verdict_line(c, w.phases.len(), !every);
        let _ = match style {
            Style::Plain => writeln!(out, "  {}: {line}", c.config),
            Style::Markdown => writeln!(out, "- `{}`: {}", c.config, md_escape(&line)),
        };
    }
    if n_suspect > 0 && !every {
        let _ = match style {
            Style::Plain => writeln!(out, "* involves a suspect phase: {note}"),
            Style::Markdown => writeln!(out, "\n\\* involves a suspect phase: {note}"),
        };
    }
    out
}

/// "significant when p < 0.05", plus the corrections the p-values went through: Holm
/// over a family of more than one comparison, Bonferroni over adaptive looks.
fn significance_rule(alpha: &str, family: usize, looks: Option<u32>) -> String {
    let mut out = format!("significant when p < {alpha}");
    let mut how = Vec::new();
    if let Some(k) = looks.filter(|k| *k > 1) {
        how.push(format!(
            "adaptive: p from a sequentially stopped run, multiplied by its {k} possible looks"
        ));
    }
    if family > 1 {
        how.push(format!(
            "adjusted with Holm over the {family} comparisons of this workload"
        ));
    }
    if !how.is_empty() {
        out.push_str(" after correction; ");
        out.push_str(&how.join("; then "));
    }
    out
}

/// `file_remove 43.8% faster (p=0.007), dir_remove 30.3% faster (p=0.002); no
/// significant difference in dir_create, file_create`. With `mark`, suspect phases
/// carry a `*`.
fn verdict_line(c: &Comparison, n_phases: usize, mark: bool) -> String {
    let name = |p: &PhaseComparison| {
        let marker = if mark && p.suspect { "*" } else { "" };
        format!("{}{marker}", p.phase)
    };
    let significant: Vec<String> = c
        .phases
        .iter()
        .filter(|p| p.significant)
        .map(|p| {
            let p_value =
                p.p.map(|x| format!(" ({})", p_pair(x, p.p_adjusted.unwrap_or(x), false)));
            format!(
                "{} {}{}",
                name(p),
                short_verdict(p),
                p_value.unwrap_or_default()
            )
        })
        .collect();
    // The other phases, grouped by verdict in order of first appearance; "no
    // significant difference (p = 0.41)" groups as "no significant difference" (the
    // p-values are in the comparison table).
    let mut groups: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for p in c.phases.iter().filter(|p| !p.significant) {
        let verdict = short_verdict(p);
        let (head, tail) = match (p.p, verdict.split_once(" (")) {
            (Some(_), Some((head, _))) => (head, ""),
            (None, Some((head, _))) => (head, &verdict[head.len()..]),
            (_, None) => (verdict, ""),
        };
        match groups.iter_mut().find(|g| g.0 == head && g.1 == tail) {
            Some(g) => g.2.push(name(p)),
            None => groups.push((head, tail, vec![name(p)])),
        }
    }
    let mut parts = Vec::new();
    if !significant.is_empty() {
        parts.push(significant.join(", "));
    }
    for (head, tail, phases) in groups {
        // Names are dropped only when none carries a marker.
        let whole =
            phases.len() == n_phases && n_phases > 1 && !phases.iter().any(|p| p.ends_with('*'));
        let which = match (whole, head) {
            (true, "no significant difference") => "any phase".to_string(),
            (true, _) => "all phases".to_string(),
            (false, _) => phases.join(", "),
        };
        parts.push(format!("{head} in {which}{tail}"));
    }
    if parts.is_empty() {
        // No phase at all: every trial of both sides failed before measuring.
        return "nothing to compare: no phase was measured by a successful trial".to_string();
    }
    parts.join("; ")
}

/// The significance level as a short decimal: 0.05, 0.01, 0.005.
fn fmt_alpha(alpha: f64) -> String {
    let s = format!("{alpha:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// "p = 0.41" (`spaced`) or "p=0.41": two decimals for ordinary p-values, three near
/// and below 0.05 so significance is visible, and a floor below which digits mean
/// nothing.
fn p_expr(p: f64, spaced: bool) -> String {
    let (rel, value) = if p >= 0.1 {
        ("=", format!("{p:.2}"))
    } else if p >= 0.001 {
        ("=", format!("{p:.3}"))
    } else {
        ("<", "0.001".to_string())
    };
    if spaced {
        format!("p {rel} {value}")
    } else {
        format!("p{rel}{value}")
    }
}

fn fmt_level(level: f64) -> String {
    let pct = level * 100.0;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0}")
    } else {
        format!("{pct}")
    }
}

// ---------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------

const CSV_HEADER: [&str; 22] = [
    "workload",
    "config",
    "phase",
    "n",
    "failed",
    "seconds_mean",
    "seconds_sd",
    "rate_unit",
    "rate_mean",
    "rate_sd",
    "kib_per_s_mean",
    "kib_per_s_sd",
    "suspect",
    "vs_baseline_pct",
    "vs_baseline_ci_low",
    "vs_baseline_ci_high",
    "p_value",
    "verdict",
    // Added after the first release: new columns go last so readers by position keep
    // working.
    "p_adjusted",
    "outcome",
    "rate_ci95_low",
    "rate_ci95_high",
];

pub fn render_csv(a: &Analysis) -> String {
    let mut out = csv_line(CSV_HEADER.iter().map(|s| s.to_string()));
    for w in &a.workloads {
        for c in &w.configs {
            let cmp = w.comparisons.iter().find(|x| x.config == c.label);
            for (i, p) in c.phases.iter().enumerate() {
                let is_base = w.baseline.as_deref() == Some(c.label.as_str());
                out.push_str(&csv_line(csv_row(
                    w,
                    c,
                    i,
                    p,
                    cmp.map(|x| &x.phases[i]),
                    is_base,
                )));
            }
        }
    }
    out
}

fn csv_row(
    w: &WorkloadAnalysis,
    c: &ConfigAnalysis,
    i: usize,
    p: &PhaseStats,
    cmp: Option<&PhaseComparison>,
    is_base: bool,
) -> Vec<String> {
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    // An sd from one trial is not a spread: leave it empty rather than print 0.
    let sd = |s: Option<Summary>| num(s.and_then(|s| s.sd));
    let mean = |s: Option<Summary>| num(s.map(|s| s.mean));
    let verdict = match (is_base, cmp) {
        (true, _) => "baseline".to_string(),
        (false, Some(x)) => x.verdict.clone(),
        (false, None) => String::new(),
    };
    vec![
        w.name.clone(),
        c.label.clone(),
        p.phase.clone(),
        p.n.to_string(),
        c.failed.to_string(),
        mean(p.seconds),
        sd(p.seconds),
        w.phases[i].rate_unit.clone(),
        mean(p.rate),
        sd(p.rate),
        mean(p.kib_per_sec),
        sd(p.kib_per_sec),
        p.suspect.to_string(),
        num(cmp.and_then(|x| x.pct)),
        num(cmp.and_then(|x| x.ci_low_pct)),
        num(cmp.and_then(|x| x.ci_high_pct)),
        num(cmp.and_then(|x| x.p)),
        verdict,
        num(cmp.and_then(|x| x.p_adjusted)),
        cmp.filter(|_| !is_base)
            .map(|x| serde_json::to_value(x.outcome).ok())
            .and_then(|v| v.and_then(|v| v.as_str().map(str::to_string)))
            .unwrap_or_default(),
        num(p.rate.and_then(|s| s.ci95_low)),
        num(p.rate.and_then(|s| s.ci95_high)),
    ]
}

fn csv_line(fields: impl IntoIterator<Item = String>) -> String {
    let quoted: Vec<String> = fields.into_iter().map(|f| csv_field(&f)).collect();
    format!("{}\n", quoted.join(","))
}

/// RFC 4180 quoting: labels such as `second-disk,256M` contain commas.
fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::record::{Status, SCHEMA_VERSION};
    use crate::workload::PhaseResult;

    /// fdtree's four phases; `create_bytes` is the payload of the file-create phase.
    const PHASES: [(&str, &str); 4] = [
        ("dir_create", "dir creates"),
        ("file_create", "file creates"),
        ("file_remove", "file removals"),
        ("dir_remove", "dir removals"),
    ];
    /// Long enough that rates around 1000 ops/s run 600 s, far above the 60 s rule.
    const OPS: u64 = 600_000;

    /// A trial whose every phase ran `OPS` operations at `rates[i]` ops/s (so
    /// seconds = OPS / rate); the file-create phase moved `OPS` * 4 KiB.
    fn rec(trial: usize, rep: u32, label: &str, workload: &str, rates: [f64; 4]) -> TrialRecord {
        let phases = PHASES
            .iter()
            .zip(rates)
            .map(|((name, unit), rate)| PhaseResult {
                name: name.to_string(),
                seconds: OPS as f64 / rate,
                ops: OPS,
                bytes: if *name == "file_create" {
                    OPS * 4096
                } else {
                    0
                },
                op_unit: unit.to_string(),
                ..PhaseResult::default()
            })
            .collect();
        TrialRecord {
            schema_version: SCHEMA_VERSION,
            trial,
            rep,
            config: ConfigRecord {
                label: label.to_string(),
                filesystem: "ext4".to_string(),
                fs_size: 1 << 30,
                placement: label.split(',').next().unwrap().to_string(),
                journal_size: 16 << 20,
                mode: "ordered".to_string(),
                mkfs_options: vec![],
                mount_options: vec![],
                fast_commit: false,
                commit_seconds: None,
                memory_limit: None,
                ramdisk_size: None,
                fs_device_model: None,
                journal_device_model: None,
            },
            workload: crate::results::record::WorkloadRecord {
                kind: "fdtree".to_string(),
                name: workload.to_string(),
                params: serde_json::json!({"dirs": 3}),
                durable: false,
            },
            layout: serde_json::Value::Null,
            verified: None,
            phases,
            memory: None,
            emulation: None,
            monitor: None,
            status: Status::Ok,
            error: None,
            started_at: "2024-01-01T00:00:00Z".to_string(),
            wall_seconds: 1.0,
        }
    }

    fn failed(mut r: TrialRecord, error: &str) -> TrialRecord {
        r.status = Status::Failed;
        r.error = Some(format!("{error}\nsecond line"));
        r
    }

    /// One trial per rate, trial indexes from `first`: dir_create runs at the given
    /// rate, the other phases at 1000 ops/s.
    fn series(out: &mut Vec<TrialRecord>, first: usize, label: &str, wl: &str, rates: &[f64]) {
        for (i, r) in rates.iter().enumerate() {
            out.push(rec(
                first + i,
                i as u32 + 1,
                label,
                wl,
                [*r, 1000.0, 1000.0, 1000.0],
            ));
        }
    }

    const BASE: [f64; 3] = [1000.0, 1010.0, 990.0];
    const FAST: [f64; 3] = [1200.0, 1190.0, 1210.0];

    #[test]
    fn emulated_disks_answered_by_the_fuse_floor_are_warned_about() {
        use crate::emu::daemon::DiskStats;
        use crate::emu::host::EmulationRecord;
        let disk = |name: &str, model: &str, floor_bound, excess, response, late| DiskStats {
            name: name.into(),
            model: model.into(),
            writes: 1000,
            floor_bound,
            floor_excess_seconds: excess,
            response_seconds: response,
            late,
            ..DiskStats::default()
        };
        let mut records = Vec::new();
        for rep in 1..=2 {
            let mut r = rec(rep as usize, rep, "ramdisk", "w", [10.0, 20.0, 30.0, 40.0]);
            r.emulation = Some(EmulationRecord {
                disks: vec![
                    // An hdd whose cached writes beat the floor: a sliver of its time.
                    disk("fs", "hdd-7200", 300, 0.02, 5.0, 0),
                    // A RAM disk: all of it is the path's.
                    disk("journal", "ram", 1000, 0.05, 0.0, 50),
                ],
                ..EmulationRecord::default()
            });
            records.push(r);
        }
        let a = analyse(&records, &opts());
        let w = a.all_warnings();
        let floor: Vec<&String> = w.iter().filter(|l| l.contains("FUSE path")).collect();
        assert_eq!(floor.len(), 1, "{w:#?}");
        assert!(
            floor[0].contains("journal disk (ram)") && floor[0].contains("100%"),
            "{}",
            floor[0]
        );
        assert!(
            w.iter()
                .any(|l| l.contains("journal disk's daemon answered 100 of 2000")),
            "{w:#?}"
        );
        assert!(!w.iter().any(|l| l.contains("fs disk")), "{w:#?}");
    }

    fn opts() -> ReportOptions {
        ReportOptions::default()
    }

    fn find<'a>(a: &'a Analysis, wl: &str, cfg: &str) -> &'a ConfigAnalysis {
        let w = a.workloads.iter().find(|w| w.name == wl).unwrap();
        w.configs.iter().find(|c| c.label == cfg).unwrap()
    }

    fn comparison<'a>(a: &'a Analysis, wl: &str, cfg: &str, phase: &str) -> &'a PhaseComparison {
        let w = a.workloads.iter().find(|w| w.name == wl).unwrap();
        let c = w.comparisons.iter().find(|c| c.config == cfg).unwrap();
        c.phases.iter().find(|p| p.phase == phase).unwrap()
    }

    #[test]
    fn groups_and_orders_by_trial_index_not_input_order() {
        // Plan order: b/deep(0) a/deep(1) b/small(2) a/small(3) b/deep(4) a/deep(5) ...
        let mut recs = vec![
            rec(5, 2, "a", "deep", [900.0; 4]),
            rec(3, 1, "a", "small", [900.0; 4]),
            rec(0, 1, "b", "deep", [800.0; 4]),
            rec(2, 1, "b", "small", [800.0; 4]),
            rec(4, 2, "b", "deep", [800.0; 4]),
            rec(1, 1, "a", "deep", [900.0; 4]),
        ];
        recs.push(rec(6, 2, "b", "small", [800.0; 4]));
        let a = analyse(&recs, &opts());
        let workloads: Vec<&str> = a.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(workloads, ["deep", "small"]);
        for w in &a.workloads {
            let labels: Vec<&str> = w.configs.iter().map(|c| c.label.as_str()).collect();
            assert_eq!(labels, ["b", "a"], "workload {}", w.name);
            let phases: Vec<&str> = w.phases.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(
                phases,
                ["dir_create", "file_create", "file_remove", "dir_remove"]
            );
        }
        assert_eq!(a.baseline.as_deref(), Some("b"));
        assert_eq!(find(&a, "deep", "a").ok, 2);
        assert_eq!(find(&a, "small", "a").ok, 1);
        let units: Vec<&str> = a.workloads[0]
            .phases
            .iter()
            .map(|p| p.rate_unit.as_str())
            .collect();
        assert_eq!(
            units,
            [
                "dir creates/s",
                "file creates/s",
                "file removals/s",
                "dir removals/s"
            ]
        );
        let has_bytes: Vec<bool> = a.workloads[0].phases.iter().map(|p| p.has_bytes).collect();
        assert_eq!(has_bytes, [false, true, false, false]);
    }

    #[test]
    fn per_phase_statistics() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &[500.0, 600.0, 750.0]);
        let a = analyse(&recs, &opts());
        let p = &find(&a, "small", "same-disk").phases[0];
        assert_eq!(p.n, 3);
        // seconds = 600000 / rate = 1200, 1000, 800.
        let s = p.seconds.unwrap();
        assert!((s.mean - 1000.0).abs() < 1e-9);
        assert!((s.sd.unwrap() - 200.0).abs() < 1e-9);
        let r = p.rate.unwrap();
        assert!((r.mean - 616.666_666_666_666_6).abs() < 1e-9);
        assert!(p.kib_per_sec.is_none(), "dir_create moves no payload");
        let fc = &find(&a, "small", "same-disk").phases[1];
        // 600000 * 4096 bytes / 1024 / 600 s = 4000 KiB/s
        assert!((fc.kib_per_sec.unwrap().mean - 4000.0).abs() < 1e-9);
        assert!(!p.suspect);
    }

    #[test]
    fn failed_trials_are_excluded_and_counted() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        recs.push(failed(
            rec(3, 4, "same-disk", "small", [1.0; 4]),
            "mkfs.ext4 exited with 1",
        ));
        let a = analyse(&recs, &opts());
        let c = find(&a, "small", "same-disk");
        assert_eq!((c.ok, c.failed), (3, 1));
        assert_eq!(c.phases[0].n, 3);
        assert!((c.phases[0].rate.unwrap().mean - 1000.0).abs() < 1e-9);
        let w = &a.workloads[0].warnings;
        assert!(
            w.contains(&"small/same-disk: 1 of 4 trials failed and are excluded from the statistics (first error: mkfs.ext4 exited with 1)".to_string()),
            "{w:?}"
        );
        let csv = render(&recs, &opts(), Format::Csv);
        let row = csv_rows(&csv)[1].clone();
        assert_eq!((row[3].as_str(), row[4].as_str()), ("3", "1"));
    }

    #[test]
    fn configuration_with_only_failed_trials_still_listed() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        recs.push(failed(rec(3, 1, "ramdisk", "small", [1.0; 4]), "zram busy"));
        let a = analyse(&recs, &opts());
        let c = find(&a, "small", "ramdisk");
        assert_eq!((c.ok, c.failed), (0, 1));
        assert!(c.phases.iter().all(|p| p.n == 0 && p.seconds.is_none()));
        // The failed line already says "1 of 1": no second "no successful trials" line.
        assert_eq!(
            a.workloads[0].warnings,
            ["small/ramdisk: 1 of 1 trials failed and are excluded from the statistics (first error: zram busy)"]
        );
        assert_eq!(
            comparison(&a, "small", "ramdisk", "dir_create").verdict,
            "too few trials"
        );
        let text = render(&recs, &opts(), Format::Table);
        assert!(text.contains("0 (+1 failed)"), "{text}");
        assert!(
            text.contains("\n  ramdisk: too few trials in all phases\n"),
            "{text}"
        );
    }

    #[test]
    fn suspect_phases_are_marked() {
        let mut recs = Vec::new();
        // dir_create at 20000 ops/s runs 30 s: suspect; the others run 600 s: not.
        for i in 0..3 {
            recs.push(rec(
                i,
                i as u32 + 1,
                "same-disk",
                "small",
                [20000.0, 1000.0, 1000.0, 1000.0],
            ));
        }
        for i in 3..6 {
            recs.push(rec(
                i,
                i as u32 - 2,
                "ramdisk",
                "small",
                [21000.0, 1000.0, 1001.0, 999.0],
            ));
        }
        let a = analyse(&recs, &opts());
        let c = find(&a, "small", "same-disk");
        let suspect: Vec<bool> = c.phases.iter().map(|p| p.suspect).collect();
        assert_eq!(suspect, [true, false, false, false]);
        // One line for the workload, grouped by phase.
        assert_eq!(
            a.workloads[0].warnings,
            ["small: 2 of 8 phase means are under the 60 s suspect threshold: dir_create (all configurations); do not draw conclusions from them"]
        );
        let listed: Vec<(&str, &str, String)> = a.workloads[0]
            .suspect_phases
            .iter()
            .map(|s| (s.config.as_str(), s.phase.as_str(), fmt_num(s.mean_seconds)))
            .collect();
        assert_eq!(
            listed,
            [
                ("same-disk", "dir_create", "30.00".to_string()),
                ("ramdisk", "dir_create", "28.57".to_string())
            ]
        );
        let cmp = comparison(&a, "small", "ramdisk", "dir_create");
        assert!(cmp.suspect);
        assert!(
            cmp.verdict.ends_with(" (suspect: phase < 60 s)"),
            "{}",
            cmp.verdict
        );
        assert!(!comparison(&a, "small", "ramdisk", "file_create").suspect);

        let text = render(&recs, &opts(), Format::Table);
        assert!(
            text.contains("same-disk      3  30.00 ± 0.00*  600.0 ± 0.0"),
            "{text}"
        );
        assert!(
            text.contains("20000 ± 0*"),
            "rates of a suspect phase are marked too"
        );
        assert!(
            text.contains("* suspect: mean phase time under 60 s"),
            "{text}"
        );
        // Only some comparisons are suspect: those phases carry a `*` in the verdict
        // line, explained once below it; the suffix is not repeated per phase.
        assert!(
            text.contains("\n  ramdisk: dir_create* 5.0% faster (p<0.001); "),
            "{text}"
        );
        // 0.1% differences are significant but inside the 2% noise band.
        assert!(
            text.contains("; no meaningful difference in file_remove, dir_remove\n"),
            "{text}"
        );
        let c = comparison(&a, "small", "ramdisk", "file_remove");
        assert!(c.within_noise_band && !c.significant, "{c:?}");
        assert!(
            c.verdict.starts_with(
                "no meaningful difference (+0.1% is within the 2% noise band, p < 0.001"
            ),
            "{}",
            c.verdict
        );
        let strict = ReportOptions {
            noise_band: 0.0,
            ..opts()
        };
        let text = render(&recs, &strict, Format::Table);
        assert!(
            text.contains("\n  ramdisk: dir_create* 5.0% faster (p<0.001), "),
            "without a band every significant difference counts: {text}"
        );
        assert!(
            text.contains("\n* involves a suspect phase: mean phase time under 60 s\n"),
            "{text}"
        );
        assert!(!text.contains("(suspect: phase < 60 s)"), "{text}");
        assert!(!text.contains("all comparisons below"), "{text}");
        // A lower threshold clears the mark.
        let lenient = ReportOptions {
            suspect_below_secs: 10.0,
            ..opts()
        };
        let a = analyse(&recs, &lenient);
        assert!(!find(&a, "small", "same-disk").phases[0].suspect);
        assert!(a.workloads[0].suspect_phases.is_empty());
        assert!(
            a.workloads[0].warnings.is_empty(),
            "{:?}",
            a.workloads[0].warnings
        );
    }

    #[test]
    fn clearly_faster_configuration_is_faster() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        series(&mut recs, 3, "ramdisk", "small", &FAST);
        series(&mut recs, 6, "second-disk", "small", &[900.0, 880.0, 920.0]);
        let a = analyse(&recs, &opts());
        let fast = comparison(&a, "small", "ramdisk", "dir_create");
        assert!((fast.pct.unwrap() - 20.0).abs() < 1e-9);
        // scipy.stats.ttest_ind(FAST, BASE, equal_var=False): p = 1.6483088987181242e-05,
        // confidence_interval(0.95) / 1000 * 100 = [17.73304206447248, 22.26695793552752].
        assert!((fast.p.unwrap() - 1.6483088987181242e-05).abs() < 1e-9);
        assert!((fast.ci_low_pct.unwrap() - 17.73304206447248).abs() < 1e-6);
        assert!((fast.ci_high_pct.unwrap() - 22.26695793552752).abs() < 1e-6);
        assert!(fast.significant);
        assert!(!fast.suspect);
        assert_eq!(fast.verdict, "20.0% faster");
        // scipy: p = 0.004797999699128048 for [900, 880, 920] vs BASE.
        let slow = comparison(&a, "small", "second-disk", "dir_create");
        assert!((slow.p.unwrap() - 0.004797999699128048).abs() < 1e-9);
        assert_eq!(slow.verdict, "10.0% slower");
        let text = render(&recs, &opts(), Format::Table);
        assert!(text.contains("+20.0% [+17.7, +22.3] p<0.001"), "{text}");
        // scipy CI / 1000 * 100: [-14.155399503182503, -5.844600496817497].
        assert!(text.contains("-10.0% [-14.2, -5.8] p=0.005"), "{text}");
    }

    #[test]
    fn noisy_similar_configurations_are_not_different() {
        let mut recs = Vec::new();
        series(
            &mut recs,
            0,
            "same-disk",
            "small",
            &[1000.0, 1050.0, 950.0, 1020.0, 980.0],
        );
        series(
            &mut recs,
            5,
            "ramdisk",
            "small",
            &[1030.0, 990.0, 1060.0, 1010.0, 1020.0],
        );
        let a = analyse(&recs, &opts());
        let c = comparison(&a, "small", "ramdisk", "dir_create");
        // scipy.stats.ttest_ind(other, base, equal_var=False): p = 0.32056416876097554,
        // CI / mean(base) * 100 = [-2.662599087035003, 7.062599087035003].
        assert!((c.p.unwrap() - 0.32056416876097554).abs() < 1e-9);
        assert!((c.pct.unwrap() - 2.2).abs() < 1e-9);
        assert!((c.ci_low_pct.unwrap() + 2.662599087035003).abs() < 1e-6);
        assert!((c.ci_high_pct.unwrap() - 7.062599087035003).abs() < 1e-6);
        assert!(!c.significant);
        assert_eq!(
            c.verdict,
            "no significant difference (p = 0.32, adjusted p = 1.00)"
        );
    }

    /// Holm over the workload's family: a raw p of about 0.03 that alone would be
    /// "faster" is not significant among 8 comparisons.
    #[test]
    fn a_p_of_003_among_many_comparisons_is_no_longer_significant() {
        let base = [1000.0, 1050.0, 950.0, 1020.0, 980.0];
        let other = [1060.0, 1100.0, 1020.0, 1085.0, 1045.0];
        let mut alone = Vec::new();
        series(&mut alone, 0, "same-disk", "small", &base);
        series(&mut alone, 5, "ramdisk", "small", &other);
        // The other 3 phases have p = 1, so alone the family is {p, 1, 1, 1}: Holm
        // gives 4p for the smallest.
        let mut many = alone.clone();
        series(&mut many, 10, "second-disk", "small", &base);
        series(&mut many, 15, "zram", "small", &base);
        series(&mut many, 20, "device", "small", &base);
        let a = analyse(&many, &opts());
        assert_eq!(a.workloads[0].family_size, 16);
        let c = comparison(&a, "small", "ramdisk", "dir_create");
        let p = c.p.unwrap();
        assert!(p > 0.01 && p < 0.05, "raw p {p}");
        let adj = c.p_adjusted.unwrap();
        assert!(
            adj > 0.05 && (adj - (16.0 * p).min(1.0)).abs() < 1e-12,
            "{adj}"
        );
        assert!(!c.significant);
        assert_eq!(c.outcome, Outcome::NoSignificantDifference);
        assert!(
            c.verdict.starts_with(&format!(
                "no significant difference ({}, adjusted",
                p_expr(p, true)
            )),
            "{}",
            c.verdict
        );
        // Raw and adjusted p in every format.
        let table = render(&many, &opts(), Format::Table);
        assert!(
            table.contains(&format!(
                "{}, adjusted {}",
                p_expr(p, false),
                p_expr(adj, false)
            )),
            "{table}"
        );
        assert!(
            table.contains("adjusted with Holm over the 16 comparisons"),
            "{table}"
        );
        let csv = render(&many, &opts(), Format::Csv);
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with(",p_adjusted,outcome,rate_ci95_low,rate_ci95_high"));
        assert!(
            csv.contains(&format!(",{p},"))
                && csv.contains(&format!(",{adj},no_significant_difference,")),
            "{csv}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&render(&many, &opts(), Format::Json)).unwrap();
        let jc = &json["workloads"][0]["comparisons"][0]["phases"][0];
        assert!((jc["p"].as_f64().unwrap() - p).abs() < 1e-12, "{jc}");
        assert!(
            (jc["p_adjusted"].as_f64().unwrap() - adj).abs() < 1e-12,
            "{jc}"
        );
        assert_eq!(jc["outcome"], "no_significant_difference");
        // Without the other configurations the family is {p, 1, 1, 1}: Holm gives 4p.
        let a = analyse(&alone, &opts());
        let c = comparison(&a, "small", "ramdisk", "dir_create");
        assert!((c.p_adjusted.unwrap() - 4.0 * p).abs() < 1e-12, "{c:?}");
    }

    /// Adaptive runs: p is multiplied by the number of possible looks before Holm,
    /// and the verdict header says the p comes from a sequentially stopped run.
    #[test]
    fn adaptive_runs_correct_for_the_looks() {
        let mut recs = Vec::new();
        series(
            &mut recs,
            0,
            "same-disk",
            "small",
            &[1000.0, 1050.0, 950.0, 1020.0, 980.0],
        );
        series(
            &mut recs,
            5,
            "ramdisk",
            "small",
            &[1060.0, 1100.0, 1020.0, 1085.0, 1045.0],
        );
        let fixed = analyse(&recs, &opts());
        let adaptive = analyse(
            &recs,
            &ReportOptions {
                adaptive_looks: Some(3),
                ..opts()
            },
        );
        let f = comparison(&fixed, "small", "ramdisk", "dir_create");
        let s = comparison(&adaptive, "small", "ramdisk", "dir_create");
        assert_eq!(f.p, s.p);
        let want = (f.p.unwrap() * 3.0 * 4.0).min(1.0);
        assert!((s.p_adjusted.unwrap() - want).abs() < 1e-12, "{s:?}");
        let text = render(
            &recs,
            &ReportOptions {
                adaptive_looks: Some(3),
                ..opts()
            },
            Format::Table,
        );
        assert!(
            text.contains("adaptive: p from a sequentially stopped run"),
            "{text}"
        );
        assert_eq!(adaptive.adaptive_looks, Some(3));
    }

    /// One trial: no sd and no interval anywhere (null, "-", empty), not zeros.
    #[test]
    fn a_single_trial_has_no_spread_and_no_interval_in_any_format() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &[1000.0]);
        series(&mut recs, 1, "ramdisk", "small", &[1200.0]);
        let json: serde_json::Value =
            serde_json::from_str(&render(&recs, &opts(), Format::Json)).unwrap();
        let rate = &json["workloads"][0]["configs"][0]["phases"][0]["rate"];
        assert_eq!(rate["n"], 1);
        for k in ["sd", "ci95_low", "ci95_high"] {
            assert!(rate[k].is_null(), "{k}: {rate}");
        }
        let table = render(&recs, &opts(), Format::Table);
        assert!(table.contains("1000 ± -"), "{table}");
        let md = render(&recs, &opts(), Format::Markdown);
        assert!(md.contains("| same-disk | 1 | 1000 ± - |"), "{md}");
        let csv = render(&recs, &opts(), Format::Csv);
        let row = csv.lines().nth(1).unwrap();
        assert!(
            row.starts_with("small,same-disk,dir_create,1,0,600,,dir creates/s,1000,,"),
            "{row}"
        );
        assert!(row.ends_with(",,"), "no interval: {row}");
        let a = analyse(&recs, &opts());
        let c = comparison(&a, "small", "ramdisk", "dir_create");
        assert_eq!(
            (c.verdict.as_str(), c.outcome),
            ("too few trials", Outcome::TooFewTrials)
        );
    }

    /// A run that measured nothing says so, and no verdict line is empty.
    #[test]
    fn every_trial_failed_is_said_and_verdicts_are_never_empty() {
        let mut recs = Vec::new();
        for (i, label) in ["same-disk", "ramdisk", "same-disk", "ramdisk"]
            .iter()
            .enumerate()
        {
            let mut r = failed(rec(i, 1, label, "small", BASE_ROW), "mkfs failed: no space");
            r.phases.clear();
            recs.push(r);
        }
        let a = analyse(&recs, &opts());
        assert!(
            a.warnings
                .iter()
                .any(|w| w.starts_with("every trial failed (4 of 4): mkfs failed: no space")),
            "{:?}",
            a.warnings
        );
        assert!(every_trial_failed(&recs).is_some());
        for format in [Format::Table, Format::Markdown] {
            let text = render(&recs, &opts(), format);
            assert!(text.contains("every trial failed"), "{text}");
            let verdicts: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("  ramdisk: ") || l.starts_with("- `ramdisk`: "))
                .collect();
            assert_eq!(verdicts.len(), 1, "{text}");
            assert!(
                verdicts[0]
                    .trim_end()
                    .ends_with("nothing to compare: no phase was measured by a successful trial"),
                "{text}"
            );
        }
        // Only failed trials on one side: "too few trials", not an empty verdict.
        let mut some = Vec::new();
        series(&mut some, 0, "same-disk", "small", &BASE);
        for i in 0..2 {
            some.push(failed(rec(3 + i, 1, "ramdisk", "small", BASE_ROW), "boom"));
        }
        let a = analyse(&some, &opts());
        assert!(every_trial_failed(&some).is_none());
        for c in &a.workloads[0].comparisons {
            for p in &c.phases {
                assert_eq!(p.verdict, "too few trials");
            }
        }
    }

    /// A record the reader excluded is named in a run-wide warning.
    #[test]
    fn excluded_records_are_warned_about() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        let mut bad = rec(3, 4, "same-disk", "small", BASE_ROW);
        bad.phases[0].seconds = 0.0;
        assert!(bad.exclude_if_invalid().is_some());
        recs.push(bad);
        let a = analyse(&recs, &opts());
        assert!(
            a.warnings.iter().any(|w| w
                .starts_with("1 invalid trial record(s) excluded from the statistics")
                && w.contains("seconds = 0")),
            "{:?}",
            a.warnings
        );
        assert_eq!(find(&a, "small", "same-disk").ok, 3);
    }

    const BASE_ROW: [f64; 4] = [1000.0; 4];

    #[test]
    fn too_few_trials_and_single_trial_warning() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        series(&mut recs, 3, "ramdisk", "small", &[900.0]);
        let a = analyse(&recs, &opts());
        let c = comparison(&a, "small", "ramdisk", "dir_create");
        assert_eq!(c.verdict, "too few trials");
        assert_eq!((c.n_baseline, c.n_other), (3, 1));
        assert!(c.p.is_none());
        assert!((c.pct.unwrap() + 10.0).abs() < 1e-9, "means still compared");
        assert!(a.workloads[0].warnings.contains(
            &"small/ramdisk: only 1 successful trial: no spread and no comparison possible"
                .to_string()
        ));
    }

    #[test]
    fn high_variance_is_warned_once_per_workload() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &[600.0, 1000.0, 800.0]);
        series(&mut recs, 3, "second-disk", "small", &BASE);
        // file_create: sd 104 / mean 1000 = 10.4%; file_remove: 500 / 1000 = 50%.
        for (k, (fc, fr)) in [(896.0, 500.0), (1104.0, 1500.0), (1000.0, 1000.0)]
            .into_iter()
            .enumerate()
        {
            recs.push(rec(
                6 + k,
                k as u32 + 1,
                "ramdisk",
                "small",
                [1000.0, fc, fr, 1000.0],
            ));
        }
        let a = analyse(&recs, &opts());
        // sd 200 / mean 800 = 25%. second-disk (1%) is left out; 10.4% keeps its
        // decimal so it does not read as "10% (> 10%)".
        assert_eq!(
            a.workloads[0].warnings,
            ["small: high variance (rate CV > 10%): same-disk dir_create 25%; ramdisk file_create 10.4%, file_remove 50%"]
        );
        let high: Vec<(&str, &str, String)> = a.workloads[0]
            .high_variance
            .iter()
            .map(|h| (h.config.as_str(), h.phase.as_str(), format!("{:.4}", h.cv)))
            .collect();
        assert_eq!(
            high,
            [
                ("same-disk", "dir_create", "0.2500".to_string()),
                ("ramdisk", "file_create", "0.1040".to_string()),
                ("ramdisk", "file_remove", "0.5000".to_string())
            ]
        );
        let text = render(&recs, &opts(), Format::Table);
        assert_eq!(text.matches("high variance").count(), 1, "{text}");
    }

    #[test]
    fn all_suspect_workload_is_summed_up_once() {
        // Like a real run that was too small: every phase takes 6-12 s.
        let mut recs = Vec::new();
        let mut trial = 0;
        let mut push = |label: &str, rates: [[f64; 4]; 3]| {
            for (k, r) in rates.into_iter().enumerate() {
                recs.push(rec(trial, k as u32 + 1, label, "small", r));
                trial += 1;
            }
        };
        let scaled = |f: [f64; 3], g: [f64; 3]| -> [[f64; 4]; 3] {
            [0, 1, 2].map(|t| {
                [
                    100_000.0 * f[t],
                    50_000.0 * f[t],
                    100_000.0 * g[t],
                    100_000.0 * g[t],
                ]
            })
        };
        let base = [1.0, 1.01, 0.99];
        push("same-disk", scaled(base, base));
        push(
            "second-disk",
            scaled([1.005, 0.995, 1.0], [1.2, 1.19, 1.21]),
        );
        push("ramdisk", scaled([1.0, 1.005, 0.995], [1.0, 1.005, 0.995]));
        let a = analyse(&recs, &opts());
        assert_eq!(a.workloads[0].suspect_phases.len(), 12);
        assert_eq!(
            a.workloads[0].warnings,
            ["small: all 12 phase means are under the 60 s suspect threshold (longest: file_create on same-disk, 12.00 s); do not draw conclusions from them"]
        );
        // The model keeps the per-phase verdicts and their suffix (CSV and JSON).
        let c = comparison(&a, "small", "second-disk", "file_remove");
        assert_eq!(c.verdict, "20.0% faster (suspect: phase < 60 s)");
        let csv = render(&recs, &opts(), Format::Csv);
        assert!(
            csv.contains(",20.0% faster (suspect: phase < 60 s),"),
            "{csv}"
        );

        let json: serde_json::Value =
            serde_json::from_str(&render(&recs, &opts(), Format::Json)).unwrap();
        let first = &json["workloads"][0]["suspect_phases"][0];
        assert_eq!(
            (&first["config"], &first["phase"]),
            (&"same-disk".into(), &"dir_create".into())
        );
        assert!(
            (first["mean_seconds"].as_f64().unwrap() - 6.0).abs() < 0.01,
            "{first}"
        );
        assert_eq!(json["workloads"][0]["high_variance"], serde_json::json!([]));

        let text = render(&recs, &opts(), Format::Table);
        let verdicts: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Verdicts"))
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(
            verdicts,
            [
                "Verdicts (rate vs same-disk, significant when p < 0.05 after correction; adjusted with Holm over the 8 comparisons of this workload):",
                "  (all comparisons below involve suspect phases: mean phase time under 60 s)",
                "  second-disk: file_remove 20.0% faster (p<0.001), dir_remove 20.0% faster (p<0.001); no significant difference in dir_create, file_create",
                "  ramdisk: no significant difference in any phase",
            ],
            "{text}"
        );
        assert!(!text.contains("(suspect: phase"), "{text}");
        let warnings: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Warnings:"))
            .collect();
        assert_eq!(warnings.len(), 1 + 1 + 1, "title, one line, blank:\n{text}");

        let md = render(&recs, &opts(), Format::Markdown);
        assert!(md.contains(
            "Verdicts (rate vs `same-disk`, significant when p < 0.05 after correction; adjusted with Holm over the 8 comparisons of this workload):\n\nAll comparisons below involve suspect phases: mean phase time under 60 s.\n\n- `second-disk`: file_remove 20.0% faster (p<0.001), dir_remove 20.0% faster (p<0.001); no significant difference in dir_create, file_create\n- `ramdisk`: no significant difference in any phase\n"
        ), "{md}");
    }

    #[test]
    fn some_suspect_phases_are_grouped_by_phase() {
        let mut recs = Vec::new();
        // dir_create runs 6 s everywhere; file_remove 6 s on same-disk and ramdisk only.
        for (k, label) in ["same-disk", "second-disk", "ramdisk"].iter().enumerate() {
            let fr = if *label == "second-disk" {
                1000.0
            } else {
                100_000.0
            };
            for t in 0..2 {
                recs.push(rec(
                    2 * k + t,
                    t as u32 + 1,
                    label,
                    "small",
                    [100_000.0, 1000.0, fr, 1000.0],
                ));
            }
        }
        let a = analyse(&recs, &opts());
        assert_eq!(
            a.workloads[0].warnings,
            ["small: 5 of 12 phase means are under the 60 s suspect threshold: dir_create (all configurations), file_remove (same-disk, ramdisk); do not draw conclusions from them"]
        );
        // A configuration without measurements does not count: dir_create is then
        // suspect on the three that have one, named one by one.
        recs.push(failed(rec(6, 1, "zram", "small", [1.0; 4]), "zram busy"));
        let a = analyse(&recs, &opts());
        assert_eq!(
            a.workloads[0].warnings[1],
            "small: 5 of 12 phase means are under the 60 s suspect threshold: dir_create (same-disk, second-disk, ramdisk), file_remove (same-disk, ramdisk); do not draw conclusions from them"
        );

        // Singular forms.
        let one = vec![rec(
            0,
            1,
            "same-disk",
            "small",
            [20_000.0, 1000.0, 1000.0, 1000.0],
        )];
        let a = analyse(&one, &opts());
        assert_eq!(
            a.workloads[0].warnings[1],
            "small: 1 of 4 phase means is under the 60 s suspect threshold: dir_create (same-disk); do not draw conclusions from it"
        );
        let mut only = one.clone();
        only[0].phases.truncate(1);
        let a = analyse(&only, &opts());
        assert_eq!(
            a.workloads[0].warnings[1],
            "small: the only phase mean (dir_create on same-disk, 30.00 s) is under the 60 s suspect threshold; do not draw conclusions from it"
        );
    }

    fn phase_cmp(phase: &str, p: Option<f64>, verdict: &str, suspect: bool) -> PhaseComparison {
        PhaseComparison {
            phase: phase.to_string(),
            n_baseline: 3,
            n_other: 3,
            pct: None,
            ci_low_pct: None,
            ci_high_pct: None,
            p,
            mann_whitney_p: None,
            significant: verdict.contains("% "),
            within_noise_band: false,
            suspect,
            verdict: verdict.to_string(),
            p_adjusted: p,
            outcome: Outcome::NotComparable,
        }
    }

    #[test]
    fn mann_whitney_shows_with_four_trials_a_side_and_trial_counts_when_they_differ() {
        let mut recs = Vec::new();
        series(
            &mut recs,
            0,
            "same-disk",
            "w",
            &[1000.0, 1010.0, 990.0, 1005.0],
        );
        series(
            &mut recs,
            10,
            "ramdisk",
            "w",
            &[1200.0, 1190.0, 1210.0, 1195.0, 1205.0],
        );
        series(&mut recs, 20, "zram", "w", &[1200.0, 1190.0, 1210.0]);
        let a = analyse(&recs, &opts());
        let ram = comparison(&a, "w", "ramdisk", "dir_create");
        // Fully separated 4 vs 5: exact p = 2 / C(9, 4).
        assert!((ram.mann_whitney_p.unwrap() - 2.0 / 126.0).abs() < 1e-12);
        assert_eq!(
            comparison(&a, "w", "zram", "dir_create").mann_whitney_p,
            None
        );
        let text = render(&recs, &opts(), Format::Table);
        assert!(text.contains("p<0.001 (MW p=0.016)"), "{text}");
        assert!(
            text.contains("Trials per configuration: same-disk 4, ramdisk 5, zram 3\n"),
            "{text}"
        );
        let json = render(&recs, &opts(), Format::Json);
        assert!(json.contains("\"mann_whitney_p\""), "{json}");
    }

    #[test]
    fn verdict_line_groups_by_verdict() {
        let c = Comparison {
            config: "ramdisk".to_string(),
            baseline: "same-disk".to_string(),
            phases: vec![
                phase_cmp(
                    "a",
                    Some(0.01),
                    "12.3% slower (suspect: phase < 60 s)",
                    true,
                ),
                phase_cmp("b", None, "too few trials", false),
                phase_cmp("c", None, "not comparable (baseline rate is 0)", false),
                phase_cmp("d", None, "too few trials (suspect: phase < 60 s)", true),
                phase_cmp(
                    "e",
                    Some(0.5),
                    "no significant difference (p = 0.50)",
                    false,
                ),
            ],
        };
        assert_eq!(
            verdict_line(&c, 5, true),
            "a* 12.3% slower (p=0.010); too few trials in b, d*; not comparable in c (baseline rate is 0); no significant difference in e"
        );
        assert_eq!(
            verdict_line(&c, 5, false),
            "a 12.3% slower (p=0.010); too few trials in b, d; not comparable in c (baseline rate is 0); no significant difference in e"
        );
        let few = Comparison {
            phases: vec![
                phase_cmp("a", None, "too few trials", false),
                phase_cmp("b", None, "too few trials (suspect: phase < 60 s)", true),
            ],
            ..c
        };
        assert_eq!(verdict_line(&few, 2, false), "too few trials in all phases");
        // A marker is never dropped with the names.
        assert_eq!(verdict_line(&few, 2, true), "too few trials in a, b*");
    }

    #[test]
    fn explicit_and_unknown_baseline() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        series(&mut recs, 3, "ramdisk", "small", &FAST);
        let chosen = ReportOptions {
            baseline: Some("ramdisk".to_string()),
            ..opts()
        };
        let a = analyse(&recs, &chosen);
        assert_eq!(a.workloads[0].baseline.as_deref(), Some("ramdisk"));
        let c = comparison(&a, "small", "same-disk", "dir_create");
        assert!(c.verdict.starts_with("16.7% slower"), "{}", c.verdict);

        let unknown = ReportOptions {
            baseline: Some("nvram".to_string()),
            ..opts()
        };
        let a = analyse(&recs, &unknown);
        assert_eq!(a.baseline.as_deref(), Some("same-disk"));
        assert_eq!(
            a.warnings,
            ["baseline configuration `nvram` has no trials; comparing with `same-disk` instead"]
        );
    }

    #[test]
    fn durable_times_become_phases_of_their_own() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        for r in &mut recs {
            r.phases[1].durable_seconds = Some(r.phases[1].seconds * 2.0);
        }
        let a = analyse(&recs, &opts());
        let names: Vec<&str> = a.workloads[0]
            .phases
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names.last(), Some(&"file_create+syncfs"), "{names:?}");
        let c = find(&a, "small", "same-disk");
        let plain = c.phases.iter().find(|p| p.phase == "file_create").unwrap();
        let durable = c
            .phases
            .iter()
            .find(|p| p.phase == "file_create+syncfs")
            .unwrap();
        let ratio = durable.seconds.as_ref().unwrap().mean / plain.seconds.as_ref().unwrap().mean;
        assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn the_experiment_order_beats_trial_order() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "ramdisk", "small", &FAST);
        series(&mut recs, 3, "same-disk", "small", &BASE);
        series(&mut recs, 6, "ramdisk", "deep", &FAST);
        series(&mut recs, 9, "same-disk", "deep", &BASE);
        let by_trial = analyse(&recs, &opts());
        assert_eq!(by_trial.baseline.as_deref(), Some("ramdisk"));
        let ordered = ReportOptions {
            config_order: vec!["same-disk".into(), "second-disk".into(), "ramdisk".into()],
            workload_order: vec!["deep".into(), "small".into()],
            ..opts()
        };
        let a = analyse(&recs, &ordered);
        assert_eq!(
            a.baseline.as_deref(),
            Some("same-disk"),
            "first of the matrix"
        );
        let names: Vec<&str> = a.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["deep", "small"]);
        let labels: Vec<&str> = a.workloads[0]
            .configs
            .iter()
            .map(|c| c.label.as_str())
            .collect();
        assert_eq!(
            labels,
            ["same-disk", "ramdisk"],
            "labels without trials are skipped"
        );
        let c = comparison(&a, "small", "ramdisk", "dir_create");
        assert!(c.verdict.contains("faster"), "{}", c.verdict);
    }

    #[test]
    fn invalid_confidence_falls_back() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        let a = analyse(
            &recs,
            &ReportOptions {
                confidence: 95.0,
                ..opts()
            },
        );
        assert_eq!(a.confidence, 0.95);
        assert_eq!(a.warnings.len(), 1);
    }

    #[test]
    fn empty_input() {
        let a = analyse(&[], &opts());
        assert!(a.workloads.is_empty() && a.baseline.is_none());
        assert_eq!(a.warnings, ["no trial records: nothing to report"]);
        assert_eq!(render(&[], &opts(), Format::Csv).lines().count(), 1);
    }

    /// Minimal RFC 4180 reader for the tests (quoted fields, doubled quotes).
    fn csv_rows(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for line in text.lines() {
            let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
            let mut chars = line.chars().peekable();
            while let Some(ch) = chars.next() {
                match (ch, quoted) {
                    ('"', true) if chars.peek() == Some(&'"') => {
                        field.push('"');
                        chars.next();
                    }
                    ('"', _) => quoted = !quoted,
                    (',', false) => row.push(std::mem::take(&mut field)),
                    _ => field.push(ch),
                }
            }
            row.push(field);
            rows.push(row);
        }
        rows
    }

    #[test]
    fn csv_header_and_rows() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        series(&mut recs, 3, "second-disk,256M", "small", &FAST);
        let csv = render(&recs, &opts(), Format::Csv);
        let rows = csv_rows(&csv);
        assert_eq!(rows[0], CSV_HEADER);
        assert_eq!(rows.len(), 1 + 2 * 4);
        assert!(rows.iter().all(|r| r.len() == 22));
        assert!(csv.contains("\"second-disk,256M\""), "label quoted");

        let base = &rows[1];
        assert_eq!(&base[..5], ["small", "same-disk", "dir_create", "3", "0"]);
        assert_eq!(base[7], "dir creates/s");
        assert!((base[8].parse::<f64>().unwrap() - 1000.0).abs() < 1e-9);
        assert!((base[9].parse::<f64>().unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(base[10], "", "no KiB/s for dir_create");
        assert_eq!(base[12], "false");
        assert_eq!(base[13], "", "baseline has no difference to itself");
        assert_eq!(base[17], "baseline");
        let create = &rows[2];
        assert_eq!(create[2], "file_create");
        assert!((create[10].parse::<f64>().unwrap() - 4000.0).abs() < 1e-9);

        let other = &rows[5];
        assert_eq!(&other[1..3], ["second-disk,256M", "dir_create"]);
        let secs: f64 = other[5].parse().unwrap();
        assert!((secs - (500.0 + 600000.0 / 1190.0 + 600000.0 / 1210.0) / 3.0).abs() < 1e-9);
        assert_eq!(other[12], "false");
        assert!((other[13].parse::<f64>().unwrap() - 20.0).abs() < 1e-9);
        assert!((other[14].parse::<f64>().unwrap() - 17.73304206447248).abs() < 1e-6);
        assert!((other[15].parse::<f64>().unwrap() - 22.26695793552752).abs() < 1e-6);
        assert!((other[16].parse::<f64>().unwrap() - 1.6483088987181242e-05).abs() < 1e-9);
        assert_eq!(other[17], "20.0% faster");
    }

    #[test]
    fn csv_quotes_fields() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn markdown_has_the_tables() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        series(&mut recs, 3, "ramdisk|64M", "small", &FAST);
        let md = render(&recs, &opts(), Format::Markdown);
        assert!(md.starts_with("# jbench report\n"), "{md}");
        assert!(md.contains("## Workload `small` (fdtree)"), "{md}");
        for heading in [
            "### Times (s), mean ± sd",
            "### Rates, mean ± sd",
            "### Compared with same-disk: rate difference of means [95% CI], Welch p",
        ] {
            assert!(md.contains(heading), "missing {heading}:\n{md}");
        }
        assert!(md.contains(
            "| configuration | n | dir_create | file_create | file_remove | dir_remove |\n| --- | ---: | ---: | ---: | ---: | ---: |"
        ), "{md}");
        assert!(md.contains(
            "| configuration | n | dir creates/s | file creates/s | file_create KiB/s | file removals/s | dir removals/s |"
        ), "{md}");
        assert!(
            md.contains("| same-disk | 3 | 600.0 ± 6.0 | 600.0 ± 0.0 |"),
            "{md}"
        );
        // The pipe in the label is escaped.
        assert!(md.contains("| ramdisk\\|64M | 3 | 500.0 ± 4.2 |"), "{md}");
        assert!(
            md.contains("| ramdisk\\|64M | 3 | 1200 ± 10 | 1000 ± 0 | 4000 ± 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| ramdisk\\|64M | +20.0% [+17.7, +22.3] p<0.001 |"),
            "{md}"
        );
        assert!(md.contains(
            "Verdicts (rate vs `same-disk`, significant when p < 0.05 after correction; adjusted with Holm over the 4 comparisons of this workload):\n\n- `ramdisk|64M`: dir_create 20.0% faster (p<0.001); no significant difference in file_create, file_remove, dir_remove\n"
        ), "{md}");
        assert!(
            !md.contains("### Warnings"),
            "no warnings for clean data:\n{md}"
        );
    }

    #[test]
    fn plain_table_columns_line_up_with_long_labels() {
        let mut recs = Vec::new();
        let labels = [
            "same-disk,16M",
            "second-disk,256M",
            "ramdisk,1G",
            "zram,64M",
        ];
        for (k, label) in labels.iter().enumerate() {
            let rates: Vec<f64> = BASE.iter().map(|r| r * (1.0 + k as f64 / 10.0)).collect();
            series(&mut recs, 3 * k, label, "small", &rates);
        }
        let text = render(&recs, &opts(), Format::Table);
        for title in ["Times (s)", "Rates", "Compared with"] {
            let block: Vec<&str> = text
                .lines()
                .skip_while(|l| !l.starts_with(title))
                .skip(1)
                .take_while(|l| !l.is_empty() && !l.starts_with('*'))
                .collect();
            let rows = if title == "Compared with" { 3 } else { 4 };
            assert_eq!(block.len(), 2 + rows, "{title}:\n{text}");
            let w = block[0].chars().count();
            assert!(
                block.iter().all(|l| l.chars().count() == w),
                "{title} not aligned:\n{}",
                block.join("\n")
            );
            // The label column is as wide as the longest label, then two spaces.
            let label_w = "second-disk,256M".len();
            for l in &block {
                let chars: Vec<char> = l.chars().collect();
                assert_eq!(chars[label_w..label_w + 2], [' ', ' '], "{title}: `{l}`");
            }
            assert!(block[1].starts_with(&"-".repeat(label_w)));
            if title == "Times (s)" {
                // Means and spreads line up on the "±".
                let at: Vec<Option<usize>> = block[2..]
                    .iter()
                    .map(|l| l.chars().position(|c| c == '±'))
                    .collect();
                assert!(at.iter().all(|p| p.is_some() && *p == at[0]), "{at:?}");
            }
        }
        assert!(text.contains("second-disk,256M"));
    }

    #[test]
    fn json_round_trips() {
        let mut recs = Vec::new();
        series(&mut recs, 0, "same-disk", "small", &BASE);
        series(&mut recs, 3, "ramdisk", "small", &FAST);
        let json = render(&recs, &opts(), Format::Json);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["baseline"], "same-disk");
        assert_eq!(v["confidence"], 0.95);
        assert_eq!(v["suspect_below_secs"], 60.0);
        let w = &v["workloads"][0];
        assert_eq!(w["name"], "small");
        assert_eq!(w["kind"], "fdtree");
        assert_eq!(w["phases"][1]["rate_unit"], "file creates/s");
        assert_eq!(w["phases"][1]["has_bytes"], true);
        assert_eq!(w["configs"][0]["label"], "same-disk");
        assert_eq!(w["configs"][0]["config"]["placement"], "same-disk");
        assert_eq!(w["configs"][0]["phases"][0]["n"], 3);
        assert_eq!(w["configs"][0]["phases"][0]["rate"]["mean"], 1000.0);
        assert_eq!(
            w["configs"][0]["phases"][0]["kib_per_sec"],
            serde_json::Value::Null
        );
        assert_eq!(w["comparisons"][0]["config"], "ramdisk");
        assert_eq!(w["comparisons"][0]["phases"][0]["verdict"], "20.0% faster");
        // And back into the model. (serde_json's default float parser may differ from
        // the printed value in the last bit, so compare texts and a float with a
        // tolerance rather than the whole struct.)
        let back: Analysis = serde_json::from_str(&json).unwrap();
        let orig = analyse(&recs, &opts());
        assert_eq!(back.workloads[0].comparisons, orig.workloads[0].comparisons);
        assert_eq!(back.workloads[0].configs[1].label, "ramdisk");
        let mean = |a: &Analysis| a.workloads[0].configs[1].phases[0].rate.unwrap().mean;
        assert!((mean(&back) - mean(&orig)).abs() < 1e-9);
    }

    #[test]
    fn formatting_helpers() {
        assert_eq!(p_expr(0.4123, true), "p = 0.41");
        assert_eq!(p_expr(0.0021, false), "p=0.002");
        assert_eq!(p_expr(1e-9, false), "p<0.001");
        assert_eq!(fmt_level(0.95), "95");
        assert_eq!(fmt_level(0.995), "99.5");
        assert_eq!(fmt_num(12345.6), "12346");
        assert_eq!(fmt_num(61.234), "61.23");
        assert_eq!(fmt_num(0.1234), "0.123");
        assert_eq!(verdict_text(0.04, 0.01, true), "0.04% faster");
        assert_eq!(fmt_cv(0.2549), "25%");
        assert_eq!(fmt_cv(0.104), "10.4%");
        assert_eq!(fmt_cv(0.1051), "11%");
        assert_eq!(fmt_alpha(1.0 - 0.95), "0.05");
        assert_eq!(fmt_alpha(1.0 - 0.995), "0.005");
    }
}
