//! `jbench trial`: one trial of a concurrent run (`run::jobs`), in a process of its
//! own. It reads the experiment from the results directory, runs the trial as a run of
//! one trial at a time would (except for what would reach into the trials beside it:
//! see [`RigExecutor::shared_host`]), and returns its record, which `jbench trial`
//! prints as one JSON line for the run to store.

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::experiment::plan::Trial;
use crate::experiment::spec;
use crate::results::layout;
use crate::results::record::TrialRecord;
use crate::run::executor::{Executor, TrialError};
use crate::run::jobs::{EXIT_FATAL, EXIT_INTERRUPTED};
use crate::run::scripted::ScriptedExecutor;
use crate::run::{interrupt, runner, session};

/// What the run hands its child.
#[derive(Debug, Clone)]
pub struct ChildTrial {
    pub dir: PathBuf,
    pub trial: Trial,
    pub scripted: bool,
    pub destroy: Vec<PathBuf>,
    pub verbose: bool,
    /// Whether to say how the configuration was built (the run's first trial of it).
    pub show_build: bool,
    /// Nothing runs beside it: run it exactly as a run of one trial at a time does.
    pub alone: bool,
}

/// How the child's trial ended, for the command to print and exit with.
pub enum ChildEnd {
    /// The trial's record (ok or failed), printed as one JSON line (exit 0).
    Record(Box<TrialRecord>),
    /// Ctrl-C ([`EXIT_INTERRUPTED`]).
    Interrupted,
    /// An error that ends the whole run ([`EXIT_FATAL`]), said on standard error.
    Fatal(anyhow::Error),
}

impl ChildEnd {
    /// The exit status the run's pool reads.
    pub fn code(&self) -> i32 {
        match self {
            ChildEnd::Record(_) => 0,
            ChildEnd::Interrupted => EXIT_INTERRUPTED,
            ChildEnd::Fatal(_) => EXIT_FATAL,
        }
    }
}

/// Runs the trial.
pub fn run_child(c: ChildTrial) -> Result<ChildEnd> {
    let spec = spec::load(&c.dir.join(layout::SPEC))?;
    let t = &c.trial;
    if t.config >= spec.configs.len() || t.workload >= spec.workloads.len() {
        bail!(
            "trial {} names configuration {} and workload {}, but {} has {} and {}",
            t.index,
            t.config,
            t.workload,
            c.dir.join(layout::SPEC).display(),
            spec.configs.len(),
            spec.workloads.len()
        );
    }
    let ctl = interrupt::install()?;
    let mut exec: Box<dyn Executor> = if c.scripted {
        Box::new(ScriptedExecutor)
    } else {
        let exec = session::rig_executor_in(&spec, &c.dir, c.destroy.clone(), c.verbose)?;
        let exec = if c.show_build {
            exec
        } else {
            exec.built_before(t.config)
        };
        Box::new(exec.shared_host(!c.alone))
    };
    let started_at = chrono::Local::now().to_rfc3339();
    let clock = std::time::Instant::now();
    // What it says goes to standard error as events, which the parent passes on.
    let result = exec.run_trial(&spec, t, &ctl);
    let wall_seconds = clock.elapsed().as_secs_f64();
    let result = match result {
        Ok(done) => Ok(done),
        Err(TrialError::Failed(f)) => Err(f),
        Err(TrialError::Interrupted) => return Ok(ChildEnd::Interrupted),
        Err(TrialError::Fatal(e)) => return Ok(ChildEnd::Fatal(e)),
    };
    let record = runner::trial_record(&spec, t, result, started_at, wall_seconds);
    Ok(ChildEnd::Record(Box::new(record)))
}
