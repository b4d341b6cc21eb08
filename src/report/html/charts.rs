//! The charts of the HTML report, drawn as inline SVG with plotters: what they share
//! (axes, labels, legends), lines of rate against journal size, and trial timelines.
//! The bar charts are in `bars`, the latency curves in `latency`. They know nothing
//! of the page; `page` decides which to draw.

pub(crate) use super::marks::Px;
use std::collections::BTreeSet;

use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::marks::hatch_segments;

/// Width of every chart, pixels.
pub(crate) const WIDTH: u32 = 760;
pub(crate) const FONT: &str = "sans-serif";
pub(crate) const LABEL_PX: u32 = 13;

/// Data colours (Okabe-Ito, readable by colour-blind readers). Axes are black and the
/// background white, so these mark data only.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 40),
];
pub(crate) const BAR: RGBColor = PALETTE[0];
pub(crate) const ERROR_BAR: RGBColor = RGBColor(40, 40, 40);
/// Trials' dots: dark, so they read over a bar of any palette colour and over white.
pub(crate) const DOT: RGBColor = RGBColor(0, 0, 0);
pub(crate) const DOT_R: i32 = 3;
/// Hatching of suspect bars: white lines over the bar's own colour, so a suspect bar
/// keeps its colour and cannot pass for another series (a grey bar read as the
/// baseline's).
pub(crate) const HATCH: RGBColor = RGBColor(255, 255, 255);
pub(crate) const HATCH_GAP: i32 = 7;

/// (journal bytes, mean rate, sd).
pub(crate) type Point = (u64, f64, f64);
/// One line of the journal-size chart: configurations that share every factor but
/// the journal size, as (journal bytes, mean, sd), sorted by size.
pub(crate) struct Line {
    pub(crate) name: String,
    pub(crate) points: Vec<(u64, f64, f64)>,
}

pub(crate) fn draw_err<E: std::error::Error + Send + Sync>(
    e: DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("chart drawing failed: {e}")
}

/// The plot area of a titled chart as the page frames them all alike: the title on
/// top, the same margins, `x_area` and `y_area` pixels for the axis labels.
pub(crate) fn titled_frame<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    x_area: u32,
    y_area: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.caption(title, (FONT, font_size(16)))
        .margin(12)
        .margin_right(20)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    b
}

/// Approximate width in pixels of `text` at `px` (sans-serif averages ~0.5 em).
pub(crate) fn text_px(text: &str, px: u32) -> u32 {
    (text.chars().count() as f64 * px as f64 * 0.5).ceil() as u32
}

/// The SVG backend's output, made to sit inline in HTML: the namespace declaration
/// is implied there, and dropping it keeps the page free of any URL.
pub(crate) fn inline_svg(svg: String) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}

/// plotters' SVG backend writes `font-size` as the requested size / 1.24; this asks
/// for `px` CSS pixels.
pub(crate) fn font_size(px: u32) -> f64 {
    px as f64 * 1.24
}

pub(crate) fn label_style(px: u32) -> TextStyle<'static> {
    (FONT, font_size(px)).into_font().color(&BLACK)
}

/// A "nice" upper bound for an axis starting at 0.
pub(crate) fn nice_max(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(x.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * mag >= x {
            return m * mag;
        }
    }
    10.0 * mag
}

pub(crate) fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Configuration labels under the x axis at the given centres: horizontal when they
/// fit their slot, else rotated to read bottom-up, so they never overlap.
pub(crate) fn x_category_labels(
    root: &DrawingArea<SVGBackend, Shift>,
    at: &[(i32, i32)],
    labels: &[String],
    rotate: bool,
) -> Result<()> {
    for ((x, y), label) in at.iter().zip(labels) {
        let style = if rotate {
            label_style(LABEL_PX)
                .pos(Pos::new(HPos::Right, VPos::Center))
                .transform(FontTransform::Rotate270)
        } else {
            label_style(LABEL_PX).pos(Pos::new(HPos::Center, VPos::Top))
        };
        root.draw(&Text::new(label.clone(), (*x, *y + 8), style))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// The axes of a rate chart (bar or line): y gridlines and ticks with the unit, x
/// ticks left to the caller (configuration names, journal sizes).
pub(crate) fn rate_axes(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    unit: &str,
    x_desc: &str,
) -> Result<()> {
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .light_line_style(TRANSPARENT)
        .y_label_formatter(&|v| fmt_tick(*v))
        .y_desc(unit)
        .x_desc(x_desc)
        .label_style(label_style(LABEL_PX))
        .axis_desc_style(label_style(14))
        .draw()
        .map_err(draw_err)?;
    Ok(())
}

/// A chart and where it put things, so tests can check that the legend hides no data.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Drawn {
    pub(crate) svg: String,
    /// The legend's frame; `None` when there is nothing to explain.
    pub(crate) legend: Option<Px>,
    /// Bars, points and error bars.
    pub(crate) data: Vec<Px>,
}

/// How a legend entry shows its series.
#[derive(Clone, Copy)]
pub(crate) enum Mark {
    Swatch(RGBColor),
    Line(RGBColor),
    ErrorBar,
    /// A swatch with the diagonal hatching of a suspect bar.
    Hatched(RGBColor),
    /// A trial's dot.
    Dot,
}

const LEGEND_ROW: i32 = 20;
const LEGEND_PAD: i32 = 6;
const LEGEND_LEFT: i32 = 12;
/// Mark, gap before the label, gap after it.
const MARK_W: i32 = 18;
const ENTRY_GAP: i32 = 22;

fn entry_w(label: &str, px: u32) -> i32 {
    MARK_W + 6 + text_px(label, px) as i32 + ENTRY_GAP
}

/// Room for one row of legend entries.
fn legend_room() -> i32 {
    WIDTH as i32 - 2 * LEGEND_LEFT - 2 * LEGEND_PAD
}

/// `label`, cut with "…" if even alone on its row it would run past the chart's edge.
fn fit_label(label: &str, px: u32) -> String {
    let n = label.chars().count();
    let over = entry_w(label, px) - legend_room();
    if over <= 0 {
        return label.to_string();
    }
    let per_char = (px as f64 * 0.5).max(1.0);
    let keep = n.saturating_sub((over as f64 / per_char).ceil() as usize + 1);
    format!("{}…", label.chars().take(keep).collect::<String>())
}

/// Legend entries laid out in rows that fit the chart's width.
fn legend_rows(entries: &[(String, Mark)], px: u32) -> Vec<Vec<usize>> {
    let room = legend_room();
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = 0;
    for (i, (label, _)) in entries.iter().enumerate() {
        let w = entry_w(label, px);
        match rows.last_mut() {
            Some(row) if used + w <= room => row.push(i),
            _ => {
                rows.push(vec![i]);
                used = 0;
            }
        }
        used += w;
    }
    rows
}

/// Pixels a legend band under the chart takes (0 when there is no entry).
pub(crate) fn legend_height(entries: &[(String, Mark)], px: u32) -> u32 {
    let fitted: Vec<(String, Mark)> = entries
        .iter()
        .map(|(l, m)| (fit_label(l, px), *m))
        .collect();
    match legend_rows(&fitted, px).len() {
        0 => 0,
        n => (n as i32 * LEGEND_ROW + 2 * LEGEND_PAD + 8) as u32,
    }
}

/// Draws the legend in the band starting at `top`, below the plot and its axis labels,
/// so it can never cover a bar or a point (inside the plot it hid the tallest ones).
pub(crate) fn draw_legend(
    root: &DrawingArea<SVGBackend, Shift>,
    entries: &[(String, Mark)],
    top: i32,
    px: u32,
) -> Result<Option<Px>> {
    let entries: Vec<(String, Mark)> = entries
        .iter()
        .map(|(l, m)| (fit_label(l, px), *m))
        .collect();
    let entries = &entries[..];
    let rows = legend_rows(entries, px);
    if rows.is_empty() {
        return Ok(None);
    }
    let widest = rows
        .iter()
        .map(|r| r.iter().map(|&i| entry_w(&entries[i].0, px)).sum::<i32>() - ENTRY_GAP)
        .max()
        .unwrap_or(0);
    let frame = Px {
        l: LEGEND_LEFT,
        t: top,
        r: LEGEND_LEFT + widest + 2 * LEGEND_PAD,
        b: top + rows.len() as i32 * LEGEND_ROW + 2 * LEGEND_PAD,
    };
    root.draw(&Rectangle::new(
        [(frame.l, frame.t), (frame.r, frame.b)],
        BLACK.mix(0.4),
    ))
    .map_err(draw_err)?;
    for (k, row) in rows.iter().enumerate() {
        let y = top + LEGEND_PAD + k as i32 * LEGEND_ROW + LEGEND_ROW / 2;
        let mut x = frame.l + LEGEND_PAD;
        for &i in row {
            let (label, mark) = &entries[i];
            draw_mark(root, *mark, (x, y))?;
            let style = label_style(px).pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(label.clone(), (x + MARK_W + 6, y), style))
                .map_err(draw_err)?;
            x += entry_w(label, px);
        }
    }
    Ok(Some(frame))
}

fn draw_mark(root: &DrawingArea<SVGBackend, Shift>, mark: Mark, (x, y): (i32, i32)) -> Result<()> {
    match mark {
        Mark::Swatch(c) => root.draw(&Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())),
        Mark::Line(c) => root.draw(&PathElement::new(
            vec![(x, y), (x + MARK_W, y)],
            c.stroke_width(3),
        )),
        Mark::ErrorBar => root.draw(&PathElement::new(
            vec![(x + 7, y - 6), (x + 7, y + 6)],
            ERROR_BAR.stroke_width(2),
        )),
        Mark::Hatched(c) => {
            let swatch = Px::span((x, y - 6), (x + 14, y + 6));
            root.draw(&Rectangle::new(
                [(swatch.l, swatch.t), (swatch.r, swatch.b)],
                c.filled(),
            ))
            .map_err(draw_err)?;
            for (a, b) in hatch_segments(swatch, HATCH_GAP) {
                root.draw(&PathElement::new(vec![a, b], HATCH.stroke_width(2)))
                    .map_err(draw_err)?;
            }
            Ok(())
        }
        Mark::Dot => root.draw(&Circle::new((x + 7, y), DOT_R, DOT.filled())),
    }
    .map_err(draw_err)
}

/// A vertical bar from `lo` to `hi` with caps `cap` wide (data units), one path.
pub(crate) fn range_bar(
    x: f64,
    lo: f64,
    hi: f64,
    cap: f64,
    color: RGBColor,
) -> PathElement<(f64, f64)> {
    PathElement::new(
        vec![
            (x - cap, hi),
            (x + cap, hi),
            (x, hi),
            (x, lo),
            (x - cap, lo),
            (x + cap, lo),
        ],
        color.stroke_width(2),
    )
}

/// Legend entries for lines drawn in palette order, one colour per name.
fn line_entries<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(String, Mark)> {
    names
        .enumerate()
        .map(|(i, n)| (n.to_string(), Mark::Line(PALETTE[i % PALETTE.len()])))
        .collect()
}

/// The spread a journal-size chart draws for a mean: the upper half-width of its 95%
/// interval, so the bar spans exactly `ci95_low..ci95_high` (the low end is the same
/// half-width cut at 0); 0, no bar, with one trial.
pub(crate) fn ci_half_width(s: &crate::analysis::stats::Summary) -> f64 {
    s.ci95_high.map_or(0.0, |h| h - s.mean)
}

/// The half-width of the 95% interval of `config`'s mean rate on `phase` in workload
/// `w` ([`ci_half_width`]): the answer's figures hold the mean only, and the figures
/// that draw it with its interval must draw the one the tables print.
pub(crate) fn rate_ci_half(
    w: &crate::analysis::WorkloadAnalysis,
    config: &str,
    phase: &str,
) -> Option<f64> {
    let i = w.phases.iter().position(|p| p.name == phase)?;
    let c = w.configs.iter().find(|c| c.label == config)?;
    Some(ci_half_width(&c.phases.get(i)?.rate?))
}

pub(crate) fn line_chart(title: &str, unit: &str, lines: &[Line]) -> Result<String> {
    Ok(line_chart_drawn(title, unit, lines)?.svg)
}

/// What the vertical bar at a point of a journal-size chart spans, from the point's
/// (journal bytes, value, spread).
#[derive(Clone, Copy, PartialEq)]
enum Spread {
    /// value ± spread, cut at 0: a mean's 95% interval as `Summary::ci95_*` holds it
    /// (the t interval's half-width, the low end cut at 0), see [`ci_half_width`].
    Half,
    /// value (a median) up to spread (a 95th percentile).
    UpTo,
}

impl Spread {
    /// (low, high) of the bar at `p`; `None` when there is none to draw.
    fn range(self, p: &(u64, f64, f64)) -> Option<(f64, f64)> {
        match self {
            Spread::Half => (p.2 > 0.0).then(|| ((p.1 - p.2).max(0.0), p.1 + p.2)),
            Spread::UpTo => (p.2 > p.1).then_some((p.1, p.2)),
        }
    }

    fn top(self, p: &(u64, f64, f64)) -> f64 {
        self.range(p).map_or(p.1, |r| r.1.max(p.1))
    }
}

pub(crate) fn line_chart_drawn(title: &str, unit: &str, lines: &[Line]) -> Result<Drawn> {
    let entries = line_entries(lines.iter().map(|l| l.name.as_str()));
    size_chart_drawn(title, unit, lines, Spread::Half, entries)
}

/// Recovery (mount) time against journal size: per line (placement) the median of
/// each configuration, a whisker up to its 95th percentile.
pub(crate) fn recovery_chart(title: &str, y_desc: &str, lines: &[Line]) -> Result<String> {
    Ok(recovery_chart_drawn(title, y_desc, lines)?.svg)
}

/// [`recovery_chart`], with where it put things. `lines` hold (journal bytes, median,
/// p95).
pub(crate) fn recovery_chart_drawn(title: &str, y_desc: &str, lines: &[Line]) -> Result<Drawn> {
    let mut entries = line_entries(lines.iter().map(|l| l.name.as_str()));
    let whiskers = lines
        .iter()
        .flat_map(|l| &l.points)
        .any(|p| Spread::UpTo.range(p).is_some());
    if whiskers {
        entries.push((
            "median; whisker up to the 95th percentile".to_string(),
            Mark::ErrorBar,
        ));
    }
    size_chart_drawn(title, y_desc, lines, Spread::UpTo, entries)
}

/// The journal sizes of `lines` and the log2 axis over them: (sizes, low, high, pad).
pub(crate) fn size_axis<'a>(
    lines: impl Iterator<Item = &'a Line>,
) -> (BTreeSet<u64>, f64, f64, f64) {
    let sizes: BTreeSet<u64> = lines.flat_map(|l| l.points.iter().map(|p| p.0)).collect();
    let lx = |b: u64| (b as f64).log2();
    let (lo, hi) = (
        lx(*sizes.first().unwrap_or(&1)),
        lx(*sizes.last().unwrap_or(&2)),
    );
    let pad = ((hi - lo) * 0.08).max(0.3);
    (sizes, lo, hi, pad)
}

/// Lines of a value against journal size (log scale), a bar at each point as
/// `spread` says, and the legend `entries` under the plot.
fn size_chart_drawn(
    title: &str,
    unit: &str,
    lines: &[Line],
    spread: Spread,
    entries: Vec<(String, Mark)>,
) -> Result<Drawn> {
    let (sizes, lo, hi, pad) = size_axis(lines.iter());
    let lx = |b: u64| (b as f64).log2();
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| spread.top(p)))
        .fold(0.0, f64::max);
    let y_max = nice_max(top * 1.1);
    let chart_h = 400;
    let height = chart_h + legend_height(&entries, LABEL_PX);
    let mut svg = String::new();
    let (legend, data);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (upper, _) = root.split_vertically(chart_h);
        let mut chart = titled_frame(&upper, title, 60, 80)
            .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..y_max)
            .map_err(draw_err)?;
        rate_axes(&mut chart, unit, "journal size (log scale)")?;
        // Vertical grid lines at the measured sizes only.
        chart
            .draw_series(
                sizes.iter().map(|s| {
                    PathElement::new(vec![(lx(*s), 0.0), (lx(*s), y_max)], BLACK.mix(0.1))
                }),
            )
            .map_err(draw_err)?;
        let cap = (hi - lo + 2.0 * pad) * 0.012;
        let mut marks = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (lx(p.0), p.1)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(draw_err)?;
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(draw_err)?;
            let bars: Vec<(f64, f64, f64)> = line
                .points
                .iter()
                .filter_map(|p| spread.range(p).map(|(lo, hi)| (lx(p.0), lo, hi)))
                .collect();
            chart
                .draw_series(
                    bars.iter()
                        .map(|&(x, lo, hi)| range_bar(x, lo, hi, cap, color)),
                )
                .map_err(draw_err)?;
            marks.extend(pts.iter().map(|p| Px::around(chart.backend_coord(p), 4)));
            marks.extend(bars.iter().map(|&(x, lo, hi)| {
                Px::span(
                    chart.backend_coord(&(x - cap, lo)),
                    chart.backend_coord(&(x + cap, hi)),
                )
            }));
        }
        let at: Vec<(i32, i32)> = sizes
            .iter()
            .map(|s| chart.backend_coord(&(lx(*s), 0.0)))
            .collect();
        let labels: Vec<String> = sizes
            .iter()
            .map(|s| crate::units::format_size(*s))
            .collect();
        x_category_labels(&root, &at, &labels, false)?;
        legend = draw_legend(&root, &entries, chart_h as i32, LABEL_PX)?;
        data = marks;
        root.present().map_err(draw_err)?;
    }
    Ok(Drawn {
        svg: inline_svg(svg),
        legend,
        data,
    })
}

pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// A timeline `height` pixels tall plus the legend band under it.
pub(crate) fn timeline_chart(
    title: &str,
    y_desc: &str,
    series: &[Series],
    phases: &[(f64, String)],
    height: u32,
    fixed_max: Option<f64>,
) -> Result<String> {
    Ok(timeline_chart_drawn(title, y_desc, series, phases, height, fixed_max)?.svg)
}

pub(crate) fn timeline_chart_drawn(
    title: &str,
    y_desc: &str,
    series: &[Series],
    phases: &[(f64, String)],
    chart_h: u32,
    fixed_max: Option<f64>,
) -> Result<Drawn> {
    let t_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_max = fixed_max.unwrap_or_else(|| nice_max(top * 1.3));
    let entries = line_entries(series.iter().map(|s| s.name.as_str()));
    let height = chart_h + legend_height(&entries, 12);
    let mut svg = String::new();
    let (legend, data);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (upper, _) = root.split_vertically(chart_h);
        let mut chart = ChartBuilder::on(&upper)
            .caption(title, (FONT, font_size(14)))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(42)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_labels(10)
            .y_labels(5)
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .x_desc("time since workload start (s)")
            .y_desc(y_desc)
            .label_style(label_style(12))
            .axis_desc_style(label_style(13))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(draw_err)?;
        for (t, name) in phases {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(*t, 0.0), (*t, y_max)],
                    BLACK.mix(0.45).stroke_width(1),
                )))
                .map_err(draw_err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (*t, y_max),
                    label_style(11).pos(Pos::new(HPos::Left, VPos::Top)),
                )))
                .map_err(draw_err)?;
        }
        let mut marks = Vec::new();
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
                .map_err(draw_err)?;
            marks.extend(
                s.points
                    .iter()
                    .map(|p| Px::around(chart.backend_coord(p), 1)),
            );
        }
        legend = draw_legend(&root, &entries, chart_h as i32, 12)?;
        data = marks;
        root.present().map_err(draw_err)?;
    }
    Ok(Drawn {
        svg: inline_svg(svg),
        legend,
        data,
    })
}
