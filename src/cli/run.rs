//! `jbench run`: checks, the shard of a sharded run, the run itself (a
//! [`crate::run::session::Session`]), then the text report, report.html and the exit
//! status that says what happened to the trials.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::{ExecutorKind, RunArgs, SpecSource, TrialArgs};
use crate::cli::exit::is_broken_pipe;
use crate::experiment::{estimate, plan, spec};
use crate::report::{self, Format, ReportOptions};
use crate::results::fingerprint::Fingerprint;
use crate::results::layout;
use crate::results::Results;
use crate::run::child::{run_child, ChildTrial};
use crate::run::ending::Ending;
use crate::run::executor::Executor;
use crate::run::jobs::{ChildCommand, Pool};
use crate::run::preflight;
use crate::run::scripted::ScriptedExecutor;
use crate::run::session::{self, LabAfter, Session};
use crate::scale::attempt::ShardAttempt;
use crate::scale::seal;
use crate::units::count;

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = spec::parse(&original, &origin)?;
    let shard = match &args.shard {
        Some(arg) => Some(ShardAttempt::resolve(arg, args.shard_by, &spec)?),
        None => None,
    };
    // The scripted executor provisions nothing: no root, tools or directories needed.
    let real = args.executor == ExecutorKind::Rig;
    if real && spec.crash.requested {
        // Refused before anything runs: hours of timed trials, then no crash half.
        if let Some(refused) = crate::crash::campaign::refusals(&spec) {
            anyhow::bail!(
                "{refused}\nThe experiment's [crash] table asks for the crash lab; give those configurations emulated disks or remove [crash]."
            );
        }
    }
    let results_dir = match &shard {
        Some(s) if args.resume.is_none() && args.results.is_none() => {
            let dir = s.default_results_dir(&spec.name);
            preflight::check_results_dir_trusted(&dir)?;
            dir
        }
        _ => session::results_dir(&args.resume, &args.results, &spec.name)?,
    };
    if let (None, Some(dir)) = (&shard, &args.resume) {
        // The whole plan resumed into one shard's attempt would break its seal.
        if let Some(s) = seal::read_seal(dir)? {
            anyhow::bail!(
                "{} is the sealed attempt of shard {}/{}; resume it with --shard {}/{} --shard-by {}",
                dir.display(),
                s.shard,
                s.shards,
                s.shard,
                s.shards,
                s.shard_by
            );
        }
    }
    if real {
        for w in session::prepare(&spec, "jbench run", &args.destroy)? {
            eprintln!("jbench: warning: {w}");
        }
    }
    let mut trials = plan::plan(&spec);
    if let Some(s) = &shard {
        trials = s.trials(&spec, &trials);
        if args.resume.is_some() {
            s.check_resumed(&results_dir)?;
        }
    }
    let recordings = trials.iter().filter(|t| t.recording).count();
    let lab = if spec.crash.requested && real {
        estimate::lab_seconds(recordings, spec.crash.states)
    } else {
        0.0
    };
    crate::cli::Terminal::install(args.quiet);
    let mut session =
        Session::open(&spec, &original, &results_dir, args.resume.is_some())?.lab_after(lab);
    let dir = session.dir().to_path_buf();
    if let Some(s) = &shard {
        s.check_existing(&dir, &trials, session.existing())?;
        eprintln!(
            "jbench: shard {}/{} by {} (index from {}): {} of the plan's {} trials",
            s.index,
            s.count,
            s.by,
            s.source,
            trials.len(),
            plan::plan(&spec).len()
        );
    }
    if !args.quiet {
        eprintln!(
            "jbench: {}{} ({} x {} x {}{}); results in {}",
            count(trials.len() as u64, "trial"),
            if args.jobs > 1 {
                format!(", up to {} at once", args.jobs)
            } else {
                String::new()
            },
            count(spec.configs.len() as u64, "configuration"),
            count(spec.workloads.len() as u64, "workload"),
            repetitions(&spec),
            if recordings > 0 {
                format!(
                    ", plus {} with the write log on, then the crash lab: up to {} each",
                    count(recordings as u64, "crash recording"),
                    count(spec.crash.states, "state")
                )
            } else {
                String::new()
            },
            dir.display()
        );
    }
    let outcome = {
        let mut exec: Box<dyn Executor> = match args.executor {
            ExecutorKind::Rig => {
                Box::new(session.rig_executor(args.destroy.clone(), args.verbose)?)
            }
            ExecutorKind::Scripted => Box::new(ScriptedExecutor),
        };
        let pool = if args.jobs > 1 {
            Some(Pool::new(
                args.jobs.into(),
                ChildCommand {
                    exe: crate::rig::emulated::daemon_binary()?,
                    dir: dir.clone(),
                    scripted: !real,
                    destroy: args.destroy.clone(),
                    verbose: args.verbose,
                    shown: Default::default(),
                },
            ))
        } else {
            None
        };
        if spec.crash.requested && !real {
            eprintln!(
                "jbench: the scripted executor records no writes: the crash lab does not run"
            );
        }
        let lab = (spec.crash.requested && real).then(|| LabAfter {
            opts: &spec.crash,
            seed: spec.crash.effective_seed(spec.seed),
            only_recordings: true,
        });
        session.run(exec.as_mut(), &trials, pool, lab)?
    };
    let lab = &outcome.lab;
    if let (Some(s), false) = (&shard, outcome.interrupted()) {
        if lab.failed.is_empty() {
            s.seal(&dir, &spec, &trials)?;
        } else {
            eprintln!(
                "jbench: shard {}/{} not sealed: the crash lab failed on {}; resume it to try again",
                s.index,
                s.count,
                lab.failed
                    .iter()
                    .map(|(c, w)| format!("{c} / {w}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if args.resume.is_some() {
        // A merged directory: the trials run here are this machine's, which may not
        // be the shards' (merge.json; nothing happens to an ordinary directory).
        let here = Fingerprint::of_spec(&spec);
        crate::results::merged::record_local_trials(&dir, &session.records()?, &here)?;
    }
    let (results, opts) = session.finish()?;
    let ending = Ending::of(&outcome, &results.records, &results.crash);
    let printed = print_run_report(&results, &opts);
    say_ending(&ending, "run", &args.source, &dir, "trial(s)");
    keep_status(printed, ending.exit_code())
}

/// The run's status, whatever became of the report: a closed or full standard output
/// must not hide what happened to the trials (the results are on disk either way).
pub(crate) fn keep_status(printed: Result<()>, code: ExitCode) -> Result<ExitCode> {
    match printed {
        Ok(()) => Ok(code),
        Err(e) if code == ExitCode::SUCCESS => Err(e),
        Err(e) => {
            if !is_broken_pipe(&e) {
                eprintln!("jbench: error: {e:#}");
            }
            Ok(code)
        }
    }
}

/// `3 repetitions`, or `3..10 repetitions, adaptive to a rate CV of 3.0%`.
fn repetitions(spec: &spec::Spec) -> String {
    match spec.adaptive {
        Some(a) => format!(
            "{}..{} repetitions, adaptive to a rate CV of {:.1}%",
            a.min,
            a.max,
            a.target_cv * 100.0
        ),
        None => count(spec.repetitions, "repetition"),
    }
}

/// The tables, the HTML report's path and the results directory, on standard output.
/// `jbench trial` (hidden): one trial of a `jbench run --jobs N`.
pub fn trial(args: TrialArgs) -> Result<ExitCode> {
    let code = run_child(ChildTrial {
        dir: args.results,
        trial: crate::experiment::plan::Trial {
            index: args.index,
            config: args.config,
            workload: args.workload,
            rep: args.rep,
            recording: args.recording,
        },
        scripted: args.executor == ExecutorKind::Scripted,
        destroy: args.destroy,
        verbose: args.verbose,
        show_build: args.show_build,
        alone: args.alone,
    })?;
    Ok(ExitCode::from(code as u8))
}

pub(crate) fn print_run_report(results: &Results, opts: &ReportOptions) -> Result<()> {
    outln!(
        "{}",
        report::environment::render_results(results, opts, Format::Table)
    );
    let html_path = layout::report_html(&results.dir);
    match report::html::render_results(results, opts)
        .and_then(|page| Ok(std::fs::write(&html_path, page)?))
    {
        Ok(()) => outln!("HTML report: {}", html_path.display()),
        Err(e) => eprintln!(
            "jbench: warning: cannot write {}: {e:#}",
            html_path.display()
        ),
    }
    outln!("results: {}", results.dir.display());
    Ok(())
}

/// What `ending` means, on stderr, in the words of `jbench COMMAND` (`trials`: what its
/// trials are called); nothing when all is well.
pub(crate) fn say_ending(
    ending: &Ending,
    command: &str,
    source: &SpecSource,
    dir: &Path,
    trials: &str,
) {
    match ending {
        Ending::Interrupted => {
            let again = match (&source.spec, &source.preset) {
                (Some(p), _) => p.display().to_string(),
                (None, Some(p)) => format!("--preset {p}"),
                (None, None) => String::new(),
            };
            eprintln!(
                "jbench: interrupted; everything was released. Finish with: jbench {command} {again} --resume {}",
                dir.display()
            );
        }
        Ending::NothingMeasured(why) => eprintln!(
            "jbench: {why}; nothing was measured (errors in {}/trials.jsonl)",
            dir.display()
        ),
        Ending::TrialsFailed(n) => eprintln!(
            "jbench: {n} {trials} failed; see the `error` field in {}/trials.jsonl and the messages above",
            dir.display()
        ),
        Ending::LabFailed(failed) => eprintln!(
            "jbench: the crash lab failed on {} recording(s); see the messages above",
            failed.len()
        ),
        Ending::Lost(lines) | Ending::Hung(lines) => {
            for l in lines {
                eprintln!("jbench: {l}");
            }
        }
        Ending::Done => {}
    }
}
