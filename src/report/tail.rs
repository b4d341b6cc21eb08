//! The tail-latency answer in words ([`crate::analysis::tail`]): one line per
//! configuration against the baseline, "wal-disk: commit p99 9.1 ms vs internal 41 ms,
//! 4.5× lower [3.1×, 6.0×], different", and a table of p50, p99 and p99.9 with their
//! intervals for the full report.

use std::fmt::Write as _;

use super::grid::{md_escape, Grid, Style};
use super::words::{fmt_band, fmt_ci_level, fmt_ratio};
use crate::analysis::tail::{ConfigTail, Percentile, TailAnalysis, TailVersus};
use crate::analysis::{Analysis, WorkloadAnalysis};

/// A latency in µs as people read one: "850 µs", "9.1 ms", "1.25 s".
pub(crate) fn fmt_latency(us: f64) -> String {
    let sig = |x: f64| super::words::fmt_sig(x);
    if us < 1000.0 {
        format!("{} µs", sig(us))
    } else if us < 1e6 {
        format!("{} ms", sig(us / 1e3))
    } else {
        format!("{} s", sig(us / 1e6))
    }
}

/// The op in a phrase: "commit" from "commits", else the phase's name.
fn op_name(t: &TailAnalysis) -> String {
    let unit = t.op_unit.trim();
    match unit.strip_suffix('s') {
        Some(one) if !one.is_empty() && unit != "ops" => one.to_string(),
        _ => t.phase.clone(),
    }
}

/// "4.5× lower [3.1×, 6.0×], different": the ratio turned so it reads above 1.
pub(crate) fn versus_words(v: &TailVersus) -> String {
    let (word, r, lo, hi) = if v.ratio < 1.0 {
        // p99(c)/p99(b) < 1: c's tail is lower by 1/r; the interval turns round.
        let lo = v.ci_high.map(|h| 1.0 / h);
        let hi = (v.ci_low > 0.0).then(|| 1.0 / v.ci_low);
        ("lower", 1.0 / v.ratio, lo, hi)
    } else {
        ("higher", v.ratio, Some(v.ci_low), v.ci_high)
    };
    // Whole numbers from 10× up: "240× lower", not "240.46×".
    let f = |x: f64| {
        if x >= 10.0 {
            format!("{x:.0}")
        } else {
            fmt_ratio(x)
        }
    };
    let ci = match (lo, hi) {
        (Some(l), Some(h)) => format!("[{}×, {}×]", f(l), f(h)),
        (Some(l), None) => format!("[{}×, ∞)", f(l)),
        (None, Some(h)) => format!("(0, {}×]", f(h)),
        (None, None) => "(no bound)".into(),
    };
    format!("{}× {word} {ci}, {}", f(r), v.decision.as_str())
}

/// One line per configuration: the baseline's p99 alone, the others against it.
pub fn tail_lines(t: &TailAnalysis) -> Vec<String> {
    let op = op_name(t);
    t.configs
        .iter()
        .map(|c| match &c.p99_vs_baseline {
            Some(v) => format!(
                "{}: {op} p99 {} vs {} {}, {}",
                c.config,
                fmt_latency(c.p99.mean_us),
                v.baseline,
                fmt_latency(v.baseline_p99_us),
                versus_words(v)
            ),
            None if t.baseline.as_deref() == Some(c.config.as_str()) => format!(
                "{}: {op} p99 {} (baseline)",
                c.config,
                fmt_latency(c.p99.mean_us)
            ),
            None => format!(
                "{}: {op} p99 {} ({} trial{}: no comparison)",
                c.config,
                fmt_latency(c.p99.mean_us),
                c.trials,
                if c.trials == 1 { "" } else { "s" }
            ),
        })
        .collect()
}

/// The head of the tail lines: what was timed and the band.
pub fn tail_head(t: &TailAnalysis) -> String {
    format!(
        "{} latency on {}, mean over trials of each trial's p99; p99 against the baseline decided at {}:",
        op_name(t),
        t.phase,
        fmt_band(t.band)
    )
}

fn cell(p: &Percentile) -> String {
    match (p.ci_low_us, p.ci_high_us) {
        (Some(l), Some(h)) => format!(
            "{} [{}, {}]",
            fmt_latency(p.mean_us),
            fmt_latency(l),
            fmt_latency(h)
        ),
        _ => fmt_latency(p.mean_us),
    }
}

fn row(c: &ConfigTail) -> Vec<String> {
    vec![
        c.config.clone(),
        c.trials.to_string(),
        c.ops_per_trial.to_string(),
        cell(&c.p50),
        cell(&c.p99),
        c.p999.as_ref().map_or("–".into(), cell),
        c.p99_vs_baseline.as_ref().map_or("–".into(), versus_words),
    ]
}

/// One workload's tail table (text or Markdown); empty without a tail.
pub(crate) fn tail_table(w: &WorkloadAnalysis, style: Style) -> String {
    let Some(t) = &w.tail else {
        return String::new();
    };
    let headers = [
        "config",
        "trials",
        "ops/trial",
        "p50",
        "p99",
        "p99.9",
        "p99 vs baseline",
    ];
    let grid = Grid {
        title: format!(
            "Tail latency: {} ({}% intervals of the mean over trials)",
            w.name,
            fmt_ci_level(t.level)
        ),
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows: t.configs.iter().map(row).collect(),
    };
    let mut out = grid.render(style);
    match style {
        Style::Plain => out.push_str(&tail_head(t)),
        Style::Markdown => out.push_str(&format!("\n{}", md_escape(&tail_head(t)))),
    }
    out.push_str("\n\n");
    out
}

/// The tail lines of every workload with one, for the top of a report without crash
/// states (with them, the glance carries the lines).
pub(crate) fn tail_glance(a: &Analysis, style: Style) -> String {
    let mut out = String::new();
    for w in &a.workloads {
        let Some(t) = w.tail.as_ref().filter(|t| t.configs.len() > 1) else {
            continue;
        };
        let head = format!("{}: {}", w.name, tail_head(t));
        match style {
            Style::Plain => {
                let _ = writeln!(out, "{head}");
                for l in tail_lines(t) {
                    let _ = writeln!(out, "  {l}");
                }
            }
            Style::Markdown => {
                let _ = writeln!(out, "**{}**\n", md_escape(&head));
                for l in tail_lines(t) {
                    let _ = writeln!(out, "- {}", md_escape(&l));
                }
            }
        }
        out.push('\n');
    }
    out
}

/// The workloads one `neighbour_rate` list made (`NAME@nbRATE`), by their shared name,
/// each with its rates in the experiment's order.
fn by_load(a: &Analysis) -> Vec<(&str, Vec<(&str, &TailAnalysis)>)> {
    let mut out: Vec<(&str, Vec<(&str, &TailAnalysis)>)> = Vec::new();
    for w in &a.workloads {
        let (Some((base, rate)), Some(t)) = (w.name.split_once("@nb"), &w.tail) else {
            continue;
        };
        match out.iter_mut().find(|(b, _)| *b == base) {
            Some((_, v)) => v.push((rate, t)),
            None => out.push((base, vec![(rate, t)])),
        }
    }
    out.retain(|(_, v)| v.len() > 1);
    out
}

/// Where a placement starts to pay: per workload run under several neighbour rates and
/// per configuration, its p99 against the baseline's at each rate, in one line
/// ("wal-disk against internal, commit p99 by neighbour rate: 0 → 1.02× higher [..],
/// equivalent; 8M → 2.91× lower [..], different").
pub fn load_lines(a: &Analysis) -> Vec<String> {
    let mut lines = Vec::new();
    for (base, rates) in by_load(a) {
        let t0 = rates[0].1;
        let Some(baseline) = t0.baseline.as_deref() else {
            continue;
        };
        let configs: Vec<&str> = t0
            .configs
            .iter()
            .map(|c| c.config.as_str())
            .filter(|c| *c != baseline)
            .collect();
        for c in configs {
            let parts: Vec<String> = rates
                .iter()
                .map(|(rate, t)| {
                    let v = t
                        .configs
                        .iter()
                        .find(|x| x.config == c)
                        .and_then(|x| x.p99_vs_baseline.as_ref());
                    match v {
                        Some(v) => format!("{rate}/s → {}", versus_words(v)),
                        None => format!("{rate}/s → no comparison"),
                    }
                })
                .collect();
            lines.push(format!(
                "{base}: {c} against {baseline}, {} p99 by neighbour rate: {}",
                op_name(t0),
                parts.join("; ")
            ));
        }
    }
    lines
}

/// [`load_lines`] as a block, for the glance and the summary; empty without a list of
/// neighbour rates.
pub(crate) fn load_block(a: &Analysis, style: Style) -> String {
    let lines = load_lines(a);
    if lines.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    match style {
        Style::Plain => {
            out.push_str("Under load (the workload beside a neighbour writing at each rate):\n");
            for l in &lines {
                let _ = writeln!(out, "  {l}");
            }
        }
        Style::Markdown => {
            out.push_str(
                "**Under load** (the workload beside a neighbour writing at each rate):\n\n",
            );
            for l in &lines {
                let _ = writeln!(out, "- {}", md_escape(l));
            }
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Decision;

    #[test]
    fn a_lower_tail_reads_as_times_lower_with_its_interval_turned_round() {
        let v = TailVersus {
            baseline: "internal".into(),
            baseline_p99_us: 41_000.0,
            ratio: 0.25,
            ci_low: 0.2,
            ci_high: Some(0.4),
            decision: Decision::Different,
        };
        assert_eq!(versus_words(&v), "4.00× lower [2.50×, 5.00×], different");
        let up = TailVersus {
            ratio: 1.5,
            ci_low: 1.2,
            ci_high: None,
            decision: Decision::Different,
            ..v
        };
        assert_eq!(versus_words(&up), "1.50× higher [1.20×, ∞), different");
        assert_eq!(fmt_latency(9100.0), "9.10 ms");
        assert_eq!(fmt_latency(850.0), "850 µs");
    }

    #[test]
    fn a_list_of_neighbour_rates_says_at_which_load_the_tail_parts() {
        use crate::analysis::tail::tests::trials_of;
        // Alone the two are alike; beside an 8 MiB/s neighbour wal-disk's tail is 4× lower.
        let cells: [(&str, &str, [f64; 4]); 4] = [
            (
                "pg@nb0",
                "internal",
                [10_000.0, 10_100.0, 9_900.0, 10_000.0],
            ),
            (
                "pg@nb0",
                "wal-disk",
                [10_050.0, 9_950.0, 10_000.0, 10_020.0],
            ),
            (
                "pg@nb8M",
                "internal",
                [40_000.0, 41_000.0, 42_000.0, 41_000.0],
            ),
            (
                "pg@nb8M",
                "wal-disk",
                [10_000.0, 10_200.0, 10_100.0, 10_300.0],
            ),
        ];
        let mut recs: Vec<_> = cells
            .iter()
            .flat_map(|(w, c, p99s)| trials_of(w, c, p99s))
            .collect();
        for (i, r) in recs.iter_mut().enumerate() {
            r.trial = i;
        }
        let opts = crate::analysis::ReportOptions {
            baseline: Some("internal".into()),
            suspect_below_secs: 0.0,
            ..Default::default()
        };
        let a = crate::analysis::analyse(&recs, &opts);
        let lines = load_lines(&a);
        assert_eq!(lines.len(), 1, "{lines:?}");
        let l = &lines[0];
        assert!(
            l.starts_with("pg: wal-disk against internal, commit p99 by neighbour rate: 0/s → "),
            "{l}"
        );
        let (alone, loaded) = l.split_once("; 8M/s → ").unwrap();
        assert!(alone.ends_with("equivalent"), "{l}");
        assert!(
            loaded.contains("lower") && loaded.ends_with("different"),
            "{l}"
        );
        assert!(load_block(&a, Style::Plain).contains("Under load"));
    }
}
