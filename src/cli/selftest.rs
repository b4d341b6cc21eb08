//! `jbench selftest ...`: benchmarks of jbench itself, and a deliberate panic.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::SelftestCmd;
use crate::selftest;

pub fn selftest(cmd: SelftestCmd) -> Result<ExitCode> {
    match cmd {
        SelftestCmd::Panic => panic!("a panic on purpose"),
        SelftestCmd::Adaptive {
            dir,
            target_cv,
            min,
        } => {
            out!(
                "{}",
                crate::run::adaptive::replay_dir(&dir, target_cv, min)?
            );
            Ok(ExitCode::SUCCESS)
        }
        SelftestCmd::Overhead {
            dir,
            rounds,
            dirs,
            files,
            blocks,
            levels,
        } => {
            let mut opts = selftest::OverheadOptions {
                dir,
                rounds,
                ..Default::default()
            };
            let t = &mut opts.tree;
            t.dirs = dirs.unwrap_or(t.dirs);
            t.files = files.unwrap_or(t.files);
            t.blocks = blocks.unwrap_or(t.blocks);
            t.levels = levels.unwrap_or(t.levels);
            let report = selftest::run_overhead(&opts)?;
            out!("{report}");
            if !report.target_met() {
                return Ok(ExitCode::from(crate::cli::device::OUT_OF_TOLERANCE));
            }
            Ok(ExitCode::SUCCESS)
        }
        SelftestCmd::Monitor {
            dir,
            rounds,
            interval,
            samples,
        } => {
            let interval = crate::units::parse_duration(&interval).map_err(anyhow::Error::msg)?;
            if interval.is_zero() {
                anyhow::bail!("--interval must be above zero");
            }
            let opts = selftest::monitor::MonitorCostOptions {
                dir,
                rounds,
                interval,
                samples,
                ..Default::default()
            };
            let report = selftest::monitor::run_monitor_cost(&opts)?;
            out!("{report}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
