//! Choosing states: every one of a cut, a stratified sample, and what makes two the
//! same.

use std::collections::{BTreeMap, HashSet};

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::sweep::{volatile_at, Unit};
use super::{LogRec, Marks, Piece, StatePlan};
use crate::crash::options::Strategy;

/// `quota` prefix cuts spread over the strata round-robin, each stratum's spread over
/// its cuts; the last cut (after the final unmount) always among them.
pub(super) fn stratified_cuts(
    cuts: &[u64],
    marks: &Marks,
    quota: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<u64> {
    let mut by: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for &c in cuts {
        by.entry(marks.stratum_at(c)).or_default().push(c);
    }
    let mut pools: Vec<Vec<u64>> = by
        .into_values()
        .map(|mut v| {
            v.shuffle(rng);
            v
        })
        .collect();
    let mut out: Vec<u64> = cuts.last().copied().into_iter().collect();
    let mut taken: HashSet<u64> = out.iter().copied().collect();
    while out.len() < quota && pools.iter().any(|p| !p.is_empty()) {
        for p in pools.iter_mut() {
            if out.len() >= quota {
                break;
            }
            while let Some(c) = p.pop() {
                if taken.insert(c) {
                    out.push(c);
                    break;
                }
            }
        }
    }
    out.sort_unstable();
    out
}

pub(super) struct Ctx<'a> {
    pub(super) recs: &'a [LogRec],
    pub(super) durable: &'a [Option<u64>],
    pub(super) units_of: &'a [Vec<(u64, u64)>],
    pub(super) writes_before: &'a [u64],
    pub(super) marks: &'a Marks,
}

/// What makes two states the same: the writes before the cut, the blocks left out,
/// and the promises in force.
pub(super) type Key = (u64, Vec<Unit>, usize);

/// One randomly drawn state of a strategy at a cut with volatile `units`.
pub(super) type Draw = fn(&Ctx, u64, &[Unit], &mut ChaCha8Rng) -> Option<StatePlan>;

impl Ctx<'_> {
    pub(super) fn key(&self, p: &StatePlan) -> Key {
        let dropped = self.dropped_units(p);
        (
            self.writes_before[p.cut as usize],
            dropped,
            self.marks.promises_before(p.cut).len(),
        )
    }

    fn is_durable(&self, w: usize, cut: u64) -> bool {
        self.durable[w].is_some_and(|f| f < cut)
    }

    /// The units of `[base, cut)` a plan leaves out.
    fn dropped_units(&self, p: &StatePlan) -> Vec<Unit> {
        let mut out = Vec::new();
        let mut pieces = p.overlay.iter().peekable();
        for s in p.base..p.cut {
            let w = s as usize;
            if !self.recs[w].is_write() {
                continue;
            }
            while pieces.peek().is_some_and(|q| q.seq < s) {
                pieces.next();
            }
            let piece = pieces.peek().filter(|q| q.seq == s);
            let units = &self.units_of[w];
            for (b, u) in units.iter().enumerate() {
                let kept = match piece {
                    None => false,
                    Some(q) => match &q.ranges {
                        None => true,
                        Some(rs) => rs
                            .iter()
                            .any(|&(st, len)| st <= u.0 && u.0 + u.1 <= st + len),
                    },
                };
                if !kept {
                    out.push((w, b as u32));
                }
            }
        }
        out
    }

    pub(super) fn prefix_state(&self, cut: u64) -> StatePlan {
        StatePlan {
            strategy: Strategy::Prefix,
            cut,
            base: cut,
            overlay: Vec::new(),
            kept: self.writes_before[cut as usize],
            dropped: 0,
            dropped_blocks: 0,
            torn: None,
            stratum: self.marks.stratum_at(cut),
        }
    }

    /// The state at `cut` that keeps the volatile units in `keep` (a sorted subset of
    /// `units`) and drops the rest.
    pub(super) fn state(
        &self,
        cut: u64,
        units: &[Unit],
        keep: &HashSet<Unit>,
        strategy: Strategy,
        torn: Option<(u64, u64, u64)>,
    ) -> StatePlan {
        let dropped_units: Vec<Unit> = units
            .iter()
            .copied()
            .filter(|u| !keep.contains(u))
            .collect();
        let base = dropped_units
            .first()
            .map(|u| u.0 as u64)
            .unwrap_or(cut)
            .min(cut);
        let dropped_writes: HashSet<usize> = dropped_units.iter().map(|u| u.0).collect();
        let overlay: Vec<Piece> = (base..cut)
            .filter_map(|s| {
                let w = s as usize;
                if !self.recs[w].is_write() {
                    return None;
                }
                if self.is_durable(w, cut) || !dropped_writes.contains(&w) {
                    return Some(Piece::whole(s));
                }
                let ranges = merge_ranges(
                    self.units_of[w]
                        .iter()
                        .enumerate()
                        .filter(|(b, _)| keep.contains(&(w, *b as u32)))
                        .map(|(_, &r)| r),
                );
                (!ranges.is_empty()).then_some(Piece {
                    seq: s,
                    ranges: Some(ranges),
                })
            })
            .collect();
        let writes = self.writes_before[cut as usize];
        StatePlan {
            strategy,
            cut,
            base,
            overlay,
            kept: writes - dropped_writes.len() as u64,
            dropped: dropped_writes.len() as u64,
            dropped_blocks: dropped_units.len() as u64,
            torn,
            stratum: self.marks.stratum_at(cut),
        }
    }

    /// Draws `quota` states, stratified: cuts grouped by phase, the phases taken in
    /// turn, each one's cuts in a seeded order, one random subset per visit.
    /// `draw` makes the one state of a visit (`None`: the cut has none of its kind).
    pub(super) fn sample(
        &self,
        cuts: &[u64],
        quota: usize,
        seen: &mut HashSet<Key>,
        plans: &mut Vec<StatePlan>,
        rng: &mut ChaCha8Rng,
        draw: Draw,
    ) {
        let mut by: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for &c in cuts {
            by.entry(self.marks.stratum_at(c)).or_default().push(c);
        }
        let strata: Vec<Vec<u64>> = by
            .into_values()
            .map(|mut v| {
                v.shuffle(rng);
                v
            })
            .collect();
        if strata.is_empty() {
            return;
        }
        // Visits planned up front, so the volatile sets are computed in one sweep.
        let max_visits = quota.saturating_mul(4).max(16);
        let mut visits: Vec<u64> = Vec::with_capacity(max_visits);
        let mut pos = vec![0usize; strata.len()];
        while visits.len() < max_visits {
            for (i, s) in strata.iter().enumerate() {
                visits.push(s[pos[i] % s.len()]);
                pos[i] += 1;
            }
        }
        let mut distinct: Vec<u64> = visits.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let vol = volatile_at(self.recs, self.durable, self.units_of, &distinct);
        let at: BTreeMap<u64, &Vec<Unit>> = distinct.iter().copied().zip(vol.iter()).collect();
        let before = plans.len();
        for cut in visits {
            if plans.len() - before >= quota {
                break;
            }
            let Some(plan) = draw(self, cut, at[&cut], rng) else {
                continue;
            };
            if seen.insert(self.key(&plan)) {
                plans.push(plan);
            }
        }
    }
}

/// Adjacent byte ranges joined, so a run of kept blocks is one overlay write.
fn merge_ranges(it: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, l) in it {
        match out.last_mut() {
            Some(last) if last.0 + last.1 == s => last.1 += l,
            _ => out.push((s, l)),
        }
    }
    out
}
