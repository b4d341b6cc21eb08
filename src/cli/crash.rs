//! `jbench crash`: the recording run (an ordinary run, one trial per configuration x
//! workload, write log on), then the crash lab on every recorded trial, appending to
//! crash.jsonl; then the report, as `jbench run` prints it.

use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::cli::args::CrashArgs;
use crate::cli::report::report_options;
use crate::cli::run::{open_store, print_run_report, results_dir};
use crate::crash::campaign::{self, Campaign};
use crate::experiment::{plan, spec};
use crate::report::{self, Format};
use crate::results::crash::load_crash_records;
use crate::results::{layout, store};
use crate::run::executor::RigExecutor;
use crate::run::runner::Run;
use crate::run::{interrupt, preflight};

pub fn crash(args: CrashArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let mut spec = spec::parse(&original, &origin)?;
    if let Some(refused) = campaign::refusals(&spec) {
        bail!("{refused}");
    }
    let mut opts = spec.crash.clone();
    if let Some(n) = args.states {
        opts.states = n;
        opts.recovery_timing = opts.recovery_timing.min(n);
    }
    let seed = args.seed.or(opts.seed).unwrap_or(spec.seed);
    preflight::require_root("jbench crash")?;
    for w in preflight::check(&spec, &[])? {
        eprintln!("jbench: warning: {w}");
    }
    // One recording per configuration x workload, with every write logged (these are
    // the speed trials of the plan, one repetition each; an experiment's own `[crash]`
    // recordings would be a second copy of them).
    spec.emulation.write_log = true;
    spec.crash.requested = false;
    spec.repetitions = 1;
    spec.adaptive = None;
    let results_dir = results_dir(&args.resume, &args.results, &format!("{}-crash", spec.name))?;
    preflight::create_dirs(&spec)?;
    let trials = plan::plan(&spec);
    let (mut store, existing) = open_store(&results_dir, args.resume.is_some(), &spec, &original)?;
    let dir = store.dir().to_path_buf();
    let say = |quiet: bool, m: &str| {
        if !quiet {
            eprintln!("jbench: {m}");
        }
    };
    say(
        args.quiet,
        &format!(
            "crash lab: {} recordings, up to {} states each ({}); results in {}",
            trials.len(),
            opts.states,
            opts.strategies
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            dir.display()
        ),
    );
    let ctl = interrupt::install()?;
    let outcome = {
        let mut exec = RigExecutor::new(&spec, Vec::new())?
            .verbose(args.verbose)
            .with_write_logs(layout::write_log_dir(&dir))
            .with_monitor_dir(layout::monitor_dir(&dir))
            .with_output_dir(layout::output_dir(&dir));
        Run::new(&spec, &mut store, &mut exec, &ctl)
            .quiet(args.quiet)
            .execute(&trials, &existing)?
    };
    let records = store::load_records(&dir)?;
    let mut interrupted = outcome.interrupted;
    let mut lab_failed = Vec::new();
    if !interrupted {
        let lab = Campaign {
            spec: &spec,
            dir: &dir,
            opts: &opts,
            seed,
            ctl: &ctl,
            quiet: args.quiet,
        }
        .run(&records.iter().collect::<Vec<_>>())?;
        interrupted = lab.interrupted;
        lab_failed = lab.failed;
    }
    let crash = load_crash_records(&layout::crash_file(&dir))?;
    let report_opts = report_options(&spec, None, None)?;
    store::write_summary(
        &dir,
        &report::render_with_crash(&records, &crash, &report_opts, Format::Csv),
    )?;
    print_run_report(&dir, &spec, &records, &crash, &report_opts)?;
    if interrupted {
        let again = match (&args.source.spec, &args.source.preset) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(p)) => format!("--preset {p}"),
            (None, None) => String::new(),
        };
        eprintln!(
            "jbench: interrupted; everything was released. Finish with: jbench crash {again} --resume {}",
            dir.display()
        );
        return Ok(ExitCode::from(130));
    }
    if outcome.failed > 0 || !lab_failed.is_empty() {
        eprintln!(
            "jbench: {} recording trial(s) and {} crash lab run(s) failed; see {}/trials.jsonl and the messages above",
            outcome.failed,
            lab_failed.len(),
            dir.display()
        );
        return Ok(ExitCode::from(2));
    }
    let found = unexpected(&crash);
    for u in found.lost.iter().chain(&found.hung) {
        eprintln!("jbench: {u}");
    }
    if !found.lost.is_empty() {
        return Ok(ExitCode::from(5));
    }
    if !found.hung.is_empty() {
        return Ok(ExitCode::from(6));
    }
    Ok(ExitCode::SUCCESS)
}

pub use crate::crash::campaign::{unexpected, Unexpected};
