//! One run of an experiment into one results directory, as `jbench run` and `jbench
//! crash` both carry it out: the directory (created or resumed) and its store, the
//! Ctrl-C control, the executor that writes write logs, monitor samples and outputs
//! into the directory, the trials, the crash lab over the recordings, and at the end
//! `summary.csv` and the directory read back whole for the report, with the kernel's
//! writeback settings a `[writeback]` table pins held for the session's life. The
//! commands keep what differs: which trials, which options, what they print and their
//! exit status.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analysis::ReportOptions;
use crate::crash::campaign::{Campaign, CampaignOutcome};
use crate::crash::CrashOptions;
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::report::{self, Format};
use crate::results::layout;
use crate::results::record::TrialRecord;
use crate::results::store::{self, Store};
use crate::results::Results;
use crate::rig::writeback::PinnedClock;
use crate::run::ending::{Ending, Outcome};
use crate::run::executor::{Executor, RigExecutor};
use crate::run::jobs::Pool;
use crate::run::runner::{Run, RunOutcome};
use crate::run::{interrupt, preflight};
use crate::workload::RunControl;

/// A results directory being run into.
pub struct Session<'a> {
    spec: &'a Spec,
    store: Store,
    /// The records a resumed directory already held.
    existing: Vec<TrialRecord>,
    ctl: RunControl,
    /// Estimated seconds of the crash lab after the trials, for the time left.
    after_trials: f64,
    /// The writeback settings `[writeback]` pins, held until the session ends
    /// (including after Ctrl-C: the runner returns and this drops).
    _writeback: Option<PinnedClock>,
}

impl<'a> Session<'a> {
    /// Creates results directory `dir` for `spec` (read from `original`), or resumes
    /// it (`resume`: the experiment must be the one stored there), and installs the
    /// Ctrl-C handler.
    pub fn open(spec: &'a Spec, original: &str, dir: &Path, resume: bool) -> Result<Self> {
        // Before the store records the host's environment, so env.json holds the
        // settings the trials run with.
        let writeback = PinnedClock::apply(&spec.writeback)?;
        let (store, existing) = if resume {
            Store::resume(dir, spec)?
        } else {
            (Store::create(dir, spec, original)?, Vec::new())
        };
        Ok(Self {
            spec,
            store,
            existing,
            ctl: interrupt::install()?,
            after_trials: 0.0,
            _writeback: writeback,
        })
    }

    /// The crash lab's estimated seconds, which the progress output's time left counts
    /// after the last trial.
    pub fn lab_after(mut self, seconds: f64) -> Self {
        self.after_trials = seconds;
        self
    }

    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// The records a resumed directory held before this run.
    pub fn existing(&self) -> &[TrialRecord] {
        &self.existing
    }

    /// The executor that builds real rigs, keeping write logs, monitor samples and
    /// outputs in this directory. `destroy`: devices the user named to be formatted.
    pub fn rig_executor(&self, destroy: Vec<PathBuf>, verbose: bool) -> Result<RigExecutor> {
        rig_executor_in(self.spec, self.dir(), destroy, verbose)
    }

    /// Runs `trials` (those a resumed directory has not recorded yet) with `exec`, or
    /// side by side in `pool`'s child processes when it has more than one job.
    pub fn execute(
        &mut self,
        exec: &mut dyn Executor,
        trials: &[Trial],
        pool: Option<Pool>,
    ) -> Result<RunOutcome> {
        Run::new(self.spec, &mut self.store, exec, &self.ctl)
            .concurrent(pool)
            .after_trials(self.after_trials)
            .execute(trials, &self.existing)
    }

    /// Runs `trials` as [`Self::execute`] does, then, unless Ctrl-C stopped them, the
    /// crash lab of `lab` over the directory's recordings.
    pub fn run(
        &mut self,
        exec: &mut dyn Executor,
        trials: &[Trial],
        pool: Option<Pool>,
        lab: Option<LabAfter>,
    ) -> Result<Outcome> {
        let trials = self.execute(exec, trials, pool)?;
        let lab = match lab {
            Some(l) if !trials.interrupted => {
                let records = self.records()?;
                let recordings: Vec<&TrialRecord> = records
                    .iter()
                    .filter(|r| r.crash_recording || !l.only_recordings)
                    .collect();
                self.crash_lab(&recordings, l.opts, l.seed)?
            }
            _ => CampaignOutcome::default(),
        };
        Ok(Outcome { trials, lab })
    }

    /// Every record of the directory as stored now.
    pub fn records(&self) -> Result<Vec<TrialRecord>> {
        store::load_records(self.dir())
    }

    /// The crash lab over `recordings` with `opts`, skipping the states a resumed
    /// directory already checked.
    pub fn crash_lab(
        &self,
        recordings: &[&TrialRecord],
        opts: &CrashOptions,
        seed: u64,
    ) -> Result<CampaignOutcome> {
        if recordings.is_empty() {
            return Ok(CampaignOutcome::default());
        }
        Campaign {
            spec: self.spec,
            dir: self.dir(),
            opts,
            seed,
            ctl: &self.ctl,
        }
        .run(recordings)
    }

    /// The end both commands share: the directory read back whole
    /// ([`crate::results::open`]) with its report options, `summary.csv` written from
    /// them, and how the run that gave `outcome` ended (its exit status).
    pub fn conclude(&self, outcome: &Outcome) -> Result<Concluded> {
        let results = crate::results::open(self.dir())?;
        let opts = ReportOptions::of_results(&results, None, None)?;
        store::write_summary(
            self.dir(),
            &report::render_with_crash(&results.records, &results.crash, &opts, Format::Csv),
        )?;
        let ending = Ending::of(outcome, &results.records, &results.crash);
        Ok(Concluded {
            results,
            opts,
            ending,
        })
    }
}

/// A session's directory read back, its report options and how it ended.
pub struct Concluded {
    pub results: Results,
    pub opts: ReportOptions,
    pub ending: Ending,
}

/// The crash lab a run ends with.
pub struct LabAfter<'o> {
    pub opts: &'o CrashOptions,
    /// The seed the states are chosen with.
    pub seed: u64,
    /// Only the trials marked `crash_recording` (`jbench run`'s, beside timed trials);
    /// else every trial of the directory (`jbench crash` records nothing else).
    pub only_recordings: bool,
}

/// What `jbench run` and `jbench crash` check before a session on real hardware:
/// root (`command` names the command in the refusal), the experiment against this
/// host (its warnings returned, for the command to print) and the work directories,
/// made.
pub fn prepare(spec: &Spec, command: &str, destroy: &[PathBuf]) -> Result<Vec<String>> {
    preflight::require_root(command)?;
    let warnings = preflight::check(spec, destroy)?;
    preflight::create_dirs(spec)?;
    Ok(warnings)
}

/// The executor that builds real rigs for `spec`, keeping write logs, monitor samples
/// and outputs in results directory `dir`.
pub fn rig_executor_in(
    spec: &Spec,
    dir: &Path,
    destroy: Vec<PathBuf>,
    verbose: bool,
) -> Result<RigExecutor> {
    Ok(RigExecutor::new(spec, destroy)?
        .verbose(verbose)
        .with_write_logs(layout::write_log_dir(dir))
        .with_monitor_dir(layout::monitor_dir(dir))
        .with_output_dir(layout::output_dir(dir)))
}

/// `--resume DIR`, else `--results DIR`, else `results/<name>-<timestamp>`; checked to
/// be a directory nobody else can change.
pub fn results_dir(
    resume: &Option<PathBuf>,
    results: &Option<PathBuf>,
    name: &str,
) -> Result<PathBuf> {
    let dir = match (resume, results) {
        (Some(dir), _) | (None, Some(dir)) => dir.clone(),
        (None, None) => {
            let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
            PathBuf::from("results").join(format!("{name}-{stamp}"))
        }
    };
    preflight::check_results_dir_trusted(&dir)?;
    Ok(dir)
}
