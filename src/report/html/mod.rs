//! The self-contained HTML report: one file with inline CSS and inline SVG charts
//! (drawn with plotters' SVG backend), laid out by a minijinja template
//! (`templates/report.html`). It references nothing outside itself, so it opens from
//! `file://` and can be mailed or archived as is.
//!
//! Content: the experiment and machine (`env.json`), what was verified, the warnings
//! of [`crate::report::Analysis`], per workload and phase a bar chart of the mean rate per
//! configuration with ± 1 sd error bars and, when the journal size varies, a line
//! chart of rate against journal size; the text report's tables; per trial a
//! timeline of device write throughput and CPU from `monitor/trial-<N>.jsonl`; with
//! `crash.jsonl`, the answer (speed, safety and recovery per configuration) at the
//! top with the trade-off figure (throughput and recovery time against journal size,
//! recovery time against the amount replayed), the crash section's tables and a chart
//! of recovery time against journal size.
//!
//! `page` assembles the page (views for the template); `charts` draws the SVG
//! charts apart from it.

mod charts;
mod page;
mod tradeoff;

pub use charts::PALETTE;
pub use page::{render, render_dir, render_page, Page};

#[cfg(test)]
mod tests;
