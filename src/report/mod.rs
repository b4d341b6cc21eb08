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
pub(crate) mod words;

use std::fmt::Write as _;

use serde::Serialize;

pub use crate::analysis::model::*;
use crate::analysis::stats::Summary;
use crate::analysis::warnings::decimals;
pub use crate::analysis::{analyse, every_trial_failed, DURABLE_SUFFIX};
use crate::results::record::TrialRecord;
use words::{fmt_alpha, fmt_level, p_expr, p_pair};

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
mod tests;
