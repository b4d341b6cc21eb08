//! `torn-data`'s plan from a hand-built log and hand-made file labels.

use super::*;

/// `torn-data` tears each multi-block write of file data at every block, right before
/// the flush that makes it durable with every other volatile write kept, takes at most
/// half the budget first, and leaves the rest to the others as before.
#[test]
fn torn_data_tears_file_data_at_its_last_volatile_cut_with_half_the_budget_first() {
    let mut l = Log::new();
    // An 8 KiB page of a file, a 16 KiB write of which only the middle is file data,
    // a journal write of 3 blocks (no file data), and a write after them all.
    let page = l.wn(0, 2);
    let mixed = l.wn(0, 4);
    let journal = l.wn(0, 3);
    let flush = l.f(0);
    let late = l.wn(0, 2);
    l.mark("fsync f");
    let end = l.f(0);
    let mut files = FileWrites {
        files: vec!["db/page".into(), "db/mixed".into()],
        ..FileWrites::default()
    };
    files
        .writes
        .insert(page, vec![Some((0, Some(8192))), Some((0, Some(12288)))]);
    files.writes.insert(
        mixed,
        vec![None, Some((1, Some(4096))), Some((1, Some(8192))), None],
    );
    files
        .writes
        .insert(late, vec![Some((0, Some(0))), Some((0, Some(4096)))]);
    let disks = [CACHED];
    let (plans, cov) = plan_knowing(
        &l.recs,
        &disks,
        &opts(1000, &[Strategy::TornData, Strategy::Prefix]),
        1,
        &JournalNotes::default(),
        &files,
    )
    .unwrap();
    let torn: Vec<&StatePlan> = plans
        .iter()
        .filter(|p| p.strategy == Strategy::TornData)
        .collect();
    // page: 1 tear; mixed: 3; late: 1; the journal write is no file data.
    assert_eq!(cov.space(Strategy::TornData), 5.0);
    assert_eq!(torn.len(), 5, "{torn:#?}");
    for p in &torn {
        let (seq, kept, len) = p.torn.unwrap();
        assert_ne!(seq, journal);
        assert!(kept % 4096 == 0 && kept < len);
        // Right before the covering flush, every other volatile write kept whole.
        let cover = if seq == late { end } else { flush };
        assert_eq!(p.cut, cover, "{p:?}");
        for w in [page, mixed, journal] {
            if w != seq && w < cover {
                let whole =
                    w < p.base || p.overlay.iter().any(|q| q.seq == w && q.ranges.is_none());
                assert!(whole, "{p:?}");
            }
        }
    }
    let line = cov.describe(plans.len() as u64);
    assert!(
        line.contains("all 5 tears of file data, in db/mixed (3), db/page (2)"),
        "{line}"
    );
    // A budget of 4: torn-data takes 2 (half), the tear inside db/page's 8 KiB page
    // (file offset 12288, an odd block) among them; prefix gets the other 2.
    let (few, cov) = plan_knowing(
        &l.recs,
        &disks,
        &opts(4, &[Strategy::TornData, Strategy::Prefix]),
        1,
        &JournalNotes::default(),
        &files,
    )
    .unwrap();
    assert_eq!(cov.planned(Strategy::TornData), 2);
    assert_eq!(cov.planned(Strategy::Prefix), 2);
    assert_eq!(few.len(), 4);
    let first_two: Vec<u64> = few
        .iter()
        .filter(|p| p.strategy == Strategy::TornData)
        .map(|p| p.torn.unwrap().0)
        .collect();
    assert!(first_two.contains(&page), "{few:#?}");
    // Without labels: no torn-data state, and the budget is the others' whole.
    let (bare, cov) = plan_knowing(
        &l.recs,
        &disks,
        &opts(4, &[Strategy::TornData, Strategy::Prefix]),
        1,
        &JournalNotes::default(),
        &FileWrites::default(),
    )
    .unwrap();
    assert_eq!(cov.planned(Strategy::TornData), 0);
    assert_eq!(bare.len() as f64, cov.space(Strategy::Prefix).min(4.0));
    assert!(cov
        .describe(4)
        .contains("no multi-block write of file data"));
}
