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
    ReleaseFailed { error: String },
    /// The rig's teardown: one guard failed; the others were still released.
    TeardownFailed { error: String },
    /// A host setting could not be put back; `file` keeps it for `jbench cleanup`.
    HostSettingKept {
        error: String,
        what: String,
        file: PathBuf,
    },
    /// A trial directory still has a mount under it, so it is left in place.
    StillMounted { dir: PathBuf },
    /// A trial directory could not be removed.
    DirectoryKept { dir: PathBuf, error: String },
    /// The writeback settings a killed jbench left pinned were put back.
    WritebackRestored { file: PathBuf },
    /// They could not be.
    WritebackLeftPinned { error: String },
    /// This trial waits while another jbench's trial holds the kernel's dirty limits.
    WaitingForDirtyLimits {
        pid: i32,
        in_effect: String,
        wanted: String,
    },
    /// A line of the crash lab's progress.
    Lab { text: String },
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
    RecordSetAside { at: String, why: String },
    /// The torn last line of `trials.jsonl` (an interrupted run) is ignored.
    TornLine {
        file: PathBuf,
        line: usize,
        error: String,
    },
    /// The device daemon could not mark itself an I/O flusher.
    NoIoFlusher { error: String },
    /// The device daemon refused a control message (its log, which the rig quotes).
    DaemonControl { error: String },
    /// What a workload will make, said before it starts (fdtree's tree).
    WorkloadSize { note: String },
    /// A user's command: a bad durable line, or processes it left behind.
    CommandWarning { text: String },
    /// A scratch directory of `jbench device qualify` was left behind.
    ScratchLeft { dir: PathBuf, error: String },
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
            Event::Lab { text } => format!("jbench: {text}"),
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
        }
    }
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

/// Tells the reporter, or standard error when there is none. Never fails: an event
/// is said from `Drop` too, where nothing may fail.
pub fn emit(event: Event) {
    let reporter = REPORTER.read().unwrap_or_else(|e| e.into_inner()).clone();
    match reporter {
        Some(r) => r.report(&event),
        None => eprintln!("{}", event.line()),
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
}
