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
//!
//! When a strategy's whole state space fits its share of the `states` budget, every
//! state is built; otherwise states are drawn stratified over the workload's phases
//! and the flush epochs within each, so every phase (and the final unmount) is
//! covered. Identical states (the same writes and the same promises) are built once.

use std::collections::{BTreeMap, HashSet};

use anyhow::{bail, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::options::{CrashOptions, Strategy};
use crate::emu::writelog::{RecordKind, RecordMeta, NO_DISK};

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

/// A promise a workload made, as its marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromiseMark {
    /// `fsync PATH`: the fsync engine's file, with content its parameters decide.
    Fsync(String),
    /// `durable PATH [sha256=HEX]`: a command's file, whole, after its own fsync.
    Durable {
        path: String,
        sha256: Option<String>,
    },
    /// `durable-range PATH OFFSET LEN`: bytes of a file a synchronous write or an
    /// fsync made durable (fio, iozone).
    Range { path: String, offset: u64, len: u64 },
}

impl PromiseMark {
    pub fn parse(label: &str) -> Option<Self> {
        if let Some(p) = label.strip_prefix("fsync ") {
            return Some(Self::Fsync(p.to_string()));
        }
        if let Some(rest) = label.strip_prefix("durable-range ") {
            let mut it = rest.rsplitn(3, ' ');
            let len = it.next()?.parse().ok()?;
            let offset = it.next()?.parse().ok()?;
            let path = it.next()?.to_string();
            return Some(Self::Range { path, offset, len });
        }
        if let Some(rest) = label.strip_prefix("durable ") {
            if let Some((path, hex)) = rest.rsplit_once(" sha256=") {
                if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Some(Self::Durable {
                        path: path.to_string(),
                        sha256: Some(hex.to_ascii_lowercase()),
                    });
                }
            }
            return Some(Self::Durable {
                path: rest.to_string(),
                sha256: None,
            });
        }
        None
    }

    pub fn path(&self) -> &str {
        match self {
            Self::Fsync(p) => p,
            Self::Durable { path, .. } | Self::Range { path, .. } => path,
        }
    }
}

/// The markers of a log that the lab uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// `timing on`: where the workload starts. No state is cut before it.
    pub timing_on: u64,
    /// `fsync PATH` markers: `(seq, path)`.
    pub fsyncs: Vec<(u64, String)>,
    /// Every promise marker (fsync, durable, durable-range): `(seq, promise)`.
    pub promises: Vec<(u64, PromiseMark)>,
    /// `phase NAME` markers: `(seq, name)`.
    pub phases: Vec<(u64, String)>,
    /// `end NAME` markers (a phase's clock stopped): `(seq, name)`.
    pub ends: Vec<(u64, String)>,
}

impl Marks {
    pub fn of(recs: &[LogRec]) -> Result<Self> {
        let mut m = Marks::default();
        let mut timing_on = None;
        for r in recs.iter().filter(|r| r.kind == RecordKind::Marker) {
            let label = r.label.as_deref().unwrap_or("");
            if label == "timing on" && timing_on.is_none() {
                timing_on = Some(r.seq);
            } else if let Some(p) = label.strip_prefix("phase ") {
                m.phases.push((r.seq, p.to_string()));
            } else if let Some(p) = label.strip_prefix("end ") {
                m.ends.push((r.seq, p.to_string()));
            } else if let Some(p) = PromiseMark::parse(label) {
                if let PromiseMark::Fsync(path) = &p {
                    m.fsyncs.push((r.seq, path.clone()));
                }
                m.promises.push((r.seq, p));
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

    /// Promise markers of every kind before `cut`.
    pub fn promises_before(&self, cut: u64) -> &[(u64, PromiseMark)] {
        let n = self.promises.partition_point(|(s, _)| *s < cut);
        &self.promises[..n]
    }

    /// The phase running at `cut` (the last phase marker before it).
    pub fn phase_at(&self, cut: u64) -> Option<&str> {
        let n = self.phases.partition_point(|(s, _)| *s < cut);
        n.checked_sub(1).map(|i| self.phases[i].1.as_str())
    }

    /// The stratum a cut falls in: its phase, `setup` before the first phase, and
    /// `teardown` once the last phase's clock stopped (the final unmount is there).
    pub fn stratum_at(&self, cut: u64) -> String {
        let last_begin = self
            .phases
            .iter()
            .take_while(|(s, _)| *s < cut)
            .last()
            .map(|(s, _)| *s);
        let last_end = self
            .ends
            .iter()
            .take_while(|(s, _)| *s < cut)
            .last()
            .map(|(s, _)| *s);
        match (last_begin, last_end) {
            (None, None) => "setup".into(),
            (b, Some(e)) if b.is_none_or(|b| e > b) && self.phases.iter().all(|(s, _)| *s < e) => {
                "teardown".into()
            }
            _ => self.phase_at(cut).unwrap_or("setup").to_string(),
        }
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

/// How big a log's state space is, and how much of it the plan covers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The strategies asked for, in order.
    #[serde(default)]
    pub strategies: Vec<Strategy>,
    /// Prefix cuts (persistence points) in the workload's window.
    pub prefix_space: u64,
    /// Distinct subset states: the sum over subset cuts of 2^(volatile blocks) - 1,
    /// saturating (an f64, so a space of 2^200 still reads as one).
    pub subset_space: f64,
    /// Torn states: the sum over cuts of (blocks - 1) for every volatile multi-block
    /// write.
    pub torn_space: u64,
    /// States planned per strategy.
    pub prefix_planned: u64,
    pub subset_planned: u64,
    pub torn_planned: u64,
    /// Every state of every strategy asked for was planned.
    pub exhaustive: bool,
    /// Strata (workload phases) with at least one cut, and those the plan covers.
    pub strata: Vec<String>,
    pub strata_covered: Vec<String>,
}

impl Coverage {
    /// "checked N of M states (all prefix cuts; K of L subsets)".
    pub fn describe(&self, checked: u64) -> String {
        let mut parts = Vec::new();
        let mut total = 0f64;
        for s in &self.strategies {
            let (planned, space) = match s {
                Strategy::Prefix => (self.prefix_planned, self.prefix_space as f64),
                Strategy::Subset => (self.subset_planned, self.subset_space),
                Strategy::Torn => (self.torn_planned, self.torn_space as f64),
            };
            total += space;
            let noun = match s {
                Strategy::Prefix => "prefix cuts",
                Strategy::Subset => "subsets",
                Strategy::Torn => "torn writes",
            };
            parts.push(if planned as f64 >= space {
                format!("all {noun}")
            } else {
                format!("{planned} of {} {noun}", count(space))
            });
        }
        format!(
            "checked {checked} of {} states ({})",
            count(total),
            parts.join("; ")
        )
    }
}

/// A state count as a person reads it: exact while it is an integer f64 holds, then
/// in powers of ten.
pub fn count(n: f64) -> String {
    if n < 1e15 {
        format!("{}", n as u64)
    } else if n.is_finite() {
        format!("~1e{}", n.log10().floor() as i64)
    } else {
        "more than 1e300".into()
    }
}

/// A volatile unit at a cut: a record and one of its byte ranges (a logical block).
type Unit = (usize, u32);

/// The volatile units at each of `cuts` (sorted), in log order.
fn volatile_at(
    recs: &[LogRec],
    durable: &[Option<u64>],
    units_of: &[Vec<(u64, u64)>],
    cuts: &[u64],
) -> Vec<Vec<Unit>> {
    let mut out = Vec::with_capacity(cuts.len());
    // Writes enter when passed and leave when their covering flush is passed.
    let mut live: std::collections::BTreeSet<usize> = Default::default();
    let mut leaving: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut next = 0usize;
    for &cut in cuts {
        while (next as u64) < cut {
            if recs[next].is_write() {
                match durable[next] {
                    Some(f) if f == next as u64 => {}
                    Some(f) => {
                        live.insert(next);
                        leaving.entry(f).or_default().push(next);
                    }
                    None => {
                        live.insert(next);
                    }
                }
            }
            if let Some(ws) = leaving.remove(&(next as u64)) {
                for w in ws {
                    live.remove(&w);
                }
            }
            next += 1;
        }
        out.push(
            live.iter()
                .flat_map(|&w| (0..units_of[w].len() as u32).map(move |b| (w, b)))
                .collect(),
        );
    }
    out
}

/// Sizes of the volatile unit sets at `cuts`, and the torn space there, in one sweep.
fn volatile_sizes(
    recs: &[LogRec],
    durable: &[Option<u64>],
    units_of: &[Vec<(u64, u64)>],
    cuts: &[u64],
) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(cuts.len());
    let mut units = 0u64;
    let mut torn = 0u64;
    let mut leaving: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut next = 0usize;
    for &cut in cuts {
        while (next as u64) < cut {
            if recs[next].is_write() && durable[next] != Some(next as u64) {
                let n = units_of[next].len() as u64;
                units += n;
                torn += n - 1;
                if let Some(f) = durable[next] {
                    leaving.entry(f).or_default().push(next);
                }
            }
            if let Some(ws) = leaving.remove(&(next as u64)) {
                for w in ws {
                    let n = units_of[w].len() as u64;
                    units -= n;
                    torn -= n - 1;
                }
            }
            next += 1;
        }
        out.push((units, torn));
    }
    out
}

/// The crash states of one log, sorted by their base (so the lab only ever moves
/// the base images forward), numbered in that order by the caller.
pub fn plan_states(
    recs: &[LogRec],
    disks: &[DiskTraits],
    opts: &CrashOptions,
    seed: u64,
) -> Result<Vec<StatePlan>> {
    Ok(plan_with_coverage(recs, disks, opts, seed)?.0)
}

/// [`plan_states`] with the size of the state space and how much of it is covered.
pub fn plan_with_coverage(
    recs: &[LogRec],
    disks: &[DiskTraits],
    opts: &CrashOptions,
    seed: u64,
) -> Result<(Vec<StatePlan>, Coverage)> {
    let marks = Marks::of(recs)?;
    let durable = durability(recs, disks, marks.timing_on)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = recs.len() as u64;
    let in_window = |s: u64| s > marks.timing_on;
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
    let sizes = volatile_sizes(recs, &durable, &units_of, &subset_cuts);
    // Cuts where nothing is volatile have no subset state.
    let subset_cuts: Vec<(u64, u64, u64)> = subset_cuts
        .iter()
        .zip(&sizes)
        .filter(|(_, (u, _))| *u > 0)
        .map(|(&c, &(u, t))| (c, u, t))
        .collect();

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
        prefix_space: prefix_cuts.len() as u64,
        subset_space: subset_cuts
            .iter()
            .map(|&(_, u, _)| 2f64.powi(u.min(1000) as i32) - 1.0)
            .sum::<f64>()
            .min(1e300),
        torn_space: subset_cuts.iter().map(|&(_, _, t)| t).sum(),
        strategies: opts.strategies.clone(),
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
    let mut seen = HashSet::new();
    let mut plans = Vec::new();
    let k = opts.strategies.len().max(1) as u32;
    let mut left_over = 0u32;
    let mut exhaustive = true;
    for (i, &strategy) in opts.strategies.iter().enumerate() {
        let quota = opts.states / k + u32::from((i as u32) < opts.states % k) + left_over;
        let before = plans.len();
        let space = match strategy {
            Strategy::Prefix => cov.prefix_space as f64,
            Strategy::Subset => cov.subset_space,
            Strategy::Torn => cov.torn_space as f64,
        };
        let all = space <= quota as f64;
        exhaustive &= all;
        match strategy {
            Strategy::Prefix => {
                let chosen = if all {
                    prefix_cuts.clone()
                } else {
                    stratified_cuts(&prefix_cuts, &marks, quota as usize, &mut rng)
                };
                for cut in chosen {
                    let plan = ctx.prefix_state(cut);
                    if seen.insert(ctx.key(&plan)) {
                        plans.push(plan);
                    }
                }
            }
            Strategy::Subset | Strategy::Torn => {
                let cuts: Vec<u64> = subset_cuts.iter().map(|c| c.0).collect();
                if all {
                    let vol = volatile_at(recs, &durable, &units_of, &cuts);
                    for (&cut, units) in cuts.iter().zip(&vol) {
                        for plan in ctx.every_state(cut, units, strategy) {
                            if seen.insert(ctx.key(&plan)) {
                                plans.push(plan);
                            }
                        }
                    }
                } else {
                    ctx.sample(
                        &cuts,
                        strategy,
                        quota as usize,
                        &mut seen,
                        &mut plans,
                        &mut rng,
                    );
                }
            }
        }
        let made = (plans.len() - before) as u64;
        // Enumerated: the distinct states are the space (the sum counts a state that
        // two cuts share twice).
        if all {
            match strategy {
                Strategy::Prefix => cov.prefix_space = made,
                Strategy::Subset => cov.subset_space = made as f64,
                Strategy::Torn => cov.torn_space = made,
            }
        }
        match strategy {
            Strategy::Prefix => cov.prefix_planned = made,
            Strategy::Subset => cov.subset_planned = made,
            Strategy::Torn => cov.torn_planned = made,
        }
        left_over = quota.saturating_sub(made as u32);
    }
    cov.exhaustive = exhaustive;
    let mut covered: Vec<String> = plans.iter().map(|p| p.stratum.clone()).collect();
    covered.sort();
    covered.dedup();
    cov.strata_covered = covered;
    plans.sort_by_key(|p| (p.base, p.cut));
    Ok((plans, cov))
}

/// `quota` prefix cuts spread over the strata round-robin, each stratum's spread over
/// its cuts; the last cut (after the final unmount) always among them.
fn stratified_cuts(cuts: &[u64], marks: &Marks, quota: usize, rng: &mut ChaCha8Rng) -> Vec<u64> {
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

struct Ctx<'a> {
    recs: &'a [LogRec],
    durable: &'a [Option<u64>],
    units_of: &'a [Vec<(u64, u64)>],
    writes_before: &'a [u64],
    marks: &'a Marks,
}

/// What makes two states the same: the writes before the cut, the blocks left out,
/// and the promises in force.
type Key = (u64, Vec<Unit>, usize);

impl Ctx<'_> {
    fn key(&self, p: &StatePlan) -> Key {
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

    fn prefix_state(&self, cut: u64) -> StatePlan {
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
    fn state(
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

    /// Every subset (or torn) state at `cut`.
    fn every_state(&self, cut: u64, units: &[Unit], strategy: Strategy) -> Vec<StatePlan> {
        let mut out = Vec::new();
        match strategy {
            Strategy::Subset => {
                // The space fits the quota, so units.len() is small.
                let u = units.len();
                for mask in 0..(1u64 << u) - 1 {
                    let keep: HashSet<Unit> = (0..u)
                        .filter(|&i| mask & (1 << i) != 0)
                        .map(|i| units[i])
                        .collect();
                    out.push(self.state(cut, units, &keep, strategy, None));
                }
            }
            _ => {
                for w in self.tearable(units) {
                    for k in 1..self.units_of[w].len() {
                        out.push(self.torn_state(cut, units, w, k));
                    }
                }
            }
        }
        out
    }

    /// Volatile multi-block writes at a cut (a torn state tears one of them).
    fn tearable(&self, units: &[Unit]) -> Vec<usize> {
        let mut ws: Vec<usize> = units.iter().filter(|u| u.1 == 1).map(|u| u.0).collect();
        ws.dedup();
        ws
    }

    /// Every volatile unit kept but the blocks of write `w` from its `k`-th on.
    fn torn_state(&self, cut: u64, units: &[Unit], w: usize, k: usize) -> StatePlan {
        let keep: HashSet<Unit> = units
            .iter()
            .copied()
            .filter(|u| u.0 != w || (u.1 as usize) < k)
            .collect();
        let r = &self.recs[w];
        let kept_bytes = self.units_of[w][..k].iter().map(|u| u.1).sum();
        self.state(
            cut,
            units,
            &keep,
            Strategy::Torn,
            Some((w as u64, kept_bytes, r.len)),
        )
    }

    /// Draws `quota` states, stratified: cuts grouped by phase, the phases taken in
    /// turn, each one's cuts in a seeded order, one random subset per visit.
    fn sample(
        &self,
        cuts: &[u64],
        strategy: Strategy,
        quota: usize,
        seen: &mut HashSet<Key>,
        plans: &mut Vec<StatePlan>,
        rng: &mut ChaCha8Rng,
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
            let units = at[&cut];
            let plan = match strategy {
                Strategy::Subset => {
                    // Keep fewer than all: keeping all is a prefix-like state.
                    let keep_n = rng.gen_range(0..units.len());
                    let keep: HashSet<Unit> = rand::seq::index::sample(rng, units.len(), keep_n)
                        .into_iter()
                        .map(|i| units[i])
                        .collect();
                    self.state(cut, units, &keep, strategy, None)
                }
                _ => {
                    let ws = self.tearable(units);
                    if ws.is_empty() {
                        continue;
                    }
                    let w = ws[rng.gen_range(0..ws.len())];
                    let k = rng.gen_range(1..self.units_of[w].len());
                    self.torn_state(cut, units, w, k)
                }
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

#[cfg(test)]
mod tests;
