//! From trial records to figures: summaries, confidence intervals, significance tests
//! ([`stats`]), the [`Analysis`] of one run built once by [`analyse`] ([`model`] its
//! types, `build` the construction, `significance` the comparisons and their typed
//! outcomes, `warnings` what makes a figure untrustworthy, [`phase_bounds`] phase times
//! their own operations' latencies rule out, [`summary`] the ranking on each
//! workload's main phase that opens a report), the crash lab's figures ([`crash`],
//! from `crash.jsonl`), the [`answer`] that joins speed, safety and recovery per
//! configuration, and the report options of a run, a merge or a comparison of runs
//! (`options`). Words belong to `report/`: nothing here formats a verdict, and nothing
//! here reads a directory (`results::open` does).

pub mod answer;
pub mod app_recovery_model;
mod build;
mod context;
pub mod crash;
pub mod decision;
pub mod families;
pub mod model;
mod options;
pub mod phase_bounds;
pub mod ranking;
pub mod ratio;
pub mod recovery_model;
mod significance;
pub mod stats;
pub mod summary;
pub mod tail;
pub mod takeaway;
pub mod versus;
pub(crate) mod warnings;

pub use build::analyse;
pub use context::DURABLE_SUFFIX;
pub use crash::{analyse_crash, CrashAnalysis};
pub use decision::Decision;
pub use model::*;
pub use summary::{default_main_phase, WorkloadSummary};
pub use warnings::every_trial_failed;
