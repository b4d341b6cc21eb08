//! The tables shared by the text and Markdown reports and the HTML page: a titled
//! grid of cells (plain or Markdown), and the times, rates and comparison tables of a
//! workload with their "mean ± sd" columns.

use std::fmt::Write as _;

use serde::Serialize;

use super::words::{fmt_ci_level, fmt_level, fmt_pct_ci, p_expr, p_pair, Wording};
use crate::analysis::stats::Summary;
use crate::analysis::warnings::decimals;
use crate::analysis::{
    Analysis, ConfigAnalysis, PhaseComparison, PhaseInfo, PhaseStats, WorkloadAnalysis,
    DURABLE_SUFFIX,
};

/// One table of the text report (times, rates or the comparison with the baseline),
/// cells formatted as the Markdown report shows them, for other renderers (HTML).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Markdown,
}

/// A titled table: first column left-aligned (labels), the others right-aligned.
pub(crate) struct Grid {
    pub(crate) title: String,
    pub(crate) headers: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
}

pub(crate) fn width(s: &str) -> usize {
    // Characters, not bytes: cells contain "±".
    s.chars().count()
}

pub(crate) fn pad(s: &str, w: usize, left: bool) -> String {
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

    /// The grid as a [`Table`], for renderers of their own (HTML).
    pub(crate) fn into_table(self) -> Table {
        Table {
            title: self.title,
            headers: self.headers,
            rows: self.rows,
        }
    }

    pub(crate) fn render(&self, style: Style) -> String {
        match style {
            Style::Plain => self.plain(),
            Style::Markdown => self.markdown(),
        }
    }
}

/// A titled list of warnings, as the text and Markdown reports print them.
pub(crate) fn warning_block(title: &str, warnings: &[String], style: Style) -> String {
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

/// Keeps labels and markers from being read as Markdown syntax.
pub(crate) fn md_escape(s: &str) -> String {
    s.trim()
        .replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('*', "\\*")
}

/// One "mean ± sd" column of a table. One number of decimals for the whole column
/// (from its largest mean), so 999 and 1000 read alike; in plain text aligned on the
/// "±" so means and spreads line up even when their widths differ; the suspect marker
/// (or a space) sits in a slot of its own at the end for the same reason.
pub(crate) fn mean_sd_column(values: &[(Option<Summary>, bool)], style: Style) -> Vec<String> {
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

pub(crate) fn trials_cell(c: &ConfigAnalysis) -> String {
    if c.failed > 0 {
        format!("{} (+{} failed)", c.ok, c.failed)
    } else {
        c.ok.to_string()
    }
}

/// Builds a table whose rows are configurations: label, trial count, then `columns`.
pub(crate) fn config_grid(
    title: String,
    w: &WorkloadAnalysis,
    columns: Vec<(String, Vec<String>)>,
) -> Grid {
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

pub(crate) fn column_of(
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

pub(crate) fn times_grid(w: &WorkloadAnalysis, style: Style) -> Grid {
    let columns = w
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), column_of(w, i, |s| s.seconds, style)))
        .collect();
    config_grid("Times (s), mean ± sd".to_string(), w, columns)
}

/// The header of a phase's rate column. A durable companion phase shares its plain
/// phase's unit, so it says "(+syncfs)"; two phases that still share a header (two
/// phases counting the same operation) name their phase in parentheses.
pub(crate) fn rate_headers(phases: &[PhaseInfo]) -> Vec<String> {
    let first: Vec<String> = phases
        .iter()
        .map(|p| match p.name.strip_suffix(DURABLE_SUFFIX) {
            Some(_) => format!("{} ({DURABLE_SUFFIX})", p.rate_unit),
            None => p.rate_unit.clone(),
        })
        .collect();
    first
        .iter()
        .zip(phases)
        .map(|(h, p)| {
            if first.iter().filter(|o| *o == h).count() > 1 {
                format!("{} ({})", p.rate_unit, p.name)
            } else {
                h.clone()
            }
        })
        .collect()
}

pub(crate) fn rates_grid(w: &WorkloadAnalysis, style: Style) -> Grid {
    let mut columns = Vec::new();
    let headers = rate_headers(&w.phases);
    for (i, (p, header)) in w.phases.iter().zip(headers).enumerate() {
        columns.push((header, column_of(w, i, |s| s.rate, style)));
        if p.has_bytes {
            let header = format!("{} KiB/s", p.name);
            columns.push((header, column_of(w, i, |s| s.kib_per_sec, style)));
        }
    }
    config_grid("Rates, mean ± sd".to_string(), w, columns)
}

pub(crate) fn comparison_grid(w: &WorkloadAnalysis, base: &str, a: &Analysis) -> Grid {
    let words = Wording::of(w, a);
    let mut headers = vec!["configuration".to_string()];
    headers.extend(w.phases.iter().map(|p| p.name.clone()));
    let rows = w
        .comparisons
        .iter()
        .map(|c| {
            let mut row = vec![c.config.clone()];
            row.extend(c.phases.iter().map(|p| comparison_cell(p, &words, a)));
            row
        })
        .collect();
    let all = || w.comparisons.iter().flat_map(|c| &c.phases);
    // Only what the cells show: an adjusted p only where one differs from its p, a
    // Mann-Whitney p only where a side had the 4 trials it needs.
    let mut shown = vec![format!(
        "change of the mean rate [interval at the level it was decided at; {}% where no level is given], Welch p",
        fmt_level(a.confidence)
    )];
    if all().any(|p| p.p.is_some() && p.p != p.p_adjusted) {
        shown.push("adjusted p (Holm within its family)".to_string());
    }
    if all().any(|p| p.mann_whitney_p.is_some()) {
        shown.push("MW: Mann-Whitney p, unadjusted, for reference".to_string());
    }
    Grid {
        title: format!("Compared with {base}: {}", shown.join(", ")),
        headers,
        rows,
    }
}

/// "+12.3% [+8.1%, +16.5%] at 98.3% different p=0.002, adjusted p=0.006" (the word
/// by the interval beside it: different, equivalent or undecided), or the verdict
/// when there is no test.
pub(crate) fn comparison_cell(c: &PhaseComparison, words: &Wording, a: &Analysis) -> String {
    let marker = if c.suspect { "*" } else { "" };
    let (Some(pct), Some(p)) = (c.pct, c.p) else {
        return format!("{}{marker}", words.outcome(c));
    };
    let ci = match c.ci_low_pct {
        Some(lo) => format!(" {}", fmt_pct_ci(lo, c.ci_high_pct)),
        None => String::new(),
    };
    let level = c
        .ci_level
        .filter(|l| c.ci_low_pct.is_some() && (l - a.confidence).abs() > 1e-12)
        .map(|l| format!(" at {}%", fmt_ci_level(l)))
        .unwrap_or_default();
    let mw = c
        .mann_whitney_p
        .map(|m| format!(" (MW {})", p_expr(m, false)))
        .unwrap_or_default();
    let adjusted = c.p_adjusted.unwrap_or(p);
    let word = c.decision.map(|d| format!(" {d}")).unwrap_or_default();
    format!(
        "{pct:+.1}%{ci}{level}{word} {}{mw}{marker}",
        p_pair(p, adjusted, false)
    )
}
