//! The crash section in every format: present exactly when there are crash records,
//! the rest of the report untouched (the answer takes the summary's place), CSV rows
//! per verdict, the JSON fields appended, and the HTML section and chart.

use super::crash::{mixed, state, timed};
use super::*;
use crate::analysis::crash::analyse_crash;
use crate::report::crash::{crash_warnings, crash_workloads};
use crate::report::grid::Style;
use crate::report::summary::summary_block;
use crate::results::crash::{CrashRecord, Verdict};

fn trials() -> Vec<TrialRecord> {
    let mut recs = Vec::new();
    series(&mut recs, 0, "same-disk", "fsync", &BASE);
    series(&mut recs, 3, "ramdisk,64M", "fsync", &FAST);
    recs
}

#[test]
fn every_format_has_the_crash_section_exactly_when_there_are_records() {
    let recs = trials();
    let crash = mixed();
    for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
        let without = render(&recs, &opts(), f);
        assert_eq!(without, render_with_crash(&recs, &[], &opts(), f), "{f:?}");
        let with = render_with_crash(&recs, &crash, &opts(), f);
        let marker = match f {
            Format::Table => "== Crash states: workload fsync ==",
            Format::Markdown => "## Crash states: workload `fsync`",
            Format::Csv => "fsync,same-disk,crash:ok,4,",
            Format::Json => "\"crash\": [",
        };
        assert!(with.contains(marker), "{f:?} lacks {marker}:\n{with}");
        assert!(!without.contains(marker), "{f:?}");
        // The CSV header is the same with or without crash states (its answer
        // columns are empty without them).
        let body: String = match f {
            Format::Csv => without.lines().skip(1).collect(),
            _ => without.clone(),
        };
        assert!(!body.to_lowercase().contains("crash"), "{f:?}:\n{without}");
        // The rest of the report is untouched: the section is added, nothing moved;
        // the summary on top gives way to the answer, which has its lines and more,
        // and the CSV's trial rows keep their columns (the answer's are added at the
        // end of the main phase's rows).
        let style = match f {
            Format::Markdown => Style::Markdown,
            _ => Style::Plain,
        };
        let summary = summary_block(&analyse(&recs, &opts()), style);
        let first_columns = |t: &str| -> Vec<Vec<String>> {
            csv_rows(t).into_iter().map(|r| r[..22].to_vec()).collect()
        };
        if f == Format::Csv {
            let with_rows = first_columns(&with);
            assert!(
                first_columns(&without)
                    .iter()
                    .all(|k| with_rows.contains(k)),
                "the crash section changed the trial rows:\n{with}"
            );
        } else if f != Format::Json {
            let kept: Vec<&str> = without
                .lines()
                .filter(|l| l.trim().is_empty() || !summary.contains(l))
                .collect();
            let mut lines = with.lines();
            assert!(
                kept.iter().all(|k| lines.any(|l| l == *k)),
                "{f:?}: the crash section changed the rest:\n{with}"
            );
        }
    }
    // Text and Markdown: after the answer (in the summary's place), before the
    // workloads' tables.
    let text = render_with_crash(&recs, &crash, &opts(), Format::Table);
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("no {s} in\n{text}"));
    assert!(at("Answer: speed, safety and recovery") < at("== Crash states: workload fsync =="));
    assert!(at("== Crash states: workload untar ==") < at("== Workload fsync (fdtree) =="));
    let md = render_with_crash(&recs, &crash, &opts(), Format::Markdown);
    assert!(md.find("## Crash states").unwrap() < md.find("## Workload `fsync`").unwrap());
    assert!(
        md.contains("| same-disk | 8 | 3 | 3 | 2 | 4 | 1 | 1 | 1 | 0 | 1 | 1.00 |"),
        "{md}"
    );
    assert!(
        md.contains("### Warnings\n\n- fsync/same-disk: 4 of 8 crash states not ok"),
        "{md}"
    );
}

#[test]
fn csv_has_a_row_per_configuration_workload_and_verdict() {
    let recs = trials();
    let crash = mixed();
    let csv = render_with_crash(&recs, &crash, &opts(), Format::Csv);
    let rows = csv_rows(&csv);
    assert!(rows.iter().all(|r| r.len() == CSV_HEADER.len()));
    let plain = csv_rows(&render(&recs, &opts(), Format::Csv));
    let first = |rows: &[Vec<String>]| -> Vec<Vec<String>> {
        rows.iter().map(|r| r[..22].to_vec()).collect()
    };
    assert_eq!(
        first(&rows[..plain.len()]),
        first(&plain),
        "the trial rows come first, their columns unchanged"
    );
    // The answer's columns: on each configuration's main-phase row only.
    let states = CSV_HEADER
        .iter()
        .position(|h| *h == "crash_states")
        .unwrap();
    for r in &rows[1..plain.len()] {
        let main = r[2] == "file_create";
        assert_eq!(!r[states].is_empty(), main, "{r:?}");
    }
    let crash_rows = &rows[plain.len()..];
    let c = analyse_crash(&crash);
    assert_eq!(crash_rows.len(), c.len() * Verdict::ALL.len());
    let col = |name: &str| CSV_HEADER.iter().position(|h| *h == name).unwrap();
    for (row, (e, v)) in crash_rows
        .iter()
        .zip(c.iter().flat_map(|e| Verdict::ALL.map(|v| (e, v))))
    {
        assert_eq!(row[col("workload")], e.workload);
        assert_eq!(row[col("config")], e.config);
        assert_eq!(row[col("phase")], format!("crash:{v}"));
        assert_eq!(row[col("n")], e.verdicts.get(v).to_string());
        assert_eq!(row[col("rate_unit")], "states");
        assert_eq!(row[col("verdict")], v.as_str());
        let set = ["workload", "config", "phase", "n", "rate_unit", "verdict"];
        for (i, cell) in row.iter().enumerate() {
            if !set.contains(&CSV_HEADER[i]) {
                assert_eq!(cell, "", "{} of {row:?}", CSV_HEADER[i]);
            }
        }
    }
    // Counts add up to the records.
    let total: usize = crash_rows
        .iter()
        .map(|r| r[col("n")].parse::<usize>().unwrap())
        .sum();
    assert_eq!(total, crash.len());
}

#[test]
fn json_appends_the_crash_field_and_changes_nothing_else() {
    let recs = trials();
    let mut crash = mixed();
    crash.push(timed(
        state("ramdisk,64M", "fsync", 99, "prefix", Verdict::Ok),
        0.5,
        None,
        Some(2.0),
    ));
    let without: serde_json::Value =
        serde_json::from_str(&render(&recs, &opts(), Format::Json)).unwrap();
    let json = render_with_crash(&recs, &crash, &opts(), Format::Json);
    let mut with: serde_json::Value = serde_json::from_str(&json).unwrap();
    let field = with.as_object_mut().unwrap().remove("crash").unwrap();
    let answer = with.as_object_mut().unwrap().remove("answer").unwrap();
    assert_eq!(with, without);
    // Appended: the last fields of the report, the answer after the crash section.
    let last_key = json.lines().rfind(|l| l.starts_with("  \"")).unwrap();
    assert!(last_key.starts_with("  \"answer\": ["), "{last_key}");
    assert!(json.contains("\n  \"crash\": ["));
    assert_eq!(answer[0]["workload"], "fsync");
    let items = field.as_array().unwrap();
    assert_eq!(items.len(), 3);
    let sd = &items[0];
    assert_eq!(sd["config"], "same-disk");
    assert_eq!(sd["workload"], "fsync");
    assert_eq!(sd["states"], 8);
    assert_eq!(
        sd["verdicts"],
        serde_json::json!({"ok": 4, "unmountable": 1, "fsck-dirty": 1, "lost-fsynced": 1, "check-failed": 0, "no-verdict": 1})
    );
    assert_eq!(
        sd["strategies"][2],
        serde_json::json!({"strategy": "torn", "states": 2})
    );
    assert_eq!(sd["control"], serde_json::Value::Null);
    assert_eq!(sd["first_not_ok"]["state"], 2);
    assert_eq!(sd["first_not_ok"]["verdict"], "unmountable");
    assert_eq!(sd["first_not_ok"]["evidence"], "state 2: unmountable");
    assert!(sd["warnings"][0]
        .as_str()
        .unwrap()
        .contains("4 of 8 crash states not ok"));
    let rd = &items[1];
    assert_eq!(rd["recovery"]["mount"]["median"], 0.5);
    assert_eq!(rd["recovery"]["journal_only"], serde_json::Value::Null);
    assert_eq!(rd["recovery"]["full_fsck"]["n"], 1);
    assert_eq!(rd["warnings"], serde_json::json!([]));
    // The model reads back.
    let back: Analysis = serde_json::from_str(&json).unwrap();
    assert_eq!(back.crash, analyse_crash(&crash));
}

fn page(crash: &[CrashRecord]) -> String {
    page_of(&trials(), crash)
}

#[test]
fn html_has_the_section_and_a_chart_only_with_timings() {
    let plain = page(&[]);
    assert!(!plain.contains("id=\"crash\"") && !plain.contains("href=\"#crash\""));
    assert!(!plain.contains("crash-recovery"));

    // Records without timings: the tables, no chart.
    let untimed = page(&mixed());
    assert!(untimed.contains("<section id=\"crash\">") && untimed.contains("href=\"#crash\""));
    assert!(!untimed.contains("data-kind=\"crash-recovery\""));
    let c = analyse_crash(&mixed());
    for w in crash_workloads(&c) {
        for t in &w.tables {
            assert!(untimed.contains(&html_escape(&t.title)), "{}", t.title);
            for row in &t.rows {
                for cell in row {
                    assert!(untimed.contains(&format!("<td>{}</td>", html_escape(cell))));
                }
            }
        }
        for line in w.warnings.iter().chain(&w.notes) {
            assert!(untimed.contains(&html_escape(line)), "{line}");
        }
    }
    // The warnings are also in the page's list of warnings, before the section.
    let warning = &crash_warnings(&c[0])[0];
    assert_eq!(untimed.matches(&html_escape(warning)).count(), 2);

    // Timings on two placements and three sizes: one chart, a line per placement.
    let mut timed_states = Vec::new();
    for (k, (placement, base)) in [("same-disk", 0.2), ("ramdisk", 0.02)].iter().enumerate() {
        for (j, size) in [16u64, 64, 256].iter().enumerate() {
            for i in 0..5 {
                let label = format!("{placement},{size}M");
                let mut r = state(&label, "fsync", i, "prefix", Verdict::Ok);
                r.journal_size = size << 20;
                r.trial = 10 * k + j;
                timed_states.push(timed(
                    r,
                    base * (j + 1) as f64 + 0.01 * i as f64,
                    None,
                    None,
                ));
            }
        }
    }
    let html = page(&timed_states);
    assert_eq!(html.matches("data-kind=\"crash-recovery\"").count(), 1);
    let start = html.find("data-kind=\"crash-recovery\"").unwrap();
    let svg = &html[start..][..html[start..].find("</svg>").unwrap()];
    for text in [
        "recovery seconds",
        "journal size (log scale)",
        "same-disk",
        "ramdisk",
        "95th percentile",
    ] {
        assert!(svg.contains(text), "chart lacks {text}");
    }
    assert_eq!(
        svg.matches("<circle").count(),
        6,
        "a point per configuration"
    );
    assert!(html.contains("<table>") && html.contains("Recovery times of fsync"));
}

/// The page's escaping of text (minijinja's HTML auto-escape).
fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
        .replace('/', "&#x2f;")
}

/// What `jbench crash` leaves: one write-logged recording per configuration x workload
/// (marked `crash_recording`, `marked`), each with crash states cut from its log, the
/// barrier=0 control of the crash-modes preset among them.
fn recordings_only(marked: bool) -> (Vec<TrialRecord>, Vec<CrashRecord>) {
    let mut recs = Vec::new();
    let mut crash = Vec::new();
    let failed = [
        (Verdict::Unmountable, 13),
        (Verdict::FsckDirty, 29),
        (Verdict::LostFsynced, 47),
        (Verdict::NoVerdict, 3),
        (Verdict::Ok, 108),
    ];
    let pairs = [
        ("barrier0", "fsync", 200.0),
        ("same-disk", "fsync", 1000.0),
        ("same-disk", "untar", 1000.0),
    ];
    for (trial, (config, workload, rate)) in pairs.iter().enumerate() {
        let mut r = rec(trial, 1, config, workload, [*rate; 4]);
        r.crash_recording = marked;
        recs.push(r);
        let verdicts: Vec<Verdict> = if *config == "barrier0" {
            failed
                .iter()
                .flat_map(|(v, n)| std::iter::repeat_n(*v, *n))
                .collect()
        } else {
            vec![Verdict::Ok; 5]
        };
        for (i, v) in verdicts.into_iter().enumerate() {
            let mut s = state(config, workload, i as u64, "subset", v);
            s.trial = trial;
            s.negative_control = *config == "barrier0";
            crash.push(s);
        }
    }
    (recs, crash)
}

#[test]
fn crash_recordings_alone_answer_safety_without_a_speed_ranking() {
    let (recs, crash) = recordings_only(true);
    let a = analyse(&recs, &opts()).with_crash(&crash);
    assert!(a.workloads.is_empty(), "a recording is no speed figure");
    assert!(
        !a.warnings.iter().any(|w| w.contains("nothing to report")),
        "{:?}",
        a.warnings
    );
    let barrier = "barrier0: a negative control, caught: 92 of 200 power cuts failed (13 \
                   unmountable, 47 lost-fsynced, 29 fsck-dirty, 3 no-verdict), 47 of them \
                   losing fsync'ed data, as it must";
    let text = render_with_crash(&recs, &crash, &opts(), Format::Table);
    let md = render_with_crash(&recs, &crash, &opts(), Format::Markdown);
    let html = page_of(&recs, &crash)
        .replace("&#x27;", "'")
        .replace("&#x2f;", "/");
    assert!(html.contains("fsync crash recording (write log on, not timed), ok"));
    for (name, out) in [("text", &text), ("markdown", &md), ("html", &html)] {
        assert!(
            out.contains("Answer: safety and recovery (no timed trial to rank for speed)"),
            "{name}:\n{out}"
        );
        assert!(out.contains(
            "fsync: power cuts and recovery (not timed: write-logged crash recordings only):"
        ));
        assert!(out.contains(barrier), "{name}:\n{out}");
        assert!(
            out.contains("same-disk: 5/5 power cuts lost nothing"),
            "{name}:\n{out}"
        );
        for speed in [
            "as fast as",
            "slowest",
            "not timed;",
            "file creates/s",
            "Summary",
            "Trust",
            "== Workload",
            "## Workload",
            "href=\"#workload",
        ] {
            assert!(!out.contains(speed), "{name} shows `{speed}`:\n{out}");
        }
    }
    // JSON: an answer with no speed half, no workload analysed for speed.
    let json: serde_json::Value =
        serde_json::from_str(&render_with_crash(&recs, &crash, &opts(), Format::Json)).unwrap();
    assert_eq!(json["workloads"], serde_json::json!([]));
    for w in json["answer"].as_array().unwrap() {
        assert_eq!(w["main_phase"], serde_json::Value::Null);
        for c in w["configs"].as_array().unwrap() {
            assert_eq!(c["rate_mean"], serde_json::Value::Null, "{c}");
            assert_eq!(c["trials"], 0);
            assert_eq!(c["versus"], serde_json::Value::Null);
        }
    }
    let b = &json["answer"][0]["configs"][0];
    assert_eq!(
        (b["config"].as_str(), b["crash_failures"].as_u64()),
        (Some("barrier0"), Some(92))
    );
    // CSV: the crash rows only, no rate.
    let csv = render_with_crash(&recs, &crash, &opts(), Format::Csv);
    let rows = csv_rows(&csv);
    let col = |name: &str| CSV_HEADER.iter().position(|h| *h == name).unwrap();
    assert!(
        rows[1..]
            .iter()
            .all(|r| r[col("phase")].starts_with("crash:")),
        "{csv}"
    );
    assert!(
        rows[1..].iter().all(|r| r[col("rate_mean")].is_empty()),
        "{csv}"
    );

    // A directory `jbench crash` wrote before it marked its recordings reads the same:
    // the states say which trials they were cut from.
    let (mut old, crash) = recordings_only(false);
    assert!(
        !analyse(&old, &opts()).workloads.is_empty(),
        "unmarked, the recordings would be ranked for speed"
    );
    crate::results::mark_recordings(&mut old, &crash);
    assert_eq!(old, recs);
    assert_eq!(
        render_with_crash(&old, &crash, &opts(), Format::Table),
        text
    );
}

#[test]
fn the_answer_counts_the_failed_states_the_tables_count() {
    let (recs, crash) = recordings_only(true);
    let a = analyse(&recs, &opts()).with_crash(&crash);
    let views = crate::report::answer::answer_views(&a);
    let sections = crash_workloads(&a.crash);
    for (w, v) in crate::analysis::answer::of(&a).iter().zip(&views) {
        let failed = v.table.headers.iter().position(|h| h == "failed").unwrap();
        let section = sections.iter().find(|s| s.name == w.workload).unwrap();
        let verdicts = &section.tables[0];
        for (c, (line, row)) in w.configs.iter().zip(v.lines.iter().zip(&v.table.rows)) {
            // The answer table's `failed` is the sum of the section's failure columns.
            let by_verdict = verdicts
                .rows
                .iter()
                .find(|r| r[0].starts_with(&c.config))
                .unwrap();
            let sum: usize = Verdict::ALL
                .iter()
                .filter(|v| v.is_failure())
                .map(|v| {
                    let i = verdicts
                        .headers
                        .iter()
                        .position(|h| h == v.as_str())
                        .unwrap();
                    by_verdict[i].parse::<usize>().unwrap()
                })
                .sum();
            assert_eq!(row[failed], sum.to_string(), "{}", c.config);
            assert_eq!(row[failed], c.crash_failures.to_string());
            if sum > 0 {
                assert!(
                    line.contains(&format!("{sum} of {} power cuts failed", c.crash_states)),
                    "{line}"
                );
                // Each verdict's count in the line is the section's column.
                for v in Verdict::ALL.iter().filter(|v| v.is_failure()) {
                    let i = verdicts
                        .headers
                        .iter()
                        .position(|h| h == v.as_str())
                        .unwrap();
                    let n = &by_verdict[i];
                    assert_eq!(line.contains(&format!("{n} {v}")), n != "0", "{line}");
                }
            }
        }
    }
}

fn page_of(recs: &[TrialRecord], crash: &[CrashRecord]) -> String {
    html::render_page(&html::Page {
        records: recs,
        env: None,
        title: "crash",
        opts: &opts(),
        results_dir: None,
        extra_warnings: &[],
        crash,
    })
    .unwrap()
}

#[test]
fn a_run_ends_with_its_answer_once_unless_warnings_came_between() {
    let (recs, crash) = recordings_only(true);
    let a = analyse(&recs, &opts()).with_crash(&crash);
    let dir = std::path::Path::new("results/x");
    let answers = |s: &str| s.matches("Answer: safety and recovery").count();
    let quiet = crate::report::run_end::render(&a, dir, false);
    let warned = !crate::report::crash::all_crash_warnings(&a).is_empty() || !a.warnings.is_empty();
    assert_eq!(answers(&quiet), if warned { 2 } else { 1 }, "{quiet}");
    let verbose = crate::report::run_end::render(&a, dir, true);
    assert_eq!(
        answers(&verbose),
        2,
        "the whole report, then the answer again:\n{verbose}"
    );
    assert!(verbose.trim_end().ends_with(
        crate::report::glance::glance_block(&a, crate::report::grid::Style::Plain).trim_end()
    ));
}
