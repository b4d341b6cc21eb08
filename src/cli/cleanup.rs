//! `jbench cleanup`: releases what a killed jbench left, and says what it did.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::run::{cleanup, preflight};

pub fn cleanup(work_dirs: Vec<PathBuf>, dry_run: bool) -> Result<ExitCode> {
    preflight::require_root("jbench cleanup")?;
    let mut dirs = work_dirs;
    dirs.push(PathBuf::from("/var/tmp/jbench"));
    dirs.push(PathBuf::from("/dev/shm"));
    let report = cleanup::cleanup(&dirs, dry_run)?;
    for line in &report.released {
        outln!("{line}");
    }
    for live in &report.skipped_live {
        outln!("left alone (a running jbench holds it): {}", live.display());
    }
    for (dir, why) in &report.skipped_untrusted {
        outln!("skipped (not trusted): {}: {why}", dir.display());
    }
    for e in &report.errors {
        eprintln!("jbench: cleanup: {e}");
    }
    if report.released.is_empty() && report.errors.is_empty() && report.skipped_untrusted.is_empty()
    {
        outln!("nothing to clean up");
    }
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
