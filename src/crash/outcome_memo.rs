//! Outcomes judged once: a state whose replayed file system holds, in every block an
//! earlier ok verdict read, the bytes it read then, under the same promises, gives the
//! user-space check the same input, so the same verdict. The check is deterministic
//! in what it reads (the load, each promise's lookup and bytes, the inode walk), so
//! comparing those blocks decides it without reading the promises again: a few hundred
//! block comparisons where the check resolves every path and reads every file.
//!
//! Only ok outcomes are kept (a broken one goes to the kernel anyway), the [`KEEP`]
//! used last, most recent first: states are judged in base order, and a state's
//! neighbours are the likeliest to share its outcome. A state that matches none costs
//! a comparison up to the first differing block of each.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::oracle::{Promise, Promises};

/// How many outcomes are kept to compare a state against.
pub const KEEP: usize = 32;

/// One ok outcome: what it was judged under and every block it read.
pub struct Seen {
    promises: Vec<Promise>,
    removal_started: bool,
    /// Block number and bytes, in block order.
    blocks: Vec<(u64, Box<[u8]>)>,
    pub outcome: [u8; 32],
    pub checked: u64,
}

impl Seen {
    pub fn new(p: &Promises, blocks: Vec<(u64, Box<[u8]>)>, outcome: [u8; 32]) -> Self {
        Self {
            promises: p.items.clone(),
            removal_started: p.removal_started,
            blocks,
            outcome,
            checked: p.items.len() as u64,
        }
    }

    fn same_promises(&self, p: &Promises) -> bool {
        // Promises are built once per marker and shared, so this is mostly pointer
        // comparisons (`Arc`'s equality checks identity first).
        self.removal_started == p.removal_started && self.promises == p.items
    }
}

/// Reads block `n` of the state's replayed file system into `dst`.
pub type ReadBlock<'a> = dyn FnMut(u64, &mut [u8]) -> Result<(), String> + 'a;

#[derive(Default)]
pub struct OutcomeMemo {
    seen: Mutex<VecDeque<Arc<Seen>>>,
    hits: AtomicU64,
}

impl OutcomeMemo {
    /// An earlier ok outcome this state repeats, if any.
    pub fn find(&self, p: &Promises, read: &mut ReadBlock<'_>) -> Option<Arc<Seen>> {
        let candidates: Vec<Arc<Seen>> = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        let mut buf = vec![0u8; super::state_bytes::BLOCK as usize];
        let hit = candidates.into_iter().find(|seen| {
            seen.same_promises(p)
                && seen
                    .blocks
                    .iter()
                    .all(|(n, bytes)| read(*n, &mut buf).is_ok() && buf[..] == bytes[..])
        })?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        let mut s = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = s.iter().position(|o| Arc::ptr_eq(o, &hit)) {
            let used = s.remove(at).expect("found above");
            s.push_front(used);
        }
        Some(hit)
    }

    /// Keeps an ok outcome, first, dropping the least recently used past [`KEEP`].
    pub fn remember(&self, seen: Seen) {
        let mut s = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if s.iter().any(|o| o.outcome == seen.outcome) {
            return;
        }
        s.push_front(Arc::new(seen));
        s.truncate(KEEP);
    }

    /// States that repeated a kept outcome and were not read again.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::crash::oracle::Expect;
    use std::collections::HashMap;

    /// `n` promises that `f0`, `f1`, ... exist.
    pub(crate) fn promises(n: usize) -> Promises {
        Promises {
            items: (0..n)
                .map(|i| Promise {
                    path: format!("f{i}"),
                    expect: Expect::Exists,
                })
                .collect(),
            ..Default::default()
        }
    }

    fn block(fill: u8) -> Box<[u8]> {
        vec![fill; 4096].into_boxed_slice()
    }

    #[test]
    fn a_state_repeats_an_outcome_only_with_the_same_bytes_and_promises() {
        let memo = OutcomeMemo::default();
        memo.remember(Seen::new(
            &promises(2),
            vec![(0, block(1)), (7, block(2))],
            [9; 32],
        ));
        let disk = |blocks: HashMap<u64, u8>| {
            move |n: u64, dst: &mut [u8]| {
                dst.fill(*blocks.get(&n).ok_or("past the end")?);
                Ok(())
            }
        };
        let same = HashMap::from([(0, 1), (7, 2), (8, 5)]);
        let hit = memo.find(&promises(2), &mut disk(same.clone()));
        assert_eq!(
            hit.map(|s| s.outcome),
            Some([9; 32]),
            "block 8 was not read"
        );
        assert!(
            memo.find(&promises(3), &mut disk(same)).is_none(),
            "another promise"
        );
        let changed = HashMap::from([(0, 1), (7, 3)]);
        assert!(memo.find(&promises(2), &mut disk(changed)).is_none());
        let short = HashMap::from([(0, 1)]);
        assert!(memo.find(&promises(2), &mut disk(short)).is_none());
        assert_eq!(memo.hits(), 1);
    }

    #[test]
    fn the_outcomes_used_last_are_kept() {
        let memo = OutcomeMemo::default();
        for i in 0..(KEEP as u8 + 3) {
            memo.remember(Seen::new(&promises(1), vec![(0, block(i))], [i; 32]));
        }
        let mut read = |_: u64, dst: &mut [u8]| {
            dst.fill(0);
            Ok(())
        };
        assert!(
            memo.find(&promises(1), &mut read).is_none(),
            "0 was dropped"
        );
        let mut third = |_: u64, dst: &mut [u8]| {
            dst.fill(3);
            Ok(())
        };
        assert!(memo.find(&promises(1), &mut third).is_some(), "3 is kept");
        for i in 100..(100 + KEEP as u8 - 1) {
            memo.remember(Seen::new(&promises(1), vec![(0, block(i))], [i; 32]));
        }
        assert!(
            memo.find(&promises(1), &mut third).is_some(),
            "3 was used last, before the newer ones"
        );
        let mut unused = |_: u64, dst: &mut [u8]| {
            dst.fill(KEEP as u8 + 2);
            Ok(())
        };
        assert!(
            memo.find(&promises(1), &mut unused).is_none(),
            "the newest of the first ones, unused since, made way"
        );
    }
}
