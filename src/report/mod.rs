//! The exporters: one per output format behind one trait, [`Exporter`], each only
//! formatting the [`Analysis`] that `crate::analysis` built once, so the terminal
//! table, Markdown, CSV, JSON and the HTML page can never disagree.
//!
//! - [`text`]: the terminal table, and [`markdown`] the same report as Markdown;
//! - [`csv`], [`json`]: the machine-readable exports;
//! - [`html`]: the self-contained page (page assembly apart from the charts);
//! - `grid`: the tables the text, Markdown and HTML reports share;
//! - [`answer`]: the answer that opens a report with crash states: speed, safety and
//!   recovery per configuration;
//! - [`summary`]: the words of the summary that opens each report;
//! - [`crash`]: the words and tables of the crash section (`crash.jsonl`);
//! - [`compare`]: `jbench compare`'s header of the compared runs;
//! - `words`: the words of verdicts, the only place a typed outcome becomes text.
//!
//! The model and its construction are re-exported here ([`analyse`], [`Analysis`],
//! [`ReportOptions`], ...) so `report::render` stays the one front door.

pub mod answer;
pub mod compare;
pub mod crash;
pub mod csv;
pub mod environment;
pub mod glance;
mod grid;
pub mod html;
pub mod json;
pub mod markdown;
pub mod run_end;
pub mod summary;
pub mod tail;
pub mod text;
pub mod words;

pub use crate::analysis::model::*;
pub use crate::analysis::{analyse, every_trial_failed, DURABLE_SUFFIX};
use crate::results::crash::CrashRecord;
use crate::results::record::TrialRecord;
pub use grid::Table;
pub use text::{workload_tables, workload_verdicts};

/// Formats an [`Analysis`] in one output format. The HTML page is not one: it also
/// reads the trial records and the results directory (timelines, `env.json`) and can
/// fail, so it has its own entry points in [`html`].
pub trait Exporter {
    fn render(&self, a: &Analysis) -> String;
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
    /// The whole analysis (every figure, interval and verdict), pretty-printed.
    Json,
}

impl Format {
    /// The exporter that writes this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Table => &text::Text,
            Format::Markdown => &markdown::Markdown,
            Format::Csv => &csv::Csv,
            Format::Json => &json::Json,
        }
    }
}

/// Analyses `records` and renders the report in `format`.
pub fn render(records: &[TrialRecord], opts: &ReportOptions, format: Format) -> String {
    render_with_crash(records, &[], opts, format)
}

/// Analyses `records` and the crash lab's `crash` states (`crash.jsonl`) and renders
/// the report in `format`, crash section included when `crash` is not empty.
pub fn render_with_crash(
    records: &[TrialRecord],
    crash: &[CrashRecord],
    opts: &ReportOptions,
    format: Format,
) -> String {
    format
        .exporter()
        .render(&analyse(records, opts).with_crash(crash))
}

/// The JSON report of `analysis`.
pub fn render_json(analysis: &Analysis) -> String {
    json::Json.render(analysis)
}

/// The CSV report of `analysis`.
pub fn render_csv(analysis: &Analysis) -> String {
    csv::Csv.render(analysis)
}

#[cfg(test)]
mod tests;
