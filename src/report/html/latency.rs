//! The latency chart of a phase: per successful trial a curve of latency against
//! percentile (log scale), one colour per configuration. Percentiles come from each
//! trial's histogram and are never averaged across trials, so each trial keeps its
//! own curve.
//!
//! Everything goes through [`latency_chart`], which takes labelled curves of
//! (percentile, latency): another recorded latency (fio's sync or total latency, say)
//! is one more curve or one more chart, not another drawing routine.

use anyhow::Result;
use plotters::prelude::*;

use super::charts::{
    draw_err, draw_legend, fmt_tick, inline_svg, label_style, legend_height, titled_frame,
    x_category_labels, Drawn, Mark, Px, LABEL_PX, PALETTE, WIDTH,
};
use super::marks::{attr, hex, with_elements};
use crate::results::record::TrialRecord;
use crate::workload::Latency;

/// One curve: its label (a configuration; curves sharing a label share a colour and
/// a legend entry) and its (percentile, latency in µs) points. Percentile 100 is the
/// maximum.
pub(crate) struct Curve {
    pub(crate) label: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// The percentiles a [`Latency`] holds, as (percentile, µs); empty when it counted
/// no operation (its figures are then zeros, not latencies).
pub(crate) fn latency_points(l: &Latency) -> Vec<(f64, f64)> {
    if l.count == 0 {
        return Vec::new();
    }
    vec![
        (50.0, l.p50_us),
        (95.0, l.p95_us),
        (99.0, l.p99_us),
        (100.0, l.max_us),
    ]
}

/// The curves of `phase` of workload `workload`: one per successful timed trial that
/// recorded its latency, labelled by configuration, configurations in `config_order`.
pub(crate) fn phase_curves(
    records: &[TrialRecord],
    workload: &str,
    phase: &str,
    config_order: &[String],
    pick: LatencyKind,
) -> Vec<Curve> {
    let mut out = Vec::new();
    for label in config_order {
        let mut trials: Vec<&TrialRecord> = records
            .iter()
            .filter(|r| r.is_ok() && !r.crash_recording)
            .filter(|r| r.workload.name == workload && &r.config.label == label)
            .collect();
        trials.sort_by_key(|r| r.trial);
        for r in trials {
            let Some(l) = r.phases.iter().find(|p| p.name == phase) else {
                continue;
            };
            let points = pick.of(l).map(latency_points).unwrap_or_default();
            if !points.is_empty() {
                out.push(Curve {
                    label: label.clone(),
                    points,
                });
            }
        }
    }
    out
}

/// Which recorded latency a chart draws. fio names three and times them apart: the
/// completion of each I/O (clat), its total from submission (lat), and the
/// fsync/fdatasync calls (sync), which clat and lat leave out; every other engine
/// records one, `PhaseResult::latency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LatencyKind {
    /// `latency`: fio's clat, or the engine's one latency.
    Recorded,
    FioSync,
    FioTotal,
}

impl LatencyKind {
    pub(crate) const ALL: [LatencyKind; 3] = [
        LatencyKind::Recorded,
        LatencyKind::FioSync,
        LatencyKind::FioTotal,
    ];

    fn of(self, p: &crate::workload::PhaseResult) -> Option<&Latency> {
        match self {
            LatencyKind::Recorded => p.latency.as_ref(),
            LatencyKind::FioSync => p.fio_latency.as_ref()?.sync.as_ref(),
            LatencyKind::FioTotal => p.fio_latency.as_ref()?.lat.as_ref(),
        }
    }

    /// Its name in chart titles: the engine's for its recorded latency, fio's for
    /// the others.
    pub(crate) fn title(self, kind: &str) -> &'static str {
        match self {
            LatencyKind::Recorded => crate::workload::kind::kind_of(kind).latency.title,
            LatencyKind::FioSync => "sync latency (fsync/fdatasync calls)",
            LatencyKind::FioTotal => "total latency (lat)",
        }
    }
}

/// "p50", "p99.9"; the maximum (percentile 100) is "max".
fn percentile_name(p: f64) -> String {
    if p >= 100.0 {
        "max".to_string()
    } else {
        format!("p{p}")
    }
}

/// Where a percentile sits on the x axis: spaced by nines (50, 90, 99, 99.9 one step
/// apart), so the tail the journal decides gets the room; the maximum, which has no
/// place on that scale, one step past the highest percentile.
fn x_positions(percentiles: &[f64]) -> Vec<(f64, f64)> {
    let nines = |p: f64| -(1.0 - p / 100.0).log10();
    let last = percentiles
        .iter()
        .filter(|p| **p < 100.0)
        .map(|p| nines(*p))
        .fold(0.0, f64::max);
    percentiles
        .iter()
        .map(|&p| (p, if p < 100.0 { nines(p) } else { last + 1.0 }))
        .collect()
}

/// The log axis' bounds: whole decades around the positive values.
fn log_bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi <= 0.0 {
        return (1.0, 10.0);
    }
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
    (lo, hi)
}

pub(crate) fn latency_chart(title: &str, curves: &[Curve]) -> Result<String> {
    Ok(latency_chart_drawn(title, curves)?.svg)
}

pub(crate) fn latency_chart_drawn(title: &str, curves: &[Curve]) -> Result<Drawn> {
    let mut labels: Vec<&str> = Vec::new();
    for c in curves {
        if !labels.contains(&c.label.as_str()) {
            labels.push(&c.label);
        }
    }
    let colour = |label: &str| {
        let i = labels.iter().position(|l| *l == label).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let entries: Vec<(String, Mark)> = labels
        .iter()
        .map(|l| (l.to_string(), Mark::Line(colour(l))))
        .collect();
    let mut percentiles: Vec<f64> = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.0))
        .collect();
    percentiles.sort_by(f64::total_cmp);
    percentiles.dedup();
    let xs = x_positions(&percentiles);
    let x_of = |p: f64| xs.iter().find(|x| x.0 == p).map_or(0.0, |x| x.1);
    let x_hi = xs.iter().map(|x| x.1).fold(1.0, f64::max);
    let (y_lo, y_hi) = log_bounds(curves.iter().flat_map(|c| c.points.iter().map(|p| p.1)));
    let chart_h = 400;
    let height = chart_h + legend_height(&entries, LABEL_PX);
    let mut svg = String::new();
    let (mut data, mut own) = (Vec::new(), Vec::new());
    let legend;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (upper, _) = root.split_vertically(chart_h);
        let mut chart = titled_frame(&upper, title, 60, 80)
            .build_cartesian_2d(-0.3f64..(x_hi + 0.3), (y_lo..y_hi).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(8)
            .light_line_style(TRANSPARENT)
            .y_label_formatter(&|v| fmt_tick(*v))
            .y_desc("latency (µs, log scale)")
            .x_desc("percentile")
            .label_style(label_style(LABEL_PX))
            .axis_desc_style(label_style(14))
            .draw()
            .map_err(draw_err)?;
        for c in curves {
            let pts: Vec<(i32, i32)> = c
                .points
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| chart.backend_coord(&(x_of(p.0), p.1)))
                .collect();
            let figures: Vec<String> = c
                .points
                .iter()
                .map(|(p, v)| format!("{}:{v}", percentile_name(*p)))
                .collect();
            let points: Vec<String> = pts.iter().map(|(x, y)| format!("{x},{y}")).collect();
            let stroke = hex(colour(&c.label));
            own.push(format!(
                r#"<polyline class="latency" data-config="{}" data-points="{}" points="{}" fill="none" stroke="{stroke}" stroke-width="2" stroke-opacity="0.8"/>"#,
                attr(&c.label),
                figures.join(" "),
                points.join(" ")
            ));
            for &(x, y) in &pts {
                own.push(format!(
                    r#"<circle cx="{x}" cy="{y}" r="3" fill="{stroke}"/>"#
                ));
                data.push(Px::around((x, y), 3));
            }
        }
        let at: Vec<(i32, i32)> = xs
            .iter()
            .map(|x| chart.backend_coord(&(x.1, y_lo)))
            .collect();
        let names: Vec<String> = xs.iter().map(|x| percentile_name(x.0)).collect();
        x_category_labels(&root, &at, &names, false)?;
        legend = draw_legend(&root, &entries, chart_h as i32, LABEL_PX)?;
        root.present().map_err(draw_err)?;
    }
    Ok(Drawn {
        svg: with_elements(&inline_svg(svg), &own),
        legend,
        data,
    })
}
