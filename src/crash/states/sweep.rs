//! The volatile units (logical blocks of writes no flush made durable yet) at a
//! series of cuts, in one sweep of the log.

use std::collections::BTreeMap;

use super::LogRec;

/// A volatile unit at a cut: a record and one of its byte ranges (a logical block).
pub(super) type Unit = (usize, u32);

/// The volatile units at each of `cuts` (sorted), in log order.
pub(super) fn volatile_at(
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
pub(super) fn volatile_sizes(
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
