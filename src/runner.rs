//! Runs the plan: skips trials already recorded (`--resume`), records each trial the
//! moment it ends, reports progress, and stops cleanly when asked.

use std::io::IsTerminal;
use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::executor::{Executor, TrialError, TrialOutcome};
use crate::plan::Trial;
use crate::record::{Status, TrialRecord, WorkloadRecord, SCHEMA_VERSION};
use crate::spec::Spec;
use crate::store::Store;
use crate::workload::RunControl;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunOutcome {
    pub ran: usize,
    pub failed: usize,
    pub skipped: usize,
    pub interrupted: bool,
}

/// Progress output: a bar on a terminal, plain lines otherwise (logs, CI).
enum Progress {
    Bar(ProgressBar),
    Lines { total: usize },
    Quiet,
}

impl Progress {
    fn new(total: usize, done: usize, quiet: bool) -> Self {
        if quiet {
            return Progress::Quiet;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} trials, ETA {eta}  {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.set_position(done as u64);
            bar.reset_eta();
            Progress::Bar(bar)
        } else {
            Progress::Lines { total }
        }
    }

    fn say(&self, line: &str) {
        match self {
            Progress::Bar(b) => b.println(line),
            Progress::Lines { .. } => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    fn start(&self, n: usize, what: &str) {
        match self {
            Progress::Bar(b) => b.set_message(what.to_string()),
            Progress::Lines { total } => eprintln!("[{}/{}] {what} ...", n, total),
            Progress::Quiet => {}
        }
    }

    fn finish_one(&self, line: &str) {
        match self {
            Progress::Bar(b) => {
                b.println(line);
                b.inc(1);
            }
            Progress::Lines { .. } => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

pub fn run(
    spec: &Spec,
    trials: &[Trial],
    existing: &[TrialRecord],
    store: &mut Store,
    executor: &mut dyn Executor,
    ctl: &RunControl,
    quiet: bool,
) -> Result<RunOutcome> {
    let done = crate::store::done_indices(existing);
    let todo: Vec<&Trial> = trials.iter().filter(|t| !done.contains(&t.index)).collect();
    let mut outcome = RunOutcome {
        skipped: trials.len() - todo.len(),
        ..RunOutcome::default()
    };
    let progress = Progress::new(trials.len(), outcome.skipped, quiet);
    if outcome.skipped > 0 {
        progress.say(&format!(
            "resuming: {} of {} trials already recorded",
            outcome.skipped,
            trials.len()
        ));
    }
    for (k, trial) in todo.iter().enumerate() {
        if ctl.stop_requested() {
            outcome.interrupted = true;
            break;
        }
        let config = &spec.configs[trial.config];
        let workload = &spec.workloads[trial.workload];
        let what = format!("{} / {} / rep {}", config.label, workload.name, trial.rep);
        progress.start(outcome.skipped + k + 1, &what);
        let started_at = chrono::Local::now().to_rfc3339();
        let clock = Instant::now();
        let mut say = |line: &str| progress.say(line);
        let result = executor.run_trial(spec, trial, ctl, &mut say);
        let wall_seconds = clock.elapsed().as_secs_f64();
        let base = |status: Status| TrialRecord {
            schema_version: SCHEMA_VERSION,
            trial: trial.index,
            rep: trial.rep,
            config: config.record(),
            workload: WorkloadRecord {
                kind: workload.engine.kind().to_string(),
                name: workload.name.clone(),
                params: workload.engine.params(),
            },
            layout: serde_json::Value::Null,
            verified: None,
            phases: Vec::new(),
            status,
            error: None,
            started_at: started_at.clone(),
            wall_seconds,
        };
        let record = match result {
            Ok(TrialOutcome {
                layout,
                verified,
                phases,
            }) => TrialRecord {
                layout,
                verified,
                phases,
                ..base(Status::Ok)
            },
            Err(TrialError::Failed {
                error,
                layout,
                verified,
            }) => TrialRecord {
                layout,
                verified,
                error: Some(error),
                ..base(Status::Failed)
            },
            Err(TrialError::Interrupted) => {
                progress.finish();
                outcome.interrupted = true;
                break;
            }
            Err(TrialError::Fatal(e)) => {
                progress.finish();
                return Err(e.context(format!(
                    "trial {} ({what}) could not be torn down; stopping the run",
                    trial.index
                )));
            }
        };
        store.append(&record)?;
        outcome.ran += 1;
        if record.status == Status::Failed {
            outcome.failed += 1;
        }
        progress.finish_one(&summary_line(&record, &what));
    }
    progress.finish();
    Ok(outcome)
}

fn summary_line(r: &TrialRecord, what: &str) -> String {
    match r.status {
        Status::Failed => format!(
            "trial {} {what}: FAILED: {}",
            r.trial,
            r.error.as_deref().unwrap_or("")
        ),
        Status::Ok => {
            let phases: Vec<String> = r
                .phases
                .iter()
                .map(|p| format!("{} {:.2}s {:.0}/s", p.name, p.seconds, p.ops_per_sec()))
                .collect();
            format!("trial {} {what}: ok  {}", r.trial, phases.join("  "))
        }
    }
}
