//! Runs one trial. The [`Executor`] trait separates the runner's bookkeeping (order,
//! resume, recording, progress) from what a trial does, so the runner is tested without
//! devices, and the real executor is the only code that touches them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;

use crate::events::{emit, Event};
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::monitor::{Monitor, MonitorSummary, Targets};
use crate::results::layout;
use crate::results::record::Verified;
use crate::rig::emulated::{self, EmulationRecord};
use crate::rig::memcg::{MemoryLimit, MemoryUse};
use crate::rig::writeback::{self as writeback_clock, WritebackRecord};
use crate::rig::{self, Workspace};
use crate::workload::neighbour::{Neighbour, NeighbourLoad};
use crate::workload::{Interrupted, PhaseResult, RunControl};

#[derive(Debug, Default)]
pub struct TrialOutcome {
    pub layout: serde_json::Value,
    pub verified: Option<Verified>,
    pub phases: Vec<PhaseResult>,
    /// Memory limit and peak use, when the configuration sets `memory_limit`.
    pub memory: Option<MemoryUse>,
    /// Emulated disks' counters and the daemon's CPU time.
    pub emulation: Option<EmulationRecord>,
    /// What the monitor saw during each phase (`monitor_interval`).
    pub monitor: Option<MonitorSummary>,
    /// The kernel's writeback settings the workload ran with, and the sync before it.
    pub writeback: Option<WritebackRecord>,
    /// What the writer beside the workload did (`neighbour_rate`).
    pub neighbour: Option<NeighbourLoad>,
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
    pub emulation: Option<EmulationRecord>,
    /// The monitor's record up to the failure, when the workload ran.
    pub monitor: Option<MonitorSummary>,
}

pub trait Executor {
    fn run_trial(
        &mut self,
        spec: &Spec,
        trial: &Trial,
        ctl: &RunControl,
    ) -> Result<TrialOutcome, TrialError>;
}

/// The real thing: fresh file system per trial on loop/zram/real devices.
pub struct RigExecutor {
    ws: Workspace,
    destroy: Vec<PathBuf>,
    shown: BTreeSet<usize>,
    verbose: bool,
    write_logs: Option<PathBuf>,
    monitor_dir: Option<PathBuf>,
    output_dir: Option<PathBuf>,
    /// Other trials run on the host at the same time (`--jobs N`).
    shared_host: bool,
}

impl RigExecutor {
    /// Print every configuration's devices and checks, not one line.
    pub fn verbose(mut self, on: bool) -> Self {
        self.verbose = on;
        self
    }

    pub fn new(spec: &Spec, destroy: Vec<PathBuf>) -> Result<Self> {
        Ok(Self {
            ws: Workspace::new(&spec.work_dir)?,
            destroy,
            shown: BTreeSet::new(),
            verbose: false,
            write_logs: None,
            monitor_dir: None,
            output_dir: None,
            shared_host: false,
        })
    }

    /// Where write logs go (`trial-<N>.wlog`) when the spec's `[emulation]` asks for
    /// them; usually `<results>/write-logs`.
    pub fn with_write_logs(mut self, dir: PathBuf) -> Self {
        self.write_logs = Some(dir);
        self
    }

    /// Other trials run beside this executor's (`jbench run --jobs N`): it leaves
    /// alone what is theirs too. It does not empty the host's page cache before a
    /// trial (that would evict theirs mid-workload; a fresh file system on fresh
    /// devices starts with nothing cached of its own), and the sync that restarts the
    /// writeback and journal clocks is this trial's file systems' (`syncfs`), not the
    /// host's.
    pub fn shared_host(mut self, on: bool) -> Self {
        self.shared_host = on;
        self
    }

    /// Says nothing of configuration `config`'s build (another process of the run
    /// said it already).
    pub fn built_before(mut self, config: usize) -> Self {
        self.shown.insert(config);
        self
    }

    /// Where the monitor's per-interval series go (`trial-<N>.jsonl`); usually
    /// `<results>/monitor`. Without it the summary is still recorded.
    pub fn with_monitor_dir(mut self, dir: PathBuf) -> Self {
        self.monitor_dir = Some(dir);
        self
    }

    /// Where workloads keep what they print, one folder per trial; usually
    /// `<results>/outputs`.
    pub fn with_output_dir(mut self, dir: PathBuf) -> Self {
        self.output_dir = Some(dir);
        self
    }

    /// Starts the trial's monitor, or says why there is none and goes on without.
    fn start_monitor(
        &self,
        spec: &Spec,
        trial: &Trial,
        rig: &rig::Rig,
    ) -> Option<(Monitor, Option<String>)> {
        let interval = spec.monitor_interval?;
        let targets = Targets::of(&rig.fs_device, rig.journal_device.as_deref())
            .with_second(rig.second_device.as_deref());
        let file = layout::monitor_file_name(trial.index);
        let path = self.monitor_dir.as_ref().map(|d| d.join(&file));
        let relative = self.monitor_dir.as_ref().map(|d| match d.file_name() {
            Some(n) => format!("{}/{file}", n.to_string_lossy()),
            None => file.clone(),
        });
        match Monitor::start(targets, interval, path) {
            Ok(m) => Some((m, relative)),
            Err(e) => {
                emit(Event::MonitorOff {
                    trial: trial.index,
                    error: format!("{e:#}"),
                });
                None
            }
        }
    }
}

impl Executor for RigExecutor {
    fn run_trial(
        &mut self,
        spec: &Spec,
        trial: &Trial,
        ctl: &RunControl,
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
                    emulation: None,
                    monitor: None,
                }))
            }
        };
        if !self.shared_host {
            drop_caches().map_err(|e| failed(e, serde_json::Value::Null, None))?;
        }
        let emu = self
            .emu_setup(spec, trial)
            .map_err(|e| failed(e, serde_json::Value::Null, None))?;
        let rig = rig::provision_with(config, &mut self.ws, &self.destroy, &emu)
            .map_err(|e| failed(e, serde_json::Value::Null, None))?;
        let layout = serde_json::to_value(&rig.layout).unwrap_or_default();
        if self.shown.insert(trial.config) {
            emit(Event::ConfigBuilt {
                label: config.label.clone(),
                checks: rig.verified.checks.clone(),
                layout: self.verbose.then(|| rig.layout.to_string()),
            });
        }
        let verified = Some(rig.verified.clone());
        let mut ctl = ctl
            .clone()
            .with_durable(workload.durable)
            .with_output_dir(
                self.output_dir
                    .as_ref()
                    .map(|d| d.join(layout::output_dir_name(trial.index))),
            )
            .with_env(config_env(config, &rig, workload.neighbour_rate));
        // After everything the rig wrote, so the kernel's writeback and commit clocks
        // start with the workload's first write; and before an emulated disk's model
        // starts afresh, so its first request is the workload's too.
        let own: Vec<&std::path::Path> = std::iter::once(rig.mount_point.as_path())
            .chain(rig.second_mount.as_deref())
            .collect();
        let writeback = writeback_clock::before_workload(
            &spec.writeback,
            self.shared_host.then_some(own.as_slice()),
        )
        .map_err(|e| {
            emit(Event::WritebackClock {
                trial: trial.index,
                error: format!("{e:#}"),
            })
        })
        .ok();
        // The cgroup is made fresh per trial so its peak is this trial's alone.
        let limit = config.memory_limit.map(MemoryLimit::create).transpose();
        // A testing aid: `JBENCH_EMU_INJECT_STALL` makes this trial's daemon stall once.
        let stall = emulated::InjectedStall::for_trial(trial.index);
        let session = limit
            .and_then(|limit| EmulatedRun::begin(&rig, &emu, stall?.as_ref()).map(|e| (limit, e)));
        let (mut limit, emulated) = match session {
            Ok(v) => v,
            Err(e) => {
                rig.teardown().map_err(TrialError::Fatal)?;
                return Err(failed(e, layout, verified));
            }
        };
        if let Some(e) = &emulated {
            ctl = ctl.with_marker(e.marker.clone());
        }
        let entered = limit.as_mut().map(|l| l.enter()).transpose();
        // Started last, so its thread shares the workload's CPUs and cgroup, and
        // stopped first.
        let monitor = match entered {
            Ok(_) => self.start_monitor(spec, trial, &rig),
            Err(_) => None,
        };
        if let Some((m, _)) = &monitor {
            ctl = ctl.with_phase_hook(Some(m.hook()));
        }
        let (result, neighbour) = match entered {
            Ok(_) => run_beside_neighbour(workload, &rig.mount_point, &ctl),
            Err(e) => (Err(e), None),
        };
        let monitor = monitor.and_then(|(m, file)| match m.stop(file) {
            Ok(s) => Some(s),
            Err(e) => {
                emit(Event::MonitorLost {
                    trial: trial.index,
                    error: format!("{e:#}"),
                });
                None
            }
        });
        let memory = limit.as_mut().map(|l| {
            let _ = l.leave();
            l.usage()
        });
        drop(limit);
        let (emulation, daemon_failure) = match emulated {
            Some(e) => e.end(&rig),
            None => (None, None),
        };
        // Tear down before judging the result: a device that cannot be released makes
        // every later trial suspect, so that stops the run.
        rig.teardown().map_err(TrialError::Fatal)?;
        let failed_with = |e: anyhow::Error, emulation: Option<EmulationRecord>| match failed(
            e,
            layout.clone(),
            verified.clone(),
        ) {
            TrialError::Failed(mut f) => {
                f.emulation = emulation;
                f.monitor = monitor.clone();
                TrialError::Failed(f)
            }
            other => other,
        };
        match (result, daemon_failure) {
            (Err(e), _) if e.is::<Interrupted>() => Err(TrialError::Interrupted),
            // A disk that failed under the workload makes its figures meaningless even
            // when the workload saw no error (fdtree never fsyncs: its writes can fail
            // later, in writeback).
            (Err(e), Some(why)) => Err(failed_with(e.context(why), emulation)),
            (Ok(_), Some(why)) => Err(failed_with(anyhow::anyhow!(why), emulation)),
            (Ok(phases), None) => Ok(TrialOutcome {
                layout,
                verified,
                phases,
                memory,
                emulation,
                monitor,
                writeback,
                neighbour,
            }),
            (Err(e), None) => Err(failed_with(e, emulation)),
        }
    }
}

impl RigExecutor {
    fn emu_setup(&self, spec: &Spec, trial: &Trial) -> Result<rig::EmuSetup> {
        // A crash recording logs its writes whatever `[emulation]` says.
        let logged = spec.emulation.write_log || trial.recording;
        let write_log = match (&self.write_logs, logged) {
            (Some(dir), true) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
                Some(dir.join(layout::write_log_file_name(trial.index)))
            }
            _ => None,
        };
        let mut options = spec.emulation.clone();
        options.write_log = logged;
        Ok(rig::EmuSetup { options, write_log })
    }
}

/// The part of a trial that runs on emulated disks: the workload pinned away from the
/// daemon's CPU, model timing on, the daemon's CPU time and counters taken around it.
struct EmulatedRun {
    restore_cpus: Option<Vec<usize>>,
    workload_cpus: Vec<usize>,
    cpu_before: (f64, f64),
    marker: Option<std::sync::Arc<std::fs::File>>,
}

impl EmulatedRun {
    /// `None` when the rig has no emulated disk.
    fn begin(
        rig: &rig::Rig,
        emu: &rig::EmuSetup,
        stall: Option<&emulated::InjectedStall>,
    ) -> Result<Option<Self>> {
        let Some(daemon) = rig.daemon() else {
            return Ok(None);
        };
        // Everything that can fail comes before the pinning, so an error cannot leave
        // this thread pinned.
        let marker = match daemon.write_log() {
            Some(_) if emu.options.write_log => Some(std::sync::Arc::new(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(daemon.mountpoint().join(crate::emu::daemon::CONTROL_FILE))?,
            )),
            _ => None,
        };
        daemon.set_timing(true)?;
        if let Some(stall) = stall {
            daemon.inject_stall(stall)?;
        }
        let mut restore_cpus = None;
        let mut workload_cpus = Vec::new();
        if !daemon.cpus().is_empty() {
            let others: Vec<usize> = emulated::allowed_cpus()
                .into_iter()
                .filter(|c| !daemon.cpus().contains(c))
                .collect();
            if !others.is_empty() {
                restore_cpus = Some(emulated::pin_current_thread(&others)?);
                workload_cpus = others;
            }
        }
        Ok(Some(Self {
            restore_cpus,
            workload_cpus,
            cpu_before: daemon.cpu_seconds().unwrap_or_default(),
            marker,
        }))
    }

    /// The record of the run, and why the daemon failed if it did.
    fn end(self, rig: &rig::Rig) -> (Option<EmulationRecord>, Option<String>) {
        if let Some(cpus) = &self.restore_cpus {
            let _ = emulated::pin_current_thread(cpus);
        }
        let Some(daemon) = rig.daemon() else {
            return (None, None);
        };
        let failure = daemon.failure();
        let cpu_after = daemon.cpu_seconds().unwrap_or(self.cpu_before);
        let stats = if failure.is_none() {
            daemon.stats().ok()
        } else {
            None
        };
        let stats = stats.unwrap_or_default();
        let record = EmulationRecord {
            daemon_cpus: daemon.cpus().to_vec(),
            workload_cpus: self.workload_cpus,
            daemon_cpu_user_seconds: cpu_after.0 - self.cpu_before.0,
            daemon_cpu_system_seconds: cpu_after.1 - self.cpu_before.1,
            disks: stats.disks,
            write_log: daemon.write_log().map(|p| p.display().to_string()),
            log_records: stats.log_records,
            log_bytes: stats.log_bytes,
            read_mode: stats.read_mode,
        };
        (Some(record), failure)
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

/// The configuration's `env`, with the second file system's mount point when the rig
/// has one: what a command workload is handed.
/// The workload's run, beside its neighbour (`neighbour_rate`) for the whole of it. A
/// neighbour that failed leaves the workload's figures without the load they were
/// asked under: the trial fails with it.
fn run_beside_neighbour(
    workload: &crate::experiment::spec::WorkloadSpec,
    mount: &std::path::Path,
    ctl: &RunControl,
) -> (Result<Vec<PhaseResult>>, Option<NeighbourLoad>) {
    let neighbour = match workload.neighbour_rate.map(|r| Neighbour::start(mount, r)) {
        Some(Err(e)) => return (Err(e), None),
        Some(Ok(n)) => Some(n),
        None => None,
    };
    let result = workload.engine.run(mount, ctl);
    match neighbour.map(Neighbour::stop) {
        Some(Ok(load)) => (result, Some(load)),
        Some(Err(e)) => (result.and(Err(e)), None),
        None => (result, None),
    }
}

fn config_env(
    config: &crate::experiment::config::Config,
    rig: &rig::Rig,
    neighbour_rate: Option<u64>,
) -> std::collections::BTreeMap<String, String> {
    let mut env = config.env.clone();
    // A command may want to say (or log) what load it ran under.
    env.insert(
        crate::workload::command::NEIGHBOUR_RATE_ENV.into(),
        neighbour_rate.unwrap_or(0).to_string(),
    );
    if let Some(m) = &rig.second_mount {
        env.insert(
            crate::workload::command::SECOND_FS_ENV.into(),
            m.display().to_string(),
        );
    }
    env
}
