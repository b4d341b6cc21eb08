//! The self-contained HTML report: one file with inline CSS and inline SVG charts
//! (drawn with plotters' SVG backend), laid out by a minijinja template
//! (`templates/report.html`). It references nothing outside itself, so it opens from
//! `file://` and can be mailed or archived as is.
//!
//! Content: the experiment and machine (`env.json`), what was verified, the warnings
//! of [`crate::report::Analysis`], per workload and phase a bar chart of the mean rate per
//! configuration with the trials as dots and 95% confidence intervals of the mean as
//! error bars, a table of those intervals, a chart of latency percentiles where the
//! engine records them and, when the journal size varies, a line chart of rate
//! against journal size; the text report's tables; per trial with enough monitor
//! samples a timeline of device write throughput and CPU from
//! `monitor/trial-<N>.jsonl`; with
//! `crash.jsonl`, the answer (speed, safety and recovery per configuration) at the
//! top, opened per workload by a figure of it (per configuration the mean rate with
//! its 95% interval, the crash states passed and failed, the worst timed recovery with
//! a whisker to the figure to plan on), then the trade-off figure (throughput and
//! recovery time against journal size, recovery time against the amount replayed)
//! when the journal size varies, then the answer's words and tables; further down the
//! crash section's tables and a chart of recovery time against journal size.
//!
//! `page` assembles the page (views for the template); `charts` (shared pieces, line
//! charts, timelines), `bars`, `latency`, `answer_chart` and `tradeoff` draw the SVG
//! charts apart from it, with `marks` for the elements they write themselves. The
//! bars' dots are the trials' rates the analysis summarises (`PhaseStats::trial_rates`).

mod answer_chart;
mod bars;
mod charts;
mod latency;
mod marks;
mod page;
mod tradeoff;

pub use charts::PALETTE;
pub use page::{render, render_page, render_results, Page, MIN_TIMELINE_SAMPLES};

#[cfg(test)]
mod tests;
