//! The self-contained HTML report: one file with inline CSS and inline SVG charts
//! (drawn with plotters' SVG backend), laid out by a minijinja template
//! (`templates/report.html`). It references nothing outside itself, so it opens from
//! `file://` and can be mailed or archived as is.
//!
//! Content: the experiment and machine (`env.json`), what was verified, the warnings
//! of [`report::Analysis`], per workload and phase a bar chart of the mean rate per
//! configuration with ± 1 sd error bars and, when the journal size varies, a line
//! chart of rate against journal size; the text report's tables; per trial a
//! timeline of device write throughput and CPU from `monitor/trial-<N>.jsonl`.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Serialize;

use crate::report::{self, Analysis, ConfigAnalysis, ReportOptions, WorkloadAnalysis};
use crate::results::layout;
use crate::results::monitor_series::{parse_series, CpuPct, SeriesPoint};
use crate::results::record::TrialRecord;

const TEMPLATE: &str = include_str!("../../templates/report.html");

/// Directory of the per-trial monitor samples inside a results directory.

/// Width of every chart, pixels.
const WIDTH: u32 = 760;
const FONT: &str = "sans-serif";
const LABEL_PX: u32 = 13;

/// Data colours (Okabe-Ito, readable by colour-blind readers). Axes are black and the
/// background white, so these mark data only.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 40),
];
const BAR: RGBColor = PALETTE[0];
const SUSPECT_BAR: RGBColor = RGBColor(170, 170, 170);
const ERROR_BAR: RGBColor = RGBColor(40, 40, 40);

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
    })
}

/// Renders the report of the results directory `dir` (records, `env.json`,
/// monitor samples).
pub fn render_dir(dir: &Path, title: &str, opts: &ReportOptions) -> Result<String> {
    let records = crate::results::store::load_records(dir)?;
    let env = std::fs::read_to_string(dir.join(layout::ENV))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    render_page(&Page {
        records: &records,
        env: env.as_ref(),
        title,
        opts,
        results_dir: Some(dir),
        extra_warnings: &[],
    })
}

pub fn render_page(page: &Page) -> Result<String> {
    let analysis = report::analyse(page.records, page.opts);
    let n_failed = page.records.iter().filter(|r| !r.is_ok()).count();
    let workloads = analysis
        .workloads
        .iter()
        .enumerate()
        .map(|(i, w)| workload_view(i, w, &analysis))
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
        n_trials: page.records.len(),
        n_failed,
        warnings: page
            .extra_warnings
            .iter()
            .cloned()
            .chain(analysis.all_warnings())
            .collect(),
        verified: verified_views(page.records, &analysis),
        workloads,
        trials,
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
    n_trials: usize,
    n_failed: usize,
    warnings: Vec<String>,
    verified: Vec<VerifiedView>,
    workloads: Vec<WorkloadView>,
    trials: Vec<TrialView>,
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
}

#[derive(Serialize)]
struct PhaseView {
    name: String,
    charts: Vec<ChartView>,
}

#[derive(Serialize)]
struct ChartView {
    /// `bar`, `journal-size`, `timeline-write` or `timeline-cpu`.
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
    config: String,
    workload: String,
    failed: bool,
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

fn workload_view(i: usize, w: &WorkloadAnalysis, a: &Analysis) -> Result<WorkloadView> {
    let mut phases = Vec::new();
    for (pi, p) in w.phases.iter().enumerate() {
        let mut charts = Vec::new();
        let bars: Vec<Bar> = w
            .configs
            .iter()
            .map(|c| {
                let s = &c.phases[pi];
                Bar {
                    label: c.label.clone(),
                    value: s.rate.map(|r| (r.mean, r.sd.unwrap_or(0.0), r.n)),
                    suspect: s.suspect,
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
                "Mean {} per configuration; error bars: ± 1 standard deviation over the successful trials (n = number of trials).",
                p.rate_unit
            ),
        ));
        let lines = journal_size_lines(&w.configs, pi);
        if !lines.is_empty() {
            let title = format!("{}: {} — rate against journal size", w.name, p.name);
            let svg = line_chart(&title, &p.rate_unit, &lines)
                .with_context(|| format!("journal size chart of {} {}", w.name, p.name))?;
            charts.push(ChartView::new(
                "journal-size",
                svg,
                format!(
                    "Mean {} against journal size (log scale), one line per combination of the other factors; error bars: ± 1 sd.",
                    p.rate_unit
                ),
            ));
        }
        phases.push(PhaseView {
            name: p.name.clone(),
            charts,
        });
    }
    let marked = w.configs.iter().flat_map(|c| &c.phases).any(|p| p.suspect);
    Ok(WorkloadView {
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

/// (journal bytes, mean rate, sd).
type Point = (u64, f64, f64);
/// A configuration's recorded factors (its `ConfigRecord` as a JSON object).
type Factors = serde_json::Map<String, serde_json::Value>;

/// One line of the journal-size chart: configurations that share every factor but
/// the journal size, as (journal bytes, mean, sd), sorted by size.
struct Line {
    name: String,
    points: Vec<(u64, f64, f64)>,
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
        // One trial: no error bar (an sd of 0 draws none), not a zero-width one.
        let sd = rate.sd.unwrap_or(0.0);
        let point = (c.config.journal_size, rate.mean, sd);
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

fn trial_views(records: &[TrialRecord], dir: Option<&Path>) -> Result<Vec<TrialView>> {
    let mut sorted: Vec<&TrialRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.trial);
    let mut opened = false;
    let mut out = Vec::new();
    for r in sorted {
        let (charts, note) = match dir {
            Some(d) => {
                let path = layout::monitor_file(d, r.trial);
                match std::fs::read_to_string(&path) {
                    Ok(text) => {
                        let (samples, bad) = parse_series(&text);
                        let charts = timeline_charts(r, &samples)?;
                        let note = if bad > 0 {
                            format!("{bad} unreadable line(s) in {} ignored", path.display())
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
            config: r.config.label.clone(),
            workload: r.workload.name.clone(),
            failed: !r.is_ok(),
            error: r.error.clone(),
            wall: format!("{:.1} s", r.wall_seconds),
            charts,
            note,
            open,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// Monitor samples
// ---------------------------------------------------------------------------------

fn timeline_charts(r: &TrialRecord, samples: &[SeriesPoint]) -> Result<Vec<ChartView>> {
    if samples.is_empty() {
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
        _ => 2,
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
        let series: Vec<Series> = roles
            .iter()
            .map(|role| Series {
                name: match role.as_str() {
                    "fs" => "file-system device".to_string(),
                    "journal" => "journal device".to_string(),
                    other => other.to_string(),
                },
                points: samples
                    .iter()
                    .filter_map(|s| s.devices.get(*role).map(|d| (s.t, d.write_kib_s / div)))
                    .collect(),
            })
            .collect();
        let title = format!(
            "trial {}: {} — device write throughput",
            r.trial, r.config.label
        );
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
    if samples.iter().any(|s| s.cpu.is_some()) {
        let pick = |f: fn(&CpuPct) -> f64| -> Vec<(f64, f64)> {
            samples
                .iter()
                .filter_map(|s| s.cpu.as_ref().map(|c| (s.t, f(c))))
                .collect()
        };
        let series = vec![
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
        ];
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

// ---------------------------------------------------------------------------------
// Charts
// ---------------------------------------------------------------------------------

fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow!("chart drawing failed: {e}")
}

/// Approximate width in pixels of `text` at `px` (sans-serif averages ~0.5 em).
fn text_px(text: &str, px: u32) -> u32 {
    (text.chars().count() as f64 * px as f64 * 0.5).ceil() as u32
}

/// The SVG backend's output, made to sit inline in HTML: the namespace declaration
/// is implied there, and dropping it keeps the page free of any URL.
fn inline_svg(svg: String) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}

/// plotters' SVG backend writes `font-size` as the requested size / 1.24; this asks
/// for `px` CSS pixels.
fn font_size(px: u32) -> f64 {
    px as f64 * 1.24
}

fn label_style(px: u32) -> TextStyle<'static> {
    (FONT, font_size(px)).into_font().color(&BLACK)
}

/// A "nice" upper bound for an axis starting at 0.
fn nice_max(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(x.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * mag >= x {
            return m * mag;
        }
    }
    10.0 * mag
}

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

struct Bar {
    label: String,
    /// (mean, sd, n); `None`: no successful trial.
    value: Option<(f64, f64, usize)>,
    suspect: bool,
}

/// Configuration labels under the x axis at the given centres: horizontal when they
/// fit their slot, else rotated to read bottom-up, so they never overlap.
fn x_category_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    at: &[(i32, i32)],
    labels: &[String],
    rotate: bool,
) -> Result<()> {
    for ((x, y), label) in at.iter().zip(labels) {
        let style = if rotate {
            label_style(LABEL_PX)
                .pos(Pos::new(HPos::Right, VPos::Center))
                .transform(FontTransform::Rotate270)
        } else {
            label_style(LABEL_PX).pos(Pos::new(HPos::Center, VPos::Top))
        };
        root.draw(&Text::new(label.clone(), (*x, *y + 8), style))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// The axes of a rate chart (bar or line): y gridlines and ticks with the unit, x
/// ticks left to the caller (configuration names, journal sizes).
fn rate_axes(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    unit: &str,
    x_desc: &str,
) -> Result<()> {
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .light_line_style(TRANSPARENT)
        .y_label_formatter(&|v| fmt_tick(*v))
        .y_desc(unit)
        .x_desc(x_desc)
        .label_style(label_style(LABEL_PX))
        .axis_desc_style(label_style(14))
        .draw()
        .map_err(draw_err)?;
    Ok(())
}

fn bar_chart(title: &str, unit: &str, bars: &[Bar], suspect_below: f64) -> Result<String> {
    let n = bars.len().max(1);
    let labels: Vec<String> = bars
        .iter()
        .map(|b| match b.value {
            Some((_, _, k)) => format!("{} (n={k})", b.label),
            None => format!("{} (no data)", b.label),
        })
        .collect();
    let y_area = 80;
    let plot_w = WIDTH - y_area - 30;
    let slot = plot_w as f64 / n as f64;
    let longest = labels
        .iter()
        .map(|l| text_px(l, LABEL_PX))
        .max()
        .unwrap_or(0);
    let rotate = longest as f64 > slot * 0.9;
    let x_area = if rotate { longest + 40 } else { 55 };
    let height = 320 + x_area;
    let top = bars
        .iter()
        .filter_map(|b| b.value.map(|(m, sd, _)| m + sd))
        .fold(0.0, f64::max);
    let y_max = nice_max(top * 1.25);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, font_size(16)))
            .margin(12)
            .margin_right(20)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_max)
            .map_err(draw_err)?;
        rate_axes(&mut chart, unit, "configuration")?;
        let half = 0.34;
        let normal: Vec<(usize, f64)> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.value.filter(|_| !b.suspect).map(|v| (i, v.0)))
            .collect();
        let suspect: Vec<(usize, f64)> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.value.filter(|_| b.suspect).map(|v| (i, v.0)))
            .collect();
        let rect = |(i, m): (usize, f64), c: RGBColor| {
            let x = i as f64;
            Rectangle::new([(x - half, 0.0), (x + half, m)], c.filled())
        };
        if !normal.is_empty() {
            chart
                .draw_series(normal.iter().map(|v| rect(*v, BAR)))
                .map_err(draw_err)?
                .label("mean rate")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], BAR.filled()));
        }
        if !suspect.is_empty() {
            chart
                .draw_series(suspect.iter().map(|v| rect(*v, SUSPECT_BAR)))
                .map_err(draw_err)?
                .label(format!("suspect: mean phase time under {suspect_below} s"))
                .legend(|(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], SUSPECT_BAR.filled())
                });
        }
        let with_sd: Vec<(f64, f64, f64)> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.value.filter(|v| v.1 > 0.0).map(|v| (i as f64, v.0, v.1)))
            .collect();
        if !with_sd.is_empty() {
            chart
                .draw_series(
                    with_sd
                        .iter()
                        .map(|&(x, m, sd)| error_bar(x, m, sd, 0.1, ERROR_BAR)),
                )
                .map_err(draw_err)?
                .label("± 1 standard deviation")
                .legend(|(x, y)| {
                    PathElement::new(
                        vec![(x + 7, y - 6), (x + 7, y + 6)],
                        ERROR_BAR.stroke_width(2),
                    )
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(label_style(LABEL_PX))
            .draw()
            .map_err(draw_err)?;
        let at: Vec<(i32, i32)> = (0..bars.len())
            .map(|i| chart.backend_coord(&(i as f64, 0.0)))
            .collect();
        x_category_labels(&root, &at, &labels, rotate)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}

/// A vertical error bar: line from mean - sd to mean + sd with caps `cap` wide (data
/// units), drawn as one path.
fn error_bar(x: f64, mean: f64, sd: f64, cap: f64, color: RGBColor) -> PathElement<(f64, f64)> {
    let (lo, hi) = ((mean - sd).max(0.0), mean + sd);
    PathElement::new(
        vec![
            (x - cap, hi),
            (x + cap, hi),
            (x, hi),
            (x, lo),
            (x - cap, lo),
            (x + cap, lo),
        ],
        color.stroke_width(2),
    )
}

fn line_chart(title: &str, unit: &str, lines: &[Line]) -> Result<String> {
    let sizes: BTreeSet<u64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    let lx = |b: u64| (b as f64).log2();
    let (lo, hi) = (
        lx(*sizes.first().unwrap_or(&1)),
        lx(*sizes.last().unwrap_or(&2)),
    );
    let pad = ((hi - lo) * 0.08).max(0.3);
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1 + p.2))
        .fold(0.0, f64::max);
    let y_max = nice_max(top * 1.35);
    let height = 400;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, font_size(16)))
            .margin(12)
            .margin_right(20)
            .x_label_area_size(60)
            .y_label_area_size(80)
            .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..y_max)
            .map_err(draw_err)?;
        rate_axes(&mut chart, unit, "journal size (log scale)")?;
        // Vertical grid lines at the measured sizes only.
        chart
            .draw_series(
                sizes.iter().map(|s| {
                    PathElement::new(vec![(lx(*s), 0.0), (lx(*s), y_max)], BLACK.mix(0.1))
                }),
            )
            .map_err(draw_err)?;
        let cap = (hi - lo + 2.0 * pad) * 0.012;
        for (i, line) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (lx(p.0), p.1)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(draw_err)?
                .label(line.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(draw_err)?;
            chart
                .draw_series(
                    line.points
                        .iter()
                        .filter(|p| p.2 > 0.0)
                        .map(|p| error_bar(lx(p.0), p.1, p.2, cap, color)),
                )
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(label_style(LABEL_PX))
            .draw()
            .map_err(draw_err)?;
        let at: Vec<(i32, i32)> = sizes
            .iter()
            .map(|s| chart.backend_coord(&(lx(*s), 0.0)))
            .collect();
        let labels: Vec<String> = sizes
            .iter()
            .map(|s| crate::units::format_size(*s))
            .collect();
        x_category_labels(&root, &at, &labels, false)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}

struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

fn timeline_chart(
    title: &str,
    y_desc: &str,
    series: &[Series],
    phases: &[(f64, String)],
    height: u32,
    fixed_max: Option<f64>,
) -> Result<String> {
    let t_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_max = fixed_max.unwrap_or_else(|| nice_max(top * 1.3));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, font_size(14)))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(42)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_labels(10)
            .y_labels(5)
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .x_desc("time since workload start (s)")
            .y_desc(y_desc)
            .label_style(label_style(12))
            .axis_desc_style(label_style(13))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(draw_err)?;
        for (t, name) in phases {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(*t, 0.0), (*t, y_max)],
                    BLACK.mix(0.45).stroke_width(1),
                )))
                .map_err(draw_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (*t, y_max),
                    label_style(11).pos(Pos::new(HPos::Left, VPos::Top)),
                )))
                .map_err(draw_err)?;
        }
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
                .map_err(draw_err)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(label_style(12))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_lines_parse_and_bad_ones_are_counted() {
        let text = r#"{"t": 1.0, "phase": "a", "devices": {"fs": {"write_kib_s": 5.0, "read_kib_s": 0.0, "in_flight": 1}}, "cpu": {"user": 1.0, "system": 2.0, "iowait": 3.0}, "dirty_kib": 10, "writeback_kib": 0}
not json
{"t": 0.0, "phase": "a", "devices": {}}
"#;
        let (samples, bad) = parse_series(text);
        assert_eq!(bad, 1);
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0].t, 0.0);
        assert_eq!(samples[1].devices["fs"].write_kib_s, 5.0);
        assert_eq!(samples[1].cpu.as_ref().unwrap().iowait, 3.0);
    }

    #[test]
    fn nice_max_rounds_up() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(93.0), 100.0);
        assert_eq!(nice_max(1100.0), 1200.0);
        assert!(nice_max(7.3) >= 7.3);
    }

    #[test]
    fn svg_is_inlined_without_namespace_url() {
        let bars = vec![Bar {
            label: "a".into(),
            value: Some((10.0, 1.0, 3)),
            suspect: false,
        }];
        let svg = bar_chart("t", "x/s", &bars, 60.0).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(!svg.contains("http"), "{svg}");
    }
}
