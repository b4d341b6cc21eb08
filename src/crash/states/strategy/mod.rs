//! Each crash strategy's part of a plan, one file each: the size of its state space,
//! the states it plans with its share of the budget, and what its space turns out to
//! be once every state was enumerated. `plan_with_coverage` walks the strategies asked
//! for and names none of them. Adding a strategy: its file here and its line in
//! `planners!` below, and its line (name and words) in `strategies!` of
//! `experiment/crash_options.rs`, which the spec parser and the results read without the
//! crash lab. [`planner`]'s match is exhaustive, so the compiler names a strategy
//! without a planner. `made_up.rs` (test builds) is one.

use std::collections::{HashMap, HashSet};

use rand_chacha::ChaCha8Rng;

use super::choose::{Ctx, Key};
use super::sweep::{volatile_at, Unit};
use super::StatePlan;
use crate::crash::options::Strategy;
pub(in crate::crash::states) use flush_subset::{flush_coverage, synced_flushes, SyncedFlush};
pub(in crate::crash::states) use last_writes::{promise_coverage, promise_cuts, PromiseCuts};
pub(in crate::crash::states) use torn_data::{file_tears, torn_files, Tear};

/// What the strategies plan from: the log's cuts, as the planner found them.
pub(in crate::crash::states) struct Space<'a> {
    pub(in crate::crash::states) ctx: &'a Ctx<'a>,
    /// Persistence points in the workload's window, ascending, the final one last.
    pub(in crate::crash::states) prefix_cuts: &'a [u64],
    /// Cuts with volatile blocks: (cut, volatile blocks, torn states there).
    pub(in crate::crash::states) subset_cuts: &'a [(u64, u64, u64)],
    /// Prefix cuts with live journal content, fullest first.
    pub(in crate::crash::states) fill_ranked: &'a [u64],
    /// Every tear of a multi-block write of file data, at its last volatile cut.
    pub(in crate::crash::states) tears: &'a [Tear],
    /// Every flush that makes a synced file's data durable.
    pub(in crate::crash::states) synced: &'a [SyncedFlush],
    /// Every promise's last writes.
    pub(in crate::crash::states) promised: &'a [PromiseCuts],
}

impl Space<'_> {
    /// The subset cuts alone.
    fn volatile_cuts(&self) -> Vec<u64> {
        self.subset_cuts.iter().map(|c| c.0).collect()
    }
}

/// The plan being built: states so far, and which states exist (a state is built
/// once, under the first strategy that takes it).
pub(in crate::crash::states) struct Plans<'a> {
    pub(in crate::crash::states) seen: &'a mut HashSet<Key>,
    pub(in crate::crash::states) plans: &'a mut Vec<StatePlan>,
    pub(in crate::crash::states) rng: &'a mut ChaCha8Rng,
}

impl Plans<'_> {
    /// Adds `plan` unless an identical state is planned already.
    fn add(&mut self, ctx: &Ctx, plan: StatePlan) {
        if self.seen.insert(ctx.key(&plan)) {
            self.plans.push(plan);
        }
    }
}

/// Visits `items` in order with the volatile units at each one's cut (`cut_of`), until
/// `quota` states were added (every item when `all`). The volatile sets are computed
/// one chunk of items at a time: all cuts at once could hold millions of units.
pub(in crate::crash::states) fn visit_in_chunks<T>(
    ctx: &Ctx,
    items: &[T],
    cut_of: impl Fn(&T) -> u64,
    quota: usize,
    all: bool,
    out: &mut Plans,
    mut visit: impl FnMut(&T, &[Unit], &mut Plans),
) {
    let before = out.plans.len();
    let full = |out: &Plans| !all && out.plans.len() - before >= quota;
    for part in items.chunks(quota.clamp(64, 1024)) {
        if full(out) {
            return;
        }
        let mut cuts: Vec<u64> = part.iter().map(&cut_of).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let vol = volatile_at(ctx.recs, ctx.durable, ctx.units_of, &cuts);
        let at: HashMap<u64, &Vec<Unit>> = cuts.iter().copied().zip(vol.iter()).collect();
        for item in part {
            if full(out) {
                return;
            }
            visit(item, at[&cut_of(item)], out);
        }
    }
}

/// One strategy's planning.
pub(in crate::crash::states) trait Planner: Sync {
    /// Its space before any state is planned.
    fn space(&self, s: &Space) -> f64;
    /// How many of its states are still open once earlier strategies planned theirs.
    fn open(&self, s: &Space, _seen: &HashSet<Key>) -> f64 {
        self.space(s)
    }
    /// Plans its states: every open one when `all`, else up to `quota`.
    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans);
    /// Its space once all of it was planned (`made` states), where that count is
    /// truer than the first figure (a state two cuts share is counted once); `None`:
    /// the first figure stands.
    fn enumerated(&self, s: &Space, made: u64) -> Option<f64>;
}

/// Registers each strategy's planner: its variant, its file here and its type.
macro_rules! planners {
    ($( $(#[$attr:meta])* $variant:ident => $file:ident :: $planner:ident ),+ $(,)?) => {
        $( $(#[$attr])* mod $file; )+

        /// The planner of `strategy`.
        pub(in crate::crash::states) fn planner(strategy: Strategy) -> &'static dyn Planner {
            match strategy {
                $( $(#[$attr])* Strategy::$variant => &$file::$planner, )+
            }
        }
    };
}

planners! {
    Prefix => prefix::Prefix,
    Subset => subset::Subset,
    Torn => torn::Torn,
    Fill => fill::Fill,
    TornData => torn_data::TornData,
    FlushSubset => flush_subset::FlushSubset,
    LastWrites => last_writes::LastWrites,
    #[cfg(test)]
    MadeUp => made_up::MadeUp,
}
