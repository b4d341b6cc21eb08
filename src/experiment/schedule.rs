//! How long a plan takes with up to N trials at once (`jbench plan --jobs N`): a list
//! scheduler simulated over the estimated trial times. Trials start in plan order,
//! none skipping ahead of one that waits, because the order is part of the experiment
//! (interleaving spreads drift over the configurations); a trial starts once a job is
//! free and every running trial shares the host with it ([`Slot::can_share`]).
//!
//! Each trial is assumed to keep its serial time beside others: how much concurrent
//! trials slow each other is not known yet (`jbench selftest jobs` measures it).

use crate::experiment::slots::Slot;

/// One trial to place: its expected seconds and what it needs of the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Job {
    pub seconds: f64,
    pub slot: Slot,
}

/// Seconds from the first trial's start to the last one's end, with at most `jobs`
/// trials running at a time (0 counts as 1).
pub fn makespan(trials: &[Job], jobs: usize) -> f64 {
    let jobs = jobs.max(1);
    // (end, slot) of each running trial.
    let mut running: Vec<(f64, Slot)> = Vec::with_capacity(jobs);
    let mut now = 0.0_f64;
    let mut last_end = 0.0_f64;
    for t in trials {
        loop {
            running.retain(|&(end, _)| end > now);
            let fits = running.len() < jobs
                && running
                    .iter()
                    .all(|&(_, s)| t.slot.can_share(s) && s.can_share(t.slot));
            if fits {
                break;
            }
            // Nothing can start before the next running trial ends.
            now = running
                .iter()
                .map(|&(end, _)| end)
                .fold(f64::INFINITY, f64::min);
        }
        let end = now + t.seconds.max(0.0);
        running.push((end, t.slot));
        last_end = last_end.max(end);
    }
    last_end
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARED: Slot = Slot::Shared { memory_limit: None };
    const OTHER: Slot = Slot::Shared {
        memory_limit: Some(384 << 20),
    };

    fn jobs(spec: &[(f64, Slot)]) -> Vec<Job> {
        spec.iter()
            .map(|&(seconds, slot)| Job { seconds, slot })
            .collect()
    }

    #[test]
    fn one_job_is_the_serial_sum() {
        let t = jobs(&[
            (3.0, SHARED),
            (5.0, Slot::Alone),
            (7.0, OTHER),
            (1.5, SHARED),
        ]);
        assert_eq!(makespan(&t, 1), 16.5);
        assert_eq!(makespan(&t, 0), 16.5);
        assert_eq!(makespan(&[], 4), 0.0);
    }

    #[test]
    fn equal_shareable_trials_split_over_the_jobs() {
        let t = jobs(&[(10.0, SHARED); 8]);
        assert_eq!(makespan(&t, 2), 40.0);
        assert_eq!(makespan(&t, 4), 20.0);
        assert_eq!(makespan(&t, 8), 10.0);
        assert_eq!(makespan(&t, 64), 10.0);
        // Unequal ones: each starts where a job frees first.
        let t = jobs(&[(10.0, SHARED), (2.0, SHARED), (2.0, SHARED), (2.0, SHARED)]);
        assert_eq!(makespan(&t, 2), 10.0);
    }

    #[test]
    fn a_trial_that_runs_alone_serializes_around_it() {
        let t = jobs(&[
            (10.0, SHARED),
            (10.0, SHARED),
            (4.0, Slot::Alone),
            (10.0, SHARED),
            (10.0, SHARED),
        ]);
        // Two at once, then the alone one by itself, then two at once.
        assert_eq!(makespan(&t, 2), 24.0);
        let alone = jobs(&[(5.0, Slot::Alone); 3]);
        assert_eq!(makespan(&alone, 8), 15.0);
    }

    /// A trial whose slot conflicts with a running one waits, and those after it wait
    /// behind it even where they could share: the plan's order is kept.
    #[test]
    fn no_trial_skips_ahead_of_one_that_waits() {
        let t = jobs(&[(10.0, SHARED), (10.0, OTHER), (10.0, SHARED)]);
        assert_eq!(makespan(&t, 2), 30.0);
        let t = jobs(&[(10.0, SHARED), (10.0, SHARED), (10.0, OTHER), (10.0, OTHER)]);
        assert_eq!(makespan(&t, 2), 20.0);
        // A long trial keeps a job; a conflicting one waits for it, not for the job.
        let t = jobs(&[(30.0, SHARED), (5.0, SHARED), (5.0, OTHER)]);
        assert_eq!(makespan(&t, 3), 35.0);
    }
}
