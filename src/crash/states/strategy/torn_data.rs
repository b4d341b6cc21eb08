//! `torn-data`: a multi-block write of a regular file's data (the recording's block
//! labels say which) kept only up to one of its logical-block boundaries, at the last
//! cut where it is still in a volatile cache: right before the flush that makes it
//! durable (or the end, if none does), every other volatile block kept. That is the
//! torn application page: a database page larger than the disk's block, half new and
//! half old, at the moment the most else has reached the cache.
//!
//! When the tears do not fit the budget, they are taken in this order: tears inside
//! the file's largest aligned page first (a boundary at a file offset that is an odd
//! multiple of the block splits a page of every larger power-of-two size: PostgreSQL's
//! 8 KiB, InnoDB's 16 KiB, ...), then those that split only larger pages, then the
//! boundaries between two files or outside file data; within each, every write once
//! before any twice, in a seeded order.

use std::collections::{BTreeMap, HashMap};

use rand::seq::SliceRandom;
use rand::Rng;

use super::torn::torn_state;
use super::{visit_in_chunks, Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::choose::Ctx;
use crate::crash::states::{FileWrites, StatePlan};

/// A boundary that splits no page of a file: between two files, or beside a block that
/// is not file data.
const NO_PAGE: u32 = 64;

/// Most file names a coverage line lists.
const NAMED_FILES: usize = 8;

/// One tear: write `w` kept up to its `k`-th logical block, at `cut`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(in crate::crash::states) struct Tear {
    pub(in crate::crash::states) w: usize,
    pub(in crate::crash::states) k: usize,
    pub(in crate::crash::states) cut: u64,
    /// The trailing zero bits of the file offset the tear falls at (lower: it splits
    /// pages of more sizes), or [`NO_PAGE`].
    pub(in crate::crash::states) class: u32,
}

/// Every tear of every volatile multi-block write of file data after the workload
/// started, at its last volatile cut (`n`: the log's end, for a write never made
/// durable).
pub(in crate::crash::states) fn file_tears(ctx: &Ctx, files: &FileWrites, n: u64) -> Vec<Tear> {
    let mut seqs: Vec<u64> = files.writes.keys().copied().collect();
    seqs.sort_unstable();
    let mut out = Vec::new();
    for seq in seqs {
        let w = seq as usize;
        if w >= ctx.recs.len() || !ctx.recs[w].is_write() || seq <= ctx.marks.timing_on {
            continue;
        }
        let units = &ctx.units_of[w];
        if units.len() < 2 {
            continue;
        }
        let cut = match ctx.durable[w] {
            // Durable when acknowledged: no cache to tear it in.
            Some(f) if f == seq => continue,
            Some(f) => f,
            None => n,
        };
        let labels = &files.writes[&seq];
        let at = |i: usize| labels.get(i).copied().flatten();
        for k in 1..units.len() {
            let class = match (at(k - 1), at(k)) {
                (Some((fa, Some(oa))), Some((fb, Some(ob))))
                    if fa == fb && ob == oa + units[k - 1].1 && ob > 0 =>
                {
                    ob.trailing_zeros()
                }
                (Some((fa, None)), Some((fb, None))) if fa == fb => NO_PAGE - 1,
                _ => NO_PAGE,
            };
            out.push(Tear { w, k, cut, class });
        }
    }
    out
}

/// The files whose data the `torn-data` states tear, most torn first, at most
/// [`NAMED_FILES`], each with its count: "base/5/16403 (12)".
pub(in crate::crash::states) fn torn_files(
    plans: &[StatePlan],
    files: &FileWrites,
    units_of: &[Vec<(u64, u64)>],
) -> Vec<String> {
    let mut count: BTreeMap<&str, u64> = BTreeMap::new();
    for p in plans.iter().filter(|p| p.strategy == Strategy::TornData) {
        let Some((seq, kept, _)) = p.torn else {
            continue;
        };
        let units = units_of.get(seq as usize).map_or(&[][..], |u| u.as_slice());
        if let Some((file, _)) = files.torn_at(seq, kept, units) {
            *count.entry(file).or_default() += 1;
        }
    }
    let mut v: Vec<(&str, u64)> = count.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let more = v.len().saturating_sub(NAMED_FILES);
    let mut out: Vec<String> = v
        .iter()
        .take(NAMED_FILES)
        .map(|&(name, c)| format!("{name} ({c})"))
        .collect();
    if more > 0 {
        out.push(format!("{more} more files"));
    }
    out
}

pub(super) struct TornData;

impl Planner for TornData {
    fn space(&self, s: &Space) -> f64 {
        s.tears.len() as f64
    }

    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans) {
        let order: Vec<usize> = if all {
            (0..s.tears.len()).collect()
        } else {
            priority(s.tears, out.rng)
        };
        let ctx = s.ctx;
        let cut_of = |&i: &usize| s.tears[i].cut;
        visit_in_chunks(ctx, &order, cut_of, quota, all, out, |&i, units, out| {
            let t = s.tears[i];
            out.add(ctx, torn_state(ctx, t.cut, units, t.w, t.k, Strategy::TornData));
        });
    }

    fn enumerated(&self, _s: &Space, made: u64) -> Option<f64> {
        Some(made as f64)
    }
}

/// The tears in the order they are taken when not all fit: by class, then every
/// write's first tear of that class before any write's second, writes in a seeded
/// order.
fn priority(tears: &[Tear], rng: &mut rand_chacha::ChaCha8Rng) -> Vec<usize> {
    let mut by: BTreeMap<(usize, u32), Vec<usize>> = BTreeMap::new();
    for (i, t) in tears.iter().enumerate() {
        by.entry((t.w, t.class)).or_default().push(i);
    }
    let mut write_rank: HashMap<usize, u64> = HashMap::new();
    let mut keyed: Vec<((u32, usize, u64), usize)> = Vec::with_capacity(tears.len());
    for ((w, class), mut idx) in by {
        idx.shuffle(rng);
        let rank = *write_rank.entry(w).or_insert_with(|| rng.gen());
        for (round, i) in idx.into_iter().enumerate() {
            keyed.push(((class, round, rank), i));
        }
    }
    keyed.sort_by_key(|k| k.0);
    keyed.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn tear(w: usize, k: usize, class: u32) -> Tear {
        Tear {
            w,
            k,
            cut: 100,
            class,
        }
    }

    #[test]
    fn tears_inside_small_pages_come_first_and_every_write_once_before_twice() {
        // Write 1: a 32 KiB write at file offset 0 (tears at 4K..28K); write 2: two
        // blocks of two files (one tear, no page).
        let mut tears: Vec<Tear> = (1..8)
            .map(|k| tear(1, k, ((k as u64) * 4096).trailing_zeros()))
            .collect();
        tears.push(tear(2, 1, NO_PAGE));
        tears.push(tear(3, 1, 12));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let order: Vec<Tear> = priority(&tears, &mut rng)
            .into_iter()
            .map(|i| tears[i])
            .collect();
        // Class 12 (an odd 4 KiB offset) first: write 1's four and write 3's one, and
        // write 3's before write 1's second.
        assert!(order[..5].iter().all(|t| t.class == 12), "{order:?}");
        let first_two: Vec<usize> = order[..2].iter().map(|t| t.w).collect();
        assert!(first_two.contains(&1) && first_two.contains(&3), "{order:?}");
        assert_eq!(order.last().unwrap().class, NO_PAGE);
        let classes: Vec<u32> = order.iter().map(|t| t.class).collect();
        let mut sorted = classes.clone();
        sorted.sort();
        assert_eq!(classes, sorted);
    }
}
