//! Runs the plan: skips trials already recorded (`--resume`), records each trial the
//! moment it ends, reports progress, and stops cleanly when asked.

use std::io::IsTerminal;
use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::results::record::{Status, TrialRecord, WorkloadRecord, SCHEMA_VERSION};
use crate::results::store::Store;
use crate::run::executor::{Executor, TrialError, TrialOutcome};
use crate::workload::RunControl;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunOutcome {
    pub ran: usize,
    pub failed: usize,
    pub skipped: usize,
    pub interrupted: bool,
    /// Why each adaptive extra trial was added, in the order they ran.
    pub extra: Vec<String>,
}

/// Progress output: a bar on a terminal, plain lines otherwise (logs, CI).
enum Progress {
    Bar(ProgressBar),
    Lines {
        total: usize,
        started: Instant,
        done_at_start: usize,
    },
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
            Progress::Lines {
                total,
                started: Instant::now(),
                done_at_start: done,
            }
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
            Progress::Lines {
                total,
                started,
                done_at_start,
            } => {
                // ETA from the trials this process ran, like the bar's.
                let ran = n.saturating_sub(done_at_start + 1);
                let eta = if ran > 0 {
                    let per = started.elapsed().as_secs_f64() / ran as f64;
                    format!(", ETA {}", format_eta(per * (total + 1 - n) as f64))
                } else {
                    String::new()
                };
                eprintln!("[{n}/{total}{eta}] {what} ...")
            }
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

    /// Adaptive extra trials make the run longer than planned.
    fn grow(&mut self, by: usize) {
        match self {
            Progress::Bar(b) => b.inc_length(by as u64),
            Progress::Lines { total, .. } => *total += by,
            Progress::Quiet => {}
        }
    }
}

/// Runs the planned trials not yet recorded, then, with adaptive repetitions, extra
/// rounds for the (configuration, workload) pairs that still need them.
pub fn run(
    spec: &Spec,
    trials: &[Trial],
    existing: &[TrialRecord],
    store: &mut Store,
    executor: &mut dyn Executor,
    ctl: &RunControl,
    quiet: bool,
) -> Result<RunOutcome> {
    let done = crate::results::store::done_indices(existing);
    let todo: Vec<Trial> = trials
        .iter()
        .filter(|t| !done.contains(&t.index))
        .copied()
        .collect();
    let mut outcome = RunOutcome {
        skipped: trials.len() - todo.len(),
        ..RunOutcome::default()
    };
    let extra_done = existing.len().saturating_sub(outcome.skipped);
    let mut progress = Progress::new(
        trials.len() + extra_done,
        outcome.skipped + extra_done,
        quiet,
    );
    if outcome.skipped > 0 {
        progress.say(&format!(
            "resuming: {} of {} trials already recorded",
            outcome.skipped + extra_done,
            trials.len() + extra_done
        ));
    }
    let mut all: Vec<TrialRecord> = existing.to_vec();
    let mut n = outcome.skipped + extra_done;
    for trial in &todo {
        n += 1;
        match run_one(
            spec,
            trial,
            n,
            store,
            executor,
            ctl,
            &progress,
            &mut outcome,
        )? {
            Some(r) => all.push(r),
            None => break,
        }
    }
    if let (Some(rule), false) = (crate::run::adaptive::Rule::of(spec), outcome.interrupted) {
        let baseline = spec
            .baseline
            .clone()
            .or_else(|| spec.configs.first().map(|c| c.label.clone()));
        'rounds: loop {
            let needs = crate::run::adaptive::needs_more(&all, baseline.as_deref(), &rule);
            let mut round: Vec<(Trial, String)> = Vec::new();
            let mut next = all
                .iter()
                .map(|r| r.trial.saturating_add(1))
                .max()
                .unwrap_or(0)
                .max(trials.len());
            // Shuffled with the seed and the round's first index, so a resumed run
            // makes the same order from the same records.
            let mut order: Vec<&crate::run::adaptive::Need> = needs.iter().collect();
            let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ (next as u64).rotate_left(32));
            order.shuffle(&mut rng);
            for need in order {
                let config = spec.configs.iter().position(|c| c.label == need.config);
                let workload = spec.workloads.iter().position(|w| w.name == need.workload);
                let (Some(config), Some(workload)) = (config, workload) else {
                    continue; // records of another experiment: not ours to extend
                };
                let trial = Trial {
                    index: next,
                    config,
                    workload,
                    rep: need.trials + 1,
                };
                next += 1;
                round.push((trial, need.message(rule.max)));
            }
            if round.is_empty() {
                break;
            }
            progress.grow(round.len());
            for (trial, why) in &round {
                progress.say(why);
                outcome.extra.push(why.clone());
                n += 1;
                match run_one(
                    spec,
                    trial,
                    n,
                    store,
                    executor,
                    ctl,
                    &progress,
                    &mut outcome,
                )? {
                    Some(r) => all.push(r),
                    None => break 'rounds,
                }
            }
        }
    }
    progress.finish();
    Ok(outcome)
}

/// Runs and records one trial; `None` when the run must stop (interrupted).
#[allow(clippy::too_many_arguments)]
fn run_one(
    spec: &Spec,
    trial: &Trial,
    n: usize,
    store: &mut Store,
    executor: &mut dyn Executor,
    ctl: &RunControl,
    progress: &Progress,
    outcome: &mut RunOutcome,
) -> Result<Option<TrialRecord>> {
    if ctl.stop_requested() {
        outcome.interrupted = true;
        return Ok(None);
    }
    let config = &spec.configs[trial.config];
    let workload = &spec.workloads[trial.workload];
    let what = format!("{} / {} / rep {}", config.label, workload.name, trial.rep);
    progress.start(n, &what);
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
            durable: workload.durable,
        },
        layout: serde_json::Value::Null,
        verified: None,
        phases: Vec::new(),
        memory: None,
        emulation: None,
        monitor: None,
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
            memory,
            emulation,
            monitor,
        }) => TrialRecord {
            layout,
            verified,
            phases,
            memory,
            emulation,
            monitor,
            ..base(Status::Ok)
        },
        Err(TrialError::Failed(failed)) => TrialRecord {
            layout: failed.layout,
            verified: failed.verified,
            emulation: failed.emulation,
            monitor: failed.monitor,
            error: Some(failed.error),
            ..base(Status::Failed)
        },
        Err(TrialError::Interrupted) => {
            progress.finish();
            outcome.interrupted = true;
            return Ok(None);
        }
        Err(TrialError::Fatal(e)) => {
            progress.finish();
            return Err(e.context(format!(
                "trial {} ({what}) could not be torn down; stopping the run",
                trial.index
            )));
        }
    };
    let mut record = record;
    // An engine that reports a zero or non-finite phase time measured nothing: the
    // trial is recorded as failed with the reason, never as a figure to average.
    if let Some(why) = record.exclude_if_invalid() {
        progress.say(&format!("trial {}: {why}", trial.index));
    }
    store.append(&record)?;
    outcome.ran += 1;
    if record.status == Status::Failed {
        outcome.failed += 1;
    }
    progress.finish_one(&summary_line(&record, &what));
    Ok(Some(record))
}

fn format_eta(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::executor::TrialOutcome;
    use crate::workload::PhaseResult;

    /// Scripted outcomes by trial index; anything else succeeds.
    struct Mock {
        fail: Vec<usize>,
        interrupt_at: Option<usize>,
        fatal_at: Option<usize>,
        seen: Vec<usize>,
    }

    impl Executor for Mock {
        fn run_trial(
            &mut self,
            _spec: &Spec,
            trial: &Trial,
            _ctl: &RunControl,
            _say: &mut dyn FnMut(&str),
        ) -> Result<TrialOutcome, TrialError> {
            self.seen.push(trial.index);
            if Some(trial.index) == self.interrupt_at {
                return Err(TrialError::Interrupted);
            }
            if Some(trial.index) == self.fatal_at {
                return Err(TrialError::Fatal(anyhow::anyhow!("loop busy")));
            }
            if self.fail.contains(&trial.index) {
                return Err(TrialError::Failed(Box::new(
                    crate::run::executor::FailedTrial {
                        error: "mkdir: No space left on device".into(),
                        layout: serde_json::Value::Null,
                        verified: None,
                        emulation: None,
                        monitor: None,
                    },
                )));
            }
            Ok(TrialOutcome {
                layout: serde_json::json!({"fs_device": "/dev/loop9"}),
                verified: None,
                memory: None,
                emulation: None,
                monitor: None,
                phases: vec![PhaseResult {
                    name: "dir_create".into(),
                    seconds: 1.0 + trial.index as f64,
                    ops: 10,
                    bytes: 0,
                    op_unit: "dir creates".into(),
                    ..PhaseResult::default()
                }],
            })
        }
    }

    fn mock() -> Mock {
        Mock {
            fail: vec![],
            interrupt_at: None,
            fatal_at: None,
            seen: vec![],
        }
    }

    /// A two-configuration, two-repetition experiment with a fresh results directory.
    struct Fixture {
        tmp: tempfile::TempDir,
        spec: Spec,
        trials: Vec<Trial>,
        store: Store,
    }

    impl Fixture {
        fn new() -> Self {
            let tmp = tempfile::tempdir().unwrap();
            let text = "repetitions = 2\norder = \"sequential\"\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = [\"internal\", \"ramdisk\"]\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n";
            let spec = crate::experiment::spec::parse(text, "t.toml").unwrap();
            let trials = crate::experiment::plan::plan(&spec);
            let store = Store::create(tmp.path(), &spec, "").unwrap();
            Self {
                tmp,
                spec,
                trials,
                store,
            }
        }

        fn run(
            &mut self,
            exec: &mut Mock,
            existing: &[TrialRecord],
            ctl: &RunControl,
        ) -> Result<RunOutcome> {
            run(
                &self.spec,
                &self.trials,
                existing,
                &mut self.store,
                exec,
                ctl,
                true,
            )
        }

        fn recorded(&self) -> Vec<TrialRecord> {
            crate::results::store::load_records(self.tmp.path()).unwrap()
        }
    }

    #[test]
    fn every_trial_is_recorded_in_plan_order_and_failures_do_not_stop_the_run() {
        let mut f = Fixture::new();
        let mut exec = Mock {
            fail: vec![1],
            ..mock()
        };
        let out = f.run(&mut exec, &[], &RunControl::new()).unwrap();
        assert_eq!(
            out,
            RunOutcome {
                ran: 4,
                failed: 1,
                skipped: 0,
                interrupted: false,
                extra: vec![],
            }
        );
        let recs = f.recorded();
        assert_eq!(
            recs.iter().map(|r| r.trial).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(recs[1].status, Status::Failed);
        assert!(recs[1].error.as_deref().unwrap().contains("No space"));
        assert_eq!(recs[0].config.label, "internal");
        assert_eq!(recs[2].config.label, "ramdisk");
        assert_eq!(recs[3].rep, 2);
        assert_eq!(recs[3].phases[0].seconds, 4.0);
        assert_eq!(recs[0].schema_version, SCHEMA_VERSION);
    }

    #[test]
    fn an_interrupted_trial_is_not_recorded_and_resume_runs_only_the_rest() {
        let mut f = Fixture::new();
        let mut exec = Mock {
            interrupt_at: Some(2),
            ..mock()
        };
        let out = f.run(&mut exec, &[], &RunControl::new()).unwrap();
        assert!(out.interrupted);
        assert_eq!(out.ran, 2);
        let (store, existing) = Store::resume(f.tmp.path(), &f.spec).unwrap();
        f.store = store;
        assert_eq!(existing.len(), 2);
        let mut exec = mock();
        let out = f.run(&mut exec, &existing, &RunControl::new()).unwrap();
        assert_eq!(exec.seen, [2, 3], "only the missing trials run");
        assert_eq!(out.skipped, 2);
        assert_eq!(
            f.recorded().iter().map(|r| r.trial).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }

    #[test]
    fn a_stop_request_before_a_trial_ends_the_run() {
        let mut f = Fixture::new();
        let ctl = RunControl::new();
        ctl.request_stop();
        let mut exec = mock();
        let out = f.run(&mut exec, &[], &ctl).unwrap();
        assert!(out.interrupted);
        assert!(exec.seen.is_empty());
    }

    #[test]
    fn a_fatal_error_stops_the_run_with_context() {
        let mut f = Fixture::new();
        let mut exec = Mock {
            fatal_at: Some(1),
            ..mock()
        };
        let err = f.run(&mut exec, &[], &RunControl::new()).unwrap_err();
        assert!(
            format!("{err:#}").contains("could not be torn down"),
            "{err:#}"
        );
        assert_eq!(exec.seen, [0, 1]);
        assert_eq!(f.recorded().len(), 1);
    }

    /// Steady rates for the first configuration, ±20% for the others.
    struct Noisy {
        seen: Vec<(usize, u32)>,
        interrupt_at: Option<usize>,
    }

    impl Executor for Noisy {
        fn run_trial(
            &mut self,
            _spec: &Spec,
            trial: &Trial,
            _ctl: &RunControl,
            _say: &mut dyn FnMut(&str),
        ) -> Result<TrialOutcome, TrialError> {
            if Some(trial.index) == self.interrupt_at {
                return Err(TrialError::Interrupted);
            }
            self.seen.push((trial.config, trial.rep));
            let rate = match (trial.config, trial.rep % 2) {
                (0, _) => 1000.0,
                (_, 0) => 800.0,
                _ => 1200.0,
            };
            Ok(TrialOutcome {
                layout: serde_json::Value::Null,
                verified: None,
                memory: None,
                emulation: None,
                monitor: None,
                phases: vec![PhaseResult {
                    name: "file_create".into(),
                    seconds: 1000.0 / rate,
                    ops: 1000,
                    op_unit: "file creates".into(),
                    ..PhaseResult::default()
                }],
            })
        }
    }

    #[test]
    fn adaptive_runs_stop_steady_configurations_at_min_and_noisy_ones_at_max() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "repetitions = { min = 3, max = 6, target_cv = 0.03 }\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = [\"internal\", \"ramdisk\"]\n[[workload]]\nkind = \"fdtree\"\nname = \"w\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "t.toml").unwrap();
        let trials = crate::experiment::plan::plan(&spec);
        assert_eq!(trials.len(), 6, "the plan holds the min rounds");
        let mut store = Store::create(tmp.path(), &spec, "").unwrap();
        let mut exec = Noisy {
            seen: vec![],
            interrupt_at: Some(7),
        };
        let ctl = RunControl::new();
        let out = run(&spec, &trials, &[], &mut store, &mut exec, &ctl, true).unwrap();
        assert!(out.interrupted);
        assert_eq!(out.ran, 7);
        assert_eq!(
            out.extra[0],
            "w/ramdisk: file_create CV 21.7% > 3%, file_create vs internal undecided: trial 4 of at most 6"
        );
        // Resume: the decisions come back from the records.
        let (mut store, existing) = Store::resume(tmp.path(), &spec).unwrap();
        let mut exec = Noisy {
            seen: vec![],
            interrupt_at: None,
        };
        let out = run(&spec, &trials, &existing, &mut store, &mut exec, &ctl, true).unwrap();
        assert!(!out.interrupted);
        assert_eq!(
            exec.seen,
            [(1, 5), (1, 6)],
            "only the missing extra trials run"
        );
        assert_eq!(out.extra.len(), 2);
        assert!(
            out.extra[1].ends_with("trial 6 of at most 6"),
            "{:?}",
            out.extra
        );
        let recs = crate::results::store::load_records(tmp.path()).unwrap();
        let count = |label: &str| recs.iter().filter(|r| r.config.label == label).count();
        assert_eq!((count("internal"), count("ramdisk")), (3, 6));
        assert_eq!(
            recs.iter().map(|r| r.trial).collect::<Vec<_>>(),
            (0..9).collect::<Vec<_>>(),
            "extra trials take the next free indices"
        );
        let reps: Vec<u32> = recs[6..].iter().map(|r| r.rep).collect();
        assert_eq!(reps, [4, 5, 6]);
    }

    #[test]
    fn eta_is_human_readable() {
        assert_eq!(format_eta(42.4), "42s");
        assert_eq!(format_eta(125.0), "2m05s");
        assert_eq!(format_eta(7380.0), "2h03m");
    }

    #[test]
    fn a_results_directory_with_trials_is_not_overwritten() {
        let f = Fixture::new();
        std::fs::write(f.tmp.path().join("trials.jsonl"), "{}\n").unwrap();
        let err = Store::create(f.tmp.path(), &f.spec, "").err().unwrap();
        assert!(err.to_string().contains("--resume"), "{err}");
    }
}
