//! The charts of the HTML report, drawn as inline SVG with plotters: bar charts of
//! mean rates with error bars, lines of rate against journal size, and trial
//! timelines. They know nothing of the page; `page` decides which to draw.

use std::collections::BTreeSet;

use anyhow::{anyhow, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
pub(crate) const SUSPECT_BAR: RGBColor = RGBColor(170, 170, 170);
pub(crate) const ERROR_BAR: RGBColor = RGBColor(40, 40, 40);

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

pub(crate) struct Bar {
    pub(crate) label: String,
    /// (mean, sd, n); `None`: no successful trial.
    pub(crate) value: Option<(f64, f64, usize)>,
    pub(crate) suspect: bool,
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

pub(crate) fn bar_chart(
    title: &str,
    unit: &str,
    bars: &[Bar],
    suspect_below: f64,
) -> Result<String> {
    let n = bars.len().max(1);
    let labels: Vec<String> = bars
        .iter()
        .map(|b| match b.value {
            Some((_, _, k)) => format!("{} (n={k})", b.label),
            None => format!("{} (no data)", b.label),
        })
        .collect();
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
    let height = 320 + x_area;
    let top = bars
        .iter()
        .filter_map(|b| b.value.map(|(m, sd, _)| m + sd))
        .fold(0.0, f64::max);
    let y_max = nice_max(top * 1.25);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, font_size(16)))
            .margin(12)
            .margin_right(20)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y_max)
            .map_err(draw_err)?;
        rate_axes(&mut chart, unit, "configuration")?;
        let half = 0.34;
        let normal: Vec<(usize, f64)> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.value.filter(|_| !b.suspect).map(|v| (i, v.0)))
            .collect();
        let suspect: Vec<(usize, f64)> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.value.filter(|_| b.suspect).map(|v| (i, v.0)))
            .collect();
        let rect = |(i, m): (usize, f64), c: RGBColor| {
            let x = i as f64;
            Rectangle::new([(x - half, 0.0), (x + half, m)], c.filled())
        };
        if !normal.is_empty() {
            chart
                .draw_series(normal.iter().map(|v| rect(*v, BAR)))
                .map_err(draw_err)?
                .label("mean rate")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], BAR.filled()));
        }
        if !suspect.is_empty() {
            chart
                .draw_series(suspect.iter().map(|v| rect(*v, SUSPECT_BAR)))
                .map_err(draw_err)?
                .label(format!("suspect: mean phase time under {suspect_below} s"))
                .legend(|(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], SUSPECT_BAR.filled())
                });
        }
        let with_sd: Vec<(f64, f64, f64)> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.value.filter(|v| v.1 > 0.0).map(|v| (i as f64, v.0, v.1)))
            .collect();
        if !with_sd.is_empty() {
            chart
                .draw_series(
                    with_sd
                        .iter()
                        .map(|&(x, m, sd)| error_bar(x, m, sd, 0.1, ERROR_BAR)),
                )
                .map_err(draw_err)?
                .label("± 1 standard deviation")
                .legend(|(x, y)| {
                    PathElement::new(
                        vec![(x + 7, y - 6), (x + 7, y + 6)],
                        ERROR_BAR.stroke_width(2),
                    )
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(label_style(LABEL_PX))
            .draw()
            .map_err(draw_err)?;
        let at: Vec<(i32, i32)> = (0..bars.len())
            .map(|i| chart.backend_coord(&(i as f64, 0.0)))
            .collect();
        x_category_labels(&root, &at, &labels, rotate)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}

/// A vertical error bar: line from mean - sd to mean + sd with caps `cap` wide (data
/// units), drawn as one path.
pub(crate) fn error_bar(
    x: f64,
    mean: f64,
    sd: f64,
    cap: f64,
    color: RGBColor,
) -> PathElement<(f64, f64)> {
    let (lo, hi) = ((mean - sd).max(0.0), mean + sd);
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

pub(crate) fn line_chart(title: &str, unit: &str, lines: &[Line]) -> Result<String> {
    let sizes: BTreeSet<u64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    let lx = |b: u64| (b as f64).log2();
    let (lo, hi) = (
        lx(*sizes.first().unwrap_or(&1)),
        lx(*sizes.last().unwrap_or(&2)),
    );
    let pad = ((hi - lo) * 0.08).max(0.3);
    let top = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1 + p.2))
        .fold(0.0, f64::max);
    let y_max = nice_max(top * 1.35);
    let height = 400;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, font_size(16)))
            .margin(12)
            .margin_right(20)
            .x_label_area_size(60)
            .y_label_area_size(80)
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
        for (i, line) in lines.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (lx(p.0), p.1)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(draw_err)?
                .label(line.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
            chart
                .draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(draw_err)?;
            chart
                .draw_series(
                    line.points
                        .iter()
                        .filter(|p| p.2 > 0.0)
                        .map(|p| error_bar(lx(p.0), p.1, p.2, cap, color)),
                )
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(label_style(LABEL_PX))
            .draw()
            .map_err(draw_err)?;
        let at: Vec<(i32, i32)> = sizes
            .iter()
            .map(|s| chart.backend_coord(&(lx(*s), 0.0)))
            .collect();
        let labels: Vec<String> = sizes
            .iter()
            .map(|s| crate::units::format_size(*s))
            .collect();
        x_category_labels(&root, &at, &labels, false)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}

pub(crate) struct Series {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

pub(crate) fn timeline_chart(
    title: &str,
    y_desc: &str,
    series: &[Series],
    phases: &[(f64, String)],
    height: u32,
    fixed_max: Option<f64>,
) -> Result<String> {
    let t_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_max = fixed_max.unwrap_or_else(|| nice_max(top * 1.3));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
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
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
                .map_err(draw_err)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.4))
            .label_font(label_style(12))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}
