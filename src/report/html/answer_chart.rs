//! The figure that opens the answer: per workload, one row per configuration in the
//! answer's order and three panels side by side, so speed, safety and recovery read
//! across a row at a glance before any table: the mean rate with its 95% interval, the
//! crash states checked split into passed and failed, and the worst timed recovery with
//! a whisker to the figure to plan on.
//!
//! A panel a configuration has no figure for says "not measured" instead of drawing a
//! zero bar, which would read as "instant" or "nothing failed". Bars, whiskers and
//! those marks are SVG elements of their own with a class and `data-` attributes
//! (`answer-speed`, `answer-ci95`, `answer-crash`, `answer-passed`, `answer-failed`,
//! `answer-recovery`, `answer-plan`, `not-measured`), as in `bars`, so the figure can be
//! checked against the answer's table.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::charts::{
    draw_err, draw_legend, fmt_tick, font_size, inline_svg, label_style, legend_height,
    rate_ci_half, text_px, Drawn, Mark, Px, BAR, ERROR_BAR, FONT, LABEL_PX, PALETTE, WIDTH,
};
use super::marks::{attr, hex, with_elements};
use crate::analysis::answer::{ConfigAnswer, WorkloadAnswer};
use crate::report::summary::fmt_rate;
use crate::report::words::fmt_sig;

const PASSED: RGBColor = PALETTE[2];
const FAILED: RGBColor = PALETTE[5];
const RECOVERY: RGBColor = PALETTE[3];
const NOT_MEASURED: RGBColor = RGBColor(119, 119, 119);

const MARGIN: i32 = 12;
const TITLE_H: i32 = 34;
const HEADER_H: i32 = 38;
const PANEL_GAP: i32 = 26;
const BAR_H: i32 = 14;
/// Bar band, the figures in words under it, and air before the next row.
const ROW_H: i32 = 3 + BAR_H + 3 + 14 + 8;
/// A row's own line for the name when the names are too long for a column beside the
/// panels.
const NAME_LINE_H: i32 = 18;
const AXIS_H: i32 = 30;
const TEXT_PX: u32 = 11;
/// Widest name column; longer names go on a line of their own above their row, as a
/// name cut short could be read as another configuration's.
const MAX_NAME_W: i32 = 200;
const NEGATIVE: &str = "negative control";

/// The speed panel of a row: the mean rate on the main phase, the half-width of its
/// 95% interval (0: one trial, no interval) and the timed trials behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Speed {
    pub(crate) mean: f64,
    pub(crate) half: f64,
    pub(crate) n: usize,
}

/// The crash panel of a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Crash {
    pub(crate) states: usize,
    pub(crate) failed: usize,
    /// The workload promised something to check (fsync'ed files, records); without
    /// that a state passes on consistency alone, and "ok" would claim more.
    pub(crate) checks_promises: bool,
}

/// The recovery panel of a row: a bar at `value`, a whisker up to `upto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Recovery {
    pub(crate) value: f64,
    pub(crate) upto: f64,
    /// The worst timed state and the figure to plan on (a recovery model), or, without
    /// a live-journal count to fit (XFS), the median and the 95th percentile.
    pub(crate) model: bool,
}

/// A journal a power cut empties (a RAM disk): the lab's lost-journal states, drawn
/// above the crash states that keep RAM, which are the other case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Emptied {
    pub(crate) states: usize,
    pub(crate) mount_failed: usize,
}

/// One configuration's row; `None`: not measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) config: String,
    pub(crate) negative_control: bool,
    pub(crate) speed: Option<Speed>,
    /// The marks that forbid acting on the speed ("suspect", "path-bound").
    pub(crate) marks: Vec<&'static str>,
    pub(crate) crash: Option<Crash>,
    /// `Some` when a power cut empties the journal; `states` 0: not tried.
    pub(crate) emptied: Option<Emptied>,
    pub(crate) recovery: Option<Recovery>,
}

/// What the figure shows of one workload.
pub(crate) struct AnswerFigure<'a> {
    pub(crate) title: &'a str,
    /// The rate's unit; `None`: no timed trial of the workload at all.
    pub(crate) rate_unit: Option<&'a str>,
    pub(crate) rows: &'a [Row],
}

impl Row {
    /// The row of `c`, with the speed interval from `workload` (the analysis of the
    /// answer's workload) on `phase`.
    pub(crate) fn of(
        c: &ConfigAnswer,
        workload: Option<&crate::analysis::WorkloadAnalysis>,
        phase: Option<&str>,
    ) -> Row {
        let speed = c.rate_mean.map(|mean| Speed {
            mean,
            half: workload
                .zip(phase)
                .and_then(|(w, p)| rate_ci_half(w, &c.config, p))
                .unwrap_or(0.0),
            n: c.trials,
        });
        let crash = (c.crash_states > 0).then_some(Crash {
            states: c.crash_states,
            failed: c.crash_failures,
            checks_promises: c.checks_promises,
        });
        // As the trade-off figure: the model's worst and plan where there is one, the
        // replay's median and p95 where there is no live-journal count to fit against.
        let recovery = match (c.recovery_worst_s, c.recovery_plan_s, c.replay_median_s) {
            (Some(worst), plan, _) => Some(Recovery {
                value: worst,
                upto: plan.unwrap_or(worst),
                model: true,
            }),
            (None, _, Some(median)) => Some(Recovery {
                value: median,
                upto: c.replay_p95_s.unwrap_or(median),
                model: false,
            }),
            (None, _, None) => None,
        };
        let mut marks = Vec::new();
        if speed.is_some() && c.suspect {
            marks.push("suspect");
        }
        if speed.is_some() && c.path_bound.is_some() {
            marks.push("path-bound");
        }
        let emptied = (c.journal_power_cut == crate::emu::PowerCut::Empties).then(|| {
            c.lost_journal.as_ref().map_or(
                Emptied {
                    states: 0,
                    mount_failed: 0,
                },
                |l| Emptied {
                    states: l.states,
                    mount_failed: l.mount_failed,
                },
            )
        });
        Row {
            config: c.config.clone(),
            negative_control: c.negative_control,
            speed,
            marks,
            crash,
            emptied,
            recovery,
        }
    }
}

/// The answer figures of `analysis`, one per workload with a configuration, as (SVG,
/// caption); empty without crash states, as the answer is.
pub(crate) fn answer_charts(analysis: &crate::analysis::Analysis) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for w in &crate::analysis::answer::of(analysis) {
        if w.configs.is_empty() {
            continue;
        }
        let workload = analysis.workloads.iter().find(|x| x.name == w.workload);
        let rows: Vec<Row> = w
            .configs
            .iter()
            .map(|c| Row::of(c, workload, w.main_phase.as_deref()))
            .collect();
        let title = format!(
            "{}: speed, power cuts and recovery per configuration",
            w.workload
        );
        let svg = answer_chart(&AnswerFigure {
            title: &title,
            rate_unit: w.rate_unit.as_deref(),
            rows: &rows,
        })?;
        out.push((svg, caption(w, &rows)));
    }
    Ok(out)
}

fn caption(w: &WorkloadAnswer, rows: &[Row]) -> String {
    let speed = match (&w.rate_unit, &w.main_phase) {
        (Some(unit), Some(phase)) => format!(
            "Left, speed: the mean {unit} on {phase} (n: timed trials), whisker: the 95% confidence interval of the mean (none with one trial)."
        ),
        _ => "Left, speed: no timed trial of this workload to show.".to_string(),
    };
    let control = if rows.iter().any(|r| r.negative_control) {
        " A configuration labelled negative control is built to lose data: its failures are expected, and show that the check can see a loss."
    } else {
        ""
    };
    let emptied = if rows.iter().any(|r| r.emptied.is_some()) {
        " A journal on a device a power cut empties (a RAM disk) has two bars: above, the power cut (\"cut\": the journal is gone, the mount fails and only fsck brings the file system back); below, the crash states, which keep RAM's contents as only a crash that keeps the power on does (a kernel panic, a reset: \"RAM kept\")."
    } else {
        ""
    };
    format!(
        "One row per configuration, in the answer's order. {speed} Middle, power cuts: the crash states checked, the bar split into passed (green) and failed (vermilion: every verdict but ok), the count in words.{emptied}{control} Right, recovery after a crash (the mount that replays the journal, with model timing on): the bar is the worst timed state, the whisker reaches the figure to plan on (the upper end of the 95% prediction at the fullest journal the workload left); without a live-journal count to fit (XFS) the bar is the median and the whisker reaches the 95th percentile. \"not measured\": the configuration has no timed trial, no crash state or no timed recovery for that panel. The tables below hold the same figures."
    )
}

pub(crate) fn answer_chart(f: &AnswerFigure<'_>) -> Result<String> {
    Ok(answer_chart_drawn(f)?.svg)
}

/// Where things go, in pixels.
struct Layout {
    names_above: bool,
    /// Left edge of each panel, and their common width.
    panel_x: [i32; 3],
    panel_w: i32,
    row_h: i32,
    rows_top: i32,
}

impl Layout {
    fn of(rows: &[Row]) -> Layout {
        let widest = rows
            .iter()
            .map(|r| text_px(&r.config, LABEL_PX) as i32)
            .chain(
                rows.iter()
                    .any(|r| r.negative_control)
                    .then(|| text_px(NEGATIVE, TEXT_PX) as i32),
            )
            .max()
            .unwrap_or(0)
            + 14;
        let names_above = widest > MAX_NAME_W;
        let name_w = if names_above { 0 } else { widest.max(90) };
        let left = MARGIN + name_w;
        let panel_w = (WIDTH as i32 - MARGIN - left - 2 * PANEL_GAP) / 3;
        let panel_x = [0, 1, 2].map(|k| left + k * (panel_w + PANEL_GAP));
        Layout {
            names_above,
            panel_x,
            panel_w,
            row_h: ROW_H + if names_above { NAME_LINE_H } else { 0 },
            rows_top: TITLE_H + HEADER_H,
        }
    }

    /// Top of row `i`'s bar band.
    fn bar_top(&self, i: usize) -> i32 {
        let name = if self.names_above { NAME_LINE_H } else { 0 };
        self.rows_top + i as i32 * self.row_h + name + 3
    }

    fn rows_bottom(&self, n: usize) -> i32 {
        self.rows_top + n as i32 * self.row_h
    }
}

/// An axis from 0 for values up to `top`: its end and ticks, at a round step.
fn axis(top: f64) -> (f64, Vec<f64>) {
    if !(top.is_finite() && top > 0.0) {
        return (1.0, vec![0.0, 0.5, 1.0]);
    }
    let raw = top / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let end = (top / step - 1e-9).ceil().max(1.0) * step;
    let n = (end / step).round() as usize;
    (end, (0..=n).map(|k| k as f64 * step).collect())
}

/// Pixels of `v` on a panel starting at `x0`, `w` wide, for an axis ending at `end`.
fn at(x0: i32, w: i32, end: f64, v: f64) -> i32 {
    x0 + (v.max(0.0) / end * w as f64).round() as i32
}

fn text_style(px: u32, color: RGBColor) -> TextStyle<'static> {
    (FONT, font_size(px))
        .into_font()
        .color(&color)
        .pos(Pos::new(HPos::Left, VPos::Top))
}

fn draw_text(
    root: &DrawingArea<SVGBackend, Shift>,
    text: &str,
    (x, y): (i32, i32),
    style: TextStyle<'static>,
) -> Result<()> {
    root.draw(&Text::new(text.to_string(), (x, y), style))
        .map_err(draw_err)
}

/// What the legend explains: only what the figure draws.
fn legend_entries(rows: &[Row]) -> Vec<(String, Mark)> {
    let mut entries = Vec::new();
    if rows.iter().any(|r| r.speed.is_some()) {
        entries.push(("mean rate".to_string(), Mark::Swatch(BAR)));
    }
    if rows.iter().flat_map(|r| r.speed).any(|s| s.half > 0.0) {
        entries.push(("95% CI of the mean".to_string(), Mark::ErrorBar));
    }
    let crash = || rows.iter().flat_map(|r| r.crash);
    if crash().any(|c| c.failed < c.states) {
        entries.push(("passed".to_string(), Mark::Swatch(PASSED)));
    }
    if crash().any(|c| c.failed > 0) || rows.iter().any(|r| r.emptied.is_some()) {
        entries.push(("failed".to_string(), Mark::Swatch(FAILED)));
    }
    let rec = || rows.iter().flat_map(|r| r.recovery);
    if rec().any(|r| r.model) {
        entries.push(("worst timed recovery".to_string(), Mark::Swatch(RECOVERY)));
        if rec().any(|r| r.model && r.upto > r.value) {
            entries.push(("whisker: recovery to plan on".to_string(), Mark::ErrorBar));
        }
    }
    if rec().any(|r| !r.model) {
        entries.push((
            "median recovery (no model)".to_string(),
            Mark::Swatch(RECOVERY),
        ));
        if rec().any(|r| !r.model && r.upto > r.value) {
            entries.push(("whisker: its 95th percentile".to_string(), Mark::ErrorBar));
        }
    }
    entries
}

/// "76 of 200 failed (expected)", "200/200 ok": the crash panel's words.
fn crash_words(c: &Crash, negative_control: bool) -> String {
    let n = c.states;
    match (c.failed, negative_control) {
        (0, false) if c.checks_promises => format!("{n}/{n} ok"),
        (0, false) => format!("{n}/{n} consistent"),
        // The control exists to be caught losing data; passing every state means the
        // check could not see the loss it was built to show.
        (0, true) => format!("{n}/{n} ok: control NOT caught"),
        (f, false) => format!("{f} of {n} failed"),
        (f, true) => format!("{f} of {n} failed (expected)"),
    }
}

/// The crash panel of row `r`, its bar at `(cx, top)` and `w` wide: its SVG elements
/// go into `own` and its extent into `data`; returns the words under the bar and their
/// colour, `None` when the row has no crash states. A journal a power cut empties gets
/// the power cut in the bar's upper half and the crash states (which keep RAM) in its
/// lower half.
fn crash_panel(
    r: &Row,
    config: &str,
    (cx, top): (i32, i32),
    w: i32,
    own: &mut Vec<String>,
    data: &mut Vec<Px>,
) -> Option<(String, RGBColor)> {
    let c = r.crash.as_ref()?;
    if let Some(e) = &r.emptied {
        let half = BAR_H / 2;
        let failed_from = cx + (e.states - e.mount_failed) as i32 * w / e.states.max(1) as i32;
        own.push(format!(
            r#"<rect class="answer-power-cut" data-config="{config}" data-states="{}" data-mount-failed="{}" x="{failed_from}" y="{top}" width="{}" height="{half}" fill="{}"/>"#,
            e.states,
            e.mount_failed,
            cx + w - failed_from,
            hex(FAILED)
        ));
    }
    let (sub_top, sub_h) = match r.emptied {
        Some(_) => (top + BAR_H / 2, BAR_H - BAR_H / 2),
        None => (top, BAR_H),
    };
    let split = cx + (c.states - c.failed) as i32 * w / c.states.max(1) as i32;
    own.push(format!(
        r#"<rect class="answer-crash" data-config="{config}" data-states="{}" data-failed="{}" data-negative-control="{}" x="{cx}" y="{top}" width="{w}" height="{BAR_H}" fill="none" stroke="{}" stroke-width="1"/>"#,
        c.states,
        c.failed,
        r.negative_control,
        hex(NOT_MEASURED)
    ));
    for (class, from, to, colour, n) in [
        ("answer-passed", cx, split, PASSED, c.states - c.failed),
        ("answer-failed", split, cx + w, FAILED, c.failed),
    ] {
        if n == 0 {
            continue;
        }
        own.push(format!(
            r#"<rect class="{class}" data-config="{config}" data-states="{n}" x="{from}" y="{sub_top}" width="{}" height="{sub_h}" fill="{}"/>"#,
            to - from,
            hex(colour)
        ));
    }
    data.push(Px::span((cx, top), (cx + w, top + BAR_H)));
    Some(match &r.emptied {
        Some(e) => (emptied_words(e, c, r.negative_control), FAILED),
        None => (crash_words(c, r.negative_control), BLACK),
    })
}

/// "cut 40/40 fail · RAM kept 40/40 ok": the power cut (its mount fails) first, then
/// the crash that keeps RAM; the caption and legend say which is which.
fn emptied_words(e: &Emptied, c: &Crash, negative_control: bool) -> String {
    let cut = match e.states {
        0 => "cut empties it".to_string(),
        n => format!("cut {}/{n} fail", e.mount_failed),
    };
    format!("{cut} · RAM kept {}", crash_words(c, negative_control))
}

fn speed_words(s: &Speed) -> String {
    // Equal trials have an interval of no width, which is a finding; one trial has none.
    if s.n >= 2 {
        format!(
            "{} [{}, {}], n={}",
            fmt_rate(s.mean),
            fmt_rate((s.mean - s.half).max(0.0)),
            fmt_rate(s.mean + s.half),
            s.n
        )
    } else {
        format!("{}, n={}", fmt_rate(s.mean), s.n)
    }
}

fn recovery_words(r: &Recovery) -> String {
    match r.model {
        true => format!("worst {} s, plan {} s", fmt_sig(r.value), fmt_sig(r.upto)),
        false => format!("median {} s, p95 {} s", fmt_sig(r.value), fmt_sig(r.upto)),
    }
}

/// A horizontal whisker from `lo` to `hi` at `y`, capped at the ends in `caps`.
fn whisker_d(lo: i32, hi: i32, y: i32, caps: (bool, bool)) -> String {
    let h = BAR_H / 2 - 1;
    let mut d = format!("M{lo} {y}H{hi}");
    if caps.0 {
        d.push_str(&format!("M{lo} {}V{}", y - h, y + h));
    }
    if caps.1 {
        d.push_str(&format!("M{hi} {}V{}", y - h, y + h));
    }
    d
}

pub(crate) fn answer_chart_drawn(f: &AnswerFigure<'_>) -> Result<Drawn> {
    let rows = f.rows;
    let lay = Layout::of(rows);
    let entries = legend_entries(rows);
    let axis_y = lay.rows_bottom(rows.len()) + 4;
    let body_h = (axis_y + AXIS_H) as u32;
    let height = body_h + legend_height(&entries, LABEL_PX);
    let (speed_end, speed_ticks) = axis(
        rows.iter()
            .flat_map(|r| r.speed)
            .map(|s| s.mean + s.half)
            .fold(0.0, f64::max)
            * 1.02,
    );
    let (rec_end, rec_ticks) = axis(
        rows.iter()
            .flat_map(|r| r.recovery)
            .map(|r| r.upto.max(r.value))
            .fold(0.0, f64::max)
            * 1.02,
    );
    let crash_ticks = [0.0, 0.5, 1.0];
    let (w, [sx, cx, rx]) = (lay.panel_w, lay.panel_x);
    let mut svg = String::new();
    let (mut own, mut data) = (Vec::new(), Vec::new());
    let legend;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let title = (FONT, font_size(16))
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top));
        draw_text(&root, f.title, (WIDTH as i32 / 2, 10), title)?;
        let bold = |px: u32| {
            (FONT, font_size(px), FontStyle::Bold)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Top))
        };
        let heads = [
            (
                "speed",
                match f.rate_unit {
                    Some(u) => format!("mean {u}, 95% CI"),
                    None => "no timed trial".to_string(),
                },
            ),
            ("power cuts", "crash states: passed | failed".to_string()),
            (
                "recovery (seconds)",
                // Rows of either kind name theirs in words; the heading speaks for all
                // only when no row has a model.
                if rows.iter().flat_map(|r| r.recovery).all(|r| !r.model)
                    && rows.iter().any(|r| r.recovery.is_some())
                {
                    "median, whisker to p95".to_string()
                } else {
                    "worst timed, whisker to plan on".to_string()
                },
            ),
        ];
        for (x, (head, sub)) in lay.panel_x.iter().zip(&heads) {
            draw_text(&root, head, (*x, TITLE_H), bold(LABEL_PX))?;
            draw_text(
                &root,
                sub,
                (*x, TITLE_H + 17),
                text_style(TEXT_PX, NOT_MEASURED),
            )?;
        }
        // Every other row shaded, so a row reads across its three panels.
        for i in (0..rows.len()).step_by(2) {
            let top = lay.rows_top + i as i32 * lay.row_h - 2;
            root.draw(&Rectangle::new(
                [
                    (MARGIN / 2, top),
                    (WIDTH as i32 - MARGIN / 2, top + lay.row_h),
                ],
                RGBColor(244, 244, 244).filled(),
            ))
            .map_err(draw_err)?;
        }
        // Gridlines and axes, under the bars.
        // Gridlines run through the bars and their words, not across a name on its own
        // line, which they would strike through.
        let grid: Vec<(i32, i32)> = if lay.names_above {
            (0..rows.len())
                .map(|i| (lay.bar_top(i) - 3, lay.bar_top(i) - 3 + ROW_H))
                .collect()
        } else {
            vec![(lay.rows_top - 2, axis_y)]
        };
        // A panel with nothing in it gets no axis: a scale would suggest figures.
        for (x0, end, ticks, share, drawn) in [
            (
                sx,
                speed_end,
                &speed_ticks[..],
                false,
                rows.iter().any(|r| r.speed.is_some()),
            ),
            (
                cx,
                1.0,
                &crash_ticks[..],
                true,
                rows.iter().any(|r| r.crash.is_some()),
            ),
            (
                rx,
                rec_end,
                &rec_ticks[..],
                false,
                rows.iter().any(|r| r.recovery.is_some()),
            ),
        ] {
            if !drawn {
                continue;
            }
            root.draw(&PathElement::new(
                vec![(x0, axis_y), (x0 + w, axis_y)],
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err)?;
            for (k, t) in ticks.iter().enumerate() {
                let x = at(x0, w, end, *t);
                let colour = BLACK.mix(if k == 0 { 0.5 } else { 0.1 });
                for &(top, bottom) in &grid {
                    root.draw(&PathElement::new(vec![(x, top), (x, bottom)], colour))
                        .map_err(draw_err)?;
                }
                root.draw(&PathElement::new(vec![(x, axis_y), (x, axis_y + 4)], BLACK))
                    .map_err(draw_err)?;
                let label = match share {
                    true => format!("{:.0}%", t * 100.0),
                    false => fmt_tick(*t),
                };
                let style = label_style(TEXT_PX).pos(Pos::new(HPos::Center, VPos::Top));
                draw_text(&root, &label, (x, axis_y + 7), style)?;
            }
        }
        for (i, r) in rows.iter().enumerate() {
            let top = lay.bar_top(i);
            let mid = top + BAR_H / 2;
            let words_y = top + BAR_H + 3;
            let config = attr(&r.config);
            if lay.names_above {
                let mut name = r.config.clone();
                if r.negative_control {
                    name.push_str(" — negative control: failures expected");
                }
                draw_text(&root, &name, (MARGIN, top - NAME_LINE_H), bold(LABEL_PX))?;
            } else {
                let style = label_style(LABEL_PX).pos(Pos::new(HPos::Left, VPos::Center));
                draw_text(&root, &r.config, (MARGIN, mid), style)?;
                if r.negative_control {
                    let style = (FONT, font_size(TEXT_PX), FontStyle::Italic)
                        .into_font()
                        .color(&FAILED)
                        .pos(Pos::new(HPos::Left, VPos::Top));
                    draw_text(&root, NEGATIVE, (MARGIN, words_y), style)?;
                }
            }
            let words = || text_style(TEXT_PX, RGBColor(51, 51, 51));
            let not_measured = |panel: &str, x: i32| {
                format!(
                    r#"<text class="not-measured" data-config="{config}" data-panel="{panel}" x="{x}" y="{mid}" dy="0.5ex" text-anchor="start" font-family="{FONT}" font-size="{TEXT_PX}" font-style="italic" fill="{}">not measured</text>"#,
                    hex(NOT_MEASURED)
                )
            };
            match &r.speed {
                Some(s) => {
                    let end = at(sx, w, speed_end, s.mean);
                    own.push(format!(
                        r#"<rect class="answer-speed" data-config="{config}" data-mean="{}" data-n="{}" data-marks="{}" x="{sx}" y="{top}" width="{}" height="{BAR_H}" fill="{}"/>"#,
                        s.mean,
                        s.n,
                        r.marks.join(" "),
                        end - sx,
                        hex(BAR)
                    ));
                    data.push(Px::span((sx, top), (end, top + BAR_H)));
                    if s.half > 0.0 {
                        let (lo, hi) = ((s.mean - s.half).max(0.0), s.mean + s.half);
                        let (l, h) = (at(sx, w, speed_end, lo), at(sx, w, speed_end, hi));
                        own.push(format!(
                            r#"<path class="answer-ci95" data-config="{config}" data-low="{lo}" data-high="{hi}" d="{}" stroke="{}" stroke-width="2" fill="none"/>"#,
                            whisker_d(l, h, mid, (true, true)),
                            hex(ERROR_BAR)
                        ));
                        data.push(Px::span((l, top + 1), (h, top + BAR_H - 1)));
                    }
                    let marked: String = r.marks.iter().map(|m| format!(" [{m}]")).collect();
                    draw_text(
                        &root,
                        &format!("{}{marked}", speed_words(s)),
                        (sx, words_y),
                        words(),
                    )?;
                }
                None => own.push(not_measured("speed", sx)),
            }
            match crash_panel(r, &config, (cx, top), w, &mut own, &mut data) {
                Some((words, colour)) => {
                    draw_text(&root, &words, (cx, words_y), text_style(TEXT_PX, colour))?
                }
                None => own.push(not_measured("crash", cx)),
            }
            match &r.recovery {
                Some(rec) => {
                    let basis = if rec.model { "worst" } else { "median" };
                    let end = at(rx, w, rec_end, rec.value);
                    own.push(format!(
                        r#"<rect class="answer-recovery" data-config="{config}" data-basis="{basis}" data-value="{}" x="{rx}" y="{top}" width="{}" height="{BAR_H}" fill="{}"/>"#,
                        rec.value,
                        end - rx,
                        hex(RECOVERY)
                    ));
                    data.push(Px::span((rx, top), (end, top + BAR_H)));
                    if rec.upto > rec.value {
                        let h = at(rx, w, rec_end, rec.upto);
                        own.push(format!(
                            r#"<path class="answer-plan" data-config="{config}" data-basis="{basis}" data-low="{}" data-high="{}" d="{}" stroke="{}" stroke-width="2" fill="none"/>"#,
                            rec.value,
                            rec.upto,
                            whisker_d(end, h, mid, (false, true)),
                            hex(ERROR_BAR)
                        ));
                        data.push(Px::span((end, top + 1), (h, top + BAR_H - 1)));
                    }
                    draw_text(&root, &recovery_words(rec), (rx, words_y), words())?;
                }
                None => own.push(not_measured("recovery", rx)),
            }
        }
        legend = draw_legend(&root, &entries, body_h as i32, LABEL_PX)?;
        root.present().map_err(draw_err)?;
    }
    Ok(Drawn {
        svg: with_elements(&inline_svg(svg), &own),
        legend,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_end_on_a_round_tick_at_or_above_the_largest_value() {
        for top in [0.013, 0.9, 1.0, 7.3, 118.0, 2400.0] {
            let (end, ticks) = axis(top);
            assert!(end >= top, "{top}: {end}");
            assert_eq!(ticks.first(), Some(&0.0));
            assert!(
                (ticks.last().unwrap() - end).abs() < 1e-9 * end,
                "{ticks:?}"
            );
            assert!((3..=6).contains(&ticks.len()), "{top}: {ticks:?}");
        }
        assert_eq!(axis(0.0).0, 1.0, "nothing to show: still an axis");
    }

    #[test]
    fn crash_words_say_what_failed_and_that_a_control_is_meant_to() {
        let c = |failed, checks_promises| Crash {
            states: 200,
            failed,
            checks_promises,
        };
        assert_eq!(crash_words(&c(0, true), false), "200/200 ok");
        assert_eq!(crash_words(&c(0, false), false), "200/200 consistent");
        assert_eq!(crash_words(&c(76, true), false), "76 of 200 failed");
        assert_eq!(
            crash_words(&c(76, true), true),
            "76 of 200 failed (expected)"
        );
        assert!(crash_words(&c(0, true), true).contains("NOT caught"));
    }
}
