//! The words and tables of the crash section (from [`crate::analysis::crash`]): per
//! workload a table of states and verdicts per configuration, a table of recovery
//! times, a line per configuration that lost its journal, notes (negative controls
//! that failed as they should, workloads checked for consistency only) and warnings
//! (a negative control the oracle did not catch, a state that is not `ok`). The text,
//! Markdown, JSON and HTML reports all take their words from here.

use serde::Serialize;

use super::grid::{Grid, Style, Table};
use super::words::fmt_sig;
use crate::analysis::crash::{
    ControlOutcome, CrashAnalysis, LostJournalStats, RecoveryStats, Tally, TimeStats, VerdictCounts,
};
use crate::analysis::Analysis;
use crate::results::crash::Verdict;

/// One workload's part of the crash section, worded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CrashWorkload {
    pub name: String,
    /// States and verdicts; then recovery times when a state was timed.
    pub tables: Vec<Table>,
    /// One line per configuration whose journal was lost ([`lost_journal_line`]).
    pub lost_journal: Vec<String>,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

/// The crash section per workload, workloads in order of first appearance; empty
/// without crash records.
pub fn crash_workloads(crash: &[CrashAnalysis]) -> Vec<CrashWorkload> {
    workload_groups(crash)
        .into_iter()
        .map(|(name, entries)| {
            let grids = workload_grids(&name, &entries);
            CrashWorkload {
                tables: grids.into_iter().map(Grid::into_table).collect(),
                lost_journal: entries
                    .iter()
                    .filter_map(|c| lost_journal_line(c))
                    .collect(),
                notes: workload_notes(&name, &entries),
                warnings: entries.iter().flat_map(|c| crash_warnings(c)).collect(),
                name,
            }
        })
        .collect()
}

/// Every crash warning of `a`, in report order (the HTML page lists them with the
/// run's other warnings too).
pub fn all_crash_warnings(a: &Analysis) -> Vec<String> {
    a.crash.iter().flat_map(crash_warnings).collect()
}

/// Entries grouped by workload, workloads and entries in their order in `crash`.
fn workload_groups(crash: &[CrashAnalysis]) -> Vec<(String, Vec<&CrashAnalysis>)> {
    let mut out: Vec<(String, Vec<&CrashAnalysis>)> = Vec::new();
    for c in crash {
        match out.iter_mut().find(|(w, _)| *w == c.workload) {
            Some((_, entries)) => entries.push(c),
            None => out.push((c.workload.clone(), vec![c])),
        }
    }
    out
}

/// The crash section of the text and Markdown reports; empty without crash records.
pub(crate) fn crash_block(a: &Analysis, style: Style) -> String {
    let mut out = String::new();
    for (name, entries) in workload_groups(&a.crash) {
        out.push_str(&match style {
            Style::Plain => format!("== Crash states: workload {name} ==\n\n"),
            Style::Markdown => format!("## Crash states: workload `{name}`\n\n"),
        });
        for grid in workload_grids(&name, &entries) {
            out.push_str(&grid.render(style));
            out.push('\n');
        }
        let lost: Vec<String> = entries
            .iter()
            .filter_map(|c| lost_journal_line(c))
            .collect();
        let warnings: Vec<String> = entries.iter().flat_map(|c| crash_warnings(c)).collect();
        for (title, lines) in [
            ("Lost journal", lost),
            ("Notes", workload_notes(&name, &entries)),
            ("Warnings", warnings),
        ] {
            if !lines.is_empty() {
                out.push_str(&super::grid::warning_block(title, &lines, style));
            }
        }
    }
    out
}

fn workload_grids(name: &str, entries: &[&CrashAnalysis]) -> Vec<Grid> {
    let mut grids = vec![verdict_grid(name, entries)];
    grids.extend(recovery_grid(name, entries));
    grids
}

/// The configuration's label, marked when it is built to lose data.
fn config_cell(c: &CrashAnalysis) -> String {
    if c.negative_control {
        format!("{} (negative control)", c.config)
    } else {
        c.config.clone()
    }
}

/// States, states per strategy, states per verdict, states checked per second.
fn verdict_grid(name: &str, entries: &[&CrashAnalysis]) -> Grid {
    let mut strategies: Vec<&str> = Vec::new();
    for s in entries.iter().flat_map(|c| &c.strategies) {
        if !strategies.contains(&s.strategy.as_str()) {
            strategies.push(&s.strategy);
        }
    }
    let mut headers = vec!["configuration".to_string(), "states".to_string()];
    headers.extend(strategies.iter().map(|s| s.to_string()));
    headers.extend(Verdict::ALL.iter().map(|v| v.as_str().to_string()));
    headers.push("states/s".to_string());
    let rows = entries
        .iter()
        .map(|c| {
            let mut row = vec![config_cell(c), c.states.to_string()];
            row.extend(strategies.iter().map(|s| {
                c.strategies
                    .iter()
                    .find(|x| x.strategy == *s)
                    .map_or(0, |x| x.states)
                    .to_string()
            }));
            row.extend(Verdict::ALL.iter().map(|v| c.verdicts.get(*v).to_string()));
            row.push(c.states_per_sec.map_or("-".to_string(), fmt_sig));
            row
        })
        .collect();
    Grid {
        title: format!("Crash states of {name}: verdicts per configuration"),
        headers,
        rows,
    }
}

/// Median and p95 of each recovery step, for the configurations with timed states;
/// `None` when none has.
fn recovery_grid(name: &str, entries: &[&CrashAnalysis]) -> Option<Grid> {
    let timed: Vec<(&CrashAnalysis, &RecoveryStats)> = entries
        .iter()
        .filter_map(|c| Some((*c, c.recovery.as_ref()?)))
        .collect();
    if timed.is_empty() {
        return None;
    }
    // Replay grows with the journal's dirty content, a full fsck with the inodes: the
    // two figures that explain the times sit next to them.
    let mut headers = vec![
        "configuration".to_string(),
        "journal".to_string(),
        "inodes".to_string(),
        "replayed (blocks) median".to_string(),
        "recovery up to".to_string(),
        "fullest journal (blocks)".to_string(),
    ];
    for step in ["recovery (mount)", "journal_only", "full fsck"] {
        headers.push(format!("{step} median"));
        headers.push(format!("{step} p95"));
    }
    headers.push("n".to_string());
    let cells = |t: &Option<TimeStats>| match t {
        Some(t) => [fmt_sig(t.median), fmt_sig(t.p95)],
        None => ["-".to_string(), "-".to_string()],
    };
    let rows = timed
        .iter()
        .map(|(c, r)| {
            let mut row = vec![
                config_cell(c),
                crate::units::format_size(c.journal_size),
                match c.inodes {
                    0 => "-".to_string(),
                    n => n.to_string(),
                },
                r.replayed_blocks
                    .map_or("-".to_string(), |b| fmt_sig(b.median)),
                c.recovery_model
                    .as_ref()
                    .map_or("-".to_string(), |m| fmt_sig(m.plan_s())),
                c.recovery_model
                    .as_ref()
                    .map_or("-".to_string(), |m| m.fullest_blocks.to_string()),
            ];
            for t in [&r.mount, &r.journal_only, &r.full_fsck] {
                row.extend(cells(t));
            }
            row.push(timed_cell(r));
            row
        })
        .collect();
    Some(Grid {
        title: format!("Recovery times of {name} (s, model timing on): to plan on (docs/crash.md, \"Recovery time\"), then each step's median and 95th percentile"),
        headers,
        rows,
    })
}

/// States timed, and the steps timed in fewer of them (a step that failed has no
/// time), so a p95 of three values is not read as one of thirty.
fn timed_cell(r: &RecoveryStats) -> String {
    let fewer: Vec<String> = [
        ("mount", &r.mount),
        ("journal_only", &r.journal_only),
        ("full fsck", &r.full_fsck),
    ]
    .iter()
    .filter_map(|(step, t)| {
        let n = t.as_ref()?.n;
        (n < r.timed).then(|| format!("{step} {n}"))
    })
    .collect();
    if fewer.is_empty() {
        r.timed.to_string()
    } else {
        format!("{} ({})", r.timed, fewer.join(", "))
    }
}

/// "ramdisk,16M: 12 states with the journal lost; the mount failed in 12 of 12, as it
/// must; recovered in 12; fsync'ed files missing 3 (at most 1 in a state), ...";
/// `None` when no state lost its journal.
pub fn lost_journal_line(c: &CrashAnalysis) -> Option<String> {
    let l: &LostJournalStats = c.lost_journal.as_ref()?;
    let tally = |t: Tally| {
        if t.total == 0 {
            "0".to_string()
        } else {
            format!("{} (at most {} in a state)", t.total, t.max)
        }
    };
    Some(format!(
        "{}: {} state(s) with the journal lost; the mount failed in {} of {}, as it must; \
         the file system was recovered in {} of {}; fsync'ed files missing {}, different {}; \
         lost+found entries {}; fsck repairs {}",
        c.config,
        l.states,
        l.mount_failed,
        l.states,
        l.recovered,
        l.states,
        tally(l.fsynced_missing),
        tally(l.fsynced_different),
        tally(l.lost_found),
        tally(l.fsck_repairs),
    ))
}

/// The notes of one workload: a negative control that failed as it should, and what
/// was checked when the workload makes no promises (once for the workload when that is
/// true of every configuration).
fn workload_notes(name: &str, entries: &[&CrashAnalysis]) -> Vec<String> {
    let mut out: Vec<String> = entries
        .iter()
        .flat_map(|c| coverage_note(c).into_iter().chain(journal_live_note(c)))
        .collect();
    if !entries.is_empty() && entries.iter().all(|c| !c.checks_fsync) {
        out.push(format!("{name}: {}", consistency_words()));
        out.extend(entries.iter().filter_map(|c| control_note(c)));
    } else {
        for c in entries {
            out.extend(consistency_note(c));
            out.extend(control_note(c));
        }
    }
    out
}

/// How much of the state space was checked, and by what: "fsync/internal: checked 40
/// of 474 states (all prefix cuts; 26 of 455 subsets); the workload's own check ran
/// on 40".
fn coverage_note(c: &CrashAnalysis) -> Option<String> {
    let mut line = format!("{}/{}: {}", c.workload, c.config, c.coverage_line()?);
    if c.user_checks > 0 {
        line.push_str(&format!(
            "; the workload's own check ran on {}",
            c.user_checks
        ));
    }
    if c.hung > 0 {
        line.push_str(&format!("; recovery hung in {} (a failure)", c.hung));
    }
    if let Some(w) = c.judged.words(c.states) {
        line.push_str(&format!("; {w}"));
    }
    Some(line)
}

/// What the journal held at the states: "fsync/internal: live journal at the states
/// (median / max): 120 / 900 blocks in 12 / 80 transactions; fill 880 / 900 blocks,
/// prefix 40 / 300 blocks"; `None` when no state recorded it.
pub fn journal_live_note(c: &CrashAnalysis) -> Option<String> {
    let l = c.journal_live.as_ref()?;
    let mut line = format!(
        "{}/{}: live journal at the states (median / max): {} / {} blocks in {} / {} \
         transactions",
        c.workload,
        c.config,
        fmt_sig(l.blocks_median),
        l.blocks_max,
        fmt_sig(l.transactions_median),
        l.transactions_max
    );
    if c.journal_live_by_strategy.len() > 1 {
        let per: Vec<String> = c
            .journal_live_by_strategy
            .iter()
            .map(|s| {
                format!(
                    "{} {} / {} blocks",
                    s.strategy,
                    fmt_sig(s.live.blocks_median),
                    s.live.blocks_max
                )
            })
            .collect();
        line.push_str(&format!("; {}", per.join(", ")));
    }
    Some(line)
}

/// The notes of one configuration x workload, as the JSON report carries them.
pub fn crash_notes(c: &CrashAnalysis) -> Vec<String> {
    let mut out: Vec<String> = coverage_note(c).into_iter().collect();
    out.extend(journal_live_note(c));
    out.extend(consistency_note(c));
    out.extend(control_note(c));
    out.extend(lost_journal_line(c));
    out
}

fn consistency_words() -> &'static str {
    "the workload made no promise the lab can check (no fsync'ed file, durable line or \
     synchronous write), so its crash states are checked for consistency only (the mount \
     and fsck)"
}

fn consistency_note(c: &CrashAnalysis) -> Option<String> {
    (!c.checks_fsync).then(|| format!("{}/{}: {}", c.workload, c.config, consistency_words()))
}

fn control_note(c: &CrashAnalysis) -> Option<String> {
    (c.control? == ControlOutcome::FailedAsItShould).then(|| {
        format!(
            "{}/{}: negative control (built to lose data) failed as it should: {} of {} states failed ({})",
            c.workload,
            c.config,
            c.verdicts.failures(),
            c.states,
            breakdown(c, |v| v.is_failure()),
        )
    })
}

/// "3 unmountable, 1 lost-fsynced": the non-zero counts of the verdicts `pick` takes.
fn breakdown(c: &CrashAnalysis, pick: impl Fn(Verdict) -> bool) -> String {
    verdict_counts(&c.verdicts, pick)
}

/// The non-zero counts of the verdicts `pick` takes, worst first
/// ([`Verdict::BY_SEVERITY`]): "3 unmountable, 1 lost-fsynced". The answer's words
/// (`report::answer`) and this section's notes and warnings say them alike.
pub(crate) fn verdict_counts(counts: &VerdictCounts, pick: impl Fn(Verdict) -> bool) -> String {
    Verdict::BY_SEVERITY
        .iter()
        .filter(|v| pick(**v))
        .filter_map(|v| {
            let n = counts.get(*v);
            (n > 0).then(|| format!("{n} {v}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The warnings of one configuration x workload: a negative control that no state
/// caught; for an ordinary configuration, states that are not `ok` (the first one
/// named with its evidence); a lost journal that mounted anyway or was not recovered.
pub fn crash_warnings(c: &CrashAnalysis) -> Vec<String> {
    let at = format!("{}/{}", c.workload, c.config);
    let mut out = Vec::new();
    if c.control == Some(ControlOutcome::NotCaught) {
        out.push(format!(
            "{at}: NEGATIVE CONTROL NOT CAUGHT: this configuration is built to lose data, \
             yet none of its {} states lost what fsync promised ({}); a check that misses a \
             planted loss cannot be trusted to find a real one",
            c.states,
            breakdown(c, |v| v != Verdict::LostFsynced),
        ));
    }
    if !c.negative_control && c.not_ok() > 0 {
        let mut line = format!(
            "{at}: {} of {} crash states not ok ({})",
            c.not_ok(),
            c.states,
            breakdown(c, |v| v != Verdict::Ok)
        );
        if let Some(s) = &c.first_not_ok {
            let evidence = if s.evidence.is_empty() {
                "no evidence recorded"
            } else {
                &s.evidence
            };
            line.push_str(&format!(
                "; first: state {} ({}, trial {}), {}: {evidence}",
                s.state, s.strategy, s.trial, s.verdict
            ));
        }
        out.push(line);
    }
    if let Some(l) = &c.lost_journal {
        if l.mount_failed < l.states {
            out.push(format!(
                "{at}: with the journal lost, the mount succeeded in {} of {} states; it must \
                 fail (the file system would run without the journal's committed transactions)",
                l.states - l.mount_failed,
                l.states
            ));
        }
        if l.recovered < l.states {
            out.push(format!(
                "{at}: with the journal lost, the documented recovery did not bring back \
                 {} of {} states",
                l.states - l.recovered,
                l.states
            ));
        }
    }
    out
}
