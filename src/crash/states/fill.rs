//! The `fill` strategy's cuts: prefix cuts ranked by what the journal holds there, and
//! the journal's live content of any state.

use std::collections::HashSet;

use super::choose::Ctx;
use super::{JournalLive, StatePlan};
use crate::crash::journal_scan::{JournalNotes, Tracker};

/// The live journal at each of `cuts` (sorted) of a prefix state: every jbd2 block
/// written before the cut is on the disk, in one sweep of the notes.
pub(super) fn live_at(notes: &JournalNotes, cuts: &[u64]) -> Vec<JournalLive> {
    let mut t = Tracker::default();
    let mut writes = notes.writes.iter().peekable();
    cuts.iter()
        .map(|&cut| {
            while let Some(w) = writes.next_if(|w| w.seq < cut) {
                for h in &w.hits {
                    t.apply(&h.block);
                }
            }
            t.live()
        })
        .collect()
}

/// The prefix cuts with live journal content, fullest first (most blocks, then most
/// transactions, then the later cut), one cut per distinct state.
pub(super) fn ranked(ctx: &Ctx<'_>, notes: &JournalNotes, cuts: &[u64]) -> Vec<u64> {
    if notes.is_empty() {
        return Vec::new();
    }
    let mut by: Vec<(u64, JournalLive)> = cuts
        .iter()
        .copied()
        .zip(live_at(notes, cuts))
        .filter(|(_, l)| l.blocks > 0)
        .collect();
    by.sort_by(|a, b| {
        (b.1.blocks, b.1.transactions, b.0).cmp(&(a.1.blocks, a.1.transactions, a.0))
    });
    let mut seen = HashSet::new();
    by.into_iter()
        .filter(|(c, _)| seen.insert(ctx.key(&ctx.prefix_state(*c))))
        .map(|(c, _)| c)
        .collect()
}

/// What the journal of `plan`'s state holds: the jbd2 blocks it keeps (every one
/// before its base, and of the overlay's writes those in the kept ranges), in log
/// order.
pub fn journal_live(notes: &JournalNotes, plan: &StatePlan) -> JournalLive {
    let mut t = Tracker::default();
    let mut pieces = plan.overlay.iter().peekable();
    for w in notes.writes.iter().take_while(|w| w.seq < plan.cut) {
        // `None`: the write is left out; `Some(None)`: kept whole; otherwise the kept
        // byte ranges.
        let kept = if w.seq < plan.base {
            Some(None)
        } else {
            while pieces.next_if(|p| p.seq < w.seq).is_some() {}
            pieces
                .peek()
                .filter(|p| p.seq == w.seq)
                .map(|p| p.ranges.as_ref())
        };
        for h in &w.hits {
            let in_state = match kept {
                None => false,
                Some(None) => true,
                Some(Some(rs)) => rs.iter().any(|&(s, len)| s <= h.at && h.at < s + len),
            };
            if in_state {
                t.apply(&h.block);
            }
        }
    }
    t.live()
}
