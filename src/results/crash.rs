//! The crash record: one line of `crash.jsonl`, one crash state that `jbench crash`
//! built, recovered and checked (docs/crash.md, docs/results.md). A user-facing
//! schema: bump [`CRASH_SCHEMA_VERSION`] on incompatible changes.

use std::io::BufRead;
use std::path::Path;

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::experiment::crash_options::Strategy;

pub const CRASH_SCHEMA_VERSION: u32 = 1;

/// What the oracle concluded about one crash state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Mounted, every fsync'ed file intact, fsck found nothing.
    Ok,
    /// The mount failed (fsck was then run; its output is the evidence).
    Unmountable,
    /// Mounted, but fsck complained after the unmount.
    FsckDirty,
    /// A file whose fsync returned before the cut is missing or different.
    LostFsynced,
    /// The state could not be judged: a recovery step hung past `mount_timeout` (a
    /// classic recovery bug, and a failure) or fsck could not run; the evidence says
    /// which.
    NoVerdict,
    /// The workload's own `check` (run in the recovered mount point) exited non-zero:
    /// the application found its data inconsistent.
    CheckFailed,
}

impl Verdict {
    pub const ALL: [Verdict; 6] = [
        Verdict::Ok,
        Verdict::Unmountable,
        Verdict::FsckDirty,
        Verdict::LostFsynced,
        Verdict::CheckFailed,
        Verdict::NoVerdict,
    ];

    /// Every verdict, worst first: how the report's words order a count by verdict
    /// (the tables keep [`Verdict::ALL`]'s columns).
    ///
    /// Why this order: `unmountable` first, since nothing on the file system can be
    /// reached until a repair, which may itself throw away more; `lost-fsynced` next, a
    /// broken promise: data an application was told is durable is gone, and nothing on
    /// the mounted file system says so; `check-failed`: the application's own check
    /// finds its data inconsistent, a loss it sees though fsync did not promise against
    /// it; `fsck-dirty`: the metadata needs a repair, yet every promise held and the
    /// file system mounted; `no-verdict` after every verdict that shows harm, since it
    /// shows none (a hang is a failure, but what it hides is unknown); `ok` last. The
    /// oracle (`crash::oracle`) decides a state that fits several the same way: a mount
    /// that fails ends the checks, a broken promise outranks the workload's own check,
    /// which outranks fsck.
    pub const BY_SEVERITY: [Verdict; 6] = [
        Verdict::Unmountable,
        Verdict::LostFsynced,
        Verdict::CheckFailed,
        Verdict::FsckDirty,
        Verdict::NoVerdict,
        Verdict::Ok,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Unmountable => "unmountable",
            Verdict::FsckDirty => "fsck-dirty",
            Verdict::LostFsynced => "lost-fsynced",
            Verdict::NoVerdict => "no-verdict",
            Verdict::CheckFailed => "check-failed",
        }
    }

    /// A verdict that says durability or consistency was broken.
    pub fn is_loss(self) -> bool {
        matches!(
            self,
            Verdict::Unmountable | Verdict::FsckDirty | Verdict::LostFsynced | Verdict::CheckFailed
        )
    }

    /// What a torn page does: the file system or the application's data is broken
    /// (not a promise missing, which a torn write does not cause).
    pub fn is_corruption(self) -> bool {
        matches!(
            self,
            Verdict::Unmountable | Verdict::FsckDirty | Verdict::CheckFailed
        )
    }

    /// A verdict that is not a pass: a loss, or a recovery that could not be judged
    /// (a hang is how many recovery bugs show).
    pub fn is_failure(self) -> bool {
        self.is_loss() || self == Verdict::NoVerdict
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The write a `torn` state cut short.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TornWrite {
    /// The write's `seq` in the log.
    pub seq: u64,
    /// Bytes of it kept (a multiple of the disk's logical block), of `len`.
    pub kept_bytes: u64,
    pub len: u64,
    /// The file whose data the first block left out holds (ext3/ext4, from the
    /// recording's block labels), and that block's byte offset in it: the page torn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_offset: Option<u64>,
}

impl TornWrite {
    /// "pgdata/base/5/16403 at 81920 (4096 of 8192 bytes kept)", when the file is
    /// known.
    pub fn page_words(&self) -> Option<String> {
        let file = self.file.as_ref()?;
        let at = self
            .file_offset
            .map(|o| format!(" at byte {o}"))
            .unwrap_or_default();
        Some(format!(
            "{file}{at} ({} of {} bytes of the write kept)",
            self.kept_bytes, self.len
        ))
    }
}

/// The last fsync marker before the cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsyncMark {
    pub seq: u64,
    /// The file's path relative to the file system's root.
    pub path: String,
}

/// What a `recover` command may say about the recovery it made, in the JSON file
/// named by `$JBENCH_APP_FACTS`, written before it says it is ready: how much of its
/// log it replayed, and the most its settings let that log hold (PostgreSQL: the WAL
/// from the checkpoint's redo point to the end of redo, and `max_wal_size`; Redis: the
/// AOF it loaded). The recovery model fits the time against `log_bytes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes_max: Option<u64>,
    /// Anything else the application reported, in its words ("redo 1.2 s; end-of-
    /// recovery checkpoint wrote 812 buffers in 3.4 s"): why a slow state was slow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Recovery timed with the emulated disks' model timing on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecoveryTimes {
    /// The mount, which replays the journal (ext3/ext4) or the log (XFS).
    pub mount_seconds: f64,
    /// `e2fsck -E journal_only` on the same state, unreplayed (ext3/ext4 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_only_seconds: Option<f64>,
    /// A full check (`e2fsck -f`, `xfs_repair -n`) after the replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_fsck_seconds: Option<f64>,
    /// File-system blocks logged in the committed transactions the replay applies
    /// (ext3/ext4: `debugfs -R "logdump -a"` on the state before the mount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_blocks: Option<u64>,
    /// Committed transactions the replay applies, from the same logdump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_transactions: Option<u64>,
    /// The application's own recovery after the mount (the workload's `recover`, from
    /// its start until the application was ready), with the same timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_seconds: Option<f64>,
    /// What the application said about that recovery: the log it replayed and the
    /// most its settings allow ([`AppFacts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<AppFacts>,
    /// What the timed mount asked of each emulated disk and what the model charged
    /// for it: why one placement replays slower than another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mount_io: Vec<DiskIo>,
}

/// One emulated disk's requests over a span, and the model's time for them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskIo {
    pub disk: String,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub seek_seconds: f64,
    pub rotation_seconds: f64,
    pub transfer_seconds: f64,
}

impl DiskIo {
    /// Per disk, the counters of `after` less those of `before` (the daemon's
    /// cumulative counters read at both ends of the span).
    pub fn between(
        before: &[crate::emu::daemon::DiskStats],
        after: &[crate::emu::daemon::DiskStats],
    ) -> Vec<DiskIo> {
        after
            .iter()
            .map(|a| {
                let b = before.iter().find(|b| b.name == a.name);
                let n = |f: fn(&crate::emu::daemon::DiskStats) -> u64| {
                    f(a).saturating_sub(b.map_or(0, f))
                };
                let x = |f: fn(&crate::emu::daemon::DiskStats) -> f64| {
                    (f(a) - b.map_or(0.0, f)).max(0.0)
                };
                DiskIo {
                    disk: a.name.clone(),
                    reads: n(|d| d.reads),
                    writes: n(|d| d.writes),
                    flushes: n(|d| d.flushes),
                    read_bytes: n(|d| d.read_bytes),
                    write_bytes: n(|d| d.write_bytes),
                    seek_seconds: x(|d| d.seek_seconds),
                    rotation_seconds: x(|d| d.rotation_seconds),
                    transfer_seconds: x(|d| d.transfer_seconds),
                }
            })
            .collect()
    }
}

/// What an ext3/ext4 journal holds at a state, read from the jbd2 blocks of the write
/// log: the committed transactions from the log tail on (those a replay walks) and
/// the journal blocks they occupy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalLive {
    pub transactions: u64,
    /// Descriptor, logged, revoke and commit blocks of those transactions.
    pub blocks: u64,
}

/// Recovery of a state whose `ram` journal disk came back empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LostJournal {
    /// The mount failed, as it must; the kernel's message (or why it did not fail).
    pub mount_failed: bool,
    pub mount_error: String,
    /// The documented procedure ran to the end and the file system mounted after it.
    pub recovered: bool,
    /// fsync'ed files missing afterwards.
    pub fsynced_missing: u64,
    /// fsync'ed files present with other content.
    pub fsynced_different: u64,
    /// Entries e2fsck put in lost+found.
    pub lost_found: u64,
    /// Problems e2fsck fixed (its output's fix lines).
    pub fsck_repairs: u64,
    /// The commands run and the first lines of what they said.
    pub evidence: Vec<String>,
    /// Whether this outcome is an earlier state's with the same input, taken
    /// (`hit`), or run again and compared (`audited`, `disagreed`); absent: the
    /// procedure ran as usual (`crash::lost_journal_memo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<CacheUse>,
}

/// One crash state (`crash.jsonl`).
/// How a state's application verdict came about, in its record (`check_cache`; `crash::verdict_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheUse {
    /// The check did not run: an earlier state with the same input passed it.
    Hit,
    /// A hit whose check ran anyway, and passed as the earlier state's did.
    Audited,
    /// A hit whose check ran anyway and did not agree: its own verdict stands, and
    /// the cache is off for the rest of the trial.
    Disagreed,
}

/// Who gave a state its verdict (`judged_by`; `crash::fast_path`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JudgedBy {
    /// Mount, promises, unmount, fsck: the kernel's path alone.
    Kernel,
    /// The user-space path alone: the journal replayed in memory, every promise read
    /// back; not mounted, no fsck.
    UserSpace,
    /// Both, agreeing on the promises; the verdict is the kernel's (fsck's included).
    Audited,
    /// Both, and they disagreed: the kernel's verdict stands.
    Disagreed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashRecord {
    pub schema: u32,
    /// The configuration's label.
    pub config: String,
    /// The workload's name.
    pub workload: String,
    /// The recorded trial whose write log the state comes from.
    pub trial: usize,
    /// The state's number within its configuration x workload.
    pub state: u64,
    pub strategy: String,
    /// Records with `seq < cut` are before the power cut.
    pub cut: u64,
    /// Write records before the cut kept in the state (flushes and markers not
    /// counted).
    pub kept: u64,
    /// Write records before the cut with at least one logical block left out (lost in
    /// a volatile cache).
    pub dropped: u64,
    /// Logical blocks left out.
    #[serde(default)]
    pub dropped_blocks: u64,
    /// The workload phase the cut falls in (`setup`, a phase, `teardown`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stratum: String,
    /// How much of this configuration x workload's state space the lab planned (the
    /// same in every record of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torn: Option<TornWrite>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fsync: Option<FsyncMark>,
    /// Promises the oracle checked (fsync'ed files, declared durable files, durable
    /// ranges).
    pub fsynced_files: u64,
    pub verdict: Verdict,
    /// Why: the oracle's steps and the first lines of the tools' output.
    #[serde(default)]
    pub evidence: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<RecoveryTimes>,
    /// The journal's live content at this state (ext3/ext4 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_live: Option<JournalLive>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_journal: Option<LostJournal>,
    /// Wall seconds to build, recover and check the state (model timing off).
    pub check_seconds: f64,
    // The configuration, for the report's tables and charts.
    pub filesystem: String,
    pub placement: String,
    pub mode: String,
    pub journal_size: u64,
    /// Inodes the file system has (its size decides full-fsck time).
    #[serde(default)]
    pub inodes: u64,
    /// The configuration is built to lose data (a disk that ignores flushes, or
    /// flushes turned off on a disk with a volatile cache): failures are expected.
    #[serde(default)]
    pub negative_control: bool,
    /// The configuration has no torn-page protection (`torn_page_control`): a negative
    /// control caught only by a failure at a torn write of file data.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub torn_page_control: bool,
    /// The workload makes promises (fsync'ed files, `durable` lines, synchronous
    /// writes) that were checked, or not (consistency only).
    #[serde(default)]
    pub checks_fsync: bool,
    /// The workload's own `check` ran on this state.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_check: bool,
    /// A recovery step hung past `mount_timeout` (the verdict is `no-verdict`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hung: bool,
    /// Application records (`durable-key`) promised before the cut.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub records_promised: u64,
    /// Of those, how many the workload's check listed missing (`$JBENCH_MISSING_KEYS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_lost: Option<u64>,
    /// Whether the application's verdict was reused from an earlier state with the
    /// same recovered content and promises (`hit`), or reused and checked anyway
    /// (`audited`, `disagreed`); absent: the check ran as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_cache: Option<CacheUse>,
    /// Who judged the state; absent in records from before the user-space path, whose
    /// states the kernel judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged_by: Option<JudgedBy>,
    /// Why the user-space path left a state it was asked to judge to the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_fallback: Option<String>,
    /// The user-space path's outcome digest (the first 8 bytes of the SHA-256 of
    /// everything it read, hex): states with the same outcome had the same input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How big a log's state space is, and how much of it the plan covers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "CoverageWire", into = "CoverageWire")]
pub struct Coverage {
    /// The strategies asked for, in order (`prefix`, `subset`, `torn`, `fill`).
    pub strategies: Vec<String>,
    /// Every strategy's space and planned states, by name (asked for or not: the space
    /// of each is measured either way).
    pub by_strategy: BTreeMap<String, StrategyCoverage>,
    /// Every state of every strategy asked for was planned.
    pub exhaustive: bool,
    /// Strata (workload phases) with at least one cut, and those the plan covers.
    pub strata: Vec<String>,
    pub strata_covered: Vec<String>,
    /// The files whose data the `torn-data` states tear, most torn first, each with
    /// its count of states ("base/5/16403 (12)"), the last entry "N more files" when
    /// there are more.
    pub torn_files: Vec<String>,
    /// `flush-subset`: flushes of synced files with a state right before them, and
    /// how many there were.
    pub synced_flushes: [u64; 2],
    /// The same per file, most flushes first: "pg_wal/…01 (12 of 12)", the last entry
    /// "N more files (a of b)" when there are more.
    pub flush_files: Vec<String>,
    /// `last-writes`: promises with a cut among their last writes, and how many
    /// promises had writes before them.
    pub promises_cut: [u64; 2],
}

/// One strategy's part of a [`Coverage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyCoverage {
    /// Distinct states it could build (an f64: a subset space of 2^200 still reads as
    /// one).
    pub space: f64,
    /// States it planned.
    pub planned: u64,
}

impl Coverage {
    /// Strategy `s`'s space (0 when not measured).
    pub fn space(&self, s: Strategy) -> f64 {
        self.by_strategy.get(s.as_str()).map_or(0.0, |c| c.space)
    }

    /// States planned of strategy `s`.
    pub fn planned(&self, s: Strategy) -> u64 {
        self.by_strategy.get(s.as_str()).map_or(0, |c| c.planned)
    }

    pub fn set_space(&mut self, s: Strategy, space: f64) {
        self.by_strategy
            .entry(s.as_str().to_string())
            .or_default()
            .space = space;
    }

    pub fn set_planned(&mut self, s: Strategy, planned: u64) {
        self.by_strategy
            .entry(s.as_str().to_string())
            .or_default()
            .planned = planned;
    }

    /// "checked N of M states (all prefix cuts; K of L subsets)".
    pub fn describe(&self, checked: u64) -> String {
        let (total, parts) = self.parts();
        format!("checked {checked} of {} states ({parts})", count(total))
    }

    /// "N crash states of M (all prefix cuts; K of L subsets)": the plan, before any
    /// state is checked.
    pub fn describe_plan(&self, planned: u64) -> String {
        let (total, parts) = self.parts();
        format!("{planned} crash states of {} ({parts})", count(total))
    }

    /// What `checked` states covered, short enough for a claim about them: "all 811
    /// states" when every state was built; otherwise what the rules that look where the
    /// danger is reached (the tears of file data, the flushes of synced files, the
    /// promises) and how many of the other states were sampled.
    pub fn scope(&self, checked: u64) -> String {
        let (total, _) = self.parts();
        if self.exhaustive {
            return format!("all {} states", count(total));
        }
        let asked = |s: Strategy| self.strategies.iter().any(|n| n == s.as_str());
        let mut said = Vec::new();
        let (mut space, mut planned) = (0f64, 0u64);
        for rule in [
            Strategy::TornData,
            Strategy::FlushSubset,
            Strategy::LastWrites,
        ] {
            if !asked(rule) {
                continue;
            }
            space += self.space(rule);
            planned += self.planned(rule);
            said.push(self.reached(rule));
        }
        if said.is_empty() {
            return format!("{checked} of {} states sampled", count(total));
        }
        said.push(format!(
            "{} of {} other states sampled",
            checked.saturating_sub(planned),
            count((total - space).max(0.0))
        ));
        said.join("; ")
    }

    /// What one of the rules that come first reached, in its own units.
    fn reached(&self, rule: Strategy) -> String {
        let (space, planned) = (self.space(rule), self.planned(rule));
        let [a, b] = match rule {
            Strategy::FlushSubset => self.synced_flushes,
            Strategy::LastWrites => self.promises_cut,
            _ => [planned, space as u64],
        };
        let unit = match rule {
            Strategy::TornData => "tears of file data",
            Strategy::FlushSubset => "flushes of synced files had a subset right before them",
            _ => "promises had a cut among their last writes",
        };
        if space == 0.0 || b == 0 {
            return rule.info().when_empty.unwrap_or("none").to_string();
        }
        if a >= b && rule == Strategy::TornData {
            return format!("all {} {unit}", count(space));
        }
        format!("{a} of {b} {unit}")
    }

    /// What a strategy's part adds to its count: the files torn, the flushes and
    /// promises reached.
    fn detail(&self, s: Strategy) -> String {
        match s {
            Strategy::TornData if !self.torn_files.is_empty() => {
                format!(", in {}", self.torn_files.join(", "))
            }
            Strategy::FlushSubset if self.synced_flushes[1] > 0 => format!(
                ", right before {} of {} flushes: {}",
                self.synced_flushes[0],
                self.synced_flushes[1],
                self.flush_files.join(", ")
            ),
            Strategy::LastWrites if self.promises_cut[1] > 0 => format!(
                ", before {} of {} promises",
                self.promises_cut[0], self.promises_cut[1]
            ),
            _ => String::new(),
        }
    }

    /// The whole space, and each strategy's part of it and of the plan.
    fn parts(&self) -> (f64, String) {
        let asked: Vec<Strategy> = self
            .strategies
            .iter()
            .filter_map(|s| Strategy::parse(s).ok())
            .collect();
        let mut parts = Vec::new();
        let mut total = 0f64;
        for &s in &asked {
            let info = s.info();
            let space = self.space(s);
            // States that are also another strategy's count in that one's planned.
            let planned = self.planned(s)
                + Strategy::ALL
                    .iter()
                    .filter(|t| t.info().states_of == Some(s))
                    .map(|&t| self.planned(t))
                    .sum::<u64>();
            // ...and in its total once, when both are asked for.
            if !info.states_of.is_some_and(|o| asked.contains(&o)) {
                total += space;
            }
            let mut part = match info.when_empty {
                Some(words) if space == 0.0 => words.to_string(),
                _ if planned as f64 >= space => format!("all {} {}", count(space), info.noun),
                _ => format!("{planned} of {} {}", count(space), info.noun),
            };
            part.push_str(&self.detail(s));
            parts.push(part);
        }
        (total, parts.join("; "))
    }
}

/// [`Coverage`] as `crash.jsonl` and the report's JSON hold it: a pair of fields per
/// strategy of schema 1 (older readers need them), and any later strategy in `more`.
#[derive(Serialize, Deserialize)]
struct CoverageWire {
    #[serde(default)]
    strategies: Vec<String>,
    #[serde(default)]
    prefix_space: u64,
    #[serde(default)]
    subset_space: f64,
    #[serde(default)]
    torn_space: u64,
    #[serde(default)]
    fill_space: u64,
    #[serde(default)]
    prefix_planned: u64,
    #[serde(default)]
    subset_planned: u64,
    #[serde(default)]
    torn_planned: u64,
    #[serde(default)]
    fill_planned: u64,
    exhaustive: bool,
    strata: Vec<String>,
    strata_covered: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    more: BTreeMap<String, StrategyCoverage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    torn_files: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero_pair")]
    synced_flushes: [u64; 2],
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    flush_files: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero_pair")]
    promises_cut: [u64; 2],
}

fn is_zero_pair(p: &[u64; 2]) -> bool {
    *p == [0, 0]
}

/// The strategies schema 1 gave a pair of fields each.
const WIRE_FIELDS: [Strategy; 4] = [
    Strategy::Prefix,
    Strategy::Subset,
    Strategy::Torn,
    Strategy::Fill,
];

impl From<CoverageWire> for Coverage {
    fn from(w: CoverageWire) -> Self {
        let mut by_strategy = w.more;
        let pairs = [
            (w.prefix_space as f64, w.prefix_planned),
            (w.subset_space, w.subset_planned),
            (w.torn_space as f64, w.torn_planned),
            (w.fill_space as f64, w.fill_planned),
        ];
        for (s, (space, planned)) in WIRE_FIELDS.into_iter().zip(pairs) {
            by_strategy.insert(s.as_str().to_string(), StrategyCoverage { space, planned });
        }
        Coverage {
            strategies: w.strategies,
            by_strategy,
            exhaustive: w.exhaustive,
            strata: w.strata,
            strata_covered: w.strata_covered,
            torn_files: w.torn_files,
            synced_flushes: w.synced_flushes,
            flush_files: w.flush_files,
            promises_cut: w.promises_cut,
        }
    }
}

impl From<Coverage> for CoverageWire {
    fn from(c: Coverage) -> Self {
        let mut more = c.by_strategy.clone();
        for s in WIRE_FIELDS {
            more.remove(s.as_str());
        }
        // Counts kept as integers where schema 1 had them (exact below 2^53).
        let int = |s: Strategy| c.space(s) as u64;
        CoverageWire {
            strategies: c.strategies.clone(),
            prefix_space: int(Strategy::Prefix),
            subset_space: c.space(Strategy::Subset),
            torn_space: int(Strategy::Torn),
            fill_space: int(Strategy::Fill),
            prefix_planned: c.planned(Strategy::Prefix),
            subset_planned: c.planned(Strategy::Subset),
            torn_planned: c.planned(Strategy::Torn),
            fill_planned: c.planned(Strategy::Fill),
            exhaustive: c.exhaustive,
            strata: c.strata,
            strata_covered: c.strata_covered,
            more,
            torn_files: c.torn_files,
            synced_flushes: c.synced_flushes,
            flush_files: c.flush_files,
            promises_cut: c.promises_cut,
        }
    }
}

/// A state count as a person reads it: exact while it is an integer f64 holds, then
/// in powers of ten.
pub fn count(n: f64) -> String {
    if n < 1e15 {
        format!("{}", n as u64)
    } else if n.is_finite() {
        format!("~1e{}", n.log10().floor() as i64)
    } else {
        "more than 1e300".into()
    }
}

/// Reads `crash.jsonl`; a missing file is no records. A torn last line (an
/// interrupted run) is skipped; any other bad line is an error naming it.
pub fn load_crash_records(path: &Path) -> Result<Vec<CrashRecord>> {
    use std::os::unix::fs::OpenOptionsExt;
    // Never through a link, and never a FIFO or device that would block the report.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !file.metadata()?.is_file() {
        anyhow::bail!(
            "{} is not a regular file; refusing to read it",
            path.display()
        );
    }
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<CrashRecord>(line) {
            Ok(r) => out.push(r),
            Err(_) if i == last => break,
            Err(e) => return Err(e).with_context(|| format!("{} line {}", path.display(), i + 1)),
        }
    }
    Ok(out)
}

/// Appends one record to `crash.jsonl` and forces it to disk, so an interrupted lab
/// loses nothing it judged. The file is made 0600 and never followed through a link.
pub fn append_crash_record(path: &Path, record: &CrashRecord) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut line = serde_json::to_vec(record)?;
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(&line)
        .and_then(|_| f.sync_data())
        .with_context(|| format!("cannot write {}", path.display()))
}

impl CrashRecord {
    /// The failure this state's negative control exists to show: what fsync promised
    /// lost, or, for a torn-page control, a corruption at a torn page.
    pub fn shows_control_failure(&self) -> bool {
        if self.torn_page_control {
            self.breaks_at_torn_page()
        } else {
            self.verdict == Verdict::LostFsynced
        }
    }

    /// The state tore a write of file data and came back corrupt (unmountable,
    /// fsck-dirty or check-failed): what a torn page does.
    pub fn breaks_at_torn_page(&self) -> bool {
        self.verdict.is_corruption() && self.torn.as_ref().is_some_and(|t| t.file.is_some())
    }
}

/// A plain `ok` record of one prefix state, for other modules' tests to change.
#[cfg(test)]
impl CrashRecord {
    pub(crate) fn test_default() -> Self {
        tests::record(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// crash.jsonl keeps schema 1's fields, in their order, whatever the struct holds;
    /// a later strategy goes in `more`, and both read back.
    #[test]
    fn coverage_reads_and_writes_schema_1s_fields() {
        let line = r#"{"strategies":["prefix","subset","torn","fill"],"prefix_space":12,"subset_space":1e+40,"torn_space":7,"fill_space":3,"prefix_planned":5,"subset_planned":6,"torn_planned":7,"fill_planned":3,"exhaustive":false,"strata":["a","b"],"strata_covered":["a"]}"#;
        let cov: Coverage = serde_json::from_str(line).unwrap();
        assert_eq!(cov.space(Strategy::Subset), 1e40);
        assert_eq!(cov.planned(Strategy::Fill), 3);
        assert_eq!(serde_json::to_string(&cov).unwrap(), line);
        let mut more = cov.clone();
        more.by_strategy.insert(
            "zigzag".into(),
            StrategyCoverage {
                space: 4.0,
                planned: 2,
            },
        );
        let text = serde_json::to_string(&more).unwrap();
        assert!(
            text.ends_with(r#""more":{"zigzag":{"space":4.0,"planned":2}}}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Coverage>(&text).unwrap(), more);
        assert_eq!(
            cov.describe(21),
            "checked 21 of ~1e40 states (8 of 12 prefix cuts; 6 of ~1e40 subsets; all 7 torn writes; all 3 cuts with journal content)"
        );
    }

    #[test]
    fn disk_io_is_what_each_disk_did_between_two_readings() {
        use crate::emu::daemon::DiskStats;
        let disk = |name: &str, reads: u64, rotation: f64| DiskStats {
            name: name.into(),
            reads,
            read_bytes: reads * 4096,
            rotation_seconds: rotation,
            ..DiskStats::default()
        };
        let before = [disk("fs", 10, 0.5)];
        let after = [disk("fs", 25, 1.25), disk("journal", 7, 0.25)];
        let io = DiskIo::between(&before, &after);
        assert_eq!(io.len(), 2);
        assert_eq!(
            (io[0].disk.as_str(), io[0].reads, io[0].read_bytes),
            ("fs", 15, 15 * 4096)
        );
        assert!((io[0].rotation_seconds - 0.75).abs() < 1e-12);
        // A disk not read before counts from zero.
        assert_eq!((io[1].disk.as_str(), io[1].reads), ("journal", 7));
        // Counters never go backwards: a restarted daemon reads as nothing done.
        let io = DiskIo::between(&after, &before);
        assert_eq!((io[0].reads, io[0].rotation_seconds), (0, 0.0));
    }

    pub(super) fn record(state: u64) -> CrashRecord {
        CrashRecord {
            schema: CRASH_SCHEMA_VERSION,
            config: "same-disk".into(),
            workload: "fsync".into(),
            trial: 0,
            state,
            strategy: "prefix".into(),
            cut: 10 + state,
            kept: 8,
            dropped: 0,
            torn: None,
            last_fsync: None,
            fsynced_files: 3,
            verdict: Verdict::Ok,
            evidence: vec!["mount: ok".into()],
            timings: None,
            journal_live: None,
            lost_journal: None,
            check_seconds: 1.5,
            filesystem: "ext4".into(),
            placement: "same-disk".into(),
            mode: "ordered".into(),
            journal_size: 16 << 20,
            inodes: 1024,
            negative_control: false,
            torn_page_control: false,
            checks_fsync: true,
            dropped_blocks: 0,
            stratum: String::new(),
            coverage: None,
            user_check: false,
            hung: false,
            records_promised: 0,
            records_lost: None,
            check_cache: None,
            judged_by: None,
            fast_fallback: None,
            outcome: None,
        }
    }

    fn line(state: u64) -> String {
        serde_json::to_string(&record(state)).unwrap()
    }

    fn load(text: &str) -> Result<Vec<CrashRecord>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.jsonl");
        std::fs::write(&path, text).unwrap();
        load_crash_records(&path)
    }

    #[test]
    fn severity_orders_every_verdict_once_failures_first() {
        let mut sorted = Verdict::BY_SEVERITY;
        sorted.sort();
        let mut all = Verdict::ALL;
        all.sort();
        assert_eq!(sorted, all, "every verdict exactly once");
        let failures = Verdict::ALL.iter().filter(|v| v.is_failure()).count();
        assert!(Verdict::BY_SEVERITY[..failures]
            .iter()
            .all(|v| v.is_failure()));
        assert_eq!(Verdict::BY_SEVERITY[failures..], [Verdict::Ok]);
        assert_eq!(Verdict::BY_SEVERITY[0], Verdict::Unmountable);
    }

    #[test]
    fn a_missing_file_is_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let got = load_crash_records(&dir.path().join("crash.jsonl")).unwrap();
        assert!(got.is_empty());
    }

    #[test]
    fn records_round_trip_and_blank_lines_are_skipped() {
        let text = format!("{}\n\n{}\n", line(0), line(1));
        assert_eq!(load(&text).unwrap(), vec![record(0), record(1)]);
    }

    #[test]
    fn a_torn_last_line_is_skipped() {
        // Cut inside the record, with and without the newline an interrupted
        // append may or may not have written.
        let torn = &line(2)[..40];
        for tail in [torn.to_string(), format!("{torn}\n")] {
            let text = format!("{}\n{}\n{tail}", line(0), line(1));
            assert_eq!(load(&text).unwrap(), vec![record(0), record(1)], "{tail:?}");
        }
    }

    #[test]
    fn a_bad_line_before_the_last_is_an_error_naming_it() {
        let text = format!("{}\n{{\"schema\": 1, \"config\": \n{}\n", line(0), line(2));
        let e = load(&text).unwrap_err();
        let msg = format!("{e:#}");
        assert!(msg.contains("crash.jsonl line 2"), "{msg}");
        // A record missing a required field is as bad as broken JSON.
        let mut v: serde_json::Value = serde_json::from_str(&line(1)).unwrap();
        v.as_object_mut().unwrap().remove("verdict");
        let text = format!("{}\n{v}\n{}\n", line(0), line(2));
        let msg = format!("{:#}", load(&text).unwrap_err());
        assert!(msg.contains("line 2") && msg.contains("verdict"), "{msg}");
    }
}
