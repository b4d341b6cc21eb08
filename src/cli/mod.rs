//! The `jbench` command line: its grammar ([`args`]), one module per command that
//! carries it out and prints what it returns, and how the process ends ([`exit`]:
//! checked output, one-line errors, exit statuses). `main.rs` only parses, dispatches
//! and exits.

use std::process::ExitCode;

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
pub mod report;
pub mod run;
pub mod selftest;
pub mod selftest_args;
pub mod submit;
pub mod workload;

use args::{Cli, Command};

/// The library's events on the terminal: each on standard error in its own words.
pub struct Terminal;

impl crate::events::Reporter for Terminal {
    fn report(&self, event: &crate::events::Event) {
        eprintln!("{}", event.line());
    }
}

/// Carries out a parsed command line; the exit status it should end with.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    crate::events::set_reporter(Some(std::sync::Arc::new(Terminal)));
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
