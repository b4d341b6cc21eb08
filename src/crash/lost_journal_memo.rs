//! The lost-journal procedure's outcome reused for a later state that leaves it the
//! same input. With the journal's disk emptied, what the procedure (the failed mount,
//! `tune2fs -O ^has_journal`, `e2fsck -fy`, a new journal, the mount, the promises
//! read back) sees is the bytes of every other disk and the promises; nothing of the
//! lost journal. Two states whose other disks hold the same log records (the same
//! records applied to the base, the same pieces of the same writes over it) under the
//! same promises hand it the same input, and e2fsprogs and the kernel answer a given
//! image alike. A RAM-disk journal takes every commit while the file system's disk
//! changes only at write-back, so many states share their file system's bytes.
//!
//! What keeps that honest, as for the application's verdicts (`verdict_cache`): a
//! sample of the repeats (the first, then one in [`AUDIT_EVERY`]) runs the procedure
//! anyway and compares every count; one disagreement turns the reuse off for the rest
//! of the trial and the state's record says so. `JBENCH_VERDICT_CACHE=0` turns it off
//! with the application's cache.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::oracle::Promises;
use super::promise_check::digest_promises;
use super::states::{LogRec, StatePlan};
use crate::emu::writelog::{LogHeader, RecordKind};
use crate::results::crash::{CacheUse, LostJournal};

/// One repeat in this many runs the procedure anyway (the first always does).
pub const AUDIT_EVERY: u64 = 5;

/// What a state's lookup says to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Run the procedure; keep its outcome.
    Miss([u8; 32]),
    /// Take this outcome of a state with the same input.
    Hit(LostJournal),
    /// Run the procedure and compare with this outcome.
    Audit([u8; 32], LostJournal),
}

/// The outcomes of one trial's lost journals.
pub struct LostJournalMemo {
    /// For each record count, how many of the records before it write a disk other
    /// than the lost one: the base's bytes on those disks, named by a number.
    others_before: Vec<u64>,
    lost_disk: u8,
    kept: Mutex<HashMap<[u8; 32], LostJournal>>,
    repeats: AtomicU64,
    reused: AtomicU64,
    disagreed: AtomicU64,
    off: AtomicBool,
}

impl LostJournalMemo {
    /// For a log whose `journal` disk is the one the procedure empties; `None` when
    /// its header has none.
    pub fn of_log(header: &LogHeader, recs: &[LogRec]) -> Option<Self> {
        let journal = header.disks.iter().find(|d| d.name == "journal")?;
        Some(Self::new(recs, journal.index))
    }

    /// For the log `recs`, whose disk `lost_disk` is the one the procedure empties.
    pub fn new(recs: &[LogRec], lost_disk: u8) -> Self {
        let mut others_before = Vec::with_capacity(recs.len() + 1);
        let mut n = 0u64;
        others_before.push(0);
        for r in recs {
            n += u64::from(writes_other_disk(r, lost_disk));
            others_before.push(n);
        }
        Self {
            others_before,
            lost_disk,
            kept: Mutex::default(),
            repeats: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            disagreed: AtomicU64::new(0),
            off: AtomicBool::new(false),
        }
    }

    /// The input the procedure gets from `plan` under promises `p`: the records on
    /// the other disks in its base and its overlay, and the promises.
    pub fn key(&self, recs: &[LogRec], plan: &StatePlan, p: &Promises) -> [u8; 32] {
        let mut h = Sha256::new();
        let base = (plan.base as usize).min(self.others_before.len() - 1);
        h.update(self.others_before[base].to_le_bytes());
        for piece in &plan.overlay {
            let Some(r) = recs.get(piece.seq as usize) else {
                continue;
            };
            if !writes_other_disk(r, self.lost_disk) {
                continue;
            }
            h.update(b"w");
            h.update(piece.seq.to_le_bytes());
            for (start, len) in piece.ranges.iter().flatten() {
                h.update(start.to_le_bytes());
                h.update(len.to_le_bytes());
            }
        }
        h.update(b"p");
        digest_promises(&mut h, p);
        h.finalize().into()
    }

    pub fn lookup(&self, key: [u8; 32]) -> Lookup {
        if self.off.load(Ordering::Relaxed) {
            return Lookup::Miss(key);
        }
        let found = self
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let Some(lj) = found else {
            return Lookup::Miss(key);
        };
        let n = self.repeats.fetch_add(1, Ordering::Relaxed);
        if n.is_multiple_of(AUDIT_EVERY) {
            return Lookup::Audit(key, lj);
        }
        self.reused.fetch_add(1, Ordering::Relaxed);
        Lookup::Hit(reused(lj))
    }

    /// The procedure ran on `key`'s input; against `kept` when it was an audit. What
    /// the record keeps.
    pub fn ran(&self, key: [u8; 32], lj: LostJournal, kept: Option<&LostJournal>) -> LostJournal {
        let Some(kept) = kept else {
            self.kept
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, lj.clone());
            return lj;
        };
        let mut lj = lj;
        if same_outcome(&lj, kept) {
            lj.reuse = Some(CacheUse::Audited);
        } else {
            self.disagreed.fetch_add(1, Ordering::Relaxed);
            self.off.store(true, Ordering::Relaxed);
            lj.reuse = Some(CacheUse::Disagreed);
            lj.evidence.insert(
                0,
                "THE LOST-JOURNAL PROCEDURE GAVE ANOTHER OUTCOME than on an earlier state with the same input: this state's own outcome stands, and reuse is off for the rest of the trial".into(),
            );
        }
        lj
    }

    /// What the reuse did, for the trial's progress line; `None` without repeats.
    pub fn summary(&self) -> Option<String> {
        let repeats = self.repeats.load(Ordering::Relaxed);
        if repeats == 0 {
            return None;
        }
        let reused = self.reused.load(Ordering::Relaxed);
        let disagreed = self.disagreed.load(Ordering::Relaxed);
        Some(format!(
            "lost journals: {repeats} states left the procedure the bytes and promises of an earlier state: {reused} took its outcome, {} ran it again {}",
            repeats - reused,
            if disagreed == 0 {
                "and agreed".to_string()
            } else {
                format!("and {disagreed} DISAGREED (reuse was turned off; their own outcomes stand)")
            }
        ))
    }
}

fn writes_other_disk(r: &LogRec, lost_disk: u8) -> bool {
    r.disk != lost_disk
        && matches!(
            r.kind,
            RecordKind::Write | RecordKind::Zero | RecordKind::Discard
        )
}

/// Every count the record reports alike (the messages name each rig's devices).
fn same_outcome(a: &LostJournal, b: &LostJournal) -> bool {
    (
        a.mount_failed,
        a.recovered,
        a.fsynced_missing,
        a.fsynced_different,
        a.lost_found,
        a.fsck_repairs,
    ) == (
        b.mount_failed,
        b.recovered,
        b.fsynced_missing,
        b.fsynced_different,
        b.lost_found,
        b.fsck_repairs,
    )
}

fn reused(mut lj: LostJournal) -> LostJournal {
    lj.reuse = Some(CacheUse::Hit);
    lj.evidence.insert(
        0,
        "reused: the other disks held the records of an earlier state's, under the same promises; the lost-journal procedure's outcome is that state's, not run again (a sample of such states runs it and compares)".into(),
    );
    lj
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::options::Strategy;
    use crate::crash::outcome_memo::tests::promises as promised;
    use crate::crash::states::Piece;
    use crate::emu::writelog::RecordMeta;

    fn rec(seq: u64, disk: u8, kind: RecordKind) -> LogRec {
        LogRec {
            meta: RecordMeta {
                seq,
                disk,
                kind,
                time_ns: 0,
                offset: 0,
                len: 4096,
                issued: None,
                acked: None,
                payload_pos: 0,
            },
            label: None,
        }
    }

    /// Disk 1 is the journal: records 1, 3 and 4 write it, 0, 2 and 5 the file system.
    fn log() -> Vec<LogRec> {
        use RecordKind::*;
        [
            (0, Write),
            (1, Write),
            (0, Write),
            (1, Write),
            (1, Flush),
            (0, Write),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(d, k))| rec(i as u64, d, k))
        .collect()
    }

    fn plan(base: u64, overlay: &[u64]) -> StatePlan {
        StatePlan {
            strategy: Strategy::Prefix,
            cut: 6,
            base,
            overlay: overlay.iter().map(|&s| Piece::whole(s)).collect(),
            kept: 0,
            dropped: 0,
            dropped_blocks: 0,
            torn: None,
            stratum: String::new(),
        }
    }

    #[test]
    fn states_differing_only_on_the_lost_disk_share_a_key_and_nothing_else_does() {
        let recs = log();
        let m = LostJournalMemo::new(&recs, 1);
        let p = promised(2);
        let k = |base, overlay: &[u64], p: &Promises| m.key(&recs, &plan(base, overlay), p);
        // Bases 3 and 5 differ by journal records only; so do overlays [3] and [].
        assert_eq!(k(3, &[], &p), k(5, &[], &p));
        assert_eq!(k(3, &[3], &p), k(3, &[], &p));
        assert_ne!(
            k(2, &[], &p),
            k(3, &[], &p),
            "record 2 writes the file system"
        );
        assert_ne!(k(5, &[5], &p), k(5, &[], &p));
        assert_ne!(k(3, &[], &p), k(3, &[], &promised(1)), "other promises");
    }

    #[test]
    fn a_repeat_is_audited_first_then_reused_and_a_disagreement_turns_reuse_off() {
        let recs = log();
        let m = LostJournalMemo::new(&recs, 1);
        let key = m.key(&recs, &plan(3, &[]), &promised(1));
        let outcome = LostJournal {
            mount_failed: true,
            recovered: true,
            fsck_repairs: 3,
            ..LostJournal::default()
        };
        assert_eq!(m.lookup(key), Lookup::Miss(key));
        m.ran(key, outcome.clone(), None);
        let Lookup::Audit(k, kept) = m.lookup(key) else {
            panic!("the first repeat is audited")
        };
        assert_eq!(
            m.ran(k, outcome.clone(), Some(&kept)).reuse,
            Some(CacheUse::Audited)
        );
        for _ in 1..AUDIT_EVERY {
            let Lookup::Hit(lj) = m.lookup(key) else {
                panic!("then reused")
            };
            assert_eq!((lj.reuse, lj.fsck_repairs), (Some(CacheUse::Hit), 3));
        }
        let Lookup::Audit(k, kept) = m.lookup(key) else {
            panic!("one in {AUDIT_EVERY} audited")
        };
        let other = LostJournal {
            fsck_repairs: 4,
            ..outcome
        };
        let said = m.ran(k, other, Some(&kept));
        assert_eq!(said.reuse, Some(CacheUse::Disagreed));
        assert!(said.evidence[0].contains("ANOTHER OUTCOME"));
        assert_eq!(
            m.lookup(key),
            Lookup::Miss(key),
            "off for the rest of the trial"
        );
        assert!(m.summary().unwrap().contains("1 DISAGREED"));
    }
}
