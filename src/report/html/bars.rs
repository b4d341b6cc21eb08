//! The bar chart of a phase: per configuration a bar at the mean rate, a dot per
//! successful trial over it, an error bar spanning the 95% confidence interval of the
//! mean the page's table prints, and hatching on suspect (too short) phases.
//!
//! Bars, dots, error bars and hatching are written as SVG elements of their own with
//! a class and `data-` attributes (`bar`, `trial`, `ci95`, `suspect-hatch`; the
//! configuration in `data-config`, the figures in `data-mean`, `data-value`,
//! `data-low` and `data-high`), so a reader can check a chart against the table.

use anyhow::Result;
use plotters::prelude::*;

use super::charts::{
    draw_err, draw_legend, inline_svg, legend_height, nice_max, rate_axes, text_px, titled_frame,
    x_category_labels, Drawn, Mark, Px, BAR, DOT, DOT_R, ERROR_BAR, HATCH, HATCH_GAP, LABEL_PX,
    WIDTH,
};
use super::marks::{attr, hatch_segments, hex, segments_d, with_elements};
use crate::analysis::stats::Summary;

pub(crate) struct Bar {
    pub(crate) label: String,
    /// The rate over the successful trials; `None`: no successful trial.
    pub(crate) summary: Option<Summary>,
    /// Each successful trial's rate.
    pub(crate) trials: Vec<f64>,
    pub(crate) suspect: bool,
    /// The configuration the others are compared with: named so under its bar.
    pub(crate) baseline: bool,
}

/// Half the width of a bar, in slots (one per configuration).
const HALF: f64 = 0.34;
/// Half the width an error bar's caps take, in slots.
const CAP: f64 = 0.1;
/// The dots of a bar spread over this much either side of its centre, in slots.
const SPREAD: f64 = 0.2;

pub(crate) fn bar_chart(
    title: &str,
    unit: &str,
    bars: &[Bar],
    suspect_below: f64,
) -> Result<String> {
    Ok(bar_chart_drawn(title, unit, bars, suspect_below)?.svg)
}

/// The x offset (in slots) of the `k`-th of `n` dots: spread evenly and always in
/// the same place, so trials of equal value stay apart and a page redrawn from the
/// same records is the same page.
pub(crate) fn jitter(k: usize, n: usize) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let step = (2.0 * SPREAD / (n - 1) as f64).min(0.08);
    (k as f64 - (n - 1) as f64 / 2.0) * step
}

/// The label under a bar: the configuration, its baseline role and its number of
/// trials.
fn bar_label(b: &Bar) -> String {
    let role = if b.baseline { "baseline, " } else { "" };
    match &b.summary {
        Some(s) => format!("{} ({role}n={})", b.label, s.n),
        None => format!("{} ({role}no data)", b.label),
    }
}

/// The 95% interval to draw: `None` when there is none (one trial).
fn interval(s: &Summary) -> Option<(f64, f64)> {
    s.ci95_low.zip(s.ci95_high)
}

/// What the legend explains, only for what the chart shows.
fn legend_entries(bars: &[Bar], suspect_below: f64) -> Vec<(String, Mark)> {
    let drawn = || bars.iter().filter(|b| b.summary.is_some());
    let mut entries = Vec::new();
    if drawn().next().is_some() {
        entries.push(("bar: mean rate".to_string(), Mark::Swatch(BAR)));
    }
    if drawn().any(|b| b.suspect) {
        let label = format!("hatched: suspect, mean phase time under {suspect_below} s");
        entries.push((label, Mark::Hatched(BAR)));
    }
    if drawn().any(|b| !b.trials.is_empty()) {
        entries.push(("dots: trials".to_string(), Mark::Dot));
    }
    if drawn().any(|b| b.summary.as_ref().and_then(interval).is_some()) {
        entries.push((
            "error bars: 95% confidence interval of the mean".to_string(),
            Mark::ErrorBar,
        ));
    }
    entries
}

pub(crate) fn bar_chart_drawn(
    title: &str,
    unit: &str,
    bars: &[Bar],
    suspect_below: f64,
) -> Result<Drawn> {
    let n = bars.len().max(1);
    let labels: Vec<String> = bars.iter().map(bar_label).collect();
    let y_area = 80;
    let plot_w = WIDTH - y_area - 30;
    let slot = plot_w as f64 / n as f64;
    let longest = labels
        .iter()
        .map(|l| text_px(l, LABEL_PX))
        .max()
        .unwrap_or(0);
    let rotate = longest as f64 > slot * 0.9;
    let x_area = if rotate { longest + 40 } else { 55 };
    let entries = legend_entries(bars, suspect_below);
    let chart_h = 320 + x_area;
    let height = chart_h + legend_height(&entries, LABEL_PX);
    let top = bars
        .iter()
        .filter_map(|b| b.summary.as_ref().map(|s| (s, &b.trials)))
        .flat_map(|(s, trials)| {
            let hi = interval(s).map_or(s.mean, |i| i.1);
            trials.iter().copied().chain([s.mean, hi])
        })
        .fold(0.0, f64::max);
    let y_max = nice_max(top * 1.1);
    let mut svg = String::new();
    let (mut data, mut own) = (Vec::new(), Vec::new());
    let legend;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (upper, _) = root.split_vertically(chart_h);
        let mut chart = titled_frame(&upper, title, x_area, y_area)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_max)
            .map_err(draw_err)?;
        rate_axes(&mut chart, unit, "configuration")?;
        let px = |p: (f64, f64)| chart.backend_coord(&p);
        for (i, b) in bars.iter().enumerate() {
            let Some(s) = &b.summary else { continue };
            let x = i as f64;
            let config = attr(&b.label);
            let rect = Px::span(px((x - HALF, 0.0)), px((x + HALF, s.mean)));
            own.push(format!(
                r#"<rect class="bar" data-config="{config}" data-mean="{}" x="{}" y="{}" width="{}" height="{}" fill="{}"/>"#,
                s.mean,
                rect.l,
                rect.t,
                rect.r - rect.l,
                rect.b - rect.t,
                hex(BAR)
            ));
            data.push(rect);
            if b.suspect {
                own.push(format!(
                    r#"<path class="suspect-hatch" data-config="{config}" d="{}" stroke="{}" stroke-width="2" fill="none"/>"#,
                    segments_d(&hatch_segments(rect, HATCH_GAP)),
                    hex(HATCH)
                ));
            }
            if let Some((lo, hi)) = interval(s) {
                let (l, t) = px((x - CAP, hi));
                // The axis starts at 0, where a rate's interval ends too; a bound
                // below it would cross the labels under the plot.
                let (r, b) = px((x + CAP, lo.max(0.0)));
                let c = px((x, 0.0)).0;
                own.push(format!(
                    r#"<path class="ci95" data-config="{config}" data-low="{lo}" data-high="{hi}" d="M{l} {t}H{r}M{c} {t}V{b}M{l} {b}H{r}" stroke="{}" stroke-width="2" fill="none"/>"#,
                    hex(ERROR_BAR)
                ));
                data.push(Px { l, t, r, b });
            }
            for (k, v) in b.trials.iter().enumerate() {
                let (cx, cy) = px((x + jitter(k, b.trials.len()), *v));
                own.push(format!(
                    r#"<circle class="trial" data-config="{config}" data-value="{v}" cx="{cx}" cy="{cy}" r="{DOT_R}" fill="{}" fill-opacity="0.8" stroke="{}" stroke-width="1"/>"#,
                    hex(DOT),
                    hex(HATCH)
                ));
                data.push(Px::around((cx, cy), DOT_R));
            }
        }
        let at: Vec<(i32, i32)> = (0..bars.len())
            .map(|i| chart.backend_coord(&(i as f64, 0.0)))
            .collect();
        x_category_labels(&root, &at, &labels, rotate)?;
        legend = draw_legend(&root, &entries, chart_h as i32, LABEL_PX)?;
        root.present().map_err(draw_err)?;
    }
    Ok(Drawn {
        svg: with_elements(&inline_svg(svg), &own),
        legend,
        data,
    })
}

/// A figure of the interval table: four significant digits, at least one decimal, so
/// the bounds a reader compares with a chart are not rounded away.
pub(crate) fn fmt_figure(x: f64) -> String {
    let digits = if x == 0.0 || !x.is_finite() {
        1
    } else {
        (3 - x.abs().log10().floor() as i32).clamp(1, 6) as usize
    };
    format!("{x:.digits$}")
}

/// The figures of the bars in a table: per configuration, n, the mean and the 95%
/// interval its error bar spans ("–" with one trial: no interval).
pub(crate) fn interval_table(unit: &str, bars: &[Bar]) -> crate::report::Table {
    let rows = bars
        .iter()
        .filter_map(|b| {
            let s = b.summary.as_ref()?;
            let (lo, hi) = match interval(s) {
                Some((lo, hi)) => (fmt_figure(lo), fmt_figure(hi)),
                None => ("–".to_string(), "–".to_string()),
            };
            Some(vec![
                b.label.clone(),
                s.n.to_string(),
                fmt_figure(s.mean),
                lo,
                hi,
            ])
        })
        .collect();
    crate::report::Table {
        title: format!("Mean {unit} and 95% confidence interval of the mean (the error bars)"),
        headers: ["configuration", "n", "mean", "95% CI low", "95% CI high"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}
