//! `subset`: the durable writes plus a subset of the volatile blocks (at least one
//! dropped), at each cut with volatile blocks.

use std::collections::HashSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::choose::{Ctx, Draw};
use crate::crash::states::sweep::{volatile_at, Unit};
use crate::crash::states::StatePlan;

pub(super) struct Subset;

impl Planner for Subset {
    /// The sum over cuts of 2^(volatile blocks) - 1, saturating.
    fn space(&self, s: &Space) -> f64 {
        s.subset_cuts
            .iter()
            .map(|&(_, u, _)| 2f64.powi(u.min(1000) as i32) - 1.0)
            .sum::<f64>()
            .min(1e300)
    }

    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans) {
        volatile_plan(s, quota, all, out, every, draw);
    }

    fn enumerated(&self, _s: &Space, made: u64) -> Option<f64> {
        Some(made as f64)
    }
}

/// Every subset state at `cut`: each subset of its volatile units but the whole.
fn every(ctx: &Ctx, cut: u64, units: &[Unit]) -> Vec<StatePlan> {
    // The space fits the quota, so units.len() is small.
    let u = units.len();
    (0..(1u64 << u) - 1)
        .map(|mask| {
            let keep: HashSet<Unit> = (0..u)
                .filter(|&i| mask & (1 << i) != 0)
                .map(|i| units[i])
                .collect();
            ctx.state(cut, units, &keep, Strategy::Subset, None)
        })
        .collect()
}

/// A random subset, fewer than all: keeping all is a prefix-like state.
fn draw(ctx: &Ctx, cut: u64, units: &[Unit], rng: &mut ChaCha8Rng) -> Option<StatePlan> {
    let keep_n = rng.gen_range(0..units.len());
    let keep: HashSet<Unit> = rand::seq::index::sample(rng, units.len(), keep_n)
        .into_iter()
        .map(|i| units[i])
        .collect();
    Some(ctx.state(cut, units, &keep, Strategy::Subset, None))
}

/// The states of a strategy over the volatile cuts: `every` one of each cut when
/// `all`, else `quota` drawn stratified over the phases with `draw`.
pub(super) fn volatile_plan(
    s: &Space,
    quota: usize,
    all: bool,
    out: &mut Plans,
    every: fn(&Ctx, u64, &[Unit]) -> Vec<StatePlan>,
    draw: Draw,
) {
    let cuts = s.volatile_cuts();
    let ctx = s.ctx;
    if all {
        let vol = volatile_at(ctx.recs, ctx.durable, ctx.units_of, &cuts);
        for (&cut, units) in cuts.iter().zip(&vol) {
            for plan in every(ctx, cut, units) {
                out.add(ctx, plan);
            }
        }
    } else {
        ctx.sample(&cuts, quota, out.seen, out.plans, out.rng, draw);
    }
}
