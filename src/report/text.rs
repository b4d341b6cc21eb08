//! The terminal table and the Markdown report: per workload the times, rates and
//! comparison tables, the verdict lines and the warnings, in plain or Markdown style.

use std::fmt::Write as _;

use super::grid::{
    comparison_grid, md_escape, rates_grid, times_grid, warning_block, Style, Table,
};
use super::words::{fmt_alpha, p_pair, Wording};
use super::Exporter;
use crate::analysis::families::FamilyKind;
use crate::analysis::{Analysis, Comparison, PhaseComparison, WorkloadAnalysis};

/// Aligned plain text for a terminal.
pub struct Text;

impl Exporter for Text {
    fn render(&self, a: &Analysis) -> String {
        render_text(a, Style::Plain)
    }
}

/// The tables [`super::render`] prints for workload `w` of `a`, in the same order: times,
/// rates, then the comparison with the baseline when there is one.
pub fn workload_tables(w: &WorkloadAnalysis, a: &Analysis) -> Vec<Table> {
    let mut grids = vec![
        times_grid(w, Style::Markdown),
        rates_grid(w, Style::Markdown),
    ];
    if let Some(base) = &w.baseline {
        if !w.comparisons.is_empty() {
            grids.push(comparison_grid(w, base, a));
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

/// The verdict lines [`super::render`] prints for workload `w` (plain text), `None` without
/// comparisons.
pub fn workload_verdicts(w: &WorkloadAnalysis, a: &Analysis) -> Option<String> {
    let base = w.baseline.as_ref()?;
    (!w.comparisons.is_empty()).then(|| verdict_lines(w, base, a, Style::Plain))
}

pub(crate) fn render_text(a: &Analysis, style: Style) -> String {
    let mut out = String::new();
    if style == Style::Markdown {
        out.push_str("# jbench report\n\n");
    }
    // With crash states the answer has the summary's lines and more; one of the two.
    if a.crash.is_empty() {
        out.push_str(&super::summary::summary_block(a, style));
        out.push_str(&super::tail::tail_glance(a, style));
        out.push_str(&super::tail::load_block(a, style));
    } else {
        out.push_str(&super::glance::glance_block(a, style));
        out.push_str(&super::answer::answer_block(a, style));
    }
    out.push_str(&super::environment::header_block(a, style));
    if !a.warnings.is_empty() {
        out.push_str(&warning_block("Warnings", &a.warnings, style));
    }
    // Before the workloads' tables: of a crash run, the states are the answer and the
    // recording trials' figures the detail.
    out.push_str(&super::crash::crash_block(a, style));
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
            out.push_str(&comparison_grid(w, base, a).render(style));
            out.push('\n');
            out.push_str(&verdict_lines(w, base, a, style));
            out.push('\n');
        }
    }
    out.push_str(&super::tail::tail_table(w, style));
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

/// One line per configuration: significant differences one by one with their p,
/// then the other phases grouped by verdict ("equivalent within ±2% in
/// dir_create, file_create"). The suspect condition is stated once: above the lines
/// when every comparison involves a suspect phase, otherwise as a `*` on the phases
/// that do, explained below the lines.
pub(crate) fn verdict_lines(
    w: &WorkloadAnalysis,
    base: &str,
    a: &Analysis,
    style: Style,
) -> String {
    let words = Wording::of(w, a);
    let alpha = fmt_alpha(1.0 - a.confidence);
    let rule = significance_rule(&alpha, &words.band(), w, a.adaptive_looks);
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
        let line = verdict_line(c, w.phases.len(), !every, &words);
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

/// How each verdict is decided: by its interval against the band, at the level of
/// alpha and the corrections the p-values went through: Holm within each family of
/// more than one test (named with its phases and size), Bonferroni over adaptive
/// looks.
fn significance_rule(alpha: &str, band: &str, w: &WorkloadAnalysis, looks: Option<u32>) -> String {
    let mut how = Vec::new();
    if let Some(k) = looks.filter(|k| *k > 1) {
        how.push(format!(
            "adaptive: each p multiplied by the run's {k} possible looks"
        ));
    }
    let families: Vec<String> = w
        .families
        .iter()
        .filter(|f| f.size > 0)
        .map(|f| {
            let what = match f.kind {
                FamilyKind::Primary => "every pair of configurations",
                FamilyKind::Secondary => "against the baseline",
                FamilyKind::Suspect => "against the baseline, kept apart",
            };
            format!(
                "{} = {} ({what}: {} test{})",
                f.id,
                f.phases.join(", "),
                f.size,
                if f.size == 1 { "" } else { "s" }
            )
        })
        .collect();
    if w.families.iter().any(|f| f.size > 1) {
        how.push(format!("Holm within each family: {}", families.join("; ")));
    } else if !families.is_empty() {
        how.push(format!("families: {}", families.join("; ")));
    }
    let by = format!(
        "different when the whole interval lies outside {band}, equivalent when it lies wholly inside, else undecided"
    );
    let mut out = if how.is_empty() {
        format!("{by}; intervals at 1 - {alpha}")
    } else {
        format!("{by}; each interval at the level its adjusted p is tested at (alpha {alpha})")
    };
    if !how.is_empty() {
        out.push_str("; ");
        out.push_str(&how.join("; then "));
    }
    out
}

/// `file_remove 43.8% faster (p=0.007), dir_remove 30.3% faster (p=0.002); no
/// significant difference in dir_create, file_create`. With `mark`, suspect phases
/// carry a `*`.
pub(crate) fn verdict_line(c: &Comparison, n_phases: usize, mark: bool, words: &Wording) -> String {
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
                words.outcome(p),
                p_value.unwrap_or_default()
            )
        })
        .collect();
    // The other phases, grouped by outcome in order of first appearance; "undecided
    // against ±10% (+8.2% [...])" groups as "undecided against ±10%" (the intervals
    // are in the comparison table), a reason without figures stays.
    let mut groups: Vec<(String, &str, Vec<String>)> = Vec::new();
    for p in c.phases.iter().filter(|p| !p.significant) {
        let (head, tail) = words.group(p);
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
        let which = if whole {
            "all phases".to_string()
        } else {
            phases.join(", ")
        };
        parts.push(format!("{head} in {which}{tail}"));
    }
    if parts.is_empty() {
        // No phase at all: every trial of both sides failed before measuring.
        return "nothing to compare: no phase was measured by a successful trial".to_string();
    }
    parts.join("; ")
}
