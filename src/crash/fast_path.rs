//! The user-space verdict's place in one trial's lab: which states it may judge, which
//! of its verdicts the kernel audits, and what the end of the trial says about it.
//!
//! The kernel is the judge of record. Every state the user-space path does not call
//! ok goes through the kernel's path (mount, promises, unmount, fsck), and so do the
//! first [`MIN_AUDITS`] it calls ok and one in [`AUDIT_EVERY`] after them (at least
//! 5%). One disagreement is a bug: the kernel's verdict stands, it is said loudly,
//! and the path is off for the rest of the trial.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::experiment::config::{Config, FsType};
use crate::results::crash::{JudgedBy, Verdict};

use super::jbd2_replay::Revokes;
use super::oracle::Promises;
use super::outcome_memo::OutcomeMemo;
use super::user_verdict::{revokes, Fast, BREAK_VAR};

pub const MIN_AUDITS: u64 = 20;
pub const AUDIT_EVERY: u64 = 20;

/// Whether the environment leaves the path on (`JBENCH_FAST_VERDICT=0` turns it off).
pub fn enabled() -> bool {
    std::env::var("JBENCH_FAST_VERDICT").map_or(true, |v| v.trim() != "0")
}

/// Whether a state's verdict can come from user space at all: ext3/ext4, promises the
/// engines make (an application's check needs the application), and no timed recovery
/// asked of it (the kernel's to measure). A state whose journal is also lost gets its
/// power-cut verdict here like any other; the lost-journal procedure after it is the
/// kernel's and e2fsprogs'.
pub fn applies(config: &Config, p: &Promises, timed: bool) -> bool {
    matches!(config.fs_type, FsType::Ext3 | FsType::Ext4) && p.check.is_none() && !timed
}

/// Whether the kernel also judges a state the path called ok.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Trust,
    Audit,
}

#[derive(Default)]
pub struct FastPath {
    ok: AtomicU64,
    trusted: AtomicU64,
    audited: AtomicU64,
    broken: AtomicU64,
    disagreed: AtomicU64,
    repeats: AtomicU64,
    fallbacks: Mutex<BTreeMap<String, u64>>,
    outcomes: Mutex<HashSet<[u8; 32]>>,
    off: AtomicBool,
    /// The ok outcomes a state is compared with before it is read.
    pub memo: OutcomeMemo,
}

impl FastPath {
    pub fn is_on(&self) -> bool {
        !self.off.load(Ordering::Relaxed)
    }

    /// The path called a state ok with `outcome`: trust it, or have the kernel audit it.
    pub fn called_ok(&self, outcome: &[u8; 32]) -> Decision {
        let fresh = self
            .outcomes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(*outcome);
        if !fresh {
            self.repeats.fetch_add(1, Ordering::Relaxed);
        }
        let n = self.ok.fetch_add(1, Ordering::Relaxed);
        if n < MIN_AUDITS || n.is_multiple_of(AUDIT_EVERY) {
            Decision::Audit
        } else {
            self.trusted.fetch_add(1, Ordering::Relaxed);
            Decision::Trust
        }
    }

    pub fn fell_back(&self, why: &str) {
        // Reasons name transactions and blocks; the tally is by kind.
        let kind: String = why
            .split(|c: char| c.is_ascii_digit())
            .next()
            .unwrap_or(why)
            .trim()
            .to_string();
        *self
            .fallbacks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default() += 1;
    }

    /// The kernel judged a state the path had called ok or broken: whether they agree
    /// on the promises (fsck's word is the kernel's alone), with the record's word.
    pub fn audit(&self, fast: &Fast, kernel: Verdict) -> (JudgedBy, Option<String>) {
        let kernel_ok = matches!(kernel, Verdict::Ok | Verdict::FsckDirty);
        let agree = match fast {
            _ if kernel == Verdict::NoVerdict => true,
            Fast::Ok { .. } => kernel_ok,
            Fast::Broken { .. } => {
                self.broken.fetch_add(1, Ordering::Relaxed);
                !kernel_ok
            }
            Fast::Fallback(_) => return (JudgedBy::Kernel, None),
        };
        if agree {
            if matches!(fast, Fast::Ok { .. }) {
                self.audited.fetch_add(1, Ordering::Relaxed);
            }
            return (JudgedBy::Audited, None);
        }
        self.disagreed.fetch_add(1, Ordering::Relaxed);
        self.off.store(true, Ordering::Relaxed);
        let said = format!(
            "THE USER-SPACE VERDICT DISAGREED WITH THE KERNEL here: it said {}, the kernel {kernel}; the kernel's verdict stands and the user-space path is off for the rest of the trial (a bug: please report it with this state)",
            match fast {
                Fast::Ok { .. } => "every promise held".to_string(),
                Fast::Broken { evidence } => evidence.get(1).cloned().unwrap_or_default(),
                Fast::Fallback(w) => w.clone(),
            }
        );
        crate::events::step(crate::events::Activity::CrashLab, said.clone());
        (JudgedBy::Disagreed, Some(said))
    }

    /// The end of the trial's line: what the path judged and how the kernel agreed.
    pub fn summary(&self, states: usize) -> Option<String> {
        let ok = self.ok.load(Ordering::Relaxed);
        let fallbacks = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
        let fell: u64 = fallbacks.values().sum();
        if ok == 0 && fell == 0 && self.broken.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let distinct = self
            .outcomes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        let disagreed = self.disagreed.load(Ordering::Relaxed);
        let mut s = format!(
            "user-space verdicts: {ok} of {states} states called ok in user space ({} trusted, {} audited by the kernel{}; {distinct} distinct outcomes, {} repeats judged once, {} of them not read again), {} called broken (a promise lost or the journal corrupt), each judged again by the kernel",
            self.trusted.load(Ordering::Relaxed),
            self.audited.load(Ordering::Relaxed),
            if disagreed > 0 {
                format!(", {disagreed} DISAGREED: the path was turned off")
            } else {
                ", all agreeing".to_string()
            },
            self.repeats.load(Ordering::Relaxed),
            self.memo.hits(),
            self.broken.load(Ordering::Relaxed),
        );
        if revokes() == Revokes::SkippedOnPurpose {
            s.push_str(&format!(
                "; ITS REPLAY WAS BROKEN ON PURPOSE ({BREAK_VAR}=skip-revokes: revoke records skipped), to test the audit"
            ));
        }
        if fell > 0 {
            let why: Vec<String> = fallbacks.iter().map(|(w, n)| format!("{n} {w}")).collect();
            s.push_str(&format!(
                "; {fell} judged by the kernel alone ({})",
                why.join("; ")
            ));
        }
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(n: u8) -> Fast {
        Fast::Ok {
            checked: 1,
            transactions: 0,
            outcome: [n; 32],
            repeated: false,
        }
    }

    #[test]
    fn the_first_twenty_and_one_in_twenty_after_are_audited() {
        let f = FastPath::default();
        let audited = (0..200u8)
            .filter(|i| f.called_ok(&[*i; 32]) == Decision::Audit)
            .count();
        assert_eq!(audited, 20 + 9, "0..20, then 20, 40, ..., 180");
        assert!(audited as f64 / 200.0 >= 0.05);
    }

    #[test]
    fn a_disagreement_keeps_the_kernels_word_and_turns_the_path_off() {
        let f = FastPath::default();
        assert_eq!(
            f.audit(&ok(1), Verdict::FsckDirty).0,
            JudgedBy::Audited,
            "fsck is the kernel's"
        );
        let broken = Fast::Broken {
            evidence: vec!["x".into(), "f: missing".into()],
        };
        assert_eq!(f.audit(&broken, Verdict::LostFsynced).0, JudgedBy::Audited);
        assert!(f.is_on());
        let (by, said) = f.audit(&ok(2), Verdict::LostFsynced);
        assert_eq!(by, JudgedBy::Disagreed);
        assert!(said.unwrap().contains("the kernel's verdict stands"));
        assert!(!f.is_on());
        f.called_ok(&[3; 32]);
        assert!(f.summary(10).unwrap().contains("1 DISAGREED"));
    }

    #[test]
    fn fallbacks_are_tallied_by_kind() {
        let f = FastPath::default();
        f.fell_back("descriptor of transaction 12 fails its checksum");
        f.fell_back("descriptor of transaction 13 fails its checksum");
        f.fell_back("orphan inodes, which the kernel's mount processes");
        let s = f.summary(3).unwrap();
        assert!(
            s.contains(
                "3 judged by the kernel alone (2 descriptor of transaction; 1 orphan inodes"
            ),
            "{s}"
        );
    }
}
