//! The answer at a glance, what a person reads first (the end of `jbench run`, the top
//! of every report): per workload, the takeaway sentence ([`crate::analysis::takeaway`])
//! and one short line per configuration: its rate, its ratio to the baseline with the
//! interval and the decision word, its power cuts and the recovery to plan on. A
//! journal on a device a power cut empties leads with that. The long lines with every
//! figure's basis are in [`super::answer`].

use std::fmt::Write as _;

use serde::Serialize;

use super::crash::verdict_counts;
use super::grid::{md_escape, Style};
use super::summary::fmt_rate;
use super::words::{fmt_band, fmt_ratio, fmt_ratio_ci, fmt_sig};
use crate::analysis::answer::{ConfigAnswer, WorkloadAnswer};
use crate::analysis::takeaway::{Advice, Takeaway};
use crate::analysis::Analysis;
use crate::emu::PowerCut;
use crate::results::crash::Verdict;

/// One workload at a glance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Glance {
    /// "fsync-small-files: file creates/s on create_fsync, fastest first, against same-disk"
    pub head: String,
    /// What to do, in one sentence or two.
    pub takeaway: String,
    /// One line per configuration, the name padded to the widest.
    pub lines: Vec<String>,
    /// Per line, the badges that forbid acting on its speed ("suspect", "path-bound").
    pub marks: Vec<Vec<&'static str>>,
    /// Per line, whether a power cut empties the configuration's journal.
    pub emptied: Vec<bool>,
    /// Per-operation tail latency: what was timed, then one line per configuration
    /// ("wal-disk: commit p99 9.10 ms vs internal 41.0 ms, 4.50× lower [..], different");
    /// empty when the workload's trials carry no per-operation latency.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tail: Vec<String>,
    /// Who judged the power cuts, when the user-space path judged any: "power cuts
    /// judged in user space, the kernel auditing (failures and recovery times are the
    /// kernel's): internal 355 of 400 (39 audited), ..., all agreeing".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judges: Option<String>,
}

/// Every workload of the answer at a glance; empty without crash states.
pub fn glances(a: &Analysis) -> Vec<Glance> {
    crate::analysis::answer::of(a)
        .iter()
        .map(|w| glance(w, a))
        .collect()
}

pub fn glance(w: &WorkloadAnswer, a: &Analysis) -> Glance {
    let width = w
        .configs
        .iter()
        .map(|c| c.config.chars().count())
        .max()
        .unwrap_or(0);
    Glance {
        head: head(w),
        takeaway: takeaway_words(w, &crate::analysis::takeaway::of(w), a),
        lines: w
            .configs
            .iter()
            .map(|c| {
                let room = LINE_CHARS.saturating_sub(width + 2);
                format!("{:<width$}  {}", c.config, line_figures(w, c, room))
            })
            .collect(),
        marks: w.configs.iter().map(|c| badges(w, c, a)).collect(),
        emptied: w
            .configs
            .iter()
            .map(|c| c.journal_power_cut == PowerCut::Empties)
            .collect(),
        tail: a
            .workloads
            .iter()
            .find(|x| x.name == w.workload)
            .and_then(|x| x.tail.as_ref())
            .filter(|t| t.configs.len() > 1)
            .map(|t| {
                let mut v = vec![super::tail::tail_head(t)];
                v.extend(super::tail::tail_lines(t));
                v
            })
            .unwrap_or_default(),
        judges: judges_words(w),
    }
}

/// Which power-cut figures the user-space path gave: its ok verdicts, with the
/// kernel's audit of a sample; every failure and recovery time is the kernel's.
fn judges_words(w: &WorkloadAnswer) -> Option<String> {
    let per: Vec<(String, &crate::analysis::crash::JudgedCounts, usize)> = w
        .configs
        .iter()
        .filter_map(|c| {
            let j = c.judged.as_ref()?;
            // A power cut empties a RAM disk's journal: its states are the crashes that
            // keep RAM, and its power cut (the lost journal) is the kernel's alone.
            let name = if c.journal_power_cut == PowerCut::Empties {
                format!("{} (crashes that keep RAM)", c.config)
            } else {
                c.config.clone()
            };
            Some((name, j, c.crash_states))
        })
        .collect();
    if per.is_empty() {
        return None;
    }
    let disagreed: usize = per.iter().map(|(_, j, _)| j.disagreed).sum();
    let each: Vec<String> = per
        .iter()
        .map(|(c, j, n)| {
            format!(
                "{c} {} of {n} ({} audited)",
                j.user_space + j.audited + j.disagreed,
                j.audited + j.disagreed
            )
        })
        .collect();
    Some(format!(
        "power cuts judged in user space, the kernel auditing a sample (every failure and recovery time is the kernel's): {}, {}",
        each.join(", "),
        match disagreed {
            0 => "all agreeing".to_string(),
            d => format!("{d} DISAGREEING: the kernel's verdicts stand"),
        }
    ))
}

/// The glance as text: the title, then per workload its head, the takeaway (after an
/// arrow, wrapped) and the lines.
pub(crate) fn glance_block(a: &Analysis, style: Style) -> String {
    let gs = glances(a);
    if gs.is_empty() {
        return String::new();
    }
    let title = super::answer::answer_title(a);
    let mut out = match style {
        Style::Plain => format!("{title}\n\n"),
        Style::Markdown => format!("## {title}\n\n"),
    };
    for g in &gs {
        match style {
            Style::Plain => {
                let _ = writeln!(out, "{}", g.head);
                for (i, l) in wrap(&g.takeaway, 100).iter().enumerate() {
                    let _ = writeln!(out, "{} {l}", if i == 0 { "  →" } else { "   " });
                }
                for (l, marks) in g.lines.iter().zip(&g.marks) {
                    let _ = writeln!(out, "  {l}{}", marks_suffix(marks));
                }
                for (i, l) in g.tail.iter().enumerate() {
                    let _ = writeln!(out, "{}{l}", if i == 0 { "  " } else { "    " });
                }
                if let Some(j) = &g.judges {
                    for (i, l) in wrap(j, 100).iter().enumerate() {
                        let _ = writeln!(out, "{}{l}", if i == 0 { "  " } else { "    " });
                    }
                }
            }
            Style::Markdown => {
                let _ = writeln!(out, "**{}**\n", md_escape(&g.head));
                let _ = writeln!(out, "→ {}\n", md_escape(&g.takeaway));
                for (l, marks) in g.lines.iter().zip(&g.marks) {
                    let _ = writeln!(out, "- `{}`{}", l.replace('`', "'"), marks_suffix(marks));
                }
                if let Some((head, lines)) = g.tail.split_first() {
                    let _ = writeln!(out, "\n{}\n", md_escape(head));
                    for l in lines {
                        let _ = writeln!(out, "- {}", md_escape(l));
                    }
                }
                if let Some(j) = &g.judges {
                    let _ = writeln!(out, "\n{}", md_escape(j));
                }
            }
        }
        out.push('\n');
    }
    out.push_str(&super::tail::load_block(a, style));
    out
}

fn marks_suffix(marks: &[&str]) -> String {
    marks.iter().map(|m| format!(" [{m}]")).collect()
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("one line");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

fn head(w: &WorkloadAnswer) -> String {
    match (&w.main_phase, &w.rate_unit, &w.baseline) {
        (Some(p), Some(u), Some(b)) => {
            format!(
                "{}: {u} on {p}, fastest first, ratios against {b}:",
                w.workload
            )
        }
        (Some(p), Some(u), None) => format!("{}: {u} on {p}, fastest first:", w.workload),
        _ => format!("{}: power cuts and recovery (no timed trial):", w.workload),
    }
}

fn badges(w: &WorkloadAnswer, c: &ConfigAnswer, a: &Analysis) -> Vec<&'static str> {
    match &w.main_phase {
        Some(p) if c.rate_mean.is_some() => {
            super::summary::badges(c.suspect, c.path_bound.as_ref(), p, a)
        }
        _ => Vec::new(),
    }
}

/// The most characters of a short line, its marks aside.
const LINE_CHARS: usize = 120;

/// "55.2  1.80× [1.78×, 1.82×] different · lost nothing in 40/40 power cuts · recovery
/// ≤ 0.23 s" in at most `room` characters where it can: the failed verdicts' breakdown,
/// then the application's recovery, then the recovery go first. A journal a power cut
/// empties leads with that; a control shows no recovery (it is not a choice).
fn line_figures(w: &WorkloadAnswer, c: &ConfigAnswer, room: usize) -> String {
    let speed = speed_words(w, c);
    if c.journal_power_cut != PowerCut::Empties {
        let control = c.negative_control || c.torn_page_control;
        let (full, short) = (safety_words(c, true), safety_words(c, false));
        let recovery = |app: bool| recovery_words(c, app).filter(|_| !control);
        let candidates = [
            (full, recovery(true)),
            (short.clone(), recovery(true)),
            (short.clone(), recovery(false)),
            (short, None),
        ];
        let lines: Vec<String> = candidates
            .into_iter()
            .map(|(safety, recovery)| {
                [speed.clone(), Some(safety), recovery]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" · ")
            })
            .collect();
        return lines
            .iter()
            .find(|l| l.chars().count() <= room)
            .unwrap_or(&lines[lines.len() - 1])
            .clone();
    }
    // After that power cut the mount fails: no recovery time to plan on, and the
    // speed's interval is in the detail (this is not a configuration to pick).
    let rate = c
        .rate_mean
        .zip(w.rate_unit.as_ref())
        .map(|(mean, _)| match &c.vs_baseline {
            Some(v) => format!("{} ({}×)", fmt_rate(mean), short_ratio(v.ratio)),
            None => fmt_rate(mean),
        });
    [Some(safety_words(c, false)), rate]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A ratio in a short line: two decimals up to 10×, whole numbers above ("990×").
fn short_ratio(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}")
    } else {
        fmt_ratio(r)
    }
}

fn speed_words(w: &WorkloadAnswer, c: &ConfigAnswer) -> Option<String> {
    w.rate_unit.as_ref()?;
    let Some(mean) = c.rate_mean else {
        return Some("not timed".into());
    };
    let versus = match (&c.vs_baseline, &w.baseline) {
        (Some(v), _) => {
            let ci = v
                .ci_low
                .map(|lo| match v.ci_high {
                    Some(hi) => format!(" [{}×, {}×]", short_ratio(lo), short_ratio(hi)),
                    None => format!(" [{}×, ∞)", short_ratio(lo)),
                })
                .unwrap_or_default();
            let word = v.decision.map_or("too few trials", |d| d.as_str());
            format!("  {}×{ci} {word}", short_ratio(v.ratio))
        }
        (None, Some(b)) if *b == c.config => "  (baseline)".into(),
        (None, _) => String::new(),
    };
    Some(format!("{}{versus}", fmt_rate(mean)))
}

/// The power cuts in a few words. A journal a power cut empties says only that (the
/// crash that keeps RAM is in the detail and the figure): the line must not offer a
/// reassuring count beside it.
fn safety_words(c: &ConfigAnswer, breakdown: bool) -> String {
    let n = c.crash_states;
    if c.journal_power_cut == PowerCut::Empties {
        return match &c.lost_journal {
            Some(l) if c.checks_promises => format!(
                "power cut empties journal: mount fails {}/{}, ≤{} fsync'ed files lost",
                l.mount_failed,
                l.states,
                c.lost_journal_fsynced_max().unwrap_or(0)
            ),
            Some(l) => format!(
                "power cut empties journal: mount fails {}/{}, ≤{} fsck repairs",
                l.mount_failed, l.states, l.fsck_repairs.max
            ),
            None => "power cut empties journal (not tried: lose_journal = false)".into(),
        };
    }
    if n == 0 {
        return "power cuts not tried".into();
    }
    let o = outcome(c, breakdown);
    match c.journal_power_cut {
        PowerCut::BatteryBacked => format!("{o} (journal on battery-backed RAM)"),
        _ => o,
    }
}

/// "lost nothing in 40/40 power cuts", "3 of 40 power cuts FAILED" (with `breakdown`,
/// by verdict), a control's outcome.
fn outcome(c: &ConfigAnswer, breakdown: bool) -> String {
    let n = c.crash_states;
    let failed = c.crash_failures;
    let by_verdict = || {
        let v = verdict_counts(&c.verdicts, Verdict::is_failure);
        if v.is_empty() || !breakdown {
            String::new()
        } else {
            format!(" ({v})")
        }
    };
    if c.torn_page_control {
        return match c.torn_page_failures {
            0 => format!("torn-page control NOT caught in {n} power cuts"),
            t => format!("torn-page control, caught: {t} of {n} corrupt at a torn page"),
        };
    }
    if c.negative_control {
        return match c.verdicts.lost_fsynced {
            0 => format!("negative control NOT caught in {n} power cuts"),
            l => format!("control, caught: {l} of {n} lost promised data"),
        };
    }
    match (failed, c.checks_promises) {
        (0, true) => format!("lost nothing in {n}/{n} power cuts"),
        (0, false) => format!("{n}/{n} power cuts consistent"),
        (f, _) => format!("{f} of {n} power cuts FAILED{}", by_verdict()),
    }
}

/// "recovery ≤ 0.23 s" (the figure to plan on), with `app` "+ app ≤ 1.8 s" (the
/// application's own worst timed), or the 95th percentile where no model was fitted.
fn recovery_words(c: &ConfigAnswer, app: bool) -> Option<String> {
    let fs = match (c.recovery_plan_s, c.replay_p95_s) {
        (Some(plan), _) => format!("recovery ≤ {} s", fmt_sig(plan)),
        (None, Some(p95)) => format!("recovery p95 {} s", fmt_sig(p95)),
        (None, None) => return None,
    };
    let app_plan = c
        .app_recovery_model
        .as_ref()
        .map(|m| m.plan_s())
        .or(c.app_recovery_max_s);
    Some(match app_plan.filter(|_| app) {
        Some(app) => format!("{fs} + app ≤ {} s", fmt_sig(app)),
        None => fs,
    })
}

/// The sentence that says what to do, by the takeaway's rule; every figure in it is
/// one the lines beside it show.
pub fn takeaway_words(w: &WorkloadAnswer, t: &Takeaway, a: &Analysis) -> String {
    let find = |name: &str| w.configs.iter().find(|c| c.config == name);
    let ratio = |c: &ConfigAnswer| {
        c.vs_baseline.as_ref().map(|v| {
            let ci = v
                .ci_low
                .map(|lo| format!(" {}", fmt_ratio_ci(lo, v.ci_high)))
                .unwrap_or_default();
            format!("{}×{ci}", fmt_ratio(v.ratio))
        })
    };
    let band = fmt_band(a.noise_band);
    let mut out = match &t.advice {
        Advice::Use { config, baseline } => {
            let c = find(config).expect("the pick is a configuration");
            let mut s = format!(
                "Use {config}: {} as fast as {baseline}",
                ratio(c).unwrap_or_default()
            );
            match c.crash_states {
                0 => s.push_str("; power cuts not tried"),
                n => {
                    let _ = write!(s, ", {} in {n} power cuts", safe_words(c));
                }
            }
            if let Some(plan) = c.recovery_plan_s {
                let _ = write!(s, ", recovery within {} s", fmt_sig(plan));
            }
            s.push('.');
            s
        }
        Advice::Keep { config, equivalent } if equivalent.is_empty() => {
            format!("Keep {config}: no safe configuration is faster.")
        }
        Advice::Keep { config, equivalent } => {
            let each: Vec<String> = equivalent
                .iter()
                .map(|o| format!("{o} ({})", find(o).and_then(ratio).unwrap_or_default()))
                .collect();
            format!(
                "Keep {config}: no safe configuration is faster; {} equivalent to it within the {band} band.",
                each.join(", ")
            )
        }
        Advice::Undecided { config, baseline } => format!(
            "Not decided yet: {config} runs {} as fast as {baseline}, an interval that reaches across the {band} band; run more repetitions before moving the journal.",
            find(config).and_then(ratio).unwrap_or_default()
        ),
        Advice::Marked { config, baseline } => {
            let marked: Vec<String> = [config, baseline]
                .into_iter()
                .filter_map(|n| find(n))
                .filter_map(|c| {
                    let m = badges(w, c, a);
                    (!m.is_empty()).then(|| format!("{} is {}", c.config, m.join(" and ")))
                })
                .collect();
            format!(
                "Do not act on these speeds yet: {} (the detail says why); measure again before moving the journal.",
                marked.join(", ")
            )
        }
        Advice::NoneSafe => {
            "No configuration to recommend: each one timed lost data at a power cut, is a control, or keeps its journal where a power cut empties it.".to_string()
        }
        Advice::SafetyOnly => {
            let safe: Vec<&str> = w
                .configs
                .iter()
                .filter(|c| c.safe() && c.crash_tested())
                .map(|c| c.config.as_str())
                .collect();
            match safe.len() {
                0 => "No timed trial to rank, and no configuration came through its power cuts.".to_string(),
                _ => format!(
                    "No timed trial to rank; safe through their power cuts: {}.",
                    safe.join(", ")
                ),
            }
        }
    };
    for name in &t.set_aside {
        if let Some(c) = find(name) {
            let _ = write!(out, " Not {name}: {}.", set_aside_why(c));
        }
    }
    out
}

fn safe_words(c: &ConfigAnswer) -> &'static str {
    if c.checks_promises {
        "nothing lost"
    } else {
        "consistent"
    }
}

/// Why a faster configuration is not the pick.
fn set_aside_why(c: &ConfigAnswer) -> String {
    if c.journal_power_cut == PowerCut::Empties {
        return match &c.lost_journal {
            Some(l) => format!(
                "a power cut empties its journal, and then the mount fails in {} of {}",
                l.mount_failed, l.states
            ),
            None => "a power cut empties its journal".to_string(),
        };
    }
    if c.negative_control || c.torn_page_control {
        return "a control, built to lose data".to_string();
    }
    format!(
        "{} of {} power cuts failed",
        c.crash_failures, c.crash_states
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::answer::tests_support::config;
    use crate::analysis::crash::{JudgedCounts, LostJournalStats, Tally};

    #[test]
    fn the_judges_line_calls_a_ram_journals_states_the_crashes_that_keep_ram() {
        let judged = JudgedCounts {
            user_space: 350,
            audited: 44,
            disagreed: 0,
            fell_back: 0,
        };
        let mut ram = config("ramdisk", 200.0, 400, 0);
        ram.journal_power_cut = PowerCut::Empties;
        ram.judged = Some(judged.clone());
        let mut disk = config("second-disk", 90.0, 400, 0);
        disk.judged = Some(judged);
        let w = WorkloadAnswer {
            workload: "w".into(),
            main_phase: Some("create".into()),
            rate_unit: Some("files/s".into()),
            baseline: Some("second-disk".into()),
            configs: vec![ram, disk],
        };
        let line = judges_words(&w).unwrap();
        assert!(
            line.contains("ramdisk (crashes that keep RAM) 394 of 400 (44 audited), second-disk 394 of 400 (44 audited), all agreeing"),
            "{line}"
        );
    }
    use crate::analysis::decision::Decision;
    use crate::analysis::versus::VersusBaseline;

    fn vs(ratio: f64, decision: Decision) -> Option<VersusBaseline> {
        Some(VersusBaseline {
            baseline: "same-disk".into(),
            ratio,
            ci_low: Some(ratio * 0.98),
            ci_high: Some(ratio * 1.02),
            decision: Some(decision),
        })
    }

    /// `quick`'s four configurations: a RAM-disk journal, the fastest, whose power cut
    /// empties it; a second disk decided faster than the baseline with `second`.
    fn quick_like(second: Decision) -> WorkloadAnswer {
        let mut ram = config("ramdisk", 118.0, 40, 0);
        ram.journal_power_cut = PowerCut::Empties;
        ram.vs_baseline = vs(5.32, Decision::Different);
        ram.lost_journal = Some(LostJournalStats {
            states: 40,
            mount_failed: 40,
            recovered: 40,
            fsynced_missing: Tally {
                max: 200,
                ..Tally::default()
            },
            ..LostJournalStats::default()
        });
        let mut disk2 = config("second-disk", 55.6, 40, 0);
        disk2.vs_baseline = vs(2.5, second);
        disk2.recovery_plan_s = Some(0.194);
        let mut internal = config("internal", 31.5, 40, 0);
        internal.vs_baseline = vs(1.41, Decision::Different);
        WorkloadAnswer {
            workload: "fsync-small-files".into(),
            main_phase: Some("create_fsync".into()),
            rate_unit: Some("file creates/s".into()),
            baseline: Some("same-disk".into()),
            configs: vec![ram, disk2, internal, config("same-disk", 22.2, 40, 0)],
        }
    }

    #[test]
    fn every_line_is_short_and_the_ram_disk_leads_with_its_power_cut() {
        let a = crate::analysis::analyse(&[], &crate::analysis::ReportOptions::default());
        let g = glance(&quick_like(Decision::Different), &a);
        for l in &g.lines {
            assert!(
                l.chars().count() <= 120,
                "{} characters: {l}",
                l.chars().count()
            );
        }
        assert!(
            g.lines[0].starts_with("ramdisk      power cut empties journal: mount fails 40/40, ≤200 fsync'ed files lost"),
            "{}",
            g.lines[0]
        );
        assert!(!g.lines[0].contains("lost nothing"), "{}", g.lines[0]);
        assert_eq!(g.emptied, vec![true, false, false, false]);
        assert!(g.lines[1].contains("2.50× [2.45×, 2.55×] different · lost nothing in 40/40 power cuts · recovery ≤ 0.194 s"), "{}", g.lines[1]);
        assert!(g.lines[3].contains("(baseline)"), "{}", g.lines[3]);
        assert_eq!(
            g.takeaway,
            "Use second-disk: 2.50× [2.45×, 2.55×] as fast as same-disk, nothing lost in 40 power cuts, recovery within 0.194 s. Not ramdisk: a power cut empties its journal, and then the mount fails in 40 of 40."
        );
    }

    #[test]
    fn the_sentence_puts_the_journal_nowhere_on_an_undecided_or_marked_comparison() {
        let a = crate::analysis::analyse(&[], &crate::analysis::ReportOptions::default());
        let undecided = glance(&quick_like(Decision::Undecided), &a).takeaway;
        assert!(
            undecided.starts_with("Not decided yet: second-disk runs 2.50×"),
            "{undecided}"
        );
        assert!(!undecided.contains("Use "), "{undecided}");
        let equivalent = glance(&quick_like(Decision::Equivalent), &a).takeaway;
        assert!(
            equivalent.starts_with("Keep same-disk: no safe configuration is faster; second-disk (2.50× [2.45×, 2.55×]) equivalent to it within the ±2% band."),
            "{equivalent}"
        );
        let mut w = quick_like(Decision::Different);
        w.configs[1].suspect = true;
        let marked = glance(&w, &a).takeaway;
        assert!(
            marked.starts_with("Do not act on these speeds yet: second-disk is suspect"),
            "{marked}"
        );
        assert!(!marked.contains("Use "), "{marked}");
    }
}
