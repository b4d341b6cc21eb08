//! What the workers of a phase count and time (one latency histogram each, added,
//! never averaged), and how a worker stops when told to or when a sibling failed.

use super::*;

/// Stops a worker when the user interrupts (an error) or a sibling failed (a quiet
/// return: the sibling's error is the one to report).
pub(super) struct Halt<'a> {
    pub(super) ctl: &'a RunControl,
    pub(super) abort: &'a AtomicBool,
}

impl Halt<'_> {
    #[inline]
    pub(super) fn check(&self) -> anyhow::Result<bool> {
        if self.ctl.stop_requested() {
            return Err(Interrupted.into());
        }
        Ok(self.abort.load(Ordering::Relaxed))
    }
}

/// Reports a real failure before an interruption, so the cause is never masked.
pub(super) fn first_error(outcomes: Vec<anyhow::Result<Tally>>) -> anyhow::Result<Vec<Tally>> {
    let (ok, errs): (Vec<_>, Vec<_>) = outcomes.into_iter().partition(Result::is_ok);
    let mut errs: Vec<anyhow::Error> = errs.into_iter().filter_map(Result::err).collect();
    if let Some(i) = errs
        .iter()
        .position(|e| e.downcast_ref::<Interrupted>().is_none())
    {
        return Err(errs.swap_remove(i));
    }
    if let Some(e) = errs.pop() {
        return Err(e);
    }
    Ok(ok.into_iter().filter_map(Result::ok).collect())
}

/// One thread's counts and latency histogram for one phase.
pub(super) struct Tally {
    pub(super) hist: Histogram<u64>,
    /// Exact largest sample: the histogram only knows it to 0.1 %.
    pub(super) max_ns: u64,
    pub(super) bytes: u64,
    pub(super) fsyncs: u64,
    pub(super) dir_fsyncs: u64,
    pub(super) writes: u64,
    pub(super) rmdirs: u64,
}

impl Tally {
    pub(super) fn new() -> anyhow::Result<Self> {
        let hist = Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG)
            .map_err(|e| anyhow::anyhow!("latency histogram: {e}"))?;
        Ok(Tally {
            hist,
            max_ns: 0,
            bytes: 0,
            fsyncs: 0,
            dir_fsyncs: 0,
            writes: 0,
            rmdirs: 0,
        })
    }

    /// One operation that began at `started`; no allocation (the histogram's
    /// counts were sized up front).
    #[inline]
    pub(super) fn record(&mut self, started: Instant) {
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.hist.saturating_record(ns.max(1));
        self.max_ns = self.max_ns.max(ns);
    }

    /// Percentiles from the merged histogram, capped at the exact maximum (a bucket's
    /// upper edge may lie above it), so p50 <= p95 <= p99 <= max always holds.
    pub(super) fn latency(&self) -> Latency {
        let us = |ns: u64| ns as f64 / 1000.0;
        let at = |q: f64| us(self.hist.value_at_quantile(q).min(self.max_ns));
        if self.hist.is_empty() {
            return Latency::default();
        }
        Latency {
            count: self.hist.len(),
            p50_us: at(0.50),
            p95_us: at(0.95),
            p99_us: at(0.99),
            p999_us: Some(at(0.999)),
            max_us: us(self.max_ns),
        }
    }
}

/// Adds histograms (never averages percentiles) and sums the counts.
pub(super) fn merge(tallies: Vec<Tally>) -> anyhow::Result<Tally> {
    let mut total = Tally::new()?;
    for t in tallies {
        total
            .hist
            .add(&t.hist)
            .map_err(|e| anyhow::anyhow!("merging latency histograms: {e}"))?;
        total.max_ns = total.max_ns.max(t.max_ns);
        total.bytes += t.bytes;
        total.fsyncs += t.fsyncs;
        total.dir_fsyncs += t.dir_fsyncs;
        total.writes += t.writes;
        total.rmdirs += t.rmdirs;
    }
    Ok(total)
}
