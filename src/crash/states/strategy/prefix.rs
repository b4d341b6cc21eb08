//! `prefix`: every write before the cut, at every persistence point.

use std::collections::HashSet;

use super::{Planner, Plans, Space};
use crate::crash::states::choose::{stratified_cuts, Key};

pub(super) struct Prefix;

impl Prefix {
    /// Prefix cuts whose state no earlier strategy (fill) built.
    fn open_cuts(s: &Space, seen: &HashSet<Key>) -> Vec<u64> {
        s.prefix_cuts
            .iter()
            .copied()
            .filter(|&c| !seen.contains(&s.ctx.key(&s.ctx.prefix_state(c))))
            .collect()
    }
}

impl Planner for Prefix {
    fn space(&self, s: &Space) -> f64 {
        s.prefix_cuts.len() as f64
    }

    fn open(&self, s: &Space, seen: &HashSet<Key>) -> f64 {
        Self::open_cuts(s, seen).len() as f64
    }

    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans) {
        let open = Self::open_cuts(s, out.seen);
        let chosen = if all {
            open
        } else {
            stratified_cuts(&open, s.ctx.marks, quota, out.rng)
        };
        for cut in chosen {
            out.add(s.ctx, s.ctx.prefix_state(cut));
        }
    }

    /// Two cuts with no write between them are one state.
    fn enumerated(&self, s: &Space, _made: u64) -> Option<f64> {
        let distinct: HashSet<Key> = s
            .prefix_cuts
            .iter()
            .map(|&c| s.ctx.key(&s.ctx.prefix_state(c)))
            .collect();
        Some(distinct.len() as f64)
    }
}
