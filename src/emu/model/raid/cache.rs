//! The dirty data of one stripe in the controller's cache.

use std::time::Duration;

/// Dirty byte ranges of one stripe, stripe-relative (data bytes only, parity is
/// computed at destage), merged so that rewrites are counted once.
#[derive(Debug, Clone, Default)]
pub(super) struct StripeDirty {
    /// Sorted; no two overlap or touch.
    extents: Vec<(u64, u64)>,
    pub(super) bytes: u64,
    pub(super) last_write: Duration,
}

impl StripeDirty {
    /// Bytes of `a..b` not yet dirty.
    pub(super) fn new_bytes(&self, a: u64, b: u64) -> u64 {
        let overlap: u64 = self
            .extents
            .iter()
            .map(|&(x, y)| y.min(b).saturating_sub(x.max(a)))
            .sum();
        (b - a) - overlap
    }

    /// Marks `a..b` dirty; returns the bytes that were not.
    pub(super) fn insert(&mut self, a: u64, b: u64) -> u64 {
        let (mut s, mut e, mut removed) = (a, b, 0);
        self.extents.retain(|&(x, y)| {
            if y < s || x > e {
                return true;
            }
            s = s.min(x);
            e = e.max(y);
            removed += y - x;
            false
        });
        let at = self.extents.partition_point(|&(x, _)| x < s);
        self.extents.insert(at, (s, e));
        let added = (e - s) - removed;
        self.bytes += added;
        added
    }

    pub(super) fn covers(&self, a: u64, b: u64) -> bool {
        self.extents.iter().any(|&(x, y)| x <= a && y >= b)
    }

    /// For each data chunk with dirty bytes: its index and the span they cover, as
    /// offsets within the chunk.
    pub(super) fn chunk_spans(&self, chunk: u64) -> impl Iterator<Item = (u64, u64, u64)> {
        let mut spans: Vec<(u64, u64, u64)> = Vec::new();
        for &(x, y) in &self.extents {
            let mut a = x;
            while a < y {
                let i = a / chunk;
                let b = y.min((i + 1) * chunk);
                let (lo, hi) = (a - i * chunk, b - i * chunk);
                match spans.last_mut() {
                    Some(last) if last.0 == i => last.2 = hi,
                    _ => spans.push((i, lo, hi)),
                }
                a = b;
            }
        }
        spans.into_iter()
    }

    /// Indices of the data chunks with dirty bytes.
    pub(super) fn chunks(&self, chunk: u64) -> impl Iterator<Item = u64> {
        self.chunk_spans(chunk).map(|(i, _, _)| i)
    }

    /// The rows (offsets within a chunk) any dirty chunk spans: what P and Q must be
    /// read and rewritten over.
    pub(super) fn row_span(&self, chunk: u64) -> (u64, u64) {
        self.chunk_spans(chunk)
            .fold(None, |acc: Option<(u64, u64)>, (_, a, b)| {
                Some(acc.map_or((a, b), |(x, y)| (x.min(a), y.max(b))))
            })
            .unwrap_or((0, 0))
    }
}
