//! The HTML report of a fixture results directory: charts, self-containment,
//! warnings, tables, timelines, and the `jbench report --html` command line.

use crate::html_fixture;

use html_fixture as fx;
use jbench::report;

fn page() -> (tempfile::TempDir, String) {
    fx::rendered()
}

#[test]
fn every_chart_is_there_and_has_data() {
    let (_dir, html) = page();
    let svgs = fx::svgs(&html);
    assert_eq!(svgs.len(), fx::EXPECTED_CHARTS, "number of charts");
    let figures = html.matches("<figure class=\"chart\"").count();
    assert_eq!(figures, fx::EXPECTED_CHARTS, "one figure per chart");
    let kinds = |k: &str| html.matches(&format!("data-kind=\"{k}\"")).count();
    assert_eq!(kinds("bar"), fx::PHASES_IN_REPORT);
    assert_eq!(kinds("journal-size"), fx::PHASES_IN_REPORT);
    assert_eq!(kinds("timeline-write"), 1);
    assert_eq!(kinds("timeline-cpu"), 1);
    for (i, svg) in svgs.iter().enumerate() {
        let marks = fx::data_marks(svg);
        // Bar charts: 7 configurations with data (one bar each) plus the legend; the
        // others: lines or points plus their legend marks.
        let at_least = if i < 2 * fx::PHASES_IN_REPORT && svg.contains("mean rate per") {
            fx::CONFIGS
        } else {
            2
        };
        assert!(
            marks >= at_least,
            "chart {i} has {marks} data marks, expected >= {at_least}"
        );
    }
}

#[test]
fn charts_are_labelled() {
    let (_dir, html) = page();
    let svgs = fx::svgs(&html);
    let bar = svgs.iter().find(|s| s.contains("mean rate per")).unwrap();
    // y axis with the unit, x axis title, every configuration label with its n.
    assert!(bar.contains("dir creates&#x2f;s") || bar.contains("dir creates/s"));
    assert!(bar.contains("\nconfiguration\n"));
    for c in fx::configs() {
        assert!(bar.contains(&c.label), "bar chart lacks {}", c.label);
    }
    assert!(bar.contains("(n=3)") && bar.contains("(n=2)"));
    // Eight labels do not fit side by side at this width: they are rotated.
    assert!(bar.contains("rotate(270"), "long labels must be rotated");
    assert!(
        bar.contains("error bars: 95% confidence interval of the mean"),
        "error bar legend"
    );
    assert!(bar.contains("dots: trials"), "dot legend");
    assert!(bar.contains("hatched: suspect"), "suspect legend");
    assert!(!bar.contains("standard deviation"), "no sd error bars");

    let line = svgs
        .iter()
        .find(|s| s.contains("rate against journal size"))
        .unwrap();
    assert!(line.contains("journal size (log scale)"));
    for (label, n) in [
        ("same-disk", 1),
        ("ramdisk", 1),
        ("\n16M\n", 1),
        ("\n256M\n", 1),
    ] {
        assert!(line.matches(label).count() >= n, "line chart lacks {label}");
    }
    // Three points per line, two lines.
    assert!(line.matches("<circle").count() >= 6);
    assert!(
        !line.contains("\ninternal\n"),
        "a single size is not a line"
    );

    let write = svgs
        .iter()
        .find(|s| s.contains("device write throughput"))
        .unwrap();
    assert!(write.contains("file-system device") && write.contains("journal device"));
    assert!(write.contains("MiB&#x2f;s") || write.contains("MiB/s"));
    assert!(write.contains("time since workload start (s)"));
    assert!(write.contains("\nfile_create\n"), "phase marker");
    let cpu = svgs.iter().find(|s| s.contains("— CPU")).unwrap();
    for k in ["user", "system", "iowait", "CPU %"] {
        assert!(cpu.contains(k), "CPU chart lacks {k}");
    }
}

#[test]
fn page_references_nothing_outside_itself() {
    let (_dir, html) = page();
    for bad in fx::EXTERNAL {
        assert!(!html.contains(bad), "page contains {bad}");
    }
    for (i, _) in html.match_indices("href=") {
        assert!(
            html[i..].starts_with("href=\"#"),
            "non-anchor link: {}",
            &html[i..(i + 60).min(html.len())]
        );
    }
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<style>"));
}

#[test]
fn header_warnings_tables_and_verification_are_shown() {
    let (dir, html) = page();
    for text in [
        "journal-sweep",
        "bench-host-7",
        "Linux 6.1.0-28-amd64 x86_64",
        "Fixture CPU 9000 (8 cores)",
        "16.0 GiB",
        "2026-11-23T10:00:00+00:00",
        "24 (1 failed)",
    ] {
        assert!(html.contains(&fx::escape(text)), "header lacks {text}");
    }
    let records = jbench::results::store::load_records(dir.path()).unwrap();
    let a = report::analyse(&records, &fx::options());
    let warnings = a.all_warnings();
    assert!(
        warnings.iter().any(|w| w.contains("failed")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("suspect")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("ramdisk,16M")),
        "{warnings:?}"
    );
    for w in &warnings {
        assert!(html.contains(&fx::escape(w)), "page lacks warning {w}");
    }
    assert!(html.contains(&fx::escape(fx::FAILED_ERROR)));
    let w = &a.workloads[0];
    let tables = report::workload_tables(w, &a);
    assert_eq!(tables.len(), 3, "times, rates, comparison");
    assert_eq!(html.matches("<table>").count(), 3);
    for t in &tables {
        assert!(html.contains(&fx::escape(&t.title)));
        for row in &t.rows {
            for cell in row {
                assert!(html.contains(&fx::escape(cell)), "page lacks cell {cell}");
            }
        }
    }
    let verdicts = report::workload_verdicts(w, &a).unwrap();
    assert!(html.contains(&fx::escape(verdicts.lines().nth(1).unwrap())));
    // Durable phases have their own section.
    assert!(html.contains("Phase dir_create+syncfs"));
    // Distinct checks per configuration: one journal size line for each.
    assert!(html.contains(&fx::escape(
        "dumpe2fs: journal size 268435456 bytes = requested"
    )));
    assert_eq!(
        html.matches(&fx::escape(
            "&#x2f;proc&#x2f;mounts: data=ordered (ramdisk)"
        ))
        .count()
            + html
                .matches(&fx::escape("/proc/mounts: data=ordered (ramdisk)"))
                .count(),
        3,
        "one check line per ramdisk configuration, not one per trial"
    );
}

#[test]
fn trials_without_monitor_data_say_so() {
    let (_dir, html) = page();
    let n = html
        .matches("class=\"muted no-monitor\">no monitor data<")
        .count();
    assert_eq!(n, fx::records().len() - 1, "every trial but trial 0");
    // Without a results directory, no trial has a timeline.
    let html = jbench::report::html::render(&fx::records(), None, "x", &fx::options()).unwrap();
    assert_eq!(fx::svgs(&html).len(), 2 * fx::PHASES_IN_REPORT);
    assert!(html.contains("no <code>env.json</code>") || html.contains("No <code>env.json</code>"));
}

#[test]
fn cli_writes_the_page_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    fx::write_results_dir(dir.path());
    let spec = "name = \"journal-sweep\"\n[[workload]]\nkind = \"fdtree\"\nname = \"small-deep\"\n";
    std::fs::write(dir.path().join("spec.toml"), spec).unwrap();
    let out_file = dir.path().join("page.html");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jbench"))
        .arg("report")
        .arg(dir.path())
        .arg("--html")
        .arg(&out_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&out_file.display().to_string()), "{stdout}");
    let html = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(fx::svgs(&html).len(), fx::EXPECTED_CHARTS);
}

/// A results directory with `crash.jsonl`: `jbench report` prints the crash section
/// in every format and `--html` draws its chart; the same directory without the file
/// shows none of it.
#[test]
fn cli_reports_the_crash_states_of_a_results_directory() {
    use jbench::results::crash::{CrashRecord, RecoveryTimes, Verdict, CRASH_SCHEMA_VERSION};
    let dir = tempfile::tempdir().unwrap();
    // The states come from crash recordings, numbered after every timed trial as in a
    // `jbench run` with `[crash]` (a timed trial named as a state's source would be
    // taken for a recording: its write log was on).
    let recordings = fx::write_results_dir(dir.path()).len();
    let spec = "name = \"journal-sweep\"\n[[workload]]\nkind = \"fdtree\"\nname = \"small-deep\"\n";
    std::fs::write(dir.path().join("spec.toml"), spec).unwrap();
    let jbench = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_jbench"))
            .arg("report")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8(out.stdout).unwrap()
    };
    let before: Vec<String> = [["--format", "table"], ["--format", "csv"]]
        .iter()
        .map(|a| jbench(a))
        .collect();
    assert!(!before[0].contains("Crash states") && !before[1].contains("crash:"));

    let mut lines = String::new();
    for (k, placement) in ["same-disk", "ramdisk"].iter().enumerate() {
        for (j, size) in fx::SIZES.iter().enumerate() {
            for state in 0..3u64 {
                let r = CrashRecord {
                    schema: CRASH_SCHEMA_VERSION,
                    config: format!("{placement},{}M", size >> 20),
                    workload: "small-deep".into(),
                    trial: recordings + 3 * k + j,
                    state,
                    strategy: "prefix".into(),
                    cut: 100 + state,
                    kept: 90,
                    dropped: 0,
                    torn: None,
                    last_fsync: None,
                    fsynced_files: 4,
                    verdict: Verdict::Ok,
                    evidence: vec!["mount: ok".into()],
                    timings: Some(RecoveryTimes {
                        mount_seconds: 0.1 * (j + 1) as f64 / (k + 1) as f64,
                        journal_only_seconds: Some(0.2),
                        full_fsck_seconds: Some(1.5),
                        replayed_blocks: None,
                        replayed_transactions: None,
                        application_seconds: None,
                        application: None,
                        mount_io: Vec::new(),
                    }),
                    journal_live: None,
                    lost_journal: None,
                    check_seconds: 2.0,
                    filesystem: "ext4".into(),
                    placement: placement.to_string(),
                    mode: "ordered".into(),
                    journal_size: *size,
                    inodes: 65536,
                    negative_control: false,
                    torn_page_control: false,
                    checks_fsync: true,
                    dropped_blocks: 0,
                    stratum: String::new(),
                    coverage: None,
                    user_check: false,
                    hung: false,
                    records_promised: 0,
                    records_lost: None,
                    check_cache: None,
                    judged_by: None,
                    fast_fallback: None,
                    outcome: None,
                };
                lines.push_str(&serde_json::to_string(&r).unwrap());
                lines.push('\n');
            }
        }
    }
    std::fs::write(jbench::results::layout::crash_file(dir.path()), lines).unwrap();
    let table = jbench(&["--format", "table"]);
    assert!(
        table.contains("== Crash states: workload small-deep =="),
        "{table}"
    );
    assert!(table.contains("Recovery times of small-deep"), "{table}");
    let csv = jbench(&["--format", "csv"]);
    // The trial rows come first with their columns unchanged; the answer's columns
    // (the last 11) are filled on each configuration's main-phase row.
    let first = |row: &str| {
        // The first 22 RFC 4180 fields, as written (labels with commas are quoted).
        let (mut quoted, mut fields) = (false, 0);
        let end = row
            .char_indices()
            .find(|&(_, c)| {
                if c == '"' {
                    quoted = !quoted;
                } else if c == ',' && !quoted {
                    fields += 1;
                }
                fields == 22
            })
            .map_or(row.len(), |(i, _)| i);
        row[..end].to_string()
    };
    for (was, now) in before[1].lines().zip(csv.lines()) {
        assert_eq!(first(was), first(now), "the trial rows are unchanged");
    }
    // A row per configuration and verdict: six verdicts.
    assert_eq!(csv.matches(",crash:").count(), 6 * 6, "{csv}");
    let md = jbench(&["--format", "markdown"]);
    assert!(
        md.contains("## Crash states: workload `small-deep`"),
        "{md}"
    );
    let json: serde_json::Value = serde_json::from_str(&jbench(&["--format", "json"])).unwrap();
    assert_eq!(json["crash"].as_array().unwrap().len(), 6);

    let page = dir.path().join("page.html");
    jbench(&["--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    // The crash section's chart, the answer's own figure, and its trade-off figure:
    // the fixture's configurations cover several journal sizes.
    assert_eq!(fx::svgs(&html).len(), fx::EXPECTED_CHARTS + 3);
    assert_eq!(html.matches("data-kind=\"answer\"").count(), 1);
    assert_eq!(html.matches("data-kind=\"crash-recovery\"").count(), 1);
    assert_eq!(html.matches("data-kind=\"tradeoff\"").count(), 1);
    assert!(html.contains("<section id=\"answer\">"));
    assert!(html.contains("<section id=\"crash\">"));
    for bad in fx::EXTERNAL {
        assert!(!html.contains(bad), "page contains {bad}");
    }
}

/// Leaves the fixture results directory and its report.html in JBENCH_SAMPLE_DIR
/// (docs/report-sample.png is a screenshot of it). A tool, not a check: ignored, so
/// it is never counted as a test that passed.
#[test]
#[ignore = "writes the docs sample: JBENCH_SAMPLE_DIR=DIR cargo test --release --test html -- --ignored sample_report_for_the_docs"]
fn sample_report_for_the_docs() {
    let dir = std::env::var_os("JBENCH_SAMPLE_DIR")
        .expect("JBENCH_SAMPLE_DIR names the directory to write the sample into");
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    fx::write_results_dir_with_fsync(&dir);
    let html = jbench::report::html::render_results(
        &jbench::results::open(&dir).unwrap(),
        &fx::options_with_fsync(),
    )
    .unwrap();
    std::fs::write(dir.join("report.html"), html).unwrap();
}
