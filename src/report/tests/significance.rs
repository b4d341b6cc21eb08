//! Comparisons and verdicts: Welch, Holm, adaptive looks, Mann-Whitney, verdict lines.

use super::*;

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
    // dir_create is a secondary phase (fdtree's main phase is file_create): a family of
    // 2 configurations x 3 phases. Its smallest p is tested at 0.05 / 6, so its
    // interval is Fieller's at 1 - 0.05 / 6.
    let level = 1.0 - 0.05 / 6.0;
    assert!((fast.ci_level.unwrap() - level).abs() < 1e-12);
    let ci = ratio::fieller(&FAST, &BASE, level).unwrap();
    assert!((fast.ci_low_pct.unwrap() - (ci.low - 1.0) * 100.0).abs() < 1e-9);
    assert!((fast.ci_high_pct.unwrap() - (ci.high.unwrap() - 1.0) * 100.0).abs() < 1e-9);
    assert!(fast.significant);
    assert!(!fast.suspect);
    assert_eq!(fast.verdict, "20.0% faster [+15.7%, +24.5%] at 99.17%");
    // scipy: p = 0.004797999699128048 for [900, 880, 920] vs BASE.
    let slow = comparison(&a, "small", "second-disk", "dir_create");
    assert!((slow.p.unwrap() - 0.004797999699128048).abs() < 1e-9);
    assert!(
        slow.verdict.starts_with("10.0% slower ["),
        "{}",
        slow.verdict
    );
    // The next smallest p of the family is tested at 0.05 / 5.
    assert!((slow.ci_level.unwrap() - 0.99).abs() < 1e-12);
    let slow_ci = ratio::fieller(&[900.0, 880.0, 920.0], &BASE, 0.99).unwrap();
    let text = render(&recs, &opts(), Format::Table);
    let cell = |pct: &str, ci: ratio::RatioCi, level: &str, p: &str| {
        format!(
            "{pct} {} at {level} different {p}",
            fmt_pct_ci((ci.low - 1.0) * 100.0, ci.high.map(|h| (h - 1.0) * 100.0))
        )
    };
    assert!(
        text.contains(&cell("+20.0%", ci, "99.17%", "p<0.001")),
        "{text}"
    );
    assert!(
        text.contains(&cell("-10.0%", slow_ci, "99%", "p=0.005, adjusted p=0.024")),
        "{text}"
    );
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
    // scipy.stats.ttest_ind(other, base, equal_var=False): p = 0.32056416876097554.
    assert!((c.p.unwrap() - 0.32056416876097554).abs() < 1e-9);
    assert!((c.pct.unwrap() - 2.2).abs() < 1e-9);
    // The smallest p of a secondary family of 3, not significant: Holm stops there,
    // so its interval is at 1 - 0.05 / 3, and it holds 1.
    assert!((c.ci_level.unwrap() - (1.0 - 0.05 / 3.0)).abs() < 1e-12);
    assert!(
        c.ci_low_pct.unwrap() < 0.0 && c.ci_high_pct.unwrap() > 0.0,
        "{c:?}"
    );
    assert!(!c.significant);
    assert_eq!(
        c.verdict,
        "undecided against ±2% (+2.2% [-4.1%, +9.0%] at 98.3% reaches across the band)"
    );
}

/// Holm over the phase's family: a raw p of about 0.03 that alone would be "faster"
/// is not significant among 12 secondary comparisons.
#[test]
fn a_p_of_003_among_many_comparisons_is_no_longer_significant() {
    let base = [1000.0, 1050.0, 950.0, 1020.0, 980.0];
    let other = [1060.0, 1100.0, 1020.0, 1085.0, 1045.0];
    let mut alone = Vec::new();
    series(&mut alone, 0, "same-disk", "small", &base);
    series(&mut alone, 5, "ramdisk", "small", &other);
    // The other 2 secondary phases have p = 1, so alone the secondary family is
    // {p, 1, 1}: Holm gives 3p for the smallest.
    let mut many = alone.clone();
    series(&mut many, 10, "second-disk", "small", &base);
    series(&mut many, 15, "zram", "small", &base);
    series(&mut many, 20, "device", "small", &base);
    let a = analyse(&many, &opts());
    // Primary: every pair of the 5 configurations on file_create.
    assert_eq!(a.workloads[0].family_size, 10);
    let secondary = &a.workloads[0].families[1];
    assert_eq!((secondary.id.as_str(), secondary.size), ("secondary", 12));
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    let p = c.p.unwrap();
    assert!(p > 0.01 && p < 0.05, "raw p {p}");
    let adj = c.p_adjusted.unwrap();
    assert!(
        adj > 0.05 && (adj - (12.0 * p).min(1.0)).abs() < 1e-12,
        "{adj}"
    );
    assert!(!c.significant);
    // Not significant after Holm: its interval at the step's level holds 1, so it
    // reaches across the band's edge (the difference is tens of percent).
    assert_eq!(c.outcome, Outcome::Undecided);
    assert!(
        c.verdict.starts_with("undecided against ±2% ("),
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
        table.contains(
            "secondary = dir_create, file_remove, dir_remove (against the baseline: 12 tests)"
        ),
        "{table}"
    );
    let csv = render(&many, &opts(), Format::Csv);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains(",p_adjusted,outcome,rate_ci95_low,rate_ci95_high,"));
    assert!(
        csv.contains(&format!(",{p},")) && csv.contains(&format!(",{adj},undecided,")),
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
    assert_eq!(jc["outcome"], "undecided");
    assert_eq!(jc["decision"], "undecided");
    // Without the other configurations the family is {p, 1, 1}: Holm gives 3p.
    let a = analyse(&alone, &opts());
    let c = comparison(&a, "small", "ramdisk", "dir_create");
    assert!((c.p_adjusted.unwrap() - 3.0 * p).abs() < 1e-12, "{c:?}");
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
    let want = (f.p.unwrap() * 3.0 * 3.0).min(1.0);
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
        text.contains("adaptive: each p multiplied by the run's 3 possible looks"),
        "{text}"
    );
    assert_eq!(adaptive.adaptive_looks, Some(3));
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
        confidence: 0.95,
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
            phase_cmp("e", Some(0.5), Outcome::Undecided, false),
            phase_cmp("f", Some(0.5), Outcome::Equivalent, false),
        ],
    };
    assert_eq!(
            verdict_line(&c, 6, true, &words),
            "a* 12.3% slower (p=0.010); too few trials in b, d*; not comparable in c (baseline rate is 0); undecided against ±2% in e; equivalent within ±2% in f"
        );
    assert_eq!(
            verdict_line(&c, 6, false, &words),
            "a 12.3% slower (p=0.010); too few trials in b, d; not comparable in c (baseline rate is 0); undecided against ±2% in e; equivalent within ±2% in f"
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
