//! What the per-workload analysis shares between its parts (the tests, the
//! comparisons, the summary): the settings of one analysis and the per-trial values of
//! a phase. Below them all, so none of them imports another to get it.

use super::model::ReportOptions;
use crate::results::record::TrialRecord;

pub use crate::workload::DURABLE_SUFFIX;

/// Settings shared by the per-workload analysis.
pub(crate) struct Ctx<'a> {
    pub(crate) opts: &'a ReportOptions,
    pub(crate) confidence: f64,
    pub(crate) config_order: &'a [String],
    pub(crate) baseline: Option<&'a str>,
    pub(crate) adaptive_looks: Option<u32>,
}

/// Per-trial values of one phase over the successful trials of one configuration.
#[derive(Default)]
pub(crate) struct Samples {
    pub(crate) seconds: Vec<f64>,
    pub(crate) rates: Vec<f64>,
    pub(crate) kib: Vec<f64>,
}

pub(crate) fn samples(recs: &[&TrialRecord], phase: &str) -> Samples {
    let mut s = Samples::default();
    for r in recs.iter().filter(|r| r.is_ok()) {
        if let Some(p) = r.phases.iter().find(|p| p.name == phase) {
            s.seconds.push(p.seconds);
            s.rates.push(p.ops_per_sec());
            s.kib.push(p.kib_per_sec());
        }
    }
    s
}
