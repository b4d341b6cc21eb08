//! Each successful trial's rate on a phase, for the dots of the bar charts: the same
//! trials and the same figure the analysis summarises (operations / seconds, the
//! durable time for a `+syncfs` phase), so the dots sit around the bar they explain.

use crate::analysis::DURABLE_SUFFIX;
use crate::results::record::TrialRecord;

/// The rates of `phase` over the successful timed trials of `config` in `workload`,
/// in trial order.
pub(crate) fn trial_rates(
    records: &[TrialRecord],
    workload: &str,
    config: &str,
    phase: &str,
) -> Vec<f64> {
    let (name, durable) = match phase.strip_suffix(DURABLE_SUFFIX) {
        Some(plain) => (plain, true),
        None => (phase, false),
    };
    let mut trials: Vec<&TrialRecord> = records
        .iter()
        .filter(|r| r.is_ok() && !r.crash_recording)
        .filter(|r| r.workload.name == workload && r.config.label == config)
        .collect();
    trials.sort_by_key(|r| r.trial);
    trials
        .into_iter()
        .filter_map(|r| r.phases.iter().find(|p| p.name == name))
        .filter_map(|p| {
            if !durable {
                return Some(p.ops_per_sec());
            }
            let seconds = p.durable_seconds?;
            Some(if seconds > 0.0 {
                p.ops as f64 / seconds
            } else {
                0.0
            })
        })
        .collect()
}
