//! Which crash states a write log yields. Pure: it reads record metadata and decides;
//! building and checking the states is the lab's.
//!
//! One global cut `C` across every disk: records with `seq < C` happened before the
//! power failed. A write before the cut is *durable* when a flush of its own disk
//! covers it and that flush was acknowledged before the cut; with issue order known
//! (write log version 2) a flush covers only the writes acknowledged before it was
//! issued. A disk without a volatile cache makes every write durable when it is
//! acknowledged; a disk that does not honour flushes makes no write durable through
//! a flush issued after the measurement started (`timing on`).
//!
//! - `prefix`: every write before the cut, at each flush and each fsync marker: the
//!   caches held nothing unflushed.
//! - `subset`: the durable writes plus a seeded, order-preserving random subset of the
//!   volatile ones (at least one dropped): what a volatile cache may have written.
//! - `torn`: a subset state with one kept volatile write cut at a 512-byte boundary.
//!
//! Identical states (the same writes and the same fsync promises) are built once.

use std::collections::HashSet;

use anyhow::{bail, Result};
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::options::{CrashOptions, Strategy};
use crate::emu::writelog::{RecordKind, RecordMeta, NO_DISK};

/// What the planner needs of one record: its metadata (payloads stay in the log) and,
/// for a marker, its label.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRec {
    pub meta: RecordMeta,
    pub label: Option<String>,
}

impl std::ops::Deref for LogRec {
    type Target = RecordMeta;
    fn deref(&self) -> &RecordMeta {
        &self.meta
    }
}

impl LogRec {
    pub fn is_write(&self) -> bool {
        matches!(
            self.kind,
            RecordKind::Write | RecordKind::Zero | RecordKind::Discard
        )
    }
}

/// How a disk treats acknowledged writes, from the log header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskTraits {
    /// Acknowledged writes sit in a cache that a power cut empties until a flush.
    pub volatile_cache: bool,
    /// A flush really makes the cache durable (false: a lying disk).
    pub honor_flush: bool,
}

/// One crash state to build.
#[derive(Debug, Clone, PartialEq)]
pub struct StatePlan {
    pub strategy: Strategy,
    /// Records with `seq < cut` are before the power cut.
    pub cut: u64,
    /// Records with `seq < base` are all in the state: the base images hold them.
    pub base: u64,
    /// The writes in `[base, cut)` the state keeps, in log order, each with the bytes
    /// kept of it when it is torn.
    pub overlay: Vec<(u64, Option<u64>)>,
    /// Write records before the cut kept and dropped.
    pub kept: u64,
    pub dropped: u64,
    /// The torn write: `(seq, kept bytes, len)`.
    pub torn: Option<(u64, u64, u64)>,
}

/// The markers of a log that the lab uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// `timing on`: where the workload starts. No state is cut before it.
    pub timing_on: u64,
    /// `fsync PATH` markers: `(seq, path)`.
    pub fsyncs: Vec<(u64, String)>,
    /// `phase NAME` markers: `(seq, name)`.
    pub phases: Vec<(u64, String)>,
}

impl Marks {
    pub fn of(recs: &[LogRec]) -> Result<Self> {
        let mut m = Marks::default();
        let mut timing_on = None;
        for r in recs.iter().filter(|r| r.kind == RecordKind::Marker) {
            let label = r.label.as_deref().unwrap_or("");
            if label == "timing on" && timing_on.is_none() {
                timing_on = Some(r.seq);
            } else if let Some(p) = label.strip_prefix("fsync ") {
                m.fsyncs.push((r.seq, p.to_string()));
            } else if let Some(p) = label.strip_prefix("phase ") {
                m.phases.push((r.seq, p.to_string()));
            }
        }
        let Some(t) = timing_on else {
            bail!("the write log has no `timing on` marker, so where the workload started is unknown; it was not recorded by `jbench crash` or `jbench run` with [emulation] write_log");
        };
        m.timing_on = t;
        Ok(m)
    }

    /// fsync markers before `cut`.
    pub fn fsyncs_before(&self, cut: u64) -> &[(u64, String)] {
        let n = self.fsyncs.partition_point(|(s, _)| *s < cut);
        &self.fsyncs[..n]
    }

    /// The phase running at `cut` (the last phase marker before it).
    pub fn phase_at(&self, cut: u64) -> Option<&str> {
        let n = self.phases.partition_point(|(s, _)| *s < cut);
        n.checked_sub(1).map(|i| self.phases[i].1.as_str())
    }
}

/// For every record, the `seq` at which it became durable: its own for a write to a
/// disk without a volatile cache, the covering flush's otherwise, `None` for one never
/// made durable (and for flushes and markers).
pub fn durability(
    recs: &[LogRec],
    disks: &[DiskTraits],
    timing_on: u64,
) -> Result<Vec<Option<u64>>> {
    let mut durable = vec![None; recs.len()];
    let mut pending: Vec<Vec<usize>> = vec![Vec::new(); disks.len()];
    for (i, r) in recs.iter().enumerate() {
        if r.seq != i as u64 {
            bail!(
                "record {} found where {i} was expected: the log is not in order",
                r.seq
            );
        }
        if r.disk == NO_DISK {
            continue;
        }
        let Some(traits) = disks.get(r.disk as usize) else {
            bail!(
                "record {} is for disk {}, but the log header lists {} disks",
                r.seq,
                r.disk,
                disks.len()
            );
        };
        if r.is_write() {
            if traits.volatile_cache {
                pending[r.disk as usize].push(i);
            } else {
                durable[i] = Some(r.seq);
            }
        } else if r.kind == RecordKind::Flush {
            if !traits.honor_flush && r.seq > timing_on {
                continue;
            }
            pending[r.disk as usize].retain(|&w| {
                // A write still in flight when the flush was issued is not covered.
                let covered = match (recs[w].acked, r.issued) {
                    (Some(a), Some(issued)) => a < issued,
                    _ => true,
                };
                if covered {
                    durable[w] = Some(r.seq);
                }
                !covered
            });
        }
    }
    Ok(durable)
}

/// The crash states of one log, sorted by their base (so the lab only ever moves
/// the base images forward), numbered in that order by the caller.
pub fn plan_states(
    recs: &[LogRec],
    disks: &[DiskTraits],
    opts: &CrashOptions,
    seed: u64,
) -> Result<Vec<StatePlan>> {
    let marks = Marks::of(recs)?;
    let durable = durability(recs, disks, marks.timing_on)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = recs.len() as u64;
    let in_window = |s: u64| s > marks.timing_on;
    let flushes: Vec<u64> = recs
        .iter()
        .filter(|r| r.kind == RecordKind::Flush && in_window(r.seq))
        .map(|r| r.seq)
        .collect();
    let fsync_ends: Vec<u64> = marks
        .fsyncs
        .iter()
        .map(|(s, _)| s + 1)
        .filter(|&s| in_window(s))
        .collect();
    let mut prefix_cuts: Vec<u64> = flushes
        .iter()
        .map(|s| s + 1)
        .chain(fsync_ends.iter().copied())
        .collect();
    prefix_cuts.push(n);
    prefix_cuts.sort_unstable();
    prefix_cuts.dedup();
    // Right before a flush is acknowledged its cache holds the most.
    let mut subset_cuts: Vec<u64> = flushes
        .iter()
        .copied()
        .chain(fsync_ends.iter().copied())
        .collect();
    subset_cuts.push(n);
    subset_cuts.sort_unstable();
    subset_cuts.dedup();

    let writes_before = {
        let mut acc = Vec::with_capacity(recs.len() + 1);
        let mut c = 0u64;
        acc.push(0);
        for r in recs {
            c += r.is_write() as u64;
            acc.push(c);
        }
        acc
    };
    let mut seen = HashSet::new();
    let mut plans = Vec::new();
    let k = opts.strategies.len().max(1) as u32;
    let mut left_over = 0u32;
    for (i, &strategy) in opts.strategies.iter().enumerate() {
        let quota = opts.states / k + u32::from((i as u32) < opts.states % k) + left_over;
        let before = plans.len();
        match strategy {
            Strategy::Prefix => {
                let chosen: Vec<u64> = if prefix_cuts.len() <= quota as usize {
                    prefix_cuts.clone()
                } else {
                    let mut idx = sample(&mut rng, prefix_cuts.len(), quota as usize).into_vec();
                    idx.sort_unstable();
                    idx.into_iter().map(|i| prefix_cuts[i]).collect()
                };
                for cut in chosen {
                    let key = (
                        writes_before[cut as usize],
                        Vec::new(),
                        None,
                        marks.fsyncs_before(cut).len(),
                    );
                    if seen.insert(key) {
                        plans.push(StatePlan {
                            strategy,
                            cut,
                            base: cut,
                            overlay: Vec::new(),
                            kept: writes_before[cut as usize],
                            dropped: 0,
                            torn: None,
                        });
                    }
                }
            }
            Strategy::Subset | Strategy::Torn => {
                let mut tries = 0u32;
                while ((plans.len() - before) as u32) < quota
                    && tries < quota.saturating_mul(20).max(20)
                {
                    tries += 1;
                    let cut = subset_cuts[rng.gen_range(0..subset_cuts.len())];
                    let Some(plan) = subset_state(recs, &durable, cut, strategy, &mut rng) else {
                        continue;
                    };
                    let dropped: Vec<u64> = dropped_of(&plan, recs, &durable);
                    let key = (
                        writes_before[cut as usize],
                        dropped,
                        plan.torn.map(|t| (t.0, t.1)),
                        marks.fsyncs_before(cut).len(),
                    );
                    if seen.insert(key) {
                        plans.push(plan);
                    }
                }
            }
        }
        left_over = quota.saturating_sub((plans.len() - before) as u32);
    }
    plans.sort_by_key(|p| (p.base, p.cut));
    Ok(plans)
}

fn is_durable(durable: &[Option<u64>], w: usize, cut: u64) -> bool {
    durable[w].is_some_and(|f| f < cut)
}

/// The volatile writes a subset state dropped, for its identity.
fn dropped_of(plan: &StatePlan, recs: &[LogRec], durable: &[Option<u64>]) -> Vec<u64> {
    let kept: HashSet<u64> = plan.overlay.iter().map(|(s, _)| *s).collect();
    (plan.base..plan.cut)
        .filter(|&s| {
            recs[s as usize].is_write()
                && !kept.contains(&s)
                && !is_durable(durable, s as usize, plan.cut)
        })
        .collect()
}

/// A subset (or torn) state at `cut`, `None` when nothing is volatile there (that
/// state is the prefix state) or no write can be torn.
fn subset_state(
    recs: &[LogRec],
    durable: &[Option<u64>],
    cut: u64,
    strategy: Strategy,
    rng: &mut ChaCha8Rng,
) -> Option<StatePlan> {
    let volatile: Vec<usize> = (0..cut as usize)
        .filter(|&w| recs[w].is_write() && !is_durable(durable, w, cut))
        .collect();
    if volatile.is_empty() {
        return None;
    }
    // Keep fewer than all: keeping all is the prefix state.
    let keep_n = rng.gen_range(0..volatile.len());
    let mut keep: Vec<usize> = sample(rng, volatile.len(), keep_n)
        .into_iter()
        .map(|i| volatile[i])
        .collect();
    keep.sort_unstable();
    let mut torn = None;
    if strategy == Strategy::Torn {
        let tearable = |w: &usize| recs[*w].kind == RecordKind::Write && recs[*w].len >= 1024;
        let candidates: Vec<usize> = keep.iter().copied().filter(tearable).collect();
        let w = if candidates.is_empty() {
            let others: Vec<usize> = volatile.iter().copied().filter(tearable).collect();
            if others.is_empty() {
                return None;
            }
            let w = others[rng.gen_range(0..others.len())];
            if !keep.contains(&w) {
                keep.push(w);
                keep.sort_unstable();
            }
            w
        } else {
            candidates[rng.gen_range(0..candidates.len())]
        };
        let len = recs[w].len;
        let sectors = len / 512;
        let kept_bytes = 512 * rng.gen_range(1..sectors);
        torn = Some((w as u64, kept_bytes, len));
    }
    let keep_set: HashSet<usize> = keep.iter().copied().collect();
    let first_dropped = volatile.iter().copied().find(|w| !keep_set.contains(w));
    let base = first_dropped
        .map(|w| w as u64)
        .into_iter()
        .chain(torn.map(|t| t.0))
        .min()
        .unwrap_or(cut)
        .min(cut);
    let overlay: Vec<(u64, Option<u64>)> = (base..cut)
        .filter(|&s| {
            let w = s as usize;
            recs[w].is_write() && (is_durable(durable, w, cut) || keep_set.contains(&w))
        })
        .map(|s| (s, torn.filter(|t| t.0 == s).map(|t| t.1)))
        .collect();
    let dropped = (volatile.len() - keep.len()) as u64;
    let writes = recs[..cut as usize].iter().filter(|r| r.is_write()).count() as u64;
    Some(StatePlan {
        strategy,
        cut,
        base,
        overlay,
        kept: writes - dropped,
        dropped,
        torn,
    })
}

#[cfg(test)]
mod tests;
