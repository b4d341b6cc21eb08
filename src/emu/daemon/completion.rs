//! The completion thread: every answer waits in a deadline-ordered queue until its
//! model time is up, so the FUSE thread never sleeps and one disk's slow request does
//! not hold back another disk's.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuser::{ReplyData, ReplyEmpty, ReplyWrite};

use super::state::Inner;
use super::stats::{DaemonStats, LATE_AFTER, OVERDUE_AFTER};
use crate::emu::writelog::RecordKind;

/// A stall armed by the control command `inject stall io|answer MS` (a testing aid,
/// docs/devices.md "Stalls"): the next disk request's FUSE thread sleeps MS before its
/// image I/O (`io`), or the completion thread sleeps MS before sending the next answer
/// it sends (`answer`). One daemon per process, so one per process.
pub(super) struct InjectedStalls {
    io_ms: AtomicU64,
    answer_ms: AtomicU64,
}

pub(super) static INJECTED: InjectedStalls = InjectedStalls {
    io_ms: AtomicU64::new(0),
    answer_ms: AtomicU64::new(0),
};

impl InjectedStalls {
    /// Arms a stall of `ms` at `at` (`io` or `answer`).
    pub(super) fn arm(&self, at: &str, ms: u64) -> anyhow::Result<()> {
        match at {
            "io" => self.io_ms.store(ms, Ordering::SeqCst),
            "answer" => self.answer_ms.store(ms, Ordering::SeqCst),
            _ => anyhow::bail!("a stall is injected at `io` or `answer`, not `{at}`"),
        }
        Ok(())
    }

    /// Sleeps out an armed `io` stall, once.
    pub(super) fn io(&self) {
        Self::take(&self.io_ms);
    }

    fn answer(&self) {
        Self::take(&self.answer_ms);
    }

    fn take(slot: &AtomicU64) {
        // A load first: the common case (nothing armed) stays a plain read.
        if slot.load(Ordering::Relaxed) != 0 {
            let ms = slot.swap(0, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

pub(super) enum Answer {
    Write(ReplyWrite, u32),
    Data(ReplyData, Vec<u8>),
    Empty(ReplyEmpty),
}

impl Answer {
    pub(super) fn send(self) {
        match self {
            Answer::Write(r, n) => r.written(n),
            Answer::Data(r, d) => r.data(&d),
            Answer::Empty(r) => r.ok(),
        }
    }
}

pub(super) struct LogEntry {
    pub(super) kind: RecordKind,
    pub(super) disk: u8,
    pub(super) offset: u64,
    pub(super) len: u64,
    /// The event-clock tick of the request's arrival; `None` for a marker, which
    /// arrives when it is written.
    pub(super) issued: Option<u64>,
    pub(super) payload: Vec<u8>,
}

pub(super) struct Pending {
    pub(super) at: Instant,
    pub(super) seq: u64,
    pub(super) disk: Option<usize>,
    pub(super) answer: Answer,
    pub(super) log: Option<LogEntry>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // Reversed: BinaryHeap is a max-heap and the earliest deadline must come first.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) heap: BinaryHeap<Pending>,
    pub(super) closed: bool,
}

impl Inner {
    /// Counts the answer to a request for disk `disk`, due `at` and sent `sent`:
    /// `late`, `overdue` and the worst lateness (docs/devices.md, "Stalls").
    pub(super) fn answered(&self, disk: usize, at: Instant, sent: Instant) {
        let lateness = sent.saturating_duration_since(at);
        if lateness <= LATE_AFTER {
            return;
        }
        let mut st = self.disks[disk]
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let since = at.saturating_duration_since(st.start);
        st.stats.answered_late(lateness, since);
    }

    /// Adds to `stats` (a snapshot of the counters) the answers still waiting more
    /// than [`OVERDUE_AFTER`] past their deadline at `now`: a completion thread that
    /// stalls has not counted them yet, and may not before the snapshot is read.
    pub(super) fn add_waiting_overdue(&self, stats: &mut DaemonStats, now: Instant) {
        let waiting: Vec<(usize, Instant)> = {
            let q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            q.heap
                .iter()
                .filter(|p| now.saturating_duration_since(p.at) > OVERDUE_AFTER)
                .filter_map(|p| Some((p.disk?, p.at)))
                .collect()
        };
        for (disk, at) in waiting {
            let start = self.disks[disk]
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .start;
            if let Some(d) = stats.disks.get_mut(disk) {
                d.answered_late(
                    now.saturating_duration_since(at),
                    at.saturating_duration_since(start),
                );
            }
        }
    }
}

/// The completion thread: answers each pending request at its deadline, in deadline
/// order, writing its log record first.
pub(super) fn completer(inner: Arc<Inner>) {
    // The receiving thread shares the daemon's CPU and can be busy copying a burst of
    // writes into the image; answers must not wait for it. A real-time priority above
    // its own (`priority`) lets this thread preempt it the moment a deadline is due (it never runs long: it
    // sleeps until the next deadline and spins at most the last 80 µs). Without the
    // privilege it stays at normal priority, and late answers are counted.
    let param = libc::sched_param {
        sched_priority: super::priority::ANSWERS,
    };
    // SAFETY: plain syscall on the calling thread with a valid parameter block.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
    }
    let mut q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let now = Instant::now();
        match q.heap.peek() {
            None if q.closed => return,
            None => {
                q = inner.wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
            Some(p) if p.at <= now => {
                let p = q.heap.pop().expect("peeked");
                drop(q);
                INJECTED.answer();
                if let Some(e) = &p.log {
                    inner.write_log(e);
                }
                if let Some(i) = p.disk {
                    // Measured as the answer goes out: a slow log write delays it too.
                    inner.answered(i, p.at, Instant::now());
                }
                p.answer.send();
                q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            }
            Some(p) => {
                let wait = p.at - now;
                if wait < Duration::from_micros(80) {
                    // Condvar timeouts overshoot by tens of µs; spin the last stretch.
                    drop(q);
                    while Instant::now() < now + wait {
                        std::hint::spin_loop();
                    }
                    q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
                } else {
                    q = inner
                        .wake
                        .wait_timeout(q, wait - Duration::from_micros(50))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        }
    }
}
