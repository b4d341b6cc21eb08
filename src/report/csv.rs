//! The CSV export: one row per (workload, configuration, phase), RFC 4180 quoted;
//! after them, with crash records, one row per (workload, configuration, verdict) of
//! the crash states in the same columns. Columns added after the first release go
//! last so readers by position keep working.

use super::words::Wording;
use super::Exporter;
use crate::analysis::answer::WorkloadAnswer;
use crate::analysis::stats::Summary;
use crate::analysis::{
    Analysis, ConfigAnalysis, CrashAnalysis, PhaseComparison, PhaseStats, WorkloadAnalysis,
};
use crate::results::crash::Verdict;

/// One row per (workload, configuration, phase).
pub struct Csv;

impl Exporter for Csv {
    fn render(&self, a: &Analysis) -> String {
        render_csv(a)
    }
}

pub(crate) const CSV_HEADER: [&str; 49] = [
    "workload",
    "config",
    "phase",
    "n",
    "failed",
    "seconds_mean",
    "seconds_sd",
    "rate_unit",
    "rate_mean",
    "rate_sd",
    "kib_per_s_mean",
    "kib_per_s_sd",
    "suspect",
    "vs_baseline_pct",
    "vs_baseline_ci_low",
    "vs_baseline_ci_high",
    "p_value",
    "verdict",
    // Added after the first release: new columns go last so readers by position keep
    // working.
    "p_adjusted",
    "outcome",
    "rate_ci95_low",
    "rate_ci95_high",
    // The answer of a run with crash states, on the row of each configuration's main
    // phase (empty elsewhere): the summary's ratio to the next slower configuration,
    // then the crash half (docs/report.md).
    "ratio_vs_next",
    "ratio_ci_low",
    "ratio_ci_high",
    "ratio_next_config",
    "crash_states",
    "crash_failures",
    "replay_p50_s",
    "replay_p95_s",
    "full_fsck_p50_s",
    "lost_journal_fsynced_lost_max",
    "lost_journal_fsck_repairs_max",
    // How each comparison with the baseline was decided (docs/results.md, "Families"):
    // the level its `vs_baseline_ci_*` interval is at, whether that interval is open
    // above (then `vs_baseline_ci_high` is empty), its family, and the family's size.
    "vs_baseline_ci_level",
    "vs_baseline_ci_unbounded",
    "family",
    "family_size",
    // Of the `failed` trials, those failed because the device daemon stalled on an
    // emulated disk (docs/devices.md, "Stalls").
    "stalled",
    // The three-outcome word of the row's comparison with the baseline (different,
    // equivalent, undecided: its interval against the noise band), and on a main
    // phase's row the answer's: the word of the ratio to the next slower
    // configuration, that ratio's level, and the line's marks (`suspect`,
    // `path-bound`, separated by `;`).
    "decision",
    "ratio_vs_next_decision",
    "ratio_vs_next_ci_level",
    "answer_marks",
    // Recovery to plan on (docs/crash.md, "Recovery time"): the larger of the worst
    // timed state and the upper end of the prediction at the fullest journal; the
    // worst timed; the fitted seconds per 1000 live journal blocks with its 95%
    // interval and R²; the fullest journal's live blocks.
    "recovery_plan_s",
    "recovery_worst_s",
    "recovery_s_per_1000_blocks",
    "recovery_s_per_1000_blocks_ci_low",
    "recovery_s_per_1000_blocks_ci_high",
    "recovery_r2",
    "recovery_fullest_blocks",
];

/// Configuration `config`'s answer, when `phase` is `workload`'s main phase: the
/// answer's columns are filled on that row only.
fn main_phase_answer<'a>(
    answers: &'a [WorkloadAnswer],
    workload: &str,
    config: &str,
    phase: &str,
) -> Option<&'a crate::analysis::answer::ConfigAnswer> {
    answers
        .iter()
        .find(|w| w.workload == workload && w.main_phase.as_deref() == Some(phase))
        .and_then(|w| w.configs.iter().find(|c| c.config == config))
}

/// The answer columns of configuration `config`'s row of `phase`: filled on the main
/// phase of a workload with an answer, empty otherwise.
fn answer_cells(
    answers: &[WorkloadAnswer],
    workload: &str,
    config: &str,
    phase: &str,
) -> Vec<String> {
    let Some(c) = main_phase_answer(answers, workload, config, phase) else {
        return vec![String::new(); 11];
    };
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let v = c.versus.as_ref();
    let lost = c.lost_journal.as_ref();
    vec![
        num(v.and_then(|v| v.ratio)),
        num(v.and_then(|v| v.ci_low)),
        num(v.and_then(|v| v.ci_high)),
        v.map(|v| v.slower.clone()).unwrap_or_default(),
        c.crash_states.to_string(),
        c.crash_failures.to_string(),
        num(c.replay_median_s),
        num(c.replay_p95_s),
        num(c.fsck_median_s),
        c.lost_journal_fsynced_max()
            .map(|x| x.to_string())
            .unwrap_or_default(),
        lost.map(|l| l.fsck_repairs.max.to_string())
            .unwrap_or_default(),
    ]
}

fn render_csv(a: &Analysis) -> String {
    let mut out = csv_line(CSV_HEADER.iter().map(|s| s.to_string()));
    let answers = crate::analysis::answer::of(a);
    for w in &a.workloads {
        let words = Wording::of(w, a);
        for c in &w.configs {
            let cmp = w.comparisons.iter().find(|x| x.config == c.label);
            for (i, p) in c.phases.iter().enumerate() {
                let is_base = w.baseline.as_deref() == Some(c.label.as_str());
                let mut row = csv_row(w, c, i, p, cmp.map(|x| &x.phases[i]), is_base, &words);
                row.extend(answer_cells(&answers, &w.name, &c.label, &p.phase));
                row.extend(decision_cells(w, cmp.map(|x| &x.phases[i]), is_base));
                row.push(c.stalled.to_string());
                row.push(
                    cmp.map(|x| &x.phases[i])
                        .filter(|_| !is_base)
                        .and_then(|x| x.decision)
                        .map(|d| d.to_string())
                        .unwrap_or_default(),
                );
                row.extend(answer_decision_cells(&answers, w, &c.label, &p.phase, a));
                row.extend(answer_recovery_cells(&answers, &w.name, &c.label, &p.phase));
                out.push_str(&csv_line(row));
            }
        }
    }
    for c in &a.crash {
        for v in Verdict::ALL {
            out.push_str(&csv_line(crash_row(c, v)));
        }
    }
    out
}

/// The recovery to plan on and its model, on a main phase's row; empty elsewhere.
fn answer_recovery_cells(
    answers: &[WorkloadAnswer],
    workload: &str,
    config: &str,
    phase: &str,
) -> Vec<String> {
    let found = main_phase_answer(answers, workload, config, phase);
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    let m = found.and_then(|c| c.recovery_model.as_ref());
    vec![
        num(found.and_then(|c| c.recovery_plan_s)),
        num(found.and_then(|c| c.recovery_worst_s)),
        num(m.and_then(|m| m.per_kblock_s)),
        num(m.and_then(|m| m.per_kblock_low_s)),
        num(m.and_then(|m| m.per_kblock_high_s)),
        num(m.and_then(|m| m.r2)),
        m.map(|m| m.fullest_blocks.to_string()).unwrap_or_default(),
    ]
}

/// The answer's word, level and marks on a main phase's row; empty elsewhere.
fn answer_decision_cells(
    answers: &[WorkloadAnswer],
    w: &WorkloadAnalysis,
    config: &str,
    phase: &str,
    a: &Analysis,
) -> Vec<String> {
    let found = main_phase_answer(answers, &w.name, config, phase);
    let Some(c) = found else {
        return vec![String::new(); 3];
    };
    let v = c.versus.as_ref();
    vec![
        v.and_then(|v| v.decision)
            .map(|d| d.to_string())
            .unwrap_or_default(),
        v.and_then(|v| v.ci_level)
            .map(|l| l.to_string())
            .unwrap_or_default(),
        super::summary::badges(c.suspect, c.path_bound.as_ref(), phase, a).join(";"),
    ]
}

/// Four columns: how the row's comparison with the baseline was decided.
fn decision_cells(
    w: &WorkloadAnalysis,
    cmp: Option<&PhaseComparison>,
    is_base: bool,
) -> Vec<String> {
    let Some(x) = cmp.filter(|_| !is_base) else {
        return vec![String::new(); 4];
    };
    let size = x
        .family
        .as_ref()
        .and_then(|id| w.families.iter().find(|f| &f.id == id))
        .map(|f| f.size.to_string())
        .unwrap_or_default();
    vec![
        x.ci_level.map(|l| l.to_string()).unwrap_or_default(),
        match (x.ci_low_pct, x.ci_high_pct) {
            (Some(_), None) => "true".to_string(),
            (Some(_), Some(_)) => "false".to_string(),
            _ => String::new(),
        },
        x.family.clone().unwrap_or_default(),
        size,
    ]
}

/// A crash row in the trial rows' columns, so one reader takes both: `phase` is
/// `crash:<verdict>` (the (workload, config, phase) key stays unique), `n` the states
/// with that verdict, `rate_unit` `states`, `verdict` the verdict; the rest empty.
fn crash_row(c: &CrashAnalysis, v: Verdict) -> Vec<String> {
    let mut row = vec![String::new(); CSV_HEADER.len()];
    let mut set = |column: &str, value: String| {
        let i = CSV_HEADER.iter().position(|h| *h == column);
        row[i.expect("a CSV column")] = value;
    };
    set("workload", c.workload.clone());
    set("config", c.config.clone());
    set("phase", format!("{CRASH_PHASE_PREFIX}{v}"));
    set("n", c.verdicts.get(v).to_string());
    set("rate_unit", "states".to_string());
    set("verdict", v.to_string());
    row
}

/// The `phase` of a crash row starts with this.
pub const CRASH_PHASE_PREFIX: &str = "crash:";

fn csv_row(
    w: &WorkloadAnalysis,
    c: &ConfigAnalysis,
    i: usize,
    p: &PhaseStats,
    cmp: Option<&PhaseComparison>,
    is_base: bool,
    words: &Wording,
) -> Vec<String> {
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    // An sd from one trial is not a spread: leave it empty rather than print 0.
    let sd = |s: Option<Summary>| num(s.and_then(|s| s.sd));
    let mean = |s: Option<Summary>| num(s.map(|s| s.mean));
    let verdict = match (is_base, cmp) {
        (true, _) => "baseline".to_string(),
        (false, Some(x)) => words.verdict(x),
        (false, None) => String::new(),
    };
    vec![
        w.name.clone(),
        c.label.clone(),
        p.phase.clone(),
        p.n.to_string(),
        c.failed.to_string(),
        mean(p.seconds),
        sd(p.seconds),
        w.phases[i].rate_unit.clone(),
        mean(p.rate),
        sd(p.rate),
        mean(p.kib_per_sec),
        sd(p.kib_per_sec),
        p.suspect.to_string(),
        num(cmp.and_then(|x| x.pct)),
        num(cmp.and_then(|x| x.ci_low_pct)),
        num(cmp.and_then(|x| x.ci_high_pct)),
        num(cmp.and_then(|x| x.p)),
        verdict,
        num(cmp.and_then(|x| x.p_adjusted)),
        cmp.filter(|_| !is_base)
            .map(|x| serde_json::to_value(x.outcome).ok())
            .and_then(|v| v.and_then(|v| v.as_str().map(str::to_string)))
            .unwrap_or_default(),
        num(p.rate.and_then(|s| s.ci95_low)),
        num(p.rate.and_then(|s| s.ci95_high)),
    ]
}

fn csv_line(fields: impl IntoIterator<Item = String>) -> String {
    let quoted: Vec<String> = fields.into_iter().map(|f| csv_field(&f)).collect();
    format!("{}\n", quoted.join(","))
}

/// RFC 4180 quoting: labels such as `second-disk,256M` contain commas.
pub(crate) fn csv_field(f: &str) -> String {
    if f.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", f.replace('"', "\"\""))
    } else {
        f.to_string()
    }
}
