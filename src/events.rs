//! What the library tells the person running jbench while it works, as typed events
//! (criterion's `Report` is the model): library code emits an [`Event`] and goes on;
//! the command line decides how it reads (`cli/` installs its [`Reporter`]). Without
//! one, each event's own line goes to standard error, so the library alone says what
//! it always said.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// Something that happened that a person should hear of, with its figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A guard could not release what it holds (a mount, a loop device, an image, the
    /// daemon, a cgroup): it is left for `jbench cleanup`.
    ReleaseFailed {
        error: String,
    },
    /// The rig's teardown: one guard failed; the others were still released.
    TeardownFailed {
        error: String,
    },
    /// A host setting could not be put back; `file` keeps it for `jbench cleanup`.
    HostSettingKept {
        error: String,
        what: String,
        file: PathBuf,
    },
    /// A trial directory still has a mount under it, so it is left in place.
    StillMounted {
        dir: PathBuf,
    },
    /// A trial directory could not be removed.
    DirectoryKept {
        dir: PathBuf,
        error: String,
    },
    /// The writeback settings a killed jbench left pinned were put back.
    WritebackRestored {
        file: PathBuf,
    },
    /// They could not be.
    WritebackLeftPinned {
        error: String,
    },
    /// This trial waits while another jbench's trial holds the kernel's dirty limits.
    WaitingForDirtyLimits {
        pid: i32,
        in_effect: String,
        wanted: String,
    },
    /// A step of a long command's work (the crash lab, `device qualify`, a selftest,
    /// the A/A check of `--jobs`): progress, silent with `--quiet`.
    Step {
        of: Activity,
        text: String,
    },
    /// The crash lab failed on a recording (an error, not a verdict).
    LabFailed {
        config: String,
        workload: String,
        error: String,
    },
    /// A shard's attempt was sealed, or not (`missing` trials have no record).
    ShardSealed {
        index: usize,
        count: usize,
        seal: PathBuf,
    },
    ShardNotSealed {
        index: usize,
        count: usize,
        missing: String,
    },
    /// A line of `trials.jsonl` is left out of the statistics: `at` is the file and
    /// line.
    RecordSetAside {
        at: String,
        why: String,
    },
    /// The torn last line of `trials.jsonl` (an interrupted run) is ignored.
    TornLine {
        file: PathBuf,
        line: usize,
        error: String,
    },
    /// The device daemon could not mark itself an I/O flusher.
    NoIoFlusher {
        error: String,
    },
    /// The device daemon refused a control message (its log, which the rig quotes).
    DaemonControl {
        error: String,
    },
    /// What a workload will make, said before it starts (fdtree's tree).
    WorkloadSize {
        note: String,
    },
    /// A user's command: a bad durable line, or processes it left behind.
    CommandWarning {
        text: String,
    },
    /// A scratch directory of `jbench device qualify` was left behind.
    ScratchLeft {
        dir: PathBuf,
        error: String,
    },
    /// A second Ctrl-C (or SIGTERM): acknowledged; the cleanup goes on.
    Stopping,
    /// A third: jbench exits before its cleanup is done; `left` is what this machine's
    /// live jbench sessions still hold.
    ForcedExit {
        left: Vec<String>,
    },

    // A run's progress (`jbench run`, `jbench crash`): silent with `--quiet`.
    /// A run of `total` trials begins, `done` of them recorded before it (a resumed
    /// run); about `after_seconds` of work follow its last trial (the crash lab).
    RunBegins {
        total: usize,
        done: usize,
        after_seconds: f64,
    },
    /// A resumed run: `done` of its `total` trials were recorded before.
    Resuming {
        done: usize,
        total: usize,
    },
    /// The run's `n`th trial (1-based, in the order trials start) begins.
    TrialBegins {
        n: usize,
        what: String,
    },
    /// The running trial's workload entered phase `name`.
    PhaseBegins {
        name: String,
    },
    /// A trial ended and was recorded: its one-line summary.
    TrialEnds {
        summary: String,
    },
    /// The adaptive rule added a trial to the run, for this reason.
    TrialAdded {
        why: String,
    },
    /// The run is over (finished, stopped or failed).
    RunEnds,
    /// A configuration's devices and file system were built and verified: the checks
    /// that passed, and with `-v` the layout too.
    ConfigBuilt {
        label: String,
        checks: Vec<String>,
        layout: Option<String>,
    },
    /// A trial runs without its monitor, or lost the monitor's record.
    MonitorOff {
        trial: usize,
        error: String,
    },
    MonitorLost {
        trial: usize,
        error: String,
    },
    /// The writeback and journal clocks could not be restarted before the workload.
    WritebackClock {
        trial: usize,
        error: String,
    },
    /// A trial's figures measured nothing (a zero or non-finite phase time): it is
    /// recorded as failed.
    TrialExcluded {
        trial: usize,
        why: String,
    },
    /// A trial run beside others could not be torn down: the run stops once the others
    /// end.
    TrialFatal {
        why: String,
    },
    /// What a trial running in a child process (`--jobs N`) said.
    Beside {
        trial: usize,
        line: String,
    },
}

/// Whose steps an [`Event::Step`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    CrashLab,
    Qualify,
    Selftest,
    JobsCheck,
}

impl Event {
    /// The event as one line of a terminal, as jbench has always worded it.
    pub fn line(&self) -> String {
        match self {
            Event::ReleaseFailed { error } => format!("jbench: {error}"),
            Event::TeardownFailed { error } => format!("jbench: teardown: {error}"),
            Event::HostSettingKept { error, what, file } => format!(
                "jbench: {error}; the host's {what} are kept in {} for `jbench cleanup`",
                file.display()
            ),
            Event::StillMounted { dir } => format!(
                "jbench: something is still mounted under {}; leaving it for `jbench cleanup`",
                dir.display()
            ),
            Event::DirectoryKept { dir, error } => {
                format!("jbench: cannot remove {}: {error}", dir.display())
            }
            Event::WritebackRestored { file } => format!(
                "jbench: restored the writeback settings a killed jbench left pinned ({})",
                file.display()
            ),
            Event::WritebackLeftPinned { error } => format!(
                "jbench: warning: {error}; a killed jbench left the writeback settings pinned: run `jbench cleanup` as root"
            ),
            Event::WaitingForDirtyLimits {
                pid,
                in_effect,
                wanted,
            } => format!(
                "jbench: waiting for jbench {pid}: its trial holds the kernel's dirty limits at {in_effect}, this trial needs {wanted}"
            ),
            Event::Step { text, .. } => format!("jbench: {text}"),
            Event::LabFailed {
                config,
                workload,
                error,
            } => format!("jbench: crash lab on {config} / {workload}: {error}"),
            Event::ShardSealed { index, count, seal } => {
                format!("jbench: shard {index}/{count} sealed: {}", seal.display())
            }
            Event::ShardNotSealed {
                index,
                count,
                missing,
            } => format!("jbench: shard {index}/{count} not sealed: trials {missing} have no record"),
            Event::RecordSetAside { at, why } => format!(
                "jbench: warning: {at}: {why}; the trial is excluded from the statistics"
            ),
            Event::TornLine { file, line, error } => format!(
                "jbench: warning: ignoring a torn last line of {} (line {line}): {error}",
                file.display()
            ),
            Event::NoIoFlusher { error } => format!(
                "jbench device-daemon: cannot set PR_SET_IO_FLUSHER ({error}); the daemon may stall when the workload dirties more than the host's dirty limit"
            ),
            Event::DaemonControl { error } => {
                format!("jbench device-daemon: control: {error}")
            }
            Event::WorkloadSize { note } => format!("jbench: {note}"),
            Event::CommandWarning { text } => format!("warning: {text}"),
            Event::ScratchLeft { dir, error } => format!(
                "jbench: cannot remove the scratch directory {}: {error}; remove it by hand",
                dir.display()
            ),
            Event::Stopping => "jbench: stopping: releasing mounts and devices first (a third Ctrl-C exits at once and leaves them to `jbench cleanup`)".to_string(),
            Event::ForcedExit { left } if left.is_empty() => {
                "jbench: exiting at once; nothing of this run is mounted or attached".to_string()
            }
            Event::ForcedExit { left } => format!(
                "jbench: exiting at once; left behind: {}. Release them with: jbench cleanup",
                left.join(", ")
            ),
            // A terminal draws these as a bar; a log has no line for them.
            Event::RunBegins { .. } | Event::PhaseBegins { .. } | Event::RunEnds => {
                String::new()
            }
            Event::Resuming { done, total } => {
                format!("resuming: {done} of {total} trials already recorded")
            }
            Event::TrialBegins { n, what } => format!("[{n}] {what} ..."),
            Event::TrialEnds { summary } => summary.clone(),
            Event::TrialAdded { why } => why.clone(),
            Event::ConfigBuilt {
                label,
                checks,
                layout: Some(layout),
            } => format!("{label}: {layout}\n{label}: verified: {}", checks.join("; ")),
            Event::ConfigBuilt {
                label,
                checks,
                layout: None,
            } => format!(
                "{label}: built and verified ({}; -v shows them)",
                crate::units::count(checks.len() as u64, "check")
            ),
            Event::MonitorOff { trial, error } => {
                format!("monitor off for trial {trial}: {error}")
            }
            Event::MonitorLost { trial, error } => format!("monitor of trial {trial}: {error}"),
            Event::WritebackClock { trial, error } | Event::TrialExcluded { trial, why: error } => {
                format!("trial {trial}: {error}")
            }
            Event::TrialFatal { why } => why.clone(),
            Event::Beside { trial, line } => format!("  [trial {trial}] {line}"),
        }
    }

    /// Whether it tells how long work is getting on, which `--quiet` silences (what
    /// went wrong is always said).
    pub fn is_progress(&self) -> bool {
        matches!(
            self,
            Event::Step { .. }
                | Event::RunBegins { .. }
                | Event::Resuming { .. }
                | Event::TrialBegins { .. }
                | Event::PhaseBegins { .. }
                | Event::TrialEnds { .. }
                | Event::TrialAdded { .. }
                | Event::RunEnds
                | Event::ConfigBuilt { .. }
                | Event::MonitorOff { .. }
                | Event::MonitorLost { .. }
                | Event::WritebackClock { .. }
                | Event::TrialExcluded { .. }
                | Event::TrialFatal { .. }
                | Event::Beside { .. }
        )
    }
}

/// Tells a step of `of`'s work ([`Event::Step`]).
pub fn step(of: Activity, text: impl Into<String>) {
    emit(Event::Step {
        of,
        text: text.into(),
    });
}

/// Whoever hears the library's events: the command line's terminal, a test.
pub trait Reporter: Send + Sync {
    fn report(&self, event: &Event);
}

static REPORTER: RwLock<Option<Arc<dyn Reporter>>> = RwLock::new(None);

/// Makes `reporter` hear every event from now on (`None`: standard error); returns
/// the one it replaces.
pub fn set_reporter(reporter: Option<Arc<dyn Reporter>>) -> Option<Arc<dyn Reporter>> {
    let mut r = REPORTER.write().unwrap_or_else(|e| e.into_inner());
    std::mem::replace(&mut *r, reporter)
}

thread_local! {
    static SCOPED: std::cell::RefCell<Option<Arc<dyn Reporter>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `reporter` hearing the events this thread emits meanwhile (and only
/// those: other threads' go on to the process's reporter). A test hears its own run.
pub fn scoped<T>(reporter: Arc<dyn Reporter>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<dyn Reporter>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            SCOPED.with(|s| *s.borrow_mut() = before);
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.borrow_mut().replace(reporter)));
    f()
}

/// Tells the reporter, or standard error when there is none. Never fails: an event
/// is said from `Drop` too, where nothing may fail.
pub fn emit(event: Event) {
    // `try_with`: during a thread's exit its scoped reporter may be gone already.
    let scoped = SCOPED.try_with(|s| s.borrow().clone()).ok().flatten();
    let reporter = scoped.or_else(|| REPORTER.read().unwrap_or_else(|e| e.into_inner()).clone());
    match reporter {
        Some(r) => r.report(&event),
        None => {
            let line = event.line();
            if !line.is_empty() {
                eprintln!("{line}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Keeps the events of one test's own paths, whatever other tests emit meanwhile.
    struct Keep(Mutex<Vec<Event>>, &'static str);

    impl Reporter for Keep {
        fn report(&self, event: &Event) {
            if event.line().contains(self.1) {
                self.0.lock().unwrap().push(event.clone());
            }
        }
    }

    #[test]
    fn a_reporter_hears_typed_events_and_their_lines_keep_jbenchs_words() {
        let keep = Arc::new(Keep(Mutex::new(Vec::new()), "/events-test/"));
        let before = set_reporter(Some(keep.clone()));
        emit(Event::StillMounted {
            dir: "/events-test/t1".into(),
        });
        emit(Event::WritebackRestored {
            file: "/events-test/pinned".into(),
        });
        set_reporter(before);
        let got = keep.0.lock().unwrap().clone();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[0].line(),
            "jbench: something is still mounted under /events-test/t1; leaving it for `jbench cleanup`"
        );
        assert!(matches!(&got[1], Event::WritebackRestored { file } if file.ends_with("pinned")));
    }

    /// Keeps every event it hears.
    #[derive(Default)]
    struct All(Mutex<Vec<Event>>);

    impl Reporter for All {
        fn report(&self, event: &Event) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn a_scoped_reporter_hears_its_own_threads_events_only_and_only_meanwhile() {
        let all = Arc::new(All::default());
        scoped(all.clone(), || {
            step(Activity::Qualify, "random 4 KiB reads");
            std::thread::spawn(|| {
                emit(Event::StillMounted {
                    dir: "/events-test/other-thread".into(),
                })
            })
            .join()
            .unwrap();
        });
        emit(Event::StillMounted {
            dir: "/events-test/after".into(),
        });
        let got = all.0.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![Event::Step {
                of: Activity::Qualify,
                text: "random 4 KiB reads".into()
            }]
        );
        assert_eq!(got[0].line(), "jbench: random 4 KiB reads");
    }

    /// `--quiet` silences how work is getting on, never what went wrong.
    #[test]
    fn progress_is_told_apart_from_what_went_wrong() {
        let progress = [
            Event::TrialBegins {
                n: 1,
                what: "internal / t / rep 1".into(),
            },
            Event::Step {
                of: Activity::CrashLab,
                text: "x".into(),
            },
            Event::MonitorOff {
                trial: 0,
                error: "no /proc".into(),
            },
        ];
        assert!(progress.iter().all(Event::is_progress));
        let wrong = [
            Event::ReleaseFailed {
                error: "busy".into(),
            },
            Event::LabFailed {
                config: "c".into(),
                workload: "w".into(),
                error: "e".into(),
            },
            Event::RecordSetAside {
                at: "trials.jsonl:3".into(),
                why: "bad".into(),
            },
        ];
        assert!(!wrong.iter().any(Event::is_progress));
        // A log has no line for what only a bar draws.
        assert_eq!(Event::RunEnds.line(), "");
        let built = Event::ConfigBuilt {
            label: "internal".into(),
            checks: vec!["journal internal".into(), "size 1G".into()],
            layout: None,
        };
        assert_eq!(
            built.line(),
            "internal: built and verified (2 checks; -v shows them)"
        );
    }
}
