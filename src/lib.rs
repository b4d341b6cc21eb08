//! jbench: measures what a file system's journal placement, size and mode cost in
//! speed, on real Linux block devices, with fresh file systems per trial and honest
//! statistics.
//!
//! Data flows one way, and the folders follow it: each imports only folders below it
//! (the README's "Development" section lists them from the ground up).
//! [`experiment`] (experiment file, configurations, plan of trials) -> [`run`] (the
//! [`run::session::Session`] of `run` and `crash`, runner, executor, adaptive rounds)
//! which builds a [`rig`] (devices, mkfs, mount, verification; emulated disks served by
//! [`emu`]'s daemon) and runs a [`workload`] engine while [`monitor`] samples ->
//! [`results`] (the results directory, read back by [`results::open`]) -> [`crash`]
//! (the crash lab over the recordings) -> [`analysis`] (statistics, comparisons) ->
//! [`report`] (one exporter per format). Beside the flow: [`scale`] (shards, merge,
//! scheduler files), [`qualify`] (the user's own device), [`selftest`] (jbench
//! measuring itself), [`measure`] (the request engine), and [`cli`] on top.

pub mod analysis;
pub mod cli;
pub mod crash;
pub mod emu;
pub mod events;
pub mod experiment;
pub mod file_id;
pub mod measure;
pub mod monitor;
pub mod qualify;
pub mod report;
pub mod results;
pub mod rig;
pub mod run;
pub mod scale;
pub mod selftest;
pub mod trust;
pub mod units;
pub mod workload;

/// The test suite's skip-or-fail rule (skip outside CI, fail under it), shared with
/// the integration tests.
#[cfg(test)]
#[path = "../tests/common/require.rs"]
pub(crate) mod test_require;
