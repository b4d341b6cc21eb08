//! `jbench run`: the arguments as a [`RunRequest`], whose steps (plan, open, execute,
//! conclude) are the library's, and what each step says: warnings, the run's header,
//! then the text report, report.html and the exit status that says what happened to
//! the trials.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::{ExecutorKind, RunArgs, SpecSource, TrialArgs};
use crate::cli::exit::is_broken_pipe;
use crate::experiment::spec;
use crate::report::{self, ReportOptions};
use crate::results::layout;
use crate::results::Results;
use crate::run::child::{run_child, ChildEnd, ChildTrial};
use crate::run::ending::Ending;
use crate::run::request::{Planned, RunRequest};
use crate::scale::attempt::ShardAttempt;
use crate::units::count;

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = args.source.applied(spec::parse(&original, &origin)?);
    let shard = match &args.shard {
        Some(arg) => Some(ShardAttempt::resolve(arg, args.shard_by, &spec)?),
        None => None,
    };
    let req = RunRequest {
        spec,
        original,
        shard,
        resume: args.resume.clone(),
        results: args.results.clone(),
        real: args.executor == ExecutorKind::Rig,
        jobs: args.jobs,
        destroy: args.destroy.clone(),
        verbose: args.verbose,
    };
    let planned = req.plan()?;
    for w in &planned.warnings {
        eprintln!("jbench: warning: {w}");
    }
    crate::cli::Terminal::install(args.quiet);
    let mut session = req.open(&planned)?;
    let dir = session.dir().to_path_buf();
    if let Some(s) = &req.shard {
        eprintln!(
            "jbench: shard {}/{} by {} (index from {}): {} of the plan's {} trials",
            s.index,
            s.count,
            s.by,
            s.source,
            planned.trials.len(),
            planned.plan_len
        );
    }
    if !args.quiet {
        eprintln!(
            "jbench: {}; results in {}",
            what_runs(&req, &planned),
            dir.display()
        );
        eprintln!(
            "jbench: {}",
            crate::run::preflight::work_dir_line(&req.spec)
        );
    }
    if req.spec.crash.requested && !req.real {
        eprintln!("jbench: the scripted executor records no writes: the crash lab does not run");
    }
    let outcome = req.execute(&mut session, &planned)?;
    let concluded = req.conclude(&session, &planned, &outcome)?;
    if let Some(why) = &concluded.unsealed {
        eprintln!("jbench: {why}");
    }
    let done = concluded.done;
    let printed = print_run_report(&done.results, &done.opts, args.verbose);
    say_ending(&done.ending, "run", &args.source, &dir, "trial(s)");
    keep_status(printed, done.ending.exit_code())
}

/// "40 trials, up to 2 at once (4 configurations x 2 workloads x 4 repetitions, plus
/// 8 crash recordings with the write log on, then the crash lab: up to 30 states each)".
fn what_runs(req: &RunRequest, planned: &Planned) -> String {
    let spec = &req.spec;
    format!(
        "{}{} ({} x {} x {}{})",
        count(planned.trials.len() as u64, "trial"),
        if req.jobs > 1 {
            format!(", up to {} at once", req.jobs)
        } else {
            String::new()
        },
        count(spec.configs.len() as u64, "configuration"),
        count(spec.workloads.len() as u64, "workload"),
        repetitions(spec),
        if planned.recordings > 0 {
            format!(
                ", plus {} with the write log on, then the crash lab: up to {} each",
                count(planned.recordings as u64, "crash recording"),
                count(spec.crash.states, "state")
            )
        } else {
            String::new()
        },
    )
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
    let end = run_child(ChildTrial {
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
    match &end {
        // Standard output is the pipe the run reads the record from.
        ChildEnd::Record(record) => println!("{}", serde_json::to_string(record)?),
        ChildEnd::Fatal(e) => eprintln!("jbench: {e:#}"),
        ChildEnd::Interrupted => {}
    }
    Ok(ExitCode::from(end.code() as u8))
}

/// The answer at a glance, the warnings and the answer again (`verbose`: the whole
/// text report in the glance's place), then where the HTML report and results are.
pub(crate) fn print_run_report(
    results: &Results,
    opts: &ReportOptions,
    verbose: bool,
) -> Result<()> {
    let mut a = report::analyse(&results.records, opts).with_crash(&results.crash);
    a.environment = results.environment();
    outln!("{}", report::run_end::render(&a, &results.dir, verbose));
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
