//! `jbench compare`'s reading: configurations of several results directories as one
//! set of records.
//!
//! [`gather`] loads each directory's trials, renames every configuration
//! `<dir-name>:<label>` and returns one set of records that the analysis treats like a
//! single run's (the analysis's `ReportOptions::of_comparison` says how). What
//! does not line up between the runs (a workload missing from some, the same workload
//! name with other parameters, phases recorded by some runs only) is returned as
//! warnings, and nothing is dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::results::record::TrialRecord;
use crate::results::store;

/// One results directory of a comparison.
#[derive(Debug, Clone)]
pub struct Source {
    pub dir: PathBuf,
    /// The directory's last path component, made unique among the sources: the
    /// prefix of its configurations' labels.
    pub name: String,
    /// The experiment's name from its `spec.toml`, when that could be read.
    pub experiment: Option<String>,
    /// The experiment's baseline configuration (unprefixed), if it names one.
    pub baseline: Option<String>,
    /// Possible looks of its adaptive stopping rule (`max - min + 1`), if adaptive.
    pub adaptive_looks: Option<u32>,
}

/// Several runs' records as one.
#[derive(Debug, Clone)]
pub struct Compared {
    pub sources: Vec<Source>,
    /// Every record, its configuration label prefixed `<source-name>:`, trial indices
    /// offset so each source's trials follow the previous source's.
    pub records: Vec<TrialRecord>,
    /// Prefixed labels: the sources in order, each in its experiment's order.
    pub config_order: Vec<String>,
    /// Workload names in order of first appearance over the sources.
    pub workload_order: Vec<String>,
    /// Mismatches between the runs, to show before the tables.
    pub warnings: Vec<String>,
    /// The first source's suspect threshold and noise band.
    pub suspect_below_secs: f64,
    pub noise_band: f64,
    /// Workload -> its `main_phase`, from the first run whose experiment names one,
    /// so a run's pairs are tested on the phase its own report tests them on.
    pub main_phases: std::collections::BTreeMap<String, String>,
}

/// Unique source names: the last path component, with `-2`, `-3`... on repeats.
fn source_names(dirs: &[PathBuf]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in dirs {
        let base = d
            .canonicalize()
            .unwrap_or_else(|_| d.clone())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".to_string());
        let mut name = base.clone();
        let mut k = 2;
        while out.contains(&name) {
            name = format!("{base}-{k}");
            k += 1;
        }
        out.push(name);
    }
    out
}

/// Loads results directories as one set of records; see the module documentation.
pub fn gather(dirs: &[PathBuf]) -> Result<Compared> {
    if dirs.len() < 2 {
        bail!("compare needs at least two results directories");
    }
    // The same run twice would compare with itself: every verdict "no difference".
    let mut seen: Vec<(PathBuf, &PathBuf)> = Vec::new();
    for d in dirs {
        let real = std::fs::canonicalize(d).unwrap_or_else(|_| d.clone());
        if let Some((_, first)) = seen.iter().find(|(r, _)| *r == real) {
            bail!(
                "{} and {} are the same results directory; compare needs different runs (`jbench report {}` shows one)",
                first.display(),
                d.display(),
                d.display()
            );
        }
        seen.push((real, d));
    }
    let names = source_names(dirs);
    let mut sources = Vec::new();
    let mut per_source: Vec<Vec<TrialRecord>> = Vec::new();
    let mut config_order = Vec::new();
    let mut warnings = Vec::new();
    let mut suspect_below_secs = None;
    let mut noise_band = None;
    let mut main_phases = std::collections::BTreeMap::new();
    for (dir, name) in dirs.iter().zip(&names) {
        let super::Trials { records, merge } = super::read_trials(dir)
            .with_context(|| format!("cannot load the trials of {}", dir.display()))?;
        // A merged directory of shards from different machines is already several
        // groups: they stay apart here too (read_trials relabelled them).
        if let Some(m) = &merge {
            warnings.extend(
                m.warnings(&records)
                    .into_iter()
                    .map(|w| format!("{name}: {w}")),
            );
        }
        let spec = match super::read_spec(dir) {
            Ok(s) => Some(s),
            Err(e) => {
                warnings.push(format!("{name}: {e:#}; configurations in trial order"));
                None
            }
        };
        let mut labels: Vec<String> = spec
            .iter()
            .flat_map(|s| s.configs.iter().map(|c| c.label.clone()))
            .filter(|l| records.iter().any(|r| &r.config.label == l))
            .collect();
        let mut sorted: Vec<&TrialRecord> = records.iter().collect();
        sorted.sort_by_key(|r| r.trial);
        for r in sorted {
            if !labels.contains(&r.config.label) {
                labels.push(r.config.label.clone());
            }
        }
        config_order.extend(labels.iter().map(|l| format!("{name}:{l}")));
        if let Some(s) = &spec {
            suspect_below_secs.get_or_insert(s.suspect_below.as_secs_f64());
            noise_band.get_or_insert(s.noise_band);
            for w in &s.workloads {
                if let Some(p) = &w.main_phase {
                    main_phases
                        .entry(w.name.clone())
                        .or_insert_with(|| p.clone());
                }
            }
        }
        sources.push(Source {
            dir: dir.clone(),
            name: name.clone(),
            experiment: spec.as_ref().map(|s| s.name.clone()),
            baseline: spec.as_ref().and_then(|s| s.baseline.clone()),
            adaptive_looks: spec
                .as_ref()
                .and_then(|s| s.adaptive)
                .map(|a| a.max.saturating_sub(a.min) + 1),
        });
        per_source.push(records);
    }
    warnings.extend(mismatches(&names, &mut per_source));
    let mut records = Vec::new();
    let mut offset = 0;
    let mut workload_order: Vec<String> = Vec::new();
    for (recs, name) in per_source.into_iter().zip(&names) {
        let mut sorted = recs;
        sorted.sort_by_key(|r| r.trial);
        let next = sorted
            .iter()
            .map(|r| r.trial.saturating_add(1))
            .max()
            .unwrap_or(0);
        for mut r in sorted {
            if !workload_order.contains(&r.workload.name) {
                workload_order.push(r.workload.name.clone());
            }
            r.config.label = format!("{name}:{}", r.config.label);
            // A hand-edited trial number near usize::MAX must not wrap onto another
            // source's trials.
            r.trial = r.trial.checked_add(offset).with_context(|| {
                format!(
                    "{name}: trial number {} is too large to merge after the other runs",
                    r.trial
                )
            })?;
            records.push(r);
        }
        offset = offset.saturating_add(next);
    }
    Ok(Compared {
        sources,
        records,
        config_order,
        workload_order,
        warnings,
        suspect_below_secs: suspect_below_secs.unwrap_or(60.0),
        noise_band: noise_band.unwrap_or(crate::experiment::spec::DEFAULT_NOISE_BAND),
        main_phases,
    })
}

/// Workloads missing from some runs, with other parameters in some runs (those are
/// renamed `<workload> [<source>]` so they get a table of their own instead of being
/// compared with a different workload), and phases some runs did not record.
fn mismatches(names: &[String], per_source: &mut [Vec<TrialRecord>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    for recs in per_source.iter() {
        for r in recs {
            if !workloads.contains(&r.workload.name) {
                workloads.push(r.workload.name.clone());
            }
        }
    }
    for w in &workloads {
        let has: Vec<bool> = per_source
            .iter()
            .map(|recs| recs.iter().any(|r| &r.workload.name == w))
            .collect();
        if has.iter().any(|h| !h) {
            let list = |want: bool| -> Vec<&str> {
                names
                    .iter()
                    .zip(&has)
                    .filter(|(_, h)| **h == want)
                    .map(|(n, _)| n.as_str())
                    .collect()
            };
            out.push(format!(
                "workload `{w}` is only in {} (not in {}): its table compares only their configurations",
                list(true).join(", "),
                list(false).join(", ")
            ));
        }
        // The first run with this workload sets what it means.
        let Some(first) = has.iter().position(|h| *h) else {
            continue;
        };
        let reference = per_source[first]
            .iter()
            .find(|r| &r.workload.name == w)
            .map(|r| (r.workload.kind.clone(), r.workload.params.clone()))
            .expect("the run has this workload");
        let phases_of = |recs: &[TrialRecord]| -> BTreeSet<String> {
            recs.iter()
                .filter(|r| &r.workload.name == w && r.is_ok())
                .flat_map(|r| r.phases.iter().map(|p| p.name.clone()))
                .collect()
        };
        let ref_phases = phases_of(&per_source[first]);
        for i in (first + 1)..per_source.len() {
            if !has[i] {
                continue;
            }
            let other = per_source[i]
                .iter()
                .find(|r| &r.workload.name == w)
                .map(|r| (r.workload.kind.clone(), r.workload.params.clone()))
                .expect("the run has this workload");
            if other != reference {
                let renamed = format!("{w} [{}]", names[i]);
                out.push(format!(
                    "workload `{w}` differs between {} ({} {}) and {} ({} {}): {}'s is shown as `{renamed}`, not compared with the others",
                    names[first],
                    reference.0,
                    reference.1,
                    names[i],
                    other.0,
                    other.1,
                    names[i]
                ));
                for r in per_source[i].iter_mut().filter(|r| &r.workload.name == w) {
                    r.workload.name = renamed.clone();
                }
                continue;
            }
            let phases = phases_of(&per_source[i]);
            if !ref_phases.is_empty() && !phases.is_empty() && phases != ref_phases {
                let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
                    a.difference(b).cloned().collect()
                };
                let (a, b) = (only(&ref_phases, &phases), only(&phases, &ref_phases));
                let mut parts = Vec::new();
                if !a.is_empty() {
                    parts.push(format!("{} only in {}", a.join(", "), names[first]));
                }
                if !b.is_empty() {
                    parts.push(format!("{} only in {}", b.join(", "), names[i]));
                }
                out.push(format!(
                    "workload `{w}`: phases differ: {}",
                    parts.join("; ")
                ));
            }
        }
    }
    out
}

/// Whether `dir` looks like a results directory (for error messages).
pub fn is_results_dir(dir: &Path) -> bool {
    dir.join(store::TRIALS).exists()
}
