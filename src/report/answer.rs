//! The words of the answer that opens a report with crash states
//! ([`crate::analysis::answer`]): per workload, one line per configuration with both
//! halves ("ramdisk: 118 file creates/s, 2.16× as fast as second-disk [2.06, 2.27]
//! (...); 40/40 power cuts lost nothing; recovery 0.07 s (p95 0.11); if the journal's
//! RAM disk is lost: ..."), then a table with a row per configuration. The text,
//! Markdown and HTML reports take their words from here.

use std::fmt::Write as _;

use serde::Serialize;

use super::grid::{md_escape, Grid, Style, Table};
use super::summary::{fmt_rate, fmt_ratio, ratio_words};
use super::words::fmt_sig;
use crate::analysis::answer::{ConfigAnswer, WorkloadAnswer};
use crate::analysis::app_recovery_model::AppRecoveryModel;
use crate::analysis::Analysis;
use crate::results::crash::Verdict;

/// One workload's answer, worded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerView {
    /// "fsync-small-files: speed on create_fsync (file creates/s), safety and recovery
    /// per configuration:"
    pub head: String,
    pub lines: Vec<String>,
    /// Per line, the badges HTML marks it with ("suspect", "path-bound"); the words
    /// are in the line itself.
    pub marks: Vec<Vec<&'static str>>,
    /// How much to trust the speed half (the summary's trust line), when ranked.
    pub trust: Option<String>,
    pub table: Table,
}

/// The answer per workload; empty without crash records.
pub fn answer_views(a: &Analysis) -> Vec<AnswerView> {
    crate::analysis::answer::of(a)
        .iter()
        .map(|w| AnswerView {
            head: head(w, a),
            lines: w.configs.iter().map(|c| answer_line(w, c, a)).collect(),
            marks: w
                .configs
                .iter()
                .map(|c| match &w.main_phase {
                    Some(p) => super::summary::badges(c.suspect, c.path_bound.as_ref(), p, a),
                    None => Vec::new(),
                })
                .collect(),
            trust: a
                .workloads
                .iter()
                .find(|x| x.name == w.workload)
                .filter(|x| x.summary.is_some())
                .and_then(|x| super::summary::summary_lines(x, a).pop()),
            table: answer_grid(w).into_table(),
        })
        .collect()
}

/// The answer block that opens the text and Markdown reports; empty without crash
/// records.
pub(crate) fn answer_block(a: &Analysis, style: Style) -> String {
    let answers = crate::analysis::answer::of(a);
    if answers.is_empty() {
        return String::new();
    }
    // The glance above has the title; this is every figure's basis.
    let title = "The answer in detail";
    let mut out = match style {
        Style::Plain => format!("{title}\n\n"),
        Style::Markdown => format!("## {title}\n\n"),
    };
    for (w, v) in answers.iter().zip(answer_views(a)) {
        let _ = match style {
            Style::Plain => writeln!(out, "{}", v.head),
            Style::Markdown => writeln!(out, "{}\n", md_escape(&v.head)),
        };
        for l in v.lines.iter().chain(&v.trust) {
            let _ = match style {
                Style::Plain => writeln!(out, "  {l}"),
                Style::Markdown => writeln!(out, "- {}", md_escape(l)),
            };
        }
        out.push('\n');
        out.push_str(&answer_grid(w).render(style));
        out.push('\n');
    }
    if let Some(note) = super::summary::levels_note(a) {
        let _ = match style {
            Style::Plain => writeln!(out, "{note}\n"),
            Style::Markdown => writeln!(out, "{}\n", md_escape(&note)),
        };
    }
    out
}

fn head(w: &WorkloadAnswer, a: &Analysis) -> String {
    match (&w.main_phase, &w.rate_unit) {
        (Some(p), Some(u)) => format!(
            "{}: speed on {p} ({u}, fastest first), power cuts, recovery:",
            w.workload
        ),
        // No trial of the workload outside the crash recordings: their write-logged
        // times are kept out of every speed figure (`jbench crash`).
        _ if recordings_only(w, a) => format!(
            "{}: power cuts and recovery (not timed: write-logged crash recordings only):",
            w.workload
        ),
        _ => format!(
            "{}: power cuts and recovery (no timed trial to rank):",
            w.workload
        ),
    }
}

/// The workload has crash states and no trial but its crash recordings (the analysis
/// keeps those out of its workloads), as in a results directory of `jbench crash`.
fn recordings_only(w: &WorkloadAnswer, a: &Analysis) -> bool {
    !a.workloads.iter().any(|x| x.name == w.workload)
}

/// "Answer: speed, safety and recovery", or without "speed" when no workload has a
/// timed trial to rank (a results directory of `jbench crash`).
pub fn answer_title(a: &Analysis) -> &'static str {
    if crate::analysis::answer::of(a)
        .iter()
        .any(|w| w.rate_unit.is_some())
    {
        "Answer: speed, safety and recovery"
    } else {
        "Answer: safety and recovery (no timed trial to rank for speed)"
    }
}

/// One configuration's line: speed; safety; recovery; the lost journal where it applies.
pub fn answer_line(w: &WorkloadAnswer, c: &ConfigAnswer, a: &Analysis) -> String {
    let mut parts = Vec::new();
    if let (Some(mean), Some(unit)) = (c.rate_mean, &w.rate_unit) {
        let mut speed = format!("{} {unit}", fmt_rate(mean));
        match &c.versus {
            Some(v) => {
                speed.push_str(", ");
                speed.push_str(&ratio_words(v, a));
            }
            None if w.configs.iter().filter(|x| x.rate_mean.is_some()).count() > 1 => {
                speed.push_str(" (slowest)")
            }
            None => {}
        }
        if let Some(p) = &w.main_phase {
            for (_, words) in super::summary::marks(c.suspect, c.path_bound.as_ref(), p, a) {
                let _ = write!(speed, " [{words}]");
            }
        }
        parts.push(speed);
    } else if w.rate_unit.is_some() {
        // Without a ranking the head says why; the line leads with safety.
        parts.push("not timed".to_string());
    }
    if c.journal_power_cut == crate::emu::PowerCut::Empties {
        // What a power cut does to this journal comes first; the states the lab built
        // keep the RAM disk's contents, which only a crash that keeps the power on does.
        let cut = lost_journal_words(c).unwrap_or_else(|| {
            "a power cut empties the journal's RAM disk (not tried: lose_journal = false)"
                .to_string()
        });
        let mut all = vec![cut];
        all.extend(parts);
        if c.crash_states > 0 {
            all.push(format!(
                "a crash that keeps RAM (kernel panic, reset): {}",
                safety_words(c).replace("power cuts", "such crashes")
            ));
            all.push(recovery_words(c));
        }
        return format!("{}: {}", c.config, all.join("; "));
    }
    parts.push(safety_words(c));
    if c.crash_states > 0 {
        parts.push(recovery_words(c));
    }
    format!("{}: {}", c.config, parts.join("; "))
}

/// "40/40 power cuts lost nothing", "3 of 40 power cuts failed (1 unmountable, 2
/// fsck-dirty)", or what a negative control showed: "a negative control, caught: 92 of
/// 200 power cuts failed (13 unmountable, 47 lost-fsynced, 29 fsck-dirty, 3
/// no-verdict), 47 of them losing fsync'ed data, as it must". The count of failures is
/// every failed state, the answer table's `failed` (and the crash section's verdict
/// columns, summed); the verdicts follow worst first ([`Verdict::BY_SEVERITY`]). Where
/// the user-space path judged states, who judged them follows: every figure comes from
/// the kernel's verdicts or the path's where the kernel's audit agreed.
pub fn safety_words(c: &ConfigAnswer) -> String {
    let words = safety_outcome(c);
    match c.judged.as_ref().and_then(|j| j.brief(c.crash_states)) {
        Some(j) => format!("{words}; {j}"),
        None => words,
    }
}

fn safety_outcome(c: &ConfigAnswer) -> String {
    let n = c.crash_states;
    if n == 0 {
        return "no crash states".to_string();
    }
    let outcome = match (c.crash_failures, c.checks_promises) {
        (0, true) if !c.negative_control => match &c.covered {
            Some(scope) => format!("{n}/{n} power cuts lost nothing ({scope})"),
            None => format!("{n}/{n} power cuts lost nothing"),
        },
        (0, false) if !c.negative_control => format!(
            "{n}/{n} power cuts left a consistent file system (the workload promises nothing more to check)"
        ),
        (f, _) => {
            let by_verdict = super::crash::verdict_counts(&c.verdicts, Verdict::is_failure);
            if by_verdict.is_empty() {
                format!("{f} of {n} power cuts failed")
            } else {
                format!("{f} of {n} power cuts failed ({by_verdict})")
            }
        }
    };
    // What an application's check listed as lost: records, not files.
    let outcome = match c.records_lost_max {
        Some(r) if r > 0 => format!(
            "{outcome}, up to {r} of {} promised record(s) lost in one state",
            c.records_promised_max
        ),
        _ => outcome,
    };
    // A failure at a torn page names the page, control or not.
    let outcome = match c.torn_pages.first() {
        Some(page) if c.torn_page_failures > 0 => format!(
            "{outcome}; {} corrupt at a torn write of file data, first {page}",
            c.torn_page_failures
        ),
        _ => outcome,
    };
    if !c.negative_control {
        return outcome;
    }
    if c.torn_page_control {
        return if c.torn_page_failures > 0 {
            format!("a torn-page control, caught: {outcome}, as it must")
        } else {
            format!(
                "a torn-page control NOT caught: {outcome}, none corrupt at a torn write of file data"
            )
        };
    }
    // A negative control is caught only by the failure it exists for (a lying disk or
    // barrier=0 loses what fsync promised), as the crash section's note and warning
    // say; its other failures are counted with the rest, not taken for that proof.
    match (c.verdicts.lost_fsynced, c.checks_promises) {
        (0, true) => {
            format!("a negative control NOT caught: {outcome}, none losing fsync'ed data")
        }
        (0, false) => format!(
            "a negative control NOT caught: {outcome}, and the workload promises nothing it could be seen to lose"
        ),
        (lost, _) => format!(
            "a negative control, caught: {outcome}, {lost} of them losing {}, as it must",
            if c.records_promised_max > 0 {
                "promised records"
            } else {
                "fsync'ed data"
            }
        ),
    }
}

/// "recovery up to 2.31 s (10 timed, worst 1.88 s at 520 live journal blocks; 3.10 s
/// per 1000 blocks [2.20, 4.00], R² 0.91; 1.90 s [1.49, 2.31] predicted at the fullest
/// journal, 609 blocks), full fsck 0.05 s": the figure to plan on first, then what it
/// comes from. Without a live-journal count (XFS) the timed states' median and p95.
pub fn recovery_words(c: &ConfigAnswer) -> String {
    let mut out = match (&c.recovery_model, c.recovery_plan_s) {
        (Some(m), Some(plan)) => {
            let mut w = format!(
                "recovery up to {} s ({} timed, worst {} s at {} live journal blocks",
                fmt_sig(plan),
                m.points,
                fmt_sig(m.worst_s),
                m.worst_blocks
            );
            match (m.per_kblock_s, m.per_kblock_low_s, m.per_kblock_high_s) {
                (Some(k), Some(lo), Some(hi)) => {
                    let _ = write!(
                        w,
                        "; {} s per 1000 blocks [{}, {}]",
                        fmt_sig(k),
                        fmt_sig(lo),
                        fmt_sig(hi)
                    );
                    if let Some(r2) = m.r2 {
                        let _ = write!(w, ", R² {r2:.2}");
                    }
                }
                _ => w.push_str("; too few or too alike to fit a cost per block"),
            }
            if let (Some(at), Some(lo), Some(hi)) =
                (m.at_fullest_s, m.at_fullest_low_s, m.at_fullest_high_s)
            {
                let _ = write!(
                    w,
                    "; {} s [{}, {}] predicted at the fullest journal, {} blocks",
                    fmt_sig(at),
                    fmt_sig(lo),
                    fmt_sig(hi),
                    m.fullest_blocks
                );
            }
            w.push(')');
            w
        }
        _ => {
            let Some(median) = c.replay_median_s else {
                return "recovery not timed".to_string();
            };
            let mut w = format!("recovery median {} s", fmt_sig(median));
            if let Some(p95) = c.replay_p95_s {
                let _ = write!(w, " (p95 {}; {} timed)", fmt_sig(p95), c.recovery_timed);
            }
            w
        }
    };
    if let Some(f) = c.fsck_median_s {
        let _ = write!(out, ", full fsck {} s", fmt_sig(f));
    }
    if let Some(m) = &c.app_recovery_model {
        let _ = write!(out, "; then {}", app_model_words(m));
    } else if let (Some(m), Some(max)) = (c.app_recovery_median_s, c.app_recovery_max_s) {
        let _ = write!(
            out,
            "; then the application's own recovery {} s (worst {})",
            fmt_sig(m),
            fmt_sig(max)
        );
    }
    out
}

/// "the application's own recovery: plan on ≤ 14 s (0.52 s + 0.20 s per MiB of log
/// [0.18, 0.22], predicted 13.3 s [12.6, 14.0] at 64 MiB, its settings' most; worst
/// 3.1 s, state 812, 9.5 MiB replayed: redo 0.4 s; checkpoint 2.6 s)".
pub fn app_model_words(m: &AppRecoveryModel) -> String {
    let mib = |b: u64| fmt_sig(b as f64 / 1048576.0);
    let mut w = format!(
        "the application's own recovery: plan on ≤ {} s (",
        fmt_sig(m.plan_s())
    );
    match (
        m.intercept_s,
        m.per_mib_s,
        m.per_mib_low_s,
        m.per_mib_high_s,
    ) {
        (Some(i), Some(s), Some(lo), Some(hi)) => {
            let _ = write!(
                w,
                "{} s {} {} s per MiB of log replayed [{}, {}], {} states",
                fmt_sig(i),
                if s < 0.0 { "-" } else { "+" },
                fmt_sig(s.abs()),
                fmt_sig(lo),
                fmt_sig(hi),
                m.points
            );
            if let (Some(p), Some(lo), Some(hi)) =
                (m.predicted_s, m.predicted_low_s, m.predicted_high_s)
            {
                let at = if m.log_bytes_max.is_some() {
                    "its settings' most"
                } else {
                    "the largest replayed"
                };
                let _ = write!(
                    w,
                    "; predicted {} s [{}, {}] at {} MiB, {at}",
                    fmt_sig(p),
                    fmt_sig(lo),
                    fmt_sig(hi),
                    mib(m.predicted_at_bytes)
                );
            }
        }
        _ => {
            let _ = write!(w, "no line: {} state(s) with a log size", m.points);
        }
    }
    let _ = write!(
        w,
        "; slowest {} s, state {}, {} MiB replayed",
        fmt_sig(m.worst_s),
        m.worst_state,
        mib(m.worst_log_bytes)
    );
    if let Some(d) = &m.worst_detail {
        let _ = write!(w, ": {d}");
    }
    w.push(')');
    w
}

/// "if the journal's RAM disk is lost: the mount fails in 40/40, e2fsck brings back
/// 40/40, up to 0 fsync'ed files lost, up to 308 repairs".
pub fn lost_journal_words(c: &ConfigAnswer) -> Option<String> {
    let [failed, recovered, lost, repairs] = lost_journal_figures(c)?;
    Some(format!(
        "a power cut empties the journal's RAM disk: the mount fails in {failed}, fsck brings the file system back in {recovered}, up to {lost} fsync'ed file(s) lost, up to {repairs} fsck repairs"
    ))
}

/// The lost journal's figures as the line and the table show them: mounts failed and
/// file systems recovered (each `n/states`), the most fsync'ed files one state lost,
/// the most fsck repairs.
fn lost_journal_figures(c: &ConfigAnswer) -> Option<[String; 4]> {
    let l = c.lost_journal.as_ref()?;
    Some([
        format!("{}/{}", l.mount_failed, l.states),
        format!("{}/{}", l.recovered, l.states),
        c.lost_journal_fsynced_max().unwrap_or(0).to_string(),
        l.fsck_repairs.max.to_string(),
    ])
}

/// The answer's table: without a timed trial to rank (`jbench crash`), no speed
/// columns, only safety and recovery.
fn answer_grid(w: &WorkloadAnswer) -> Grid {
    let mut g = grid(w);
    if w.rate_unit.is_none() {
        // The mean rate and the ratio to the next slower: columns 1 and 2.
        g.headers.drain(1..3);
        for row in &mut g.rows {
            row.drain(1..3);
        }
        g.title = format!("Safety and recovery of {}", w.workload);
    }
    for (row, c) in g.rows.iter_mut().zip(&w.configs) {
        if c.negative_control {
            row[0] = format!("{} (negative control)", c.config);
        }
    }
    g
}

/// "3.10 [2.20, 4.00] (R² 0.91)", or "-" without a fitted line.
fn per_block_cell(c: &ConfigAnswer) -> String {
    let Some(m) = &c.recovery_model else {
        return "-".into();
    };
    match (m.per_kblock_s, m.per_kblock_low_s, m.per_kblock_high_s) {
        (Some(k), Some(lo), Some(hi)) => format!(
            "{} [{}, {}]{}",
            fmt_sig(k),
            fmt_sig(lo),
            fmt_sig(hi),
            m.r2.map(|r| format!(" (R² {r:.2})")).unwrap_or_default()
        ),
        _ => "-".into(),
    }
}

fn grid(w: &WorkloadAnswer) -> Grid {
    let unit = w.rate_unit.as_deref().unwrap_or("rate");
    let opt = |x: Option<f64>| x.map(fmt_sig).unwrap_or_else(|| "-".into());
    let rows = w
        .configs
        .iter()
        .map(|c| {
            let ratio = match &c.versus {
                Some(v) => match (v.ratio, v.ci_low) {
                    (Some(r), Some(lo)) => format!(
                        "{}× {}{} vs {}{}",
                        fmt_ratio(r),
                        super::words::fmt_ratio_ci(lo, v.ci_high),
                        v.ci_level
                            .map(|l| format!(" at {}%", super::words::fmt_ci_level(l)))
                            .unwrap_or_default(),
                        v.slower,
                        v.decision.map(|d| format!(": {d}")).unwrap_or_default()
                    ),
                    (Some(r), _) => format!("{}× vs {}", fmt_ratio(r), v.slower),
                    (None, _) => "-".into(),
                },
                None => "-".into(),
            };
            let lost = match lost_journal_figures(c) {
                Some([failed, recovered, lost, repairs]) => format!(
                    "mount fails {failed}; recovered {recovered}; ≤{lost} fsync'ed lost; ≤{repairs} repairs"
                ),
                None => "-".into(),
            };
            vec![
                c.config.clone(),
                c.rate_mean.map(fmt_rate).unwrap_or_else(|| "-".into()),
                ratio,
                c.crash_states.to_string(),
                c.crash_failures.to_string(),
                opt(c.recovery_plan_s.or(c.replay_p95_s)),
                opt(c.recovery_worst_s),
                per_block_cell(c),
                opt(c.fsck_median_s),
                lost,
            ]
        })
        .collect();
    Grid {
        title: format!("Speed, safety and recovery of {}", w.workload),
        headers: [
            "configuration",
            &format!("mean {unit}"),
            "vs next slower [interval, at its decision level]: different, equivalent or undecided",
            "crash states",
            "failed",
            "recovery up to (s)",
            "worst timed (s)",
            "recovery s per 1000 live blocks [95%]",
            "full fsck p50 (s)",
            "journal lost",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::crash::{LostJournalStats, Tally, VerdictCounts};

    fn config(states: usize, verdicts: VerdictCounts) -> ConfigAnswer {
        ConfigAnswer {
            config: "c".into(),
            rate_mean: Some(10.0),
            trials: 3,
            versus: None,
            vs_baseline: None,
            journal_power_cut: crate::emu::PowerCut::Keeps,
            suspect: false,
            path_bound: None,
            crash_states: states,
            crash_failures: verdicts.failures(),
            verdicts,
            negative_control: false,
            torn_page_control: false,
            torn_page_failures: 0,
            torn_pages: Vec::new(),
            covered: None,
            judged: None,
            checks_promises: true,
            recovery_timed: 3,
            replay_median_s: Some(0.25),
            replay_p95_s: Some(0.5),
            fsck_median_s: Some(1.5),
            recovery_worst_s: None,
            recovery_plan_s: None,
            recovery_model: None,
            lost_journal: None,
            app_recovery_median_s: None,
            app_recovery_max_s: None,
            app_recovery_model: None,
            records_promised_max: 0,
            records_lost_max: None,
        }
    }

    fn negative(states: usize, verdicts: VerdictCounts) -> ConfigAnswer {
        ConfigAnswer {
            negative_control: true,
            ..config(states, verdicts)
        }
    }

    #[test]
    fn safety_words_count_what_the_verdicts_count() {
        let ok = VerdictCounts {
            ok: 7,
            ..VerdictCounts::default()
        };
        assert_eq!(safety_words(&config(7, ok)), "7/7 power cuts lost nothing");
        let judged = crate::analysis::crash::JudgedCounts {
            user_space: 4,
            audited: 2,
            ..Default::default()
        };
        let with_judges = ConfigAnswer {
            judged: Some(judged),
            ..config(7, ok)
        };
        assert_eq!(
            safety_words(&with_judges),
            "7/7 power cuts lost nothing; 1 judged by the kernel, 6 in user space (2 of them \
             also by the kernel, all agreeing)"
        );
        let bad = VerdictCounts {
            ok: 4,
            lost_fsynced: 2,
            no_verdict: 1,
            ..VerdictCounts::default()
        };
        assert_eq!(
            safety_words(&config(7, bad)),
            "3 of 7 power cuts failed (2 lost-fsynced, 1 no-verdict)"
        );
        assert_eq!(
            safety_words(&negative(7, bad)),
            "a negative control, caught: 3 of 7 power cuts failed (2 lost-fsynced, 1 \
             no-verdict), 2 of them losing fsync'ed data, as it must"
        );
        let missed = VerdictCounts {
            lost_fsynced: 0,
            ..bad
        };
        assert_eq!(
            safety_words(&negative(7, missed)),
            "a negative control NOT caught: 1 of 7 power cuts failed (1 no-verdict), none \
             losing fsync'ed data"
        );
        assert_eq!(
            safety_words(&negative(7, ok)),
            "a negative control NOT caught: 0 of 7 power cuts failed, none losing fsync'ed data"
        );
        let mut consistent = config(7, ok);
        consistent.checks_promises = false;
        assert!(safety_words(&consistent).contains("consistent file system"));
        consistent.negative_control = true;
        assert!(
            safety_words(&consistent).contains("NOT caught")
                && safety_words(&consistent).contains("promises nothing"),
            "{}",
            safety_words(&consistent)
        );
        assert_eq!(safety_words(&config(0, ok)), "no crash states");
    }

    /// A torn-page control is caught by a failure at a torn page and named by it; lost
    /// commits alone do not catch it; "lost nothing" says what it is a claim about.
    #[test]
    fn a_torn_page_control_is_caught_only_at_a_torn_page_and_names_it() {
        let failed = VerdictCounts {
            ok: 185,
            check_failed: 15,
            ..VerdictCounts::default()
        };
        let page = "pgdata/base/5/16403 at byte 2621440 (4096 of 8192 bytes of the write kept)";
        let caught = ConfigAnswer {
            torn_page_control: true,
            torn_page_failures: 15,
            torn_pages: vec![page.to_string()],
            ..negative(200, failed)
        };
        assert_eq!(
            safety_words(&caught),
            format!(
                "a torn-page control, caught: 15 of 200 power cuts failed (15 check-failed); \
                 15 corrupt at a torn write of file data, first {page}, as it must"
            )
        );
        let lost = VerdictCounts {
            ok: 190,
            lost_fsynced: 10,
            ..VerdictCounts::default()
        };
        let missed = ConfigAnswer {
            torn_page_control: true,
            ..negative(200, lost)
        };
        assert!(
            safety_words(&missed).starts_with("a torn-page control NOT caught: 10 of 200")
                && safety_words(&missed).ends_with("none corrupt at a torn write of file data"),
            "{}",
            safety_words(&missed)
        );
        let ok = VerdictCounts {
            ok: 200,
            ..VerdictCounts::default()
        };
        let safe = ConfigAnswer {
            covered: Some("all 20 tears of file data; 180 of 723 other states sampled".into()),
            ..config(200, ok)
        };
        assert_eq!(
            safety_words(&safe),
            "200/200 power cuts lost nothing (all 20 tears of file data; 180 of 723 other \
             states sampled)"
        );
    }

    /// The failed states, counted per verdict, worst first: the crash-modes preset's
    /// barrier=0 control, whose answer once counted its 47 lost-fsynced states alone.
    fn every_verdict() -> VerdictCounts {
        VerdictCounts {
            ok: 108,
            unmountable: 13,
            fsck_dirty: 29,
            lost_fsynced: 47,
            check_failed: 0,
            no_verdict: 3,
        }
    }

    #[test]
    fn a_negative_control_counts_every_failed_state_worst_first() {
        let v = every_verdict();
        let c = negative(200, v);
        let words = safety_words(&c);
        assert_eq!(
            words,
            "a negative control, caught: 92 of 200 power cuts failed (13 unmountable, 47 \
             lost-fsynced, 29 fsck-dirty, 3 no-verdict), 47 of them losing fsync'ed data, \
             as it must"
        );
        // The count is the sum over the failure verdicts, the answer table's `failed`.
        let sum = v.unmountable + v.fsck_dirty + v.lost_fsynced + v.check_failed + v.no_verdict;
        assert_eq!(c.crash_failures, sum);
        assert!(words.contains(&format!("{sum} of 200 power cuts failed")));
        // Worst first: each verdict named after every worse one.
        let at = |v: &str| {
            words
                .find(&format!(" {v}"))
                .unwrap_or_else(|| panic!("{v} in {words}"))
        };
        assert!(at("unmountable") < at("lost-fsynced"));
        assert!(at("lost-fsynced") < at("fsck-dirty"));
        assert!(at("fsck-dirty") < at("no-verdict"));
        // The same count and order in an ordinary configuration's words.
        assert_eq!(
            safety_words(&config(200, v)),
            "92 of 200 power cuts failed (13 unmountable, 47 lost-fsynced, 29 fsck-dirty, 3 \
             no-verdict)"
        );
        let checked = VerdictCounts {
            check_failed: 2,
            ..v
        };
        assert!(safety_words(&config(202, checked))
            .contains("(13 unmountable, 47 lost-fsynced, 2 check-failed, 29 fsck-dirty"));
    }

    #[test]
    fn the_answer_line_and_table_count_the_same_failures() {
        let mut c = negative(200, every_verdict());
        c.config = "ext4-barrier0".into();
        c.rate_mean = None;
        c.trials = 0;
        let w = WorkloadAnswer {
            workload: "fsync-files".into(),
            main_phase: None,
            rate_unit: None,
            baseline: None,
            configs: vec![
                c.clone(),
                config(
                    200,
                    VerdictCounts {
                        ok: 200,
                        ..VerdictCounts::default()
                    },
                ),
            ],
        };
        let a = crate::analysis::analyse(&[], &crate::analysis::ReportOptions::default());
        let line = answer_line(&w, &c, &a);
        assert!(
            line.starts_with("ext4-barrier0: a negative control, caught: 92 of 200 power cuts failed (13 unmountable,"),
            "no speed half without a timed trial; safety first: {line}"
        );
        let table = answer_grid(&w).into_table();
        let failed = table.headers.iter().position(|h| h == "failed").unwrap();
        let states = table
            .headers
            .iter()
            .position(|h| h == "crash states")
            .unwrap();
        let row = &table.rows[0];
        assert_eq!(row[0], "ext4-barrier0 (negative control)");
        assert!(
            !table.headers.iter().any(|h| h.starts_with("mean")),
            "no speed column without a timed trial: {:?}",
            table.headers
        );
        assert!(
            line.contains(&format!(
                "{} of {} power cuts failed",
                row[failed], row[states]
            )),
            "{line} vs {row:?}"
        );
        assert_eq!(table.rows[1][failed], "0");
    }

    #[test]
    fn an_answer_line_carries_its_marks_where_it_stands() {
        let a = crate::analysis::analyse(&[], &crate::analysis::ReportOptions::default());
        let mut c = config(4, VerdictCounts::default());
        let w = |c: &ConfigAnswer| WorkloadAnswer {
            workload: "w".into(),
            main_phase: Some("create_fsync".into()),
            rate_unit: Some("files/s".into()),
            baseline: None,
            configs: vec![c.clone()],
        };
        let plain = answer_line(&w(&c), &c, &a);
        assert!(!plain.contains('['), "{plain}");
        c.suspect = true;
        let line = answer_line(&w(&c), &c, &a);
        assert!(
            line.starts_with("c: 10.0 files/s [suspect: create_fsync ran under the 60 s threshold"),
            "{line}"
        );
        c.path_bound = Some(crate::analysis::PathBound {
            disk: "journal".into(),
            model: "ram".into(),
            share: 0.97,
        });
        let line = answer_line(&w(&c), &c, &a);
        assert!(
            line.contains("[path-bound: 97% of the journal disk's (ram) service time"),
            "{line}"
        );
        let view =
            super::super::summary::badges(c.suspect, c.path_bound.as_ref(), "create_fsync", &a);
        assert_eq!(view, ["suspect", "path-bound"]);
    }

    #[test]
    fn recovery_and_lost_journal_words_carry_their_figures() {
        let mut c = config(5, VerdictCounts::default());
        // Without a live-journal count (XFS): the median, named as one.
        assert_eq!(
            recovery_words(&c),
            "recovery median 0.250 s (p95 0.500; 3 timed), full fsck 1.50 s"
        );
        // With one: the figure to plan on leads, then what it comes from.
        let m = crate::analysis::recovery_model::RecoveryModel {
            points: 4,
            worst_s: 1.2,
            worst_blocks: 500,
            fullest_blocks: 600,
            intercept_s: Some(0.1),
            per_kblock_s: Some(2.0),
            per_kblock_low_s: Some(1.5),
            per_kblock_high_s: Some(2.5),
            r2: Some(0.956),
            at_fullest_s: Some(1.3),
            at_fullest_low_s: Some(1.1),
            at_fullest_high_s: Some(1.5),
        };
        let mut fitted = c.clone();
        fitted.recovery_plan_s = Some(m.plan_s());
        fitted.recovery_model = Some(m);
        assert_eq!(
            recovery_words(&fitted),
            "recovery up to 1.50 s (4 timed, worst 1.20 s at 500 live journal blocks; 2.00 s per 1000 blocks [1.50, 2.50], R² 0.96; 1.30 s [1.10, 1.50] predicted at the fullest journal, 600 blocks), full fsck 1.50 s"
        );
        c.replay_median_s = None;
        assert_eq!(recovery_words(&c), "recovery not timed");
        assert_eq!(lost_journal_words(&c), None);
        c.lost_journal = Some(LostJournalStats {
            states: 5,
            mount_failed: 5,
            recovered: 4,
            fsynced_missing: Tally { total: 9, max: 6 },
            fsynced_different: Tally { total: 1, max: 1 },
            lost_found: Tally::default(),
            fsck_repairs: Tally { total: 30, max: 12 },
        });
        let w = lost_journal_words(&c).unwrap();
        assert!(
            w.contains("fails in 5/5") && w.contains("back in 4/5"),
            "{w}"
        );
        assert!(
            w.contains("up to 6 fsync'ed") && w.contains("up to 12 fsck"),
            "{w}"
        );
    }
}
