//! Scale-out (issue 15): one experiment split into shards that an existing scheduler
//! (Slurm, Kubernetes, GNU parallel) runs anywhere, and a strict merge of what they
//! wrote. jbench schedules nothing itself.
//!
//! - `shard`: which trials a shard runs (deterministic, balanced by estimated time);
//! - `fingerprint`: the machine a trial ran on;
//! - `seal`: the atomic completion file that says an attempt finished;
//! - `merge`: attempts into one results directory;
//! - `launch`: the scheduler files `jbench submit` writes.

pub mod fingerprint;
pub mod launch;
pub mod merge;
pub mod seal;
pub mod shard;

/// SHA-256 of `bytes`, lowercase hex: the spec and trial hashes of a seal.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
