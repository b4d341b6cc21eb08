//! The analysis the report renders: grouping, ordering, per-phase statistics, failed trials, baselines.

use super::*;

#[test]
fn groups_and_orders_by_trial_index_not_input_order() {
    // Plan order: b/deep(0) a/deep(1) b/small(2) a/small(3) b/deep(4) a/deep(5) ...
    let mut recs = vec![
        rec(5, 2, "a", "deep", [900.0; 4]),
        rec(3, 1, "a", "small", [900.0; 4]),
        rec(0, 1, "b", "deep", [800.0; 4]),
        rec(2, 1, "b", "small", [800.0; 4]),
        rec(4, 2, "b", "deep", [800.0; 4]),
        rec(1, 1, "a", "deep", [900.0; 4]),
    ];
    recs.push(rec(6, 2, "b", "small", [800.0; 4]));
    let a = analyse(&recs, &opts());
    let workloads: Vec<&str> = a.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(workloads, ["deep", "small"]);
    for w in &a.workloads {
        let labels: Vec<&str> = w.configs.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["b", "a"], "workload {}", w.name);
        let phases: Vec<&str> = w.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            phases,
            ["dir_create", "file_create", "file_remove", "dir_remove"]
        );
    }
    assert_eq!(a.baseline.as_deref(), Some("b"));
    assert_eq!(find(&a, "deep", "a").ok, 2);
    assert_eq!(find(&a, "small", "a").ok, 1);
    let units: Vec<&str> = a.workloads[0]
        .phases
        .iter()
        .map(|p| p.rate_unit.as_str())
        .collect();
    assert_eq!(
        units,
        [
            "dir creates/s",
            "file creates/s",
            "file removals/s",
            "dir removals/s"
        ]
    );
    let has_bytes: Vec<bool> = a.workloads[0].phases.iter().map(|p| p.has_bytes).collect();
    assert_eq!(has_bytes, [false, true, false, false]);
}

#[test]
fn per_phase_statistics() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &[500.0, 600.0, 750.0]);
    let a = analyse(&recs, &opts());
    let p = &find(&a, "small", "same-disk").phases[0];
    assert_eq!(p.n, 3);
    // seconds = 600000 / rate = 1200, 1000, 800.
    let s = p.seconds.unwrap();
    assert!((s.mean - 1000.0).abs() < 1e-9);
    assert!((s.sd.unwrap() - 200.0).abs() < 1e-9);
    let r = p.rate.unwrap();
    assert!((r.mean - 616.666_666_666_666_6).abs() < 1e-9);
    assert!(p.kib_per_sec.is_none(), "dir_create moves no payload");
    let fc = &find(&a, "small", "same-disk").phases[1];
    // 600000 * 4096 bytes / 1024 / 600 s = 4000 KiB/s
    assert!((fc.kib_per_sec.unwrap().mean - 4000.0).abs() < 1e-9);
    assert!(!p.suspect);
}

#[test]
fn failed_trials_are_excluded_and_counted() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    recs.push(failed(
        rec(3, 4, "same-disk", "small", [1.0; 4]),
        "mkfs.ext4 exited with 1",
    ));
    let a = analyse(&recs, &opts());
    let c = find(&a, "small", "same-disk");
    assert_eq!((c.ok, c.failed), (3, 1));
    assert_eq!(c.phases[0].n, 3);
    assert!((c.phases[0].rate.unwrap().mean - 1000.0).abs() < 1e-9);
    let w = &a.workloads[0].warnings;
    assert!(
            w.contains(&"small/same-disk: 1 of 4 trials failed and are excluded from the statistics (first error: mkfs.ext4 exited with 1)".to_string()),
            "{w:?}"
        );
    let csv = render(&recs, &opts(), Format::Csv);
    let row = csv_rows(&csv)[1].clone();
    assert_eq!((row[3].as_str(), row[4].as_str()), ("3", "1"));
}

#[test]
fn configuration_with_only_failed_trials_still_listed() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    recs.push(failed(rec(3, 1, "ramdisk", "small", [1.0; 4]), "zram busy"));
    let a = analyse(&recs, &opts());
    let c = find(&a, "small", "ramdisk");
    assert_eq!((c.ok, c.failed), (0, 1));
    assert!(c.phases.iter().all(|p| p.n == 0 && p.seconds.is_none()));
    // The failed line already says "1 of 1": no second "no successful trials" line.
    assert_eq!(
            a.workloads[0].warnings,
            ["small/ramdisk: 1 of 1 trials failed and are excluded from the statistics (first error: zram busy)"]
        );
    assert_eq!(
        comparison(&a, "small", "ramdisk", "dir_create").verdict,
        "too few trials"
    );
    let text = render(&recs, &opts(), Format::Table);
    assert!(text.contains("0 (+1 failed)"), "{text}");
    assert!(
        text.contains("\n  ramdisk: too few trials in all phases\n"),
        "{text}"
    );
}

#[test]
fn explicit_and_unknown_baseline() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    let chosen = ReportOptions {
        baseline: Some("ramdisk".to_string()),
        ..opts()
    };
    let a = analyse(&recs, &chosen);
    assert_eq!(a.workloads[0].baseline.as_deref(), Some("ramdisk"));
    let c = comparison(&a, "small", "same-disk", "dir_create");
    assert!(c.verdict.starts_with("16.7% slower"), "{}", c.verdict);

    let unknown = ReportOptions {
        baseline: Some("nvram".to_string()),
        ..opts()
    };
    let a = analyse(&recs, &unknown);
    assert_eq!(a.baseline.as_deref(), Some("same-disk"));
    assert_eq!(
        a.warnings,
        ["baseline configuration `nvram` has no trials; comparing with `same-disk` instead"]
    );
}

#[test]
fn durable_times_become_phases_of_their_own() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    for r in &mut recs {
        r.phases[1].durable_seconds = Some(r.phases[1].seconds * 2.0);
    }
    let a = analyse(&recs, &opts());
    let names: Vec<&str> = a.workloads[0]
        .phases
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names.last(), Some(&"file_create+syncfs"), "{names:?}");
    let c = find(&a, "small", "same-disk");
    let plain = c.phases.iter().find(|p| p.phase == "file_create").unwrap();
    let durable = c
        .phases
        .iter()
        .find(|p| p.phase == "file_create+syncfs")
        .unwrap();
    let ratio = durable.seconds.as_ref().unwrap().mean / plain.seconds.as_ref().unwrap().mean;
    assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn the_experiment_order_beats_trial_order() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "ramdisk", "small", &FAST);
    series(&mut recs, 3, "same-disk", "small", &BASE);
    series(&mut recs, 6, "ramdisk", "deep", &FAST);
    series(&mut recs, 9, "same-disk", "deep", &BASE);
    let by_trial = analyse(&recs, &opts());
    assert_eq!(by_trial.baseline.as_deref(), Some("ramdisk"));
    let ordered = ReportOptions {
        config_order: vec!["same-disk".into(), "second-disk".into(), "ramdisk".into()],
        workload_order: vec!["deep".into(), "small".into()],
        ..opts()
    };
    let a = analyse(&recs, &ordered);
    assert_eq!(
        a.baseline.as_deref(),
        Some("same-disk"),
        "first of the matrix"
    );
    let names: Vec<&str> = a.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["deep", "small"]);
    let labels: Vec<&str> = a.workloads[0]
        .configs
        .iter()
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(
        labels,
        ["same-disk", "ramdisk"],
        "labels without trials are skipped"
    );
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    assert!(c.verdict.contains("faster"), "{}", c.verdict);
}

#[test]
fn invalid_confidence_falls_back() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    let a = analyse(
        &recs,
        &ReportOptions {
            confidence: 95.0,
            ..opts()
        },
    );
    assert_eq!(a.confidence, 0.95);
    assert_eq!(a.warnings.len(), 1);
}

#[test]
fn empty_input() {
    let a = analyse(&[], &opts());
    assert!(a.workloads.is_empty() && a.baseline.is_none());
    assert_eq!(a.warnings, ["no trial records: nothing to report"]);
    assert_eq!(render(&[], &opts(), Format::Csv).lines().count(), 1);
}
