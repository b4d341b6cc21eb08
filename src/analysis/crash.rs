//! The figures of a report's crash section, from `crash.jsonl` ([`CrashRecord`]): per
//! (configuration, workload), the states tested per strategy, the oracle's verdicts,
//! how fast states were checked, recovery times, what recovering from a lost journal
//! cost, and the typed findings the report warns about (a negative control the oracle
//! did not catch, a state of an ordinary configuration that is not `ok`). Typed only:
//! `report/crash.rs` writes the words.

use serde::{Deserialize, Serialize};

use super::stats::quantile;
use crate::results::crash::{CrashRecord, JournalLive, Verdict};

/// One configuration x workload of the crash lab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashAnalysis {
    /// The configuration's label.
    pub config: String,
    /// The workload's name.
    pub workload: String,
    // The configuration as its first record states it.
    pub filesystem: String,
    pub placement: String,
    pub mode: String,
    /// Journal bytes.
    pub journal_size: u64,
    pub inodes: u64,
    /// Any record says the configuration is built to lose data.
    pub negative_control: bool,
    /// Any record says it is a torn-page control (no torn-page protection).
    #[serde(default)]
    pub torn_page_control: bool,
    /// States that came back corrupt at a torn write of file data, and the first few
    /// pages they tore
    /// ("pgdata/base/5/16403 at byte 81920 (4096 of 8192 bytes of the write kept)").
    #[serde(default)]
    pub torn_page_failures: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub torn_pages: Vec<String>,
    /// Every record says the workload's fsync'ed files were checked; `false`: the
    /// states were checked for consistency only.
    pub checks_fsync: bool,
    /// Crash states checked.
    pub states: usize,
    /// States per strategy, in order of first appearance.
    pub strategies: Vec<StrategyCount>,
    pub verdicts: VerdictCounts,
    /// Sum of the states' `check_seconds`.
    pub check_seconds: f64,
    /// `states / check_seconds`; `None` when no time was recorded.
    pub states_per_sec: Option<f64>,
    /// Over the states timed with model timing on; `None` when none was.
    pub recovery: Option<RecoveryStats>,
    /// The timed states' recovery against the journal's live blocks: the worst, the
    /// fitted cost per block and the prediction at the fullest journal; `None` when no
    /// timed state records its live journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_model: Option<super::recovery_model::RecoveryModel>,
    /// The application's recovery against the log it replayed, where its `recover`
    /// said how much that was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_recovery_model: Option<super::app_recovery_model::AppRecoveryModel>,
    /// Over the states whose journal disk came back empty; `None` when none did.
    pub lost_journal: Option<LostJournalStats>,
    /// For a negative control, whether the oracle caught it; `None` otherwise.
    pub control: Option<ControlOutcome>,
    /// The lowest-numbered state whose verdict is not `ok`, if any.
    pub first_not_ok: Option<StateRef>,
    /// How much of the state space was planned (from the records); `None` for records
    /// written before coverage was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<crate::results::crash::Coverage>,
    /// States the workload's own `check` ran on.
    #[serde(default)]
    pub user_checks: usize,
    /// Who judged the states (`judged_by`): the user-space path alone, the kernel
    /// auditing it, the kernel alone; zero everywhere for records from before it.
    #[serde(default)]
    pub judged: JudgedCounts,
    /// States whose recovery hung past `mount_timeout`.
    #[serde(default)]
    pub hung: usize,
    /// The journal's live content over the states that record it (ext3/ext4); `None`
    /// when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_live: Option<LiveStats>,
    /// The same per strategy, in order of first appearance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal_live_by_strategy: Vec<StrategyLive>,
    /// The most application records (`durable-key`) promised before one state's cut:
    /// 0 when the workload promised none.
    #[serde(default)]
    pub records_promised_max: u64,
    /// The most promised records one state lost, as its check listed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_lost_max: Option<u64>,
}

impl CrashAnalysis {
    /// "checked N of M states (all prefix cuts; K of L subsets)", when known.
    pub fn coverage_line(&self) -> Option<String> {
        let cov = self.coverage.as_ref()?;
        Some(cov.describe(self.states as u64))
    }
}

impl CrashAnalysis {
    /// States whose verdict is not `ok`.
    pub fn not_ok(&self) -> usize {
        self.states - self.verdicts.ok
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyCount {
    pub strategy: String,
    pub states: usize,
}

/// States per verdict, every verdict present (zeros included). Keys in JSON are the
/// verdicts as `crash.jsonl` writes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VerdictCounts {
    pub ok: usize,
    pub unmountable: usize,
    pub fsck_dirty: usize,
    pub lost_fsynced: usize,
    #[serde(default)]
    pub check_failed: usize,
    pub no_verdict: usize,
}

impl VerdictCounts {
    pub fn get(&self, v: Verdict) -> usize {
        match v {
            Verdict::Ok => self.ok,
            Verdict::Unmountable => self.unmountable,
            Verdict::FsckDirty => self.fsck_dirty,
            Verdict::LostFsynced => self.lost_fsynced,
            Verdict::NoVerdict => self.no_verdict,
            Verdict::CheckFailed => self.check_failed,
        }
    }

    fn slot(&mut self, v: Verdict) -> &mut usize {
        match v {
            Verdict::Ok => &mut self.ok,
            Verdict::Unmountable => &mut self.unmountable,
            Verdict::FsckDirty => &mut self.fsck_dirty,
            Verdict::LostFsynced => &mut self.lost_fsynced,
            Verdict::NoVerdict => &mut self.no_verdict,
            Verdict::CheckFailed => &mut self.check_failed,
        }
    }

    /// States whose verdict says durability or consistency was broken.
    pub fn failures(&self) -> usize {
        Verdict::ALL
            .iter()
            .filter(|v| v.is_failure())
            .map(|v| self.get(*v))
            .sum()
    }
}

/// Order statistics of one recovery time, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeStats {
    pub n: usize,
    pub median: f64,
    /// 95th percentile, interpolated between ranks ([`quantile`]).
    pub p95: f64,
    pub min: f64,
    pub max: f64,
}

impl TimeStats {
    /// `None` without values (or with a non-finite one).
    pub fn of(xs: &[f64]) -> Option<TimeStats> {
        Some(TimeStats {
            n: xs.len(),
            median: quantile(xs, 0.5)?,
            p95: quantile(xs, 0.95)?,
            min: xs.iter().copied().fold(f64::INFINITY, f64::min),
            max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// Recovery times of the timed states. Each measure has its own `n`: `journal_only`
/// exists for ext3/ext4 only, and a step that failed has no time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecoveryStats {
    /// States with timings.
    pub timed: usize,
    /// The mount, which replays the journal.
    pub mount: Option<TimeStats>,
    /// `e2fsck -E journal_only` on the unreplayed state.
    pub journal_only: Option<TimeStats>,
    /// A full check after the replay.
    pub full_fsck: Option<TimeStats>,
    /// File-system blocks the replay applied (ext3/ext4).
    #[serde(default)]
    pub replayed_blocks: Option<CountStats>,
    /// Transactions the replay applied (ext3/ext4).
    #[serde(default)]
    pub replayed_transactions: Option<CountStats>,
    /// The application's own recovery after the mount (a workload with `recover`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<TimeStats>,
}

/// Order statistics of a count over states.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CountStats {
    pub n: usize,
    pub median: f64,
    /// 95th percentile, interpolated between ranks ([`quantile`]).
    pub p95: f64,
    pub max: u64,
}

impl CountStats {
    /// `None` without values.
    pub fn of(xs: &[u64]) -> Option<CountStats> {
        let f: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
        Some(CountStats {
            n: xs.len(),
            median: quantile(&f, 0.5)?,
            p95: quantile(&f, 0.95)?,
            max: xs.iter().copied().max()?,
        })
    }
}

/// What the journal held at the states: the committed transactions a replay walks
/// and the journal blocks they occupy (each record's `journal_live`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LiveStats {
    pub states: usize,
    pub transactions_median: f64,
    pub transactions_max: u64,
    pub blocks_median: f64,
    pub blocks_max: u64,
}

impl LiveStats {
    /// `None` without values.
    pub fn of(lives: &[JournalLive]) -> Option<LiveStats> {
        let tx: Vec<f64> = lives.iter().map(|l| l.transactions as f64).collect();
        let blocks: Vec<f64> = lives.iter().map(|l| l.blocks as f64).collect();
        Some(LiveStats {
            states: lives.len(),
            transactions_median: quantile(&tx, 0.5)?,
            transactions_max: lives.iter().map(|l| l.transactions).max()?,
            blocks_median: quantile(&blocks, 0.5)?,
            blocks_max: lives.iter().map(|l| l.blocks).max()?,
        })
    }
}

/// [`LiveStats`] of one strategy's states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyLive {
    pub strategy: String,
    pub live: LiveStats,
}

/// A total and the largest value of one state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub total: u64,
    pub max: u64,
}

impl Tally {
    fn add(&mut self, x: u64) {
        self.total = self.total.saturating_add(x);
        self.max = self.max.max(x);
    }
}

/// Recovery of the states whose `ram` journal disk came back empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LostJournalStats {
    /// States tried.
    pub states: usize,
    /// Mounts that failed, as they must without the journal.
    pub mount_failed: usize,
    /// States the documented procedure brought back to a mountable file system.
    pub recovered: usize,
    pub fsynced_missing: Tally,
    pub fsynced_different: Tally,
    pub lost_found: Tally,
    pub fsck_repairs: Tally,
}

/// What became of a configuration built to lose data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlOutcome {
    /// At least one state has a failure verdict: the oracle sees lost data.
    FailedAsItShould,
    /// No state failed: the oracle (or the states) missed what the configuration
    /// was built to lose.
    NotCaught,
}

/// One state, named for a warning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateRef {
    pub state: u64,
    pub trial: usize,
    pub strategy: String,
    pub verdict: Verdict,
    /// The first line of its evidence; empty when it has none.
    pub evidence: String,
}

/// The crash section's figures, per (configuration, workload) in order of first
/// appearance in `records`.
pub fn analyse_crash(records: &[CrashRecord]) -> Vec<CrashAnalysis> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in records {
        let k = (r.config.as_str(), r.workload.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(config, workload)| {
            let of: Vec<&CrashRecord> = records
                .iter()
                .filter(|r| r.config == config && r.workload == workload)
                .collect();
            analyse_group(&of)
        })
        .collect()
}

fn analyse_group(recs: &[&CrashRecord]) -> CrashAnalysis {
    let first = recs[0];
    let mut strategies: Vec<StrategyCount> = Vec::new();
    let mut verdicts = VerdictCounts::default();
    for r in recs {
        match strategies.iter_mut().find(|s| s.strategy == r.strategy) {
            Some(s) => s.states += 1,
            None => strategies.push(StrategyCount {
                strategy: r.strategy.clone(),
                states: 1,
            }),
        }
        *verdicts.slot(r.verdict) += 1;
    }
    let check_seconds: f64 = recs.iter().map(|r| r.check_seconds).sum();
    let states_per_sec = (check_seconds.is_finite() && check_seconds > 0.0)
        .then(|| recs.len() as f64 / check_seconds);
    let negative_control = recs.iter().any(|r| r.negative_control);
    // A negative control is caught only by the failure it exists to show: a lying
    // disk or `barrier=0` loses what fsync promised. Any other failure (a hang, an
    // unmountable state) is not that proof.
    let torn_page_control = recs.iter().any(|r| r.torn_page_control);
    let torn_failed: Vec<&CrashRecord> = recs
        .iter()
        .copied()
        .filter(|r| r.breaks_at_torn_page())
        .collect();
    let mut torn_pages: Vec<String> = Vec::new();
    for r in &torn_failed {
        let words = r.torn.as_ref().and_then(|t| t.page_words());
        if let Some(w) = words {
            if !torn_pages.contains(&w) && torn_pages.len() < 3 {
                torn_pages.push(w);
            }
        }
    }
    // A torn-page control is caught only by a failure at a torn write of file data.
    let caught = recs.iter().any(|r| r.shows_control_failure());
    let control = negative_control.then_some(if caught {
        ControlOutcome::FailedAsItShould
    } else {
        ControlOutcome::NotCaught
    });
    let first_not_ok = recs
        .iter()
        .filter(|r| r.verdict != Verdict::Ok)
        .min_by_key(|r| (r.state, r.trial))
        .map(|r| StateRef {
            state: r.state,
            trial: r.trial,
            strategy: r.strategy.clone(),
            verdict: r.verdict,
            evidence: first_evidence_line(&r.evidence),
        });
    let journal_live_by_strategy = strategies
        .iter()
        .filter_map(|s| {
            let lives: Vec<JournalLive> = recs
                .iter()
                .filter(|r| r.strategy == s.strategy)
                .filter_map(|r| r.journal_live)
                .collect();
            Some(StrategyLive {
                strategy: s.strategy.clone(),
                live: LiveStats::of(&lives)?,
            })
        })
        .collect();
    CrashAnalysis {
        config: first.config.clone(),
        workload: first.workload.clone(),
        filesystem: first.filesystem.clone(),
        placement: first.placement.clone(),
        mode: first.mode.clone(),
        journal_size: first.journal_size,
        inodes: first.inodes,
        negative_control,
        torn_page_control,
        torn_page_failures: torn_failed.len(),
        torn_pages,
        checks_fsync: recs.iter().all(|r| r.checks_fsync),
        states: recs.len(),
        strategies,
        verdicts,
        check_seconds,
        states_per_sec,
        recovery: recovery(recs),
        recovery_model: super::recovery_model::fit(recs),
        app_recovery_model: super::app_recovery_model::fit(recs),
        lost_journal: lost_journal(recs),
        control,
        first_not_ok,
        coverage: recs.iter().find_map(|r| r.coverage.clone()),
        user_checks: recs.iter().filter(|r| r.user_check).count(),
        judged: JudgedCounts::of(recs),
        hung: recs.iter().filter(|r| r.hung).count(),
        journal_live: LiveStats::of(
            &recs
                .iter()
                .filter_map(|r| r.journal_live)
                .collect::<Vec<_>>(),
        ),
        journal_live_by_strategy,
        records_promised_max: recs.iter().map(|r| r.records_promised).max().unwrap_or(0),
        records_lost_max: recs.iter().filter_map(|r| r.records_lost).max(),
    }
}

/// The first non-blank line of the evidence (its steps may be multi-line).
fn first_evidence_line(evidence: &[String]) -> String {
    evidence
        .iter()
        .flat_map(|e| e.lines())
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

fn recovery(recs: &[&CrashRecord]) -> Option<RecoveryStats> {
    let timed: Vec<_> = recs.iter().filter_map(|r| r.timings.as_ref()).collect();
    if timed.is_empty() {
        return None;
    }
    let mount: Vec<f64> = timed.iter().map(|t| t.mount_seconds).collect();
    let journal_only: Vec<f64> = timed
        .iter()
        .filter_map(|t| t.journal_only_seconds)
        .collect();
    let full_fsck: Vec<f64> = timed.iter().filter_map(|t| t.full_fsck_seconds).collect();
    let blocks: Vec<u64> = timed.iter().filter_map(|t| t.replayed_blocks).collect();
    let transactions: Vec<u64> = timed
        .iter()
        .filter_map(|t| t.replayed_transactions)
        .collect();
    Some(RecoveryStats {
        timed: timed.len(),
        mount: TimeStats::of(&mount),
        journal_only: TimeStats::of(&journal_only),
        full_fsck: TimeStats::of(&full_fsck),
        replayed_blocks: CountStats::of(&blocks),
        replayed_transactions: CountStats::of(&transactions),
        application: TimeStats::of(
            &timed
                .iter()
                .filter_map(|t| t.application_seconds)
                .collect::<Vec<_>>(),
        ),
    })
}

fn lost_journal(recs: &[&CrashRecord]) -> Option<LostJournalStats> {
    let mut out = LostJournalStats::default();
    for l in recs.iter().filter_map(|r| r.lost_journal.as_ref()) {
        out.states += 1;
        out.mount_failed += usize::from(l.mount_failed);
        out.recovered += usize::from(l.recovered);
        out.fsynced_missing.add(l.fsynced_missing);
        out.fsynced_different.add(l.fsynced_different);
        out.lost_found.add(l.lost_found);
        out.fsck_repairs.add(l.fsck_repairs);
    }
    (out.states > 0).then_some(out)
}

/// How many states each judge gave their verdict (`crash::fast_path`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgedCounts {
    pub user_space: usize,
    pub audited: usize,
    pub disagreed: usize,
    /// Sent to the user-space path and left to the kernel (`fast_fallback`).
    pub fell_back: usize,
}

impl JudgedCounts {
    fn of(recs: &[&CrashRecord]) -> Self {
        use crate::results::crash::JudgedBy;
        let n = |b: JudgedBy| recs.iter().filter(|r| r.judged_by == Some(b)).count();
        Self {
            user_space: n(JudgedBy::UserSpace),
            audited: n(JudgedBy::Audited),
            disagreed: n(JudgedBy::Disagreed),
            fell_back: recs.iter().filter(|r| r.fast_fallback.is_some()).count(),
        }
    }

    /// Whether the user-space path gave any state its verdict.
    pub fn by_user_space(&self) -> bool {
        self.user_space + self.audited + self.disagreed > 0
    }

    /// "26 judged by the kernel, 374 in user space (20 of them also by the kernel, all
    /// agreeing)", for the answer's line; `None` when the path judged nothing.
    pub fn brief(&self, states: usize) -> Option<String> {
        let fast = self.user_space + self.audited + self.disagreed;
        if fast == 0 {
            return None;
        }
        Some(format!(
            "{} judged by the kernel, {fast} in user space ({} of them also by the kernel, {})",
            states - fast,
            self.audited + self.disagreed,
            match self.disagreed {
                0 => "all agreeing".to_string(),
                d => format!("{d} DISAGREEING: the kernel's verdicts stand"),
            }
        ))
    }

    /// "judged in user space: 150 (20 of them audited by the kernel, all agreeing;
    /// fsck ran only on the audited and the kernel-judged)"; `None` when the path
    /// judged nothing.
    pub fn words(&self, states: usize) -> Option<String> {
        let fast = self.user_space + self.audited + self.disagreed;
        if fast == 0 && self.fell_back == 0 {
            return None;
        }
        let mut s = format!(
            "{fast} of {states} states judged in user space (journal replayed in memory, promises read back), {} of them also by the kernel{}; the other {} by the kernel alone; fsck ran on {} of {states}",
            self.audited + self.disagreed,
            if self.disagreed > 0 {
                format!(", {} DISAGREEING (the kernel's verdicts stand)", self.disagreed)
            } else {
                ", all agreeing".into()
            },
            states - fast,
            states - self.user_space,
        );
        if self.fell_back > 0 {
            s.push_str(&format!(
                "; {} left to the kernel by the user-space path (fast_fallback says why)",
                self.fell_back
            ));
        }
        Some(s)
    }
}
