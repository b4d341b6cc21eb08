//! Running the system tools that are the source of truth (mke2fs, dumpe2fs, losetup,
//! blkid, mount), with errors that show the command and what it said.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Tools run in their own process group: a Ctrl-C at the terminal reaches jbench alone,
/// which then stops between steps. Otherwise the SIGINT would also kill a `losetup -d` or
/// `umount` half-way through teardown and leave devices behind.
fn command(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).process_group(0);
    cmd
}

/// Runs `program args...` with stdin closed and returns its stdout. A non-zero exit is
/// an error carrying the whole command line and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = command(program, args).output().with_context(|| {
        format!("cannot start `{program}`; is it installed? (Debian: e2fsprogs, mount, util-linux)")
    })?;
    if !out.status.success() {
        bail!(
            "`{} {}` failed ({}): {}",
            program,
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Like [`run`] but returns stdout and stderr together, for tools (mke2fs -V) that
/// print their version on stderr.
pub fn run_all(program: &str, args: &[&str]) -> Result<String> {
    let out = command(program, args)
        .output()
        .with_context(|| format!("cannot start `{program}`"))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(text)
}

/// Whether a program is on PATH.
pub fn available(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
        .unwrap_or(false)
        || ["/sbin", "/usr/sbin"]
            .iter()
            .any(|p| std::path::Path::new(p).join(program).is_file())
}
