//! `jbench crash`: the recording run (one crash recording per configuration x workload,
//! write log on, marked `crash_recording` and so never a speed figure), then the crash
//! lab on every recording, appending to crash.jsonl; then the report, as `jbench run`
//! prints it, which opens with safety and recovery.

use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::cli::args::CrashArgs;
use crate::cli::run::{keep_status, print_run_report, say_ending};
use crate::crash::campaign;
use crate::experiment::spec;
use crate::experiment::{estimate, plan};
use crate::run::session::{self, LabAfter, Session};

pub fn crash(args: CrashArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = args.source.applied(spec::parse(&original, &origin)?);
    if let Some(refused) = campaign::refusals(&spec) {
        bail!("{refused}");
    }
    let mut opts = spec.crash.clone();
    if let Some(n) = args.states {
        opts.states = n;
        opts.recovery_timing = opts.recovery_timing.min(n);
    }
    let seed = args.seed.or(opts.seed).unwrap_or(spec.seed);
    let (spec, trials) = plan::crash_plan(&spec);
    let results_dir =
        session::results_dir(&args.resume, &args.results, &format!("{}-crash", spec.name))?;
    for w in session::prepare(&spec, "jbench crash", &[])? {
        eprintln!("jbench: warning: {w}");
    }
    crate::cli::Terminal::install(args.quiet);
    let mut session = Session::open(&spec, &original, &results_dir, args.resume.is_some())?
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
    say(args.quiet, &crate::run::preflight::work_dir_line(&spec));
    let outcome = {
        let mut exec = session.rig_executor(Vec::new(), args.verbose)?;
        let lab = LabAfter {
            opts: &opts,
            seed,
            only_recordings: false,
        };
        session.run(&mut exec, &trials, None, Some(lab))?
    };
    let done = session.conclude(&outcome)?;
    let printed = print_run_report(&done.results, &done.opts, args.verbose);
    say_ending(
        &done.ending,
        "crash",
        &args.source,
        &dir,
        "recording trial(s)",
    );
    keep_status(printed, done.ending.exit_code())
}

pub use crate::crash::campaign::{unexpected, Unexpected};
