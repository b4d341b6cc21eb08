//! From trial records to figures: summaries, confidence intervals, significance tests
//! ([`stats`]), the [`Analysis`] of one run built once by [`analyse`] ([`model`] its
//! types, `build` the construction, `significance` the comparisons and their typed
//! outcomes, `warnings` what makes a figure untrustworthy, [`summary`] the ranking on each
//! workload's main phase that opens a report), the crash lab's figures ([`crash`],
//! from `crash.jsonl`), the [`answer`] that joins speed, safety and recovery per
//! configuration, and the comparison of several result sets ([`compare`]). Words belong to `report/`: nothing here formats a
//! verdict.

pub mod answer;
mod build;
pub mod compare;
mod context;
pub mod crash;
pub mod families;
pub mod model;
pub mod ranking;
pub mod ratio;
mod significance;
pub mod stats;
pub mod summary;
pub(crate) mod warnings;

pub use build::analyse;
pub use context::DURABLE_SUFFIX;
pub use crash::{analyse_crash, CrashAnalysis};
pub use model::*;
pub use summary::{default_main_phase, WorkloadSummary};
pub use warnings::every_trial_failed;
