//! The figures of the summary that opens a report: the configurations ranked on the
//! main phase and how much to trust the ranking. Types only; built by
//! [`crate::analysis::summary`], worded by `report/summary.rs`.

use serde::{Deserialize, Serialize};

/// One workload's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    /// The phase the ranking is on.
    pub main_phase: String,
    /// Rate unit of that phase, e.g. `files/s`.
    pub rate_unit: String,
    /// Fastest first. Each but the last carries its comparison with the next one.
    pub ranking: Vec<Ranked>,
    pub trust: Trust,
}

/// One configuration's place in the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    pub config: String,
    /// Mean rate on the main phase.
    pub mean: f64,
    /// Successful trials that measured the main phase.
    pub n: usize,
    /// Against the next slower configuration; `None` for the slowest.
    pub versus: Option<Ratio>,
    /// The main phase is suspect (too short to trust) for this configuration or the
    /// next slower one: the line says so where it is read.
    #[serde(default)]
    pub suspect: bool,
    /// This configuration's speed is partly the emulation path's
    /// ([`crate::analysis::PathBound`]): the line says so where it is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bound: Option<crate::analysis::PathBound>,
}

/// A configuration against the next slower one on the main phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// The next slower configuration.
    pub slower: String,
    /// mean(this) / mean(slower); `None` when the slower mean is not above 0.
    pub ratio: Option<f64>,
    /// Fieller's interval of the ratio at [`Ratio::ci_level`], the level the pair was
    /// decided at; never below 0. `ci_high` is `None` (with `ci_low` set) when the
    /// interval is unbounded above; both `None` with too few trials.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    #[serde(default)]
    pub ci_level: Option<f64>,
    /// The family the pair was corrected in (`primary`, or with runs compared
    /// `primary (run NAME)` / `primary (across runs)`).
    #[serde(default)]
    pub family: Option<String>,
    /// Tests in that family (what "after correcting for N comparisons" counts).
    #[serde(default)]
    pub family_size: Option<usize>,
    /// The p the decision uses: Welch's p of the pair, adjusted with Holm over the
    /// primary family (every pair of configurations on the main phase).
    pub p: Option<f64>,
    pub p_source: PSource,
    /// The whole interval lies outside the noise band: different.
    pub significant: bool,
    /// The whole interval lies inside the noise band: equivalent.
    pub within_noise_band: bool,
    /// Different, equivalent or undecided, by the interval
    /// ([`crate::analysis::decision`]); `None` without a test.
    #[serde(default)]
    pub decision: Option<crate::analysis::decision::Decision>,
}

/// Where a [`Ratio`]'s p comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PSource {
    /// Welch's p of the pair adjusted with Holm over its family (every pair of
    /// configurations on the main phase): what decides every summary line now.
    FamilyHolm,
    /// No test: fewer than 2 trials on a side, or unusable values.
    None,
}

/// How much to trust a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trust {
    /// Fewest and most successful trials of a ranked configuration on the main phase.
    pub min_trials: usize,
    pub max_trials: usize,
    /// The largest coefficient of variation of a ranked configuration's rate on the
    /// main phase, and whose it is.
    pub worst_cv: Option<f64>,
    pub worst_cv_config: Option<String>,
    /// Suspect (configuration, phase) pairs of the workload, every phase counted.
    pub suspect_phases: usize,
    /// Whether the main phase itself is suspect for a ranked configuration.
    pub main_phase_suspect: bool,
    /// Trials of the workload, any configuration, failed because the device daemon
    /// stalled (docs/devices.md, "Stalls"): excluded, and said so on this line.
    #[serde(default)]
    pub stalled_trials: usize,
}
