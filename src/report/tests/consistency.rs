//! Words and numbers follow one rule, for any data: a verdict's word follows where
//! its interval lies against the noise band (different: wholly outside; equivalent:
//! wholly inside; otherwise undecided), and the interval excludes 1 exactly when the
//! adjusted p is below alpha; a suspect main phase is marked on its line and never
//! chased by the adaptive rule; no
//! interval of a rate, a time or a ratio goes below 0 or misses its own point
//! estimate; and a suspect phase never changes another phase's adjusted p.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::analysis::Decision;

use super::*;

/// Per configuration, per trial, the four fdtree phase rates.
fn samples() -> impl Strategy<Value = Vec<Vec<[f64; 4]>>> {
    let rate = prop_oneof![1.0f64..5_000.0, 900.0f64..1_100.0];
    let trial = prop::array::uniform4(rate);
    prop::collection::vec(prop::collection::vec(trial, 1..6), 2..5)
}

fn records_of(data: &[Vec<[f64; 4]>]) -> Vec<TrialRecord> {
    let mut out = Vec::new();
    for (c, trials) in data.iter().enumerate() {
        for (i, rates) in trials.iter().enumerate() {
            out.push(rec(c * 10 + i, i as u32 + 1, &format!("c{c}"), "w", *rates));
        }
    }
    out
}

fn check_ci(low: Option<f64>, high: Option<f64>, point: Option<f64>, what: &str) {
    let Some(low) = low else {
        assert!(high.is_none(), "{what}: a high end without a low end");
        return;
    };
    assert!(low >= 0.0, "{what}: interval below 0: {low}");
    if let Some(p) = point {
        assert!(
            p >= low * (1.0 - 1e-12) && high.is_none_or(|h| p <= h * (1.0 + 1e-12)),
            "{what}: {p} outside [{low}, {high:?}]"
        );
    }
}

/// The band word a decision allows beside interval [low, high]: the whole interval
/// on its side of the band, or neither side wholly.
fn check_decision(
    decision: Option<Decision>,
    low: Option<f64>,
    high: Option<f64>,
    band: f64,
) -> Result<(), TestCaseError> {
    let Some(low) = low else {
        prop_assert!(
            decision.is_none(),
            "a word without an interval: {decision:?}"
        );
        return Ok(());
    };
    let (lo_edge, hi_edge) = crate::analysis::decision::band_edges(band);
    let outside = low > hi_edge || high.is_some_and(|h| h < lo_edge);
    let inside = low > lo_edge && high.is_some_and(|h| h < hi_edge);
    let want = if outside {
        Decision::Different
    } else if inside {
        Decision::Equivalent
    } else {
        Decision::Undecided
    };
    prop_assert_eq!(
        decision,
        Some(want),
        "[{}, {:?}] against ±{}",
        low,
        high,
        band
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn the_verdict_and_its_interval_never_disagree(data in samples(), band in 0.0f64..0.2) {
        let recs = records_of(&data);
        let opts = ReportOptions { noise_band: band, ..opts() };
        let a = analyse(&recs, &opts);
        let w = &a.workloads[0];
        let words = Wording::of(w, &a);
        for c in &w.configs {
            for p in &c.phases {
                for (s, what) in [(p.rate, "rate"), (p.seconds, "seconds"), (p.kib_per_sec, "KiB/s")] {
                    if let Some(s) = s {
                        check_ci(s.ci95_low, s.ci95_high, Some(s.mean), what);
                    }
                }
            }
        }
        let alpha = 1.0 - a.confidence;
        for c in w.comparisons.iter().flat_map(|c| &c.phases) {
            check_ci(c.ratio_ci_low, c.ratio_ci_high, c.ratio, "comparison");
            if c.p.is_none() {
                continue;
            }
            let rejected = c.p_adjusted.unwrap() < alpha;
            if let Some(lo) = c.ratio_ci_low {
                // The interval is the test's: it excludes 1 exactly when the adjusted p
                // is below alpha.
                let excludes = lo > 1.0 || c.ratio_ci_high.is_some_and(|h| h < 1.0);
                prop_assert_eq!(excludes, rejected, "{:?}", c);
                // The percentages are the same interval.
                prop_assert!((c.ci_low_pct.unwrap() - (lo - 1.0) * 100.0).abs() < 1e-6);
            }
            // The word follows the interval, and only the interval.
            check_decision(c.decision, c.ratio_ci_low, c.ratio_ci_high, band)?;
            prop_assert_eq!(c.outcome.decision(), c.decision, "{:?}", c);
            prop_assert_eq!(c.significant, c.decision == Some(Decision::Different));
            prop_assert_eq!(c.within_noise_band, c.decision == Some(Decision::Equivalent));
            if c.significant {
                let faster = c.outcome == Outcome::Faster;
                prop_assert_eq!(faster, c.pct.unwrap() > 0.0);
            }
            // No band word in the text beside an interval that leaves the band.
            let text = words.outcome(c);
            prop_assert_eq!(text.starts_with("equivalent"), c.decision == Some(Decision::Equivalent), "{}", text);
            prop_assert_eq!(text.starts_with("undecided"), c.decision == Some(Decision::Undecided), "{}", text);
        }
        for pair in &w.pairs {
            check_ci(pair.ci_low, pair.ci_high, pair.ratio, "pair");
            if pair.p.is_some() {
                check_decision(pair.decision, pair.ci_low, pair.ci_high, band)?;
                prop_assert_eq!(pair.different, pair.decision == Some(Decision::Different));
            }
        }
        if let Some(s) = &w.summary {
            let lines = crate::report::summary::summary_lines(w, &a);
            for (r, line) in s.ranking.iter().zip(&lines[1..]) {
                let Some(v) = &r.versus else { continue };
                check_ci(v.ci_low, v.ci_high, v.ratio, "summary");
                let (Some(lo), Some(p)) = (v.ci_low, v.p) else { continue };
                let excludes = lo > 1.0 || v.ci_high.is_some_and(|h| h < 1.0);
                prop_assert_eq!(excludes, p < alpha, "{:?}", v);
                check_decision(v.decision, v.ci_low, v.ci_high, band)?;
                prop_assert_eq!(v.significant, v.decision == Some(Decision::Different));
                prop_assert_eq!(v.within_noise_band, v.decision == Some(Decision::Equivalent));
                prop_assert_eq!(line.contains(", different beyond the"), v.decision == Some(Decision::Different), "{}", line);
                prop_assert_eq!(line.contains(", equivalent within the"), v.decision == Some(Decision::Equivalent), "{}", line);
                prop_assert_eq!(line.contains(", undecided:"), v.decision == Some(Decision::Undecided), "{}", line);
            }
        }
    }

    /// A main phase too short to trust is marked on every line that ranks on it, and
    /// the adaptive rule never asks for trials to chase it.
    #[test]
    fn a_suspect_main_phase_is_marked_and_never_chased(data in samples(), threshold in 0.0f64..2.0) {
        let recs = records_of(&data);
        let opts = ReportOptions { suspect_below_secs: threshold, ..opts() };
        let a = analyse(&recs, &opts);
        let w = &a.workloads[0];
        let Some(s) = &w.summary else { return Ok(()) };
        let idx = w.phases.iter().position(|p| p.name == s.main_phase).unwrap();
        let suspect = |label: &str| {
            w.configs.iter().find(|c| c.label == label).unwrap().phases[idx].suspect
        };
        let lines = crate::report::summary::summary_lines(w, &a);
        for (r, line) in s.ranking.iter().zip(&lines[1..]) {
            let want = suspect(&r.config) || r.versus.as_ref().is_some_and(|v| suspect(&v.slower));
            prop_assert_eq!(r.suspect, want, "{:?}", r);
            prop_assert_eq!(line.contains("[suspect: "), want, "{}", line);
        }
        let rule = crate::run::adaptive::Rule { target_cv: 1e-9, max: u32::MAX };
        for need in crate::run::adaptive::needs_more(&recs, &opts, &rule) {
            prop_assert!(!suspect(&need.config), "a suspect main phase was chased: {:?}", need);
        }
    }
}

/// A throwaway phase (3.2 million removals a second: the page cache) is suspect, so it
/// is in a family of its own: the main phase's and the other secondary phases'
/// adjusted p are what they are without it.
#[test]
fn a_suspect_phase_never_dilutes_the_others() {
    let mut with = Vec::new();
    let rows: [(&str, [[f64; 4]; 3]); 3] = [
        (
            "base",
            [
                [1000.0, 1000.0, 3.2e6, 1000.0],
                [1010.0, 1020.0, 3.1e6, 990.0],
                [990.0, 980.0, 3.3e6, 1005.0],
            ],
        ),
        (
            "x",
            [
                [1060.0, 1070.0, 3.0e6, 1040.0],
                [1080.0, 1050.0, 3.2e6, 1060.0],
                [1050.0, 1090.0, 3.4e6, 1045.0],
            ],
        ),
        (
            "y",
            [
                [1030.0, 1100.0, 3.3e6, 1000.0],
                [1000.0, 1120.0, 2.9e6, 1010.0],
                [1020.0, 1090.0, 3.1e6, 995.0],
            ],
        ),
    ];
    for (c, (label, trials)) in rows.iter().enumerate() {
        for (i, r) in trials.iter().enumerate() {
            with.push(rec(c * 10 + i, i as u32 + 1, label, "w", *r));
        }
    }
    let without: Vec<TrialRecord> = with
        .iter()
        .cloned()
        .map(|mut r| {
            r.phases.retain(|p| p.name != "file_remove");
            r
        })
        .collect();
    let (a, b) = (analyse(&with, &opts()), analyse(&without, &opts()));
    let (wa, wb) = (&a.workloads[0], &b.workloads[0]);
    assert!(wa.configs[0].phases[2].suspect, "file_remove is suspect");
    let suspect = wa.families.iter().find(|f| f.id == "suspect").unwrap();
    assert_eq!(
        (suspect.phases.as_slice(), suspect.size),
        (&["file_remove".to_string()][..], 2)
    );
    for phase in ["file_create", "dir_create", "dir_remove"] {
        for cfg in ["x", "y"] {
            let pa = comparison(&a, "w", cfg, phase).cmp.p_adjusted;
            let pb = comparison(&b, "w", cfg, phase).cmp.p_adjusted;
            assert!(pa.is_some(), "{cfg} {phase}");
            assert_eq!(pa, pb, "{cfg} {phase}");
        }
    }
    assert_eq!(wa.pairs, wb.pairs, "the primary family is the same");
}
