//! The crash section: figures from fabricated `crash.jsonl` records, its words, and
//! its presence in every format exactly when there are records.

use super::*;
use crate::analysis::crash::{analyse_crash, ControlOutcome, CrashAnalysis};
use crate::report::crash::{crash_notes, crash_warnings, crash_workloads, lost_journal_line};
use crate::results::crash::{
    CrashRecord, LostJournal, RecoveryTimes, Verdict, CRASH_SCHEMA_VERSION,
};

/// A checked state of `config` x `workload`: an ordinary ext4 configuration whose
/// workload fsyncs, one second to check, no timings.
pub(super) fn state(
    config: &str,
    workload: &str,
    state: u64,
    strategy: &str,
    verdict: Verdict,
) -> CrashRecord {
    CrashRecord {
        schema: CRASH_SCHEMA_VERSION,
        config: config.to_string(),
        workload: workload.to_string(),
        trial: 0,
        state,
        strategy: strategy.to_string(),
        cut: 100 + state,
        kept: 90,
        dropped: 0,
        torn: None,
        last_fsync: None,
        fsynced_files: 10,
        verdict,
        evidence: vec![
            format!("state {state}: {verdict}\nsecond line"),
            "next step".into(),
        ],
        timings: None,
        journal_live: None,
        lost_journal: None,
        check_seconds: 1.0,
        filesystem: "ext4".to_string(),
        placement: config.split(',').next().unwrap().to_string(),
        mode: "ordered".to_string(),
        journal_size: 16 << 20,
        inodes: 65536,
        negative_control: false,
        torn_page_control: false,
        checks_fsync: true,
        dropped_blocks: 0,
        stratum: String::new(),
        coverage: None,
        user_check: false,
        hung: false,
        records_promised: 0,
        records_lost: None,
        check_cache: None,
        judged_by: None,
        fast_fallback: None,
        outcome: None,
    }
}

pub(super) fn timed(
    mut r: CrashRecord,
    mount: f64,
    journal_only: Option<f64>,
    full: Option<f64>,
) -> CrashRecord {
    r.timings = Some(RecoveryTimes {
        mount_seconds: mount,
        journal_only_seconds: journal_only,
        full_fsck_seconds: full,
        replayed_blocks: None,
        replayed_transactions: None,
        application_seconds: None,
        application: None,
        mount_io: Vec::new(),
    });
    r
}

fn entry<'a>(c: &'a [CrashAnalysis], config: &str, workload: &str) -> &'a CrashAnalysis {
    c.iter()
        .find(|e| e.config == config && e.workload == workload)
        .unwrap_or_else(|| panic!("no {config} x {workload} in {c:#?}"))
}

/// Two configurations x two workloads, interleaved, with every verdict somewhere.
pub(super) fn mixed() -> Vec<CrashRecord> {
    let verdicts = [
        Verdict::Ok,
        Verdict::Ok,
        Verdict::Unmountable,
        Verdict::Ok,
        Verdict::FsckDirty,
        Verdict::LostFsynced,
        Verdict::NoVerdict,
        Verdict::Ok,
    ];
    let mut out = Vec::new();
    for (i, v) in verdicts.iter().enumerate() {
        let strategy = ["prefix", "subset", "torn"][i % 3];
        out.push(state("same-disk", "fsync", i as u64, strategy, *v));
        out.push(state(
            "ramdisk,64M",
            "fsync",
            i as u64,
            "prefix",
            Verdict::Ok,
        ));
        if i < 3 {
            out.push(state("same-disk", "untar", i as u64, "subset", Verdict::Ok));
        }
    }
    out
}

#[test]
fn counts_equal_the_records() {
    let records = mixed();
    let c = analyse_crash(&records);
    let keys: Vec<(&str, &str)> = c
        .iter()
        .map(|e| (e.config.as_str(), e.workload.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            ("same-disk", "fsync"),
            ("ramdisk,64M", "fsync"),
            ("same-disk", "untar")
        ],
        "first-seen order"
    );
    for e in &c {
        let of: Vec<&CrashRecord> = records
            .iter()
            .filter(|r| r.config == e.config && r.workload == e.workload)
            .collect();
        assert_eq!(e.states, of.len());
        for v in Verdict::ALL {
            let n = of.iter().filter(|r| r.verdict == v).count();
            assert_eq!(e.verdicts.get(v), n, "{} {v}", e.config);
        }
        let by_strategy: usize = e.strategies.iter().map(|s| s.states).sum();
        assert_eq!(by_strategy, e.states);
        for s in &e.strategies {
            let n = of.iter().filter(|r| r.strategy == s.strategy).count();
            assert_eq!(s.states, n);
        }
        // One second per state.
        assert!((e.states_per_sec.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(e.recovery, None);
        assert_eq!(e.lost_journal, None);
        assert_eq!(e.control, None);
    }
    let sd = entry(&c, "same-disk", "fsync");
    let names: Vec<&str> = sd.strategies.iter().map(|s| s.strategy.as_str()).collect();
    assert_eq!(names, ["prefix", "subset", "torn"]);
    assert_eq!(
        (
            sd.verdicts.ok,
            sd.verdicts.unmountable,
            sd.verdicts.fsck_dirty
        ),
        (4, 1, 1)
    );
    assert_eq!((sd.verdicts.lost_fsynced, sd.verdicts.no_verdict), (1, 1));
    // A state that could not be judged (a hung recovery) is a failure too.
    assert_eq!(sd.verdicts.failures(), 4);
    assert_eq!(sd.not_ok(), 4);

    // The table carries the same counts, every verdict a column, zeros included.
    let w = &crash_workloads(&c)[0];
    let t = &w.tables[0];
    assert_eq!(
        t.headers,
        [
            "configuration",
            "states",
            "prefix",
            "subset",
            "torn",
            "ok",
            "unmountable",
            "fsck-dirty",
            "lost-fsynced",
            "check-failed",
            "no-verdict",
            "states/s"
        ]
    );
    assert_eq!(
        t.rows[0],
        [
            "same-disk",
            "8",
            "3",
            "3",
            "2",
            "4",
            "1",
            "1",
            "1",
            "0",
            "1",
            "1.00"
        ]
    );
    assert_eq!(
        t.rows[1],
        [
            "ramdisk,64M",
            "8",
            "8",
            "0",
            "0",
            "8",
            "0",
            "0",
            "0",
            "0",
            "0",
            "1.00"
        ]
    );
    assert_eq!(w.tables.len(), 1, "no timings, no recovery table");
}

#[test]
fn states_per_second_is_states_over_check_time() {
    let mut records: Vec<CrashRecord> = (0..4)
        .map(|i| state("a", "w", i, "prefix", Verdict::Ok))
        .collect();
    for (r, s) in records.iter_mut().zip([0.5, 1.5, 2.0, 4.0]) {
        r.check_seconds = s;
    }
    let c = analyse_crash(&records);
    assert!((c[0].check_seconds - 8.0).abs() < 1e-12);
    assert!((c[0].states_per_sec.unwrap() - 0.5).abs() < 1e-12);
    for r in &mut records {
        r.check_seconds = 0.0;
    }
    assert_eq!(analyse_crash(&records)[0].states_per_sec, None);
    assert_eq!(
        crash_workloads(&analyse_crash(&records))[0].tables[0].rows[0][9],
        "-"
    );
}

#[test]
fn median_and_p95_are_right_on_known_numbers() {
    // Mount 1..=20 s in a shuffled order: median 10.5, p95 at rank 19 * 0.95 = 18.05,
    // i.e. 19 + 0.05 * (20 - 19) = 19.05. journal_only on the first five states only:
    // 1, 2, 3, 4, 100 -> median 3, p95 at rank 3.8 = 4 + 0.8 * 96 = 80.8. Full fsck on
    // 19 states (one step failed): 2..=20 -> median 11, p95 at rank 17.1 = 19.1.
    let order = [
        7u64, 20, 1, 14, 3, 18, 9, 12, 5, 16, 2, 19, 11, 6, 15, 4, 13, 8, 17, 10,
    ];
    let jo = [1.0, 2.0, 3.0, 4.0, 100.0];
    let records: Vec<CrashRecord> = order
        .iter()
        .enumerate()
        .map(|(i, &m)| {
            let r = state("same-disk", "fsync", i as u64, "prefix", Verdict::Ok);
            let full = (m != 1).then_some(m as f64);
            timed(r, m as f64, jo.get(i).copied(), full)
        })
        .collect();
    let c = analyse_crash(&records);
    let r = c[0].recovery.as_ref().unwrap();
    assert_eq!(r.timed, 20);
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-9, "{a} != {b}");
    let m = r.mount.unwrap();
    assert_eq!(m.n, 20);
    close(m.median, 10.5);
    close(m.p95, 19.05);
    close(m.min, 1.0);
    close(m.max, 20.0);
    let j = r.journal_only.unwrap();
    assert_eq!(j.n, 5);
    close(j.median, 3.0);
    close(j.p95, 80.8);
    let f = r.full_fsck.unwrap();
    assert_eq!(f.n, 19);
    close(f.median, 11.0);
    close(f.p95, 19.1);
    // One value: every statistic is it.
    let one = analyse_crash(&[timed(
        state("a", "w", 0, "prefix", Verdict::Ok),
        0.25,
        None,
        None,
    )]);
    let m = one[0].recovery.as_ref().unwrap().mount.unwrap();
    assert_eq!(
        (m.n, m.median, m.p95, m.min, m.max),
        (1, 0.25, 0.25, 0.25, 0.25)
    );
    assert_eq!(one[0].recovery.as_ref().unwrap().journal_only, None);

    let tables = &crash_workloads(&c)[0].tables;
    assert_eq!(tables.len(), 2);
    let t = &tables[1];
    assert_eq!(
        t.headers,
        [
            "configuration",
            "journal",
            "inodes",
            "replayed (blocks) median",
            "recovery up to",
            "fullest journal (blocks)",
            "recovery (mount) median",
            "recovery (mount) p95",
            "journal_only median",
            "journal_only p95",
            "full fsck median",
            "full fsck p95",
            "n"
        ]
    );
    // 19.05 sits on a rounding edge in binary: the cell is whatever the figure prints as.
    let mount_p95 = crate::report::words::fmt_sig(r.mount.unwrap().p95);
    assert!(mount_p95 == "19.1" || mount_p95 == "19.0", "{mount_p95}");
    assert_eq!(
        t.rows[0],
        [
            "same-disk",
            "16M",
            "65536",
            "-",
            "-",
            "-",
            "10.5",
            &mount_p95,
            "3.00",
            "80.8",
            "11.0",
            "19.1",
            "20 (journal_only 5, full fsck 19)"
        ]
    );
}

#[test]
fn figures_print_with_three_significant_digits() {
    use crate::report::words::fmt_sig;
    assert_eq!(fmt_sig(1234.4), "1234");
    assert_eq!(fmt_sig(123.4), "123");
    assert_eq!(fmt_sig(12.34), "12.3");
    assert_eq!(fmt_sig(1.0), "1.00");
    assert_eq!(fmt_sig(0.08124), "0.0812");
    assert_eq!(fmt_sig(0.000_412_3), "0.000412");
    assert_eq!(fmt_sig(0.0), "0");
}

#[test]
fn a_negative_control_that_failed_failed_as_it_should() {
    let mut records: Vec<CrashRecord> = (0..4)
        .map(|i| {
            let v = if i == 2 {
                Verdict::LostFsynced
            } else {
                Verdict::Ok
            };
            state("nobarrier", "fsync", i, "subset", v)
        })
        .collect();
    for r in &mut records {
        r.negative_control = true;
    }
    let c = analyse_crash(&records);
    assert_eq!(c[0].control, Some(ControlOutcome::FailedAsItShould));
    assert!(
        crash_warnings(&c[0]).is_empty(),
        "{:?}",
        crash_warnings(&c[0])
    );
    let notes = crash_notes(&c[0]);
    assert_eq!(
        notes,
        ["fsync/nobarrier: negative control (built to lose data) failed as it should: 1 of 4 states failed (1 lost-fsynced)"]
    );
    let w = &crash_workloads(&c)[0];
    assert_eq!(w.notes, notes);
    assert_eq!(w.tables[0].rows[0][0], "nobarrier (negative control)");
}

#[test]
fn a_negative_control_that_passed_is_a_loud_warning() {
    // No-verdict states are not failures: the oracle still did not catch it.
    let mut records: Vec<CrashRecord> = (0..3)
        .map(|i| {
            let v = if i == 0 {
                Verdict::NoVerdict
            } else {
                Verdict::Ok
            };
            state("nobarrier", "fsync", i, "subset", v)
        })
        .collect();
    for r in &mut records {
        r.negative_control = true;
    }
    let c = analyse_crash(&records);
    assert_eq!(c[0].control, Some(ControlOutcome::NotCaught));
    let w = crash_warnings(&c[0]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("fsync/nobarrier: NEGATIVE CONTROL NOT CAUGHT: this configuration is built to lose data, yet none of its 3 states lost what fsync promised (1 no-verdict, 2 ok)"),
        "{}",
        w[0]
    );
    assert!(crash_notes(&c[0]).is_empty());
    // Also in every text report and the JSON one.
    let a = analyse(&[], &opts()).with_crash(&records);
    for f in [Format::Table, Format::Markdown, Format::Json] {
        let out = f.exporter().render(&a);
        assert!(out.contains("NEGATIVE CONTROL NOT CAUGHT"), "{f:?}:\n{out}");
    }
}

#[test]
fn a_state_not_ok_in_an_ordinary_configuration_is_named() {
    let mut records: Vec<CrashRecord> = (0..6)
        .map(|i| state("same-disk", "fsync", i, "torn", Verdict::Ok))
        .collect();
    // Written out of order: the lowest state number is the one named.
    records[5].verdict = Verdict::FsckDirty;
    records[5].evidence = vec!["e2fsck -fn /dev/loop3: Inode 12 has a bad extent\nexit 4".into()];
    records[3].verdict = Verdict::Unmountable;
    records[3].trial = 2;
    records[3].evidence = vec![
        String::new(),
        "mount: wrong fs type, bad superblock on /dev/loop3\nmore".into(),
    ];
    let c = analyse_crash(&records);
    let s = c[0].first_not_ok.as_ref().unwrap();
    assert_eq!((s.state, s.verdict), (3, Verdict::Unmountable));
    let w = crash_warnings(&c[0]);
    assert_eq!(
        w,
        ["fsync/same-disk: 2 of 6 crash states not ok (1 unmountable, 1 fsck-dirty); first: state 3 (torn, trial 2), unmountable: mount: wrong fs type, bad superblock on /dev/loop3"]
    );
    // No evidence at all is said so.
    records[3].evidence.clear();
    let w = crash_warnings(&analyse_crash(&records)[0]);
    assert!(
        w[0].ends_with("unmountable: no evidence recorded"),
        "{}",
        w[0]
    );
    // Every state ok: nothing to say.
    let ok: Vec<CrashRecord> = (0..3)
        .map(|i| state("a", "w", i, "prefix", Verdict::Ok))
        .collect();
    let c = analyse_crash(&ok);
    assert!(crash_warnings(&c[0]).is_empty());
    assert!(crash_notes(&c[0]).is_empty());
    assert_eq!(c[0].first_not_ok, None);
}

#[test]
fn a_workload_without_fsync_is_checked_for_consistency_only() {
    let mut records = mixed();
    for r in records.iter_mut().filter(|r| r.workload == "untar") {
        r.checks_fsync = false;
    }
    let c = analyse_crash(&records);
    assert!(!entry(&c, "same-disk", "untar").checks_fsync);
    assert!(entry(&c, "same-disk", "fsync").checks_fsync);
    let words = crash_workloads(&c);
    let untar = words.iter().find(|w| w.name == "untar").unwrap();
    assert_eq!(
        untar.notes,
        ["untar: the workload made no promise the lab can check (no fsync'ed file, durable line or synchronous write), so its crash states are checked for consistency only (the mount and fsck)"]
    );
    let fsync = words.iter().find(|w| w.name == "fsync").unwrap();
    assert!(fsync.notes.is_empty(), "{:?}", fsync.notes);
    assert!(crash_notes(entry(&c, "same-disk", "untar"))[0].contains("consistency only"));
    let text = analyse(&[], &opts()).with_crash(&records);
    assert!(text::Text
        .render(&text)
        .contains("untar: the workload made no promise"));
}

#[test]
fn a_lost_journal_is_summed_up_per_configuration() {
    let lost = |failed: bool, recovered: bool, missing: u64, lf: u64| LostJournal {
        mount_failed: failed,
        mount_error: "EXT4-fs: journal device not found".into(),
        recovered,
        fsynced_missing: missing,
        fsynced_different: 0,
        lost_found: lf,
        fsck_repairs: 2 * lf,
        evidence: vec![],
        reuse: None,
    };
    let mut records: Vec<CrashRecord> = (0..5)
        .map(|i| state("ramdisk,16M", "fsync", i, "prefix", Verdict::Ok))
        .collect();
    records[1].lost_journal = Some(lost(true, true, 2, 5));
    records[2].lost_journal = Some(lost(true, false, 0, 0));
    records[4].lost_journal = Some(lost(false, true, 1, 7));
    let c = analyse_crash(&records);
    let l = c[0].lost_journal.as_ref().unwrap();
    assert_eq!((l.states, l.mount_failed, l.recovered), (3, 2, 2));
    assert_eq!((l.fsynced_missing.total, l.fsynced_missing.max), (3, 2));
    assert_eq!((l.fsynced_different.total, l.fsynced_different.max), (0, 0));
    assert_eq!((l.lost_found.total, l.lost_found.max), (12, 7));
    assert_eq!((l.fsck_repairs.total, l.fsck_repairs.max), (24, 14));
    assert_eq!(
        lost_journal_line(&c[0]).unwrap(),
        "ramdisk,16M: 3 state(s) with the journal lost; the mount failed in 2 of 3, as it must; the file system was recovered in 2 of 3; fsync'ed files missing 3 (at most 2 in a state), different 0; lost+found entries 12 (at most 7 in a state); fsck repairs 24 (at most 14 in a state)"
    );
    let w = crash_warnings(&c[0]);
    assert!(
        w.iter()
            .any(|l| l.contains("the mount succeeded in 1 of 3 states")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|l| l.contains("did not bring back 1 of 3 states")),
        "{w:?}"
    );
    let text = text::Text.render(&analyse(&[], &opts()).with_crash(&records));
    assert!(
        text.contains("Lost journal:\n  - ramdisk,16M: 3 state(s)"),
        "{text}"
    );
    // No state lost its journal: no line.
    assert_eq!(lost_journal_line(&analyse_crash(&mixed())[0]), None);
}

#[test]
fn the_live_journal_and_what_was_replayed_are_summed_up_per_strategy() {
    use crate::results::crash::JournalLive;
    // Prefix states hold 0, 10 and 20 live blocks, fill states 90 and 100; two are
    // timed and replayed 30 and 70 blocks.
    let mut records = Vec::new();
    for (i, (strategy, blocks)) in [
        ("prefix", 0u64),
        ("fill", 100),
        ("prefix", 10),
        ("fill", 90),
        ("prefix", 20),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = state("internal", "fsync", i as u64, strategy, Verdict::Ok);
        r.journal_live = Some(JournalLive {
            transactions: blocks / 10,
            blocks,
        });
        records.push(r);
    }
    for (i, replayed) in [(1, 70u64), (2, 30)] {
        let mut r = timed(records[i].clone(), 1.0, None, None);
        if let Some(t) = r.timings.as_mut() {
            t.replayed_blocks = Some(replayed);
            t.replayed_transactions = Some(replayed / 10);
        }
        records[i] = r;
    }
    // A record written before the field existed counts in neither.
    records.push(state("internal", "fsync", 9, "prefix", Verdict::Ok));
    let c = analyse_crash(&records);
    let live = c[0].journal_live.unwrap();
    assert_eq!(
        (live.states, live.blocks_median, live.blocks_max),
        (5, 20.0, 100)
    );
    assert_eq!((live.transactions_median, live.transactions_max), (2.0, 10));
    let per: Vec<(&str, f64, u64)> = c[0]
        .journal_live_by_strategy
        .iter()
        .map(|s| (s.strategy.as_str(), s.live.blocks_median, s.live.blocks_max))
        .collect();
    assert_eq!(per, [("prefix", 10.0, 20), ("fill", 95.0, 100)]);
    let rec = c[0].recovery.as_ref().unwrap();
    let b = rec.replayed_blocks.unwrap();
    assert_eq!((b.n, b.median, b.max), (2, 50.0, 70));
    assert_eq!(rec.replayed_transactions.unwrap().median, 5.0);
    // The words: the recovery table's column and a note.
    let w = &crash_workloads(&c)[0];
    let t = &w.tables[1];
    let col = t
        .headers
        .iter()
        .position(|h| h == "replayed (blocks) median")
        .unwrap();
    assert_eq!(t.rows[0][col], "50.0");
    assert!(
        w.notes.iter().any(|n| n
            == "fsync/internal: live journal at the states (median / max): 20.0 / 100 blocks \
                in 2.00 / 10 transactions; prefix 10.0 / 20 blocks, fill 95.0 / 100 blocks"),
        "{:#?}",
        w.notes
    );
    assert!(crash_notes(&c[0])
        .iter()
        .any(|n| n.contains("live journal")));
    // Without journal_live anywhere, no figure and no note.
    let bare = analyse_crash(&[state("x", "w", 0, "prefix", Verdict::Ok)]);
    assert!(bare[0].journal_live.is_none() && bare[0].journal_live_by_strategy.is_empty());
    assert!(!crash_notes(&bare[0])
        .iter()
        .any(|n| n.contains("live journal")));
}
