//! `jbench run`: checks, the results directory, the run itself (through
//! [`crate::run::runner::Run`]), then summary.csv, the text report, report.html and
//! the exit status that says what happened to the trials.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::{ExecutorKind, RunArgs};
use crate::cli::exit::is_broken_pipe;
use crate::cli::report::report_options;
use crate::experiment::{plan, spec};
use crate::report::{self, Format, ReportOptions};
use crate::results::record::TrialRecord;
use crate::results::{layout, store};
use crate::run::executor::{Executor, RigExecutor};
use crate::run::runner::{Run, RunOutcome};
use crate::run::scripted::ScriptedExecutor;
use crate::run::{interrupt, preflight};

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = spec::parse(&original, &origin)?;
    // The scripted executor provisions nothing: no root, tools or directories needed.
    let real = args.executor == ExecutorKind::Rig;
    if real {
        preflight::require_root("jbench run")?;
        for w in preflight::check(&spec, &args.destroy)? {
            eprintln!("jbench: warning: {w}");
        }
    }
    let results_dir = results_dir(&args.resume, &args.results, &spec.name)?;
    if real {
        preflight::create_dirs(&spec)?;
    }
    let trials = plan::plan(&spec);
    let (mut store, existing) = open_store(&results_dir, args.resume.is_some(), &spec, &original)?;
    let dir = store.dir().to_path_buf();
    if !args.quiet {
        eprintln!(
            "jbench: {} trials ({} configurations x {} workloads x {}); results in {}",
            trials.len(),
            spec.configs.len(),
            spec.workloads.len(),
            repetitions(&spec),
            dir.display()
        );
    }
    let ctl = interrupt::install()?;
    let outcome = {
        let mut exec: Box<dyn Executor> = match args.executor {
            ExecutorKind::Rig => Box::new(
                RigExecutor::new(&spec, args.destroy.clone())?
                    .with_write_logs(layout::write_log_dir(&dir))
                    .with_monitor_dir(layout::monitor_dir(&dir)),
            ),
            ExecutorKind::Scripted => Box::new(ScriptedExecutor),
        };
        Run::new(&spec, &mut store, exec.as_mut(), &ctl)
            .quiet(args.quiet)
            .execute(&trials, &existing)?
    };
    let records = store::load_records(&dir)?;
    let opts = report_options(&spec, None, None)?;
    store::write_summary(&dir, &report::render(&records, &opts, Format::Csv))?;
    // The run's status says what happened to the trials; a closed or full standard
    // output must not hide it (the results are on disk either way).
    let printed = print_run_report(&dir, &spec, &records, &[], &opts);
    let code = run_status(&args, &dir, &records, &outcome);
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
        None => format!("{} repetitions", spec.repetitions),
    }
}

/// The tables, the HTML report's path and the results directory, on standard output.
pub(crate) fn print_run_report(
    dir: &Path,
    spec: &spec::Spec,
    records: &[TrialRecord],
    crash: &[crate::results::crash::CrashRecord],
    opts: &ReportOptions,
) -> Result<()> {
    outln!(
        "{}",
        report::render_with_crash(records, crash, opts, Format::Table)
    );
    let html_path = layout::report_html(dir);
    match report::html::render_dir(dir, &spec.name, opts)
        .and_then(|page| Ok(std::fs::write(&html_path, page)?))
    {
        Ok(()) => outln!("HTML report: {}", html_path.display()),
        Err(e) => eprintln!(
            "jbench: warning: cannot write {}: {e:#}",
            html_path.display()
        ),
    }
    outln!("results: {}", dir.display());
    Ok(())
}

/// 130 interrupted, 3 every trial failed, 2 some failed, 0 all measured; said on stderr.
fn run_status(
    args: &RunArgs,
    dir: &Path,
    records: &[TrialRecord],
    outcome: &RunOutcome,
) -> ExitCode {
    if outcome.interrupted {
        let again = match (&args.source.spec, &args.source.preset) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(p)) => format!("--preset {p}"),
            (None, None) => String::new(),
        };
        eprintln!(
            "jbench: interrupted; everything was released. Finish with: jbench run {again} --resume {}",
            dir.display()
        );
        return ExitCode::from(130);
    }
    if !records.is_empty() && records.iter().all(|r| !r.is_ok()) {
        eprintln!(
            "jbench: {}; nothing was measured (errors in {}/trials.jsonl)",
            report::every_trial_failed(records).unwrap_or_default(),
            dir.display()
        );
        return ExitCode::from(3);
    }
    if outcome.failed > 0 {
        eprintln!(
            "jbench: {} trial(s) failed; see the `error` field in {}/trials.jsonl",
            outcome.failed,
            dir.display()
        );
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// `--resume DIR`, else `--results DIR`, else `results/<name>-<timestamp>`; checked to
/// be a directory nobody else can change.
pub(crate) fn results_dir(
    resume: &Option<PathBuf>,
    results: &Option<PathBuf>,
    name: &str,
) -> Result<PathBuf> {
    let dir = match (resume, results) {
        (Some(dir), _) | (None, Some(dir)) => dir.clone(),
        (None, None) => default_results_dir(name),
    };
    preflight::check_results_dir_trusted(&dir)?;
    Ok(dir)
}

/// The run's store: resumed (with the trials already recorded) or created afresh.
pub(crate) fn open_store(
    dir: &Path,
    resume: bool,
    spec: &spec::Spec,
    original: &str,
) -> Result<(store::Store, Vec<TrialRecord>)> {
    if resume {
        store::Store::resume(dir, spec)
    } else {
        Ok((store::Store::create(dir, spec, original)?, Vec::new()))
    }
}

fn default_results_dir(name: &str) -> PathBuf {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    PathBuf::from("results").join(format!("{name}-{stamp}"))
}
