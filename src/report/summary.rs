//! The words of the summary that opens every report: per workload one line per
//! configuration, fastest first ("second-disk: 56.3 files/s, 2.52× as fast as
//! same-disk [2.51, 2.53] (p < 0.001)"), and one line on how much to trust it. The
//! figures come from [`crate::analysis::summary`]; only the words are made here.

use std::fmt::Write as _;

use super::grid::{md_escape, Style};
pub(crate) use super::words::fmt_ratio;
use super::words::{fmt_band, fmt_ci_level, fmt_level, fmt_num_short, fmt_ratio_ci, p_expr};
use crate::analysis::decision::Decision;
use crate::analysis::summary::{Ratio, WorkloadSummary};
use crate::analysis::{Analysis, PathBound, WorkloadAnalysis};

/// The summary of workload `w` as lines of plain text: a heading line, one line per
/// ranked configuration, and the trust line. Empty without a summary.
pub fn summary_lines(w: &WorkloadAnalysis, a: &Analysis) -> Vec<String> {
    let Some(s) = &w.summary else {
        return Vec::new();
    };
    let primary: Vec<usize> = w
        .families
        .iter()
        .filter(|f| f.kind == crate::analysis::families::FamilyKind::Primary)
        .map(|f| f.size)
        .collect();
    let intervals = match primary.as_slice() {
        [pairs] if *pairs > 1 => format!(
            "each ratio with its interval at the level Holm decided it, over the {pairs} pairs of configurations"
        ),
        [_] | [] => format!("{}% intervals", fmt_level(a.confidence)),
        _ => "each ratio with its interval at the level Holm decided it within its family, named on each line".to_string(),
    };
    let mut out = vec![format!(
        "{}: ranked by mean {} on {} (fastest first; {intervals}):",
        w.name, s.rate_unit, s.main_phase,
    )];
    for r in &s.ranking {
        let mut line = format!("{}: {} {}", r.config, fmt_rate(r.mean), s.rate_unit);
        match &r.versus {
            Some(v) => {
                line.push_str(", ");
                line.push_str(&ratio_words(v, a));
            }
            None if s.ranking.len() > 1 => line.push_str(" (slowest)"),
            None => {}
        }
        for (_, words) in marks(r.suspect, r.path_bound.as_ref(), &s.main_phase, a) {
            let _ = write!(line, " [{words}]");
        }
        out.push(line);
    }
    out.push(trust_line(s));
    out
}

/// What a ranked line must say about itself before anyone acts on it: its main phase
/// is suspect, or its configuration's speed is partly the emulation path's. Each as
/// (badge, words): the badge for HTML's mark, the words for the line itself.
pub fn marks(
    suspect: bool,
    path_bound: Option<&PathBound>,
    main_phase: &str,
    a: &Analysis,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if suspect {
        out.push((
            "suspect",
            format!(
                "suspect: {main_phase} ran under the {} s threshold; too short to act on",
                fmt_num_short(a.suspect_below_secs)
            ),
        ));
    }
    if let Some(p) = path_bound {
        out.push((
            "path-bound",
            format!(
                "path-bound: {:.0}% of the {} disk's ({}) service time was this host's emulation path, not its model: this speed says as much about the path as about the device",
                p.share * 100.0,
                p.disk,
                p.model
            ),
        ));
    }
    out
}

/// The badges of [`marks`] alone.
pub fn badges(
    suspect: bool,
    path_bound: Option<&PathBound>,
    main_phase: &str,
    a: &Analysis,
) -> Vec<&'static str> {
    marks(suspect, path_bound, main_phase, a)
        .into_iter()
        .map(|m| m.0)
        .collect()
}

/// The badges of [`marks`] for each line [`summary_lines`] returns after its heading
/// (the trust line has none), for HTML to mark the lines where they stand.
pub fn summary_marks(w: &WorkloadAnalysis, a: &Analysis) -> Vec<Vec<&'static str>> {
    let Some(s) = &w.summary else {
        return Vec::new();
    };
    let mut out: Vec<Vec<&'static str>> = s
        .ranking
        .iter()
        .map(|r| badges(r.suspect, r.path_bound.as_ref(), &s.main_phase, a))
        .collect();
    out.push(Vec::new());
    out
}

/// Said once per report: why the levels beside the intervals differ from line to line
/// (Holm's step), and the rule the three words follow; only the rule when no family
/// has more than one pair (every interval is then at the report's level), and `None`
/// when nothing was compared.
pub fn levels_note(a: &Analysis) -> Option<String> {
    let mut sizes: Vec<usize> = a
        .workloads
        .iter()
        .flat_map(|w| &w.families)
        .filter(|f| f.kind == crate::analysis::families::FamilyKind::Primary && f.size > 1)
        .map(|f| f.size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let alpha = (1.0 - a.confidence) * 100.0;
    let band = fmt_band(a.noise_band);
    let rule = format!(
        "A ratio is called different only when its whole interval lies outside the {band} noise band, equivalent only when its whole interval lies inside it, and undecided otherwise."
    );
    let compared = a
        .workloads
        .iter()
        .filter_map(|w| w.summary.as_ref())
        .any(|s| s.ranking.iter().any(|r| r.versus.is_some()));
    if !compared {
        return None;
    }
    let Some(&m) = sizes.last() else {
        return Some(rule);
    };
    let pairs = sizes
        .iter()
        .map(|m| m.to_string())
        .collect::<Vec<_>>()
        .join(" or ");
    let looks = a.adaptive_looks.unwrap_or(1).max(1) as f64;
    let (divisor, looks_words) = if looks > 1.0 {
        (
            format!("({m} x {looks})"),
            format!(
                " (each divisor also multiplied by the adaptive rule's {looks} possible looks)"
            ),
        )
    } else {
        (m.to_string(), String::new())
    };
    let level = |k: usize| fmt_ci_level(1.0 - alpha / 100.0 / (k as f64 * looks));
    Some(format!(
        "Why the levels differ: every pair of configurations ({pairs} pairs per workload) is tested, and Holm's correction decides them one step at a time in order of p: the smallest at {}% (1 - {}%/{divisor}), the next at {}%, and so on to the last at {}%{looks_words}; each interval is printed at the level of its own step, and a line that names no level is at {}%. {rule}",
        level(m),
        fmt_num_short(alpha),
        level(m.max(2) - 1),
        level(1),
        fmt_level(a.confidence),
    ))
}

/// The summaries of every workload of `a`, in `style`, as the block that opens the
/// text and Markdown reports; empty when no workload has one.
pub(crate) fn summary_block(a: &Analysis, style: Style) -> String {
    let mut out = String::new();
    for w in &a.workloads {
        let lines = summary_lines(w, a);
        let Some((head, rest)) = lines.split_first() else {
            continue;
        };
        let _ = match style {
            Style::Plain => writeln!(out, "{head}"),
            Style::Markdown => writeln!(out, "{}\n", md_escape(head)),
        };
        for l in rest {
            let _ = match style {
                Style::Plain => writeln!(out, "  {l}"),
                Style::Markdown => writeln!(out, "- {}", md_escape(l)),
            };
        }
        out.push('\n');
    }
    if out.is_empty() {
        return out;
    }
    if let Some(note) = levels_note(a) {
        let _ = match style {
            Style::Plain => writeln!(out, "{note}\n"),
            Style::Markdown => writeln!(out, "{}\n", md_escape(&note)),
        };
    }
    match style {
        Style::Plain => format!("Summary\n\n{out}"),
        Style::Markdown => format!("## Summary\n\n{out}"),
    }
}

/// "2.52× as fast as same-disk [2.51×, 2.53×] at 98.3% (adjusted p < 0.001)" when the
/// whole interval is outside the noise band, or what was decided instead: "equivalent
/// within the ±10% noise band", "undecided: the interval reaches across the ±10% noise
/// band". The interval is the one the decision rests on
/// ([`crate::analysis::decision`]), so the word and the interval follow one rule.
pub(crate) fn ratio_words(v: &Ratio, a: &Analysis) -> String {
    let Some(ratio) = v.ratio else {
        return format!("not comparable with {} (its rate is 0)", v.slower);
    };
    let mut out = format!("{}× as fast as {}", fmt_ratio(ratio), v.slower);
    if let Some(lo) = v.ci_low {
        let _ = write!(out, " {}", fmt_ratio_ci(lo, v.ci_high));
        if let Some(level) = v.ci_level.filter(|l| (l - a.confidence).abs() > 1e-12) {
            let _ = write!(out, " at {}%", fmt_ci_level(level));
        }
    }
    let m = v.family_size.unwrap_or(1);
    let p = v.p.map(|p| {
        if m > 1 {
            format!("adjusted {}", p_expr(p, true))
        } else {
            p_expr(p, true)
        }
    });
    // Comparing runs, a pair is decided within its run or across runs: say which.
    let p = p.map(|p| match v.family.as_deref().filter(|f| f.contains(" (")) {
        Some(f) => format!("{p}; family {f}"),
        None => p,
    });
    let band = || fmt_band(a.noise_band);
    match (p, v.decision) {
        (None, _) | (_, None) => out.push_str(", too few trials to tell"),
        (Some(p), Some(Decision::Different)) => {
            let _ = write!(out, ", different beyond the {} noise band ({p})", band());
        }
        (Some(p), Some(Decision::Equivalent)) => {
            let _ = write!(out, ", equivalent within the {} noise band ({p})", band());
        }
        (Some(p), Some(Decision::Undecided)) => {
            let _ = write!(
                out,
                ", undecided: the interval reaches across the {} noise band ({p})",
                band()
            );
        }
    }
    out
}

/// "Trust: 5 trials per configuration; worst spread 1.2% CV (same-disk); no suspect
/// phase".
fn trust_line(s: &WorkloadSummary) -> String {
    let t = &s.trust;
    let mut trials = if t.min_trials == t.max_trials {
        format!(
            "{} per configuration",
            crate::units::count(t.min_trials as u64, "trial")
        )
    } else {
        format!("{}-{} trials per configuration", t.min_trials, t.max_trials)
    };
    // What so few trials cannot say, said where the reader decides.
    match t.min_trials {
        0 | 1 => trials.push_str(
            " (one trial has no spread: no interval and no test; run 3 or more)",
        ),
        2 => trials.push_str(
            " (two trials leave about 1 degree of freedom: intervals are very wide and often open-ended; run 3 or more)",
        ),
        _ => {}
    }
    let spread = match (t.worst_cv, &t.worst_cv_config) {
        (Some(cv), Some(c)) => format!("worst spread {:.1}% CV ({c})", cv * 100.0),
        _ => "spread unknown (one trial)".to_string(),
    };
    let suspect = match (t.suspect_phases, t.main_phase_suspect) {
        (0, _) => "no suspect phase".to_string(),
        (n, true) => format!("{n} suspect phase(s), the main phase among them"),
        (n, false) => format!("{n} suspect phase(s), not the main phase"),
    };
    let stalled = match t.stalled_trials {
        0 => String::new(),
        n => {
            format!("; {n} trial(s) excluded because the device daemon stalled (see the warnings)")
        }
    };
    format!("Trust: {trials}; {spread}; {suspect}{stalled}")
}

/// A rate with three significant digits at least: 56.3, 1234, 0.512.
pub(crate) fn fmt_rate(x: f64) -> String {
    let m = x.abs();
    if m >= 100.0 {
        format!("{x:.0}")
    } else if m >= 10.0 {
        format!("{x:.1}")
    } else if m >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}
