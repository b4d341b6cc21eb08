//! The completion thread: every answer waits in a deadline-ordered queue until its
//! model time is up, so the FUSE thread never sleeps and one disk's slow request does
//! not hold back another disk's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::queue::INJECTED;
use super::state::Inner;
use super::stats::{DaemonStats, LATE_AFTER, OVERDUE_AFTER};

impl Inner {
    /// Counts the answer to a request for disk `disk`, due `at` and sent `sent`:
    /// `late`, `overdue` and the worst lateness (docs/devices.md, "Stalls").
    pub(super) fn answered(&self, disk: usize, at: Instant, sent: Instant) {
        let lateness = sent.saturating_duration_since(at);
        self.disks[disk].lateness.add(lateness);
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

/// The completion thread stops sleeping this long before a deadline and spins: condvar
/// timeouts overshoot by tens of µs.
pub const SPIN_BEFORE_DEADLINE: Duration = Duration::from_micros(80);

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
                    // Counted before it goes, so whoever got the answer reads counters
                    // that hold it (a few atomic adds; the lock only when late).
                    inner.answered(i, p.at, Instant::now());
                }
                p.answer.send();
                q = inner.queue.lock().unwrap_or_else(|p| p.into_inner());
            }
            Some(p) => {
                let wait = p.at - now;
                if wait < SPIN_BEFORE_DEADLINE {
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
