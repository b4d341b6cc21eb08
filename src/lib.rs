//! jbench: measures what a file system's journal placement, size and mode cost in
//! speed, on real Linux block devices, with fresh file systems per trial and honest
//! statistics.
//!
//! Data flows one way: [`spec`] (experiment file) -> [`plan`] (ordered trials) ->
//! [`rig`] (devices, mkfs, mount, verification) -> [`workload`] engines ->
//! [`store`] (results directory) -> [`stats`] -> [`report`].

pub mod adaptive;
pub mod cleanup;
pub mod compare;
pub mod config;
pub mod emu;
pub mod envinfo;
pub mod executor;
pub mod exit;
pub mod html;
pub mod interrupt;
pub mod monitor;
pub mod plan;
pub mod preflight;
pub mod presets;
pub mod record;
pub mod report;
pub mod rig;
pub mod runner;
pub mod safety;
pub mod selftest;
pub mod spec;
pub mod stats;
pub mod store;
pub mod trust;
pub mod units;
pub mod workload;

/// The test suite's skip-or-fail rule (skip outside CI, fail under it), shared with
/// the integration tests.
#[cfg(test)]
#[path = "../tests/common/require.rs"]
pub(crate) mod test_require;
