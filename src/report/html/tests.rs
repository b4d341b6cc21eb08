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
