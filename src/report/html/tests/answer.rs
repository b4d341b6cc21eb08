//! Tests of the answer's figure: a page with crash states opens with it, before the
//! trade-off figure and the tables, and every panel draws what the answer says.

use super::*;
use crate::results::crash::{CrashRecord, JournalLive, RecoveryTimes, Verdict};

/// A checked crash state of `config` on workload `w` (the trials' of [`record`]), at
/// the trials' journal size.
fn crash_state(config: &str, state: u64, verdict: Verdict) -> CrashRecord {
    CrashRecord {
        config: config.into(),
        workload: "w".into(),
        state,
        cut: 100 + state,
        kept: 90,
        fsynced_files: 10,
        verdict,
        evidence: vec!["why".into()],
        check_seconds: 1.0,
        placement: config.into(),
        inodes: 65536,
        ..CrashRecord::test_default()
    }
}

fn with_mount(mut r: CrashRecord, seconds: f64, live_blocks: Option<u64>) -> CrashRecord {
    r.timings = Some(RecoveryTimes {
        mount_seconds: seconds,
        ..RecoveryTimes::default()
    });
    r.journal_live = live_blocks.map(|blocks| JournalLive {
        transactions: blocks / 10,
        blocks,
    });
    r
}

/// Timed trials of same-disk, ramdisk and second-disk (the last without crash states);
/// crash states of same-disk (timed with the live journal counted: a recovery model),
/// ramdisk (timed without: median and p95) and barrier0, a negative control with no
/// timed trial and no timed recovery; one journal size.
fn answer_run() -> (Vec<TrialRecord>, Vec<CrashRecord>) {
    let mut records = Vec::new();
    for (k, (label, secs)) in [("same-disk", 4.0), ("ramdisk", 2.0), ("second-disk", 3.0)]
        .iter()
        .enumerate()
    {
        for i in 0..3 {
            let p = phase(1000, secs + 0.1 * i as f64, 100.0);
            records.push(record(3 * k + i, label, vec![p]));
        }
    }
    let mut crash = Vec::new();
    for i in 0..6u64 {
        let blocks = 100 * (i + 1);
        let secs = 0.05 + 0.001 * blocks as f64 + 0.01 * (i % 2) as f64;
        crash.push(with_mount(
            crash_state("same-disk", i, Verdict::Ok),
            secs,
            Some(blocks),
        ));
    }
    for i in 0..5u64 {
        let verdict = if i < 2 {
            Verdict::LostFsynced
        } else {
            Verdict::Ok
        };
        let r = crash_state("ramdisk", i, verdict);
        crash.push(with_mount(r, 0.02 + 0.01 * i as f64, None));
    }
    for i in 0..4u64 {
        let verdict = if i < 3 {
            Verdict::LostFsynced
        } else {
            Verdict::Ok
        };
        let mut r = crash_state("barrier0", i, verdict);
        r.negative_control = true;
        crash.push(r);
    }
    (records, crash)
}

fn page_with_crash(records: &[TrialRecord], crash: &[CrashRecord]) -> String {
    let opts = Default::default();
    super::super::render_page(&super::super::Page {
        records,
        env: None,
        title: "t",
        opts: &opts,
        results_dir: None,
        extra_warnings: &[],
        crash,
    })
    .unwrap()
}

/// The SVG of the page's first figure of `kind`.
fn figure_svg<'a>(html: &'a str, kind: &str) -> &'a str {
    let start = html
        .find(&format!("data-kind=\"{kind}\""))
        .unwrap_or_else(|| panic!("no {kind} figure"));
    let rest = &html[start..];
    &rest[rest.find("<svg").unwrap()..rest.find("</svg>").unwrap()]
}

/// The element of `class` of configuration `config`, if any.
fn of_config<'a>(svg: &'a str, class: &str, config: &str) -> Option<&'a str> {
    with_class(svg, class)
        .into_iter()
        .find(|e| attr_of(e, "data-config") == config)
}

#[test]
fn the_answer_opens_with_its_figure_before_the_trade_off_and_the_tables() {
    let (records, crash) = answer_run();
    let html = page_with_crash(&records, &crash);
    assert_eq!(
        html.matches("data-kind=\"answer\"").count(),
        1,
        "one workload"
    );
    assert!(
        !html.contains("data-kind=\"tradeoff\""),
        "one journal size: no trade-off figure"
    );
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s}"));
    let section = at("<section id=\"answer\">");
    let figure = at("data-kind=\"answer\"");
    let table = section + html[section..].find("<table>").unwrap();
    assert!(
        section < figure && figure < table,
        "figure first, then the tables"
    );
    assert!(at("<h2>Answer: speed, safety and recovery</h2>") < figure);

    let svg = figure_svg(&html, "answer");
    let analysis = crate::report::analyse(&records, &Default::default()).with_crash(&crash);
    let answer = &crate::analysis::answer::of(&analysis)[0];
    for c in &answer.configs {
        assert!(
            svg.contains(&format!(">\n{}\n</text>", c.config)),
            "no {}",
            c.config
        );
    }
    // The recovery model's worst timed state, whisker to the figure to plan on, in
    // the bar and in words.
    let same = answer
        .configs
        .iter()
        .find(|c| c.config == "same-disk")
        .unwrap();
    let (worst, plan) = (
        same.recovery_worst_s.unwrap(),
        same.recovery_plan_s.unwrap(),
    );
    assert!(plan > worst, "{same:?}");
    let bar = of_config(svg, "answer-recovery", "same-disk").unwrap();
    assert_eq!(
        (attr_of(bar, "data-basis"), num(bar, "data-value")),
        ("worst", worst)
    );
    let whisker = of_config(svg, "answer-plan", "same-disk").unwrap();
    assert_eq!(num(whisker, "data-high"), plan);
    assert!(num(bar, "width") > 0.0);
    let words = format!(
        "worst {} s, plan {} s",
        crate::report::words::fmt_sig(worst),
        crate::report::words::fmt_sig(plan)
    );
    assert!(svg.contains(&words), "no {words}");
    // No live-journal count: the median, whisker to the p95.
    let ram = answer
        .configs
        .iter()
        .find(|c| c.config == "ramdisk")
        .unwrap();
    let bar = of_config(svg, "answer-recovery", "ramdisk").unwrap();
    assert_eq!(attr_of(bar, "data-basis"), "median");
    assert_eq!(num(bar, "data-value"), ram.replay_median_s.unwrap());
    // Speed: the mean and the interval the tables print, on the main phase.
    let w = &analysis.workloads[0];
    let main = answer.main_phase.as_deref().unwrap();
    let pi = w.phases.iter().position(|p| p.name == main).unwrap();
    let config = w.configs.iter().find(|c| c.label == "ramdisk").unwrap();
    let rate = config.phases[pi].rate.unwrap();
    let speed = of_config(svg, "answer-speed", "ramdisk").unwrap();
    assert_eq!(num(speed, "data-mean"), ram.rate_mean.unwrap());
    let ci = of_config(svg, "answer-ci95", "ramdisk").unwrap();
    assert!((num(ci, "data-low") - rate.ci95_low.unwrap()).abs() < 1e-9);
    assert!((num(ci, "data-high") - rate.ci95_high.unwrap()).abs() < 1e-9);
    // Crash states checked and failed; the negative control says its failures are
    // expected.
    let crashed = of_config(svg, "answer-crash", "ramdisk").unwrap();
    assert_eq!(
        (num(crashed, "data-states"), num(crashed, "data-failed")),
        (5.0, 2.0)
    );
    assert!(
        svg.contains("2 of 5 failed") && svg.contains("6/6 ok"),
        "{svg}"
    );
    let control = of_config(svg, "answer-crash", "barrier0").unwrap();
    assert_eq!(attr_of(control, "data-negative-control"), "true");
    assert!(svg.contains("negative control") && svg.contains("3 of 4 failed (expected)"));
    assert!(
        of_config(svg, "answer-failed", "same-disk").is_none(),
        "nothing failed"
    );
    let caption = &html[figure..][..html[figure..].find("</figcaption>").unwrap()];
    for words in [
        "95% confidence interval of the mean",
        "crash states checked",
        "the worst timed state",
        "the figure to plan on",
        "upper end of the 95% prediction at the fullest journal the workload left",
        "negative control",
    ] {
        assert!(caption.contains(words), "caption lacks {words}: {caption}");
    }
}

#[test]
fn panels_without_figures_say_not_measured_and_draw_no_bar() {
    let (records, crash) = answer_run();
    let html = page_with_crash(&records, &crash);
    let svg = figure_svg(&html, "answer");
    let panels = |config: &str| -> Vec<&str> {
        with_class(svg, "not-measured")
            .into_iter()
            .filter(|e| attr_of(e, "data-config") == config)
            .map(|e| attr_of(e, "data-panel"))
            .collect()
    };
    // Timed, no crash state.
    assert_eq!(panels("second-disk"), ["crash", "recovery"]);
    for class in [
        "answer-crash",
        "answer-passed",
        "answer-failed",
        "answer-recovery",
    ] {
        assert!(of_config(svg, class, "second-disk").is_none(), "{class}");
    }
    assert!(of_config(svg, "answer-speed", "second-disk").is_some());
    // Crash states, neither timed trial nor timed recovery.
    assert_eq!(panels("barrier0"), ["speed", "recovery"]);
    assert!(of_config(svg, "answer-speed", "barrier0").is_none());
    assert!(of_config(svg, "answer-recovery", "barrier0").is_none());
    assert!(panels("same-disk").is_empty() && panels("ramdisk").is_empty());
}

#[test]
fn a_page_without_crash_states_has_no_answer_figure() {
    let (records, _) = answer_run();
    let html = page_with_crash(&records, &[]);
    assert!(!html.contains("<section id=\"answer\">"));
    assert!(!html.contains("data-kind=\"answer\""));
    assert!(!html.contains("not-measured"));
}

#[test]
fn the_answer_figure_keeps_long_names_whole_and_its_legend_clear() {
    use super::super::answer_chart::{
        answer_chart_drawn, AnswerFigure, Crash, Recovery, Row, Speed,
    };
    let long = "second-disk,256M,data=journal,commit=30,barrier=0";
    let rows = vec![
        Row {
            config: long.into(),
            negative_control: true,
            speed: Some(Speed {
                mean: 120.0,
                half: 4.0,
                n: 3,
            }),
            marks: vec!["path-bound"],
            crash: Some(Crash {
                states: 200,
                failed: 76,
                checks_promises: true,
            }),
            emptied: None,
            recovery: Some(Recovery {
                value: 0.4,
                upto: 0.9,
                model: true,
            }),
        },
        Row {
            config: "internal".into(),
            negative_control: false,
            speed: Some(Speed {
                mean: 300.0,
                half: 0.0,
                n: 1,
            }),
            marks: Vec::new(),
            crash: None,
            emptied: None,
            recovery: None,
        },
    ];
    let d = answer_chart_drawn(&AnswerFigure {
        title: "w",
        rate_unit: Some("file creates/s"),
        rows: &rows,
    })
    .unwrap();
    assert!(
        d.svg.contains(&format!("{long} — negative control")),
        "{}",
        d.svg
    );
    assert!(d.svg.contains("76 of 200 failed (expected)"));
    assert!(d.svg.contains("300, n=1"), "one trial: no interval");
    assert_eq!(with_class(&d.svg, "answer-ci95").len(), 1);
    assert_legend_hides_nothing("answer figure", &d);
    // The failed share of the bar is the failed share of the states.
    let (passed, failed) = (
        with_class(&d.svg, "answer-passed")[0],
        with_class(&d.svg, "answer-failed")[0],
    );
    let share = num(failed, "width") / (num(passed, "width") + num(failed, "width"));
    assert!((share - 76.0 / 200.0).abs() < 0.01, "{share}");
}

/// A journal a power cut empties draws that power cut above the crash states, which
/// keep RAM, and says both in words; its speed carries its marks.
#[test]
fn a_ram_disk_journal_draws_the_power_cut_that_empties_it() {
    use super::super::answer_chart::{
        answer_chart_drawn, AnswerFigure, Crash, Emptied, Row, Speed,
    };
    let rows = vec![Row {
        config: "ramdisk".into(),
        negative_control: false,
        speed: Some(Speed {
            mean: 118.0,
            half: 1.0,
            n: 4,
        }),
        marks: vec!["path-bound"],
        crash: Some(Crash {
            states: 40,
            failed: 0,
            checks_promises: true,
        }),
        emptied: Some(Emptied {
            states: 40,
            mount_failed: 40,
        }),
        recovery: None,
    }];
    let d = answer_chart_drawn(&AnswerFigure {
        title: "w",
        rate_unit: Some("file creates/s"),
        rows: &rows,
    })
    .unwrap();
    let cut = of_config(&d.svg, "answer-power-cut", "ramdisk").expect("the power cut is drawn");
    assert_eq!(num(cut, "data-mount-failed"), 40.0);
    assert!(num(cut, "width") > 0.0);
    assert!(
        d.svg.contains("cut 40/40 fail · RAM kept 40/40 ok"),
        "{}",
        d.svg
    );
    assert!(d.svg.contains("[path-bound]"), "the speed's mark is drawn");
    assert_eq!(
        attr_of(
            of_config(&d.svg, "answer-speed", "ramdisk").unwrap(),
            "data-marks"
        ),
        "path-bound"
    );
    assert_legend_hides_nothing("answer figure", &d);
}
