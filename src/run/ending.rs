//! How a run of `jbench run` or `jbench crash` ended, for its exit status: the trials
//! and the crash lab's outcome, and what the stored records say. The commands print
//! it in their own words; the statuses are the same for both.

use std::process::ExitCode;

use crate::crash::campaign::{unexpected, CampaignOutcome};
use crate::results::crash::CrashRecord;
use crate::results::record::TrialRecord;
use crate::run::runner::RunOutcome;

/// The trials' outcome and the crash lab's after them.
#[derive(Debug, Default)]
pub struct Outcome {
    pub trials: RunOutcome,
    /// Empty when the lab did not run.
    pub lab: CampaignOutcome,
}

impl Outcome {
    /// Ctrl-C stopped the trials or the lab.
    pub fn interrupted(&self) -> bool {
        self.trials.interrupted || self.lab.interrupted
    }
}

/// The first of these that applies is how the run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Ctrl-C: what was done is stored; `--resume` finishes it (130).
    Interrupted,
    /// Every timed trial failed: nothing was measured (3). The first error.
    NothingMeasured(String),
    /// Some trials failed (2).
    TrialsFailed(usize),
    /// The crash lab failed on these recordings: (configuration, workload) (2).
    LabFailed(Vec<(String, String)>),
    /// A configuration lost what it promised, or a negative control did not (5).
    Lost(Vec<String>),
    /// A state got no verdict: recovery hung or fsck could not run (6).
    Hung(Vec<String>),
    /// All measured, nothing lost (0).
    Done,
}

impl Ending {
    /// How the run that gave `outcome` and left `records` and `crash` (the directory
    /// read back) ended.
    pub fn of(outcome: &Outcome, records: &[TrialRecord], crash: &[CrashRecord]) -> Ending {
        if outcome.interrupted() {
            return Ending::Interrupted;
        }
        let timed: Vec<&TrialRecord> = records.iter().filter(|r| !r.crash_recording).collect();
        if !timed.is_empty() && timed.iter().all(|r| !r.is_ok()) {
            let why = crate::analysis::every_trial_failed(records).unwrap_or_default();
            return Ending::NothingMeasured(why);
        }
        if outcome.trials.failed > 0 {
            return Ending::TrialsFailed(outcome.trials.failed);
        }
        if !outcome.lab.failed.is_empty() {
            return Ending::LabFailed(outcome.lab.failed.clone());
        }
        let found = unexpected(crash);
        if !found.lost.is_empty() {
            // Hangs are said beside the losses; the status is the losses'.
            return Ending::Lost(found.lost.into_iter().chain(found.hung).collect());
        }
        if !found.hung.is_empty() {
            return Ending::Hung(found.hung);
        }
        Ending::Done
    }

    /// The exit status (`jbench run --help` documents them).
    pub fn code(&self) -> u8 {
        match self {
            Ending::Interrupted => 130,
            Ending::NothingMeasured(_) => 3,
            Ending::TrialsFailed(_) | Ending::LabFailed(_) => 2,
            Ending::Lost(_) => 5,
            Ending::Hung(_) => 6,
            Ending::Done => 0,
        }
    }

    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_ending_that_applies_sets_the_status() {
        let mut o = Outcome::default();
        assert_eq!(Ending::of(&o, &[], &[]), Ending::Done);
        o.lab.failed.push(("c".into(), "w".into()));
        assert_eq!(Ending::of(&o, &[], &[]).code(), 2);
        o.trials.failed = 1;
        assert_eq!(Ending::of(&o, &[], &[]), Ending::TrialsFailed(1));
        let mut failed = crate::run::adaptive::tests::rec(0, "a", "w", 1.0);
        failed.status = crate::results::record::Status::Failed;
        failed.error = Some("mkfs failed".into());
        let ending = Ending::of(&o, &[failed], &[]);
        assert!(matches!(ending, Ending::NothingMeasured(_)), "{ending:?}");
        assert_eq!(ending.code(), 3);
        o.lab.interrupted = true;
        assert_eq!(Ending::of(&o, &[], &[]).code(), 130);
    }
}
