//! `jbench crash`: the recording run (one crash recording per configuration x workload,
//! write log on, marked `crash_recording` and so never a speed figure), then the crash
//! lab on every recording, appending to crash.jsonl; then the report, as `jbench run`
//! prints it, which opens with safety and recovery.

use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::cli::args::CrashArgs;
use crate::cli::run::{crash_status, interrupted_status, print_run_report};
use crate::crash::campaign;
use crate::experiment::spec;
use crate::experiment::{estimate, plan};
use crate::run::preflight;
use crate::run::session::{self, Session};

pub fn crash(args: CrashArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = spec::parse(&original, &origin)?;
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
    let (spec, trials) = plan::crash_plan(&spec);
    let results_dir =
        session::results_dir(&args.resume, &args.results, &format!("{}-crash", spec.name))?;
    preflight::create_dirs(&spec)?;
    let mut session = Session::open(&spec, &original, &results_dir, args.resume.is_some())?
        .quiet(args.quiet)
        .lab_after(estimate::lab_seconds(trials.len(), opts.states));
    let dir = session.dir().to_path_buf();
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
    let outcome = {
        let mut exec = session.rig_executor(Vec::new(), args.verbose)?;
        session.execute(&mut exec, &trials, None)?
    };
    let mut interrupted = outcome.interrupted;
    let mut lab_failed = Vec::new();
    if !interrupted {
        let records = session.records()?;
        let lab = session.crash_lab(&records.iter().collect::<Vec<_>>(), &opts, seed)?;
        interrupted = lab.interrupted;
        lab_failed = lab.failed;
    }
    let (results, report_opts) = session.finish()?;
    print_run_report(&results, &report_opts)?;
    if interrupted {
        return Ok(interrupted_status("crash", &args.source, &dir));
    }
    if outcome.failed > 0 {
        eprintln!(
            "jbench: {} recording trial(s) failed; see {}/trials.jsonl and the messages above",
            outcome.failed,
            dir.display()
        );
        return Ok(ExitCode::from(2));
    }
    Ok(crash_status(&lab_failed, &results.crash).unwrap_or(ExitCode::SUCCESS))
}

pub use crate::crash::campaign::{unexpected, Unexpected};
