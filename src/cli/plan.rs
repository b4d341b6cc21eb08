//! `jbench plan`: a dry run. The configurations and ordered trials, the expected wall
//! time of the run and of each workload, the disk and memory at peak, with `--shards
//! N` which trials each shard runs, and every check `jbench run` makes before its
//! first trial, with the exit status of a refusal.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::args::PlanArgs;
use crate::experiment::estimate::{Estimator, History};
use crate::experiment::footprint::Footprint;
use crate::experiment::plan::{self, Trial};
use crate::experiment::spec::Spec;
use crate::results::record::Status;
use crate::run::preflight;
use crate::scale::shard;
use crate::units::{approx_size as format_size, count, human_seconds};

pub fn plan(args: PlanArgs) -> Result<ExitCode> {
    let spec = args.source.load()?;
    let trials = plan::plan(&spec);
    for w in plan::size_warnings(&spec) {
        eprintln!("jbench: warning: {w}");
    }
    let history = load_history(&args.history)?;
    let estimator = match &history {
        Some(h) => Estimator::new(&spec).with_history(h),
        None => Estimator::new(&spec),
    };
    if let Some(n) = args.shards {
        // Refused before the plan is printed: the listing would end in an error.
        shard::check_shard_count(&trials, n as usize, args.shard_by)?;
    }
    out!("{}", plan::describe(&spec, &trials));
    out!(
        "{}",
        describe_time(&spec, &trials, &estimator, history.is_some())
    );
    out!("{}", describe_space(&spec, &trials));
    out!("\n{}\n", describe_writeback(&spec.writeback));
    if let Some(n) = args.shards {
        if spec.adaptive.is_some() {
            anyhow::bail!(
                "an experiment with adaptive repetitions cannot be sharded: the extra rounds depend on every shard's results; give a fixed `repetitions`"
            );
        }
        out!(
            "{}",
            shard::describe(&spec, &trials, n as usize, args.shard_by)
        );
    }
    // What `jbench run` checks before its first trial, in the same order.
    let refusal = run_checks(&spec, &args.destroy);
    match refusal {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("jbench: warning: {w}");
            }
            outln!("\npreflight: every check `jbench run` makes passed; it would start.");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            outln!("\npreflight: `jbench run` would refuse this experiment (see the error).");
            Err(e.context("`jbench run` would refuse this experiment"))
        }
    }
}

/// What the `[writeback]` table will do to the host, against what it has now.
fn describe_writeback(w: &crate::experiment::writeback_options::WritebackOptions) -> String {
    let now = crate::rig::writeback::Clock::current().ok();
    let run = now.map(|c| c.pinned(w));
    let pin = |pinned: bool, name: &str, value: fn(crate::rig::writeback::Clock) -> u64| {
        let text = |c: Option<crate::rig::writeback::Clock>| {
            c.map_or_else(|| "unreadable".to_string(), |c| value(c).to_string())
        };
        if pinned {
            format!(
                "vm.{name} pinned to {} for the run (now {})",
                text(run),
                text(now)
            )
        } else {
            format!("vm.{name} the host's ({})", text(now))
        }
    };
    format!(
        "writeback: {}; {}; {}",
        if w.sync_at_start {
            "every workload starts right after a sync"
        } else {
            "no sync before the workloads"
        },
        pin(w.interval.is_some(), "dirty_writeback_centisecs", |c| {
            c.dirty_writeback_centisecs
        }),
        pin(w.expire.is_some(), "dirty_expire_centisecs", |c| {
            c.dirty_expire_centisecs
        }),
    )
}

fn run_checks(spec: &Spec, destroy: &[std::path::PathBuf]) -> Result<Vec<String>> {
    if spec.crash.requested {
        if let Some(refused) = crate::crash::campaign::refusals(spec) {
            anyhow::bail!(
                "{refused}\nThe experiment's [crash] table asks for the crash lab; give those configurations emulated disks or remove [crash]."
            );
        }
    }
    preflight::require_root("jbench run")?;
    // The size warnings were printed with the plan already.
    let said = plan::size_warnings(spec);
    let warnings = preflight::check(spec, destroy)?;
    Ok(warnings.into_iter().filter(|w| !said.contains(w)).collect())
}

/// The measured trial times of earlier runs' results directories.
fn load_history(dirs: &[std::path::PathBuf]) -> Result<Option<History>> {
    if dirs.is_empty() {
        return Ok(None);
    }
    let mut h = History::default();
    for dir in dirs {
        let records = crate::results::store::load_records(dir).with_context(|| {
            format!(
                "--history {}: not a results directory jbench can read; name one that `jbench run` wrote",
                dir.display()
            )
        })?;
        for r in records {
            if r.status == Status::Ok && !r.crash_recording && r.wall_seconds > 0.0 {
                h.seconds
                    .entry((r.config.label.clone(), r.workload.name.clone()))
                    .or_default()
                    .push(r.wall_seconds);
            }
        }
    }
    Ok(Some(h))
}

fn describe_time(spec: &Spec, trials: &[Trial], e: &Estimator, history: bool) -> String {
    use std::fmt::Write;
    let estimates: Vec<_> = trials.iter().map(|t| e.trial(t)).collect();
    let total = e.run_seconds(trials);
    let known = estimates.iter().filter(|t| t.from_history).count();
    let guessed = estimates.iter().any(|t| t.guessed && !t.from_history);
    let unpriced = estimates.iter().filter(|t| t.writeback_unpriced).count();
    let mut out = String::new();
    let source = match (history, known) {
        (true, k) if k > 0 => format!(
            "{} from earlier runs' measured times, the rest from the model",
            count(k as u64, "trial")
        ),
        (true, _) => {
            "no trial of the history matches a configuration and workload here: all from the model"
                .into()
        }
        (false, _) => "from the engines' counts and the devices' models".into(),
    };
    let _ = writeln!(
        out,
        "\nexpected wall time: ~{} ({source}; docs/experiment.md, \"How long a run takes\", gives the model's measured error)",
        human_seconds(total)
    );
    let width = spec
        .workloads
        .iter()
        .map(|w| w.name.len())
        .max()
        .unwrap_or(0)
        .max(8);
    for (wi, w) in spec.workloads.iter().enumerate() {
        let (mut secs, mut timed, mut recorded) = (0.0, 0u64, 0u64);
        for (t, est) in trials.iter().zip(&estimates) {
            if t.workload == wi {
                secs += est.setup + est.work;
                if t.recording {
                    recorded += 1;
                } else {
                    timed += 1;
                }
            }
        }
        let mut what = count(timed, "trial");
        if recorded > 0 {
            what.push_str(&format!(", {}", count(recorded, "crash recording")));
        }
        let _ = writeln!(
            out,
            "  {:<width$}  {:<14} ({what})",
            w.name,
            format!("~{}", human_seconds(secs))
        );
    }
    let lab: f64 = estimates.iter().map(|t| t.lab).sum();
    if lab > 0.0 {
        let recordings = trials.iter().filter(|t| t.recording).count() as u64;
        let _ = writeln!(
            out,
            "  {:<width$}  {:<14} ({}, up to {} each)",
            "crash lab",
            format!("~{}", human_seconds(lab)),
            count(recordings, "recording"),
            count(u64::from(spec.crash.states), "state")
        );
    }
    if guessed {
        let _ = writeln!(
            out,
            "  (a `command` workload's time is a guess from its declared sizes; --history DIR of a run of it knows better)"
        );
    }
    if unpriced > 0 {
        let _ = writeln!(
            out,
            "  ({} write many files back to a spinning disk, where the scattered writes wait for their sectors; the model does not price those waits, so its figure for them can be far too little (11 to 116 times for Study 3's PostMark trials measured on a 2-vCPU VM: docs/experiment.md, \"How long a run takes\"); --history DIR of an earlier run of them knows better)",
            count(unpriced as u64, "trial")
        );
    }
    out
}

fn describe_space(spec: &Spec, trials: &[Trial]) -> String {
    let f = Footprint::of(spec, trials);
    let mut lines = Vec::new();
    if f.work_dir > 0 {
        lines.push(format!(
            "disk at peak: about {} free in work_dir {} (the largest trial's images)",
            format_size(f.work_dir),
            spec.work_dir.display()
        ));
    } else {
        lines.push(format!(
            "disk at peak: work_dir {} holds only session directories (no host images)",
            spec.work_dir.display()
        ));
    }
    lines.push(format!(
        "results: about {} (records{})",
        format_size(f.results),
        if trials.iter().any(|t| t.recording) {
            ", and the write logs of the crash recordings"
        } else {
            ""
        }
    ));
    let mut parts = Vec::new();
    if f.emulated_images > 0 {
        parts.push(format!(
            "emulated disk images up to {} in {}{}",
            format_size(f.emulated_images),
            spec.emulation.image_dir.display(),
            if f.images_in_memory {
                ""
            } else {
                " (a disk directory, not memory)"
            }
        ));
    }
    if f.ram_journal > 0 {
        parts.push(format!("RAM-disk journal {}", format_size(f.ram_journal)));
    }
    let limit = spec.configs.iter().filter_map(|c| c.memory_limit).max();
    lines.push(format!(
        "memory at peak: about {}{}{}",
        format_size(f.memory()),
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        },
        match limit {
            Some(l) => format!(
                ", plus the workload's page cache, at most {} (memory_limit)",
                format_size(l)
            ),
            None => ", plus the workload's page cache".into(),
        }
    ));
    format!("\n{}", lines.join("\n"))
}
