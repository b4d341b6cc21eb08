//! `jbench compare`'s tables: the compared runs and their mismatches above the report
//! of their records as one.

use super::{Format, ReportOptions};
use crate::results::compare::Compared;

/// The compared runs rendered like `jbench report`, the mismatch warnings first
/// for the text formats (CSV and JSON carry data only; the caller prints the warnings
/// elsewhere).
pub fn render(compared: &Compared, opts: &ReportOptions, format: Format) -> String {
    let body = super::render(&compared.records, opts, format);
    let header = match format {
        Format::Table => {
            let mut h = format!(
                "Compared runs: {}\n",
                compared
                    .sources
                    .iter()
                    .map(|s| format!("{} ({})", s.name, s.dir.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !compared.warnings.is_empty() {
                h.push_str("Mismatches between the runs:\n");
                for w in &compared.warnings {
                    h.push_str(&format!("  - {w}\n"));
                }
            }
            h.push('\n');
            h
        }
        Format::Markdown => {
            let mut h = String::from("# jbench comparison\n\n");
            for s in &compared.sources {
                h.push_str(&format!("- `{}`: {}\n", s.name, s.dir.display()));
            }
            if !compared.warnings.is_empty() {
                h.push_str("\n### Mismatches between the runs\n\n");
                for w in &compared.warnings {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::compare::{gather, is_results_dir};
    use crate::results::store;
    use crate::run::adaptive::tests::rec;
    use std::path::{Path, PathBuf};

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
        let err = format!("{:#}", gather(&[a, b]).unwrap_err());
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
        let m = gather(&[da.clone(), db.clone()]).unwrap();
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
        let opts = ReportOptions::of_comparison(&m, None).unwrap();
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
            text.contains("  ssd:ramdisk: equivalent within ±")
                || text.contains("  ssd:ramdisk: undecided against ±"),
            "{text}"
        );
        // Another baseline, by its plain label (the first run that has it).
        let opts = ReportOptions::of_comparison(&m, Some("ssd:internal")).unwrap();
        assert_eq!(opts.baseline.as_deref(), Some("ssd:internal"));
        let opts = ReportOptions::of_comparison(&m, Some("ramdisk")).unwrap();
        assert_eq!(opts.baseline.as_deref(), Some("hdd:ramdisk"));
        assert!(ReportOptions::of_comparison(&m, Some("zram")).is_err());
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
            let m = gather(&runs).unwrap();
            let opts = ReportOptions::of_comparison(&m, None).unwrap();
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
        let m = gather(&[da, db]).unwrap();
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
        assert!(gather(&[tmp.path().join("run")]).is_err());
        assert!(is_results_dir(&tmp.path().join("run")));
    }
}
