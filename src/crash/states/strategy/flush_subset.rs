//! `flush-subset`: a subset of the volatile blocks right before each flush that makes
//! a synced file's data durable, at least one of that file's blocks left out, and a
//! subset right after it (at the next cut with volatile blocks). A flush is a synced
//! file's when the writes it makes durable hold that file's data (the recording's
//! block labels), or, where the labels know no file data, when the next promise
//! (an fsync, a durable file) names the file before another flush.
//!
//! Why: an application makes its files durable at a few moments it chooses (a
//! checkpoint, a WAL segment switch, an fsync), and what the cache may have written
//! at those moments is what its recovery must survive. Sampled evenly, a few hundred
//! subsets land on few of them.
//!
//! Order when not all fit: the state before each flush first, then the state after;
//! within each, the files in turn, each one's flushes in a seeded order, so every file
//! gets some before any gets many.

use std::collections::{BTreeMap, HashSet};

use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::{visit_in_chunks, Planner, Plans, Space};
use crate::crash::options::Strategy;
use crate::crash::states::choose::Ctx;
use crate::crash::states::sweep::Unit;
use crate::crash::states::{FileWrites, StatePlan};
use crate::emu::writelog::RecordKind;

/// Most file names a coverage line lists.
const NAMED_FILES: usize = 8;

/// What a flush is called when the promise after it is a record key and no label
/// names a file.
const ACKNOWLEDGED: &str = "an acknowledged record's writes";

/// Draws tried for a state no earlier strategy built.
const TRIES: usize = 4;

/// One flush of a synced file.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::crash::states) struct SyncedFlush {
    /// The flush's own record: a state cut here has everything before the flush's
    /// acknowledgement, and the writes it covers still volatile.
    pub(in crate::crash::states) cut: u64,
    /// The next cut with volatile blocks after the flush, for the state after it.
    pub(in crate::crash::states) after: Option<u64>,
    /// The file, as the labels or the promise name it.
    pub(in crate::crash::states) file: String,
    /// The writes the flush makes durable that hold the file's data (all it covers
    /// when the file is known from a promise).
    pub(in crate::crash::states) own: Vec<usize>,
}

/// Every flush after the workload started that makes a synced file's data durable.
/// `cuts`: the cuts with volatile blocks, ascending.
pub(in crate::crash::states) fn synced_flushes(
    ctx: &Ctx,
    files: &FileWrites,
    cuts: &[u64],
) -> Vec<SyncedFlush> {
    let mut covered: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (w, d) in ctx.durable.iter().enumerate() {
        match *d {
            Some(f) if f != w as u64 && f > ctx.marks.timing_on => {
                covered.entry(f).or_default().push(w)
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    // The file of the last flush with its data, and the promises made before it: a
    // flush of no file data before the next promise finishes the same sync (jbd2's
    // commit after the data's flush) and is that file's.
    let mut last: Option<(String, usize)> = None;
    for (f, writes) in covered {
        let promised = ctx.marks.promises_before(f).len();
        let named = match file_of_flush(files, &writes) {
            Some(found) => Some(found),
            None => match &last {
                Some((file, p)) if *p == promised => Some((file.clone(), writes.clone())),
                _ => promised_after(ctx, files, f, &writes),
            },
        };
        let Some((file, own)) = named else {
            continue;
        };
        last = Some((file.clone(), promised));
        let at = cuts.partition_point(|&c| c <= f);
        out.push(SyncedFlush {
            cut: f,
            after: cuts.get(at).copied(),
            file,
            own,
        });
    }
    out
}

/// The file whose data blocks the flush's writes hold most of, and its writes.
fn file_of_flush(files: &FileWrites, writes: &[usize]) -> Option<(String, Vec<usize>)> {
    let mut blocks: BTreeMap<u32, u64> = BTreeMap::new();
    for w in writes {
        for (file, _) in files.writes.get(&(*w as u64)).into_iter().flatten().flatten() {
            *blocks.entry(*file).or_default() += 1;
        }
    }
    let (&file, _) = blocks
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
    let own = writes
        .iter()
        .copied()
        .filter(|w| {
            files.writes.get(&(*w as u64)).is_some_and(|ls| {
                ls.iter().any(|l| l.is_some_and(|(f, _)| f == file))
            })
        })
        .collect();
    Some((files.files.get(file as usize)?.clone(), own))
}

/// The file of the first promise after flush `f` (or [`ACKNOWLEDGED`] for a record
/// key), when no other flush of its disk comes between them (the fsync that issued
/// it); its writes are all `f` covers.
fn promised_after(
    ctx: &Ctx,
    files: &FileWrites,
    f: u64,
    writes: &[usize],
) -> Option<(String, Vec<usize>)> {
    let at = ctx.marks.promises.partition_point(|(s, _)| *s < f);
    let (seq, promise) = ctx.marks.promises.get(at)?;
    let disk = ctx.recs[f as usize].disk;
    let another = ctx.recs[f as usize + 1..*seq as usize]
        .iter()
        .any(|r| r.kind == RecordKind::Flush && r.disk == disk);
    if another {
        return None;
    }
    let file = promise
        .path()
        .map_or_else(|| ACKNOWLEDGED.to_string(), |p| files.name_of(p));
    Some((file, writes.to_vec()))
}

/// The flushes' coverage: how many had a state right before them, of how many, and
/// per file "NAME (a of b)" (per directory, "DIR/ (a of b)", past [`NAMED_FILES`]
/// files), most flushes first.
pub(in crate::crash::states) fn flush_coverage(
    plans: &[StatePlan],
    synced: &[SyncedFlush],
) -> ([u64; 2], Vec<String>) {
    let before: HashSet<u64> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::FlushSubset)
        .map(|p| p.cut)
        .collect();
    let names: HashSet<&str> = synced.iter().map(|s| s.file.as_str()).collect();
    // Past a handful of files, a directory is the unit a person reads (pg_wal, the
    // fsync workload's tree).
    let by_dir = names.len() > NAMED_FILES;
    let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for s in synced {
        let name = match s.file.rsplit_once('/') {
            Some((dir, _)) if by_dir => format!("{dir}/"),
            _ => s.file.clone(),
        };
        let e = by.entry(name).or_default();
        e.0 += u64::from(before.contains(&s.cut));
        e.1 += 1;
    }
    let covered = by.values().map(|c| c.0).sum();
    let mut v: Vec<(String, (u64, u64))> = by.into_iter().collect();
    v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    let mut listed: Vec<String> = v
        .iter()
        .take(NAMED_FILES)
        .map(|(name, (a, b))| format!("{name} ({a} of {b})"))
        .collect();
    let rest = &v[v.len().min(NAMED_FILES)..];
    if !rest.is_empty() {
        let a: u64 = rest.iter().map(|r| r.1 .0).sum();
        let b: u64 = rest.iter().map(|r| r.1 .1).sum();
        let what = if by_dir { "directories" } else { "files" };
        listed.push(format!("{} more {what} ({a} of {b})", rest.len()));
    }
    ([covered, synced.len() as u64], listed)
}

pub(super) struct FlushSubset;

impl Planner for FlushSubset {
    /// A state before each synced flush, and one after it where a cut follows.
    fn space(&self, s: &Space) -> f64 {
        s.synced
            .iter()
            .map(|f| 1 + u64::from(f.after.is_some()))
            .sum::<u64>() as f64
    }

    fn plan(&self, s: &Space, quota: usize, all: bool, out: &mut Plans) {
        let order = visits(s.synced, out.rng);
        let ctx = s.ctx;
        visit_in_chunks(ctx, &order, |v| v.cut, quota, all, out, |v, units, out| {
            for _ in 0..TRIES {
                let Some(plan) = draw(ctx, v.cut, units, v.own, out.rng) else {
                    break;
                };
                if out.seen.insert(ctx.key(&plan)) {
                    out.plans.push(plan);
                    break;
                }
            }
        });
    }

    fn enumerated(&self, _s: &Space, made: u64) -> Option<f64> {
        Some(made as f64)
    }
}

/// One state to draw: its cut, and the writes at least one block of which it leaves
/// out (none: any block).
struct Visit<'a> {
    cut: u64,
    own: &'a [usize],
}

/// The states in the order they are taken: every flush's state before it, then every
/// one's after it; the files in turn, each one's flushes in a seeded order.
fn visits<'a>(synced: &'a [SyncedFlush], rng: &mut ChaCha8Rng) -> Vec<Visit<'a>> {
    let mut by: BTreeMap<&str, Vec<&SyncedFlush>> = BTreeMap::new();
    for f in synced {
        by.entry(f.file.as_str()).or_default().push(f);
    }
    let mut files: Vec<Vec<&SyncedFlush>> = by.into_values().collect();
    for f in files.iter_mut() {
        f.shuffle(rng);
    }
    let longest = files.iter().map(Vec::len).max().unwrap_or(0);
    let mut turn = Vec::new();
    for i in 0..longest {
        turn.extend(files.iter().filter_map(|f| f.get(i).copied()));
    }
    let mut out: Vec<Visit> = turn
        .iter()
        .map(|f| Visit {
            cut: f.cut,
            own: &f.own,
        })
        .collect();
    out.extend(turn.iter().filter_map(|f| {
        f.after.map(|cut| Visit {
            cut,
            own: &[][..],
        })
    }));
    out
}

/// A random subset of `units` (each kept with even odds) that leaves out at least one
/// block of the writes `own` (of any write when `own` is empty or none is volatile).
fn draw(
    ctx: &Ctx,
    cut: u64,
    units: &[Unit],
    own: &[usize],
    rng: &mut ChaCha8Rng,
) -> Option<StatePlan> {
    if units.is_empty() {
        return None;
    }
    let mut keep: HashSet<Unit> = units.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
    let own: HashSet<usize> = own.iter().copied().collect();
    let mine: Vec<Unit> = units
        .iter()
        .copied()
        .filter(|u| own.contains(&u.0))
        .collect();
    let pool = if mine.is_empty() { units.to_vec() } else { mine };
    if pool.iter().all(|u| keep.contains(u)) {
        keep.remove(&pool[rng.gen_range(0..pool.len())]);
    }
    Some(ctx.state(cut, units, &keep, Strategy::FlushSubset, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flush(cut: u64, file: &str) -> SyncedFlush {
        SyncedFlush {
            cut,
            after: None,
            file: file.into(),
            own: Vec::new(),
        }
    }

    fn plan_at(cut: u64) -> StatePlan {
        StatePlan {
            strategy: Strategy::FlushSubset,
            cut,
            base: cut,
            overlay: Vec::new(),
            kept: 0,
            dropped: 0,
            dropped_blocks: 0,
            torn: None,
            stratum: "x".into(),
        }
    }

    /// A few files are named one by one; past eight, by their directory.
    #[test]
    fn coverage_names_files_then_directories_with_what_each_got() {
        let few = [flush(1, "db/a"), flush(2, "db/a"), flush(3, "wal/1")];
        let (n, names) = flush_coverage(&[plan_at(2)], &few);
        assert_eq!(n, [1, 3]);
        assert_eq!(names, ["db/a (1 of 2)", "wal/1 (0 of 1)"]);
        let many: Vec<SyncedFlush> = (0..10)
            .map(|i| flush(i, &format!("t0/d0/f{i}")))
            .chain([flush(20, "pg_control")])
            .collect();
        let (n, names) = flush_coverage(&[plan_at(3), plan_at(20)], &many);
        assert_eq!(n, [2, 11]);
        assert_eq!(names, ["t0/d0/ (1 of 10)", "pg_control (1 of 1)"]);
    }
}
