//! Tests of the summary that opens each report: its figures are checked against the
//! analysis they come from, and every format is checked to carry it.

use super::*;
use crate::analysis::stats;
use crate::analysis::summary::{default_main_phase, PSource};

/// file_create rates per configuration; the other phases run at 1000 ops/s.
/// `internal` is the baseline; `twin` differs from it by noise only; `mid` and
/// `fast` are clearly faster, `mid` vs `fast` is a pair without the baseline.
const RATES: [(&str, [f64; 3]); 5] = [
    ("internal", [1000.0, 1010.0, 990.0]),
    ("fast", [2520.0, 2500.0, 2535.0]),
    ("twin", [1003.0, 985.0, 1015.0]),
    ("mid", [1500.0, 1490.0, 1512.0]),
    ("mid-twin", [1497.0, 1515.0, 1488.0]),
];

fn records() -> Vec<TrialRecord> {
    let mut out = Vec::new();
    for (c, (label, rates)) in RATES.iter().enumerate() {
        for (i, r) in rates.iter().enumerate() {
            out.push(rec(
                c * 10 + i,
                i as u32 + 1,
                label,
                "small",
                [1000.0, *r, 1000.0, 1000.0],
            ));
        }
    }
    out
}

fn rates_of(label: &str) -> Vec<f64> {
    RATES.iter().find(|r| r.0 == label).unwrap().1.to_vec()
}

#[test]
fn the_ranking_ratios_and_significance_follow_the_analysis() {
    let a = analyse(&records(), &opts());
    let w = &a.workloads[0];
    let s = w.summary.as_ref().expect("a summary");
    assert_eq!(s.main_phase, "file_create");
    let idx = w
        .phases
        .iter()
        .position(|p| p.name == "file_create")
        .unwrap();
    let mean = |label: &str| find(&a, "small", label).phases[idx].rate.unwrap().mean;
    // Ranking order = the analysis's means, descending.
    let mut by_mean: Vec<(String, f64)> = w
        .configs
        .iter()
        .map(|c| (c.label.clone(), mean(&c.label)))
        .collect();
    by_mean.sort_by(|x, y| y.1.total_cmp(&x.1));
    let ranked: Vec<&str> = s.ranking.iter().map(|r| r.config.as_str()).collect();
    let expected: Vec<&str> = by_mean.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(ranked, expected);
    assert!(s.ranking.last().unwrap().versus.is_none());
    let alpha = 1.0 - a.confidence;
    let (mut significant, mut noise) = (0, 0);
    for pair in s.ranking.windows(2) {
        let (fast, slow) = (&pair[0], &pair[1]);
        let v = fast.versus.as_ref().unwrap();
        assert_eq!(v.slower, slow.config);
        let ratio = v.ratio.unwrap();
        assert!((ratio - mean(&fast.config) / mean(&slow.config)).abs() < 1e-9);
        let (lo, hi) = (v.ci_low.unwrap(), v.ci_high.unwrap());
        assert!(lo <= ratio && ratio <= hi, "{lo} {ratio} {hi}");
        // Every pair is in the primary family: its p is Welch's, adjusted with Holm
        // over the C(5, 2) = 10 pairs, and the interval is at the level it was decided.
        assert_eq!(v.p_source, PSource::FamilyHolm);
        assert_eq!(v.family.as_deref(), Some("primary"));
        assert_eq!(v.family_size, Some(10));
        let welch = stats::welch(&rates_of(&slow.config), &rates_of(&fast.config)).unwrap();
        assert!(v.p.unwrap() >= welch.p);
        let level = v.ci_level.unwrap();
        let ci = ratio::fieller(&rates_of(&fast.config), &rates_of(&slow.config), level).unwrap();
        let (flo, fhi) = (ci.low, ci.high.unwrap());
        assert!((flo - lo).abs() < 1e-9 && (fhi - hi).abs() < 1e-9);
        let excludes = lo > 1.0 || hi < 1.0;
        assert_eq!(excludes, v.p.unwrap() < alpha, "{v:?}");
        let outside_band = (ratio - 1.0).abs() >= a.noise_band;
        assert_eq!(v.significant, excludes && outside_band, "{v:?}");
        let with_base = [&fast.config, &slow.config]
            .iter()
            .any(|c| Some(*c) == w.baseline.as_ref());
        if with_base {
            let other = if Some(&fast.config) == w.baseline.as_ref() {
                &slow.config
            } else {
                &fast.config
            };
            let cmp = w.comparisons.iter().find(|c| &c.config == other).unwrap();
            let cmp = cmp
                .phases
                .iter()
                .find(|p| p.phase == "file_create")
                .unwrap();
            assert_eq!(v.p, cmp.p_adjusted);
            assert_eq!(v.significant, cmp.significant);
            assert_eq!(v.ci_level, cmp.ci_level);
        }
        if v.significant {
            significant += 1;
        } else {
            noise += 1;
        }
    }
    // The data hold both kinds, so both branches above were checked.
    assert!(significant >= 2 && noise >= 2, "{significant} {noise}");
    assert_eq!(s.trust.min_trials, 3);
    let worst = w
        .configs
        .iter()
        .map(|c| c.phases[idx].rate.unwrap().cv())
        .fold(0.0, f64::max);
    assert!((s.trust.worst_cv.unwrap() - worst).abs() < 1e-12);
    assert_eq!(s.trust.suspect_phases, w.suspect_phases.len());
}

#[test]
fn each_engine_has_a_default_main_phase() {
    let fdtree = ["dir_create", "file_create", "file_remove", "dir_remove"];
    assert_eq!(
        default_main_phase("fdtree", &fdtree).unwrap(),
        "file_create"
    );
    let durable = [
        "dir_create",
        "file_create",
        "dir_create+syncfs",
        "file_create+syncfs",
    ];
    assert_eq!(
        default_main_phase("fdtree", &durable).unwrap(),
        "file_create+syncfs"
    );
    let fsync = ["create_fsync", "remove"];
    assert_eq!(default_main_phase("fsync", &fsync).unwrap(), "create_fsync");
    let postmark = ["create", "transactions", "delete"];
    assert_eq!(
        default_main_phase("postmark", &postmark).unwrap(),
        "transactions"
    );
    assert_eq!(
        default_main_phase("iozone", &["read", "write"]).unwrap(),
        "write"
    );
    // iozone without its write test: the first phase.
    assert_eq!(
        default_main_phase("iozone", &["read", "reread"]).unwrap(),
        "read"
    );
    assert_eq!(default_main_phase("fdtree", &[]), None);
}

#[test]
fn main_phase_selects_another_and_an_unknown_one_is_warned_about() {
    let mut o = opts();
    o.main_phases.insert("small".into(), "dir_remove".into());
    let a = analyse(&records(), &o);
    assert_eq!(
        a.workloads[0].summary.as_ref().unwrap().main_phase,
        "dir_remove"
    );
    assert!(a.all_warnings().iter().all(|w| !w.contains("main_phase")));
    o.main_phases.insert("small".into(), "no_such".into());
    let a = analyse(&records(), &o);
    assert_eq!(
        a.workloads[0].summary.as_ref().unwrap().main_phase,
        "file_create"
    );
    let warned = a.workloads[0].warnings.iter().any(|w| {
        w.contains("main_phase `no_such`") && w.contains("file_create") && w.contains("dir_remove")
    });
    assert!(warned, "{:?}", a.workloads[0].warnings);
}

#[test]
fn the_default_main_phase_is_one_the_trials_did_something_in() {
    // fdtree with files = 0: its file_create made nothing in any trial.
    let mut recs = records();
    for r in &mut recs {
        for p in &mut r.phases {
            if p.name == "file_create" {
                p.ops = 0;
            }
        }
    }
    let a = analyse(&recs, &opts());
    assert_eq!(
        a.workloads[0].summary.as_ref().unwrap().main_phase,
        "dir_create"
    );
    // One trial that did create files keeps the engine's default.
    recs[0]
        .phases
        .iter_mut()
        .find(|p| p.name == "file_create")
        .unwrap()
        .ops = 5;
    let a = analyse(&recs, &opts());
    assert_eq!(
        a.workloads[0].summary.as_ref().unwrap().main_phase,
        "file_create"
    );
}

#[test]
fn every_format_carries_the_summary_before_the_tables() {
    let a = analyse(&records(), &opts());
    let w = &a.workloads[0];
    let lines = summary::summary_lines(w, &a);
    let s = w.summary.as_ref().unwrap();
    assert_eq!(lines.len(), s.ranking.len() + 2);
    for (line, r) in lines[1..].iter().zip(&s.ranking) {
        assert!(line.starts_with(&format!("{}: ", r.config)), "{line}");
        if let Some(v) = &r.versus {
            let ratio = format!(
                "{}× as fast as {}",
                summary::fmt_ratio(v.ratio.unwrap()),
                v.slower
            );
            assert!(
                ratio.starts_with(&format!("{:.2}", v.ratio.unwrap())),
                "{ratio}"
            );
            assert!(line.contains(&ratio), "{line}");
            assert_eq!(
                line.contains(", different beyond the"),
                v.significant,
                "{line}"
            );
            let source = match v.p_source {
                PSource::FamilyHolm => "(adjusted p",
                PSource::None => "too few trials",
            };
            assert!(line.contains(source), "{line}");
        }
    }
    assert!(lines
        .last()
        .unwrap()
        .starts_with("Trust: 3 trials per configuration"));
    let text = text::Text.render(&a);
    let md = markdown::Markdown.render(&a);
    let table_at = |out: &str| out.find("Times (s)").unwrap();
    for l in &lines {
        let at = text
            .find(l.as_str())
            .unwrap_or_else(|| panic!("{l} not in\n{text}"));
        assert!(at < table_at(&text));
        let md_line = super::grid::md_escape(l);
        let at = md
            .find(md_line.as_str())
            .unwrap_or_else(|| panic!("{l} not in\n{md}"));
        assert!(at < table_at(&md));
    }
    let json: serde_json::Value = serde_json::from_str(&json::Json.render(&a)).unwrap();
    let js = &json["workloads"][0]["summary"];
    assert_eq!(js["main_phase"], "file_create");
    assert_eq!(js["ranking"][0]["config"], s.ranking[0].config.as_str());
    let text_field: Vec<String> = serde_json::from_value(js["text"].clone()).unwrap();
    assert_eq!(text_field, lines);
    let out = json::Json.render(&a);
    let appended = out.find("\"high_variance\"").unwrap() < out.find("\"summary\": {").unwrap();
    assert!(appended, "summary is appended after the existing fields");
    let page = html::render(&records(), None, "t", &opts()).unwrap();
    let summary_at = page.find("<section id=\"summary\">").unwrap();
    assert!(summary_at < page.find("<section id=\"warnings\">").unwrap());
    for l in &lines {
        let escaped = l
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('/', "&#x2f;");
        assert!(page.contains(&escaped), "{escaped} not in the page");
    }
    // CSV is unchanged: no summary in it.
    assert!(!csv::Csv.render(&a).contains("as fast as"));
}
