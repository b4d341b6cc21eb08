//! The answer with both halves, for a run with crash states: per workload and
//! configuration, how fast (the summary's mean rate and ratio to the next slower
//! configuration, with its interval), how safe (crash states checked and how many
//! failed, by verdict), how long recovery takes (the replaying mount and the full
//! fsck, median and 95th percentile) and what a lost RAM-disk journal costs. Joined
//! from [`super::summary`] and [`super::crash`]: no new statistics, so the answer can
//! never disagree with the sections below it. Typed only; `report/answer.rs` words it.

use serde::{Deserialize, Serialize};

use super::crash::{CrashAnalysis, LostJournalStats, VerdictCounts};
use super::model::{Analysis, WorkloadAnalysis};
use super::recovery_model::RecoveryModel;
use super::summary::Ratio;
use crate::emu::PowerCut;

/// One workload's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadAnswer {
    pub workload: String,
    /// The phase the speed half is measured on, and its rate unit; `None` when no
    /// configuration has a timed trial of this workload.
    pub main_phase: Option<String>,
    pub rate_unit: Option<String>,
    /// The configuration the others are compared with ([`ConfigAnswer::vs_baseline`]).
    #[serde(default)]
    pub baseline: Option<String>,
    /// The summary's order (fastest first), then configurations with crash states only.
    pub configs: Vec<ConfigAnswer>,
}

/// One configuration's speed, safety and recovery on one workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigAnswer {
    pub config: String,
    /// Mean rate on the main phase; `None` without a timed trial.
    pub rate_mean: Option<f64>,
    /// Timed trials behind `rate_mean`.
    pub trials: usize,
    /// Against the next slower configuration (the summary's ratio, interval and p);
    /// `None` for the slowest.
    pub versus: Option<Ratio>,
    /// Against the workload's baseline, as the primary family decided it; `None` for
    /// the baseline itself and without a test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<super::versus::VersusBaseline>,
    /// What a power cut does to the journal's device: a RAM disk's is emptied, and
    /// every word about this configuration's power cuts follows that.
    #[serde(default)]
    pub journal_power_cut: PowerCut,
    /// The summary's marks: the main phase is suspect here or in the configuration
    /// compared with, and the emulated disk whose service time was mostly the path's.
    #[serde(default)]
    pub suspect: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bound: Option<crate::analysis::PathBound>,
    /// Crash states checked; 0 without crash states.
    pub crash_states: usize,
    /// States whose verdict is a failure (lost data, inconsistent, no verdict).
    pub crash_failures: usize,
    pub verdicts: VerdictCounts,
    /// The configuration is built to lose data: its failures are the point.
    pub negative_control: bool,
    /// A torn-page control: caught only by a failure at a torn write of file data.
    #[serde(default)]
    pub torn_page_control: bool,
    /// Failed states at a torn write of file data, and the first pages they tore.
    #[serde(default)]
    pub torn_page_failures: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub torn_pages: Vec<String>,
    /// What the states covered, in the words a claim about them needs: "all 20 tears
    /// of file data; 180 of ~1e300 other states sampled" ([`Coverage::scope`]);
    /// `None` for records without coverage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covered: Option<String>,
    /// Who judged the states, when the user-space path judged any
    /// ([`super::crash::JudgedCounts::brief`] says it). Every figure beside it comes
    /// from the kernel's verdicts or from the user-space path's, which the kernel
    /// audits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<super::crash::JudgedCounts>,
    /// The states were checked against what the workload promised (fsync'ed files,
    /// durable lines, synchronous writes); `false`: consistency only.
    pub checks_promises: bool,
    /// The mount that replays the journal, with the disks' model timing on: states
    /// timed, median, 95th percentile (seconds).
    pub recovery_timed: usize,
    pub replay_median_s: Option<f64>,
    pub replay_p95_s: Option<f64>,
    /// A full fsck after the replay (`e2fsck -f`, `xfs_repair -n`), median seconds.
    pub fsck_median_s: Option<f64>,
    /// The file system's recovery to plan on: the worst timed, and the larger of that
    /// and the upper end of the prediction at the fullest journal
    /// ([`RecoveryModel::plan_s`]), with the model they come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_worst_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_plan_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_model: Option<RecoveryModel>,
    /// Where the journal is on a `ram` disk: recovery with that disk empty.
    pub lost_journal: Option<LostJournalStats>,
    /// The application's own recovery after the file system's (a workload with
    /// `recover`), with the disks' model timing on: median and worst of the timed states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_recovery_median_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_recovery_max_s: Option<f64>,
    /// The application's recovery against the log it replayed, and what to plan on
    /// ([`super::app_recovery_model::AppRecoveryModel::plan_s`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_recovery_model: Option<super::app_recovery_model::AppRecoveryModel>,
    /// The most application records promised before one cut (0: the workload
    /// promised files, or nothing), and the most one state lost.
    #[serde(default)]
    pub records_promised_max: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_lost_max: Option<u64>,
}

impl ConfigAnswer {
    /// Most fsync'ed files one state lost (missing or different) with the journal lost.
    pub fn lost_journal_fsynced_max(&self) -> Option<u64> {
        let l = self.lost_journal.as_ref()?;
        Some(l.fsynced_missing.max.max(l.fsynced_different.max))
    }
}

/// The answer of `a`: its summaries joined to its crash section (empty without crash
/// states). Made on demand, not kept in the [`Analysis`], so the answer depends on the
/// analysis and never the other way round.
pub fn of(a: &Analysis) -> Vec<WorkloadAnswer> {
    answers(&a.workloads, &a.crash)
}

/// The answers of every workload with crash states or a summary, in the analysis'
/// workload order; empty without crash states (a speed-only report has its summary).
pub fn answers(workloads: &[WorkloadAnalysis], crash: &[CrashAnalysis]) -> Vec<WorkloadAnswer> {
    if crash.is_empty() {
        return Vec::new();
    }
    let mut names: Vec<&str> = workloads.iter().map(|w| w.name.as_str()).collect();
    for c in crash {
        if !names.contains(&c.workload.as_str()) {
            names.push(&c.workload);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let analysed = workloads.iter().find(|w| w.name == name);
            let summary = analysed.and_then(|w| w.summary.as_ref());
            let baseline = analysed.and_then(|w| w.baseline.clone());
            let mut configs: Vec<ConfigAnswer> = summary
                .map(|s| {
                    s.ranking
                        .iter()
                        .map(|r| {
                            let mut a = empty(&r.config);
                            a.rate_mean = Some(r.mean);
                            a.trials = r.n;
                            a.versus = r.versus.clone();
                            a.suspect = r.suspect;
                            a.path_bound = r.path_bound.clone();
                            if let (Some(w), Some(b)) = (analysed, &baseline) {
                                a.vs_baseline = super::versus::versus_baseline(
                                    &w.pairs,
                                    &s.main_phase,
                                    &r.config,
                                    b,
                                );
                            }
                            if let Some(c) = analysed
                                .and_then(|w| w.configs.iter().find(|c| c.label == r.config))
                            {
                                a.journal_power_cut = journal_power_cut(&c.config);
                            }
                            a
                        })
                        .collect()
                })
                .unwrap_or_default();
            for c in crash.iter().filter(|c| c.workload == name) {
                if !configs.iter().any(|a| a.config == c.config) {
                    configs.push(empty(&c.config));
                }
                let a = configs
                    .iter_mut()
                    .find(|a| a.config == c.config)
                    .expect("just added");
                with_crash(a, c);
            }
            WorkloadAnswer {
                workload: name.to_string(),
                main_phase: summary.map(|s| s.main_phase.clone()),
                rate_unit: summary.map(|s| s.rate_unit.clone()),
                baseline: summary.and(baseline),
                configs,
            }
        })
        .collect()
}

/// What a power cut does to the journal of `c`: its own disk's model for a journal
/// apart (a `ramdisk` placement without a model is a RAM disk in tmpfs, `zram` is RAM), the file
/// system's for one beside it.
pub fn journal_power_cut(c: &crate::results::record::ConfigRecord) -> PowerCut {
    let in_ram = matches!(c.placement.as_str(), "ramdisk" | "zram");
    let apart = in_ram || matches!(c.placement.as_str(), "second-disk" | "device");
    let model = if apart {
        c.journal_device_model.as_deref()
    } else {
        c.fs_device_model.as_deref()
    };
    match model {
        Some(m) => crate::emu::power_cut(m),
        None if in_ram => PowerCut::Empties,
        None => PowerCut::Keeps,
    }
}

fn empty(config: &str) -> ConfigAnswer {
    ConfigAnswer {
        config: config.to_string(),
        rate_mean: None,
        trials: 0,
        versus: None,
        vs_baseline: None,
        journal_power_cut: PowerCut::Keeps,
        suspect: false,
        path_bound: None,
        crash_states: 0,
        crash_failures: 0,
        verdicts: VerdictCounts::default(),
        negative_control: false,
        torn_page_control: false,
        torn_page_failures: 0,
        torn_pages: Vec::new(),
        covered: None,
        judged: None,
        checks_promises: false,
        recovery_timed: 0,
        replay_median_s: None,
        replay_p95_s: None,
        fsck_median_s: None,
        recovery_worst_s: None,
        recovery_plan_s: None,
        recovery_model: None,
        lost_journal: None,
        app_recovery_median_s: None,
        app_recovery_max_s: None,
        app_recovery_model: None,
        records_promised_max: 0,
        records_lost_max: None,
    }
}

fn with_crash(a: &mut ConfigAnswer, c: &CrashAnalysis) {
    a.crash_states = c.states;
    a.crash_failures = c.verdicts.failures();
    a.verdicts = c.verdicts;
    a.negative_control = c.negative_control;
    a.covered = c.coverage.as_ref().map(|cov| cov.scope(c.states as u64));
    a.judged = c.judged.by_user_space().then(|| c.judged.clone());
    a.torn_page_control = c.torn_page_control;
    a.torn_page_failures = c.torn_page_failures;
    a.torn_pages = c.torn_pages.clone();
    a.checks_promises = c.checks_fsync;
    if let Some(r) = &c.recovery {
        a.recovery_timed = r.timed;
        a.replay_median_s = r.mount.map(|m| m.median);
        a.replay_p95_s = r.mount.map(|m| m.p95);
        a.fsck_median_s = r.full_fsck.map(|m| m.median);
        a.app_recovery_median_s = r.application.map(|m| m.median);
        a.app_recovery_max_s = r.application.map(|m| m.max);
        a.app_recovery_model = c.app_recovery_model.clone();
    }
    if let Some(m) = &c.recovery_model {
        a.recovery_worst_s = Some(m.worst_s);
        a.recovery_plan_s = Some(m.plan_s());
        a.recovery_model = Some(m.clone());
    }
    a.records_promised_max = c.records_promised_max;
    a.records_lost_max = c.records_lost_max;
    a.lost_journal = c.lost_journal.clone();
    // A lost journal is tried only on a disk that forgets: without the trial records
    // (`jbench crash`), that says what a power cut does (a `ramdisk` placement alone
    // does not: an `nvram` journal has it too).
    if a.lost_journal.is_some() {
        a.journal_power_cut = PowerCut::Empties;
    }
}

/// An answer's configuration with a rate, `states` crash states and `failures` of
/// them failed, for the tests of what is made of an answer.
#[cfg(test)]
pub(crate) mod tests_support {
    pub(crate) fn config(
        name: &str,
        rate: f64,
        states: usize,
        failures: usize,
    ) -> super::ConfigAnswer {
        let mut c = super::empty(name);
        c.rate_mean = Some(rate);
        c.trials = 4;
        c.crash_states = states;
        c.crash_failures = failures;
        c.checks_promises = true;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::crash::{CrashRecord, RecoveryTimes, Verdict, CRASH_SCHEMA_VERSION};

    fn state(config: &str, n: u64, verdict: Verdict, mount: Option<f64>) -> CrashRecord {
        CrashRecord {
            schema: CRASH_SCHEMA_VERSION,
            config: config.into(),
            workload: "w".into(),
            trial: 9,
            state: n,
            strategy: "prefix".into(),
            cut: n,
            kept: 1,
            dropped: 0,
            dropped_blocks: 0,
            stratum: String::new(),
            coverage: None,
            torn: None,
            last_fsync: None,
            fsynced_files: 3,
            verdict,
            evidence: vec!["why".into()],
            timings: mount.map(|m| RecoveryTimes {
                mount_seconds: m,
                full_fsck_seconds: Some(m * 2.0),
                ..RecoveryTimes::default()
            }),
            lost_journal: None,
            check_seconds: 0.1,
            filesystem: "ext4".into(),
            placement: "internal".into(),
            mode: "ordered".into(),
            journal_size: 16 << 20,
            inodes: 10,
            negative_control: false,
            torn_page_control: false,
            checks_fsync: true,
            user_check: false,
            hung: false,
            journal_live: None,
            records_promised: 0,
            records_lost: None,
            check_cache: None,
            judged_by: None,
            fast_fallback: None,
            outcome: None,
        }
    }

    #[test]
    fn the_answer_joins_the_crash_figures_to_each_configuration() {
        let recs = vec![
            state("a", 0, Verdict::Ok, Some(0.5)),
            state("a", 1, Verdict::LostFsynced, Some(1.5)),
            state("a", 2, Verdict::Ok, None),
            state("b", 0, Verdict::Ok, None),
        ];
        let crash = crate::analysis::crash::analyse_crash(&recs);
        let got = answers(&[], &crash);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].main_phase, None, "no timed trial: no speed half");
        let a = &got[0].configs[0];
        assert_eq!((a.config.as_str(), a.crash_states), ("a", 3));
        assert_eq!((a.crash_failures, a.verdicts.lost_fsynced), (1, 1));
        assert_eq!((a.recovery_timed, a.replay_median_s), (2, Some(1.0)));
        assert_eq!(a.fsck_median_s, Some(2.0));
        assert_eq!(got[0].configs[1].recovery_timed, 0);
        assert!(answers(&[], &[]).is_empty(), "no crash states: no answer");
    }
}
