//! `jbench compare`: configurations of several results directories side by side.
//!
//! [`merge`] loads each directory's trials, renames every configuration
//! `<dir-name>:<label>` and returns one set of records that [`crate::report`] (or
//! any other renderer, such as an HTML report) analyses like a single run's. What
//! does not line up between the runs (a workload missing from some, the same workload
//! name with other parameters, phases recorded by some runs only) is returned as
//! warnings, and nothing is dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::report::ReportOptions;
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
pub struct Merged {
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

impl Merged {
    /// Report options for the merged records. `baseline` is a prefixed label, or a
    /// label of the first source that has it; default: the first source's baseline,
    /// else the first configuration.
    pub fn report_options(&self, baseline: Option<&str>) -> Result<ReportOptions> {
        let baseline = match baseline {
            Some(b) => Some(self.find_label(b)?),
            None => self
                .sources
                .iter()
                .find_map(|s| s.baseline.as_ref().map(|b| format!("{}:{b}", s.name)))
                .filter(|b| self.config_order.contains(b)),
        };
        Ok(ReportOptions {
            suspect_below_secs: self.suspect_below_secs,
            baseline,
            config_order: self.config_order.clone(),
            workload_order: self.workload_order.clone(),
            noise_band: self.noise_band,
            // The most looks any source could have taken: correcting every p for it
            // is conservative for the sources that took fewer.
            adaptive_looks: self.sources.iter().filter_map(|s| s.adaptive_looks).max(),
            main_phases: self.main_phases.clone(),
            // A pair inside one run is decided as that run's own report decides it.
            runs: self
                .sources
                .iter()
                .map(|s| crate::analysis::RunScope {
                    name: s.name.clone(),
                    labels: self
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

    fn find_label(&self, wanted: &str) -> Result<String> {
        if self.config_order.iter().any(|l| l == wanted) {
            return Ok(wanted.to_string());
        }
        let suffix = format!(":{wanted}");
        match self.config_order.iter().find(|l| l.ends_with(&suffix)) {
            Some(l) => Ok(l.clone()),
            None => bail!(
                "no configuration `{wanted}` in the compared runs (labels: {})",
                self.config_order.join(", ")
            ),
        }
    }
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

/// Loads and merges results directories; see the module documentation.
pub fn merge(dirs: &[PathBuf]) -> Result<Merged> {
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
        let mut records = store::load_records(dir)
            .with_context(|| format!("cannot load the trials of {}", dir.display()))?;
        // A merged directory of shards from different machines is already several
        // groups: they stay apart here too.
        if let Some(m) = crate::scale::merge::read_merge(dir)? {
            m.relabel(&mut records);
            warnings.extend(
                m.warnings(&records)
                    .into_iter()
                    .map(|w| format!("{name}: {w}")),
            );
        }
        let spec = match crate::experiment::spec::load(&dir.join(store::SPEC)) {
            Ok(s) => Some(s),
            Err(e) => {
                warnings.push(format!(
                    "{name}: cannot read its experiment ({e}); configurations in trial order"
                ));
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
    Ok(Merged {
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

/// The merged comparison rendered like `jbench report`, the mismatch warnings first
/// for the text formats (CSV and JSON carry data only; the caller prints the warnings
/// elsewhere).
pub fn render(merged: &Merged, opts: &ReportOptions, format: crate::report::Format) -> String {
    use crate::report::Format;
    let body = crate::report::render(&merged.records, opts, format);
    let header = match format {
        Format::Table => {
            let mut h = format!(
                "Compared runs: {}\n",
                merged
                    .sources
                    .iter()
                    .map(|s| format!("{} ({})", s.name, s.dir.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !merged.warnings.is_empty() {
                h.push_str("Mismatches between the runs:\n");
                for w in &merged.warnings {
                    h.push_str(&format!("  - {w}\n"));
                }
            }
            h.push('\n');
            h
        }
        Format::Markdown => {
            let mut h = String::from("# jbench comparison\n\n");
            for s in &merged.sources {
                h.push_str(&format!("- `{}`: {}\n", s.name, s.dir.display()));
            }
            if !merged.warnings.is_empty() {
                h.push_str("\n### Mismatches between the runs\n\n");
                for w in &merged.warnings {
                    h.push_str(&format!("- {w}\n"));
                }
            }
            h.push('\n');
            h
        }
        Format::Csv | Format::Json => String::new(),
    };
    format!("{header}{body}")
}

/// Whether `dir` looks like a results directory (for error messages).
pub fn is_results_dir(dir: &Path) -> bool {
    dir.join(store::TRIALS).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Format;
    use crate::run::adaptive::tests::rec;

    const SPEC: &str = "name = \"x\"\nrepetitions = 3\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = [\"internal\", \"ramdisk\"]\n[[workload]]\nkind = \"fdtree\"\nname = \"w\"\ndirs = 2\nlevels = 2\n";

    /// A results directory `name` with the given (label, workload, rate) trials.
    #[test]
    fn a_trial_number_too_large_to_offset_is_refused_not_wrapped() {
        let tmp = tempfile::tempdir().unwrap();
        let a = results(tmp.path(), "a", &[("internal", "w", 1.0)]);
        let b = results(tmp.path(), "b", &[("internal", "w", 1.0)]);
        let mut r = rec(usize::MAX, "internal", "w", 1.0);
        r.rep = 2;
        let text = serde_json::to_string(&r).unwrap() + "\n";
        std::fs::write(b.join(store::TRIALS), text).unwrap();
        let err = format!("{:#}", merge(&[a, b]).unwrap_err());
        assert!(err.contains("too large to merge"), "{err}");
    }

    fn results(root: &Path, name: &str, trials: &[(&str, &str, f64)]) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = crate::experiment::spec::parse(SPEC, "x").unwrap();
        std::fs::write(dir.join(store::SPEC), &spec.resolved).unwrap();
        let mut text = String::new();
        for (i, (label, w, rate)) in trials.iter().enumerate() {
            text.push_str(&serde_json::to_string(&rec(i, label, w, *rate)).unwrap());
            text.push('\n');
        }
        std::fs::write(dir.join(store::TRIALS), text).unwrap();
        dir
    }

    fn three(
        label: &'static str,
        w: &'static str,
        rate: f64,
    ) -> Vec<(&'static str, &'static str, f64)> {
        [0.99, 1.0, 1.01]
            .iter()
            .map(|k| (label, w, rate * k))
            .collect()
    }

    #[test]
    fn two_runs_are_compared_with_prefixed_labels_verdicts_and_mismatches() {
        let tmp = tempfile::tempdir().unwrap();
        let mut a = three("internal", "w", 1000.0);
        a.extend(three("ramdisk", "w", 1500.0));
        a.extend(three("internal", "only-a", 500.0));
        let mut b = three("internal", "w", 1200.0);
        b.extend(three("ramdisk", "w", 1000.0));
        let da = results(tmp.path(), "hdd", &a);
        let db = results(tmp.path(), "ssd", &b);
        let m = merge(&[da.clone(), db.clone()]).unwrap();
        assert_eq!(
            m.config_order,
            ["hdd:internal", "hdd:ramdisk", "ssd:internal", "ssd:ramdisk"]
        );
        assert_eq!(m.records.len(), 15);
        assert!(m.records.iter().all(|r| r.config.label.contains(':')));
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
        assert!(
            m.warnings[0].contains("workload `only-a` is only in hdd (not in ssd)"),
            "{:?}",
            m.warnings
        );
        let opts = m.report_options(None).unwrap();
        assert_eq!(
            opts.baseline, None,
            "the report picks the first: hdd:internal"
        );
        let text = render(&m, &opts, Format::Table);
        assert!(text.starts_with("Compared runs: hdd ("), "{text}");
        let warn = text.find("only-a` is only in hdd").unwrap();
        assert!(warn < text.find("== Workload").unwrap(), "warnings first");
        assert!(text.contains("Verdicts (rate vs hdd:internal"), "{text}");
        assert!(
            text.contains("  hdd:ramdisk: file_create 50.0% faster"),
            "{text}"
        );
        assert!(
            text.contains("  ssd:internal: file_create 20.0% faster"),
            "{text}"
        );
        assert!(
            text.contains("  ssd:ramdisk: no meaningful difference in file_create")
                || text.contains("  ssd:ramdisk: no significant difference in file_create"),
            "{text}"
        );
        // Another baseline, by its plain label (the first run that has it).
        let opts = m.report_options(Some("ssd:internal")).unwrap();
        assert_eq!(opts.baseline.as_deref(), Some("ssd:internal"));
        let opts = m.report_options(Some("ramdisk")).unwrap();
        assert_eq!(opts.baseline.as_deref(), Some("hdd:ramdisk"));
        assert!(m.report_options(Some("zram")).is_err());
        let csv = render(&m, &opts, Format::Csv);
        assert!(csv.starts_with("workload,"), "{csv}");
        assert!(csv.contains("ssd:ramdisk"), "{csv}");
    }

    /// A pair inside one run is decided in `jbench compare` exactly as that run's
    /// own report decides it: same family, same adjusted p, same interval.
    #[test]
    fn report_and_compare_agree_on_every_pair_both_show() {
        let mut seed: u64 = 0x5eed;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let labels = ["internal", "ramdisk", "zram"];
        let mut checked = 0;
        for round in 0..25 {
            let tmp = tempfile::tempdir().unwrap();
            let mut runs = Vec::new();
            for name in ["hdd", "ssd"] {
                let mut trials = Vec::new();
                for l in labels {
                    let centre = 800.0 + 600.0 * next();
                    for _ in 0..2 + (next() * 4.0) as usize {
                        trials.push((l, "w", centre * (0.9 + 0.2 * next())));
                    }
                }
                runs.push(results(tmp.path(), name, &trials));
            }
            let m = merge(&runs).unwrap();
            let opts = m.report_options(None).unwrap();
            let together = crate::analysis::analyse(&m.records, &opts);
            let pairs = &together.workloads[0].pairs;
            for (dir, name) in runs.iter().zip(["hdd", "ssd"]) {
                let own = crate::analysis::analyse(
                    &store::load_records(dir).unwrap(),
                    &ReportOptions {
                        config_order: labels.iter().map(|l| l.to_string()).collect(),
                        ..ReportOptions::default()
                    },
                );
                for p in &own.workloads[0].pairs {
                    let prefixed = |l: &str| format!("{name}:{l}");
                    let q = pairs
                        .iter()
                        .find(|q| q.a == prefixed(&p.a) && q.b == prefixed(&p.b))
                        .unwrap_or_else(|| panic!("round {round}: {p:?} not compared"));
                    assert_eq!(q.family, format!("primary (run {name})"));
                    assert_eq!(
                        (q.p, q.p_adjusted, q.ci_level, q.different),
                        (p.p, p.p_adjusted, p.ci_level, p.different),
                        "round {round}"
                    );
                    assert_eq!((q.ci_low, q.ci_high), (p.ci_low, p.ci_high));
                    checked += 1;
                }
            }
            // Pairs across the runs are a family of their own.
            assert!(pairs.iter().any(|q| q.family == "primary (across runs)"));
        }
        assert_eq!(checked, 25 * 2 * 3);
    }

    #[test]
    fn the_same_workload_name_with_other_parameters_is_kept_apart_and_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let da = results(tmp.path(), "run", &three("internal", "w", 1000.0));
        let other = tmp.path().join("other");
        let db = results(&other, "run", &three("internal", "w", 1000.0));
        // Change the second run's workload parameters.
        let text = std::fs::read_to_string(db.join(store::TRIALS))
            .unwrap()
            .replace("\"dirs\":2", "\"dirs\":5");
        std::fs::write(db.join(store::TRIALS), text).unwrap();
        let m = merge(&[da, db]).unwrap();
        assert_eq!(m.sources[1].name, "run-2", "names are made unique");
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
        assert!(
            m.warnings[0].contains("workload `w` differs between run"),
            "{:?}",
            m.warnings
        );
        assert!(m.warnings[0].contains("`w [run-2]`"), "{:?}", m.warnings);
        assert_eq!(m.workload_order, ["w", "w [run-2]"]);
        assert_eq!(m.records.len(), 6, "nothing is dropped");
        assert!(merge(&[tmp.path().join("run")]).is_err());
        assert!(is_results_dir(&tmp.path().join("run")));
    }
}
