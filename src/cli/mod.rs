//! The `jbench` command line: its grammar ([`args`]), one module per command that
//! carries it out and prints what it returns, and how the process ends ([`exit`]:
//! checked output, one-line errors, exit statuses). `main.rs` only parses, dispatches
//! and exits.

use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Result;

/// `print!` and `println!` that return a write error (through `?`) instead of
/// panicking, as `print!` does on a closed or full standard output.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::exit::write_out(format_args!($($arg)*))?
    };
}

macro_rules! outln {
    () => {
        $crate::cli::exit::write_out(format_args!("\n"))?
    };
    ($($arg:tt)*) => {
        $crate::cli::exit::write_out(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

pub mod args;
pub mod cleanup;
pub mod compare;
pub mod crash;
pub mod device;
pub mod exit;
pub mod merge;
pub mod meta;
pub mod plan;
mod progress;
pub mod report;
pub mod run;
pub mod selftest;
pub mod selftest_args;
pub mod submit;
pub mod workload;

use args::{Cli, Command};
use progress::Progress;

use crate::events::{Event, Reporter};

/// The library's events on the terminal, on standard error: a run's progress as a bar
/// (or plain lines in a log), everything else in its own words, printed above the bar.
/// With `quiet`, what tells progress is not shown; what went wrong still is.
pub struct Terminal {
    quiet: bool,
    run: Mutex<Option<Progress>>,
}

impl Terminal {
    /// Makes the terminal hear the library's events from now on.
    pub fn install(quiet: bool) {
        crate::events::set_reporter(Some(Arc::new(Terminal {
            quiet,
            run: Mutex::new(None),
        })));
    }
}

impl Reporter for Terminal {
    fn report(&self, event: &Event) {
        if self.quiet && event.is_progress() {
            return;
        }
        let mut run = self.run.lock().unwrap_or_else(|e| e.into_inner());
        match (event, run.as_mut()) {
            (
                Event::RunBegins {
                    total,
                    done,
                    after_seconds,
                },
                _,
            ) => *run = Some(Progress::new(*total, *done, *after_seconds)),
            (Event::RunEnds, _) => {
                if let Some(p) = run.take() {
                    p.finish();
                }
            }
            (Event::TrialBegins { n, what }, Some(p)) => p.start(*n, what),
            (Event::PhaseBegins { name }, Some(p)) => p.phase(name),
            (Event::TrialEnds { summary }, Some(p)) => p.finish_one(summary),
            (Event::TrialAdded { why }, Some(p)) => {
                p.grow(1);
                p.say(why);
            }
            (_, Some(p)) => {
                let line = event.line();
                if !line.is_empty() {
                    p.say(&line);
                }
            }
            (_, None) => {
                let line = event.line();
                if !line.is_empty() {
                    eprintln!("{line}");
                }
            }
        }
    }
}

/// Carries out a parsed command line; the exit status it should end with.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    Terminal::install(false);
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Crash(args) => crash::crash(args),
        Command::Plan(args) => plan::plan(args),
        Command::Report(args) => report::report(args),
        Command::Compare(args) => compare::compare(args),
        Command::Merge(args) => merge::merge(args),
        Command::Trial(args) => run::trial(args),
        Command::Workload(cmd) => workload::workload(cmd),
        Command::Cleanup { work_dirs, dry_run } => cleanup::cleanup(work_dirs, dry_run),
        Command::Device(cmd) => device::device(cmd),
        Command::DeviceDaemon { config } => {
            crate::emu::daemon::run(&config)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Submit(args) => submit::submit(args),
        Command::Selftest(cmd) => selftest::selftest(cmd),
        Command::Completions { shell } => meta::completions(shell),
        Command::Man { dir } => meta::man(&dir),
        Command::Preset(cmd) => meta::preset(cmd),
    }
}

/// Help, version and usage errors, printed as clap would but through a checked write.
pub fn clap_exit(e: clap::Error) -> Result<ExitCode> {
    let code = u8::try_from(e.exit_code()).unwrap_or(1);
    if e.use_stderr() {
        let _ = e.print();
    } else {
        out!("{}", e.render());
    }
    Ok(ExitCode::from(code))
}
