//! `jbench selftest jobs`: what running beside others does to a trial's figures, as an
//! A/A check. One configuration x workload runs alone and beside N−1 other trials of
//! the same experiment, round after round (alone first in even rounds, beside first
//! in odd ones, so a drift of the machine falls on both sides), every trial in a
//! `jbench trial` child process: beside others exactly as `jbench run --jobs N` runs it,
//! alone as `jbench run` runs one trial at a time. The two sets
//! are then compared as any two configurations are (`analysis`): the ratio beside /
//! alone of every phase's rate, its interval, and the verdict against the
//! experiment's noise band. The records are kept in a results directory, labelled
//! `alone` and `beside-K`, which `jbench report` reads like a run.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::analysis::{self, Decision, ReportOptions};
use crate::events::{step, Activity};
use crate::experiment::plan::Trial;
use crate::experiment::slots::Slot;
use crate::experiment::spec::Spec;
use crate::results::record::{Status, TrialRecord};
use crate::results::store::Store;
use crate::run::jobs::{ChildCommand, Ended, Pool};
use crate::workload::RunControl;

/// What to check.
pub struct CheckOptions {
    pub spec: Spec,
    /// The experiment's text, stored with the records.
    pub original: String,
    /// Indices into `spec.configs` and `spec.workloads`: the trial measured.
    pub config: usize,
    pub workload: usize,
    /// The numbers of jobs to check (2 and up).
    pub jobs: Vec<usize>,
    /// Rounds per number of jobs: one trial alone and one beside others each.
    pub rounds: u32,
    pub dir: PathBuf,
    pub child: ChildCommand,
    /// Check it even where `jbench run --jobs` would run it alone (`--any-host`): how
    /// trials under a memory limit fare side by side on a host with v1 cgroups.
    pub any_host: bool,
}

/// One phase's rate beside others against alone.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseShift {
    pub phase: String,
    pub rate_unit: String,
    pub alone: f64,
    pub beside: f64,
    /// beside / alone, with its interval at `level`.
    pub ratio: f64,
    pub low: f64,
    pub high: Option<f64>,
    pub level: f64,
    pub decision: Option<Decision>,
    /// Either side's phase ran under the experiment's `suspect_below`.
    pub suspect: bool,
}

/// What N jobs did.
#[derive(Debug, Clone, Serialize)]
pub struct JobsShift {
    pub jobs: usize,
    pub label: String,
    pub trials: usize,
    /// The main phase first, then the others.
    pub phases: Vec<PhaseShift>,
    /// Mean wall time of a measured trial alone and beside others.
    pub alone_wall_seconds: f64,
    pub beside_wall_seconds: f64,
    /// Trials per hour with N at once against one at a time:
    /// N x alone wall / beside wall.
    pub throughput: f64,
}

/// The whole check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub experiment: String,
    pub configuration: String,
    pub workload: String,
    pub noise_band: f64,
    pub rounds: u32,
    pub results: PathBuf,
    pub alone_trials: usize,
    pub shifts: Vec<JobsShift>,
}

/// Runs the check, telling its steps as [`Activity::JobsCheck`] events.
pub fn run_check(opts: CheckOptions, ctl: &RunControl) -> Result<CheckReport> {
    let spec = &opts.spec;
    let v1 = crate::rig::memcg::is_v1() && !opts.any_host;
    let measured = Slot::of_config(&spec.configs[opts.config]).on_host(v1);
    if !measured.can_share(measured) {
        bail!(
            "`jbench run --jobs` never runs configuration `{}` beside another trial: {}; check another configuration",
            spec.configs[opts.config].label,
            measured
                .why_apart(measured)
                .unwrap_or_default()
        );
    }
    // Neighbours: every configuration x workload that may share the host with it.
    let neighbours: Vec<(usize, usize)> = (0..spec.configs.len())
        .filter(|&c| {
            Slot::of_config(&spec.configs[c])
                .on_host(v1)
                .can_share(measured)
        })
        .flat_map(|c| (0..spec.workloads.len()).map(move |w| (c, w)))
        .collect();
    let mut store = Store::create(&opts.dir, spec, &opts.original)?;
    let mut next = Counter::default();
    let mut records: Vec<TrialRecord> = Vec::new();
    for &n in &opts.jobs {
        // The children of N jobs run as those of `jbench run --jobs N` do.
        let mut pool = Pool::new(n, opts.child.clone());
        for round in 0..opts.rounds {
            let order = if round % 2 == 0 {
                [0, n - 1]
            } else {
                [n - 1, 0]
            };
            for others in order {
                let label = label(others);
                step(
                    Activity::JobsCheck,
                    format!(
                        "{n} jobs, round {}/{}: {} / {} {}",
                        round + 1,
                        opts.rounds,
                        spec.configs[opts.config].label,
                        spec.workloads[opts.workload].name,
                        if others == 0 {
                            "alone".to_string()
                        } else {
                            format!("beside {others} other trial(s)")
                        }
                    ),
                );
                let me = next.trial(opts.config, opts.workload);
                let mut record = measure(
                    &mut pool,
                    (me, measured),
                    others,
                    &neighbours,
                    &mut next,
                    ctl,
                )?;
                record.config.label = label;
                store.append(&record)?;
                if record.status == Status::Failed {
                    step(
                        Activity::JobsCheck,
                        format!(
                            "trial {} failed: {}",
                            record.trial,
                            record.error.as_deref().unwrap_or("")
                        ),
                    );
                }
                records.push(record);
            }
        }
    }
    Ok(report(&opts, &records))
}

/// `alone`, `beside-1`, `beside-3`: the label the measured trials are analysed under.
fn label(others: usize) -> String {
    if others == 0 {
        "alone".into()
    } else {
        format!("beside-{others}")
    }
}

/// Trial indices and repetitions for the children, never reused within a check.
#[derive(Default)]
struct Counter(usize);

impl Counter {
    fn trial(&mut self, config: usize, workload: usize) -> Trial {
        self.0 += 1;
        Trial {
            index: self.0 - 1,
            config,
            workload,
            rep: self.0 as u32,
            recording: false,
        }
    }
}

/// Runs trial `me` beside `others` neighbours, started first and replaced whenever
/// one ends, so that many run for the whole of it; stops them when it ends.
fn measure(
    pool: &mut Pool,
    (me, slot): (Trial, Slot),
    others: usize,
    neighbours: &[(usize, usize)],
    next: &mut Counter,
    ctl: &RunControl,
) -> Result<TrialRecord> {
    let mut k = 0;
    let mut start_neighbour = |pool: &mut Pool, next: &mut Counter| {
        let (c, w) = neighbours[k % neighbours.len()];
        k += 1;
        let t = next.trial(c, w);
        pool.start(t, slot)
    };
    for _ in 0..others {
        start_neighbour(pool, next)?;
    }
    // Alone, it runs as `--jobs 1` runs it, so the check covers everything a
    // concurrent run does differently.
    pool.start_as(me, slot, others > 0)?;
    let mut mine = None;
    while mine.is_none() {
        if ctl.stop_requested() {
            pool.interrupt();
        }
        let Some((t, ended, beside)) = pool.wait(Duration::from_millis(200), false) else {
            continue;
        };
        if t.index == me.index {
            mine = Some((ended, beside));
        } else if !ctl.stop_requested() {
            start_neighbour(pool, next)?;
        }
    }
    // The neighbours' own figures are not the check's: stop them.
    pool.interrupt();
    while !pool.is_empty() {
        let _ = pool.wait(Duration::from_millis(200), false);
    }
    let (ended, beside) = mine.expect("the measured trial ended");
    match ended {
        Ended::Recorded(mut r) => {
            r.concurrency = Some(beside);
            step(
                Activity::JobsCheck,
                format!(
                    "  {}",
                    r.phases
                        .iter()
                        .map(|p| format!("{} {:.2}s", p.name, p.seconds))
                        .collect::<Vec<_>>()
                        .join("  ")
                ),
            );
            Ok(*r)
        }
        Ended::Interrupted => bail!("interrupted"),
        Ended::Fatal(why) => bail!(why),
    }
}

/// The check's figures, from the measured records.
fn report(opts: &CheckOptions, records: &[TrialRecord]) -> CheckReport {
    let spec = &opts.spec;
    let mut shifts = Vec::new();
    for &n in &opts.jobs {
        let beside_label = label(n - 1);
        let pair: Vec<TrialRecord> = records
            .iter()
            .filter(|r| r.config.label == "alone" || r.config.label == beside_label)
            .cloned()
            .collect();
        let Ok(mut ro) = ReportOptions::of_spec(spec, Some("alone".into()), None) else {
            continue;
        };
        ro.config_order = vec!["alone".into(), beside_label.clone()];
        let a = analysis::analyse(&pair, &ro);
        let Some(w) = a.workloads.first() else {
            continue;
        };
        let main = w.summary.as_ref().map(|s| s.main_phase.clone());
        let Some(cmp) = w.comparisons.iter().find(|c| c.config == beside_label) else {
            continue;
        };
        let mut phases: Vec<PhaseShift> = cmp
            .phases
            .iter()
            .filter_map(|p| {
                let info = w.phases.iter().find(|i| i.name == p.phase)?;
                let rate = |label: &str| {
                    let c = w.configs.iter().find(|c| c.label == label)?;
                    c.phases
                        .iter()
                        .find(|s| s.phase == p.phase)?
                        .rate
                        .as_ref()
                        .map(|s| s.mean)
                };
                Some(PhaseShift {
                    phase: p.phase.clone(),
                    rate_unit: info.rate_unit.clone(),
                    alone: rate("alone")?,
                    beside: rate(&beside_label)?,
                    ratio: p.ratio?,
                    low: p.ratio_ci_low?,
                    high: p.ratio_ci_high,
                    level: p.ci_level.unwrap_or(a.confidence),
                    decision: p.decision,
                    suspect: p.suspect,
                })
            })
            .collect();
        // The main phase first.
        phases.sort_by_key(|p| Some(&p.phase) != main.as_ref());
        let alone_wall = mean_wall(records, "alone");
        let beside_wall = mean_wall(records, &beside_label);
        shifts.push(JobsShift {
            jobs: n,
            label: beside_label,
            trials: pair.len(),
            phases,
            alone_wall_seconds: alone_wall,
            beside_wall_seconds: beside_wall,
            throughput: if beside_wall > 0.0 {
                n as f64 * alone_wall / beside_wall
            } else {
                0.0
            },
        });
    }
    CheckReport {
        experiment: spec.name.clone(),
        configuration: spec.configs[opts.config].label.clone(),
        workload: spec.workloads[opts.workload].name.clone(),
        noise_band: spec.noise_band,
        rounds: opts.rounds,
        results: opts.dir.clone(),
        alone_trials: records.iter().filter(|r| r.config.label == "alone").count(),
        shifts,
    }
}

/// Mean wall time of the measured trials labelled `label`; 0 without any.
fn mean_wall(records: &[TrialRecord], label: &str) -> f64 {
    let v: Vec<f64> = records
        .iter()
        .filter(|r| r.config.label == label)
        .map(|r| r.wall_seconds)
        .collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

impl CheckReport {
    /// Whether any main phase moved beyond the noise band.
    pub fn shifted(&self) -> bool {
        self.shifts
            .iter()
            .any(|s| s.phases.first().and_then(|p| p.decision) == Some(Decision::Different))
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} / {} of `{}`, alone against beside others ({} rounds; ratio beside / alone of the rate, its interval, and the verdict against the ±{}% noise band):",
            self.configuration,
            self.workload,
            self.experiment,
            self.rounds,
            self.noise_band * 100.0
        )?;
        for s in &self.shifts {
            writeln!(
                f,
                "  --jobs {}: trials took {:.1} s alone, {:.1} s beside {} other(s): {:.2}x the trials per hour",
                s.jobs,
                s.alone_wall_seconds,
                s.beside_wall_seconds,
                s.jobs - 1,
                s.throughput
            )?;
            for (i, p) in s.phases.iter().enumerate() {
                let high = p
                    .high
                    .map_or("unbounded".to_string(), |h| format!("{h:.3}"));
                writeln!(
                    f,
                    "    {}{}: {:.4}x [{:.3}, {high}] at {:.1}% ({:.1} vs {:.1} {}): {}{}",
                    p.phase,
                    if i == 0 { " (main phase)" } else { "" },
                    p.ratio,
                    p.low,
                    p.level * 100.0,
                    p.beside,
                    p.alone,
                    p.rate_unit,
                    p.decision.map_or("no verdict", |d| d.as_str()),
                    if p.suspect {
                        " (suspect: a short phase)"
                    } else {
                        ""
                    }
                )?;
            }
        }
        write!(
            f,
            "records: {} (`jbench report` reads it; configurations `alone` and `beside-K`)",
            self.results.display()
        )
    }
}
