//! `flush-subset`'s and `last-writes`' plans from a hand-built log and hand-made file
//! labels.

use super::*;

/// A log with two promises: an fsync of `db/a` whose flush covers two of its data
/// writes and a journal write, then a record key whose writes no label names, then a
/// flush no promise follows.
struct TwoPromises {
    l: Log,
    files: FileWrites,
    a1: u64,
    journal: u64,
    a2: u64,
    f1: u64,
    other: u64,
    f2: u64,
    f3: u64,
}

impl TwoPromises {
    /// The plan of `states` states with `strategies`, seed `seed`, on one cached disk.
    fn plan(&self, states: u32, strategies: &[Strategy], seed: u64) -> (Vec<StatePlan>, Coverage) {
        plan_knowing(
            &self.l.recs,
            &[CACHED],
            &opts(states, strategies),
            seed,
            &JournalNotes::default(),
            &self.files,
        )
        .unwrap()
    }
}

fn two_promises() -> TwoPromises {
    let mut l = Log::new();
    let a1 = l.wn(0, 2);
    let journal = l.wn(0, 1);
    let a2 = l.w(0);
    let f1 = l.f(0);
    l.mark("fsync /mnt/t/db/a");
    let other = l.w(0);
    let f2 = l.f(0);
    l.mark("durable-key k1");
    l.w(0);
    let f3 = l.f(0);
    let mut files = FileWrites {
        files: vec!["db/a".into()],
        mount: "/mnt/t".into(),
        ..FileWrites::default()
    };
    files
        .writes
        .insert(a1, vec![Some((0, Some(0))), Some((0, Some(4096)))]);
    files.writes.insert(a2, vec![Some((0, Some(8192)))]);
    TwoPromises {
        l,
        files,
        a1,
        journal,
        a2,
        f1,
        other,
        f2,
        f3,
    }
}

/// A state right before each flush of a synced file leaves out at least one of that
/// file's blocks; the flush no promise follows and no label names is not one; the
/// file is named by its labels, or by the promise where the labels know none.
#[test]
fn flush_subset_cuts_right_before_each_synced_flush_leaving_out_the_files_blocks() {
    let t = two_promises();
    let plan = |states: u32| t.plan(states, &[Strategy::FlushSubset, Strategy::Prefix], 5);
    // Whatever the seed, the state before f1 leaves out one of db/a's blocks.
    for seed in 0..32 {
        let (plans, _) = t.plan(1000, &[Strategy::FlushSubset], seed);
        let p = plans.iter().find(|p| p.cut == t.f1).unwrap();
        let whole =
            |w: u64| w < p.base || p.overlay.iter().any(|q| q.seq == w && q.ranges.is_none());
        assert!(!(whole(t.a1) && whole(t.a2)), "seed {seed}: {p:?}");
    }
    let (plans, cov) = plan(1000);
    let ours: Vec<&StatePlan> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::FlushSubset)
        .collect();
    // Before f1 and f2, and after each (the next cut with volatile blocks): f1's after
    // is f2's before, one block to leave out, so one state.
    assert_eq!(cov.space(Strategy::FlushSubset), 3.0, "{ours:#?}");
    assert_eq!(cov.synced_flushes, [2, 2]);
    assert_eq!(
        cov.flush_files,
        ["an acknowledged record's writes (1 of 1)", "db/a (1 of 1)"]
    );
    let before_f1 = ours
        .iter()
        .find(|p| p.cut == t.f1)
        .expect("a state before f1");
    // At least one block of db/a's writes is left out.
    let whole = |w: u64| {
        w < before_f1.base
            || before_f1
                .overlay
                .iter()
                .any(|q| q.seq == w && q.ranges.is_none())
    };
    assert!(!(whole(t.a1) && whole(t.a2)), "{before_f1:?}");
    assert!(ours.iter().any(|p| p.cut == t.f2), "{ours:#?}");
    assert!(ours.iter().all(|p| p.cut != t.f3 || p.cut > t.f2));
    let _ = (t.journal, t.other);
    let line = cov.describe(plans.len() as u64);
    assert!(line.contains("right before 2 of 2 flushes"), "{line}");
    // 15% of 20 is 3: both flushes' states before come before either's after.
    let (few, cov) = plan(20);
    let cuts: Vec<u64> = few
        .iter()
        .filter(|p| p.strategy == Strategy::FlushSubset)
        .map(|p| p.cut)
        .collect();
    assert_eq!(cov.planned(Strategy::FlushSubset), 3);
    assert!(cuts.contains(&t.f1) && cuts.contains(&t.f2), "{cuts:?}");
    assert!(
        cov.scope(20).starts_with("2 of 2 flushes of synced files"),
        "{}",
        cov.scope(20)
    );
}

/// A cut right before each of the promised file's last writes before its promise
/// (every write of the window for a record key no label names), every promise's last
/// write before any promise's second-last; the cut keeps every write before it.
#[test]
fn last_writes_cut_before_each_promises_last_writes_newest_first() {
    let t = two_promises();
    let plan = |states: u32| t.plan(states, &[Strategy::LastWrites, Strategy::Prefix], 5);
    let (plans, cov) = plan(1000);
    let mut cuts: Vec<u64> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::LastWrites)
        .map(|p| p.cut)
        .collect();
    cuts.sort_unstable();
    // db/a's two data writes (not the journal write between them), and the key's one.
    assert_eq!(cuts, [t.a1, t.a2, t.other]);
    assert_eq!(cov.promises_cut, [2, 2]);
    for p in plans.iter().filter(|p| p.strategy == Strategy::LastWrites) {
        assert_eq!((p.base, p.overlay.len()), (p.cut, 0), "{p:?}");
    }
    // 10% of 20 is 2: each promise's last write.
    let (few, cov) = plan(20);
    let mut cuts: Vec<u64> = few
        .iter()
        .filter(|p| p.strategy == Strategy::LastWrites)
        .map(|p| p.cut)
        .collect();
    cuts.sort_unstable();
    assert_eq!(cuts, [t.a2, t.other]);
    assert!(
        cov.scope(20)
            .contains("2 of 2 promises had a cut among their last writes"),
        "{}",
        cov.scope(20)
    );
}

/// jbd2's commit flush after the data's flush, before the promise, is the same file's.
#[test]
fn a_flush_of_no_file_data_before_the_promise_finishes_the_same_files_sync() {
    let mut l = Log::new();
    let data = l.w(0);
    l.f(0);
    l.w(0);
    l.f(0);
    l.mark("fsync /mnt/t/db/a");
    let mut files = FileWrites {
        files: vec!["db/a".into()],
        mount: "/mnt/t".into(),
        ..FileWrites::default()
    };
    files.writes.insert(data, vec![Some((0, Some(0)))]);
    let (_, cov) = plan_knowing(
        &l.recs,
        &[CACHED],
        &opts(100, &[Strategy::FlushSubset]),
        1,
        &JournalNotes::default(),
        &files,
    )
    .unwrap();
    assert_eq!(cov.flush_files, ["db/a (2 of 2)"]);
}
