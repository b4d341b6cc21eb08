//! Tests of the HTML page's pieces: monitor lines, axis rounding, inline SVG, bars,
//! latency and timeline charts; `answer` the answer's figure on a page with crash
//! states.

use super::bars::*;
use super::charts::*;
use super::latency::*;
use super::marks::*;
use crate::analysis::stats::Summary;
use crate::monitor::series::parse_series;

#[test]
fn monitor_lines_parse_and_bad_ones_are_counted() {
    let text = r#"{"t": 1.0, "phase": "a", "devices": {"fs": {"write_kib_s": 5.0, "read_kib_s": 0.0, "in_flight": 1}}, "cpu": {"user": 1.0, "system": 2.0, "iowait": 3.0}, "dirty_kib": 10, "writeback_kib": 0}
not json
{"t": 0.0, "phase": "a", "devices": {}}
"#;
    let (samples, bad) = parse_series(text);
    assert_eq!(bad, 1);
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0].t, 0.0);
    assert_eq!(samples[1].devices["fs"].write_kib_s, 5.0);
    assert_eq!(samples[1].cpu.as_ref().unwrap().iowait, 3.0);
}

#[test]
fn nice_max_rounds_up() {
    assert_eq!(nice_max(0.0), 1.0);
    assert_eq!(nice_max(93.0), 100.0);
    assert_eq!(nice_max(1100.0), 1200.0);
    assert!(nice_max(7.3) >= 7.3);
}

#[test]
fn svg_is_inlined_without_namespace_url() {
    let bars = vec![bar("a", &[9.0, 10.0, 11.0], false)];
    let svg = bar_chart("t", "x/s", &bars, 60.0).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(!svg.contains("http"), "{svg}");
}

/// The legend of `d` is drawn (its frame is in the SVG) and covers no bar, point or
/// error bar.
fn assert_legend_hides_nothing(what: &str, d: &Drawn) {
    let legend = d.legend.unwrap_or_else(|| panic!("{what}: no legend"));
    let frame = format!(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"",
        legend.l,
        legend.t,
        legend.r - legend.l,
        legend.b - legend.t
    );
    assert!(d.svg.contains(&frame), "{what}: no {frame} in\n{}", d.svg);
    assert!(!d.data.is_empty(), "{what}: no data marks");
    for m in &d.data {
        assert!(
            !legend.overlaps(m),
            "{what}: legend {legend:?} covers {m:?}"
        );
    }
}

#[test]
fn legends_cover_no_bar_or_point() {
    // The tallest bar at the right, under where an upper-right legend would sit, like
    // a 1G journal's among smaller ones; one suspect bar for a longer legend.
    let bars: Vec<Bar> = (0..7)
        .map(|i| {
            let m = 100.0 * (i + 1) as f64;
            bar(
                &format!("same-disk,{}M", 16 << i),
                &[m - 12.0, m, m + 12.0],
                i == 2,
            )
        })
        .collect();
    let d = bar_chart_drawn("t", "dir creates/s", &bars, 60.0).unwrap();
    assert_legend_hides_nothing("bar chart", &d);
    assert_eq!(
        d.data.len(),
        7 * 5,
        "7 bars, their error bars and 3 dots each"
    );

    let lines: Vec<Line> = (0..5)
        .map(|k| Line {
            name: format!("placement {k}, a rather long series name"),
            points: (0..4)
                .map(|i| (16u64 << (20 + 2 * i), 50.0 * (i + k + 1) as f64, 5.0))
                .collect(),
        })
        .collect();
    let d = line_chart_drawn("t", "file creates/s", &lines).unwrap();
    assert_legend_hides_nothing("line chart", &d);

    let series: Vec<Series> = ["file-system device", "journal device"]
        .iter()
        .map(|n| Series {
            name: n.to_string(),
            points: (0..50).map(|t| (t as f64, 100.0 + t as f64)).collect(),
        })
        .collect();
    let d = timeline_chart_drawn("t", "MiB/s", &series, &[(0.0, "a".into())], 190, None).unwrap();
    assert_legend_hides_nothing("timeline", &d);

    // Recovery times: (journal bytes, median, p95); the largest journal's whisker
    // reaches highest, at the right.
    let lines: Vec<Line> = ["same-disk", "second-disk", "ramdisk"]
        .iter()
        .enumerate()
        .map(|(k, n)| Line {
            name: n.to_string(),
            points: (0..4)
                .map(|i| {
                    let median = 0.05 * (i + 1) as f64 / (k + 1) as f64;
                    (16u64 << (20 + 2 * i), median, median * 1.6)
                })
                .collect(),
        })
        .collect();
    let d = recovery_chart_drawn("t", "mount seconds", &lines).unwrap();
    assert_legend_hides_nothing("recovery chart", &d);
    assert_eq!(d.data.len(), 2 * 12, "12 points and their whiskers");
    assert!(d.svg.contains("whisker up to the 95th percentile"));
}

#[test]
fn recovery_whiskers_span_median_to_p95_and_only_when_above() {
    // One point's p95 equals its median: a point, no whisker, and with no whisker at
    // all no whisker legend.
    let flat = vec![Line {
        name: "internal".into(),
        points: vec![(1 << 24, 0.2, 0.2), (1 << 26, 0.3, 0.3)],
    }];
    let d = recovery_chart_drawn("t", "mount seconds", &flat).unwrap();
    assert_eq!(d.data.len(), 2);
    assert!(!d.svg.contains("whisker"), "{}", d.svg);
    let one = vec![Line {
        name: "internal".into(),
        points: vec![(1 << 24, 0.2, 0.5), (1 << 26, 0.3, 0.3)],
    }];
    let d = recovery_chart_drawn("t", "mount seconds", &one).unwrap();
    assert_eq!(d.data.len(), 3);
    // The whisker runs from the median's point up to p95: its box holds the point's
    // centre and reaches higher (smaller y) than the point's.
    let (point, whisker) = (d.data[0], d.data[2]);
    let centre_y = (point.t + point.b) / 2;
    assert!(
        whisker.b >= centre_y - 1 && whisker.b <= centre_y + 1,
        "{point:?} {whisker:?}"
    );
    assert!(whisker.t < point.t, "{point:?} {whisker:?}");
}

#[test]
fn legends_stay_inside_the_chart_and_charts_without_data_have_none() {
    let none = vec![Bar {
        label: "a".into(),
        summary: None,
        trials: vec![],
        suspect: false,
        baseline: false,
    }];
    assert_eq!(
        bar_chart_drawn("t", "x/s", &none, 60.0).unwrap().legend,
        None
    );
    assert_eq!(line_chart_drawn("t", "x/s", &[]).unwrap().legend, None);
    // Names too long for a row are cut; many names wrap onto more rows, and the
    // chart grows to hold them.
    let lines: Vec<Line> = (0..12)
        .map(|k| Line {
            name: format!("line {k} {}", "x".repeat(k * 20)),
            points: vec![(1 << 24, 10.0 + k as f64, 1.0), (1 << 30, 20.0, 0.0)],
        })
        .collect();
    let d = line_chart_drawn("t", "x/s", &lines).unwrap();
    let legend = d.legend.unwrap();
    let height: i32 = d
        .svg
        .split("height=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        legend.r < WIDTH as i32 && legend.b < height,
        "{legend:?} in {WIDTH}x{height}"
    );
    assert!(
        d.svg.contains("line 11 xxx") && d.svg.contains('…'),
        "{}",
        d.svg
    );
    assert_legend_hides_nothing("many long lines", &d);
}

/// A bar of the rates `trials`, summarised as the analysis does.
fn bar(label: &str, trials: &[f64], suspect: bool) -> Bar {
    Bar {
        label: label.to_string(),
        summary: Summary::of(trials),
        trials: trials.to_vec(),
        suspect,
        baseline: false,
    }
}

/// The elements of `svg` whose class is `class`.
fn with_class<'a>(svg: &'a str, class: &str) -> Vec<&'a str> {
    let needle = format!("class=\"{class}\"");
    svg.split('<').filter(|e| e.contains(&needle)).collect()
}

/// The value of attribute `name` of element `el`.
fn attr_of<'a>(el: &'a str, name: &str) -> &'a str {
    let start = el
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("no {name} in {el}"))
        + name.len()
        + 3;
    let len = el[start..].find('"').unwrap();
    &el[start..start + len]
}

fn num(el: &str, name: &str) -> f64 {
    attr_of(el, name).parse().unwrap()
}

#[test]
fn bars_show_every_trial_and_the_95_interval_of_the_mean() {
    let a = bar("a,16M", &[100.0, 100.0, 130.0], false);
    let b = bar("b", &[80.0, 90.0], false);
    let one = bar("solo", &[70.0], false);
    let (sa, sb) = (a.summary.unwrap(), b.summary.unwrap());
    let d = bar_chart_drawn("t", "x/s", &[a, b, one], 60.0).unwrap();
    let dots = with_class(&d.svg, "trial");
    let of = |c: &str| {
        dots.iter()
            .filter(|e| attr_of(e, "data-config") == c)
            .count()
    };
    assert_eq!((of("a,16M"), of("b"), of("solo")), (3, 2, 1));
    // Two equal trials are drawn apart.
    let a_x: Vec<f64> = dots.iter().take(2).map(|e| num(e, "cx")).collect();
    assert_ne!(a_x[0], a_x[1], "{dots:?}");
    // One error bar per bar with an interval, spanning exactly the summary's.
    let ci = with_class(&d.svg, "ci95");
    assert_eq!(ci.len(), 2, "none for the single trial: {ci:?}");
    for (el, s) in ci.iter().zip([sa, sb]) {
        assert_eq!(num(el, "data-low"), s.ci95_low.unwrap());
        assert_eq!(num(el, "data-high"), s.ci95_high.unwrap());
    }
    assert!(d
        .svg
        .contains("error bars: 95% confidence interval of the mean"));
    assert!(d.svg.contains("dots: trials"));
    assert!(!d.svg.contains("standard deviation"));
}

/// The y pixel of the error bar's top and bottom caps, from its path.
fn cap_ys(el: &str) -> (f64, f64) {
    let d = attr_of(el, "d");
    let ys: Vec<f64> = d
        .split('M')
        .filter(|s| !s.is_empty())
        .map(|s| s.split(['H', 'V']).next().unwrap())
        .map(|xy| xy.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    (ys[0], ys[2])
}

#[test]
fn error_bar_pixels_match_the_interval_on_the_bar_scale() {
    let bars = vec![
        bar("a", &[500.0, 620.0, 700.0, 540.0], false),
        bar("b", &[300.0, 310.0, 330.0], false),
    ];
    let d = bar_chart_drawn("t", "x/s", &bars, 60.0).unwrap();
    let rects = with_class(&d.svg, "bar");
    let ci = with_class(&d.svg, "ci95");
    for ((rect, el), b) in rects.iter().zip(&ci).zip(&bars) {
        let s = b.summary.unwrap();
        let (bottom, height) = (num(rect, "y") + num(rect, "height"), num(rect, "height"));
        // Pixels per unit from the bar, which spans 0 to the mean.
        let scale = height / s.mean;
        let (top, low) = cap_ys(el);
        let hi = (bottom - top) / scale;
        let lo = (bottom - low) / scale;
        let tol = 2.0 / scale;
        assert!((hi - s.ci95_high.unwrap()).abs() <= tol, "{hi} vs {s:?}");
        assert!((lo - s.ci95_low.unwrap()).abs() <= tol, "{lo} vs {s:?}");
    }
}

#[test]
fn an_interval_reaching_zero_is_drawn_down_to_the_axis() {
    // So spread that the t interval would go below 0: the mean of rates cannot, so
    // the interval stops at 0, and so does its error bar.
    let b = bar("noisy", &[10.0, 100.0, 300.0], false);
    let s = b.summary.unwrap();
    assert_eq!(s.ci95_low, Some(0.0), "{s:?}");
    let d = bar_chart_drawn("t", "x/s", &[b], 60.0).unwrap();
    let rect = with_class(&d.svg, "bar")[0];
    let ci = with_class(&d.svg, "ci95")[0];
    assert_eq!(num(ci, "data-low"), 0.0);
    let axis = num(rect, "y") + num(rect, "height");
    assert_eq!(cap_ys(ci).1, axis);
}

#[test]
fn suspect_bars_are_hatched_in_their_own_colour_not_grey() {
    let mut base = bar("internal", &[10.0, 11.0], true);
    base.baseline = true;
    let bars = vec![base, bar("ramdisk", &[20.0, 21.0], false)];
    let d = bar_chart_drawn("t", "x/s", &bars, 60.0).unwrap();
    let hatch = with_class(&d.svg, "suspect-hatch");
    assert_eq!(hatch.len(), 1);
    assert_eq!(attr_of(hatch[0], "data-config"), "internal");
    let fills: Vec<&str> = with_class(&d.svg, "bar")
        .iter()
        .map(|e| attr_of(e, "fill"))
        .collect();
    assert_eq!(fills, vec![hex(BAR), hex(BAR)].as_slice());
    assert!(!d.svg.contains("#AAAAAA"), "grey is gone");
    assert!(d
        .svg
        .contains("hatched: suspect, mean phase time under 60 s"));
    assert!(d.svg.contains("internal (baseline, n=2)"), "{}", d.svg);
    // Without a suspect bar, no hatching and no legend entry for it.
    let d = bar_chart_drawn("t", "x/s", &bars[1..], 60.0).unwrap();
    assert!(with_class(&d.svg, "suspect-hatch").is_empty());
    assert!(!d.svg.contains("hatched"));
}

#[test]
fn hatch_lines_stay_inside_their_rectangle() {
    let r = Px {
        l: 10,
        t: 20,
        r: 60,
        b: 200,
    };
    let segs = hatch_segments(r, 7);
    assert!(segs.len() >= (50 + 180) / 7 - 1, "{}", segs.len());
    for (a, b) in &segs {
        for (x, y) in [a, b] {
            assert!(
                (r.l..=r.r).contains(x) && (r.t..=r.b).contains(y),
                "{a:?} {b:?}"
            );
        }
        // Diagonal, rising to the right.
        assert_eq!(b.0 - a.0, a.1 - b.1, "{a:?} {b:?}");
        assert!(b.0 > a.0);
    }
    assert_eq!(segments_d(&segs[..1]).matches('M').count(), 1);
    let dot = Px {
        l: 0,
        t: 0,
        r: 1,
        b: 1,
    };
    assert!(hatch_segments(dot, 7).is_empty());
}

#[test]
fn jitter_spreads_dots_symmetrically_and_narrowly() {
    assert_eq!(jitter(0, 1), 0.0);
    for n in [2, 3, 10, 40] {
        let xs: Vec<f64> = (0..n).map(|k| jitter(k, n)).collect();
        assert!(xs.windows(2).all(|w| w[1] > w[0]), "{xs:?}");
        assert!((xs[0] + xs[n - 1]).abs() < 1e-12, "{xs:?}");
        assert!(xs[n - 1] <= 0.2 + 1e-12, "inside the bar: {xs:?}");
    }
}

#[test]
fn svg_elements_go_before_the_closing_tag_with_attributes_escaped() {
    let svg = with_elements("<svg><rect/></svg>", &["<circle/>".to_string()]);
    assert_eq!(svg, "<svg><rect/><circle/>\n</svg>");
    assert_eq!(with_elements("<svg></svg>", &[]), "<svg></svg>");
    assert_eq!(attr(r#"a"b<c>&'d"#), "a&quot;b&lt;c&gt;&amp;&#39;d");
}

#[test]
fn interval_table_prints_what_the_error_bars_span() {
    let bars = vec![
        bar("a", &[1000.0, 1100.0, 1250.0], false),
        bar("one", &[5.0], false),
        Bar {
            label: "none".into(),
            summary: None,
            trials: vec![],
            suspect: false,
            baseline: false,
        },
    ];
    let t = interval_table("x/s", &bars);
    assert_eq!(t.rows.len(), 2, "no row without data");
    let s = bars[0].summary.unwrap();
    assert_eq!(t.rows[0][1], "3");
    for (cell, v) in t.rows[0][2..]
        .iter()
        .zip([s.mean, s.ci95_low.unwrap(), s.ci95_high.unwrap()])
    {
        let printed: f64 = cell.parse().unwrap();
        assert!((printed - v).abs() <= 0.05, "{cell} vs {v}");
    }
    assert_eq!(t.rows[1][3..], ["–", "–"]);
    assert_eq!(fmt_figure(1234.56), "1234.6");
    assert_eq!(fmt_figure(0.012345), "0.01235");
    assert_eq!(fmt_figure(0.0), "0.0");
}

/// A successful fsync trial of workload `w` with the given phases.
fn record(trial: usize, label: &str, phases: Vec<crate::workload::PhaseResult>) -> TrialRecord {
    let mut r = crate::run::adaptive::tests::rec(trial, label, "w", 1.0);
    r.workload.kind = "fsync".into();
    r.workload.params = serde_json::Value::Null;
    r.workload.durable = true;
    r.phases = phases;
    r
}

use crate::results::record::TrialRecord;
use crate::workload::{Latency, PhaseResult};

fn phase(ops: u64, seconds: f64, p50: f64) -> PhaseResult {
    PhaseResult {
        name: "create_fsync".into(),
        seconds,
        ops,
        op_unit: "file creates".into(),
        durable_seconds: Some(seconds * 2.0),
        latency: Some(Latency {
            count: ops,
            p50_us: p50,
            p95_us: p50 * 3.0,
            p99_us: p50 * 5.0,
            p999_us: None,
            max_us: p50 * 40.0,
        }),
        ..PhaseResult::default()
    }
}

#[test]
fn trial_rates_are_the_figures_the_analysis_summarises() {
    let mut records = vec![
        record(2, "a", vec![phase(1000, 4.0, 100.0)]),
        record(0, "a", vec![phase(1000, 2.0, 100.0)]),
        record(1, "b", vec![phase(1000, 1.0, 100.0)]),
        record(3, "a", vec![phase(1000, 5.0, 100.0)]),
    ];
    records[3].status = crate::results::record::Status::Failed;
    let a = crate::report::analyse(&records, &Default::default());
    let w = &a.workloads[0];
    let ca = w.configs.iter().find(|c| c.label == "a").unwrap();
    let rates = |name: &str| {
        let i = w.phases.iter().position(|p| p.name == name).unwrap();
        ca.phases[i].trial_rates.clone()
    };
    // Trial order, failed trials left out, the durable time for `+syncfs`.
    assert_eq!(rates("create_fsync"), [500.0, 250.0]);
    assert_eq!(rates("create_fsync+syncfs"), [250.0, 125.0]);
    for p in &ca.phases {
        assert_eq!(Summary::of(&p.trial_rates), p.rate, "{}", p.phase);
    }
}

/// fio's sync calls are timed apart from its writes: a job with fdatasync gets a
/// chart of each kind fio names, each from its own figures.
#[test]
fn fio_gets_a_chart_per_latency_it_names() {
    let lat = |p50: f64| Latency {
        count: 100,
        p50_us: p50,
        p95_us: p50 * 2.0,
        p99_us: p50 * 3.0,
        p999_us: None,
        max_us: p50 * 4.0,
    };
    let mut p = phase(100, 1.0, 14.0);
    p.fio_latency = Some(crate::workload::FioLatency {
        clat: Some(lat(14.0)),
        sync: Some(lat(3300.0)),
        lat: Some(lat(15.0)),
    });
    let records = vec![record(0, "a", vec![p])];
    let order = vec!["a".to_string()];
    let p50 = |k| phase_curves(&records, "w", "create_fsync", &order, k)[0].points[0].1;
    assert_eq!(p50(LatencyKind::Recorded), 14.0);
    assert_eq!(p50(LatencyKind::FioSync), 3300.0);
    assert_eq!(p50(LatencyKind::FioTotal), 15.0);
    assert_eq!(
        LatencyKind::FioSync.title("fio"),
        "sync latency (fsync/fdatasync calls)"
    );
    assert_eq!(
        LatencyKind::Recorded.title("fio"),
        "completion latency (clat)"
    );
}

#[test]
fn latency_chart_draws_a_curve_per_trial_a_colour_per_configuration() {
    let records = vec![
        record(0, "a", vec![phase(1000, 2.0, 100.0)]),
        record(1, "b", vec![phase(1000, 1.0, 40.0)]),
        record(2, "a", vec![phase(1000, 2.0, 120.0)]),
        record(3, "b", vec![phase(0, 1.0, 0.0)]),
    ];
    let order = vec!["b".to_string(), "a".to_string()];
    let curves = phase_curves(&records, "w", "create_fsync", &order, LatencyKind::Recorded);
    let labels: Vec<&str> = curves.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        ["b", "a", "a"],
        "configuration order; no empty histogram"
    );
    assert_eq!(curves[0].points[0], (50.0, 40.0));
    assert_eq!(curves[0].points[3], (100.0, 1600.0));
    assert!(phase_curves(&records, "w", "remove", &order, LatencyKind::Recorded).is_empty());
    // No fio figures in these records: no sync or total curve.
    assert!(phase_curves(&records, "w", "create_fsync", &order, LatencyKind::FioSync).is_empty());
    let d = latency_chart_drawn("t", &curves).unwrap();
    let lines = with_class(&d.svg, "latency");
    assert_eq!(lines.len(), 3);
    let stroke = |i: usize| attr_of(lines[i], "stroke");
    assert_eq!(stroke(1), stroke(2), "one colour per configuration");
    assert_ne!(stroke(0), stroke(1));
    assert_eq!(
        attr_of(lines[1], "data-points"),
        "p50:100 p95:300 p99:500 max:4000"
    );
    // Rising latency is drawn rising (smaller y), percentiles left to right.
    let pts: Vec<(i32, i32)> = attr_of(lines[1], "points")
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect();
    assert!(
        pts.windows(2).all(|w| w[1].0 > w[0].0 && w[1].1 < w[0].1),
        "{pts:?}"
    );
    for name in ["p50", "p95", "p99", "max", "latency (µs, log scale)"] {
        assert!(d.svg.contains(name), "no {name}");
    }
    assert_legend_hides_nothing("latency chart", &d);
}

/// `n` monitor samples a second apart, both devices and the CPU.
fn monitor_lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            let line = serde_json::json!({
                "t": i as f64,
                "phase": "create_fsync",
                "devices": {"fs": {"write_kib_s": 100.0 + i as f64, "read_kib_s": 0.0, "in_flight": 1}},
                "cpu": {"user": 1.0, "system": 2.0, "iowait": 3.0},
            });
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn timelines_need_enough_samples_and_say_why_they_are_absent() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![
        record(0, "a", vec![phase(1000, 2.0, 100.0)]),
        record(1, "a", vec![phase(1000, 2.0, 100.0)]),
    ];
    let monitor = dir.path().join("monitor");
    std::fs::create_dir_all(&monitor).unwrap();
    let short = super::page::MIN_TIMELINE_SAMPLES - 1;
    std::fs::write(monitor.join("trial-0.jsonl"), monitor_lines(short)).unwrap();
    let long = super::page::MIN_TIMELINE_SAMPLES;
    std::fs::write(monitor.join("trial-1.jsonl"), monitor_lines(long)).unwrap();
    let opts = Default::default();
    let html = super::render_page(&super::Page {
        records: &records,
        env: None,
        title: "t",
        opts: &opts,
        results_dir: Some(dir.path()),
        extra_warnings: &[],
        crash: &[],
    })
    .unwrap();
    for kind in ["timeline-write", "timeline-cpu"] {
        assert_eq!(
            html.matches(&format!("data-kind=\"{kind}\"")).count(),
            1,
            "{kind}"
        );
    }
    assert!(html.contains("trial 1: a — CPU"));
    assert!(!html.contains("trial 0: a — CPU"));
    assert!(
        html.contains(&super::page::too_short_note(short)),
        "no reason given"
    );
    assert!(html.contains(&format!(
        "fewer than {} samples has no timeline",
        super::page::MIN_TIMELINE_SAMPLES
    )));
}

/// The journal-size and trade-off charts draw value ± half-width cut at 0: with the
/// half-width they are given, that is exactly the interval the table prints, also when
/// the interval stops at 0.
#[test]
fn journal_size_error_bars_span_the_printed_interval() {
    for xs in [[10.0, 11.0, 12.0], [10.0, 100.0, 300.0]] {
        let s = Summary::of(&xs).unwrap();
        let half = ci_half_width(&s);
        assert!(
            ((s.mean - half).max(0.0) - s.ci95_low.unwrap()).abs() < 1e-9,
            "{s:?}"
        );
        assert!((s.mean + half - s.ci95_high.unwrap()).abs() < 1e-9, "{s:?}");
    }
    assert_eq!(ci_half_width(&Summary::of(&[5.0]).unwrap()), 0.0, "no bar");
}

mod answer;

/// Latency titles and captions are the engine's own words, found by its kind: the
/// made-up engine of test builds gets its own, an unknown kind the neutral ones.
#[test]
fn latency_words_come_from_the_engine() {
    assert_eq!(LatencyKind::Recorded.title("made-up"), "churn latency");
    assert_eq!(
        LatencyKind::Recorded.title("fio"),
        "completion latency (clat)"
    );
    assert_eq!(
        LatencyKind::Recorded.title("unheard-of"),
        "latency percentiles"
    );
    assert_eq!(
        LatencyKind::FioSync.title("made-up"),
        "sync latency (fsync/fdatasync calls)"
    );
    let caption = super::page::latency_caption("made-up", "churn", LatencyKind::Recorded);
    assert!(caption.contains("of each churned file,"), "{caption}");
    let caption = super::page::latency_caption("fsync", "remove", LatencyKind::Recorded);
    assert!(caption.contains("of each unlink,"), "{caption}");
}
