use super::*;

/// A log built by hand: `w d` a 4 KiB write to disk d, `f d` a flush, `m label` a
/// marker; every record is acknowledged in order, issued right before its ack unless
/// `issue_early` moves a flush's issue before the previous writes' acks.
pub(in crate::crash::states) struct Log {
    pub(in crate::crash::states) recs: Vec<LogRec>,
    clock: u64,
}

impl Log {
    fn new() -> Self {
        let mut l = Log {
            recs: Vec::new(),
            clock: 0,
        };
        l.mark("timing on");
        l
    }
    fn push(
        &mut self,
        kind: RecordKind,
        disk: u8,
        len: u64,
        label: Option<&str>,
        issued: Option<u64>,
    ) -> u64 {
        let seq = self.recs.len() as u64;
        let issued = issued.unwrap_or_else(|| {
            self.clock += 1;
            self.clock - 1
        });
        let acked = self.clock;
        self.clock += 1;
        self.recs.push(LogRec {
            meta: RecordMeta {
                seq,
                time_ns: 0,
                kind,
                disk,
                offset: seq * 4096,
                len,
                issued: Some(issued),
                acked: Some(acked),
                payload_pos: 0,
            },
            label: label.map(str::to_string),
        });
        seq
    }
    fn w(&mut self, d: u8) -> u64 {
        self.push(RecordKind::Write, d, 4096, None, None)
    }
    /// A write of `blocks` 4 KiB blocks, at an offset no other write uses.
    fn wn(&mut self, d: u8, blocks: u64) -> u64 {
        let s = self.push(RecordKind::Write, d, blocks * 4096, None, None);
        self.recs[s as usize].meta.offset = s * (1 << 20);
        s
    }
    fn f(&mut self, d: u8) -> u64 {
        self.push(RecordKind::Flush, d, 0, None, None)
    }
    fn mark(&mut self, label: &str) -> u64 {
        self.push(
            RecordKind::Marker,
            NO_DISK,
            label.len() as u64,
            Some(label),
            None,
        )
    }
}

pub(in crate::crash::states) const CACHED: DiskTraits = DiskTraits::new(true, true);
const NO_CACHE: DiskTraits = DiskTraits::new(false, true);
const LIAR: DiskTraits = DiskTraits::new(true, false);

fn is_durable(durable: &[Option<u64>], w: usize, cut: u64) -> bool {
    durable[w].is_some_and(|f| f < cut)
}

#[test]
fn a_flush_covers_its_own_disk_and_only_writes_acknowledged_before_it_was_issued() {
    let mut l = Log::new();
    let a = l.w(0);
    let b = l.w(1);
    // The flush of disk 0 is issued before `c` is acknowledged: `c` was in flight.
    let issue = l.clock;
    l.clock += 1;
    let c = l.w(0);
    let f = l.push(RecordKind::Flush, 0, 0, None, Some(issue));
    let d = durability(&l.recs, &[CACHED, CACHED], 0).unwrap();
    assert_eq!(d[a as usize], Some(f));
    assert_eq!(
        d[b as usize], None,
        "a flush of disk 0 covers nothing on disk 1"
    );
    assert_eq!(
        d[c as usize], None,
        "a write in flight while the flush was issued is not covered"
    );
    let f2 = l.f(0);
    let d = durability(&l.recs, &[CACHED, CACHED], 0).unwrap();
    assert_eq!(d[c as usize], Some(f2));
}

#[test]
fn without_a_cache_a_write_is_durable_when_acknowledged_and_a_lying_disk_never_is() {
    let mut l = Log::new();
    let a = l.w(0);
    let b = l.w(1);
    l.f(0);
    l.f(1);
    let d = durability(&l.recs, &[NO_CACHE, LIAR], 0).unwrap();
    assert_eq!(d[a as usize], Some(a));
    assert_eq!(d[b as usize], None);
    // Before the measurement started the lying disk's flushes still count (mkfs ran on
    // an honest disk).
    let d = durability(&l.recs, &[NO_CACHE, LIAR], 100).unwrap();
    assert!(d[b as usize].is_some());
}

pub(in crate::crash::states) fn opts(states: u32, strategies: &[Strategy]) -> CrashOptions {
    CrashOptions {
        states,
        strategies: strategies.to_vec(),
        ..CrashOptions::default()
    }
}

pub(in crate::crash::states) fn workload() -> Log {
    let mut l = Log {
        recs: Vec::new(),
        clock: 0,
    };
    // Set-up before the measurement: never cut there.
    for _ in 0..5 {
        l.w(0);
    }
    l.f(0);
    l.mark("timing on");
    for i in 0..30 {
        l.w(0);
        l.w(1);
        l.w(0);
        l.f(1);
        l.f(0);
        l.mark(&format!("fsync /mnt/f{i}"));
    }
    l
}

#[test]
fn prefix_states_cut_after_flushes_and_fsync_markers_and_never_before_the_workload() {
    let l = workload();
    let marks = Marks::of(&l.recs).unwrap();
    let plans = plan_states(
        &l.recs,
        &[CACHED, CACHED],
        &opts(1000, &[Strategy::Prefix]),
        1,
    )
    .unwrap();
    assert!(!plans.is_empty());
    for p in &plans {
        assert!(p.cut > marks.timing_on, "a cut before the workload started");
        assert_eq!((p.base, p.dropped, p.overlay.len()), (p.cut, 0, 0));
        let prev = &l.recs[p.cut as usize - 1];
        assert!(
            prev.kind == RecordKind::Flush
                || prev.kind == RecordKind::Marker
                || p.cut == l.recs.len() as u64,
            "cut {} does not follow a flush or a marker",
            p.cut
        );
    }
    // Every flush and every fsync marker in the window gives one state; cuts that
    // give the same disks and the same promises are one state.
    let mut cuts: Vec<u64> = plans.iter().map(|p| p.cut).collect();
    cuts.dedup();
    assert_eq!(cuts.len(), plans.len());
    assert_eq!(marks.fsyncs_before(l.recs.len() as u64).len(), 30);
}

#[test]
fn subset_states_drop_only_volatile_writes_and_keep_every_durable_one() {
    let l = workload();
    let disks = [CACHED, CACHED];
    let plans = plan_states(&l.recs, &disks, &opts(200, &[Strategy::Subset]), 7).unwrap();
    assert!(plans.len() > 20, "only {} subset states", plans.len());
    let durable = durability(&l.recs, &disks, 6).unwrap();
    for p in &plans {
        assert!(
            p.dropped >= 1,
            "a subset state that drops nothing is the prefix state"
        );
        let kept: HashSet<u64> = p.overlay.iter().map(|o| o.seq).collect();
        for s in p.base..p.cut {
            let w = s as usize;
            if !l.recs[w].is_write() {
                assert!(!kept.contains(&s));
                continue;
            }
            if is_durable(&durable, w, p.cut) {
                assert!(
                    kept.contains(&s),
                    "durable write {s} dropped at cut {}",
                    p.cut
                );
            }
        }
        // The first write after the base is the first one dropped.
        let first = (p.base..p.cut)
            .find(|&s| l.recs[s as usize].is_write())
            .unwrap();
        assert!(!kept.contains(&first));
        let writes = l.recs[..p.cut as usize]
            .iter()
            .filter(|r| r.is_write())
            .count() as u64;
        assert_eq!(p.kept + p.dropped, writes);
    }
    // Sorted by base, so the lab only moves the base images forward.
    assert!(plans.windows(2).all(|w| w[0].base <= w[1].base));
    // Seeded: the same seed gives the same states, another seed others.
    assert_eq!(
        plans,
        plan_states(&l.recs, &disks, &opts(200, &[Strategy::Subset]), 7).unwrap()
    );
    assert_ne!(
        plans,
        plan_states(&l.recs, &disks, &opts(200, &[Strategy::Subset]), 8).unwrap()
    );
}

#[test]
fn on_disks_without_a_cache_there_is_nothing_to_drop() {
    let l = workload();
    let plans = plan_states(
        &l.recs,
        &[NO_CACHE, NO_CACHE],
        &opts(50, &[Strategy::Subset]),
        1,
    )
    .unwrap();
    assert!(
        plans.is_empty(),
        "{} subset states on write-through disks",
        plans.len()
    );
}

#[test]
fn torn_states_tear_only_multi_block_writes_and_only_at_the_logical_block() {
    let l = workload();
    // Every write of this log is one block: nothing can be torn.
    let plans = plan_states(&l.recs, &[CACHED, CACHED], &opts(60, &[Strategy::Torn]), 3).unwrap();
    assert!(
        plans.is_empty(),
        "{} torn states of single-block writes",
        plans.len()
    );
    let l = multi_block();
    let plans = plan_states(&l.recs, &[CACHED, CACHED], &opts(60, &[Strategy::Torn]), 3).unwrap();
    assert!(!plans.is_empty());
    for p in &plans {
        let (seq, kept, len) = p.torn.expect("a torn state tears a write");
        assert!(
            kept % 4096 == 0 && kept > 0 && kept < len,
            "torn at {kept} of {len}"
        );
        let piece = p
            .overlay
            .iter()
            .find(|q| q.seq == seq)
            .expect("the torn write is kept in part");
        assert_eq!(piece.ranges, Some(vec![(0, kept)]));
        assert!(p.base <= seq);
    }
    // A disk with 16 KiB logical blocks cannot tear a 16 KiB write at all.
    let big = DiskTraits {
        block: 16384,
        ..CACHED
    };
    let plans = plan_states(&l.recs, &[big, big], &opts(60, &[Strategy::Torn]), 3).unwrap();
    for p in &plans {
        let (_, kept, _) = p.torn.unwrap();
        assert!(kept % 16384 == 0, "torn at {kept} on a 16 KiB-block disk");
    }
}

/// A journal-like log: each transaction one multi-block write (descriptor, data,
/// commit) to disk 1, then a flush, and a 1-block write to disk 0.
fn multi_block() -> Log {
    multi_block_n(6)
}

fn multi_block_n(n: u64) -> Log {
    let mut l = Log::new();
    l.mark("phase create");
    for i in 0..n {
        l.wn(1, 4 + (i % 3));
        l.w(0);
        l.f(1);
        l.f(0);
        l.mark(&format!("fsync /mnt/f{i}"));
    }
    l.mark("end create");
    // The unmount's checkpoint.
    l.wn(0, 3);
    l.f(0);
    l
}

#[test]
fn a_volatile_cache_can_keep_any_blocks_of_a_multi_block_write() {
    let l = multi_block();
    let disks = [CACHED, CACHED];
    let (plans, cov) = plan_with_coverage(
        &l.recs,
        &disks,
        &opts(100_000, &[Strategy::Subset]),
        1,
        &JournalNotes::default(),
    )
    .unwrap();
    // Small enough to enumerate: every state is built.
    assert!(cov.exhaustive);
    assert_eq!(
        cov.planned(Strategy::Subset) as f64,
        cov.space(Strategy::Subset)
    );
    // The state no whole-request model builds: the first and last block of a journal
    // write kept, the middle dropped.
    let first = l
        .recs
        .iter()
        .find(|r| r.is_write() && r.len == 4 * 4096)
        .unwrap();
    let gap = plans.iter().any(|p| {
        p.overlay.iter().any(|q| {
            q.seq == first.seq
                && q.ranges.as_ref().is_some_and(|r| {
                    r.first() == Some(&(0, 4096))
                        && r.last() == Some(&(3 * 4096, 4096))
                        && r.len() == 2
                })
        })
    });
    assert!(
        gap,
        "no state keeps the ends of a 4-block write and drops its middle"
    );
    for p in &plans {
        for q in &p.overlay {
            for &(s, len) in q.ranges.iter().flatten() {
                assert!(
                    s % 4096 == 0 && len % 4096 == 0,
                    "a piece splits a block: {s}+{len}"
                );
            }
        }
        assert!(p.dropped_blocks >= 1);
    }
}

#[test]
fn every_write_to_a_disk_without_a_cache_is_a_persistence_point() {
    let mut l = Log::new();
    let mut after = Vec::new();
    for _ in 0..5 {
        after.push(l.w(1) + 1);
        l.w(0);
    }
    l.f(0);
    let plans = plan_states(
        &l.recs,
        &[CACHED, NO_CACHE],
        &opts(1000, &[Strategy::Prefix]),
        1,
    )
    .unwrap();
    let cuts: HashSet<u64> = plans.iter().map(|p| p.cut).collect();
    for a in after {
        assert!(
            cuts.contains(&a),
            "no prefix cut right after the write-through write {}",
            a - 1
        );
    }
}

#[test]
fn enumeration_when_small_and_stratified_sampling_when_not() {
    let l = multi_block();
    let disks = [CACHED, CACHED];
    let all = plan_with_coverage(
        &l.recs,
        &disks,
        &opts(1_000_000, &[Strategy::Prefix, Strategy::Subset]),
        1,
        &JournalNotes::default(),
    )
    .unwrap();
    assert!(all.1.exhaustive);
    let few = plan_with_coverage(
        &l.recs,
        &disks,
        &opts(20, &[Strategy::Prefix, Strategy::Subset]),
        1,
        &JournalNotes::default(),
    )
    .unwrap();
    assert!(!few.1.exhaustive);
    assert!(few.0.len() <= 20);
    // Every phase, the final unmount's included, has states.
    assert!(
        few.1.strata.contains(&"teardown".to_string()),
        "{:?}",
        few.1.strata
    );
    assert_eq!(few.1.strata_covered, few.1.strata);
    // The last prefix cut (after the unmount) is always among the sampled ones.
    assert!(few.0.iter().any(|p| p.cut == l.recs.len() as u64));
    let text = few.1.describe(few.0.len() as u64);
    assert!(
        text.starts_with(&format!("checked {} of ", few.0.len())),
        "{text}"
    );
    assert!(text.contains("subsets"), "{text}");
    let text = all.1.describe(all.0.len() as u64);
    assert!(
        text.contains("all 13 prefix cuts; all 449 subsets"),
        "{text}"
    );
}

#[test]
fn promise_markers_parse_paths_with_spaces() {
    assert_eq!(
        PromiseMark::parse("fsync /m/a b"),
        Some(PromiseMark::Fsync("/m/a b".into()))
    );
    assert_eq!(
        PromiseMark::parse("durable /m/x y sha256=".to_string().as_str().trim_end()),
        Some(PromiseMark::Durable {
            path: "/m/x y sha256=".trim_end().into(),
            sha256: None
        })
    );
    let hex = "ab".repeat(32);
    assert_eq!(
        PromiseMark::parse(&format!("durable /m/x y sha256={hex}")),
        Some(PromiseMark::Durable {
            path: "/m/x y".into(),
            sha256: Some(hex.clone())
        })
    );
    assert_eq!(
        PromiseMark::parse("durable-range /m/f 1 4096 8192"),
        Some(PromiseMark::Range {
            path: "/m/f 1".into(),
            offset: 4096,
            len: 8192
        })
    );
    assert_eq!(PromiseMark::parse("durable-range /m/f x 8192"), None);
    assert_eq!(PromiseMark::parse("phase x"), None);
    // A record key is not a file: no path.
    let key = PromiseMark::parse("durable-key order 42");
    assert_eq!(key, Some(PromiseMark::Key("order 42".into())));
    assert_eq!(key.unwrap().path(), None);
}

#[test]
fn states_are_shared_among_strategies_and_none_is_built_twice() {
    let l = multi_block_n(30);
    let o = opts(90, &[Strategy::Prefix, Strategy::Subset, Strategy::Torn]);
    let plans = plan_states(&l.recs, &[CACHED, CACHED], &o, 11).unwrap();
    assert_eq!(plans.len(), 90);
    for s in [Strategy::Prefix, Strategy::Subset, Strategy::Torn] {
        assert!(plans.iter().any(|p| p.strategy == s), "no {s} state");
    }
    let keys: HashSet<_> = plans
        .iter()
        .map(|p| (p.cut, p.overlay.clone(), p.base))
        .collect();
    assert_eq!(keys.len(), plans.len());
}

#[test]
fn a_log_without_the_workload_marker_is_refused() {
    let mut l = Log {
        recs: Vec::new(),
        clock: 0,
    };
    l.w(0);
    l.f(0);
    let e = plan_states(&l.recs, &[CACHED], &CrashOptions::default(), 1).unwrap_err();
    assert!(format!("{e}").contains("timing on"), "{e}");
}

#[test]
fn a_record_for_a_disk_the_header_does_not_list_is_an_error() {
    let mut l = Log::new();
    l.w(3);
    let e = durability(&l.recs, &[CACHED], 0).unwrap_err();
    assert!(format!("{e}").contains("disk 3"), "{e}");
}

#[test]
fn phase_markers_say_which_phase_a_cut_falls_in() {
    let mut l = Log::new();
    l.mark("phase create_fsync");
    l.w(0);
    let r = l.mark("phase remove");
    l.w(0);
    let m = Marks::of(&l.recs).unwrap();
    assert_eq!(m.phase_at(r), Some("create_fsync"));
    assert_eq!(m.phase_at(r + 1), Some("remove"));
    assert_eq!(m.phase_at(0), None);
}

use crate::crash::journal_scan::{JournalBlock, JournalHit, WriteNote};

/// A journal at work: transaction `tid` is one write of `3 + tid % 4` blocks to the
/// journal disk (descriptor, logged blocks, commit), then a flush, a home write and
/// an fsync marker; every `checkpoint` transactions the superblock's tail moves to
/// the next one; the unmount cleans the journal. With the notes the scan would give.
fn journal_log(n: u32, checkpoint: u32) -> (Log, JournalNotes) {
    let mut l = Log::new();
    let mut notes = JournalNotes::default();
    let sb = |l: &mut Log, notes: &mut JournalNotes, tail: Option<u32>| {
        let s = l.w(1);
        notes.writes.push(WriteNote {
            seq: s,
            blocks: 1,
            hits: vec![JournalHit {
                at: 0,
                block: JournalBlock::Superblock { tail },
            }],
        });
        l.f(1);
    };
    sb(&mut l, &mut notes, Some(1));
    l.mark("phase create");
    for tid in 1..=n {
        let k = 3 + (tid % 4) as u64;
        let s = l.wn(1, k);
        notes.writes.push(WriteNote {
            seq: s,
            blocks: k,
            hits: vec![
                JournalHit {
                    at: 0,
                    block: JournalBlock::Descriptor {
                        tid,
                        tags: k as u32 - 2,
                    },
                },
                JournalHit {
                    at: (k - 1) * 4096,
                    block: JournalBlock::Commit { tid },
                },
            ],
        });
        l.f(1);
        l.w(0);
        l.f(0);
        l.mark(&format!("fsync /mnt/f{tid}"));
        if tid % checkpoint == 0 {
            sb(&mut l, &mut notes, Some(tid + 1));
        }
    }
    l.mark("end create");
    sb(&mut l, &mut notes, None);
    (l, notes)
}

fn live_of(notes: &JournalNotes, p: &StatePlan) -> u64 {
    journal_live(notes, p).blocks
}

#[test]
fn fill_takes_the_prefix_cuts_where_the_journal_holds_the_most() {
    let (l, notes) = journal_log(24, 10);
    let disks = [CACHED, CACHED];
    let every = plan_states(&l.recs, &disks, &opts(100_000, &[Strategy::Prefix]), 1).unwrap();
    let mut lives: Vec<u64> = every.iter().map(|p| live_of(&notes, p)).collect();
    lives.sort_unstable_by(|a, b| b.cmp(a));
    let (plans, cov) =
        plan_with_coverage(&l.recs, &disks, &opts(5, &[Strategy::Fill]), 1, &notes).unwrap();
    assert_eq!(plans.len(), 5);
    let mut got: Vec<u64> = plans.iter().map(|p| live_of(&notes, p)).collect();
    got.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(got, lives[..5], "fill took other cuts than the fullest");
    for p in &plans {
        assert_eq!(p.strategy, Strategy::Fill);
        assert_eq!((p.base, p.overlay.len(), p.dropped), (p.cut, 0, 0));
    }
    // The fullest: right before the second checkpoint moved the tail past ten
    // transactions (tids 11..=20 committed, 21 not yet).
    let blocks_11_to_20: u64 = (11..=20u64).map(|t| 3 + t % 4).sum();
    assert_eq!(got[0], blocks_11_to_20);
    // Its space: the distinct prefix states with something live.
    let live_states = lives.iter().filter(|&&b| b > 0).count() as u64;
    assert_eq!(cov.space(Strategy::Fill), live_states as f64);
    assert_eq!(cov.planned(Strategy::Fill), 5);
    assert!(!cov.exhaustive);
    assert!(
        cov.describe(5)
            .contains(&format!("5 of {live_states} cuts with journal content")),
        "{}",
        cov.describe(5)
    );
    // Ties go to more transactions, then the later cut: each cut once.
    let cuts: HashSet<u64> = plans.iter().map(|p| p.cut).collect();
    assert_eq!(cuts.len(), 5);
}

#[test]
fn fill_goes_first_and_prefix_does_not_build_its_states_again() {
    let (l, notes) = journal_log(24, 10);
    let disks = [CACHED, CACHED];
    // Listed after prefix, fill still takes the fullest cuts.
    let (plans, cov) = plan_with_coverage(
        &l.recs,
        &disks,
        &opts(12, &[Strategy::Prefix, Strategy::Fill]),
        3,
        &notes,
    )
    .unwrap();
    let fill: Vec<u64> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::Fill)
        .map(|p| live_of(&notes, p))
        .collect();
    let prefix: Vec<&StatePlan> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::Prefix)
        .collect();
    assert_eq!((fill.len(), prefix.len()), (6, 6));
    let least_fill = *fill.iter().min().unwrap();
    for p in &prefix {
        assert!(
            live_of(&notes, p) <= least_fill,
            "prefix cut {} holds more than a fill state",
            p.cut
        );
    }
    let writes: HashSet<u64> = plans.iter().map(|p| p.cut).collect();
    assert_eq!(writes.len(), plans.len(), "a state built twice");
    assert_eq!(
        (cov.planned(Strategy::Fill), cov.planned(Strategy::Prefix)),
        (6, 6)
    );
    // Everything fits: the prefix space counts the fill states once, and the line
    // says every prefix cut was checked.
    let (plans, cov) = plan_with_coverage(
        &l.recs,
        &disks,
        &opts(100_000, &[Strategy::Prefix, Strategy::Fill]),
        3,
        &notes,
    )
    .unwrap();
    let every = plan_states(&l.recs, &disks, &opts(100_000, &[Strategy::Prefix]), 3).unwrap();
    assert_eq!(plans.len(), every.len());
    assert_eq!(cov.space(Strategy::Prefix), every.len() as f64);
    assert!(cov.exhaustive);
    let text = cov.describe(plans.len() as u64);
    assert!(
        text.starts_with(&format!(
            "checked {} of {} states",
            plans.len(),
            every.len()
        )) && text.contains(&format!(
            "all {} prefix cuts; all {} cuts with journal content",
            every.len(),
            cov.space(Strategy::Fill)
        )),
        "{text}"
    );
}

#[test]
fn without_jbd2_blocks_fill_makes_nothing_and_its_share_goes_on() {
    let (l, _) = journal_log(24, 10);
    let (plans, cov) = plan_with_coverage(
        &l.recs,
        &[CACHED, CACHED],
        &opts(10, &[Strategy::Fill, Strategy::Prefix]),
        1,
        &JournalNotes::default(),
    )
    .unwrap();
    assert_eq!(cov.space(Strategy::Fill), 0.0);
    assert_eq!(plans.len(), 10, "fill's share did not go to prefix");
    assert!(plans.iter().all(|p| p.strategy == Strategy::Prefix));
    assert!(
        cov.describe(10).contains("no cut with journal content"),
        "{}",
        cov.describe(10)
    );
}

#[test]
fn a_state_that_drops_a_commit_block_does_not_replay_its_transaction() {
    let (l, notes) = journal_log(4, 10);
    // Transaction 2's write: descriptor, logged blocks, commit in its last block.
    let w = &notes.writes[2];
    let k = w.blocks;
    let cut = w.seq + 1;
    let prefix = StatePlan {
        strategy: Strategy::Subset,
        cut,
        base: w.seq,
        overlay: vec![Piece::whole(w.seq)],
        kept: 0,
        dropped: 0,
        dropped_blocks: 0,
        torn: None,
        stratum: String::new(),
    };
    let all = journal_live(&notes, &prefix);
    assert_eq!(all.transactions, 2);
    let torn = StatePlan {
        overlay: vec![Piece {
            seq: w.seq,
            ranges: Some(vec![(0, (k - 1) * 4096)]),
        }],
        ..prefix.clone()
    };
    let live = journal_live(&notes, &torn);
    assert_eq!(live.transactions, 1);
    assert_eq!(live.blocks, all.blocks - k);
    // Left out whole, the same.
    let dropped = StatePlan {
        overlay: vec![],
        ..prefix.clone()
    };
    assert_eq!(journal_live(&notes, &dropped), live);
    // After the unmount the journal is clean.
    let end = StatePlan {
        cut: l.recs.len() as u64,
        base: l.recs.len() as u64,
        overlay: vec![],
        ..prefix
    };
    assert_eq!(journal_live(&notes, &end), JournalLive::default());
}

/// The plans and coverage of every strategy together, as this log and seed gave them
/// before each strategy moved into its own planner (crash/states/strategy/): the same
/// states, in the same order, with the same coverage, sampled and enumerated.
#[test]
fn the_planners_plan_what_the_planner_did_before_them() {
    let (l, notes) = journal_log(24, 10);
    let disks = [CACHED, CACHED];
    let all = [
        Strategy::Prefix,
        Strategy::Subset,
        Strategy::Torn,
        Strategy::Fill,
    ];
    let mut text = String::new();
    for states in [9, 40, 100_000] {
        let (plans, mut cov) =
            plan_with_coverage(&l.recs, &disks, &opts(states, &all), 3, &notes).unwrap();
        // torn-data came after the listing was taken: without the recording's block
        // labels it has no state, and the listing stays what it was. flush-subset and
        // last-writes came after it too, and are not asked for here.
        assert_eq!(cov.space(Strategy::TornData), 0.0);
        for later in [
            Strategy::TornData,
            Strategy::FlushSubset,
            Strategy::LastWrites,
        ] {
            assert_eq!(cov.planned(later), 0);
            cov.by_strategy.remove(later.as_str());
        }
        for p in &plans {
            text.push_str(&format!("{p:?}\n"));
        }
        text.push_str(&serde_json::to_string(&cov).unwrap());
        text.push('\n');
    }
    // FNV-1a of the whole listing.
    let digest = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    println!("plans digest {digest:#x}, {} bytes", text.len());
    assert_eq!(digest, GOLDEN_PLANS, "{text}");
}

const GOLDEN_PLANS: u64 = 0xd177899488e18975;

mod danger_rules;
mod torn_data;
