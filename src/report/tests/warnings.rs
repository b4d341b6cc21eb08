//! Warnings: suspect phases, too few trials, high variance, excluded and failed trials, the FUSE floor.

use super::*;

#[test]
fn emulated_disks_answered_by_the_fuse_floor_are_warned_about() {
    use crate::emu::daemon::DiskStats;
    use crate::rig::emulated::EmulationRecord;
    let disk = |name: &str, model: &str, floor_bound, excess, response, late| DiskStats {
        name: name.into(),
        model: model.into(),
        writes: 1000,
        floor_bound,
        floor_excess_seconds: excess,
        response_seconds: response,
        late,
        ..DiskStats::default()
    };
    let measured = |floor_4k_us| {
        Some(crate::emu::daemon::PathCost {
            floor_4k_us,
            transport_4k_us: 20.0,
            io_4k_us: 3.0,
            floor_big_us: 300.0,
            transport_big_us: 280.0,
            io_big_us: 90.0,
            big_len: 1 << 20,
            ..Default::default()
        })
    };
    let mut records = Vec::new();
    for rep in 1..=2 {
        let journal = DiskStats {
            path: measured(20.0 + rep as f64 * 5.0),
            ..disk("journal", "ram", 1000, 0.05, 0.0, 50)
        };
        let mut r = rec(rep as usize, rep, "ramdisk", "w", [10.0, 20.0, 30.0, 40.0]);
        r.emulation = Some(EmulationRecord {
            disks: vec![
                // An hdd whose cached writes beat the floor: a sliver of its time.
                disk("fs", "hdd-7200", 300, 0.02, 5.0, 0),
                // A RAM disk: all of it is the path's.
                journal.clone(),
            ],
            ..EmulationRecord::default()
        });
        records.push(r);
    }
    let a = analyse(&records, &opts());
    let w = a.all_warnings();
    let floor: Vec<&String> = w.iter().filter(|l| l.contains("FUSE path")).collect();
    assert_eq!(floor.len(), 1, "{w:#?}");
    assert!(
        floor[0].contains("journal disk (ram)") && floor[0].contains("100%"),
        "{}",
        floor[0]
    );
    // The floor each trial measured, not a constant.
    assert!(
        floor[0].contains("25-30 µs per 4 KiB request, measured in each trial"),
        "{}",
        floor[0]
    );
    assert!(
        w.iter()
            .any(|l| l.contains("journal disk's daemon answered 100 of 2000")),
        "{w:#?}"
    );
    assert!(!w.iter().any(|l| l.contains("fs disk")), "{w:#?}");
}

/// Two configurations of four trials on an emulated hdd; trial 2 of `same-disk` took
/// 300 times as long as its siblings, and with `stalled` its daemon said why.
fn stall_records(stalled: bool) -> Vec<TrialRecord> {
    use crate::emu::daemon::DiskStats;
    use crate::rig::emulated::EmulationRecord;
    let mut records = Vec::new();
    for (k, label) in ["same-disk", "ramdisk"].iter().enumerate() {
        for rep in 1..=4u32 {
            let trial = k * 4 + rep as usize - 1;
            let rate = if trial == 2 { 4.0 } else { 1200.0 + rep as f64 };
            let mut r = rec(trial, rep, label, "small", [rate; 4]);
            let mut fs = DiskStats {
                name: "fs".into(),
                model: "hdd-7200".into(),
                writes: 1000,
                ..DiskStats::default()
            };
            if stalled && trial == 2 {
                fs.late = 1;
                fs.overdue = 1;
                fs.worst_late_ms = 191_400.0;
                fs.worst_late_at_seconds = 0.2;
                fs.slow_io = 1;
                fs.worst_io_ms = 191_350.0;
            }
            r.emulation = Some(EmulationRecord {
                disks: vec![fs],
                ..EmulationRecord::default()
            });
            records.push(r);
        }
    }
    records
}

#[test]
fn a_stalled_trial_is_excluded_and_named_in_every_format() {
    let mut records = stall_records(true);
    // What `jbench run` records: the trial failed, with the reason.
    let why = records[2].fail_if_stalled().expect("a stalled trial");
    assert!(records[2].is_stalled() && !records[2].is_ok());
    assert!(why.contains("emulated fs disk (hdd-7200)"), "{why}");
    let a = analyse(&records, &opts());
    let c = find(&a, "small", "same-disk");
    assert_eq!((c.ok, c.failed, c.stalled), (3, 1, 1));
    // Never averaged: the mean is the three siblings', not dragged down by the stall.
    let mean = c.phases[0].rate.unwrap().mean;
    assert!(
        (mean - (1201.0 + 1202.0 + 1204.0) / 3.0).abs() < 1e-9,
        "{mean}"
    );
    assert_eq!(find(&a, "small", "ramdisk").stalled, 0);

    let w = a.all_warnings();
    let line = w
        .iter()
        .find(|l| l.contains("STALLED"))
        .unwrap_or_else(|| panic!("{w:#?}"));
    assert_eq!(
        line,
        "small/same-disk: STALLED trial 2 (rep 3), excluded from the statistics: the device daemon stalled, so the times are the host's, not the model's: emulated fs disk (hdd-7200): 1 answer(s) more than 1 s past the model's deadline (worst 191.40 s late, due 0.20 s into the workload), 1 image I/O call(s) that blocked the daemon for more than 1 s (longest 191.35 s)"
    );
    assert!(
        w.contains(&"small/same-disk: 1 of 4 trials failed and are excluded from the statistics (1 because the device daemon stalled, below)".to_string()),
        "{w:#?}"
    );

    let text = render(&records, &opts(), Format::Table);
    assert!(text.contains("STALLED trial 2 (rep 3)"), "{text}");
    assert!(
        text.contains("; 1 trial(s) excluded because the device daemon stalled (see the warnings)"),
        "the Trust line says so: {text}"
    );
    let md = render(&records, &opts(), Format::Markdown);
    assert!(md.contains("STALLED trial 2 (rep 3)"), "{md}");

    let csv = render(&records, &opts(), Format::Csv);
    let rows = csv_rows(&csv);
    let col = CSV_HEADER.iter().position(|h| *h == "stalled").unwrap();
    let config = CSV_HEADER.iter().position(|h| *h == "config").unwrap();
    for row in &rows[1..] {
        let want = if row[config] == "same-disk" { "1" } else { "0" };
        assert_eq!(row[col], want, "{row:?}");
    }

    let json: serde_json::Value =
        serde_json::from_str(&render(&records, &opts(), Format::Json)).unwrap();
    let configs = &json["workloads"][0]["configs"];
    assert_eq!(configs[0]["label"], "same-disk");
    assert_eq!(configs[0]["stalled"], 1);
    assert_eq!(configs[1]["stalled"], 0);
    assert_eq!(
        json["workloads"][0]["summary"]["trust"]["stalled_trials"],
        1
    );
}

#[test]
fn a_stalled_record_is_never_averaged_even_if_written_ok() {
    // A record the runner did not fail (an older or edited file): the analysis does.
    let records = stall_records(true);
    assert!(records[2].is_ok());
    let a = analyse(&records, &opts());
    let c = find(&a, "small", "same-disk");
    assert_eq!((c.ok, c.failed, c.stalled), (3, 1, 1));
    assert!(a
        .all_warnings()
        .iter()
        .any(|l| l.contains("STALLED trial 2")));
}

#[test]
fn without_a_stall_the_slow_trial_is_an_ordinary_measurement() {
    // The counterpart: the same 300-times-slower trial, its daemon punctual. Nothing
    // flags it (only the spread shows), which is why the daemon must say when it stalled.
    let mut records = stall_records(false);
    assert_eq!(records[2].fail_if_stalled(), None);
    let a = analyse(&records, &opts());
    let c = find(&a, "small", "same-disk");
    assert_eq!((c.ok, c.failed, c.stalled), (4, 0, 0));
    let w = a.all_warnings();
    assert!(
        !w.iter()
            .any(|l| l.contains("stalled") || l.contains("STALLED")),
        "{w:#?}"
    );
    let text = render(&records, &opts(), Format::Table);
    assert!(!text.contains("stalled"), "{text}");
}

#[test]
fn suspect_phases_are_marked() {
    let mut recs = Vec::new();
    // dir_create at 20000 ops/s runs 30 s: suspect; the others run 600 s: not.
    for i in 0..3 {
        recs.push(rec(
            i,
            i as u32 + 1,
            "same-disk",
            "small",
            [20000.0, 1000.0, 1000.0, 1000.0],
        ));
    }
    for i in 3..6 {
        recs.push(rec(
            i,
            i as u32 - 2,
            "ramdisk",
            "small",
            [21000.0, 1000.0, 1001.0, 999.0],
        ));
    }
    let a = analyse(&recs, &opts());
    let c = find(&a, "small", "same-disk");
    let suspect: Vec<bool> = c.phases.iter().map(|p| p.suspect).collect();
    assert_eq!(suspect, [true, false, false, false]);
    // One line for the workload, grouped by phase.
    assert_eq!(
            a.workloads[0].warnings,
            ["small: 2 of 8 phase means are under the 60 s suspect threshold: dir_create (all configurations); do not draw conclusions from them"]
        );
    let listed: Vec<(&str, &str, String)> = a.workloads[0]
        .suspect_phases
        .iter()
        .map(|s| (s.config.as_str(), s.phase.as_str(), fmt_num(s.mean_seconds)))
        .collect();
    assert_eq!(
        listed,
        [
            ("same-disk", "dir_create", "30.00".to_string()),
            ("ramdisk", "dir_create", "28.57".to_string())
        ]
    );
    let cmp = comparison(&a, "small", "ramdisk", "dir_create");
    assert!(cmp.suspect);
    assert!(
        cmp.verdict.ends_with(" (suspect: phase < 60 s)"),
        "{}",
        cmp.verdict
    );
    assert!(!comparison(&a, "small", "ramdisk", "file_create").suspect);

    let text = render(&recs, &opts(), Format::Table);
    assert!(
        text.contains("same-disk      3  30.00 ± 0.00*  600.0 ± 0.0"),
        "{text}"
    );
    assert!(
        text.contains("20000 ± 0*"),
        "rates of a suspect phase are marked too"
    );
    assert!(
        text.contains("* suspect: mean phase time under 60 s"),
        "{text}"
    );
    // Only some comparisons are suspect: those phases carry a `*` in the verdict
    // line, explained once below it; the suffix is not repeated per phase.
    assert!(
        text.contains("\n  ramdisk: dir_create* 5.0% faster [+5.0%, +5.0%] (p<0.001); "),
        "{text}"
    );
    // 0.1% differences whose whole interval is inside the 2% band: equivalent.
    assert!(
        text.contains("; equivalent within ±2% in file_create, file_remove, dir_remove\n"),
        "{text}"
    );
    let c = comparison(&a, "small", "ramdisk", "file_remove");
    assert!(c.within_noise_band && !c.significant, "{c:?}");
    assert!(
        c.verdict
            .starts_with("equivalent within ±2% (+0.1% [+0.1%, +0.1%] at 97.5%)"),
        "{}",
        c.verdict
    );
    let strict = ReportOptions {
        noise_band: 0.0,
        ..opts()
    };
    let text = render(&recs, &strict, Format::Table);
    assert!(
        text.contains("\n  ramdisk: dir_create* 5.0% faster [+5.0%, +5.0%] (p<0.001), "),
        "without a band every significant difference counts: {text}"
    );
    assert!(
        text.contains("\n* involves a suspect phase: mean phase time under 60 s\n"),
        "{text}"
    );
    assert!(!text.contains("(suspect: phase < 60 s)"), "{text}");
    assert!(!text.contains("all comparisons below"), "{text}");
    // A lower threshold clears the mark.
    let lenient = ReportOptions {
        suspect_below_secs: 10.0,
        ..opts()
    };
    let a = analyse(&recs, &lenient);
    assert!(!find(&a, "small", "same-disk").phases[0].suspect);
    assert!(a.workloads[0].suspect_phases.is_empty());
    assert!(
        a.workloads[0].warnings.is_empty(),
        "{:?}",
        a.workloads[0].warnings
    );
}

/// One trial: no sd and no interval anywhere (null, "-", empty), not zeros.
#[test]
fn a_single_trial_has_no_spread_and_no_interval_in_any_format() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &[1000.0]);
    series(&mut recs, 1, "ramdisk", "small", &[1200.0]);
    let json: serde_json::Value =
        serde_json::from_str(&render(&recs, &opts(), Format::Json)).unwrap();
    let rate = &json["workloads"][0]["configs"][0]["phases"][0]["rate"];
    assert_eq!(rate["n"], 1);
    for k in ["sd", "ci95_low", "ci95_high"] {
        assert!(rate[k].is_null(), "{k}: {rate}");
    }
    let table = render(&recs, &opts(), Format::Table);
    assert!(table.contains("1000 ± -"), "{table}");
    let md = render(&recs, &opts(), Format::Markdown);
    assert!(md.contains("| same-disk | 1 | 1000 ± - |"), "{md}");
    let csv = render(&recs, &opts(), Format::Csv);
    let row = csv.lines().nth(1).unwrap();
    assert!(
        row.starts_with("small,same-disk,dir_create,1,0,600,,dir creates/s,1000,,"),
        "{row}"
    );
    // `stalled` is 0; the decision columns around it are empty.
    let cells: Vec<&str> = row.split(',').collect();
    let at = |name: &str| CSV_HEADER.iter().position(|h| *h == name).unwrap();
    assert_eq!(cells[at("stalled")], "0", "{row}");
    for empty in ["vs_baseline_ci_level", "family", "decision", "answer_marks"] {
        assert_eq!(cells[at(empty)], "", "no interval, no {empty}: {row}");
    }
    let a = analyse(&recs, &opts());
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    assert_eq!(
        (c.verdict.as_str(), c.outcome),
        ("too few trials", Outcome::TooFewTrials)
    );
}

/// A run that measured nothing says so, and no verdict line is empty.
#[test]
fn every_trial_failed_is_said_and_verdicts_are_never_empty() {
    let mut recs = Vec::new();
    for (i, label) in ["same-disk", "ramdisk", "same-disk", "ramdisk"]
        .iter()
        .enumerate()
    {
        let mut r = failed(rec(i, 1, label, "small", BASE_ROW), "mkfs failed: no space");
        r.phases.clear();
        recs.push(r);
    }
    let a = analyse(&recs, &opts());
    assert!(
        a.warnings
            .iter()
            .any(|w| w.starts_with("every trial failed (4 of 4): mkfs failed: no space")),
        "{:?}",
        a.warnings
    );
    assert!(every_trial_failed(&recs).is_some());
    for format in [Format::Table, Format::Markdown] {
        let text = render(&recs, &opts(), format);
        assert!(text.contains("every trial failed"), "{text}");
        let verdicts: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  ramdisk: ") || l.starts_with("- `ramdisk`: "))
            .collect();
        assert_eq!(verdicts.len(), 1, "{text}");
        assert!(
            verdicts[0]
                .trim_end()
                .ends_with("nothing to compare: no phase was measured by a successful trial"),
            "{text}"
        );
    }
    // Only failed trials on one side: "too few trials", not an empty verdict.
    let mut some = Vec::new();
    series(&mut some, 0, "same-disk", "small", &BASE);
    for i in 0..2 {
        some.push(failed(rec(3 + i, 1, "ramdisk", "small", BASE_ROW), "boom"));
    }
    let a = analyse(&some, &opts());
    assert!(every_trial_failed(&some).is_none());
    let words = Wording::of(&a.workloads[0], &a);
    for c in &a.workloads[0].comparisons {
        for p in &c.phases {
            assert_eq!(words.verdict(p), "too few trials");
        }
    }
}

/// A record the reader excluded is named in a run-wide warning.
#[test]
fn excluded_records_are_warned_about() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    let mut bad = rec(3, 4, "same-disk", "small", BASE_ROW);
    bad.phases[0].seconds = 0.0;
    assert!(bad.exclude_if_invalid().is_some());
    recs.push(bad);
    let a = analyse(&recs, &opts());
    assert!(
        a.warnings.iter().any(|w| w
            .starts_with("1 invalid trial record(s) excluded from the statistics")
            && w.contains("seconds = 0")),
        "{:?}",
        a.warnings
    );
    assert_eq!(find(&a, "small", "same-disk").ok, 3);
}

#[test]
fn too_few_trials_and_single_trial_warning() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &[900.0]);
    let a = analyse(&recs, &opts());
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    assert_eq!(c.verdict, "too few trials");
    assert_eq!((c.n_baseline, c.n_other), (3, 1));
    assert!(c.p.is_none());
    assert!((c.pct.unwrap() + 10.0).abs() < 1e-9, "means still compared");
    assert!(a.workloads[0].warnings.contains(
        &"small/ramdisk: only 1 successful trial: no spread and no comparison possible".to_string()
    ));
}

#[test]
fn high_variance_is_warned_once_per_workload() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &[600.0, 1000.0, 800.0]);
    series(&mut recs, 3, "second-disk", "small", &BASE);
    // file_create: sd 104 / mean 1000 = 10.4%; file_remove: 500 / 1000 = 50%.
    for (k, (fc, fr)) in [(896.0, 500.0), (1104.0, 1500.0), (1000.0, 1000.0)]
        .into_iter()
        .enumerate()
    {
        recs.push(rec(
            6 + k,
            k as u32 + 1,
            "ramdisk",
            "small",
            [1000.0, fc, fr, 1000.0],
        ));
    }
    let a = analyse(&recs, &opts());
    // sd 200 / mean 800 = 25%. second-disk (1%) is left out; 10.4% keeps its
    // decimal so it does not read as "10% (> 10%)".
    assert_eq!(
            a.workloads[0].warnings,
            ["small: high variance (rate CV > 10%): same-disk dir_create 25%; ramdisk file_create 10.4%, file_remove 50%"]
        );
    let high: Vec<(&str, &str, String)> = a.workloads[0]
        .high_variance
        .iter()
        .map(|h| (h.config.as_str(), h.phase.as_str(), format!("{:.4}", h.cv)))
        .collect();
    assert_eq!(
        high,
        [
            ("same-disk", "dir_create", "0.2500".to_string()),
            ("ramdisk", "file_create", "0.1040".to_string()),
            ("ramdisk", "file_remove", "0.5000".to_string())
        ]
    );
    let text = render(&recs, &opts(), Format::Table);
    assert_eq!(text.matches("high variance").count(), 1, "{text}");
}

#[test]
fn all_suspect_workload_is_summed_up_once() {
    // Like a real run that was too small: every phase takes 6-12 s.
    let mut recs = Vec::new();
    let mut trial = 0;
    let mut push = |label: &str, rates: [[f64; 4]; 3]| {
        for (k, r) in rates.into_iter().enumerate() {
            recs.push(rec(trial, k as u32 + 1, label, "small", r));
            trial += 1;
        }
    };
    let scaled = |f: [f64; 3], g: [f64; 3]| -> [[f64; 4]; 3] {
        [0, 1, 2].map(|t| {
            [
                100_000.0 * f[t],
                50_000.0 * f[t],
                100_000.0 * g[t],
                100_000.0 * g[t],
            ]
        })
    };
    let base = [1.0, 1.01, 0.99];
    push("same-disk", scaled(base, base));
    push(
        "second-disk",
        scaled([1.005, 0.995, 1.0], [1.2, 1.19, 1.21]),
    );
    push("ramdisk", scaled([1.0, 1.005, 0.995], [1.0, 1.005, 0.995]));
    let a = analyse(&recs, &opts());
    assert_eq!(a.workloads[0].suspect_phases.len(), 12);
    assert_eq!(
            a.workloads[0].warnings,
            ["small: all 12 phase means are under the 60 s suspect threshold (longest: file_create on same-disk, 12.00 s); do not draw conclusions from them"]
        );
    // The model keeps the per-phase verdicts and their suffix (CSV and JSON).
    let c = comparison(&a, "small", "second-disk", "file_remove");
    assert!(
        c.verdict.starts_with("20.0% faster [") && c.verdict.ends_with(" (suspect: phase < 60 s)"),
        "{}",
        c.verdict
    );
    let csv = render(&recs, &opts(), Format::Csv);
    assert!(
        csv.contains(&format!(",{},", crate::report::csv::csv_field(&c.verdict))),
        "{csv}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&render(&recs, &opts(), Format::Json)).unwrap();
    let first = &json["workloads"][0]["suspect_phases"][0];
    assert_eq!(
        (&first["config"], &first["phase"]),
        (&"same-disk".into(), &"dir_create".into())
    );
    assert!(
        (first["mean_seconds"].as_f64().unwrap() - 6.0).abs() < 0.01,
        "{first}"
    );
    assert_eq!(json["workloads"][0]["high_variance"], serde_json::json!([]));

    let text = render(&recs, &opts(), Format::Table);
    let verdicts: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Verdicts"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
            verdicts,
            [
                "Verdicts (rate vs same-disk, different when the whole interval lies outside ±2%, equivalent when it lies wholly inside, else undecided; each interval at the level its adjusted p is tested at (alpha 0.05); Holm within each family: primary = file_create (every pair of configurations: 3 tests); suspect = dir_create, file_remove, dir_remove (against the baseline, kept apart: 6 tests)):",
                "  (all comparisons below involve suspect phases: mean phase time under 60 s)",
                "  second-disk: file_remove 20.0% faster [+15.7%, +24.5%] at 99.17% (p<0.001), dir_remove 20.0% faster [+15.9%, +24.2%] at 99% (p<0.001); undecided against ±2% in dir_create, file_create",
                "  ramdisk: undecided against ±2% in all phases",
            ],
            "{text}"
        );
    assert!(!text.contains("(suspect: phase"), "{text}");
    // The summary ranks on a suspect main phase: every line says so where it is read.
    let summary: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("small: ranked"))
        .skip(1)
        .take(3)
        .collect();
    assert_eq!(summary.len(), 3, "{text}");
    for line in summary {
        assert!(
            line.contains("[suspect: file_create ran under the 60 s"),
            "{line}"
        );
    }
    let warnings: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Warnings:"))
        .collect();
    assert_eq!(warnings.len(), 1 + 1 + 1, "title, one line, blank:\n{text}");

    let md = render(&recs, &opts(), Format::Markdown);
    assert!(md.contains(
            "Verdicts (rate vs `same-disk`, different when the whole interval lies outside ±2%, equivalent when it lies wholly inside, else undecided; each interval at the level its adjusted p is tested at (alpha 0.05); Holm within each family: primary = file_create (every pair of configurations: 3 tests); suspect = dir_create, file_remove, dir_remove (against the baseline, kept apart: 6 tests)):\n\nAll comparisons below involve suspect phases: mean phase time under 60 s.\n\n- `second-disk`: file_remove 20.0% faster [+15.7%, +24.5%] at 99.17% (p<0.001), dir_remove 20.0% faster [+15.9%, +24.2%] at 99% (p<0.001); undecided against ±2% in dir_create, file_create\n- `ramdisk`: undecided against ±2% in all phases\n"
        ), "{md}");
}

#[test]
fn some_suspect_phases_are_grouped_by_phase() {
    let mut recs = Vec::new();
    // dir_create runs 6 s everywhere; file_remove 6 s on same-disk and ramdisk only.
    for (k, label) in ["same-disk", "second-disk", "ramdisk"].iter().enumerate() {
        let fr = if *label == "second-disk" {
            1000.0
        } else {
            100_000.0
        };
        for t in 0..2 {
            recs.push(rec(
                2 * k + t,
                t as u32 + 1,
                label,
                "small",
                [100_000.0, 1000.0, fr, 1000.0],
            ));
        }
    }
    let a = analyse(&recs, &opts());
    assert_eq!(
            a.workloads[0].warnings,
            ["small: 5 of 12 phase means are under the 60 s suspect threshold: dir_create (all configurations), file_remove (same-disk, ramdisk); do not draw conclusions from them"]
        );
    // A configuration without measurements does not count: dir_create is then
    // suspect on the three that have one, named one by one.
    recs.push(failed(rec(6, 1, "zram", "small", [1.0; 4]), "zram busy"));
    let a = analyse(&recs, &opts());
    assert_eq!(
            a.workloads[0].warnings[1],
            "small: 5 of 12 phase means are under the 60 s suspect threshold: dir_create (same-disk, second-disk, ramdisk), file_remove (same-disk, ramdisk); do not draw conclusions from them"
        );

    // Singular forms.
    let one = vec![rec(
        0,
        1,
        "same-disk",
        "small",
        [20_000.0, 1000.0, 1000.0, 1000.0],
    )];
    let a = analyse(&one, &opts());
    assert_eq!(
            a.workloads[0].warnings[1],
            "small: 1 of 4 phase means is under the 60 s suspect threshold: dir_create (same-disk); do not draw conclusions from it"
        );
    let mut only = one.clone();
    only[0].phases.truncate(1);
    let a = analyse(&only, &opts());
    assert_eq!(
            a.workloads[0].warnings[1],
            "small: the only phase mean (dir_create on same-disk, 30.00 s) is under the 60 s suspect threshold; do not draw conclusions from it"
        );
}
