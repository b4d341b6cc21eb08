//! The HTML page's assembly: the views the minijinja template
//! (`templates/report.html`) lays out, built from the [`Analysis`], `env.json` and the
//! monitor samples; which charts each workload, phase and trial gets.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::bars::{bar_chart, interval_table, Bar};
use super::charts::{
    ci_half_width, line_chart, recovery_chart, timeline_chart, Line, Point, Series,
};
use super::latency::{latency_chart, phase_curves, LatencyKind};
use crate::analysis::CrashAnalysis;
use crate::monitor::series::{parse_series, CpuPct, SeriesPoint};
use crate::report::crash::CrashWorkload;
use crate::report::{self, Analysis, ConfigAnalysis, ReportOptions, WorkloadAnalysis};
use crate::results::crash::CrashRecord;
use crate::results::record::TrialRecord;
use crate::results::Results;

const TEMPLATE: &str = include_str!("../../../templates/report.html");

/// A configuration's recorded factors (its `ConfigRecord` as a JSON object).
type Factors = serde_json::Map<String, serde_json::Value>;

/// What the page is made of.
pub struct Page<'a> {
    pub records: &'a [TrialRecord],
    /// `env.json`, when there is one.
    pub env: Option<&'a serde_json::Value>,
    /// Experiment name.
    pub title: &'a str,
    pub opts: &'a ReportOptions,
    /// Results directory, to read `monitor/trial-<N>.jsonl`; `None`: no timelines.
    pub results_dir: Option<&'a Path>,
    /// Warnings shown before the analysis's own (e.g. `jbench compare`'s mismatches).
    pub extra_warnings: &'a [String],
    /// The crash lab's states (`crash.jsonl`); empty: no crash section.
    pub crash: &'a [CrashRecord],
}

/// Renders the page without timelines' monitor data (see [`render_page`]).
pub fn render(
    records: &[TrialRecord],
    env: Option<&serde_json::Value>,
    title: &str,
    opts: &ReportOptions,
) -> Result<String> {
    render_page(&Page {
        records,
        env,
        title,
        opts,
        results_dir: None,
        extra_warnings: &[],
        crash: &[],
    })
}

/// Renders the report of a results directory as [`crate::results::open`] read it
/// (records, `env.json`, `crash.jsonl`; the monitor samples are read from its
/// directory as each trial's timeline is drawn), titled with its experiment's name.
/// `opts` are the caller's ([`ReportOptions::of_results`] for the directory's own).
pub fn render_results(results: &Results, opts: &ReportOptions) -> Result<String> {
    render_page(&Page {
        records: &results.records,
        env: results.env.as_ref(),
        title: &results.spec.name,
        opts,
        results_dir: Some(&results.dir),
        extra_warnings: &[],
        crash: &results.crash,
    })
}

pub fn render_page(page: &Page) -> Result<String> {
    let analysis = report::analyse(page.records, page.opts).with_crash(page.crash);
    let n_failed = page.records.iter().filter(|r| !r.is_ok()).count();
    let n_stalled = page.records.iter().filter(|r| r.is_stalled()).count();
    let workloads = analysis
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| workload_view(i, w, &analysis, page.records))
        .collect::<Result<Vec<_>>>()?;
    let trials = trial_views(page.records, page.results_dir)?;
    let date = env_str(page.env, "recorded_at")
        .or_else(|| {
            page.records
                .iter()
                .min_by_key(|r| r.trial)
                .map(|r| r.started_at.clone())
        })
        .unwrap_or_else(|| "unknown".to_string());
    let ctx = PageView {
        version: env!("CARGO_PKG_VERSION"),
        title: page.title.to_string(),
        date,
        generated_at: chrono::Local::now().to_rfc3339(),
        machine: machine_rows(page.env),
        environment: page
            .env
            .and_then(|e| serde_json::from_value(e.clone()).ok())
            .map(|e| report::environment::html_rows(&e))
            .unwrap_or_default(),
        n_trials: page.records.len(),
        n_failed,
        n_stalled,
        warnings: page
            .extra_warnings
            .iter()
            .cloned()
            .chain(report::crash::all_crash_warnings(&analysis))
            .chain(analysis.all_warnings())
            .collect(),
        verified: verified_views(page.records, &analysis),
        workloads,
        trials,
        crash: report::crash::crash_workloads(&analysis.crash),
        glance: report::glance::glances(&analysis),
        answer: report::answer::answer_views(&analysis),
        levels_note: report::summary::levels_note(&analysis),
        answer_title: report::answer::answer_title(&analysis),
        answer_charts: super::answer_chart::answer_charts(&analysis)
            .context("answer chart")?
            .into_iter()
            .map(|(svg, caption)| ChartView::new("answer", svg, caption))
            .collect(),
        tradeoff_charts: super::tradeoff::tradeoff_charts(&analysis, page.crash)
            .context("trade-off chart")?
            .into_iter()
            .map(|(svg, caption)| ChartView::new("tradeoff", svg, caption))
            .collect(),
        crash_chart: crash_chart(&analysis.crash)?,
        min_timeline_samples: MIN_TIMELINE_SAMPLES,
    };
    let mut env = minijinja::Environment::new();
    env.add_template("report.html", TEMPLATE)?;
    let html = env
        .get_template("report.html")?
        .render(minijinja::value::Serde(&ctx))?;
    Ok(html)
}

// ---------------------------------------------------------------------------------
// Page model
// ---------------------------------------------------------------------------------

#[derive(Serialize)]
struct PageView {
    version: &'static str,
    title: String,
    date: String,
    generated_at: String,
    machine: Vec<(String, String)>,
    /// What decides journaling figures (env.json): writeback, governor, disks.
    environment: Vec<(String, String)>,
    n_trials: usize,
    n_failed: usize,
    /// Of those, failed because the device daemon stalled.
    n_stalled: usize,
    warnings: Vec<String>,
    verified: Vec<VerifiedView>,
    workloads: Vec<WorkloadView>,
    trials: Vec<TrialView>,
    /// The crash section per workload; empty without crash records (no section).
    crash: Vec<CrashWorkload>,
    /// The answer at a glance per workload (the takeaway and short lines), what the
    /// page opens with; empty without crash records.
    glance: Vec<report::glance::Glance>,
    /// Speed, safety and recovery per workload, every figure's basis; empty without
    /// crash records.
    answer: Vec<report::answer::AnswerView>,
    /// Why the levels beside the intervals differ, and the rule of the three words:
    /// said once, under the answer or the summary.
    levels_note: Option<String>,
    /// The answer's heading: with "speed" only when a workload has a ranking.
    answer_title: &'static str,
    /// Per workload of `answer`, its figure: per configuration speed, crash states
    /// passed and failed, and recovery, side by side; opens the answer section.
    answer_charts: Vec<ChartView>,
    /// Per workload, throughput and recovery time against journal size and recovery
    /// time against the amount replayed, on one figure; empty unless the run has crash
    /// states at two journal sizes or more.
    tradeoff_charts: Vec<ChartView>,
    /// Recovery time against journal size; `None` when no state was timed.
    crash_chart: Option<ChartView>,
    min_timeline_samples: usize,
}

#[derive(Serialize)]
struct VerifiedView {
    config: String,
    checks: Vec<String>,
    /// Successful trials without a verification record.
    unverified: usize,
}

#[derive(Serialize)]
struct WorkloadView {
    anchor: String,
    name: String,
    kind: String,
    params: String,
    phases: Vec<PhaseView>,
    tables: Vec<report::Table>,
    verdicts: Option<String>,
    suspect_note: Option<String>,
    warnings: Vec<String>,
    /// The summary's heading line, then its other lines (`report::summary`).
    summary_head: Option<String>,
    summary: Vec<String>,
    /// Per line of `summary`, the badges it is marked with ("suspect", "path-bound").
    summary_marks: Vec<Vec<&'static str>>,
}

#[derive(Serialize)]
struct PhaseView {
    name: String,
    charts: Vec<ChartView>,
    /// The bars' figures: mean and the 95% interval each error bar spans.
    intervals: report::Table,
}

#[derive(Serialize)]
struct ChartView {
    /// `bar`, `latency`, `journal-size`, `timeline-write`, `timeline-cpu`,
    /// `crash-recovery`, `answer` or `tradeoff`.
    kind: &'static str,
    /// The SVG element, marked safe (the template does not escape it).
    svg: minijinja::Value,
    caption: String,
}

impl ChartView {
    fn new(kind: &'static str, svg: String, caption: String) -> Self {
        Self {
            kind,
            svg: minijinja::Value::from_safe_string(svg),
            caption,
        }
    }
}

#[derive(Serialize)]
struct TrialView {
    trial: usize,
    rep: u32,
    /// A crash recording: its write-logged time is no speed figure.
    recording: bool,
    config: String,
    workload: String,
    failed: bool,
    /// Failed because the device daemon stalled (docs/devices.md, "Stalls").
    stalled: bool,
    error: Option<String>,
    wall: String,
    charts: Vec<ChartView>,
    note: String,
    open: bool,
}

fn env_str(env: Option<&serde_json::Value>, key: &str) -> Option<String> {
    match env?.get(key)? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn machine_rows(env: Option<&serde_json::Value>) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut push = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            rows.push((name.to_string(), v));
        }
    };
    push("Host", env_str(env, "hostname"));
    push("Kernel", env_str(env, "kernel"));
    let cpu = env_str(env, "cpu_model").map(|m| match env_str(env, "cores") {
        Some(c) => format!("{m} ({c} cores)"),
        None => m,
    });
    push("CPU", cpu);
    let mem = env
        .and_then(|e| e.get("memory_bytes"))
        .and_then(|m| m.as_u64())
        .filter(|m| *m > 0)
        .map(|m| format!("{:.1} GiB", m as f64 / (1u64 << 30) as f64));
    push("Memory", mem);
    push("e2fsprogs", env_str(env, "e2fsprogs"));
    push("xfsprogs", env_str(env, "xfsprogs"));
    push("jbench", env_str(env, "jbench_version"));
    rows
}

/// The distinct `verified.checks` of each configuration, in configuration order.
fn verified_views(records: &[TrialRecord], a: &Analysis) -> Vec<VerifiedView> {
    let mut labels: Vec<String> = Vec::new();
    for w in &a.workloads {
        for c in &w.configs {
            if !labels.contains(&c.label) {
                labels.push(c.label.clone());
            }
        }
    }
    labels
        .into_iter()
        .map(|label| {
            let mut seen = BTreeSet::new();
            let mut checks = Vec::new();
            let mut unverified = 0;
            let mut sorted: Vec<&TrialRecord> =
                records.iter().filter(|r| r.config.label == label).collect();
            sorted.sort_by_key(|r| r.trial);
            for r in sorted {
                match &r.verified {
                    Some(v) => {
                        for c in &v.checks {
                            if seen.insert(c.clone()) {
                                checks.push(c.clone());
                            }
                        }
                    }
                    None if r.is_ok() => unverified += 1,
                    None => {}
                }
            }
            VerifiedView {
                config: label,
                checks,
                unverified,
            }
        })
        .collect()
}

fn workload_view(
    i: usize,
    w: &WorkloadAnalysis,
    a: &Analysis,
    records: &[TrialRecord],
) -> Result<WorkloadView> {
    let mut phases = Vec::new();
    let config_order: Vec<String> = w.configs.iter().map(|c| c.label.clone()).collect();
    for (pi, p) in w.phases.iter().enumerate() {
        let mut charts = Vec::new();
        let bars: Vec<Bar> = w
            .configs
            .iter()
            .map(|c| {
                let s = &c.phases[pi];
                Bar {
                    label: c.label.clone(),
                    summary: s.rate,
                    trials: s.trial_rates.clone(),
                    suspect: s.suspect,
                    baseline: w.baseline.as_deref() == Some(c.label.as_str()),
                }
            })
            .collect();
        let title = format!("{}: {} — mean rate per configuration", w.name, p.name);
        let svg = bar_chart(&title, &p.rate_unit, &bars, a.suspect_below_secs)
            .with_context(|| format!("bar chart of {} {}", w.name, p.name))?;
        charts.push(ChartView::new(
            "bar",
            svg,
            format!(
                "Bars: mean {} per configuration (n = number of successful trials); dots: the trials, one each; error bars: 95% confidence interval of the mean (none with one trial), the figures of the table below; hatched: suspect, mean phase time under {} s.",
                p.rate_unit, a.suspect_below_secs
            ),
        ));
        for kind in LatencyKind::ALL {
            let curves = phase_curves(records, &w.name, &p.name, &config_order, kind);
            if curves.is_empty() {
                continue;
            }
            let title = format!("{}: {} — {} per trial", w.name, p.name, kind.title(&w.kind));
            let svg = latency_chart(&title, &curves)
                .with_context(|| format!("latency chart of {} {}", w.name, p.name))?;
            let caption = latency_caption(&w.kind, &p.name, kind);
            charts.push(ChartView::new("latency", svg, caption));
        }
        let lines = journal_size_lines(&w.configs, pi);
        if !lines.is_empty() {
            let title = format!("{}: {} — rate against journal size", w.name, p.name);
            let svg = line_chart(&title, &p.rate_unit, &lines)
                .with_context(|| format!("journal size chart of {} {}", w.name, p.name))?;
            charts.push(ChartView::new(
                "journal-size",
                svg,
                format!(
                    "Mean {} against journal size (log scale), one line per combination of the other factors; error bars: 95% confidence interval of the mean (none with one trial).",
                    p.rate_unit
                ),
            ));
        }
        phases.push(PhaseView {
            name: p.name.clone(),
            charts,
            intervals: interval_table(&p.rate_unit, &bars),
        });
    }
    let marked = w.configs.iter().flat_map(|c| &c.phases).any(|p| p.suspect);
    let mut summary = report::summary::summary_lines(w, a);
    let summary_head = (!summary.is_empty()).then(|| summary.remove(0));
    Ok(WorkloadView {
        summary_head,
        summary,
        summary_marks: report::summary::summary_marks(w, a),
        anchor: format!("workload-{i}"),
        name: w.name.clone(),
        kind: w.kind.clone(),
        params: w.params.to_string(),
        phases,
        tables: report::workload_tables(w, a),
        verdicts: report::workload_verdicts(w, a),
        suspect_note: marked.then(|| {
            format!(
                "suspect: mean phase time under {} s, too short to draw conclusions from",
                a.suspect_below_secs
            )
        }),
        warnings: w.warnings.clone(),
    })
}

/// What a latency chart of an engine's phase shows.
pub(super) fn latency_caption(kind: &str, phase: &str, which: LatencyKind) -> String {
    let what = match which {
        LatencyKind::FioSync => {
            "fio's sync latency (each fsync or fdatasync call, which clat and lat leave out)"
        }
        LatencyKind::FioTotal => {
            "fio's total latency (lat: submission plus completion, without the sync calls)"
        }
        LatencyKind::Recorded => (crate::workload::kind::kind_of(kind).latency.what)(phase),
    };
    format!(
        "Latency percentiles (p50, p95, p99 and the maximum, log scale) of {what}, one line per successful trial, one colour per configuration; percentiles come from each trial's histogram and are not averaged across trials."
    )
}

/// Groups configurations by every recorded factor except the label, the journal size
/// and the RAM-disk size (which follows it); groups holding two or more journal sizes
/// become lines, named by the factors that tell them apart.
fn journal_size_lines(configs: &[ConfigAnalysis], phase: usize) -> Vec<Line> {
    let mut groups: Vec<(Factors, Vec<Point>)> = Vec::new();
    for c in configs {
        let Some(rate) = c.phases[phase].rate else {
            continue;
        };
        let mut key = match serde_json::to_value(&c.config) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => continue,
        };
        for k in ["label", "journal_size", "ramdisk_size"] {
            key.remove(k);
        }
        // One trial: no error bar (no interval draws none), not a zero-width one.
        let point = (c.config.journal_size, rate.mean, ci_half_width(&rate));
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    groups.retain(|(_, pts)| {
        pts.iter()
            .map(|p| p.0)
            .filter(|s| *s > 0)
            .collect::<BTreeSet<_>>()
            .len()
            >= 2
    });
    if groups.is_empty() {
        return Vec::new();
    }
    // Factors whose values differ between the lines name them.
    let keys: BTreeSet<&String> = groups.iter().flat_map(|g| g.0.keys()).collect();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let vals: BTreeSet<String> = groups
                .iter()
                .map(|g| g.0.get(*k).map(|v| v.to_string()).unwrap_or_default())
                .collect();
            vals.len() > 1
        })
        .collect();
    let value_text = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => "none".to_string(),
        Some(other) => other.to_string(),
    };
    groups
        .iter()
        .map(|(key, pts)| {
            let name = match differing.as_slice() {
                [] => value_text(key.get("placement")),
                [one] => value_text(key.get(*one)),
                many => many
                    .iter()
                    .map(|k| format!("{k}={}", value_text(key.get(*k))))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let mut points: Vec<(u64, f64, f64)> =
                pts.iter().copied().filter(|p| p.0 > 0).collect();
            points.sort_by_key(|p| p.0);
            Line { name, points }
        })
        .collect()
}

/// The crash section's chart: recovery time against journal size, one line per
/// placement; `None` when no state was timed, or when the run has one journal size
/// (an axis with one value says nothing).
fn crash_chart(crash: &[CrashAnalysis]) -> Result<Option<ChartView>> {
    let lines = recovery_lines(crash);
    let sizes: std::collections::BTreeSet<u64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    if sizes.len() < 2 {
        return Ok(None);
    }
    let svg = recovery_chart(
        "Crash recovery against journal size",
        "recovery seconds",
        &lines,
    )
    .context("crash recovery chart")?;
    Ok(Some(ChartView::new(
        "crash-recovery",
        svg,
        concat!(
            "Recovery (the mount that replays the journal) after a crash, with model ",
            "timing on, against journal size (log scale), one line per placement: the ",
            "worst timed state; whiskers reach the figure to plan on (the upper end of the ",
            "95% prediction at the fullest journal the workload left). Without a ",
            "live-journal count (XFS): the median, whiskers to the 95th percentile."
        )
        .to_string(),
    )))
}

/// One line per placement (and per file system, mode or workload, when those differ
/// too: a line never joins unlike configurations), points (journal bytes, median,
/// p95) of the configurations with a timed mount and a known journal size.
fn recovery_lines(crash: &[CrashAnalysis]) -> Vec<Line> {
    type Key = [String; 4];
    let mut groups: Vec<(Key, Vec<Point>)> = Vec::new();
    for c in crash {
        let Some(m) = c.recovery.as_ref().and_then(|r| r.mount) else {
            continue;
        };
        if c.journal_size == 0 {
            continue;
        }
        let key = [
            c.placement.clone(),
            c.filesystem.clone(),
            c.mode.clone(),
            c.workload.clone(),
        ];
        let point = match &c.recovery_model {
            Some(r) => (c.journal_size, r.worst_s, r.plan_s()),
            None => (c.journal_size, m.median, m.p95),
        };
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    let differs = |i: usize| groups.iter().any(|g| g.0[i] != groups[0].0[i]);
    let named: Vec<(usize, &str)> = [(1, "filesystem"), (2, "mode"), (3, "workload")]
        .into_iter()
        .filter(|(i, _)| differs(*i))
        .collect();
    groups
        .iter()
        .map(|(key, pts)| {
            let mut name = key[0].clone();
            for (i, factor) in &named {
                name.push_str(&format!(", {factor}={}", key[*i]));
            }
            let mut points = pts.clone();
            points.sort_by_key(|p| p.0);
            Line { name, points }
        })
        .collect()
}

fn trial_views(records: &[TrialRecord], dir: Option<&Path>) -> Result<Vec<TrialView>> {
    let mut sorted: Vec<&TrialRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.trial);
    let mut opened = false;
    let mut out = Vec::new();
    for r in sorted {
        let (charts, note) = match dir {
            Some(d) => {
                let path = crate::results::layout::monitor_file(d, r.trial);
                match std::fs::read_to_string(&path) {
                    Ok(text) => {
                        let (samples, bad) = parse_series(&text);
                        let charts = timeline_charts(r, &samples)?;
                        let note = if bad > 0 {
                            format!("{bad} unreadable line(s) in {} ignored", path.display())
                        } else if !samples.is_empty() && charts.is_empty() {
                            too_short_note(samples.len())
                        } else if charts.is_empty() {
                            "no monitor data (empty monitor file)".to_string()
                        } else {
                            String::new()
                        };
                        (charts, note)
                    }
                    Err(_) => (Vec::new(), "no monitor data".to_string()),
                }
            }
            None => (Vec::new(), "no monitor data".to_string()),
        };
        let open = !opened && !charts.is_empty();
        opened |= open;
        out.push(TrialView {
            trial: r.trial,
            rep: r.rep,
            recording: r.crash_recording,
            config: r.config.label.clone(),
            workload: r.workload.name.clone(),
            failed: !r.is_ok(),
            stalled: r.is_stalled(),
            error: r.error.clone(),
            wall: format!("{:.1} s", r.wall_seconds),
            charts,
            note,
            open,
        });
    }
    Ok(out)
}

/// Fewest samples a timeline series is drawn with: a trial of a sampling interval or
/// two gives a point or a stub of a line, which reads as a measurement of change over
/// time it is not. Documented in docs/report.md.
pub const MIN_TIMELINE_SAMPLES: usize = 5;

/// Why a trial with `n` samples has no timeline.
pub(crate) fn too_short_note(n: usize) -> String {
    format!(
        "trial shorter than {MIN_TIMELINE_SAMPLES} sampling intervals ({n} sample(s)): no timeline"
    )
}

/// `series` without those too short to draw.
fn long_enough(series: Vec<Series>) -> Vec<Series> {
    series
        .into_iter()
        .filter(|s| s.points.len() >= MIN_TIMELINE_SAMPLES)
        .collect()
}

fn timeline_charts(r: &TrialRecord, samples: &[SeriesPoint]) -> Result<Vec<ChartView>> {
    if samples.len() < MIN_TIMELINE_SAMPLES {
        return Ok(Vec::new());
    }
    let mut charts = Vec::new();
    let mut roles: Vec<&String> = samples
        .iter()
        .flat_map(|s| s.devices.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // The file-system device first, the journal's beside it, then anything else.
    roles.sort_by_key(|r| match r.as_str() {
        "fs" => 0,
        "journal" => 1,
        "second" => 2,
        _ => 3,
    });
    let phases = phase_starts(samples);
    if !roles.is_empty() {
        let peak = samples
            .iter()
            .flat_map(|s| s.devices.values().map(|d| d.write_kib_s))
            .fold(0.0, f64::max);
        let (unit, div) = if peak >= 10.0 * 1024.0 {
            ("MiB/s", 1024.0)
        } else {
            ("KiB/s", 1.0)
        };
        let series: Vec<Series> = long_enough(
            roles
                .iter()
                .map(|role| Series {
                    name: match role.as_str() {
                        "fs" => "file-system device".to_string(),
                        "journal" => "journal device".to_string(),
                        "second" => "second file system's device".to_string(),
                        other => other.to_string(),
                    },
                    points: samples
                        .iter()
                        .filter_map(|s| s.devices.get(*role).map(|d| (s.t, d.write_kib_s / div)))
                        .collect(),
                })
                .collect(),
        );
        let title = format!(
            "trial {}: {} — device write throughput",
            r.trial, r.config.label
        );
        if !series.is_empty() {
            let svg = timeline_chart(
                &title,
                &format!("write {unit}"),
                &series,
                &phases,
                240,
                None,
            )?;
            charts.push(ChartView::new(
                "timeline-write",
                svg,
                "Write throughput per device, one sample per interval; vertical lines: phase starts."
                    .to_string(),
            ));
        }
    }
    if samples.iter().filter(|s| s.cpu.is_some()).count() >= MIN_TIMELINE_SAMPLES {
        let pick = |f: fn(&CpuPct) -> f64| -> Vec<(f64, f64)> {
            samples
                .iter()
                .filter_map(|s| s.cpu.as_ref().map(|c| (s.t, f(c))))
                .collect()
        };
        let series = long_enough(vec![
            Series {
                name: "user".to_string(),
                points: pick(|c| c.user),
            },
            Series {
                name: "system".to_string(),
                points: pick(|c| c.system),
            },
            Series {
                name: "iowait".to_string(),
                points: pick(|c| c.iowait),
            },
        ]);
        let title = format!("trial {}: {} — CPU", r.trial, r.config.label);
        let svg = timeline_chart(&title, "CPU %", &series, &phases, 190, Some(100.0))?;
        charts.push(ChartView::new(
            "timeline-cpu",
            svg,
            "CPU time by kind, percent of all cores.".to_string(),
        ));
    }
    Ok(charts)
}

/// (time, phase) at each change of phase.
fn phase_starts(samples: &[SeriesPoint]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for s in samples {
        if s.phase.is_empty() {
            continue;
        }
        if out.last().map(|l| &l.1) != Some(&s.phase) {
            out.push((s.t, s.phase.clone()));
        }
    }
    out
}
