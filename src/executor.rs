//! Runs one trial. The [`Executor`] trait separates the runner's bookkeeping (order,
//! resume, recording, progress) from what a trial does, so the runner is tested without
//! devices, and the real executor is the only code that touches them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;

use crate::plan::Trial;
use crate::record::Verified;
use crate::rig::memcg::{MemoryLimit, MemoryUse};
use crate::rig::{self, Workspace};
use crate::spec::Spec;
use crate::workload::{Interrupted, PhaseResult, RunControl};

#[derive(Debug, Default)]
pub struct TrialOutcome {
    pub layout: serde_json::Value,
    pub verified: Option<Verified>,
    pub phases: Vec<PhaseResult>,
    /// Memory limit and peak use, when the configuration sets `memory_limit`.
    pub memory: Option<MemoryUse>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The user asked to stop; the trial is not recorded and `--resume` redoes it.
    #[error("interrupted")]
    Interrupted,
    /// This trial failed (recorded as failed); the run goes on.
    #[error("{}", .0.error)]
    Failed(Box<FailedTrial>),
    /// Going on would be unsafe (e.g. a device could not be released): stop the run.
    #[error("{0:#}")]
    Fatal(anyhow::Error),
}

/// What is known of a failed trial: why, and as much of the set-up as existed.
#[derive(Debug)]
pub struct FailedTrial {
    pub error: String,
    pub layout: serde_json::Value,
    pub verified: Option<Verified>,
}

pub trait Executor {
    fn run_trial(
        &mut self,
        spec: &Spec,
        trial: &Trial,
        ctl: &RunControl,
        say: &mut dyn FnMut(&str),
    ) -> Result<TrialOutcome, TrialError>;
}

/// The real thing: fresh file system per trial on loop/zram/real devices.
pub struct RigExecutor {
    ws: Workspace,
    destroy: Vec<PathBuf>,
    shown: BTreeSet<usize>,
}

impl RigExecutor {
    pub fn new(spec: &Spec, destroy: Vec<PathBuf>) -> Result<Self> {
        Ok(Self {
            ws: Workspace::new(&spec.work_dir)?,
            destroy,
            shown: BTreeSet::new(),
        })
    }
}

impl Executor for RigExecutor {
    fn run_trial(
        &mut self,
        spec: &Spec,
        trial: &Trial,
        ctl: &RunControl,
        say: &mut dyn FnMut(&str),
    ) -> Result<TrialOutcome, TrialError> {
        let config = &spec.configs[trial.config];
        let workload = &spec.workloads[trial.workload];
        let failed = |e: anyhow::Error, layout: serde_json::Value, verified: Option<Verified>| {
            if ctl.stop_requested() {
                TrialError::Interrupted
            } else {
                TrialError::Failed(Box::new(FailedTrial {
                    error: format!("{e:#}"),
                    layout,
                    verified,
                }))
            }
        };
        drop_caches().map_err(|e| failed(e, serde_json::Value::Null, None))?;
        let rig = rig::provision(config, &mut self.ws, &self.destroy)
            .map_err(|e| failed(e, serde_json::Value::Null, None))?;
        let layout = serde_json::to_value(&rig.layout).unwrap_or_default();
        if self.shown.insert(trial.config) {
            say(&format!("{}: {}", config.label, rig.layout));
            say(&format!(
                "{}: verified: {}",
                config.label,
                rig.verified.checks.join("; ")
            ));
        }
        let verified = Some(rig.verified.clone());
        let ctl = ctl.clone().with_durable(workload.durable);
        // The cgroup is made fresh per trial so its peak is this trial's alone.
        let mut limit = match config.memory_limit.map(MemoryLimit::create).transpose() {
            Ok(l) => l,
            Err(e) => {
                rig.teardown().map_err(TrialError::Fatal)?;
                return Err(failed(e, layout, verified));
            }
        };
        let entered = limit.as_mut().map(|l| l.enter()).transpose();
        let result = match entered {
            Ok(_) => workload.engine.run(&rig.mount_point, &ctl),
            Err(e) => Err(e),
        };
        let memory = limit.as_mut().map(|l| {
            let _ = l.leave();
            l.usage()
        });
        drop(limit);
        // Tear down before judging the result: a device that cannot be released makes
        // every later trial suspect, so that stops the run.
        rig.teardown().map_err(TrialError::Fatal)?;
        match result {
            Ok(phases) => Ok(TrialOutcome {
                layout,
                verified,
                phases,
                memory,
            }),
            Err(e) if e.is::<Interrupted>() => Err(TrialError::Interrupted),
            Err(e) => Err(failed(e, layout, verified)),
        }
    }
}

/// Flushes dirty data and empties the page cache, so a trial does not start with the
/// previous one's pages (tmpfs pages stay; they cannot be dropped).
pub fn drop_caches() -> Result<()> {
    nix::unistd::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
        anyhow::anyhow!(
            "cannot drop caches (/proc/sys/vm/drop_caches): {e}; jbench must run as root"
        )
    })
}
