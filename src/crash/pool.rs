//! Several recovery rigs checking states at once. A state's cost is mostly waiting on
//! one process after another (mount, fsck) and on the device daemon, one state at a
//! time; with a rig per core, each with its own daemon, loop devices and mount point,
//! the cores stay busy.
//!
//! Each rig owns every n-th state of the list: the list is sorted by base, so each
//! rig's own states are too, and its base images only ever move forward. Results come
//! back out of order and are delivered in state order; when the run stops early (an
//! error, Ctrl-C) the states judged after a gap are delivered too, and a resumed run
//! finds every judged state in `done` whatever its place in crash.jsonl.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::recover::RecoveryRig;

/// How many rigs check states at once: one per CPU jbench may use, two per CPU when
/// each state starts an application (`app`: its timed recoveries sleep on the model's
/// disk, and its start waits on one process after another), at most one per state.
/// `JBENCH_CRASH_RIGS` overrides it (1: one state at a time, as before pools).
pub fn rig_count(states: usize, app: bool) -> usize {
    let rigs = std::env::var("JBENCH_CRASH_RIGS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            let cpus = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
            if app {
                2 * cpus
            } else {
                cpus
            }
        });
    rigs.min(states).max(1)
}

/// Sets the flag when dropped: a panic on the delivering side must still stop the
/// rigs, or the scope would wait for them to check every remaining state.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How many neighbouring states one rig takes in turn: neighbours often leave the
/// same outcome (a prefix cut and a subset that kept the same writes), which the
/// user-space path judges once ([`super::outcome_memo`]) only when it has finished the
/// first before it starts the second, so they go to the same rig.
pub const RUN: usize = 8;

/// The states rig `k` of `n` checks: runs of [`RUN`] in turn, in order (states are
/// sorted by base, so each rig's base only moves forward).
fn owned_by(states: &[usize], k: usize, n: usize) -> Vec<usize> {
    states
        .chunks(RUN)
        .skip(k)
        .step_by(n)
        .flatten()
        .copied()
        .collect()
}

/// Checks `states` (indices, sorted by base) on `rigs` with `check`, and hands each
/// result to `deliver` in the order of `states`. `should_stop` is asked between
/// results; once it says yes no new state is started, the ones under way finish and
/// are delivered, and `Ok(true)` (interrupted) is returned. Every rig is released
/// before this returns, whatever happened; the first error (of a check, a delivery or
/// a release) is returned once all rigs are released.
pub fn check_states<T, C, D>(
    rigs: Vec<RecoveryRig>,
    states: &[usize],
    check: C,
    should_stop: &dyn Fn() -> bool,
    mut deliver: D,
) -> Result<bool>
where
    T: Send,
    C: Fn(&mut RecoveryRig, usize) -> Result<T> + Sync,
    D: FnMut(usize, T) -> Result<()>,
{
    let n = rigs.len();
    if n == 0 || should_stop() {
        let mut first = None;
        for rig in rigs {
            if let Err(e) = rig.release() {
                first.get_or_insert(e);
            }
        }
        return first.map_or(Ok(n > 0), Err);
    }
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<T>)>();
    let mut first_error: Option<anyhow::Error> = None;
    // Once storing a record failed nothing more is stored; a failed check still lets
    // the states judged by the other rigs be stored.
    let mut deliver_failed = false;
    let mut interrupted = false;
    std::thread::scope(|scope| {
        let _stop_guard = StopOnDrop(&stop);
        let check = &check;
        let stop = &stop;
        let mut workers = Vec::new();
        for (k, mut rig) in rigs.into_iter().enumerate() {
            let tx = tx.clone();
            let mine = owned_by(states, k, n);
            workers.push(scope.spawn(move || -> Result<()> {
                for i in mine {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let out = check(&mut rig, i);
                    let failed = out.is_err();
                    if tx.send((i, out)).is_err() || failed {
                        break;
                    }
                }
                // On a panic in `check` the rig's Drop releases it instead.
                rig.release()
            }));
        }
        drop(tx);
        let mut pending: BTreeMap<usize, T> = BTreeMap::new();
        let mut next = 0;
        let mut deliver_one = |i: usize, t: T, first_error: &mut Option<anyhow::Error>| {
            if deliver_failed {
                return;
            }
            if let Err(e) = deliver(i, t) {
                deliver_failed = true;
                first_error.get_or_insert(e);
                stop.store(true, Ordering::Relaxed);
            }
        };
        loop {
            if !stop.load(Ordering::Relaxed) && should_stop() {
                interrupted = true;
                stop.store(true, Ordering::Relaxed);
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok((i, Ok(t))) => {
                    pending.insert(i, t);
                    while let Some(t) = states.get(next).and_then(|i| pending.remove(i)) {
                        deliver_one(states[next], t, &mut first_error);
                        next += 1;
                    }
                }
                Ok((i, Err(e))) => {
                    stop.store(true, Ordering::Relaxed);
                    if first_error.is_none() {
                        first_error = Some(e.context(format!("crash state {i}")));
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        // Stopped early: a state missing in the middle holds back those after it.
        // They were judged; store them (resume skips every stored state).
        while let Some((i, t)) = pending.pop_first() {
            deliver_one(i, t, &mut first_error);
        }
        for w in workers {
            let released = match w.join() {
                Ok(r) => r,
                Err(p) => Err(anyhow!(
                    "a recovery rig's thread panicked: {}",
                    p.downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default()
                )),
            };
            if let Err(e) = released {
                first_error.get_or_insert(e);
            }
        }
    });
    match first_error {
        Some(e) => Err(e),
        None => Ok(interrupted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rigs_take_runs_of_neighbours_in_turn_and_every_state_once() {
        let states: Vec<usize> = (100..137).collect();
        let mine: Vec<Vec<usize>> = (0..3).map(|k| owned_by(&states, k, 3)).collect();
        assert_eq!(mine[0][..RUN], states[..RUN]);
        assert_eq!(mine[1][..RUN], states[RUN..2 * RUN]);
        let mut all: Vec<usize> = mine.concat();
        assert!(mine.iter().all(|m| m.windows(2).all(|w| w[0] < w[1])));
        all.sort_unstable();
        assert_eq!(all, states);
    }
}
