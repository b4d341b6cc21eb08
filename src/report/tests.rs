//! Tests of the analysis and of the text, Markdown, CSV and JSON exporters.

use super::csv::{csv_field, CSV_HEADER};
use super::text::verdict_line;
use super::words::{fmt_alpha, fmt_level, p_expr, verdict_text, Wording};
use super::*;
use crate::analysis::warnings::fmt_cv;
use crate::analysis::warnings::fmt_num;
use crate::results::record::ConfigRecord;
use crate::results::record::{Status, SCHEMA_VERSION};
use crate::workload::PhaseResult;

/// fdtree's four phases; `create_bytes` is the payload of the file-create phase.
const PHASES: [(&str, &str); 4] = [
    ("dir_create", "dir creates"),
    ("file_create", "file creates"),
    ("file_remove", "file removals"),
    ("dir_remove", "dir removals"),
];
/// Long enough that rates around 1000 ops/s run 600 s, far above the 60 s rule.
const OPS: u64 = 600_000;

/// A trial whose every phase ran `OPS` operations at `rates[i]` ops/s (so
/// seconds = OPS / rate); the file-create phase moved `OPS` * 4 KiB.
fn rec(trial: usize, rep: u32, label: &str, workload: &str, rates: [f64; 4]) -> TrialRecord {
    let phases = PHASES
        .iter()
        .zip(rates)
        .map(|((name, unit), rate)| PhaseResult {
            name: name.to_string(),
            seconds: OPS as f64 / rate,
            ops: OPS,
            bytes: if *name == "file_create" {
                OPS * 4096
            } else {
                0
            },
            op_unit: unit.to_string(),
            ..PhaseResult::default()
        })
        .collect();
    TrialRecord {
        schema_version: SCHEMA_VERSION,
        trial,
        rep,
        config: ConfigRecord {
            label: label.to_string(),
            filesystem: "ext4".to_string(),
            fs_size: 1 << 30,
            placement: label.split(',').next().unwrap().to_string(),
            journal_size: 16 << 20,
            mode: "ordered".to_string(),
            mkfs_options: vec![],
            mount_options: vec![],
            fast_commit: false,
            commit_seconds: None,
            memory_limit: None,
            ramdisk_size: None,
            fs_device_model: None,
            journal_device_model: None,
        },
        workload: crate::results::record::WorkloadRecord {
            kind: "fdtree".to_string(),
            name: workload.to_string(),
            params: serde_json::json!({"dirs": 3}),
            durable: false,
        },
        layout: serde_json::Value::Null,
        verified: None,
        phases,
        memory: None,
        emulation: None,
        monitor: None,
        status: Status::Ok,
        error: None,
        started_at: "2024-01-01T00:00:00Z".to_string(),
        wall_seconds: 1.0,
    }
}

fn failed(mut r: TrialRecord, error: &str) -> TrialRecord {
    r.status = Status::Failed;
    r.error = Some(format!("{error}\nsecond line"));
    r
}

/// One trial per rate, trial indexes from `first`: dir_create runs at the given
/// rate, the other phases at 1000 ops/s.
fn series(out: &mut Vec<TrialRecord>, first: usize, label: &str, wl: &str, rates: &[f64]) {
    for (i, r) in rates.iter().enumerate() {
        out.push(rec(
            first + i,
            i as u32 + 1,
            label,
            wl,
            [*r, 1000.0, 1000.0, 1000.0],
        ));
    }
}

const BASE: [f64; 3] = [1000.0, 1010.0, 990.0];
const FAST: [f64; 3] = [1200.0, 1190.0, 1210.0];

#[test]
fn emulated_disks_answered_by_the_fuse_floor_are_warned_about() {
    use crate::emu::daemon::DiskStats;
    use crate::emu::host::EmulationRecord;
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
    let mut records = Vec::new();
    for rep in 1..=2 {
        let mut r = rec(rep as usize, rep, "ramdisk", "w", [10.0, 20.0, 30.0, 40.0]);
        r.emulation = Some(EmulationRecord {
            disks: vec![
                // An hdd whose cached writes beat the floor: a sliver of its time.
                disk("fs", "hdd-7200", 300, 0.02, 5.0, 0),
                // A RAM disk: all of it is the path's.
                disk("journal", "ram", 1000, 0.05, 0.0, 50),
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
    assert!(
        w.iter()
            .any(|l| l.contains("journal disk's daemon answered 100 of 2000")),
        "{w:#?}"
    );
    assert!(!w.iter().any(|l| l.contains("fs disk")), "{w:#?}");
}

fn opts() -> ReportOptions {
    ReportOptions::default()
}

fn find<'a>(a: &'a Analysis, wl: &str, cfg: &str) -> &'a ConfigAnalysis {
    let w = a.workloads.iter().find(|w| w.name == wl).unwrap();
    w.configs.iter().find(|c| c.label == cfg).unwrap()
}

/// A comparison of the model with its verdict in words, as the exporters write it.
#[derive(Debug)]
struct Worded<'a> {
    cmp: &'a PhaseComparison,
    verdict: String,
}

impl std::ops::Deref for Worded<'_> {
    type Target = PhaseComparison;
    fn deref(&self) -> &PhaseComparison {
        self.cmp
    }
}

fn comparison<'a>(a: &'a Analysis, wl: &str, cfg: &str, phase: &str) -> Worded<'a> {
    let w = a.workloads.iter().find(|w| w.name == wl).unwrap();
    let c = w.comparisons.iter().find(|c| c.config == cfg).unwrap();
    let cmp = c.phases.iter().find(|p| p.phase == phase).unwrap();
    let verdict = Wording::of(w, a).verdict(cmp);
    Worded { cmp, verdict }
}

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
        text.contains("\n  ramdisk: dir_create* 5.0% faster (p<0.001); "),
        "{text}"
    );
    // 0.1% differences are significant but inside the 2% noise band.
    assert!(
        text.contains("; no meaningful difference in file_remove, dir_remove\n"),
        "{text}"
    );
    let c = comparison(&a, "small", "ramdisk", "file_remove");
    assert!(c.within_noise_band && !c.significant, "{c:?}");
    assert!(
        c.verdict
            .starts_with("no meaningful difference (+0.1% is within the 2% noise band, p < 0.001"),
        "{}",
        c.verdict
    );
    let strict = ReportOptions {
        noise_band: 0.0,
        ..opts()
    };
    let text = render(&recs, &strict, Format::Table);
    assert!(
        text.contains("\n  ramdisk: dir_create* 5.0% faster (p<0.001), "),
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

#[test]
fn clearly_faster_configuration_is_faster() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    series(&mut recs, 6, "second-disk", "small", &[900.0, 880.0, 920.0]);
    let a = analyse(&recs, &opts());
    let fast = comparison(&a, "small", "ramdisk", "dir_create");
    assert!((fast.pct.unwrap() - 20.0).abs() < 1e-9);
    // scipy.stats.ttest_ind(FAST, BASE, equal_var=False): p = 1.6483088987181242e-05,
    // confidence_interval(0.95) / 1000 * 100 = [17.73304206447248, 22.26695793552752].
    assert!((fast.p.unwrap() - 1.6483088987181242e-05).abs() < 1e-9);
    assert!((fast.ci_low_pct.unwrap() - 17.73304206447248).abs() < 1e-6);
    assert!((fast.ci_high_pct.unwrap() - 22.26695793552752).abs() < 1e-6);
    assert!(fast.significant);
    assert!(!fast.suspect);
    assert_eq!(fast.verdict, "20.0% faster");
    // scipy: p = 0.004797999699128048 for [900, 880, 920] vs BASE.
    let slow = comparison(&a, "small", "second-disk", "dir_create");
    assert!((slow.p.unwrap() - 0.004797999699128048).abs() < 1e-9);
    assert_eq!(slow.verdict, "10.0% slower");
    let text = render(&recs, &opts(), Format::Table);
    assert!(text.contains("+20.0% [+17.7, +22.3] p<0.001"), "{text}");
    // scipy CI / 1000 * 100: [-14.155399503182503, -5.844600496817497].
    assert!(text.contains("-10.0% [-14.2, -5.8] p=0.005"), "{text}");
}

#[test]
fn noisy_similar_configurations_are_not_different() {
    let mut recs = Vec::new();
    series(
        &mut recs,
        0,
        "same-disk",
        "small",
        &[1000.0, 1050.0, 950.0, 1020.0, 980.0],
    );
    series(
        &mut recs,
        5,
        "ramdisk",
        "small",
        &[1030.0, 990.0, 1060.0, 1010.0, 1020.0],
    );
    let a = analyse(&recs, &opts());
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    // scipy.stats.ttest_ind(other, base, equal_var=False): p = 0.32056416876097554,
    // CI / mean(base) * 100 = [-2.662599087035003, 7.062599087035003].
    assert!((c.p.unwrap() - 0.32056416876097554).abs() < 1e-9);
    assert!((c.pct.unwrap() - 2.2).abs() < 1e-9);
    assert!((c.ci_low_pct.unwrap() + 2.662599087035003).abs() < 1e-6);
    assert!((c.ci_high_pct.unwrap() - 7.062599087035003).abs() < 1e-6);
    assert!(!c.significant);
    assert_eq!(
        c.verdict,
        "no significant difference (p = 0.32, adjusted p = 1.00)"
    );
}

/// Holm over the workload's family: a raw p of about 0.03 that alone would be
/// "faster" is not significant among 8 comparisons.
#[test]
fn a_p_of_003_among_many_comparisons_is_no_longer_significant() {
    let base = [1000.0, 1050.0, 950.0, 1020.0, 980.0];
    let other = [1060.0, 1100.0, 1020.0, 1085.0, 1045.0];
    let mut alone = Vec::new();
    series(&mut alone, 0, "same-disk", "small", &base);
    series(&mut alone, 5, "ramdisk", "small", &other);
    // The other 3 phases have p = 1, so alone the family is {p, 1, 1, 1}: Holm
    // gives 4p for the smallest.
    let mut many = alone.clone();
    series(&mut many, 10, "second-disk", "small", &base);
    series(&mut many, 15, "zram", "small", &base);
    series(&mut many, 20, "device", "small", &base);
    let a = analyse(&many, &opts());
    assert_eq!(a.workloads[0].family_size, 16);
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    let p = c.p.unwrap();
    assert!(p > 0.01 && p < 0.05, "raw p {p}");
    let adj = c.p_adjusted.unwrap();
    assert!(
        adj > 0.05 && (adj - (16.0 * p).min(1.0)).abs() < 1e-12,
        "{adj}"
    );
    assert!(!c.significant);
    assert_eq!(c.outcome, Outcome::NoSignificantDifference);
    assert!(
        c.verdict.starts_with(&format!(
            "no significant difference ({}, adjusted",
            p_expr(p, true)
        )),
        "{}",
        c.verdict
    );
    // Raw and adjusted p in every format.
    let table = render(&many, &opts(), Format::Table);
    assert!(
        table.contains(&format!(
            "{}, adjusted {}",
            p_expr(p, false),
            p_expr(adj, false)
        )),
        "{table}"
    );
    assert!(
        table.contains("adjusted with Holm over the 16 comparisons"),
        "{table}"
    );
    let csv = render(&many, &opts(), Format::Csv);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with(",p_adjusted,outcome,rate_ci95_low,rate_ci95_high"));
    assert!(
        csv.contains(&format!(",{p},"))
            && csv.contains(&format!(",{adj},no_significant_difference,")),
        "{csv}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&many, &opts(), Format::Json)).unwrap();
    let jc = &json["workloads"][0]["comparisons"][0]["phases"][0];
    assert!((jc["p"].as_f64().unwrap() - p).abs() < 1e-12, "{jc}");
    assert!(
        (jc["p_adjusted"].as_f64().unwrap() - adj).abs() < 1e-12,
        "{jc}"
    );
    assert_eq!(jc["outcome"], "no_significant_difference");
    // Without the other configurations the family is {p, 1, 1, 1}: Holm gives 4p.
    let a = analyse(&alone, &opts());
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    assert!((c.p_adjusted.unwrap() - 4.0 * p).abs() < 1e-12, "{c:?}");
}

/// Adaptive runs: p is multiplied by the number of possible looks before Holm,
/// and the verdict header says the p comes from a sequentially stopped run.
#[test]
fn adaptive_runs_correct_for_the_looks() {
    let mut recs = Vec::new();
    series(
        &mut recs,
        0,
        "same-disk",
        "small",
        &[1000.0, 1050.0, 950.0, 1020.0, 980.0],
    );
    series(
        &mut recs,
        5,
        "ramdisk",
        "small",
        &[1060.0, 1100.0, 1020.0, 1085.0, 1045.0],
    );
    let fixed = analyse(&recs, &opts());
    let adaptive = analyse(
        &recs,
        &ReportOptions {
            adaptive_looks: Some(3),
            ..opts()
        },
    );
    let f = comparison(&fixed, "small", "ramdisk", "dir_create");
    let s = comparison(&adaptive, "small", "ramdisk", "dir_create");
    assert_eq!(f.p, s.p);
    let want = (f.p.unwrap() * 3.0 * 4.0).min(1.0);
    assert!((s.p_adjusted.unwrap() - want).abs() < 1e-12, "{s:?}");
    let text = render(
        &recs,
        &ReportOptions {
            adaptive_looks: Some(3),
            ..opts()
        },
        Format::Table,
    );
    assert!(
        text.contains("adaptive: p from a sequentially stopped run"),
        "{text}"
    );
    assert_eq!(adaptive.adaptive_looks, Some(3));
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
    assert!(row.ends_with(",,"), "no interval: {row}");
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

const BASE_ROW: [f64; 4] = [1000.0; 4];

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
    assert_eq!(c.verdict, "20.0% faster (suspect: phase < 60 s)");
    let csv = render(&recs, &opts(), Format::Csv);
    assert!(
        csv.contains(",20.0% faster (suspect: phase < 60 s),"),
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
                "Verdicts (rate vs same-disk, significant when p < 0.05 after correction; adjusted with Holm over the 8 comparisons of this workload):",
                "  (all comparisons below involve suspect phases: mean phase time under 60 s)",
                "  second-disk: file_remove 20.0% faster (p<0.001), dir_remove 20.0% faster (p<0.001); no significant difference in dir_create, file_create",
                "  ramdisk: no significant difference in any phase",
            ],
            "{text}"
        );
    assert!(!text.contains("(suspect: phase"), "{text}");
    let warnings: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Warnings:"))
        .collect();
    assert_eq!(warnings.len(), 1 + 1 + 1, "title, one line, blank:\n{text}");

    let md = render(&recs, &opts(), Format::Markdown);
    assert!(md.contains(
            "Verdicts (rate vs `same-disk`, significant when p < 0.05 after correction; adjusted with Holm over the 8 comparisons of this workload):\n\nAll comparisons below involve suspect phases: mean phase time under 60 s.\n\n- `second-disk`: file_remove 20.0% faster (p<0.001), dir_remove 20.0% faster (p<0.001); no significant difference in dir_create, file_create\n- `ramdisk`: no significant difference in any phase\n"
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

fn phase_cmp(phase: &str, p: Option<f64>, outcome: Outcome, suspect: bool) -> PhaseComparison {
    let significant = matches!(outcome, Outcome::Faster | Outcome::Slower);
    PhaseComparison {
        phase: phase.to_string(),
        n_baseline: 3,
        n_other: 3,
        pct: significant.then_some(if outcome == Outcome::Faster {
            12.3
        } else {
            -12.3
        }),
        ci_low_pct: None,
        ci_high_pct: None,
        p,
        mann_whitney_p: None,
        significant,
        within_noise_band: false,
        suspect,
        p_adjusted: p,
        outcome,
    }
}

#[test]
fn mann_whitney_shows_with_four_trials_a_side_and_trial_counts_when_they_differ() {
    let mut recs = Vec::new();
    series(
        &mut recs,
        0,
        "same-disk",
        "w",
        &[1000.0, 1010.0, 990.0, 1005.0],
    );
    series(
        &mut recs,
        10,
        "ramdisk",
        "w",
        &[1200.0, 1190.0, 1210.0, 1195.0, 1205.0],
    );
    series(&mut recs, 20, "zram", "w", &[1200.0, 1190.0, 1210.0]);
    let a = analyse(&recs, &opts());
    let ram = comparison(&a, "w", "ramdisk", "dir_create");
    // Fully separated 4 vs 5: exact p = 2 / C(9, 4).
    assert!((ram.mann_whitney_p.unwrap() - 2.0 / 126.0).abs() < 1e-12);
    assert_eq!(
        comparison(&a, "w", "zram", "dir_create").mann_whitney_p,
        None
    );
    let text = render(&recs, &opts(), Format::Table);
    assert!(text.contains("p<0.001 (MW p=0.016)"), "{text}");
    assert!(
        text.contains("Trials per configuration: same-disk 4, ramdisk 5, zram 3\n"),
        "{text}"
    );
    let json = render(&recs, &opts(), Format::Json);
    assert!(json.contains("\"mann_whitney_p\""), "{json}");
}

#[test]
fn verdict_line_groups_by_verdict() {
    // "c"'s baseline rate is 0: not comparable for that reason.
    let words = Wording {
        noise_band: 0.02,
        suspect_below_secs: 60.0,
        zero_baseline_phases: vec!["c".to_string()],
    };
    let c = Comparison {
        config: "ramdisk".to_string(),
        baseline: "same-disk".to_string(),
        phases: vec![
            phase_cmp("a", Some(0.01), Outcome::Slower, true),
            phase_cmp("b", None, Outcome::TooFewTrials, false),
            phase_cmp("c", None, Outcome::NotComparable, false),
            phase_cmp("d", None, Outcome::TooFewTrials, true),
            phase_cmp("e", Some(0.5), Outcome::NoSignificantDifference, false),
        ],
    };
    assert_eq!(
            verdict_line(&c, 5, true, &words),
            "a* 12.3% slower (p=0.010); too few trials in b, d*; not comparable in c (baseline rate is 0); no significant difference in e"
        );
    assert_eq!(
            verdict_line(&c, 5, false, &words),
            "a 12.3% slower (p=0.010); too few trials in b, d; not comparable in c (baseline rate is 0); no significant difference in e"
        );
    let few = Comparison {
        phases: vec![
            phase_cmp("a", None, Outcome::TooFewTrials, false),
            phase_cmp("b", None, Outcome::TooFewTrials, true),
        ],
        ..c
    };
    assert_eq!(
        verdict_line(&few, 2, false, &words),
        "too few trials in all phases"
    );
    // A marker is never dropped with the names.
    assert_eq!(
        verdict_line(&few, 2, true, &words),
        "too few trials in a, b*"
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

/// Minimal RFC 4180 reader for the tests (quoted fields, doubled quotes).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(ch) = chars.next() {
            match (ch, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => row.push(std::mem::take(&mut field)),
                _ => field.push(ch),
            }
        }
        row.push(field);
        rows.push(row);
    }
    rows
}

#[test]
fn csv_header_and_rows() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "second-disk,256M", "small", &FAST);
    let csv = render(&recs, &opts(), Format::Csv);
    let rows = csv_rows(&csv);
    assert_eq!(rows[0], CSV_HEADER);
    assert_eq!(rows.len(), 1 + 2 * 4);
    assert!(rows.iter().all(|r| r.len() == 22));
    assert!(csv.contains("\"second-disk,256M\""), "label quoted");

    let base = &rows[1];
    assert_eq!(&base[..5], ["small", "same-disk", "dir_create", "3", "0"]);
    assert_eq!(base[7], "dir creates/s");
    assert!((base[8].parse::<f64>().unwrap() - 1000.0).abs() < 1e-9);
    assert!((base[9].parse::<f64>().unwrap() - 10.0).abs() < 1e-9);
    assert_eq!(base[10], "", "no KiB/s for dir_create");
    assert_eq!(base[12], "false");
    assert_eq!(base[13], "", "baseline has no difference to itself");
    assert_eq!(base[17], "baseline");
    let create = &rows[2];
    assert_eq!(create[2], "file_create");
    assert!((create[10].parse::<f64>().unwrap() - 4000.0).abs() < 1e-9);

    let other = &rows[5];
    assert_eq!(&other[1..3], ["second-disk,256M", "dir_create"]);
    let secs: f64 = other[5].parse().unwrap();
    assert!((secs - (500.0 + 600000.0 / 1190.0 + 600000.0 / 1210.0) / 3.0).abs() < 1e-9);
    assert_eq!(other[12], "false");
    assert!((other[13].parse::<f64>().unwrap() - 20.0).abs() < 1e-9);
    assert!((other[14].parse::<f64>().unwrap() - 17.73304206447248).abs() < 1e-6);
    assert!((other[15].parse::<f64>().unwrap() - 22.26695793552752).abs() < 1e-6);
    assert!((other[16].parse::<f64>().unwrap() - 1.6483088987181242e-05).abs() < 1e-9);
    assert_eq!(other[17], "20.0% faster");
}

#[test]
fn csv_quotes_fields() {
    assert_eq!(csv_field("plain"), "plain");
    assert_eq!(csv_field("a,b"), "\"a,b\"");
    assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
}

#[test]
fn markdown_has_the_tables() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk|64M", "small", &FAST);
    let md = render(&recs, &opts(), Format::Markdown);
    assert!(md.starts_with("# jbench report\n"), "{md}");
    assert!(md.contains("## Workload `small` (fdtree)"), "{md}");
    for heading in [
        "### Times (s), mean ± sd",
        "### Rates, mean ± sd",
        "### Compared with same-disk: rate difference of means [95% CI], Welch p",
    ] {
        assert!(md.contains(heading), "missing {heading}:\n{md}");
    }
    assert!(md.contains(
            "| configuration | n | dir_create | file_create | file_remove | dir_remove |\n| --- | ---: | ---: | ---: | ---: | ---: |"
        ), "{md}");
    assert!(md.contains(
            "| configuration | n | dir creates/s | file creates/s | file_create KiB/s | file removals/s | dir removals/s |"
        ), "{md}");
    assert!(
        md.contains("| same-disk | 3 | 600.0 ± 6.0 | 600.0 ± 0.0 |"),
        "{md}"
    );
    // The pipe in the label is escaped.
    assert!(md.contains("| ramdisk\\|64M | 3 | 500.0 ± 4.2 |"), "{md}");
    assert!(
        md.contains("| ramdisk\\|64M | 3 | 1200 ± 10 | 1000 ± 0 | 4000 ± 0 |"),
        "{md}"
    );
    assert!(
        md.contains("| ramdisk\\|64M | +20.0% [+17.7, +22.3] p<0.001 |"),
        "{md}"
    );
    assert!(md.contains(
            "Verdicts (rate vs `same-disk`, significant when p < 0.05 after correction; adjusted with Holm over the 4 comparisons of this workload):\n\n- `ramdisk|64M`: dir_create 20.0% faster (p<0.001); no significant difference in file_create, file_remove, dir_remove\n"
        ), "{md}");
    assert!(
        !md.contains("### Warnings"),
        "no warnings for clean data:\n{md}"
    );
}

#[test]
fn plain_table_columns_line_up_with_long_labels() {
    let mut recs = Vec::new();
    let labels = [
        "same-disk,16M",
        "second-disk,256M",
        "ramdisk,1G",
        "zram,64M",
    ];
    for (k, label) in labels.iter().enumerate() {
        let rates: Vec<f64> = BASE.iter().map(|r| r * (1.0 + k as f64 / 10.0)).collect();
        series(&mut recs, 3 * k, label, "small", &rates);
    }
    let text = render(&recs, &opts(), Format::Table);
    for title in ["Times (s)", "Rates", "Compared with"] {
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(title))
            .skip(1)
            .take_while(|l| !l.is_empty() && !l.starts_with('*'))
            .collect();
        let rows = if title == "Compared with" { 3 } else { 4 };
        assert_eq!(block.len(), 2 + rows, "{title}:\n{text}");
        let w = block[0].chars().count();
        assert!(
            block.iter().all(|l| l.chars().count() == w),
            "{title} not aligned:\n{}",
            block.join("\n")
        );
        // The label column is as wide as the longest label, then two spaces.
        let label_w = "second-disk,256M".len();
        for l in &block {
            let chars: Vec<char> = l.chars().collect();
            assert_eq!(chars[label_w..label_w + 2], [' ', ' '], "{title}: `{l}`");
        }
        assert!(block[1].starts_with(&"-".repeat(label_w)));
        if title == "Times (s)" {
            // Means and spreads line up on the "±".
            let at: Vec<Option<usize>> = block[2..]
                .iter()
                .map(|l| l.chars().position(|c| c == '±'))
                .collect();
            assert!(at.iter().all(|p| p.is_some() && *p == at[0]), "{at:?}");
        }
    }
    assert!(text.contains("second-disk,256M"));
}

#[test]
fn json_round_trips() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    let json = render(&recs, &opts(), Format::Json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["baseline"], "same-disk");
    assert_eq!(v["confidence"], 0.95);
    assert_eq!(v["suspect_below_secs"], 60.0);
    let w = &v["workloads"][0];
    assert_eq!(w["name"], "small");
    assert_eq!(w["kind"], "fdtree");
    assert_eq!(w["phases"][1]["rate_unit"], "file creates/s");
    assert_eq!(w["phases"][1]["has_bytes"], true);
    assert_eq!(w["configs"][0]["label"], "same-disk");
    assert_eq!(w["configs"][0]["config"]["placement"], "same-disk");
    assert_eq!(w["configs"][0]["phases"][0]["n"], 3);
    assert_eq!(w["configs"][0]["phases"][0]["rate"]["mean"], 1000.0);
    assert_eq!(
        w["configs"][0]["phases"][0]["kib_per_sec"],
        serde_json::Value::Null
    );
    assert_eq!(w["comparisons"][0]["config"], "ramdisk");
    assert_eq!(w["comparisons"][0]["phases"][0]["verdict"], "20.0% faster");
    // And back into the model. (serde_json's default float parser may differ from
    // the printed value in the last bit, so compare texts and a float with a
    // tolerance rather than the whole struct.)
    let back: Analysis = serde_json::from_str(&json).unwrap();
    let orig = analyse(&recs, &opts());
    assert_eq!(back.workloads[0].comparisons, orig.workloads[0].comparisons);
    assert_eq!(back.workloads[0].configs[1].label, "ramdisk");
    let mean = |a: &Analysis| a.workloads[0].configs[1].phases[0].rate.unwrap().mean;
    assert!((mean(&back) - mean(&orig)).abs() < 1e-9);
}

#[test]
fn formatting_helpers() {
    assert_eq!(p_expr(0.4123, true), "p = 0.41");
    assert_eq!(p_expr(0.0021, false), "p=0.002");
    assert_eq!(p_expr(1e-9, false), "p<0.001");
    assert_eq!(fmt_level(0.95), "95");
    assert_eq!(fmt_level(0.995), "99.5");
    assert_eq!(fmt_num(12345.6), "12346");
    assert_eq!(fmt_num(61.234), "61.23");
    assert_eq!(fmt_num(0.1234), "0.123");
    assert_eq!(verdict_text(0.04, 0.01, true), "0.04% faster");
    assert_eq!(fmt_cv(0.2549), "25%");
    assert_eq!(fmt_cv(0.104), "10.4%");
    assert_eq!(fmt_cv(0.1051), "11%");
    assert_eq!(fmt_alpha(1.0 - 0.95), "0.05");
    assert_eq!(fmt_alpha(1.0 - 0.995), "0.005");
}

/// The JSON export is the model, field for field and in the model's order, plus the
/// verdict in words before each outcome and the summary's lines (`text`, last in the
/// summary): a field added to the model but not to the JSON view fails here.
#[test]
fn json_export_is_the_model_plus_verdicts() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    series(&mut recs, 6, "zram", "small", &[900.0]);
    let a = analyse(&recs, &opts());
    let json = render_json(&a);
    let lines: Vec<&str> = json.lines().collect();
    let mut verdicts = Vec::new();
    let mut rest: Vec<&str> = Vec::new();
    let mut in_text = false;
    let mut texts = 0;
    for (i, line) in lines.iter().enumerate() {
        if in_text {
            in_text = line.trim() != "]";
            continue;
        }
        if line.trim_start().starts_with("\"text\": [") {
            // The field before it loses the comma the text made it need.
            let before = rest.pop().unwrap();
            rest.push(before.trim_end_matches(','));
            (in_text, texts) = (true, texts + 1);
            continue;
        }
        match line.trim_start().strip_prefix("\"verdict\": ") {
            Some(v) => {
                assert!(
                    lines[i + 1].trim_start().starts_with("\"outcome\": "),
                    "{json}"
                );
                verdicts.push(v.trim_end_matches(','));
            }
            None => rest.push(*line),
        }
    }
    let model = serde_json::to_string_pretty(&a).unwrap();
    assert_eq!(rest.join("\n"), model);
    assert_eq!(texts, a.workloads.len());
    assert_eq!(verdicts.len(), 2 * PHASES.len());
    assert!(verdicts.contains(&"\"20.0% faster\""), "{verdicts:?}");
    assert!(verdicts.contains(&"\"too few trials\""), "{verdicts:?}");
}

/// A `durable` workload doubles every phase with a `+syncfs` companion: each table
/// column must still say which phase it holds, in every format.
#[test]
fn every_column_of_a_durable_workload_names_its_phase() {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "small", &BASE);
    series(&mut recs, 3, "ramdisk", "small", &FAST);
    for r in &mut recs {
        r.workload.durable = true;
        for p in &mut r.phases {
            p.durable_seconds = Some(p.seconds * 1.5);
        }
    }
    let a = analyse(&recs, &opts());
    let w = &a.workloads[0];
    // (phase, operation, moves bytes) as the records name them, then the durable
    // companions the analysis derives from them.
    let plain: Vec<(String, String, bool)> = recs[0]
        .phases
        .iter()
        .map(|p| (p.name.clone(), p.op_unit.clone(), p.bytes > 0))
        .collect();
    let durable = plain
        .iter()
        .map(|(n, u, b)| (format!("{n}{DURABLE_SUFFIX}"), u.clone(), *b));
    let all: Vec<(String, String, bool)> = plain.iter().cloned().chain(durable).collect();
    let tables = text::workload_tables(w, &a);
    assert_eq!(tables.len(), 3, "times, rates, comparison");
    for t in &tables {
        let distinct: std::collections::BTreeSet<&String> = t.headers.iter().collect();
        assert_eq!(
            distinct.len(),
            t.headers.len(),
            "{}: {:?}",
            t.title,
            t.headers
        );
    }
    let (times, rates, compared) = (&tables[0].headers, &tables[1].headers, &tables[2].headers);
    for (name, unit, bytes) in &all {
        assert!(times.contains(name), "times lack {name}: {times:?}");
        assert!(
            compared.contains(name),
            "comparison lacks {name}: {compared:?}"
        );
        // The rate column speaks the phase's operation and says whether it is timed
        // up to syncfs; exactly one column fits each phase.
        let is_durable = name.ends_with(DURABLE_SUFFIX);
        let fits: Vec<&String> = rates
            .iter()
            .filter(|h| h.starts_with(&format!("{unit}/s")))
            .filter(|h| h.contains(DURABLE_SUFFIX) == is_durable)
            .collect();
        assert_eq!(fits.len(), 1, "{name}: {fits:?} in {rates:?}");
        let kib = format!("{name} KiB/s");
        assert_eq!(rates.contains(&kib), *bytes, "{kib} in {rates:?}");
    }
    let payload = all.iter().filter(|p| p.2).count();
    assert_eq!(rates.len(), 2 + all.len() + payload, "{rates:?}");
    // Text and Markdown print the very headers the HTML page gets.
    let md = render(&recs, &opts(), Format::Markdown);
    let text = render(&recs, &opts(), Format::Table);
    for t in &tables {
        assert!(
            md.contains(&format!("| {} |", t.headers.join(" | "))),
            "{md}"
        );
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with(t.title.as_str()))
            .nth(1)
            .unwrap_or_else(|| panic!("no {} in\n{text}", t.title));
        let words: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let want: Vec<&str> = t.headers.iter().map(String::as_str).collect();
        assert_eq!(words, want, "{text}");
    }
}

#[path = "summary_tests.rs"]
mod summary_tests;
