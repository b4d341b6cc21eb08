//! The seal of a shard attempt: `shard.json` in its results directory, written
//! atomically (temporary file, fsync, rename) only when every trial of the shard has
//! a record. A directory without it is an attempt that did not finish (killed,
//! requeued, interrupted), whatever it holds: execution is at-least-once, and an
//! existing directory is no proof.

use serde::{Deserialize, Serialize};

/// File name of the seal inside an attempt's results directory.
pub const SEAL: &str = "shard.json";
pub const SEAL_VERSION: u32 = 1;

/// What a shard's seal records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seal {
    pub seal_version: u32,
    /// 0-based shard index and the number of shards.
    pub shard: usize,
    pub shards: usize,
    /// `round` or `workload`: the unit kept on one machine.
    pub shard_by: String,
    /// SHA-256 (hex) of the resolved spec (`spec.toml`) the attempt ran.
    pub spec_sha256: String,
    pub jbench_version: String,
    /// `trials.jsonl` schema version.
    pub schema_version: u32,
    /// Plan indices of the shard's trials, ascending.
    pub trials: Vec<usize>,
    /// SHA-256 (hex) of `trials.jsonl` as sealed: a later change breaks the seal.
    pub trials_sha256: String,
    /// The machine the attempt ran on.
    pub machine: crate::scale::fingerprint::Fingerprint,
    /// Where the shard index came from: `--shard I/N`, `SLURM_ARRAY_TASK_ID`, ...
    pub index_source: String,
    /// Wall-clock time the seal was written (metadata only: durations come from
    /// each machine's own clock, inside the trial records).
    pub sealed_at: String,
    /// Scheduler identifiers seen in the environment (job id, task id, restart
    /// count, pod name), for the merge's list of attempts.
    #[serde(default)]
    pub scheduler: std::collections::BTreeMap<String, String>,
}
