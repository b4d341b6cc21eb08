//! Scale-out (issue 15): one experiment split into shards that an existing scheduler
//! (Slurm, Kubernetes, GNU parallel) runs anywhere, and a strict merge of what they
//! wrote. jbench schedules nothing itself.
//!
//! - `shard`: which trials a shard runs (deterministic, balanced by estimated time);
//! - `attempt`: one attempt of one shard: its trials, directory, checks and seal;
//! - `seal`: the atomic completion file that says an attempt finished;
//! - `merge`: attempts into one results directory (the machine a trial ran on and the
//!   `merge.json` every report reads are the results directory's: `results::fingerprint`,
//!   `results::merged`);
//! - `launch`: the scheduler files `jbench submit` writes.

pub mod attempt;
pub mod launch;
pub mod merge;
pub mod seal;
pub mod shard;

pub use crate::results::fingerprint::sha256_hex;
