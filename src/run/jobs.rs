//! Trials side by side (`jbench run --jobs N`): each trial runs in a `jbench trial`
//! child process of its own, so it has its own memory cgroup (a cgroup holds whole
//! processes), its own device daemons and its own Ctrl-C handling, while this process
//! keeps the only writer of `trials.jsonl`. A trial starts, in plan order, when a slot
//! is free and it may share the host with every trial running (`experiment::slots`);
//! the next one never overtakes it, so the plan's interleaving is kept.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::experiment::plan::Trial;
use crate::experiment::slots::Slot;
use crate::monitor::host_load::RUN_ROOT_ENV;
use crate::results::record::{Concurrency, TrialRecord};

/// Exit status of a child that was interrupted (as `jbench run`'s own).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit status of a child that could not release its devices: the run must stop.
pub const EXIT_FATAL: i32 = 4;

/// How to start a trial's child process.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    /// The jbench executable.
    pub exe: PathBuf,
    /// The results directory: the child reads the experiment from its `spec.toml` and
    /// writes its write logs, monitor samples and outputs there.
    pub dir: PathBuf,
    /// `--executor scripted` (tests without devices).
    pub scripted: bool,
    pub destroy: Vec<PathBuf>,
    pub verbose: bool,
    /// Configurations whose build a child has already described.
    pub shown: BTreeSet<usize>,
}

impl ChildCommand {
    fn command(&mut self, trial: &Trial) -> Command {
        let mut c = Command::new(&self.exe);
        c.arg("trial")
            .arg("--results")
            .arg(&self.dir)
            .args(["--index", &trial.index.to_string()])
            .args(["--config", &trial.config.to_string()])
            .args(["--workload", &trial.workload.to_string()])
            .args(["--rep", &trial.rep.to_string()]);
        if trial.recording {
            c.arg("--recording");
        }
        if self.scripted {
            c.args(["--executor", "scripted"]);
        }
        for d in &self.destroy {
            c.arg("--destroy-data-on").arg(d);
        }
        if self.verbose {
            c.arg("--verbose");
        }
        if self.shown.insert(trial.config) {
            c.arg("--show-build");
        }
        // A process group of its own: a Ctrl-C at the terminal reaches the run alone,
        // which passes it on once. A child that got it from both would take the second
        // as "exit at once" and leave its devices behind.
        c.env(RUN_ROOT_ENV, std::process::id().to_string())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: prctl in the forked child before exec; async-signal-safe. A child
        // whose run died is told to stop (SIGTERM tears its rig down) rather than
        // going on with nobody to record it.
        unsafe {
            c.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    }
}

/// How a child's trial ended.
#[derive(Debug)]
pub enum Ended {
    /// It ran (successfully or not) and this is its record.
    Recorded(Box<TrialRecord>),
    /// Ctrl-C: nothing recorded, `--resume` redoes it.
    Interrupted,
    /// Its devices could not be released, or the child itself failed: stop the run.
    Fatal(String),
}

enum Msg {
    Line(usize, String),
    Done(usize, Ended),
}

struct Running {
    trial: Trial,
    slot: Slot,
    pid: u32,
    beside: BTreeSet<usize>,
    /// Asked to stop already: a second signal would make it exit without tearing down.
    signalled: bool,
}

/// Up to `jobs` trials at once, each in its own child process.
pub struct Pool {
    jobs: usize,
    /// The host's memory cgroups are v1 (`Slot::on_host`).
    cgroup_v1: bool,
    child: ChildCommand,
    running: BTreeMap<usize, Running>,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
}

impl Pool {
    pub fn new(jobs: usize, child: ChildCommand) -> Self {
        let jobs = jobs.max(1);
        let (tx, rx) = channel();
        Self {
            jobs,
            cgroup_v1: crate::rig::memcg::is_v1(),
            child,
            running: BTreeMap::new(),
            tx,
            rx,
        }
    }

    pub fn jobs(&self) -> usize {
        self.jobs
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// The slot of `trial` of `spec` on this host.
    pub fn slot(&self, spec: &crate::experiment::spec::Spec, trial: &Trial) -> Slot {
        Slot::of(spec, trial).on_host(self.cgroup_v1)
    }

    /// Whether a trial of `slot` may start now.
    pub fn may_start(&self, slot: Slot) -> bool {
        may_start(self.jobs, self.running.values().map(|r| r.slot), slot)
    }

    /// Starts `trial` in a child process.
    pub fn start(&mut self, trial: Trial, slot: Slot) -> Result<()> {
        self.start_as(trial, slot, true)
    }

    /// Starts `trial` in a child process that runs it as a run of one trial at a time
    /// would (`shared` false: it empties the host's page cache first and syncs the whole
    /// host before the workload): the A/A check's trial alone, with nothing beside it.
    pub fn start_as(&mut self, trial: Trial, slot: Slot, shared: bool) -> Result<()> {
        let mut command = self.child.command(&trial);
        if !shared {
            command.arg("--alone");
        }
        let mut child = command.spawn().with_context(|| {
            format!(
                "cannot start {} for trial {}",
                self.child.exe.display(),
                trial.index
            )
        })?;
        let pid = child.id();
        let index = trial.index;
        let stderr = child.stderr.take().expect("piped stderr");
        let lines = self.tx.clone();
        let relay = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines.send(Msg::Line(index, line));
            }
        });
        let mut stdout = child.stdout.take().expect("piped stdout");
        let done = self.tx.clone();
        std::thread::spawn(move || {
            let mut out = String::new();
            let read = stdout.read_to_string(&mut out);
            let status = child.wait();
            // Every line it said comes before its end.
            let _ = relay.join();
            let ended = match (read, status) {
                (Ok(_), Ok(status)) => ended(index, status.code(), &out),
                (Err(e), _) | (_, Err(e)) => {
                    Ended::Fatal(format!("trial {index}: lost its child process: {e}"))
                }
            };
            let _ = done.send(Msg::Done(index, ended));
        });
        let beside: BTreeSet<usize> = self.running.keys().copied().collect();
        for r in self.running.values_mut() {
            r.beside.insert(index);
        }
        self.running.insert(
            index,
            Running {
                trial,
                slot,
                pid,
                beside,
                signalled: false,
            },
        );
        Ok(())
    }

    /// Waits for the next trial to end, passing on what the running children say (as
    /// [`Event::Beside`](crate::events::Event::Beside)) when `pass_on`;
    /// `None` after `poll` without an end, so the caller can look at Ctrl-C.
    pub fn wait(&mut self, poll: Duration, pass_on: bool) -> Option<(Trial, Ended, Concurrency)> {
        loop {
            match self.rx.recv_timeout(poll) {
                Ok(Msg::Line(trial, line)) => {
                    if pass_on {
                        crate::events::emit(crate::events::Event::Beside { trial, line })
                    }
                }
                Ok(Msg::Done(index, ended)) => {
                    let r = self.running.remove(&index)?;
                    let c = Concurrency {
                        jobs: self.jobs as u32,
                        beside: r.beside.into_iter().collect(),
                    };
                    return Some((r.trial, ended, c));
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return None
                }
            }
        }
    }

    /// Asks every running child to stop as Ctrl-C would (their trials tear down and
    /// are not recorded).
    pub fn interrupt(&mut self) {
        for r in self.running.values_mut().filter(|r| !r.signalled) {
            r.signalled = true;
            // SAFETY: kill(2) has no memory effects. The pid is a child's we started;
            // its waiter reaps it just before reporting its end, so only in that
            // instant could the pid name another process, and pids are handed out in
            // turn, not reused at once.
            unsafe {
                libc::kill(r.pid as libc::pid_t, libc::SIGINT);
            }
        }
    }
}

/// Whether a trial of `slot` may start beside trials of `running`, with `jobs` slots.
pub fn may_start(jobs: usize, running: impl Iterator<Item = Slot>, slot: Slot) -> bool {
    let mut n = 0;
    for r in running {
        if !slot.can_share(r) {
            return false;
        }
        n += 1;
    }
    n < jobs
}

/// What a child's exit status and output mean.
fn ended(index: usize, code: Option<i32>, out: &str) -> Ended {
    match code {
        Some(0) => match out.lines().rev().find(|l| !l.trim().is_empty()) {
            Some(line) => match serde_json::from_str::<TrialRecord>(line) {
                Ok(r) => Ended::Recorded(Box::new(r)),
                Err(e) => Ended::Fatal(format!(
                    "trial {index}: its child process printed no record it could be read from ({e})"
                )),
            },
            None => Ended::Fatal(format!("trial {index}: its child process printed no record")),
        },
        Some(EXIT_INTERRUPTED) | None => Ended::Interrupted,
        Some(c) => Ended::Fatal(format!(
            "trial {index} could not be torn down (its child process exited with status {c}; see the lines above); stopping the run"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Slot = Slot::Shared {
        memory_limit: Some(512 << 20),
    };
    const B: Slot = Slot::Shared { memory_limit: None };

    #[test]
    fn a_trial_starts_while_a_slot_is_free_and_it_shares_with_every_running_one() {
        assert!(may_start(2, [].into_iter(), A));
        assert!(may_start(2, [A].into_iter(), A));
        assert!(!may_start(2, [A, A].into_iter(), A), "both slots taken");
        assert!(!may_start(4, [A].into_iter(), B), "another memory limit");
        assert!(!may_start(4, [A].into_iter(), Slot::Alone));
        assert!(!may_start(4, [Slot::Alone].into_iter(), A));
        assert!(may_start(4, [].into_iter(), Slot::Alone));
        assert!(!may_start(1, [A].into_iter(), A));
    }

    #[test]
    fn a_childs_end_is_read_from_its_status_and_last_line() {
        assert!(matches!(ended(3, Some(130), ""), Ended::Interrupted));
        assert!(matches!(ended(3, None, ""), Ended::Interrupted));
        match ended(3, Some(4), "") {
            Ended::Fatal(m) => assert!(m.contains("trial 3 could not be torn down"), "{m}"),
            other => panic!("{other:?}"),
        }
        match ended(3, Some(0), "not json\n") {
            Ended::Fatal(m) => assert!(m.contains("no record"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
