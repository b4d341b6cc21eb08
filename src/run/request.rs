//! What `jbench run` was asked, and the steps that carry it out in order: the checks
//! and the plan (refusals, the results directory, a shard's trials), the session, the
//! trials and the crash lab, and the conclusion (a shard's seal, a merged directory's
//! local trials, the directory read back and how the run ended). The command line only
//! parses the arguments into a [`RunRequest`] and prints what each step returns.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::experiment::estimate;
use crate::experiment::plan::{self, Trial};
use crate::experiment::spec::Spec;
use crate::run::ending::Outcome;
use crate::run::executor::Executor;
use crate::run::jobs::{ChildCommand, Pool};
use crate::run::preflight;
use crate::run::scripted::ScriptedExecutor;
use crate::run::session::{self, Concluded, LabAfter, Session};
use crate::scale::attempt::ShardAttempt;
use crate::scale::seal;

/// One `jbench run`, as asked.
pub struct RunRequest {
    pub spec: Spec,
    /// The experiment file's text, stored with the results.
    pub original: String,
    /// This machine's share of a sharded run.
    pub shard: Option<ShardAttempt>,
    /// `--resume DIR`.
    pub resume: Option<PathBuf>,
    /// `--results DIR`.
    pub results: Option<PathBuf>,
    /// Real rigs; false: the scripted executor, which provisions nothing (no root,
    /// tools or directories needed) and records no writes.
    pub real: bool,
    /// Trials at once.
    pub jobs: u16,
    /// Devices the user named to be formatted.
    pub destroy: Vec<PathBuf>,
    pub verbose: bool,
}

/// The run checked and planned, before its directory is opened.
pub struct Planned {
    pub results_dir: PathBuf,
    /// The trials this run carries out (a shard's part of the plan).
    pub trials: Vec<Trial>,
    /// The whole plan's trial count.
    pub plan_len: usize,
    /// Trials with the write log on, for the crash lab.
    pub recordings: usize,
    /// What the checks found worth saying but not refusing.
    pub warnings: Vec<String>,
}

impl RunRequest {
    /// Whether the crash lab runs after the trials.
    pub fn lab_runs(&self) -> bool {
        self.spec.crash.requested && self.real
    }

    /// The refusals, the results directory, the host checks and the plan, in that
    /// order: nothing is made before every refusal had its say.
    pub fn plan(&self) -> Result<Planned> {
        let spec = &self.spec;
        if self.lab_runs() {
            // Refused before anything runs: hours of timed trials, then no crash half.
            if let Some(refused) = crate::crash::campaign::refusals(spec) {
                bail!(
                    "{refused}\nThe experiment's [crash] table asks for the crash lab; give those configurations emulated disks or remove [crash]."
                );
            }
        }
        let results_dir = match &self.shard {
            Some(s) if self.resume.is_none() && self.results.is_none() => {
                let dir = s.default_results_dir(&spec.name);
                preflight::check_results_dir_trusted(&dir)?;
                dir
            }
            _ => session::results_dir(&self.resume, &self.results, &spec.name)?,
        };
        if let (None, Some(dir)) = (&self.shard, &self.resume) {
            // The whole plan resumed into one shard's attempt would break its seal.
            if let Some(s) = seal::read_seal(dir)? {
                bail!(
                    "{} is the sealed attempt of shard {}/{}; resume it with --shard {}/{} --shard-by {}",
                    dir.display(),
                    s.shard,
                    s.shards,
                    s.shard,
                    s.shards,
                    s.shard_by
                );
            }
        }
        let warnings = if self.real {
            session::prepare(spec, "jbench run", &self.destroy)?
        } else {
            Vec::new()
        };
        let all = plan::plan(spec);
        let plan_len = all.len();
        let trials = match &self.shard {
            Some(s) => {
                if self.resume.is_some() {
                    s.check_resumed(&results_dir)?;
                }
                s.trials(spec, &all)
            }
            None => all,
        };
        let recordings = trials.iter().filter(|t| t.recording).count();
        Ok(Planned {
            results_dir,
            trials,
            plan_len,
            recordings,
            warnings,
        })
    }

    /// The results directory created or resumed; a shard's resumed records checked
    /// against its part of the plan.
    pub fn open<'a>(&'a self, planned: &Planned) -> Result<Session<'a>> {
        let lab = if self.lab_runs() {
            estimate::lab_seconds(planned.recordings, self.spec.crash.states)
        } else {
            0.0
        };
        let session = Session::open(
            &self.spec,
            &self.original,
            &planned.results_dir,
            self.resume.is_some(),
        )?
        .lab_after(lab);
        if let Some(s) = &self.shard {
            s.check_existing(session.dir(), &planned.trials, session.existing())?;
        }
        Ok(session)
    }

    /// The trials, one at a time or side by side in child processes, then the crash lab
    /// over the recordings when the experiment asks for it.
    pub fn execute(&self, session: &mut Session, planned: &Planned) -> Result<Outcome> {
        let mut exec: Box<dyn Executor> = if self.real {
            Box::new(session.rig_executor(self.destroy.clone(), self.verbose)?)
        } else {
            Box::new(ScriptedExecutor)
        };
        let pool = if self.jobs > 1 {
            Some(Pool::new(
                self.jobs.into(),
                ChildCommand {
                    exe: crate::rig::emulated::daemon_binary()?,
                    dir: session.dir().to_path_buf(),
                    scripted: !self.real,
                    destroy: self.destroy.clone(),
                    verbose: self.verbose,
                    shown: Default::default(),
                },
            ))
        } else {
            None
        };
        let lab = self.lab_runs().then(|| LabAfter {
            opts: &self.spec.crash,
            seed: self.spec.crash.effective_seed(self.spec.seed),
            only_recordings: true,
        });
        session.run(exec.as_mut(), &planned.trials, pool, lab)
    }

    /// A finished shard sealed (or why not), a merged directory's local trials
    /// recorded, then the directory read back and how the run ended.
    pub fn conclude(
        &self,
        session: &Session,
        planned: &Planned,
        outcome: &Outcome,
    ) -> Result<RunConcluded> {
        let mut unsealed = None;
        if let (Some(s), false) = (&self.shard, outcome.interrupted()) {
            if outcome.lab.failed.is_empty() {
                s.seal(session.dir(), &self.spec, &planned.trials)?;
            } else {
                unsealed = Some(format!(
                    "shard {}/{} not sealed: the crash lab failed on {}; resume it to try again",
                    s.index,
                    s.count,
                    outcome
                        .lab
                        .failed
                        .iter()
                        .map(|(c, w)| format!("{c} / {w}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        if self.resume.is_some() {
            // A merged directory: the trials run here are this machine's, which may
            // not be the shards' (merge.json; nothing happens to an ordinary directory).
            let here = crate::results::fingerprint::Fingerprint::of_spec(&self.spec);
            crate::results::merged::record_local_trials(session.dir(), &session.records()?, &here)?;
        }
        Ok(RunConcluded {
            done: session.conclude(outcome)?,
            unsealed,
        })
    }
}

/// How a `jbench run` ended.
pub struct RunConcluded {
    pub done: Concluded,
    /// Why a shard's attempt was not sealed.
    pub unsealed: Option<String>,
}
