//! The application's verdict on a recovered state, reused for a later state that hands
//! it the same input: the same recovered content (`content_key`: every name, byte,
//! permission and owner of the recovered file systems) and the same promises (the
//! paths declared durable and the records promised before the cut, which the check is
//! handed). The application's recovery and check see nothing else of the state, so a
//! deterministic application must judge both alike; what keeps that honest:
//!
//! - only a pass is kept: every failure a run reports comes from a check that ran;
//! - a sample of the hits (the first, then one in [`AUDIT_EVERY`]) runs the check
//!   anyway and compares; one disagreement turns the cache off for the rest of the
//!   trial, and the state's record says so;
//! - the file system's own verdict (mount, fsck, the fsync promises) is never reused.
//!
//! Worth it only where the check is dear (an application to start); `JBENCH_VERDICT_CACHE=0`
//! turns it off.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use sha2::{Digest, Sha256};

pub use crate::results::crash::CacheUse;

use super::recover::RecoveryRig;
use super::user_check::{self, UserCheck};

/// One hit in this many runs the check anyway (the first hit always does).
pub const AUDIT_EVERY: u64 = 5;

/// What a state's lookup says to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lookup {
    /// Run the check; keep a pass.
    Miss,
    /// Skip the check: it passed on the same input, with this `records_lost`.
    Hit(Option<u64>),
    /// Run the check and compare with the pass on the same input.
    Audit(Option<u64>),
}

/// The passes of one trial, shared by its rigs.
#[derive(Default)]
pub struct VerdictCache {
    passed: Mutex<HashMap<[u8; 32], Option<u64>>>,
    hits: AtomicU64,
    skipped: AtomicU64,
    disagreed: AtomicU64,
    off: AtomicBool,
}

/// Whether the environment leaves the cache on (`JBENCH_VERDICT_CACHE=0` turns it off).
pub fn enabled() -> bool {
    std::env::var("JBENCH_VERDICT_CACHE").map_or(true, |v| v.trim() != "0")
}

impl VerdictCache {
    /// The key of a state: its recovered trees under `roots` and what the check is
    /// handed.
    pub fn key(roots: &[&Path], paths: &[&str], keys: &[String]) -> Result<[u8; 32]> {
        let mut h = Sha256::new();
        h.update(super::content_key::of(roots)?);
        for p in paths {
            h.update(b"p\0");
            h.update(p.as_bytes());
        }
        for k in keys {
            h.update(b"k\0");
            h.update(k.as_bytes());
        }
        Ok(h.finalize().into())
    }

    pub fn lookup(&self, key: &[u8; 32]) -> Lookup {
        if self.off.load(Ordering::Relaxed) {
            return Lookup::Miss;
        }
        let found = self
            .passed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied();
        match found {
            None => Lookup::Miss,
            Some(lost) => {
                let n = self.hits.fetch_add(1, Ordering::Relaxed);
                if n.is_multiple_of(AUDIT_EVERY) {
                    Lookup::Audit(lost)
                } else {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    Lookup::Hit(lost)
                }
            }
        }
    }

    /// Keeps a pass of the check on `key`'s input.
    pub fn passed(&self, key: [u8; 32], records_lost: Option<u64>) {
        self.passed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, records_lost);
    }

    /// An audit found the check disagreeing with the pass it was to repeat.
    pub fn disagreed(&self) {
        self.disagreed.fetch_add(1, Ordering::Relaxed);
        self.off.store(true, Ordering::Relaxed);
    }

    /// What the cache did, for the trial's progress line; `None` when no state hit it.
    pub fn summary(&self, states: usize) -> Option<String> {
        let hits = self.hits.load(Ordering::Relaxed);
        if hits == 0 {
            return None;
        }
        let skipped = self.skipped.load(Ordering::Relaxed);
        let audited = hits - skipped;
        let disagreed = self.disagreed.load(Ordering::Relaxed);
        Some(format!(
            "{hits} of {states} states handed the application what an earlier passing state had: {skipped} reused its verdict, {audited} ran the check anyway {}",
            if disagreed == 0 {
                "and agreed".to_string()
            } else {
                format!("and {disagreed} DISAGREED (the cache was turned off; their own verdicts stand)")
            }
        ))
    }
}

/// The workload's check on the mounted state, or the verdict of an earlier state that
/// handed it the same input (`verdict_cache`, used only where the workload starts an
/// application): its failure (with at most `tail` lines of each output), the records it
/// listed lost, and how the cache took part.
pub(crate) fn checked_or_cached(
    rig: &RecoveryRig,
    check: &UserCheck,
    paths: &[&str],
    keys: &[String],
    tail: usize,
    cache: Option<&VerdictCache>,
) -> Result<(
    Option<user_check::CheckFailure>,
    Option<u64>,
    Option<CacheUse>,
)> {
    let cache = cache.filter(|_| check.recover.is_some());
    let key = match cache {
        Some(_) => {
            let mut roots = vec![rig.mount_point.as_path()];
            roots.extend(rig.second_mount());
            // A tree the kernel will not read back (EBADMSG from a checksum, EIO) is
            // itself what the application's recovery will meet: judge it, cache nothing.
            match VerdictCache::key(&roots, paths, keys) {
                Ok(k) => Some(k),
                Err(e) => {
                    crate::events::step(
                        crate::events::Activity::CrashLab,
                        format!("no verdict cache for this state: {e:#}; its check runs"),
                    );
                    None
                }
            }
        }
        None => None,
    };
    let lookup = match (cache, &key) {
        (Some(c), Some(k)) => c.lookup(k),
        _ => Lookup::Miss,
    };
    if let Lookup::Hit(lost) = lookup {
        return Ok((None, lost, Some(CacheUse::Hit)));
    }
    let mut o = user_check::run(rig, check, paths, keys, tail)?;
    let passed = o.failure.is_none();
    let used = match lookup {
        Lookup::Audit(lost) if passed && lost == o.records_lost => Some(CacheUse::Audited),
        Lookup::Audit(lost) => {
            if let Some(c) = cache {
                c.disagreed();
            }
            let said = format!(
                "the verdict cache was wrong here: an earlier state with the same recovered content and promises passed the check (records lost {lost:?}); this one ran it and got {} (records lost {:?}); the cache is off for the rest of the trial",
                if passed { "a pass" } else { "a failure" },
                o.records_lost
            );
            match &mut o.failure {
                Some(f) => f.evidence.insert(0, said),
                None => crate::events::step(crate::events::Activity::CrashLab, said),
            }
            Some(CacheUse::Disagreed)
        }
        _ => None,
    };
    if let (true, Some(c), Some(k)) = (passed, cache, key) {
        if used.is_none() {
            c.passed(k, o.records_lost);
        }
    }
    Ok((o.failure, o.records_lost, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_reused_one_hit_in_five_is_audited_and_a_disagreement_ends_it() {
        let c = VerdictCache::default();
        let k = [7u8; 32];
        assert_eq!(c.lookup(&k), Lookup::Miss);
        c.passed(k, Some(0));
        let seen: Vec<Lookup> = (0..6).map(|_| c.lookup(&k)).collect();
        assert_eq!(seen[0], Lookup::Audit(Some(0)), "the first hit is audited");
        assert!(
            seen[1..5].iter().all(|l| *l == Lookup::Hit(Some(0))),
            "{seen:?}"
        );
        assert_eq!(seen[5], Lookup::Audit(Some(0)));
        assert_eq!(c.lookup(&[8u8; 32]), Lookup::Miss, "another input");
        let said = c.summary(10).unwrap();
        assert!(
            said.starts_with("6 of 10 states") && said.contains("4 reused"),
            "{said}"
        );
        assert!(said.contains("2 ran the check anyway and agreed"), "{said}");
        c.disagreed();
        assert_eq!(c.lookup(&k), Lookup::Miss, "off after a disagreement");
        assert!(c.summary(10).unwrap().contains("1 DISAGREED"));
    }

    #[test]
    fn the_key_covers_what_the_check_is_handed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("db"), b"x").unwrap();
        let roots = [d.path()];
        let k = |paths: &[&str], keys: &[&str]| {
            let keys: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
            VerdictCache::key(&roots, paths, &keys).unwrap()
        };
        assert_eq!(k(&["db"], &["1"]), k(&["db"], &["1"]));
        assert_ne!(
            k(&["db"], &["1"]),
            k(&["db"], &["1", "2"]),
            "one more record"
        );
        assert_ne!(k(&["db"], &[]), k(&[], &[]), "one more durable path");
        assert_ne!(k(&["d", "b"], &[]), k(&["db"], &[]), "paths are delimited");
    }
}
