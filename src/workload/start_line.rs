//! The start of a phase that several worker threads run: every worker waits at the
//! line until it is set (files open, buffers made), the coordinator starts the phase's
//! clock, and only then are the workers let go. No worker's operation can precede the
//! clock; the coordinator stops it only after joining every worker, so the last
//! operation is inside it too.
//!
//! Releasing the workers first and reading the clock after lets them run, even finish,
//! before the clock starts: a descheduled coordinator once timed 200 unlinks of 19 µs
//! each at 32 µs in all.

use std::sync::Barrier;
use std::time::Instant;

use super::RunControl;

/// The line `workers` threads start a phase from: each worker calls [`Self::wait`]
/// once, the coordinator calls [`Self::start`] once.
#[derive(Debug)]
pub struct StartLine {
    /// Passed once every worker is set and the coordinator is there.
    ready: Barrier,
    /// Passed once the clock runs.
    go: Barrier,
}

impl StartLine {
    pub fn new(workers: usize) -> Self {
        StartLine {
            ready: Barrier::new(workers + 1),
            go: Barrier::new(workers + 1),
        }
    }

    /// A worker, once set: returns after the phase's clock has started.
    pub fn wait(&self) {
        self.ready.wait();
        self.go.wait();
    }

    /// The coordinator: waits until every worker is at the line, tells `ctl` that
    /// `phase` begins (the monitor samples while no worker runs), starts the clock and
    /// only then releases the workers. Returns when the clock started.
    pub fn start(&self, ctl: &RunControl, phase: &str) -> Instant {
        self.ready.wait();
        ctl.phase_begin(phase);
        let started = Instant::now();
        self.go.wait();
        ctl.coordinator_lag();
        started
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::workload::{PhaseEvent, PhaseHook};

    /// A coordinator descheduled right after releasing its workers: each worker's
    /// first operation still begins after the clock started, and the phase (clock
    /// start to the last worker joined) is at least as long as every worker's work.
    #[test]
    fn no_worker_runs_before_the_clock_even_with_a_slow_coordinator() {
        const WORKERS: usize = 3;
        let line = StartLine::new(WORKERS);
        let running = Arc::new(AtomicBool::new(false));
        // The hook runs where the monitor samples: no worker may have begun.
        let ran_early = Arc::new(AtomicBool::new(false));
        let ctl = {
            let (running, ran_early) = (running.clone(), ran_early.clone());
            RunControl::new()
                .with_coordinator_lag(Duration::from_millis(200))
                .with_phase_hook(Some(PhaseHook::new(move |ev| {
                    if let PhaseEvent::Begin(_) = ev {
                        ran_early.store(running.load(Ordering::SeqCst), Ordering::SeqCst);
                    }
                })))
        };
        let (started, spans, seconds) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let (line, running) = (&line, &*running);
                    s.spawn(move || {
                        line.wait();
                        running.store(true, Ordering::SeqCst);
                        let first = Instant::now();
                        std::thread::sleep(Duration::from_millis(20));
                        (first, first.elapsed())
                    })
                })
                .collect();
            let started = line.start(&ctl, "p");
            let spans: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            (started, spans, started.elapsed())
        });
        assert!(
            !ran_early.load(Ordering::SeqCst),
            "a worker ran before the phase began"
        );
        for (first, took) in spans {
            assert!(
                first >= started,
                "a worker's first operation began {:?} before the clock",
                started - first
            );
            assert!(seconds >= took, "phase {seconds:?} < one worker's {took:?}");
        }
    }
}
