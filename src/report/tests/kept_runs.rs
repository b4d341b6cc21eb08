//! The kept runs (`runs/`) re-reported by today's code, and every figure the docs quote
//! from them checked against that report. A quote in a doc is a block opened by
//! `<!-- report runs/DIR -->` (optionally `<!-- report runs/DIR --baseline LABEL -->`)
//! and closed by `<!-- /report -->`; each non-blank line inside must be a line of
//! `jbench report runs/DIR --format markdown [--baseline LABEL]`, verbatim. A change to
//! the analysis that moves a quoted figure, or a hand-edited number, fails here.

use std::path::{Path, PathBuf};

use super::*;

const OPEN: &str = "<!-- report ";
const CLOSE: &str = "<!-- /report -->";
/// The files that quote kept runs; a quote anywhere else is not checked, so keep them here.
const QUOTING: [&str; 3] = ["README.md", "docs/reproducing.md", "docs/apps.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, PartialEq)]
struct Quote {
    /// 1-based line of the opening marker, for the failure message.
    line: usize,
    run: String,
    baseline: Option<String>,
    lines: Vec<(usize, String)>,
}

/// The quotes in `text`, or why a marker cannot be read.
fn quotes(text: &str) -> Result<Vec<Quote>, String> {
    let mut out = Vec::new();
    let mut open: Option<Quote> = None;
    for (i, l) in text.lines().enumerate() {
        let n = i + 1;
        let t = l.trim();
        if let Some(rest) = t.strip_prefix(OPEN) {
            if open.is_some() {
                return Err(format!("line {n}: a quote opens inside another"));
            }
            let args = rest
                .strip_suffix("-->")
                .ok_or_else(|| format!("line {n}: the marker does not end with `-->`"))?;
            let words: Vec<&str> = args.split_whitespace().collect();
            let (run, baseline) = match words.as_slice() {
                [run] => (run.to_string(), None),
                [run, "--baseline", b] => (run.to_string(), Some(b.to_string())),
                _ => {
                    return Err(format!(
                        "line {n}: expected `{OPEN}runs/DIR [--baseline LABEL] -->`"
                    ))
                }
            };
            open = Some(Quote {
                line: n,
                run,
                baseline,
                lines: Vec::new(),
            });
        } else if t == CLOSE {
            let q = open
                .take()
                .ok_or_else(|| format!("line {n}: `{CLOSE}` without a quote open"))?;
            if q.lines.is_empty() {
                return Err(format!("line {}: an empty quote of {}", q.line, q.run));
            }
            out.push(q);
        } else if let Some(q) = open.as_mut() {
            if !t.is_empty() {
                q.lines.push((n, t.to_string()));
            }
        }
    }
    match open {
        Some(q) => Err(format!(
            "line {}: the quote of {} is never closed by `{CLOSE}`",
            q.line, q.run
        )),
        None => Ok(out),
    }
}

/// The quote's lines that `report` does not hold verbatim, as "line N: text".
fn misquoted(q: &Quote, report: &str) -> Vec<String> {
    q.lines
        .iter()
        .filter(|(_, l)| !report.lines().any(|r| r.trim() == l))
        .map(|(n, l)| format!("line {n}: {l}"))
        .collect()
}

fn report_of(run: &Path, baseline: Option<String>, format: Format) -> anyhow::Result<String> {
    let results = crate::results::open(run)?;
    let opts = ReportOptions::of_results(&results, baseline, None)?;
    Ok(environment::render_results(&results, &opts, format))
}

fn kept_runs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("runs"))
        .expect("runs/ is in the repository")
        .map(|e| e.expect("runs/ is readable").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_kept_run_re_reports_in_every_format_and_is_listed() {
    let runs = kept_runs();
    assert!(!runs.is_empty(), "runs/ holds no kept run");
    let index = std::fs::read_to_string(root().join("runs/README.md")).unwrap();
    for run in &runs {
        let name = run.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            index.contains(&format!("`{name}`")),
            "runs/{name} is not in runs/README.md's table: add a row saying what it is and where it is quoted"
        );
        // Opened once, as `jbench report` does, and rendered in every format.
        let results = crate::results::open(run)
            .unwrap_or_else(|e| panic!("runs/{name} no longer opens: {e:#}"));
        let opts = ReportOptions::of_results(&results, None, None)
            .unwrap_or_else(|e| panic!("runs/{name}'s spec no longer gives report options: {e:#}"));
        for format in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
            let text = environment::render_results(&results, &opts, format);
            assert!(
                text.len() > 200,
                "runs/{name}'s {format:?} report is nearly empty:\n{text}"
            );
        }
        html::render_results(&results, &opts)
            .unwrap_or_else(|e| panic!("runs/{name}'s HTML page no longer renders: {e:#}"));
    }
}

#[test]
fn every_figure_quoted_from_a_kept_run_is_in_its_report() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for doc in QUOTING {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        let qs = quotes(&text).unwrap_or_else(|e| panic!("{doc}: {e}"));
        for q in qs {
            let dir = root().join(&q.run);
            let report = match report_of(&dir, q.baseline.clone(), Format::Markdown) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!(
                        "{doc}:{}: cannot re-report {}: {e:#}",
                        q.line, q.run
                    ));
                    continue;
                }
            };
            checked += q.lines.len();
            for miss in misquoted(&q, &report) {
                failures.push(format!("{doc}: {miss}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "lines quoted from kept runs that their reports no longer hold (re-copy them from \
         `jbench report runs/DIR --format markdown`, and reword the prose around them):\n{}",
        failures.join("\n")
    );
    let study_quotes =
        quotes(&std::fs::read_to_string(root().join("docs/reproducing.md")).unwrap()).unwrap();
    // Every kept study run is there to be read beside its study.
    for run in kept_runs() {
        let name = run.file_name().unwrap().to_string_lossy().to_string();
        if name.contains("-study") {
            assert!(
                study_quotes.iter().any(|q| q.run == format!("runs/{name}")),
                "docs/reproducing.md quotes nothing from runs/{name}"
            );
        }
    }
    assert!(checked > 0);
}

#[test]
fn a_quote_is_read_from_its_markers_and_a_changed_figure_is_caught() {
    let doc = "intro\n<!-- report runs/x --baseline same-disk -->\n| a | 1.5 |\n\n- b: 2.0× \
               [1.9×, 2.1×], different\n<!-- /report -->\ntail\n";
    let qs = quotes(doc).unwrap();
    assert_eq!(
        qs,
        vec![Quote {
            line: 2,
            run: "runs/x".into(),
            baseline: Some("same-disk".into()),
            lines: vec![
                (3, "| a | 1.5 |".into()),
                (5, "- b: 2.0× [1.9×, 2.1×], different".into())
            ],
        }]
    );
    let report = "# r\n  | a | 1.5 |\n- b: 2.0× [1.9×, 2.1×], different\n";
    assert!(misquoted(&qs[0], report).is_empty());
    let moved = "# r\n| a | 1.6 |\n- b: 2.0× [1.9×, 2.1×], different\n";
    assert_eq!(
        misquoted(&qs[0], moved),
        vec!["line 3: | a | 1.5 |".to_string()]
    );
}

#[test]
fn a_broken_marker_is_an_error_not_a_quote_skipped() {
    assert!(quotes("<!-- report runs/x -->\n| a |\n")
        .unwrap_err()
        .contains("never closed"));
    assert!(quotes("<!-- /report -->\n")
        .unwrap_err()
        .contains("without a quote open"));
    assert!(quotes("<!-- report runs/x -->\n<!-- /report -->\n")
        .unwrap_err()
        .contains("empty"));
    assert!(
        quotes("<!-- report runs/x --base y -->\nz\n<!-- /report -->\n")
            .unwrap_err()
            .contains("expected")
    );
}
