//! `jbench plan`: a dry run. The configurations and ordered trials, the expected wall
//! time of the run and of each workload (with `--jobs N`, with N trials at once), the
//! disk and memory at peak, with `--shards N` which trials each shard runs, and every
//! check `jbench run` makes before its first trial, with the exit status of a refusal;
//! with `--crash` the same for `jbench crash` on the experiment.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::args::PlanArgs;
use crate::experiment::estimate::{
    Estimator, History, RunEstimate, APP_LIKELY, APP_MOST, UNPRICED_LIKELY, UNPRICED_MOST,
};
use crate::experiment::footprint::Footprint;
use crate::experiment::plan::{self, Trial};
use crate::experiment::slots::Slot;
use crate::experiment::spec::Spec;
use crate::results::record::Status;
use crate::run::preflight;
use crate::scale::shard;
use crate::units::{approx_size as format_size, count, human_seconds};

pub fn plan(args: PlanArgs) -> Result<ExitCode> {
    let original = args.source.load()?;
    let command = if args.crash {
        "jbench crash"
    } else {
        "jbench run"
    };
    let (spec, trials) = if args.crash {
        let (mut spec, trials) = plan::crash_plan(&original);
        if let Some(n) = args.states {
            spec.crash.states = n;
            spec.crash.recovery_timing = spec.crash.recovery_timing.min(n);
        }
        (spec, trials)
    } else {
        (original.clone(), plan::plan(&original))
    };
    for w in plan::size_warnings(&spec) {
        eprintln!("jbench: warning: {w}");
    }
    let history = load_history(&args.history)?;
    let v1 = crate::rig::memcg::is_v1();
    let estimator = match &history {
        Some(h) => Estimator::new(&spec).with_history(h),
        None => Estimator::new(&spec),
    }
    .on_cgroup_v1(v1);
    if let Some(n) = args.shards {
        // Refused before the plan is printed: the listing would end in an error.
        shard::check_shard_count(&trials, n as usize, args.shard_by)?;
    }
    out!("{}", plan::describe(&spec, &trials));
    let time = Time {
        spec: &spec,
        trials: &trials,
        estimator: &estimator,
        history: history.is_some(),
        jobs: args.jobs.map_or(1, usize::from),
        cgroup_v1: v1,
        command: args.crash.then_some(command),
        measured: preset_measured(&args),
    };
    out!("{}", time.describe());
    out!("{}", describe_space(&spec, &trials));
    out!("\n{}\n", preflight::work_dir_line(&spec));
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
    // What the command checks before its first trial, in the same order.
    let refusal = if args.crash {
        crash_checks(&original)
    } else {
        run_checks(&spec, &args.destroy)
    };
    match refusal {
        Ok(warnings) => {
            for w in warnings {
                eprintln!("jbench: warning: {w}");
            }
            outln!("\npreflight: every check `{command}` makes passed; it would start.");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            outln!("\npreflight: `{command}` would refuse this experiment (see the error).");
            Err(e.context(format!("`{command}` would refuse this experiment")))
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

/// What `jbench crash` checks before its first recording: it reads the experiment as
/// written, formats no real device, and refuses disks it cannot record.
fn crash_checks(spec: &Spec) -> Result<Vec<String>> {
    if let Some(refused) = crate::crash::campaign::refusals(spec) {
        anyhow::bail!("{refused}");
    }
    preflight::require_root("jbench crash")?;
    let said = plan::size_warnings(spec);
    let warnings = preflight::check(spec, &[])?;
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

/// The expected wall time of a plan, as `plan` prints it.
struct Time<'a> {
    spec: &'a Spec,
    trials: &'a [Trial],
    estimator: &'a Estimator<'a>,
    /// `--history` was given.
    history: bool,
    /// Trials at once (`--jobs`).
    jobs: usize,
    /// The host's memory cgroups are v1 (`Slot::on_host`).
    cgroup_v1: bool,
    /// The command planned when it is not `jbench run`.
    command: Option<&'a str>,
    /// An unmodified built-in preset's own measured run: its seconds and its
    /// `# Run time:` words.
    measured: Option<(f64, &'a str)>,
}

/// What the preset planned measured when it ran as it is built in: only for `jbench
/// run --preset NAME` itself, one trial at a time, with no history to price it.
fn preset_measured(args: &PlanArgs) -> Option<(f64, &'static str)> {
    if args.crash || args.states.is_some() || !args.history.is_empty() || args.jobs.unwrap_or(1) > 1
    {
        return None;
    }
    let name = match (&args.source.spec, &args.source.preset) {
        (None, Some(n)) => n.as_str(),
        (None, None) => "quick",
        (Some(_), _) => return None,
    };
    let text = crate::experiment::presets::find(name)?;
    Some((
        crate::experiment::presets::measured_run_seconds(text)?,
        crate::experiment::presets::measured_run_time(text)?,
    ))
}

/// `~1 h 03 min`, or where the model cannot price some trials, the floor it gives,
/// the likely figure and the most.
fn span(r: &RunEstimate) -> String {
    if r.unpriced == 0 {
        return format!("~{}", human_seconds(r.floor));
    }
    format!(
        "at least ~{}, likely ~{}, up to ~{}",
        human_seconds(r.floor),
        human_seconds(r.likely),
        human_seconds(r.most)
    )
}

impl Time<'_> {
    /// "expected wall time: ~4 min 10 s (...)": the model's `figure` from `source`, or
    /// an unmodified preset's own measured run with the model's figure beside it.
    fn headline(&self, figure: &str, source: &str) -> String {
        match self.measured {
            Some((secs, words)) => format!(
                "expected wall time: ~{}, as this preset's own run measured it (\"{words}\"; a slower or busier machine takes longer); the model alone gives {figure} ({source})",
                human_seconds(secs)
            ),
            None => format!(
                "expected wall time{}: {figure} ({source}; docs/experiment.md, \"How long a run takes\", gives the model's measured error)",
                self.command.map(|c| format!(" of `{c}`")).unwrap_or_default()
            ),
        }
    }

    fn describe(&self) -> String {
        use std::fmt::Write;
        let (spec, trials, e) = (self.spec, self.trials, self.estimator);
        let estimates: Vec<_> = trials.iter().map(|t| e.trial(t)).collect();
        let serial = e.run(trials, 1);
        let known = estimates.iter().filter(|t| t.from_history).count();
        let guessed = estimates.iter().any(|t| t.guessed && !t.from_history);
        let mut out = String::new();
        let mut source = match (self.history, known) {
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
        if serial.unpriced > 0 {
            let _ = write!(
                source,
                "; {} the model cannot price (below) at its figure, {UNPRICED_LIKELY} times it and {UNPRICED_MOST} times it",
                count(serial.unpriced as u64, "trial")
            );
        }
        let figure = if self.jobs > 1 {
            format!(
                "with {} trials at once {}; one at a time {}",
                self.jobs,
                span(&e.run(trials, self.jobs)),
                span(&serial)
            )
        } else {
            span(&serial)
        };
        let _ = writeln!(out, "\n{}", self.headline(&figure, &source));
        let width = spec
            .workloads
            .iter()
            .map(|w| w.name.len())
            .max()
            .unwrap_or(0)
            .max(9);
        for (wi, w) in spec.workloads.iter().enumerate() {
            let (mut secs, mut likely, mut most) = (0.0, 0.0, 0.0);
            let (mut timed, mut recorded, mut unpriced) = (0u64, 0u64, 0u64);
            for (t, est) in trials.iter().zip(&estimates) {
                if t.workload == wi {
                    secs += est.trial_seconds(1.0);
                    likely += est.trial_seconds(UNPRICED_LIKELY);
                    most += est.trial_seconds(UNPRICED_MOST);
                    if t.recording {
                        recorded += 1;
                    } else {
                        timed += 1;
                    }
                    unpriced += u64::from(est.writeback_unpriced);
                }
            }
            let mut what = Vec::new();
            if timed > 0 || recorded == 0 {
                what.push(count(timed, "trial"));
            }
            if recorded > 0 {
                what.push(count(recorded, "crash recording"));
            }
            let mut what = what.join(", ");
            if unpriced > 0 {
                let _ = write!(
                    what,
                    "; at least this, likely ~{}, up to ~{}",
                    human_seconds(likely),
                    human_seconds(most)
                );
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
                "  {:<width$}  {:<14} ({}, up to {} each, after the last trial)",
                "crash lab",
                format!("~{}", human_seconds(lab)),
                count(recordings, "recording"),
                count(u64::from(spec.crash.states), "state")
            );
        }
        if guessed {
            let _ = writeln!(
                out,
                "  (a `command` workload's time is the model's guess from its declared sizes, which cannot price an application's start, checks and recovery: the built-in application presets ran {APP_LIKELY} to {APP_MOST} times the model's figure, so expect ~{} to ~{}; --history DIR of a run of it prices it)",
                human_seconds(serial.floor * APP_LIKELY),
                human_seconds(serial.floor * APP_MOST)
            );
        }
        if serial.unpriced > 0 {
            let _ = writeln!(
                out,
                "  ({} write many files back to a spinning disk, where the scattered writes wait for their sectors; the model does not price those waits, so its figure for them is a floor: Study 3's PostMark trials took 11 to 116 times it on a 2-vCPU VM, and its whole settled run {UNPRICED_LIKELY} times, the likely figure above (docs/experiment.md, \"How long a run takes\"); --history DIR of an earlier run of them knows better)",
                count(serial.unpriced as u64, "trial")
            );
        }
        if self.jobs > 1 {
            out.push_str(&self.describe_slots());
        }
        out
    }

    /// Which trials may run beside which with `--jobs`, and why those that may not.
    fn describe_slots(&self) -> String {
        let mut groups: BTreeMap<Slot, u64> = BTreeMap::new();
        for t in self.trials {
            *groups
                .entry(Slot::of(self.spec, t).on_host(self.cgroup_v1))
                .or_default() += 1;
        }
        let mut out = format!(
            "  ({} at once: each trial starts in plan order once a job is free and every running trial may share the host with it; a trial is assumed to keep its serial time beside others; `jbench selftest jobs` measures how far that holds on this machine)\n",
            count(self.jobs as u64, "trial")
        );
        let names: Vec<String> = groups
            .iter()
            .map(|(slot, n)| format!("{} {}", count(*n, "trial"), slot.describe()))
            .collect();
        let slots: Vec<Slot> = groups.keys().copied().collect();
        let mut why: Vec<String> = Vec::new();
        for (i, a) in slots.iter().enumerate() {
            for b in &slots[i..] {
                if let Some(w) = a.why_apart(*b) {
                    if !why.contains(&w) {
                        why.push(w);
                    }
                }
            }
        }
        let apart = match (slots.len(), why.is_empty()) {
            (1, true) => "every trial may run beside any other".to_string(),
            (1, false) => format!("none runs beside another, whatever N: {}", why.join("; ")),
            _ => format!(
                "trials of different slots never run at once: {}",
                why.join("; ")
            ),
        };
        out.push_str(&format!("  slots: {}; {apart}\n", names.join(", ")));
        out
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> Spec {
        let text = crate::experiment::presets::find(name).unwrap();
        crate::experiment::spec::parse(text, name).unwrap()
    }

    fn time(spec: &Spec, history: Option<&History>, jobs: usize) -> String {
        let trials = plan::plan(spec);
        let e = match history {
            Some(h) => Estimator::new(spec).with_history(h),
            None => Estimator::new(spec),
        };
        Time {
            spec,
            trials: &trials,
            estimator: &e,
            history: history.is_some(),
            jobs,
            cgroup_v1: false,
            command: None,
            measured: None,
        }
        .describe()
    }

    fn headline(text: &str) -> &str {
        text.lines()
            .find(|l| l.starts_with("expected wall time"))
            .unwrap()
    }

    /// Study 3's trials are past what the model prices: the headline leads with the
    /// model's figure as a floor and the likely time, not the floor alone; measured
    /// times of every pair make it one figure again.
    #[test]
    fn the_headline_gives_a_range_where_the_model_cannot_price_trials() {
        let s = preset("study3-hdd");
        let text = time(&s, None, 1);
        let first = headline(&text);
        assert!(
            first.starts_with("expected wall time: at least ~1 h 0")
                && first.contains(", likely ~16 h ")
                && first.contains(", up to ~12"),
            "{first}"
        );
        assert!(
            first.contains("84 trials the model cannot price"),
            "{first}"
        );
        assert!(
            text.contains("(21 trials; at least this, likely ~"),
            "{text}"
        );

        let mut h = History::default();
        for c in &s.configs {
            for w in &s.workloads {
                h.seconds
                    .insert((c.label.clone(), w.name.clone()), vec![600.0]);
            }
        }
        let text = time(&s, Some(&h), 1);
        let first = headline(&text);
        assert!(
            first.starts_with("expected wall time: ~14 h 0") && !first.contains("likely"),
            "{first}"
        );
        assert!(!text.contains("spinning disk"), "{text}");

        let q = time(&preset("quick"), None, 1);
        assert!(
            headline(&q).starts_with("expected wall time: ~4 min"),
            "{q}"
        );
        assert!(!q.contains("likely") && !q.contains("slots:"), "{q}");
    }

    #[test]
    fn jobs_give_the_concurrent_time_beside_the_serial_one_and_the_slots() {
        let text = time(&preset("quick"), None, 2);
        let first = headline(&text);
        assert!(
            first.starts_with("expected wall time: with 2 trials at once ~2 min")
                && first.contains("; one at a time ~4 min"),
            "{first}"
        );
        assert!(
            text.contains("`jbench selftest jobs` measures how far that holds"),
            "{text}"
        );
        assert!(
            text.contains("slots: 40 trials shared; every trial may run beside any other"),
            "{text}"
        );

        let mut s = preset("quick-host");
        let text = time(&s, None, 4);
        assert!(
            text.contains("slots: 36 trials alone; none runs beside another, whatever N: a disk of the host times"),
            "{text}"
        );
        // Two memory limits and the host's disk: three groups, and both reasons.
        s.configs[0].fs_model = Some(crate::experiment::config::DeviceModelSpec::builtin(
            "hdd-7200",
        ));
        s.configs[1] = s.configs[0].clone();
        s.configs[1].memory_limit = Some(1 << 30);
        let text = time(&s, None, 4);
        let slots = text.lines().find(|l| l.contains("slots:")).unwrap();
        assert!(
            slots.contains("9 trials shared, 9 trials shared (memory limit 1G), 18 trials alone; trials of different slots never run at once: ")
                && slots.contains("memory limits differ")
                && slots.contains("a disk of the host times"),
            "{slots}"
        );
    }

    #[test]
    fn the_crash_command_is_priced_as_its_recordings_and_lab() {
        let (s, trials) = plan::crash_plan(&preset("crash-placement"));
        let e = Estimator::new(&s);
        let text = Time {
            spec: &s,
            trials: &trials,
            estimator: &e,
            history: false,
            jobs: 1,
            cgroup_v1: false,
            command: Some("jbench crash"),
            measured: None,
        }
        .describe();
        let first = headline(&text);
        assert!(
            first.starts_with("expected wall time of `jbench crash`: ~"),
            "{first}"
        );
        assert!(text.contains("(6 crash recordings)"), "{text}");
        assert!(
            text.contains("(12 recordings, up to 200 states each, after the last trial)"),
            "{text}"
        );
        let run = time(&preset("crash-placement"), None, 1);
        assert!(run.contains("(6 trials, 6 crash recordings)"), "{run}");
    }
}
