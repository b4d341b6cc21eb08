//! Tests of the HTML page's pieces: monitor lines, axis rounding, inline SVG.

use super::charts::*;
use crate::results::monitor_series::parse_series;

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
    let bars = vec![Bar {
        label: "a".into(),
        value: Some((10.0, 1.0, 3)),
        suspect: false,
    }];
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
        .map(|i| Bar {
            label: format!("same-disk,{}M", 16 << i),
            value: Some((100.0 * (i + 1) as f64, 12.0, 3)),
            suspect: i == 2,
        })
        .collect();
    let d = bar_chart_drawn("t", "dir creates/s", &bars, 60.0).unwrap();
    assert_legend_hides_nothing("bar chart", &d);
    assert_eq!(d.data.len(), 14, "7 bars and their error bars");

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
        value: None,
        suspect: false,
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
