//! Runs the plan: skips trials already recorded (`--resume`), records each trial the
//! moment it ends, reports progress, adds the adaptive rule's extra rounds, and stops
//! cleanly when asked. A [`Run`] owns one run's state; the [`Executor`] does each trial.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::events::{emit, Event};
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::results::record::{ConfigRecord, Status, TrialRecord, WorkloadRecord, SCHEMA_VERSION};
use crate::results::store::Store;
use crate::run::adaptive::{self, Rule};
use crate::run::executor::{Executor, FailedTrial, TrialError, TrialOutcome};
use crate::run::jobs::{Ended, Pool};
use crate::workload::{PhaseEvent, PhaseHook, RunControl};

#[derive(Debug, Default, PartialEq, Eq)]
pub struct RunOutcome {
    pub ran: usize,
    pub failed: usize,
    pub skipped: usize,
    pub interrupted: bool,
    /// Why each adaptive extra trial was added, in the order they ran.
    pub extra: Vec<String>,
}

/// One run of an experiment: what it needs (the spec, the store its trials go to,
/// the executor that does each trial, the stop control) and what it has done so far.
/// Built with [`Run::new`], then [`Run::execute`]d once.
pub struct Run<'a> {
    spec: &'a Spec,
    store: &'a mut Store,
    executor: &'a mut dyn Executor,
    ctl: &'a RunControl,
    outcome: RunOutcome,
    /// Every trial of the results directory: those recorded before and those run now.
    records: Vec<TrialRecord>,
    /// Position of the current trial in the whole run, for the progress output.
    n: usize,
    /// Trials side by side in child processes (`--jobs N`, N > 1); `None`: one at a
    /// time through `executor`.
    pool: Option<Pool>,
    /// Estimated seconds of work after the last trial, for the time left.
    after_trials: f64,
}

impl<'a> Run<'a> {
    pub fn new(
        spec: &'a Spec,
        store: &'a mut Store,
        executor: &'a mut dyn Executor,
        ctl: &'a RunControl,
    ) -> Self {
        Self {
            spec,
            store,
            executor,
            ctl,
            outcome: RunOutcome::default(),
            records: Vec::new(),
            n: 0,
            pool: None,
            after_trials: 0.0,
        }
    }

    /// Runs up to `pool.jobs()` trials at once in child processes instead of one at a
    /// time through the executor.
    pub fn concurrent(mut self, pool: Option<Pool>) -> Self {
        self.pool = pool.filter(|p| p.jobs() > 1);
        self
    }

    /// Estimated seconds the caller spends after the last trial (the crash lab), which
    /// the time left counts.
    pub fn after_trials(mut self, seconds: f64) -> Self {
        self.after_trials = seconds;
        self
    }

    /// Runs the planned trials not yet among `existing` (the records of a resumed
    /// run), then, with adaptive repetitions, the extra rounds the adaptive rule asks
    /// for.
    pub fn execute(mut self, trials: &[Trial], existing: &[TrialRecord]) -> Result<RunOutcome> {
        // However the run ends, it has ended for whoever draws its progress.
        let ran = self.execute_trials(trials, existing);
        emit(Event::RunEnds);
        ran.map(|()| self.outcome)
    }

    fn execute_trials(&mut self, trials: &[Trial], existing: &[TrialRecord]) -> Result<()> {
        let done = crate::results::store::done_indices(existing);
        let todo: Vec<Trial> = trials
            .iter()
            .filter(|t| !done.contains(&t.index))
            .copied()
            .collect();
        self.outcome.skipped = trials.len() - todo.len();
        let extra_done = existing.len().saturating_sub(self.outcome.skipped);
        let already = self.outcome.skipped + extra_done;
        let total = trials.len() + extra_done;
        emit(Event::RunBegins {
            total,
            done: already,
            after_seconds: self.after_trials,
        });
        if self.outcome.skipped > 0 {
            emit(Event::Resuming {
                done: already,
                total,
            });
        }
        self.records = existing.to_vec();
        self.n = already;
        self.run_batch(&todo)?;
        if let (Some(rule), false) = (Rule::of(self.spec), self.outcome.interrupted) {
            self.run_extra_rounds(&rule, trials.len())?;
        }
        Ok(())
    }

    /// Rounds of extra trials until the adaptive rule asks for none or the run stops.
    fn run_extra_rounds(&mut self, rule: &Rule, planned: usize) -> Result<()> {
        loop {
            let round = adaptive::next_round(self.spec, rule, &self.records, planned);
            if round.is_empty() {
                return Ok(());
            }
            for extra in &round {
                emit(Event::TrialAdded {
                    why: extra.why.clone(),
                });
                self.outcome.extra.push(extra.why.clone());
            }
            let trials: Vec<Trial> = round.iter().map(|e| e.trial).collect();
            if !self.run_batch(&trials)? {
                return Ok(());
            }
        }
    }

    /// Runs `trials` in order, one at a time or side by side; `false` when the run
    /// must stop (interrupted).
    fn run_batch(&mut self, trials: &[Trial]) -> Result<bool> {
        if self.pool.is_some() {
            return self.run_side_by_side(trials);
        }
        for trial in trials {
            if !self.run_one(trial)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Runs `trials` in child processes, up to the pool's jobs at once, each starting in
    /// plan order once it may share the host with every trial running; `false` when
    /// the run must stop (interrupted).
    fn run_side_by_side(&mut self, trials: &[Trial]) -> Result<bool> {
        let mut pool = self.pool.take().expect("a pool");
        let result = self.side_by_side(&mut pool, trials);
        self.pool = Some(pool);
        result
    }

    fn side_by_side(&mut self, pool: &mut Pool, trials: &[Trial]) -> Result<bool> {
        let mut queue: std::collections::VecDeque<Trial> = trials.iter().copied().collect();
        let mut stopping = false;
        let mut fatal: Option<String> = None;
        loop {
            if self.ctl.stop_requested() && !stopping {
                stopping = true;
                self.outcome.interrupted = true;
                pool.interrupt();
            }
            while !stopping && fatal.is_none() {
                let Some(next) = queue.front() else { break };
                let slot = pool.slot(self.spec, next);
                if !pool.may_start(slot) {
                    break;
                }
                let trial = queue.pop_front().expect("a queued trial");
                self.n += 1;
                emit(Event::TrialBegins {
                    n: self.n,
                    what: describe(self.spec, &trial),
                });
                if let Err(e) = pool.start(trial, slot) {
                    fatal = Some(format!("{e:#}"));
                    pool.interrupt();
                }
            }
            if pool.is_empty() {
                break;
            }
            let Some((trial, ended, beside)) = pool.wait(Duration::from_millis(200), true) else {
                continue;
            };
            match ended {
                Ended::Recorded(mut record) => {
                    record.concurrency = Some(beside);
                    let what = describe(self.spec, &trial);
                    self.record(&trial, *record, &what)?;
                }
                Ended::Interrupted => {
                    if !stopping {
                        stopping = true;
                        self.outcome.interrupted = true;
                        pool.interrupt();
                    }
                }
                Ended::Fatal(why) => {
                    // The others' devices are theirs to release: let them end.
                    emit(Event::TrialFatal { why: why.clone() });
                    fatal.get_or_insert(why);
                }
            }
        }
        if let Some(why) = fatal {
            anyhow::bail!(why);
        }
        Ok(!self.outcome.interrupted)
    }

    /// Runs and records one trial; `false` when the run must stop (interrupted).
    fn run_one(&mut self, trial: &Trial) -> Result<bool> {
        self.n += 1;
        if self.ctl.stop_requested() {
            self.outcome.interrupted = true;
            return Ok(false);
        }
        let what = describe(self.spec, trial);
        emit(Event::TrialBegins {
            n: self.n,
            what: what.clone(),
        });
        let started_at = chrono::Local::now().to_rfc3339();
        let clock = Instant::now();
        let ctl = self.ctl.clone().with_progress_hook(Some(phase_events()));
        let result = self.executor.run_trial(self.spec, trial, &ctl);
        let wall_seconds = clock.elapsed().as_secs_f64();
        let result = match result {
            Ok(done) => Ok(done),
            Err(TrialError::Failed(failed)) => Err(failed),
            Err(TrialError::Interrupted) => {
                self.outcome.interrupted = true;
                return Ok(false);
            }
            Err(TrialError::Fatal(e)) => {
                return Err(e.context(format!(
                    "trial {} ({what}) could not be torn down; stopping the run",
                    trial.index
                )));
            }
        };
        let record = trial_record(self.spec, trial, result, started_at, wall_seconds);
        self.record(trial, record, &what)?;
        Ok(true)
    }

    /// Stores the record of a trial that ran to its end.
    fn record(&mut self, trial: &Trial, mut record: TrialRecord, what: &str) -> Result<()> {
        // An engine that reports a zero or non-finite phase time measured nothing: the
        // trial is recorded as failed with the reason, never as a figure to average.
        if let Some(why) = record.exclude_if_invalid() {
            emit(Event::TrialExcluded {
                trial: trial.index,
                why,
            });
        }
        // A trial whose device daemon stalled measured the host, not the model: failed
        // with the reason, so it is shown in every report and never averaged.
        record.fail_if_stalled();
        self.store.append(&record)?;
        self.outcome.ran += 1;
        if record.status == Status::Failed {
            self.outcome.failed += 1;
        }
        emit(Event::TrialEnds {
            summary: summary_line(&record, what),
        });
        self.records.push(record);
        Ok(())
    }
}

/// The workload's phase boundaries as events, for whoever draws the progress.
fn phase_events() -> PhaseHook {
    PhaseHook::new(|ev| {
        if let PhaseEvent::Begin(name) = ev {
            emit(Event::PhaseBegins {
                name: name.to_string(),
            });
        }
    })
}

/// `internal / small / rep 2`, `internal / small / crash recording`.
fn describe(spec: &Spec, trial: &Trial) -> String {
    let config = &spec.configs[trial.config];
    let workload = &spec.workloads[trial.workload];
    if trial.recording {
        format!("{} / {} / crash recording", config.label, workload.name)
    } else {
        format!("{} / {} / rep {}", config.label, workload.name, trial.rep)
    }
}

/// The record of a trial that ran to its end, successfully or not.
pub(crate) fn trial_record(
    spec: &Spec,
    trial: &Trial,
    result: Result<TrialOutcome, Box<FailedTrial>>,
    started_at: String,
    wall_seconds: f64,
) -> TrialRecord {
    let config = &spec.configs[trial.config];
    let workload = &spec.workloads[trial.workload];
    let base = |status: Status| TrialRecord {
        schema_version: SCHEMA_VERSION,
        trial: trial.index,
        rep: trial.rep,
        crash_recording: trial.recording,
        config: ConfigRecord::of(config),
        workload: WorkloadRecord {
            kind: workload.engine.kind().to_string(),
            name: workload.name.clone(),
            params: workload.engine.params(),
            durable: workload.durable,
            neighbour_rate: workload.neighbour_rate,
        },
        layout: serde_json::Value::Null,
        verified: None,
        phases: Vec::new(),
        memory: None,
        emulation: None,
        monitor: None,
        writeback: None,
        neighbour: None,
        concurrency: None,
        status,
        error: None,
        started_at: started_at.clone(),
        wall_seconds,
    };
    match result {
        Ok(TrialOutcome {
            layout,
            verified,
            phases,
            memory,
            emulation,
            monitor,
            writeback,
            neighbour,
        }) => TrialRecord {
            layout,
            verified,
            phases,
            memory,
            emulation,
            monitor,
            writeback,
            neighbour,
            ..base(Status::Ok)
        },
        Err(failed) => TrialRecord {
            layout: failed.layout,
            verified: failed.verified,
            emulation: failed.emulation,
            monitor: failed.monitor,
            error: Some(failed.error),
            ..base(Status::Failed)
        },
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
                writeback: None,
                neighbour: None,
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
            Run::new(&self.spec, &mut self.store, exec, ctl).execute(&self.trials, existing)
        }

        fn recorded(&self) -> Vec<TrialRecord> {
            crate::results::store::load_records(self.tmp.path()).unwrap()
        }
    }

    /// What a run tells whoever draws its progress.
    #[derive(Default)]
    struct Told(std::sync::Mutex<Vec<Event>>);

    impl crate::events::Reporter for Told {
        fn report(&self, event: &Event) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    #[test]
    fn a_run_tells_its_progress_as_typed_events_and_always_ends() {
        let told = std::sync::Arc::new(Told::default());
        let mut f = Fixture::new();
        let first = f.run(&mut mock(), &[], &RunControl::new());
        let records = f.recorded();
        let mut f2 = Fixture::new();
        let mut exec = Mock {
            fatal_at: Some(2),
            ..mock()
        };
        let (out, fatal) = crate::events::scoped(told.clone(), || {
            // Resumed after trial 0: three left, the third of which cannot be torn down.
            let out = f2.run(&mut mock(), &records[..1], &RunControl::new());
            let fatal = Fixture::new().run(&mut exec, &[], &RunControl::new());
            (out, fatal)
        });
        assert!(first.is_ok() && out.is_ok() && fatal.is_err());
        let told = told.0.lock().unwrap();
        let kinds: Vec<String> = told
            .iter()
            .map(|e| match e {
                Event::RunBegins { total, done, .. } => format!("begins {done}/{total}"),
                Event::Resuming { done, total } => format!("resuming {done}/{total}"),
                Event::TrialBegins { n, .. } => format!("trial {n}"),
                Event::TrialEnds { summary } => format!("ended {}", &summary[..7]),
                Event::RunEnds => "ends".into(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "begins 1/4",
                "resuming 1/4",
                "trial 2",
                "ended trial 1",
                "trial 3",
                "ended trial 2",
                "trial 4",
                "ended trial 3",
                "ends",
                // A run that stops on a trial it cannot tear down still ends.
                "begins 0/4",
                "trial 1",
                "ended trial 0",
                "trial 2",
                "ended trial 1",
                "trial 3",
                "ends",
            ]
        );
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
                writeback: None,
                neighbour: None,
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
        let text = "repetitions = { min = 3, max = 6, target_cv = 0.03 }\nsuspect_below = \"100ms\"\n[filesystem]\nsize = \"1G\"\n[journal]\nplacement = [\"internal\", \"ramdisk\"]\n[[workload]]\nkind = \"fdtree\"\nname = \"w\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "t.toml").unwrap();
        let trials = crate::experiment::plan::plan(&spec);
        assert_eq!(trials.len(), 6, "the plan holds the min rounds");
        let mut store = Store::create(tmp.path(), &spec, "").unwrap();
        let mut exec = Noisy {
            seen: vec![],
            interrupt_at: Some(7),
        };
        let ctl = RunControl::new();
        let out = Run::new(&spec, &mut store, &mut exec, &ctl)
            .execute(&trials, &[])
            .unwrap();
        assert!(out.interrupted);
        assert_eq!(out.ran, 7);
        assert!(
            out.extra[0].starts_with(
                "w/ramdisk: file_create CV 21.7% > 3%, file_create vs internal undecided against ±"
            ) && out.extra[0].ends_with("reaches across the band): trial 4 of at most 6"),
            "{}",
            out.extra[0]
        );
        // Resume: the decisions come back from the records.
        let (mut store, existing) = Store::resume(tmp.path(), &spec).unwrap();
        let mut exec = Noisy {
            seen: vec![],
            interrupt_at: None,
        };
        let out = Run::new(&spec, &mut store, &mut exec, &ctl)
            .execute(&trials, &existing)
            .unwrap();
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
    fn a_results_directory_with_trials_is_not_overwritten() {
        let f = Fixture::new();
        std::fs::write(f.tmp.path().join("trials.jsonl"), "{}\n").unwrap();
        let err = Store::create(f.tmp.path(), &f.spec, "").err().unwrap();
        assert!(err.to_string().contains("--resume"), "{err}");
    }
}
