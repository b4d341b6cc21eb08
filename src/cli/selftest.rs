//! `jbench selftest ...`: benchmarks of jbench itself, and a deliberate panic.

use std::process::ExitCode;

use anyhow::Result;

use std::path::PathBuf;

use crate::cli::args::{ExecutorKind, SelftestCmd, SpecSource};
use crate::experiment::spec;
use crate::run::jobs::ChildCommand;
use crate::run::jobs_check::{run_check, CheckOptions};
use crate::run::{preflight, session};
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
        SelftestCmd::Jobs {
            source,
            config,
            workload,
            jobs,
            rounds,
            any_host,
            results,
            executor,
        } => jobs_check(
            source,
            (config, workload),
            (jobs, rounds, any_host),
            results,
            executor,
        ),
    }
}

/// `jbench selftest jobs`: exit 0 when no main phase moved beyond the noise band, 4
/// (as other selftests out of tolerance) when one did.
fn jobs_check(
    source: SpecSource,
    (config, workload): (Option<String>, Option<String>),
    (jobs, rounds, any_host): (Vec<u16>, u32, bool),
    results: Option<PathBuf>,
    executor: ExecutorKind,
) -> Result<ExitCode> {
    let (original, origin) = source.read()?;
    let spec = spec::parse(&original, &origin)?;
    let pick = |what: &str, want: &Option<String>, names: Vec<&str>| -> Result<usize> {
        match want {
            None => Ok(0),
            Some(w) => names.iter().position(|n| n == w).ok_or_else(|| {
                anyhow::anyhow!(
                    "`{}` has no {what} `{w}` (it has: {})",
                    spec.name,
                    names.join(", ")
                )
            }),
        }
    };
    let config = pick(
        "configuration",
        &config,
        spec.configs.iter().map(|c| c.label.as_str()).collect(),
    )?;
    let workload = pick(
        "workload",
        &workload,
        spec.workloads.iter().map(|w| w.name.as_str()).collect(),
    )?;
    if rounds < 2 {
        anyhow::bail!(
            "--rounds {rounds}: an interval needs at least 2 trials a side; give 2 or more"
        );
    }
    let mut jobs: Vec<usize> = jobs.into_iter().map(usize::from).collect();
    jobs.sort();
    jobs.dedup();
    if jobs.iter().any(|&n| n < 2) {
        anyhow::bail!("--jobs must be 2 or more: each number is checked against the trial alone");
    }
    let real = executor == ExecutorKind::Rig;
    if real {
        preflight::require_root("jbench selftest jobs")?;
        for w in preflight::check(&spec, &[])? {
            eprintln!("jbench: warning: {w}");
        }
        preflight::create_dirs(&spec)?;
    }
    let dir = session::results_dir(&None, &results, &format!("jobs-check-{}", spec.name))?;
    let ctl = crate::run::interrupt::install()?;
    let opts = CheckOptions {
        config,
        workload,
        jobs,
        rounds,
        dir: dir.clone(),
        child: ChildCommand {
            exe: crate::rig::emulated::daemon_binary()?,
            dir,
            scripted: !real,
            destroy: Vec::new(),
            verbose: false,
            shown: Default::default(),
        },
        original,
        spec,
        any_host,
    };
    let report = run_check(opts, &ctl)?;
    let json = report.results.join("jobs-check.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report)?)?;
    out!("{report}");
    outln!("");
    outln!("as JSON: {}", json.display());
    if report.shifted() {
        return Ok(ExitCode::from(crate::cli::device::OUT_OF_TOLERANCE));
    }
    Ok(ExitCode::SUCCESS)
}
