//! The `jbench` command line: parse, dispatch to `jbench::cli`, exit.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use jbench::cli::args::{Cli, Command, SelftestCmd};
use jbench::cli::exit::{fail, install_panic_hook, StdoutError};
use jbench::cli::{clap_exit, dispatch};

fn main() -> ExitCode {
    install_panic_hook();
    let result = match Cli::try_parse() {
        // `jbench selftest panic` shows what a bug looks like; it panics here, so the
        // one-line report names src/main.rs, as it did before the commands moved out.
        Ok(Cli {
            command: Command::Selftest(SelftestCmd::Panic),
        }) => panic!("a panic on purpose"),
        Ok(cli) => dispatch(cli),
        Err(e) => clap_exit(e),
    };
    // Text without a final newline, and anything held in the buffer, is written only
    // here: an error now is as real as one in the middle.
    let flushed = std::io::stdout().flush().map_err(StdoutError);
    match result.and_then(|code| flushed.map(|()| code).map_err(Into::into)) {
        Ok(code) => code,
        Err(e) => fail(e),
    }
}
