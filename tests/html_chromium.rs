//! The HTML report as a person sees it: rendered by headless Chromium (Debian's
//! `chromium`, installed by .ci/run). Fails on console errors, on a chart missing or
//! empty in the rendered DOM, and on any request leaving the page (every host name
//! resolves to nothing, so a fetch would show up as a network error).

mod common;
mod html_fixture;

use std::path::Path;
use std::process::Command;

use html_fixture as fx;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    })
}

/// Runs chromium headless on `page` with `extra` arguments; returns (stdout, stderr).
fn run_chromium(bin: &str, page: &Path, profile: &Path, extra: &[&str]) -> (String, String) {
    let url = format!("file://{}", page.display());
    let out = Command::new("timeout")
        .arg("120")
        .arg(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=1",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(&url)
        .output()
        .expect("cannot start chromium");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "chromium failed ({}):\n{}",
        out.status,
        tail(&stderr)
    );
    (stdout, stderr)
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Hosts of Chromium's own background services (time, updates, dictionaries,
/// accounts), which it may contact whatever the page is.
const CHROMIUM_SERVICES: [&str; 5] = [
    "google.com",
    "googleapis.com",
    "gvt1.com",
    "gstatic.com",
    "googleusercontent.com",
];

/// Console messages (the page has no script, so any is a problem) and requests the
/// page made to anything but Chromium's own services.
fn page_problems(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            if l.contains(":CONSOLE") || l.contains("Uncaught") {
                return true;
            }
            let Some((_, url)) = l.split_once("NotifyBeforeURLRequest: ") else {
                return false;
            };
            let host = url
                .split("://")
                .nth(1)
                .unwrap_or("")
                .split(['/', ':', '?'])
                .next()
                .unwrap_or("");
            !CHROMIUM_SERVICES
                .iter()
                .any(|s| host == *s || host.ends_with(&format!(".{s}")))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn chromium_renders_every_chart_without_errors_or_requests() {
    let test = "chromium_renders_every_chart_without_errors_or_requests";
    let bin = chromium();
    if !common::require(
        test,
        bin.is_some(),
        "no chromium (apt-get install chromium; .ci/run installs it)",
    ) {
        return;
    }
    let bin = bin.unwrap();
    let dir = tempfile::tempdir().unwrap();
    fx::write_results_dir(dir.path());
    let html =
        jbench::report::html::render_dir(dir.path(), "journal-sweep", &fx::options()).unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    let profile = dir.path().join("profile");

    let (dom, stderr) = run_chromium(bin, &page, &profile, &["--dump-dom"]);
    let problems = page_problems(&stderr);
    assert!(
        problems.is_empty(),
        "page problems:\n{}",
        problems.join("\n")
    );

    // The parsed page holds every chart, in SVG, each with data drawn.
    assert!(
        dom.contains("jbench report: journal-sweep"),
        "{}",
        tail(&dom)
    );
    let figures = dom.matches("<figure class=\"chart\"").count();
    assert_eq!(figures, fx::EXPECTED_CHARTS, "charts in the DOM");
    let svgs = fx::svgs(&dom);
    assert_eq!(svgs.len(), fx::EXPECTED_CHARTS, "SVG elements in the DOM");
    for (i, svg) in svgs.iter().enumerate() {
        assert!(
            fx::data_marks(svg) >= 2,
            "chart {i} is empty in the DOM:\n{}",
            &svg[..svg.len().min(400)]
        );
        assert!(svg.contains("<text"), "chart {i} has no labels");
    }
    // Nothing outside the page: no URLs, no resources.
    for bad in fx::EXTERNAL {
        assert!(!dom.contains(bad), "DOM contains {bad}");
    }
    for (i, _) in dom.match_indices("href=") {
        assert!(
            dom[i..].starts_with("href=\"#"),
            "non-anchor link in the DOM"
        );
    }
    for tag in ["<img", "<script", "<iframe", "<object", "<embed"] {
        assert!(!dom.contains(tag), "DOM contains {tag}");
    }

    // The checks above catch what they claim: a page with a script error and an
    // external image fails them.
    let bad = dir.path().join("bad.html");
    let broken = html.replace(
        "</body>",
        "<script>undefinedFunction();</script><img alt=\"\" src=\"http://example.invalid/x.png\"></body>",
    );
    std::fs::write(&bad, broken).unwrap();
    let (_, stderr) = run_chromium(bin, &bad, &profile, &["--dump-dom"]);
    let problems = page_problems(&stderr);
    assert!(
        problems.iter().any(|p| p.contains("Uncaught")),
        "a script error went unnoticed: {problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("example.invalid")),
        "an external request went unnoticed: {problems:?}"
    );

    // And it paints: a screenshot is written and is not blank.
    let shot = dir.path().join("shot.png");
    let (_, stderr) = run_chromium(
        bin,
        &page,
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400",
            "--hide-scrollbars",
        ],
    );
    let problems = page_problems(&stderr);
    assert!(
        problems.is_empty(),
        "page problems:\n{}",
        problems.join("\n")
    );
    let png = std::fs::read(&shot).expect("no screenshot");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        png.len() > 30_000,
        "screenshot of {} bytes: blank page?",
        png.len()
    );
}
