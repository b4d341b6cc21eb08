//! `last-writes`: the power cut among the last writes before each promise (a commit
//! acknowledged, an fsync returned): every write before the cut on the disk, none
//! from it on. The writes are the promised file's between the previous promise and
//! this one (its data blocks, from the recording's labels), or, where the labels know
//! none of them (a record key, a removed file, XFS), every write in that window.
//!
//! Why: the moment before an application says "done" is when its record is half
//! written. Its recovery must come back from that state to what it promised before,
//! and a cut drawn at a flush never lands inside the write of a record.
//!
//! Order when not all fit: every promise's last write before any promise's
//! second-last, the promises in a seeded order.

use std::collections::HashSet;

use rand::seq::SliceRandom;

use super::{Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::marks::PromiseMark;
use crate::crash::states::{FileWrites, StatePlan};

/// Writes before one promise that get a cut each, at most.
const PER_PROMISE: usize = 16;

/// The cuts among one promise's last writes.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::crash::states) struct PromiseCuts {
    /// The promise marker's record.
    pub(in crate::crash::states) promise: u64,
    /// Cuts right before each of its last writes, newest first.
    pub(in crate::crash::states) cuts: Vec<u64>,
}

/// Every promise after the workload started with writes before it, and their cuts.
pub(in crate::crash::states) fn promise_cuts(
    ctx: &crate::crash::states::choose::Ctx,
    files: &FileWrites,
) -> Vec<PromiseCuts> {
    let mut out = Vec::new();
    let mut from = ctx.marks.timing_on + 1;
    for (seq, promise) in &ctx.marks.promises {
        if *seq <= ctx.marks.timing_on {
            continue;
        }
        let window: Vec<usize> = (from as usize..*seq as usize)
            .filter(|&w| ctx.recs[w].is_write())
            .collect();
        from = seq + 1;
        let theirs: Vec<usize> = window
            .iter()
            .copied()
            .filter(|&w| holds_data_of(files, w as u64, promise))
            .collect();
        let writes = if theirs.is_empty() { window } else { theirs };
        let cuts: Vec<u64> = writes
            .iter()
            .rev()
            .take(PER_PROMISE)
            .map(|&w| w as u64)
            .collect();
        if !cuts.is_empty() {
            out.push(PromiseCuts {
                promise: *seq,
                cuts,
            });
        }
    }
    out
}

/// Write `seq` holds data of the promise's file (of any file, for a record key).
fn holds_data_of(files: &FileWrites, seq: u64, promise: &PromiseMark) -> bool {
    let Some(labels) = files.writes.get(&seq) else {
        return false;
    };
    labels.iter().flatten().any(|(f, _)| match promise.path() {
        None => true,
        Some(path) => files.files.get(*f as usize).is_some_and(|name| {
            let name = name.strip_prefix("second:").unwrap_or(name);
            path == name || path.ends_with(&format!("/{name}"))
        }),
    })
}

/// How many promises had a cut among their last writes, of how many had writes.
pub(in crate::crash::states) fn promise_coverage(
    plans: &[StatePlan],
    promised: &[PromiseCuts],
) -> [u64; 2] {
    let cut: HashSet<u64> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::LastWrites)
        .map(|p| p.cut)
        .collect();
    let covered = promised
        .iter()
        .filter(|p| p.cuts.iter().any(|c| cut.contains(c)))
        .count();
    [covered as u64, promised.len() as u64]
}

pub(super) struct LastWrites;

impl Planner for LastWrites {
    fn space(&self, s: &Space) -> f64 {
        s.promised.iter().map(|p| p.cuts.len()).sum::<usize>() as f64
    }

    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans) {
        let mut order: Vec<&PromiseCuts> = s.promised.iter().collect();
        order.shuffle(out.rng);
        let before = out.plans.len();
        for round in 0..PER_PROMISE {
            for p in &order {
                if !all && out.plans.len() - before >= quota {
                    return;
                }
                if let Some(&cut) = p.cuts.get(round) {
                    let mut plan = s.ctx.prefix_state(cut);
                    plan.strategy = Strategy::LastWrites;
                    out.add(s.ctx, plan);
                }
            }
        }
    }

    fn enumerated(&self, _s: &Space, made: u64) -> Option<f64> {
        Some(made as f64)
    }
}
