//! The crash lab over a results directory: every recorded trial it is given, in turn,
//! through [`lab::test_trial`], appending each state to `crash.jsonl`. Shared by
//! `jbench crash` (every trial is a recording) and `jbench run` on an experiment with
//! `[crash]` (the trials marked `crash_recording`). A resumed directory skips the
//! states already in `crash.jsonl`, so a lab stopped by Ctrl-C goes on where it was.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;

use super::lab::{self, Recorded};
use super::options::CrashOptions;
use crate::experiment::config::{Config, Placement};
use crate::experiment::spec::Spec;
use crate::results::crash::{append_crash_record, load_crash_records};
use crate::results::layout;
use crate::results::record::TrialRecord;
use crate::workload::RunControl;

/// Why a configuration cannot be crash-tested, if it cannot.
pub fn not_crash_testable(config: &Config) -> Option<String> {
    if config.fs_model.is_none() {
        return Some(format!(
            "configuration `{}` has no emulated file-system disk (filesystem.device_model): the crash lab cuts states from the device daemon's write log, which only emulated disks have",
            config.label
        ));
    }
    let external = matches!(
        config.placement,
        Placement::SecondDisk | Placement::Ramdisk | Placement::Zram | Placement::Device
    );
    if external && config.journal_model.is_none() {
        return Some(format!(
            "configuration `{}` puts its journal on a {} without an emulated disk (journal.device_model): its writes would not be in the write log",
            config.label, config.placement
        ));
    }
    None
}

/// Every configuration of `spec` the lab cannot test, one refusal per line; `None`
/// when it can test them all.
pub fn refusals(spec: &Spec) -> Option<String> {
    let found: Vec<String> = spec.configs.iter().filter_map(not_crash_testable).collect();
    (!found.is_empty()).then(|| found.join("\n"))
}

/// What the lab did over the directory.
#[derive(Debug, Default)]
pub struct CampaignOutcome {
    /// Stopped by Ctrl-C: the states checked so far are stored; a resume finishes.
    pub interrupted: bool,
    /// (configuration, workload) whose lab run failed (an error, not a verdict).
    pub failed: Vec<(String, String)>,
    /// States checked in this run (not those a resumed run found done).
    pub states: u64,
}

/// One lab over one results directory.
pub struct Campaign<'a> {
    pub spec: &'a Spec,
    pub dir: &'a Path,
    pub opts: &'a CrashOptions,
    pub seed: u64,
    pub ctl: &'a RunControl,
}

impl Campaign<'_> {
    fn say(&self, m: &str) {
        crate::events::step(crate::events::Activity::CrashLab, m);
    }

    /// Runs the lab on each `ok` record of `recordings` whose write log is in the
    /// directory, skipping states already in `crash.jsonl`.
    pub fn run(&self, recordings: &[&TrialRecord]) -> Result<CampaignOutcome> {
        let crash_path = layout::crash_file(self.dir);
        let mut done: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
        for r in load_crash_records(&crash_path)? {
            done.entry((r.config, r.workload))
                .or_default()
                .insert(r.state);
        }
        let mut out = CampaignOutcome::default();
        for rec in recordings.iter().filter(|r| r.is_ok()) {
            let Some(config) = self
                .spec
                .configs
                .iter()
                .find(|c| c.label == rec.config.label)
            else {
                continue;
            };
            let log = layout::write_log_dir(self.dir).join(layout::write_log_file_name(rec.trial));
            let key = (rec.config.label.clone(), rec.workload.name.clone());
            let skip = done.get(&key).cloned().unwrap_or_default();
            let recorded = Recorded {
                config,
                record: rec,
                log: &log,
            };
            let mut emit = |r| append_crash_record(&crash_path, &r);
            match lab::test_trial(
                &self.spec.work_dir,
                &recorded,
                self.opts,
                self.seed,
                &skip,
                self.ctl,
                &mut emit,
            ) {
                Ok(t) => {
                    out.states += t.states;
                    if t.states > 0 {
                        self.say(&format!(
                            "{} / {}: {} states in {:.1} s ({:.1} states/s checked; {:.1} states/s with recovery timing and lost journals), {} failed",
                            key.0,
                            key.1,
                            t.states,
                            t.wall_seconds,
                            t.states as f64 / t.seconds.max(1e-9),
                            t.states as f64 / t.wall_seconds.max(1e-9),
                            t.failures
                        ));
                    }
                    if t.interrupted {
                        out.interrupted = true;
                        break;
                    }
                }
                Err(e) => {
                    crate::events::emit(crate::events::Event::LabFailed {
                        config: key.0.clone(),
                        workload: key.1.clone(),
                        error: format!("{e:#}"),
                    });
                    out.failed.push(key);
                    if self.ctl.stop_requested() {
                        out.interrupted = true;
                        break;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// What the crash lab found that it should not have.
#[derive(Debug, Default)]
pub struct Unexpected {
    /// Exit status 5: an ordinary configuration lost data or consistency, or a
    /// negative control did not lose what fsync promised.
    pub lost: Vec<String>,
    /// Exit status 6 (when nothing was lost): a state of an ordinary configuration
    /// got no verdict, because recovery hung past `mount_timeout` or fsck could not
    /// run. A hang is how many recovery bugs show.
    pub hung: Vec<String>,
}

/// What makes the exit status 5 or 6: an ordinary configuration x workload with a
/// state that lost data or consistency (5) or could not be judged (6), or a negative
/// control in which no state lost what fsync promised (5): a negative control passes
/// only by showing the failure it exists for, not by any failure.
pub fn unexpected(records: &[crate::results::crash::CrashRecord]) -> Unexpected {
    use crate::results::crash::Verdict;
    let mut groups: BTreeMap<(&str, &str), Vec<&crate::results::crash::CrashRecord>> =
        BTreeMap::new();
    for r in records {
        groups.entry((&r.config, &r.workload)).or_default().push(r);
    }
    let mut out = Unexpected::default();
    for ((config, workload), states) in groups {
        let negative = states.iter().any(|r| r.negative_control);
        if negative {
            let torn_page = states.iter().any(|r| r.torn_page_control);
            if torn_page && !states.iter().any(|r| r.shows_control_failure()) {
                let tears = states
                    .iter()
                    .filter(|r| r.torn.as_ref().is_some_and(|t| t.file.is_some()))
                    .count();
                out.lost.push(format!(
                    "torn-page control `{config}` / `{workload}`: none of {} states failed at a torn write of file data ({tears} tore one); the lab did not show the torn page this configuration is built to suffer (give it `torn-data` states and a check that reads every page)",
                    states.len(),
                ));
            } else if !torn_page && !states.iter().any(|r| r.shows_control_failure()) {
                let promises = states.iter().any(|r| r.checks_fsync);
                out.lost.push(format!(
                    "negative control `{config}` / `{workload}`: none of {} states lost what fsync promised{}; the oracle did not catch a configuration built to lose it",
                    states.len(),
                    if promises { "" } else { " (its workload makes no promises: give a negative control an fsync, fio or command workload that declares what must survive)" }
                ));
            }
            continue;
        }
        let describe = |what: &str, failed: &[&&crate::results::crash::CrashRecord]| {
            let first = failed[0];
            format!(
                "`{config}` / `{workload}`: {} of {} states {what}; first: state {} ({}, cut {}) {}: {}",
                failed.len(),
                states.len(),
                first.state,
                first.strategy,
                first.cut,
                first.verdict,
                first.evidence.first().map(String::as_str).unwrap_or("")
            )
        };
        let lost: Vec<_> = states.iter().filter(|r| r.verdict.is_loss()).collect();
        if !lost.is_empty() {
            out.lost.push(describe("failed", &lost));
        }
        let hung: Vec<_> = states
            .iter()
            .filter(|r| r.verdict == Verdict::NoVerdict)
            .collect();
        if !hung.is_empty() {
            out.hung.push(describe(
                "got no verdict (recovery hung or fsck could not run)",
                &hung,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::crash::{CrashRecord, TornWrite, Verdict};

    fn state(verdict: Verdict, torn_file: Option<&str>) -> CrashRecord {
        CrashRecord {
            config: "fpw-off".into(),
            negative_control: true,
            torn_page_control: true,
            verdict,
            torn: Some(TornWrite {
                seq: 9,
                kept_bytes: 4096,
                len: 8192,
                file: torn_file.map(str::to_string),
                file_offset: torn_file.map(|_| 4096),
            }),
            ..CrashRecord::test_default()
        }
    }

    /// A torn-page control passes only by failing at a torn page: lost commits or a
    /// torn journal write are not that proof.
    #[test]
    fn a_torn_page_control_is_caught_only_by_a_failure_at_a_torn_page() {
        let caught = [
            state(Verdict::Ok, Some("base/5/16403")),
            state(Verdict::CheckFailed, Some("base/5/16403")),
        ];
        assert!(unexpected(&caught).lost.is_empty());
        let not = [
            state(Verdict::LostFsynced, None),
            state(Verdict::Ok, Some("base/5/16403")),
        ];
        let u = unexpected(&not);
        assert_eq!(u.lost.len(), 1);
        assert!(
            u.lost[0].contains("torn-page control `fpw-off`") && u.lost[0].contains("(1 tore one)"),
            "{:?}",
            u.lost
        );
    }
}
