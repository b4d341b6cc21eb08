//! Tests of the analysis and of the text, Markdown, CSV and JSON exporters.

mod analysis;
mod consistency;
mod crash;
mod crash_formats;
mod formats;
mod kept_runs;
mod significance;
mod study3;
mod warnings;

use super::csv::{csv_field, CSV_HEADER};
use super::text::verdict_line;
use super::words::{fmt_alpha, fmt_level, fmt_pct_ci, p_expr, verdict_text, Wording};
use super::*;
use crate::analysis::ratio;
use crate::analysis::warnings::fmt_cv;
use crate::analysis::warnings::fmt_num;
use crate::results::record::ConfigRecord;
use crate::results::record::{Status, SCHEMA_VERSION};
use crate::workload::PhaseResult;

/// fdtree's four phases; `create_bytes` is the payload of the file-create phase.
const PHASES: [(&str, &str); 4] = [
    ("dir_create", "dir creates"),
    ("file_create", "file creates"),
    ("file_remove", "file removals"),
    ("dir_remove", "dir removals"),
];
/// Long enough that rates around 1000 ops/s run 600 s, far above the 60 s rule.
const OPS: u64 = 600_000;

/// A trial whose every phase ran `OPS` operations at `rates[i]` ops/s (so
/// seconds = OPS / rate); the file-create phase moved `OPS` * 4 KiB.
fn rec(trial: usize, rep: u32, label: &str, workload: &str, rates: [f64; 4]) -> TrialRecord {
    let phases = PHASES
        .iter()
        .zip(rates)
        .map(|((name, unit), rate)| PhaseResult {
            name: name.to_string(),
            seconds: OPS as f64 / rate,
            ops: OPS,
            bytes: if *name == "file_create" {
                OPS * 4096
            } else {
                0
            },
            op_unit: unit.to_string(),
            ..PhaseResult::default()
        })
        .collect();
    TrialRecord {
        schema_version: SCHEMA_VERSION,
        trial,
        rep,
        crash_recording: false,
        config: ConfigRecord {
            label: label.to_string(),
            filesystem: "ext4".to_string(),
            fs_size: 1 << 30,
            placement: label.split(',').next().unwrap().to_string(),
            journal_size: 16 << 20,
            mode: "ordered".to_string(),
            mkfs_options: vec![],
            mount_options: vec![],
            fast_commit: false,
            commit_seconds: None,
            memory_limit: None,
            ramdisk_size: None,
            fs_device_model: None,
            journal_device_model: None,
        },
        workload: crate::results::record::WorkloadRecord {
            kind: "fdtree".to_string(),
            name: workload.to_string(),
            params: serde_json::json!({"dirs": 3}),
            durable: false,
            neighbour_rate: None,
        },
        layout: serde_json::Value::Null,
        verified: None,
        phases,
        memory: None,
        emulation: None,
        monitor: None,
        writeback: None,
        neighbour: None,
        concurrency: None,
        status: Status::Ok,
        error: None,
        started_at: "2024-01-01T00:00:00Z".to_string(),
        wall_seconds: 1.0,
    }
}

fn failed(mut r: TrialRecord, error: &str) -> TrialRecord {
    r.status = Status::Failed;
    r.error = Some(format!("{error}\nsecond line"));
    r
}

/// One trial per rate, trial indexes from `first`: dir_create runs at the given
/// rate, the other phases at 1000 ops/s.
fn series(out: &mut Vec<TrialRecord>, first: usize, label: &str, wl: &str, rates: &[f64]) {
    for (i, r) in rates.iter().enumerate() {
        out.push(rec(
            first + i,
            i as u32 + 1,
            label,
            wl,
            [*r, 1000.0, 1000.0, 1000.0],
        ));
    }
}

const BASE: [f64; 3] = [1000.0, 1010.0, 990.0];

const FAST: [f64; 3] = [1200.0, 1190.0, 1210.0];

fn opts() -> ReportOptions {
    ReportOptions::default()
}

fn find<'a>(a: &'a Analysis, wl: &str, cfg: &str) -> &'a ConfigAnalysis {
    let w = a.workloads.iter().find(|w| w.name == wl).unwrap();
    w.configs.iter().find(|c| c.label == cfg).unwrap()
}

/// A comparison of the model with its verdict in words, as the exporters write it.
#[derive(Debug)]
struct Worded<'a> {
    cmp: &'a PhaseComparison,
    verdict: String,
}

impl std::ops::Deref for Worded<'_> {
    type Target = PhaseComparison;
    fn deref(&self) -> &PhaseComparison {
        self.cmp
    }
}

fn comparison<'a>(a: &'a Analysis, wl: &str, cfg: &str, phase: &str) -> Worded<'a> {
    let w = a.workloads.iter().find(|w| w.name == wl).unwrap();
    let c = w.comparisons.iter().find(|c| c.config == cfg).unwrap();
    let cmp = c.phases.iter().find(|p| p.phase == phase).unwrap();
    let verdict = Wording::of(w, a).verdict(cmp);
    Worded { cmp, verdict }
}

const BASE_ROW: [f64; 4] = [1000.0; 4];

fn phase_cmp(phase: &str, p: Option<f64>, outcome: Outcome, suspect: bool) -> PhaseComparison {
    let significant = matches!(outcome, Outcome::Faster | Outcome::Slower);
    PhaseComparison {
        phase: phase.to_string(),
        n_baseline: 3,
        n_other: 3,
        pct: significant.then_some(if outcome == Outcome::Faster {
            12.3
        } else {
            -12.3
        }),
        ci_low_pct: None,
        ci_high_pct: None,
        p,
        mann_whitney_p: None,
        significant,
        within_noise_band: false,
        suspect,
        p_adjusted: p,
        ratio: None,
        ratio_ci_low: None,
        ratio_ci_high: None,
        ci_level: None,
        family: None,
        decision: outcome.decision(),
        outcome,
    }
}

/// Minimal RFC 4180 reader for the tests (quoted fields, doubled quotes).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(ch) = chars.next() {
            match (ch, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => row.push(std::mem::take(&mut field)),
                _ => field.push(ch),
            }
        }
        row.push(field);
        rows.push(row);
    }
    rows
}

mod summary_text;
