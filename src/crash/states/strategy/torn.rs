//! `torn`: every volatile write kept except one multi-block write, of which only its
//! first logical blocks reached the platter.

use std::collections::HashSet;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::subset::volatile_plan;
use super::{Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::choose::Ctx;
use crate::crash::states::sweep::Unit;
use crate::crash::states::StatePlan;

pub(super) struct Torn;

impl Planner for Torn {
    /// The sum over cuts of (blocks - 1) for every volatile multi-block write.
    fn space(&self, s: &Space) -> f64 {
        s.subset_cuts.iter().map(|&(_, _, t)| t).sum::<u64>() as f64
    }

    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans) {
        volatile_plan(s, quota, all, out, every, draw);
    }

    fn enumerated(&self, _s: &Space, made: u64) -> Option<f64> {
        Some(made as f64)
    }
}

/// Volatile multi-block writes at a cut (a torn state tears one of them).
fn tearable(units: &[Unit]) -> Vec<usize> {
    let mut ws: Vec<usize> = units.iter().filter(|u| u.1 == 1).map(|u| u.0).collect();
    ws.dedup();
    ws
}

/// Every volatile unit kept but the blocks of write `w` from its `k`-th on.
pub(super) fn torn_state(
    ctx: &Ctx,
    cut: u64,
    units: &[Unit],
    w: usize,
    k: usize,
    strategy: Strategy,
) -> StatePlan {
    let keep: HashSet<Unit> = units
        .iter()
        .copied()
        .filter(|u| u.0 != w || (u.1 as usize) < k)
        .collect();
    let r = &ctx.recs[w];
    let kept_bytes = ctx.units_of[w][..k].iter().map(|u| u.1).sum();
    ctx.state(cut, units, &keep, strategy, Some((w as u64, kept_bytes, r.len)))
}

/// Every torn state at `cut`: each tearable write cut after each of its blocks but
/// the last.
fn every(ctx: &Ctx, cut: u64, units: &[Unit]) -> Vec<StatePlan> {
    let mut out = Vec::new();
    for w in tearable(units) {
        for k in 1..ctx.units_of[w].len() {
            out.push(torn_state(ctx, cut, units, w, k, Strategy::Torn));
        }
    }
    out
}

/// One tearable write, cut after a random block.
fn draw(ctx: &Ctx, cut: u64, units: &[Unit], rng: &mut ChaCha8Rng) -> Option<StatePlan> {
    let ws = tearable(units);
    if ws.is_empty() {
        return None;
    }
    let w = ws[rng.gen_range(0..ws.len())];
    let k = rng.gen_range(1..ctx.units_of[w].len());
    Some(torn_state(ctx, cut, units, w, k, Strategy::Torn))
}
