//! The trade-off figure of a run with crash states at several journal sizes: on one
//! figure, throughput against journal size and recovery time (the mount that replays
//! the journal) against journal size, two panels sharing the x axis, and under them
//! recovery time against the amount the replay had to apply. "A bigger journal is
//! faster but recovers more slowly" is seen where it holds and refuted where it does
//! not.

use std::collections::BTreeSet;

use anyhow::Result;
use plotters::prelude::*;

use super::charts::{
    draw_err, draw_legend, fmt_tick, font_size, inline_svg, legend_height, nice_max, range_bar,
    rate_ci_half, size_axis, x_category_labels, Line, FONT, LABEL_PX, PALETTE, WIDTH,
};

/// One line's recovery states: (amount replayed, replay seconds).
pub(crate) struct Scatter {
    pub(crate) name: String,
    pub(crate) points: Vec<(f64, f64)>,
}

/// What the figure shows. `speed` and `replay` lines share names (one per placement),
/// so they share colours; `speed` holds (journal bytes, mean rate, sd), `replay`
/// (journal bytes, median seconds, p95 seconds).
pub(crate) struct Tradeoff<'a> {
    pub(crate) title: &'a str,
    pub(crate) rate_unit: &'a str,
    pub(crate) names: &'a [String],
    pub(crate) speed: &'a [Line],
    pub(crate) replay: &'a [Line],
    /// The amount replayed's name on the axis ("journal blocks replayed").
    pub(crate) amount: &'a str,
    pub(crate) scatter: &'a [Scatter],
}

const PANEL_H: u32 = 250;

pub(crate) fn tradeoff_chart(t: &Tradeoff<'_>) -> Result<String> {
    let colour = |name: &str| {
        let i = t.names.iter().position(|n| n == name).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let (sizes, lo, hi, pad) = size_axis(t.speed.iter().chain(t.replay));
    let lx = |b: u64| (b as f64).log2();
    let entries: Vec<(String, super::charts::Mark)> = t
        .names
        .iter()
        .map(|n| (n.clone(), super::charts::Mark::Line(colour(n))))
        .collect();
    let scatter_h = if t.scatter.iter().any(|s| !s.points.is_empty()) {
        PANEL_H
    } else {
        0
    };
    let panels_h = 2 * PANEL_H + 40 + scatter_h;
    let height = panels_h + legend_height(&entries, LABEL_PX);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (panels, _) = root.split_vertically(panels_h);
        let (title_area, rest) = panels.split_vertically(40);
        title_area
            .titled(t.title, (FONT, font_size(16)))
            .map_err(draw_err)?;
        let (top, rest) = rest.split_vertically(PANEL_H);
        let (middle, bottom) = rest.split_vertically(PANEL_H);
        let mut size_label_at = Vec::new();
        for (area, lines, y_desc, upto) in [
            (&top, t.speed, t.rate_unit.to_string(), false),
            (&middle, t.replay, "recovery seconds".to_string(), true),
        ] {
            let y_top = lines
                .iter()
                .flat_map(|l| l.points.iter())
                .map(|p| if upto { p.1.max(p.2) } else { p.1 + p.2 })
                .fold(0.0, f64::max);
            let y_max = nice_max(y_top * 1.1).max(1e-9);
            let mut chart = ChartBuilder::on(area)
                .margin(8)
                .margin_right(20)
                .x_label_area_size(if upto { 30 } else { 10 })
                .y_label_area_size(80)
                .build_cartesian_2d((lo - pad)..(hi + pad), 0f64..y_max)
                .map_err(draw_err)?;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .disable_x_axis()
                .y_desc(y_desc)
                .y_labels(5)
                .y_label_formatter(&|v| fmt_tick(*v))
                .label_style((FONT, font_size(LABEL_PX)))
                .draw()
                .map_err(draw_err)?;
            chart
                .draw_series(sizes.iter().map(|s| {
                    PathElement::new(vec![(lx(*s), 0.0), (lx(*s), y_max)], BLACK.mix(0.15))
                }))
                .map_err(draw_err)?;
            let cap = (hi - lo + 2.0 * pad) * 0.012;
            for line in lines {
                let c = colour(&line.name);
                let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (lx(p.0), p.1)).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(draw_err)?;
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                    .map_err(draw_err)?;
                let bars = line.points.iter().filter_map(|p| {
                    let (a, b) = if upto {
                        (p.1, p.2)
                    } else {
                        ((p.1 - p.2).max(0.0), p.1 + p.2)
                    };
                    (b > a).then(|| range_bar(lx(p.0), a, b, cap, c))
                });
                chart.draw_series(bars).map_err(draw_err)?;
            }
            if upto {
                size_label_at = sizes
                    .iter()
                    .map(|s| chart.backend_coord(&(lx(*s), 0.0)))
                    .collect();
            }
        }
        let labels: Vec<String> = sizes
            .iter()
            .map(|s| format!("journal {}", crate::units::format_size(*s)))
            .collect();
        x_category_labels(&root, &size_label_at, &labels, false)?;
        if scatter_h > 0 {
            let pts = t.scatter.iter().flat_map(|s| &s.points);
            let x_max = nice_max(pts.clone().map(|p| p.0).fold(0.0, f64::max) * 1.1).max(1.0);
            let y_max = nice_max(pts.map(|p| p.1).fold(0.0, f64::max) * 1.1).max(1e-9);
            let mut chart = ChartBuilder::on(&bottom)
                .margin(8)
                .margin_top(30)
                .margin_right(20)
                .x_label_area_size(45)
                .y_label_area_size(80)
                .build_cartesian_2d(0f64..x_max, 0f64..y_max)
                .map_err(draw_err)?;
            chart
                .configure_mesh()
                .x_desc(t.amount)
                .y_desc("recovery seconds")
                .x_labels(6)
                .y_labels(5)
                .x_label_formatter(&|v| fmt_tick(*v))
                .y_label_formatter(&|v| fmt_tick(*v))
                .label_style((FONT, font_size(LABEL_PX)))
                .draw()
                .map_err(draw_err)?;
            for s in t.scatter {
                let c = colour(&s.name);
                chart
                    .draw_series(s.points.iter().map(|p| Circle::new(*p, 3, c.filled())))
                    .map_err(draw_err)?;
            }
        }
        draw_legend(&root, &entries, panels_h as i32, LABEL_PX)?;
        root.present().map_err(draw_err)?;
    }
    Ok(inline_svg(svg))
}

/// The trade-off figures of `analysis` (one per workload whose crash states cover two
/// journal sizes or more), as (SVG, caption).
pub(crate) fn tradeoff_charts(
    analysis: &crate::analysis::Analysis,
    crash: &[crate::results::crash::CrashRecord],
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for w in &crate::analysis::answer::of(analysis) {
        let entries: Vec<&crate::analysis::CrashAnalysis> = analysis
            .crash
            .iter()
            .filter(|c| c.workload == w.workload && c.journal_size > 0)
            .collect();
        let sizes: BTreeSet<u64> = entries.iter().map(|c| c.journal_size).collect();
        if sizes.len() < 2 {
            continue;
        }
        // A line joins the configurations that differ only in journal size.
        let line_of = |label: &str, size: u64| -> String {
            let size = crate::units::format_size(size);
            let kept: Vec<&str> = label.split(',').filter(|p| *p != size).collect();
            kept.join(",")
        };
        let mut names: Vec<String> = Vec::new();
        let mut speed: Vec<Line> = Vec::new();
        let mut replay: Vec<Line> = Vec::new();
        let mut scatter: Vec<Scatter> = Vec::new();
        let push = |lines: &mut Vec<Line>, name: &str, p: (u64, f64, f64)| match lines
            .iter_mut()
            .find(|l| l.name == name)
        {
            Some(l) => l.points.push(p),
            None => lines.push(Line {
                name: name.to_string(),
                points: vec![p],
            }),
        };
        let workload = analysis.workloads.iter().find(|x| x.name == w.workload);
        for c in &entries {
            let name = line_of(&c.config, c.journal_size);
            if !names.contains(&name) {
                names.push(name.clone());
            }
            let answer = w.configs.iter().find(|a| a.config == c.config);
            if let Some(mean) = answer.and_then(|a| a.rate_mean) {
                let half = workload
                    .and_then(|wa| rate_ci_half(wa, &c.config, w.main_phase.as_deref()?))
                    .unwrap_or(0.0);
                push(&mut speed, &name, (c.journal_size, mean, half));
            }
            // The worst timed recovery, whisker up to the figure to plan on; the median
            // and p95 only where there is no live-journal count to fit against.
            let point = match (&c.recovery_model, c.recovery.as_ref().and_then(|r| r.mount)) {
                (Some(r), _) => Some((c.journal_size, r.worst_s, r.plan_s())),
                (None, Some(m)) => Some((c.journal_size, m.median, m.p95)),
                (None, None) => None,
            };
            if let Some(point) = point {
                push(&mut replay, &name, point);
            }
            let points: Vec<(f64, f64)> = crash
                .iter()
                .filter(|r| r.workload == c.workload && r.config == c.config)
                .filter_map(|r| {
                    Some((
                        r.journal_live?.blocks as f64,
                        r.timings.as_ref()?.mount_seconds,
                    ))
                })
                .collect();
            match scatter.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.extend(points),
                None => scatter.push(Scatter { name, points }),
            }
        }
        for l in speed.iter_mut().chain(replay.iter_mut()) {
            l.points.sort_by_key(|p| p.0);
        }
        if replay.is_empty() {
            continue;
        }
        let title = format!("{}: speed and recovery against journal size", w.workload);
        let unit = w.rate_unit.clone().unwrap_or_else(|| "rate".into());
        let svg = tradeoff_chart(&Tradeoff {
            title: &title,
            rate_unit: &unit,
            names: &names,
            speed: &speed,
            replay: &replay,
            amount: "journal blocks the replay walks (live journal at the cut)",
            scatter: &scatter,
        })?;
        let caption = format!(
            "Top: mean {unit} on {} (error bars: 95% confidence interval of the mean) against journal size (log scale), one line per placement. Middle: recovery after a crash (the mount that replays the journal, with model timing on), on the same axis: the worst timed state, whisker up to the figure to plan on (the upper end of the 95% prediction at the fullest journal the workload left). Bottom: each timed state's recovery time against the journal blocks its replay walks (the live journal at the cut: descriptors, logged blocks and commits of the committed transactions the checkpoint had not passed). A bigger journal that is faster and recovers more slowly rises in both upper panels.",
            w.main_phase.as_deref().unwrap_or("the main phase")
        );
        out.push((svg, caption));
    }
    Ok(out)
}
