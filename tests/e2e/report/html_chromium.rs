//! The HTML report as a person sees it: rendered by headless Chromium (Debian's
//! `chromium`, installed by .ci/run). Fails on console errors, on a chart missing or
//! empty in the rendered DOM, and on any request leaving the page (every host name
//! resolves to nothing, so a fetch would show up as a network error).

use crate::common;
use crate::html_fixture;

use std::path::Path;
use std::process::Command;

use html_fixture as fx;

/// Chromium for test `test`, or `None` after reporting the skip (a failure under CI).
fn chromium_for(test: &str) -> Option<&'static str> {
    let bin = chromium();
    if !common::require(
        test,
        bin.is_some(),
        "no chromium (apt-get install chromium; .ci/run installs it)",
    ) {
        return None;
    }
    bin
}

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
    let Some(bin) = chromium_for("chromium_renders_every_chart_without_errors_or_requests") else {
        return;
    };
    let (dir, html, page) = rendered_fixture();
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

/// The fixture's results directory, its HTML report, and the page written into it.
fn rendered_fixture() -> (tempfile::TempDir, String, std::path::PathBuf) {
    let (dir, html) = fx::rendered();
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    (dir, html, page)
}

/// How wide `page` lays out in a window `width` pixels wide: the document's scroll
/// width, read by a script added to a copy of the page (the report itself has none).
fn laid_out_width(bin: &str, page: &Path, profile: &Path, width: u32) -> u32 {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = page.with_extension("probe.html");
    std::fs::write(
        &probe,
        html.replace(
            "</body>",
            "<script>document.title = 'W' + document.documentElement.scrollWidth;</script></body>",
        ),
    )
    .unwrap();
    let (dom, _) = run_chromium(
        bin,
        &probe,
        profile,
        &["--dump-dom", &format!("--window-size={width},1000")],
    );
    let start = dom.find("<title>W").expect("the probe set no title") + "<title>W".len();
    dom[start..start + dom[start..].find('<').unwrap()]
        .parse()
        .unwrap()
}

/// A 1400-pixel window shows the whole report's width: nothing scrolls sideways (a
/// wide table scrolls inside its own box). The control: an element 2000 px wide
/// makes the same reading exceed the window.
#[test]
fn the_report_fits_a_1400_pixel_window() {
    let Some(bin) = chromium_for("the_report_fits_a_1400_pixel_window") else {
        return;
    };
    let (dir, html, page) = rendered_fixture();
    let profile = dir.path().join("profile");
    let width = laid_out_width(bin, &page, &profile, 1400);
    assert!(
        width <= 1400,
        "the report lays out {width} px wide in a 1400 px window"
    );
    let wide = dir.path().join("wide.html");
    std::fs::write(
        &wide,
        html.replace("</body>", "<div style=\"width:2000px\">x</div></body>"),
    )
    .unwrap();
    let width = laid_out_width(bin, &wide, &profile, 1400);
    assert!(width > 1400, "the probe missed a 2000 px element: {width}");
}

/// The elements of `svg` whose class is `class`.
fn with_class<'a>(svg: &'a str, class: &str) -> Vec<&'a str> {
    let needle = format!("class=\"{class}\"");
    svg.split('<').filter(|e| e.contains(&needle)).collect()
}

/// The value of attribute `name` of element `el` (as the DOM serialises it).
fn attr_of<'a>(el: &'a str, name: &str) -> Option<&'a str> {
    let start = el.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = el[start..].find('"')?;
    Some(&el[start..start + len])
}

fn num(el: &str, name: &str) -> f64 {
    attr_of(el, name)
        .unwrap_or_else(|| panic!("no {name} in {el}"))
        .parse()
        .unwrap()
}

/// The figures of `kind` in the DOM: (their SVG, the HTML after the figure up to the
/// next phase heading or section, where the phase's table is).
fn figures<'a>(dom: &'a str, kind: &str) -> Vec<(&'a str, &'a str)> {
    let marker = format!("<figure class=\"chart\" data-kind=\"{kind}\"");
    dom.match_indices(&marker)
        .map(|(i, _)| {
            let rest = &dom[i..];
            let svg = fx::svgs(rest)[0];
            let after = &rest[rest.find("</figure>").unwrap()..];
            let end = ["<h3>", "</section>"]
                .iter()
                .filter_map(|m| after.find(m))
                .min()
                .unwrap_or(after.len());
            (svg, &after[..end])
        })
        .collect()
}

/// The rows of the first `<table class="intervals">` in `html`, cells as text.
fn interval_rows(html: &str) -> Vec<Vec<String>> {
    let start = html
        .find("<table class=\"intervals\">")
        .expect("no interval table");
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    body.split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td>")
                .skip(1)
                .map(|c| c[..c.find("</td>").unwrap()].to_string())
                .collect()
        })
        .collect()
}

/// Half a unit of the last digit `printed` shows: how far the figure it rounds may be.
fn rounding(printed: &str) -> f64 {
    let decimals = printed.split_once('.').map_or(0, |(_, d)| d.len());
    0.5 * 10f64.powi(-(decimals as i32)) + 1e-9
}

/// Successful trials per (workload, configuration) in the fixture's records.
fn ok_trials(records: &[jbench::results::record::TrialRecord], w: &str, c: &str) -> usize {
    records
        .iter()
        .filter(|r| r.is_ok() && r.workload.name == w && r.config.label == c)
        .count()
}

/// Points of a polyline's `points` attribute.
fn polyline_points(el: &str) -> usize {
    attr_of(el, "points").map_or(0, |p| p.split_whitespace().count())
}

#[test]
fn chromium_shows_trials_intervals_latency_and_no_stub_timelines() {
    let Some(bin) = chromium_for("chromium_shows_trials_intervals_latency_and_no_stub_timelines")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let records = fx::write_results_dir_with_fsync(dir.path());
    let html = jbench::report::html::render_results(
        &jbench::results::open(dir.path()).unwrap(),
        &fx::options_with_fsync(),
    )
    .unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    let (dom, stderr) = run_chromium(bin, &page, &dir.path().join("p"), &["--dump-dom"]);
    let problems = page_problems(&stderr);
    assert!(
        problems.is_empty(),
        "page problems:\n{}",
        problems.join("\n")
    );
    assert_eq!(fx::svgs(&dom).len(), fx::EXPECTED_CHARTS_WITH_FSYNC);

    // Every bar: one dot per successful trial; an error bar exactly where the table
    // below the chart puts the 95% interval, none where it prints none.
    let bars = figures(&dom, "bar");
    assert_eq!(bars.len(), fx::PHASES_IN_REPORT + fx::FSYNC_PHASES.len());
    let (mut checked_dots, mut checked_intervals) = (0, 0);
    for (svg, after) in &bars {
        let workload = if svg.contains(&format!("{}: ", fx::FSYNC_WORKLOAD)) {
            fx::FSYNC_WORKLOAD
        } else {
            "small-deep"
        };
        let dots = with_class(svg, "trial");
        let rects = with_class(svg, "bar");
        let errors = with_class(svg, "ci95");
        let rows = interval_rows(after);
        assert_eq!(rows.len(), rects.len(), "a row per bar");
        for row in &rows {
            let [config, n, mean, low, high] = &row[..] else {
                panic!("row {row:?}")
            };
            let mine = |e: &&&str| attr_of(e, "data-config") == Some(config.as_str());
            let n: usize = n.parse().unwrap();
            assert_eq!(
                n,
                ok_trials(&records, workload, config),
                "{workload} {config}"
            );
            assert_eq!(dots.iter().filter(mine).count(), n, "dots of {config}");
            checked_dots += usize::from(n >= 2);
            let rect = *rects.iter().find(mine).expect("no bar");
            let printed_mean: f64 = mean.parse().unwrap();
            assert!((num(rect, "data-mean") - printed_mean).abs() <= rounding(mean));
            let error = errors.iter().find(mine).copied();
            if n < 2 {
                assert_eq!((low.as_str(), high.as_str()), ("–", "–"));
                assert!(error.is_none(), "{config}: an error bar with one trial");
                continue;
            }
            let error = error.unwrap_or_else(|| panic!("{config}: no error bar"));
            let (lo, hi): (f64, f64) = (low.parse().unwrap(), high.parse().unwrap());
            assert!(
                (num(error, "data-low") - lo).abs() <= rounding(low),
                "{config}"
            );
            assert!(
                (num(error, "data-high") - hi).abs() <= rounding(high),
                "{config}"
            );
            // And the pixels: the bar spans 0 to the mean, which sets the scale the
            // error bar's caps must sit on.
            let bottom = num(rect, "y") + num(rect, "height");
            let scale = num(rect, "height") / num(rect, "data-mean");
            let d = attr_of(error, "d").unwrap();
            let ys: Vec<f64> = d
                .split('M')
                .filter(|s| !s.is_empty())
                .map(|s| {
                    s.split(['H', 'V'])
                        .next()
                        .unwrap()
                        .split(' ')
                        .nth(1)
                        .unwrap()
                })
                .map(|y| y.parse().unwrap())
                .collect();
            let tol = 2.0 / scale + rounding(high);
            assert!(
                ((bottom - ys[0]) / scale - hi).abs() <= tol,
                "{config}: top cap"
            );
            // A bound below 0 is drawn at the axis.
            assert!(
                ((bottom - ys[2]) / scale - lo.max(0.0)).abs() <= tol,
                "{config}: low cap"
            );
            checked_intervals += 1;
        }
    }
    assert!(
        checked_dots >= 30 && checked_intervals >= 30,
        "{checked_dots} {checked_intervals}"
    );

    // The fsync workload's phases each have a latency chart, a curve per trial.
    let latency = figures(&dom, "latency");
    assert_eq!(latency.len(), fx::FSYNC_PHASES.len());
    let fsync_ok = records
        .iter()
        .filter(|r| r.is_ok() && r.workload.name == fx::FSYNC_WORKLOAD)
        .count();
    for ((svg, _), phase) in latency.iter().zip(fx::FSYNC_PHASES) {
        assert!(
            svg.contains(&format!("{}: {phase} — latency", fx::FSYNC_WORKLOAD)),
            "{}",
            &svg[..400]
        );
        assert_eq!(with_class(svg, "latency").len(), fsync_ok);
        assert!(svg.contains("p99") && svg.contains("log scale"));
    }

    // No timeline of a point or two: every drawn series has enough samples, and the
    // short trial says why it has none.
    let min = jbench::report::html::MIN_TIMELINE_SAMPLES;
    let timelines: Vec<_> = ["timeline-write", "timeline-cpu"]
        .iter()
        .flat_map(|k| figures(&dom, k))
        .collect();
    assert_eq!(timelines.len(), 2, "trial 0's two timelines only");
    for (svg, _) in &timelines {
        // Series are drawn 2 px wide; legend marks (3 px) and phase lines (1 px) are not
        // series.
        let series: Vec<&str> = svg
            .split('<')
            .filter(|e| e.starts_with("polyline") && e.contains("stroke-width=\"2\""))
            .collect();
        assert!(!series.is_empty());
        for s in series {
            assert!(
                polyline_points(s) >= min,
                "a timeline of {} points",
                polyline_points(s)
            );
        }
    }
    assert!(dom.contains(&format!(
        "trial shorter than {min} sampling intervals ({} sample(s)): no timeline",
        fx::SHORT_MONITOR_SAMPLES
    )));
}

/// What a person sees first, in a 1280×800 window: the takeaway sentence and every
/// configuration's short line, the RAM-disk journal's leading with the power cut that
/// empties it, and the top of the answer's figure. Read by a script added to a copy of
/// the page (the report has none), which measures where each element was laid out.
#[test]
fn the_first_screen_holds_the_takeaway_and_every_short_line() {
    let test = "the_first_screen_holds_the_takeaway_and_every_short_line";
    let Some(bin) = chromium_for(test) else {
        return;
    };
    let dir = common::scratch("first-screen-");
    fx::write_crash_results_dir(dir.path(), 20);
    let page = dir.path().join("report.html");
    common::run_ok(
        common::jbench()
            .arg("report")
            .arg(dir.path())
            .arg("--html")
            .arg(&page),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let probe = dir.path().join("probe.html");
    let script = r#"<script>
const bottom = s => Math.max(0, ...[...document.querySelectorAll(s)].map(e => e.getBoundingClientRect().bottom));
const chart = document.querySelector('figure.chart[data-kind="answer"]');
const ram = [...document.querySelectorAll('li.glance-line')].find(e => e.textContent.startsWith('ramdisk'));
document.title = 'P' + JSON.stringify({
  takeaways: document.querySelectorAll('p.takeaway').length,
  takeaway_bottom: bottom('p.takeaway'),
  lines: document.querySelectorAll('li.glance-line').length,
  lines_bottom: bottom('li.glance-line'),
  chart_top: chart ? chart.getBoundingClientRect().top : -1,
  ram: ram ? ram.textContent : '',
  ram_emptied: ram ? ram.classList.contains('emptied') : false,
}) + 'Q';
</script></body>"#;
    std::fs::write(&probe, html.replace("</body>", script)).unwrap();
    let profile = dir.path().join("profile");
    let (dom, _) = run_chromium(
        bin,
        &probe,
        &profile,
        &["--dump-dom", "--window-size=1280,800", "--hide-scrollbars"],
    );
    let start = dom.find("<title>P").expect("the probe set no title") + "<title>P".len();
    let json = &dom[start..start + dom[start..].find("Q</title>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(&json.replace("&quot;", "\"")).unwrap();
    assert_eq!(v["takeaways"], 1, "{v}");
    assert_eq!(v["lines"], fx::FSYNC_CONFIGS.len(), "{v}");
    assert!(v["takeaway_bottom"].as_f64().unwrap() <= 800.0, "{v}");
    assert!(v["lines_bottom"].as_f64().unwrap() <= 800.0, "{v}");
    let chart_top = v["chart_top"].as_f64().unwrap();
    assert!(
        (0.0..800.0).contains(&chart_top),
        "the answer's figure starts above the fold: {v}"
    );
    let ram = v["ram"].as_str().unwrap();
    let after_name = ram.trim_start_matches("ramdisk,16M").trim_start();
    assert!(
        after_name.starts_with("power cut empties journal: mount fails 20/20"),
        "the RAM-disk line leads with the power cut: {ram}"
    );
    assert_eq!(v["ram_emptied"], true, "{v}");
    // The sentence never puts the journal on the RAM disk.
    assert!(!html.contains("→ Use ramdisk"), "{html}");
}
