//! The words of the summary that opens every report: per workload one line per
//! configuration, fastest first ("second-disk: 56.3 files/s, 2.52× as fast as
//! same-disk [2.51, 2.53] (p < 0.001)"), and one line on how much to trust it. The
//! figures come from [`crate::analysis::summary`]; only the words are made here.

use std::fmt::Write as _;

use super::grid::{md_escape, Style};
pub(crate) use super::words::fmt_ratio;
use super::words::{fmt_ci_level, fmt_level, fmt_num_short, fmt_ratio_ci, p_expr};
use crate::analysis::summary::{Ratio, WorkloadSummary};
use crate::analysis::{Analysis, WorkloadAnalysis};

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
        out.push(line);
    }
    out.push(trust_line(s));
    out
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
    match style {
        Style::Plain => format!("Summary\n\n{out}"),
        Style::Markdown => format!("## Summary\n\n{out}"),
    }
}

/// "2.52× as fast as same-disk [2.51×, 2.53×] at 98.3% (adjusted p < 0.001)", or
/// what was decided instead: "not significant after correcting for 3 comparisons".
/// The interval is the one the decision rests on, so it excludes 1 exactly when the
/// words say the difference is real.
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
    match (p, v.significant, v.within_noise_band) {
        (None, _, _) => out.push_str(", too few trials to tell"),
        (Some(p), true, _) => {
            let _ = write!(out, " ({p})");
        }
        (Some(p), false, true) => {
            let _ = write!(
                out,
                ", a real difference inside the {}% noise band ({p})",
                fmt_num_short(a.noise_band * 100.0)
            );
        }
        (Some(p), false, false) if m > 1 => {
            let _ = write!(
                out,
                ", not significant after correcting for {m} comparisons ({p})"
            );
        }
        (Some(p), false, false) => {
            let _ = write!(out, ", not significant ({p})");
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
