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
//! The unit of persistence is the logical block of the disk a write went to (4 KiB on
//! the loop devices jbench makes): a volatile cache may have written any subset of the
//! blocks of a multi-block write, but never part of one block.
//!
//! - `prefix`: every write before the cut, at every persistence point: after each
//!   flush, after each promise marker, and after each write to a disk without a
//!   volatile cache (its acknowledgement made it durable).
//! - `subset`: the durable writes plus a subset of the volatile *blocks* (at least one
//!   dropped), applied in log order, so a block overwritten in the cache reads as its
//!   older or its newer content, never a mix.
//! - `torn`: every volatile write kept except one multi-block write, of which only its
//!   first blocks reached the platter: a request torn by the power cut at the disk's
//!   logical block size (the only place such a disk can tear it).
//! - `fill`: prefix states at the prefix cuts where the ext3/ext4 journal holds the
//!   most live blocks (committed transactions the replay walks), read from the jbd2
//!   blocks the lab found in the log's payloads ([`JournalNotes`]).
//!
//! When a strategy's whole state space fits its share of the `states` budget, every
//! state is built; otherwise states are drawn stratified over the workload's phases
//! and the flush epochs within each, so every phase (and the final unmount) is
//! covered. Identical states (the same writes and the same promises) are built once.

use std::collections::HashSet;

use anyhow::{bail, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::journal_scan::JournalNotes;
use super::options::{CrashOptions, Strategy};
use crate::emu::writelog::{RecordKind, RecordMeta, NO_DISK};
pub use crate::results::crash::{count, Coverage, JournalLive};

mod choose;
mod fill;
mod marks;
mod strategy;
mod sweep;

pub use fill::journal_live;

use choose::Ctx;
pub use marks::{Marks, PromiseMark};
use strategy::{planner, Plans, Space};
use sweep::volatile_sizes;

/// The logical block size when the disk does not say (every loop device jbench
/// attaches has 4 KiB sectors).
pub const DEFAULT_BLOCK: u64 = 4096;

/// A write larger than this many blocks is kept or dropped whole: a request that
/// large (a discard or write-zeroes of a whole region) would make the subset space
/// meaningless, and the block layer splits real data writes far below it.
const MAX_SPLIT_BLOCKS: u64 = 1024;

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

/// How a disk treats acknowledged writes, from the log header and the device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskTraits {
    /// Acknowledged writes sit in a cache that a power cut empties until a flush.
    pub volatile_cache: bool,
    /// A flush really makes the cache durable (false: a lying disk).
    pub honor_flush: bool,
    /// The disk's logical block size in bytes: the unit a power cut cannot split.
    pub block: u64,
}

impl DiskTraits {
    pub const fn new(volatile_cache: bool, honor_flush: bool) -> Self {
        Self {
            volatile_cache,
            honor_flush,
            block: DEFAULT_BLOCK,
        }
    }
}

/// One write of a state's overlay: all of it, or some of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Piece {
    pub seq: u64,
    /// `None`: the whole write. Otherwise the kept byte ranges `(start, len)`, relative
    /// to the write's offset, each a run of whole logical blocks, in order.
    pub ranges: Option<Vec<(u64, u64)>>,
}

impl Piece {
    pub fn whole(seq: u64) -> Self {
        Self { seq, ranges: None }
    }
}

/// A block of a write as the labels see it: its file (an index into
/// [`FileWrites::files`]) and byte offset there, or `None` when it is not file data.
pub type BlockOfFile = Option<(u32, Option<u64>)>;

/// What the application's files hold of each multi-block write, from the recording's
/// block labels ([`crate::crash::block_map`]): the writes `torn-data` tears, and the
/// files `flush-subset` and `last-writes` name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileWrites {
    /// File paths, as the labels name them.
    pub files: Vec<String>,
    /// For each write with a block of a regular file's data (by `seq`): each of its
    /// logical blocks, in [`blocks_of`]'s order, with its file and byte offset in it
    /// (the offset `None` where it was not looked up), `None` for a block that is not
    /// file data.
    pub writes: std::collections::HashMap<u64, Vec<BlockOfFile>>,
    /// Where the recording's file system was mounted: a promise's path under it is
    /// named relative to it, as the labels name files.
    pub mount: String,
}

impl FileWrites {
    /// A promise's path as the labels would name the file.
    pub fn name_of(&self, path: &str) -> String {
        let mount = self.mount.trim_end_matches('/');
        match path.strip_prefix(mount).and_then(|p| p.strip_prefix('/')) {
            Some(rel) if !mount.is_empty() => rel.to_string(),
            _ => path.to_string(),
        }
    }
}

impl FileWrites {
    /// The file and offset of the first block a tear of write `seq` leaves out, when
    /// it kept `kept` bytes of logical blocks `units` (the file of any of its blocks
    /// when that one is not file data; the offset then unknown).
    pub fn torn_at(
        &self,
        seq: u64,
        kept: u64,
        units: &[(u64, u64)],
    ) -> Option<(&str, Option<u64>)> {
        let labels = self.writes.get(&seq)?;
        let mut sum = 0;
        let k = units
            .iter()
            .take_while(|u| {
                sum += u.1;
                sum <= kept
            })
            .count();
        let (file, offset) = match labels.get(k).copied().flatten() {
            Some(l) => l,
            None => (labels.iter().flatten().next()?.0, None),
        };
        Some((self.files.get(file as usize)?.as_str(), offset))
    }
}

/// One crash state to build.
#[derive(Debug, Clone, PartialEq)]
pub struct StatePlan {
    pub strategy: Strategy,
    /// Records with `seq < cut` are before the power cut.
    pub cut: u64,
    /// Records with `seq < base` are all in the state: the base images hold them.
    pub base: u64,
    /// The writes in `[base, cut)` the state keeps, whole or in part, in log order.
    pub overlay: Vec<Piece>,
    /// Write records before the cut kept whole.
    pub kept: u64,
    /// Write records before the cut with at least one block left out.
    pub dropped: u64,
    /// Logical blocks left out.
    pub dropped_blocks: u64,
    /// The torn write: `(seq, kept bytes, len)`.
    pub torn: Option<(u64, u64, u64)>,
    /// The workload phase the cut falls in (`setup` before the first, `teardown`
    /// after the last one ended).
    pub stratum: String,
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

/// The logical blocks a write spans on its disk: `(start, len)` byte ranges relative
/// to the write's offset. A write too large to split is one unit.
pub fn blocks_of(rec: &RecordMeta, block: u64) -> Vec<(u64, u64)> {
    let block = block.max(1);
    let end = rec.offset + rec.len;
    let first = rec.offset / block;
    let last = end.saturating_sub(1) / block;
    if rec.len == 0 || rec.kind == RecordKind::Discard || last - first + 1 > MAX_SPLIT_BLOCKS {
        return vec![(0, rec.len)];
    }
    (first..=last)
        .map(|b| {
            let from = (b * block).max(rec.offset);
            let to = ((b + 1) * block).min(end);
            (from - rec.offset, to - from)
        })
        .collect()
}

/// The crash states of one log, sorted by their base (so the lab only ever moves
/// the base images forward), numbered in that order by the caller.
pub fn plan_states(
    recs: &[LogRec],
    disks: &[DiskTraits],
    opts: &CrashOptions,
    seed: u64,
) -> Result<Vec<StatePlan>> {
    Ok(plan_with_coverage(recs, disks, opts, seed, &JournalNotes::default())?.0)
}

/// [`plan_states`] with the size of the state space and how much of it is covered;
/// `journal` holds the log's jbd2 blocks, which `fill` ranks its cuts by (empty: no
/// fill state).
pub fn plan_with_coverage(
    recs: &[LogRec],
    disks: &[DiskTraits],
    opts: &CrashOptions,
    seed: u64,
    journal: &JournalNotes,
) -> Result<(Vec<StatePlan>, Coverage)> {
    plan_knowing(recs, disks, opts, seed, journal, &FileWrites::default())
}

/// [`plan_with_coverage`] knowing which writes hold file data (`files`), which
/// `torn-data` tears (none without them).
pub fn plan_knowing(
    recs: &[LogRec],
    disks: &[DiskTraits],
    opts: &CrashOptions,
    seed: u64,
    journal: &JournalNotes,
    files: &FileWrites,
) -> Result<(Vec<StatePlan>, Coverage)> {
    let marks = Marks::of(recs)?;
    let durable = durability(recs, disks, marks.timing_on)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = recs.len() as u64;
    let block_of = |r: &LogRec| {
        disks
            .get(r.disk as usize)
            .map(|d| d.block)
            .unwrap_or(DEFAULT_BLOCK)
    };
    let units_of: Vec<Vec<(u64, u64)>> = recs
        .iter()
        .map(|r| {
            if r.is_write() {
                blocks_of(r, block_of(r))
            } else {
                Vec::new()
            }
        })
        .collect();
    let (prefix_cuts, subset_cuts) = cuts_of(recs, &marks, &durable, &units_of);
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
    let mut cov = Coverage {
        strategies: opts.strategies.iter().map(|s| s.to_string()).collect(),
        ..Coverage::default()
    };
    let mut strata: Vec<String> = prefix_cuts
        .iter()
        .map(|&c| marks.stratum_at(c))
        .chain(subset_cuts.iter().map(|&(c, _, _)| marks.stratum_at(c)))
        .collect();
    strata.sort();
    strata.dedup();
    cov.strata = strata;

    let ctx = Ctx {
        recs,
        durable: &durable,
        units_of: &units_of,
        writes_before: &writes_before,
        marks: &marks,
    };
    // The cuts fill takes, fullest journal first, one per distinct state.
    let fill_ranked = fill::ranked(&ctx, journal, &prefix_cuts);
    let tears = strategy::file_tears(&ctx, files, n);
    let volatile_cuts: Vec<u64> = subset_cuts.iter().map(|c| c.0).collect();
    let synced = strategy::synced_flushes(&ctx, files, &volatile_cuts);
    let promised = strategy::promise_cuts(&ctx, files);
    let space = Space {
        ctx: &ctx,
        prefix_cuts: &prefix_cuts,
        subset_cuts: &subset_cuts,
        fill_ranked: &fill_ranked,
        tears: &tears,
        synced: &synced,
        promised: &promised,
    };
    // Every strategy's space is measured, asked for or not (and a test build's own
    // when asked for).
    let test_only = opts
        .strategies
        .iter()
        .filter(|s| !Strategy::ALL.contains(s));
    for &s in Strategy::ALL.iter().chain(test_only) {
        cov.set_space(s, planner(s).space(&space));
    }
    let mut plans = Vec::new();
    cov.exhaustive = spend_budget(opts, &space, &mut cov, &mut plans, &mut rng);
    cov.torn_files = strategy::torn_files(&plans, files, &units_of);
    if opts.strategies.contains(&Strategy::FlushSubset) {
        (cov.synced_flushes, cov.flush_files) = strategy::flush_coverage(&plans, &synced);
    }
    if opts.strategies.contains(&Strategy::LastWrites) {
        cov.promises_cut = strategy::promise_coverage(&plans, &promised);
    }
    let mut covered: Vec<String> = plans.iter().map(|p| p.stratum.clone()).collect();
    covered.sort();
    covered.dedup();
    cov.strata_covered = covered;
    plans.sort_by_key(|p| (p.base, p.cut));
    Ok((plans, cov))
}

/// The persistence points in the workload's window (prefix cuts, the final one
/// last), and the cuts with volatile blocks: (cut, volatile blocks, torn states there).
fn cuts_of(
    recs: &[LogRec],
    marks: &Marks,
    durable: &[Option<u64>],
    units_of: &[Vec<(u64, u64)>],
) -> (Vec<u64>, Vec<(u64, u64, u64)>) {
    let n = recs.len() as u64;
    let in_window = |s: u64| s > marks.timing_on;
    let flushes: Vec<u64> = recs
        .iter()
        .filter(|r| r.kind == RecordKind::Flush && in_window(r.seq))
        .map(|r| r.seq)
        .collect();
    let promise_ends: Vec<u64> = marks
        .promises
        .iter()
        .map(|(s, _)| s + 1)
        .filter(|&s| in_window(s))
        .collect();
    // A write to a disk without a volatile cache is durable once acknowledged: every
    // one is a persistence point.
    let write_through: Vec<u64> = recs
        .iter()
        .filter(|r| r.is_write() && in_window(r.seq + 1) && durable[r.seq as usize] == Some(r.seq))
        .map(|r| r.seq + 1)
        .collect();
    let mut prefix_cuts: Vec<u64> = flushes
        .iter()
        .map(|s| s + 1)
        .chain(promise_ends.iter().copied())
        .chain(write_through.iter().copied())
        .collect();
    prefix_cuts.push(n);
    prefix_cuts.sort_unstable();
    prefix_cuts.dedup();
    // Right before a flush is acknowledged its cache holds the most.
    let mut subset_cuts: Vec<u64> = flushes
        .iter()
        .copied()
        .chain(promise_ends.iter().copied())
        .chain(write_through.iter().copied())
        .filter(|&s| in_window(s))
        .collect();
    subset_cuts.push(n);
    subset_cuts.sort_unstable();
    subset_cuts.dedup();
    let sizes = volatile_sizes(recs, durable, units_of, &subset_cuts);
    // Cuts where nothing is volatile have no subset state.
    let subset_cuts: Vec<(u64, u64, u64)> = subset_cuts
        .iter()
        .zip(&sizes)
        .filter(|(_, (u, _))| *u > 0)
        .map(|(&c, &(u, t))| (c, u, t))
        .collect();

    (prefix_cuts, subset_cuts)
}

/// Plans each strategy asked for with its part of `states`, recording its space and
/// planned states in `cov`; whether every strategy's whole space was planned.
///
/// A strategy with a first share is planned first, with up to that part of the budget
/// (all of it alone); the rest is split evenly over the others, what one cannot use
/// going to the next. A strategy whose states are another's goes first among those,
/// whatever its place in the list (fill's are prefix states): a state is built once,
/// under the first strategy that takes it, so the fullest cuts are fill's and prefix
/// spends its share on the others.
fn spend_budget(
    opts: &CrashOptions,
    space: &Space,
    cov: &mut Coverage,
    plans: &mut Vec<StatePlan>,
    rng: &mut ChaCha8Rng,
) -> bool {
    let mut seen = HashSet::new();
    let mut order = opts.strategies.clone();
    order.sort_by_key(|s| (s.info().first_share.is_none(), s.info().states_of.is_none()));
    let alone = order.len() <= 1;
    let even = order
        .iter()
        .filter(|s| s.info().first_share.is_none())
        .count()
        .max(1) as u32;
    let mut left = opts.states;
    let mut left_over = 0u32;
    let mut evens = 0u32;
    let mut even_budget = None;
    let mut exhaustive = true;
    for &strategy in order.iter() {
        let quota = match strategy.info().first_share {
            Some(_) if alone => left,
            Some(pct) => ((opts.states as u64 * pct as u64 / 100) as u32).min(left),
            None => {
                let budget = *even_budget.get_or_insert(left);
                let q = budget / even + u32::from(evens < budget % even) + left_over;
                evens += 1;
                q
            }
        };
        let before = plans.len();
        let p = planner(strategy);
        let all = p.open(space, &seen) <= quota as f64;
        exhaustive &= all;
        p.plan(
            space,
            quota as usize,
            all,
            &mut Plans {
                seen: &mut seen,
                plans,
                rng,
            },
        );
        let made = (plans.len() - before) as u64;
        if all {
            if let Some(e) = p.enumerated(space, made) {
                cov.set_space(strategy, e);
            }
        }
        cov.set_planned(strategy, made);
        if strategy.info().first_share.is_some() {
            left = left.saturating_sub(made as u32);
        } else {
            left_over = quota.saturating_sub(made as u32);
        }
    }
    exhaustive
}

#[cfg(test)]
pub(in crate::crash::states) mod tests;
