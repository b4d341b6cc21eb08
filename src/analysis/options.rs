//! The options a report of a results directory is made with: the stored experiment's
//! report settings, the command line's over them, and what a merged directory's
//! `merge.json` makes every report show.

use anyhow::{bail, Result};

use crate::analysis::model::ReportOptions;
use crate::experiment::spec::Spec;
use crate::results::compare::Compared;
use crate::results::merged::MergeRecord;
use crate::results::record::TrialRecord;
use crate::results::Results;

impl ReportOptions {
    /// The spec's report settings, with the command line's `baseline` and
    /// `suspect_below` over them.
    pub fn of_spec(spec: &Spec, baseline: Option<String>, suspect: Option<&str>) -> Result<Self> {
        let suspect_below = match suspect {
            Some(s) => crate::units::parse_duration(s).map_err(anyhow::Error::msg)?,
            None => spec.suspect_below,
        };
        Ok(ReportOptions {
            suspect_below_secs: suspect_below.as_secs_f64(),
            baseline: baseline.or_else(|| spec.baseline.clone()),
            confidence: 0.95,
            config_order: spec.configs.iter().map(|c| c.label.clone()).collect(),
            workload_order: spec.workloads.iter().map(|w| w.name.clone()).collect(),
            main_phases: spec
                .workloads
                .iter()
                .filter_map(|w| Some((w.name.clone(), w.main_phase.clone()?)))
                .collect(),
            noise_band: spec.noise_band,
            tail_band: spec.tail_band,
            adaptive_looks: spec.adaptive.map(|a| a.max.saturating_sub(a.min) + 1),
            warnings: Vec::new(),
            runs: Vec::new(),
        })
    }

    /// The options of `results`' report: [`Self::of_spec`] of its stored experiment,
    /// then its merge ([`Self::show_merge`]).
    pub fn of_results(
        results: &Results,
        baseline: Option<String>,
        suspect: Option<&str>,
    ) -> Result<Self> {
        let mut opts = Self::of_spec(&results.spec, baseline, suspect)?;
        if let Some(m) = &results.merge {
            opts.show_merge(m, &results.records);
        }
        Ok(opts)
    }

    /// Makes the options show `merge` over `records` (already relabelled per machine by
    /// [`MergeRecord::relabel`]): the configuration order and the baseline follow the
    /// per-machine labels, and the merge's warnings come first. Showing it twice
    /// changes nothing more.
    pub fn show_merge(&mut self, merge: &MergeRecord, records: &[TrialRecord]) {
        if merge.heterogeneous {
            let ids = merge.machine_order();
            let split = |label: &str| -> Vec<String> {
                if ids.iter().any(|id| label.ends_with(&format!("@{id}"))) {
                    return vec![label.to_string()];
                }
                ids.iter()
                    .map(|id| format!("{label}@{id}"))
                    .filter(|l| records.iter().any(|r| &r.config.label == l))
                    .collect()
            };
            self.config_order = self.config_order.iter().flat_map(|l| split(l)).collect();
            if let Some(b) = &self.baseline {
                if let Some(first) = split(b).into_iter().next() {
                    self.baseline = Some(first);
                }
            }
        }
        for w in merge.warnings(records) {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    /// Report options for compared records. `baseline` is a prefixed label, or a
    /// label of the first source that has it; default: the first source's baseline,
    /// else the first configuration.
    pub fn of_comparison(c: &Compared, baseline: Option<&str>) -> Result<Self> {
        let baseline = match baseline {
            Some(b) => Some(find_label(c, b)?),
            None => c
                .sources
                .iter()
                .find_map(|s| s.baseline.as_ref().map(|b| format!("{}:{b}", s.name)))
                .filter(|b| c.config_order.contains(b)),
        };
        Ok(ReportOptions {
            suspect_below_secs: c.suspect_below_secs,
            baseline,
            config_order: c.config_order.clone(),
            workload_order: c.workload_order.clone(),
            noise_band: c.noise_band,
            // The most looks any source could have taken: correcting every p for it
            // is conservative for the sources that took fewer.
            adaptive_looks: c.sources.iter().filter_map(|s| s.adaptive_looks).max(),
            main_phases: c.main_phases.clone(),
            // A pair inside one run is decided as that run's own report decides it.
            runs: c
                .sources
                .iter()
                .map(|s| crate::analysis::RunScope {
                    name: s.name.clone(),
                    labels: c
                        .config_order
                        .iter()
                        .filter(|l| l.strip_prefix(&s.name).is_some_and(|r| r.starts_with(':')))
                        .cloned()
                        .collect(),
                    adaptive_looks: s.adaptive_looks,
                })
                .collect(),
            ..ReportOptions::default()
        })
    }
}

/// `wanted` as a prefixed label of the comparison: itself, or the first source's
/// label that ends in `:wanted`.
fn find_label(c: &Compared, wanted: &str) -> Result<String> {
    if c.config_order.iter().any(|l| l == wanted) {
        return Ok(wanted.to_string());
    }
    let suffix = format!(":{wanted}");
    match c.config_order.iter().find(|l| l.ends_with(&suffix)) {
        Some(l) => Ok(l.clone()),
        None => bail!(
            "no configuration `{wanted}` in the compared runs (labels: {})",
            c.config_order.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fingerprint::Fingerprint;
    use crate::results::merged::{AttemptUsed, MERGE_VERSION};
    use crate::results::record::SCHEMA_VERSION;
    use crate::run::adaptive::tests::rec;

    fn machine(cpu: &str) -> Fingerprint {
        Fingerprint {
            cpu_model: cpu.into(),
            cpus: 4,
            memory_bytes: 8 << 30,
            kernel: "6.1.0".into(),
            virtualization: "none".into(),
            e2fsprogs: "1.47".into(),
            xfsprogs: "6.1".into(),
            work_dir_storage: "ext4 on /dev/sda1".into(),
            jbench_version: "0.1.0".into(),
            ..Default::default()
        }
    }

    fn record(heterogeneous: bool) -> MergeRecord {
        let (a, b) = (machine("A"), machine(if heterogeneous { "B" } else { "A" }));
        MergeRecord {
            version: MERGE_VERSION,
            shards: 3,
            shard_by: "round".into(),
            spec_sha256: "s".into(),
            jbench_version: "0.1.0".into(),
            schema_version: SCHEMA_VERSION,
            attempts: vec![
                AttemptUsed {
                    shard: 0,
                    dir: "r/0".into(),
                    machine: a.id(),
                    sealed_at: String::new(),
                    scheduler: Default::default(),
                },
                AttemptUsed {
                    shard: 1,
                    dir: "r/1".into(),
                    machine: b.id(),
                    sealed_at: String::new(),
                    scheduler: Default::default(),
                },
            ],
            duplicates_ignored: vec![],
            unsealed_ignored: vec![],
            missing_shards: vec![2],
            missing_trials: vec![2, 5],
            partial: true,
            heterogeneous,
            machines: [(a.id(), a.clone()), (b.id(), b.clone())].into(),
            trial_machine: [(0, a.id()), (3, a.id()), (1, b.id()), (4, b.id())].into(),
        }
    }

    fn records() -> Vec<TrialRecord> {
        [0, 1, 3, 4]
            .into_iter()
            .map(|t| rec(t, if t % 2 == 0 { "x" } else { "y" }, "w", 10.0))
            .collect()
    }

    #[test]
    fn heterogeneous_apply_splits_labels_per_machine_once_and_warns() {
        let m = record(true);
        let (a, b) = (machine("A").id(), machine("B").id());
        let mut recs = records();
        let mut opts = ReportOptions {
            config_order: vec!["x".into(), "y".into()],
            baseline: Some("x".into()),
            ..Default::default()
        };
        m.relabel(&mut recs);
        opts.show_merge(&m, &recs);
        let again = (recs.clone(), opts.clone());
        m.relabel(&mut recs);
        opts.show_merge(&m, &recs);
        assert_eq!(
            (recs.clone(), opts.clone()),
            again,
            "applying twice changes nothing"
        );
        assert_eq!(recs[0].config.label, format!("x@{a}"));
        assert_eq!(recs[1].config.label, format!("y@{b}"));
        assert_eq!(opts.baseline, Some(format!("x@{a}")));
        assert_eq!(
            opts.config_order,
            vec![
                format!("x@{a}"),
                format!("x@{b}"),
                format!("y@{a}"),
                format!("y@{b}")
            ]
        );
        assert_eq!(
            opts.warnings[0],
            "partial merge: shard 2 missing (2 trials)"
        );
        assert!(
            opts.warnings[1].starts_with("heterogeneous machines: "),
            "{:?}",
            opts.warnings
        );
        assert!(
            opts.warnings[1].contains(&format!("@{a} (A, 4 CPUs")),
            "{:?}",
            opts.warnings
        );
    }

    #[test]
    fn homogeneous_apply_leaves_the_report_alone_once_complete() {
        let mut m = record(false);
        m.partial = false;
        m.missing_shards.clear();
        m.missing_trials.clear();
        let mut recs = records();
        let before = recs.clone();
        let mut opts = ReportOptions::default();
        m.relabel(&mut recs);
        opts.show_merge(&m, &recs);
        assert_eq!(recs, before);
        assert_eq!(opts, ReportOptions::default());
    }
}
