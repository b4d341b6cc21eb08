//! `jbench run`: checks, the shard of a sharded run, the run itself (a
//! [`crate::run::session::Session`]), then the text report, report.html and the exit
//! status that says what happened to the trials.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::args::{ExecutorKind, RunArgs};
use crate::cli::exit::is_broken_pipe;
use crate::crash::campaign::CampaignOutcome;
use crate::experiment::{plan, spec};
use crate::report::{self, Format, ReportOptions};
use crate::results::crash::CrashRecord;
use crate::results::fingerprint::Fingerprint;
use crate::results::layout;
use crate::results::record::TrialRecord;
use crate::results::Results;
use crate::run::executor::Executor;
use crate::run::preflight;
use crate::run::runner::RunOutcome;
use crate::run::scripted::ScriptedExecutor;
use crate::run::session::{self, Session};
use crate::scale::shard::{self, ShardArg, ShardBy};
use crate::scale::{seal, sha256_hex};
use crate::units::count;

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (original, origin) = args.source.read()?;
    let spec = spec::parse(&original, &origin)?;
    let shard = match &args.shard {
        Some(arg) => Some(Shard::resolve(arg, args.shard_by, &spec)?),
        None => None,
    };
    // The scripted executor provisions nothing: no root, tools or directories needed.
    let real = args.executor == ExecutorKind::Rig;
    if real && spec.crash.requested {
        // Refused before anything runs: hours of timed trials, then no crash half.
        if let Some(refused) = crate::crash::campaign::refusals(&spec) {
            anyhow::bail!(
                "{refused}\nThe experiment's [crash] table asks for the crash lab; give those configurations emulated disks or remove [crash]."
            );
        }
    }
    if real {
        preflight::require_root("jbench run")?;
        for w in preflight::check(&spec, &args.destroy)? {
            eprintln!("jbench: warning: {w}");
        }
    }
    let results_dir = match &shard {
        Some(s) if args.resume.is_none() && args.results.is_none() => {
            let dir = s.default_results_dir(&spec.name);
            preflight::check_results_dir_trusted(&dir)?;
            dir
        }
        _ => session::results_dir(&args.resume, &args.results, &spec.name)?,
    };
    if let (None, Some(dir)) = (&shard, &args.resume) {
        // The whole plan resumed into one shard's attempt would break its seal.
        if let Some(s) = seal::read_seal(dir)? {
            anyhow::bail!(
                "{} is the sealed attempt of shard {}/{}; resume it with --shard {}/{} --shard-by {}",
                dir.display(),
                s.shard,
                s.shards,
                s.shard,
                s.shards,
                s.shard_by
            );
        }
    }
    if real {
        preflight::create_dirs(&spec)?;
    }
    let mut trials = plan::plan(&spec);
    if let Some(s) = &shard {
        trials = s.trials(&spec, &trials);
        if args.resume.is_some() {
            s.check_resumed(&results_dir)?;
        }
    }
    let mut session =
        Session::open(&spec, &original, &results_dir, args.resume.is_some())?.quiet(args.quiet);
    let dir = session.dir().to_path_buf();
    if let Some(s) = &shard {
        s.check_existing(&dir, &trials, session.existing())?;
        eprintln!(
            "jbench: shard {}/{} by {} (index from {}): {} of the plan's {} trials",
            s.index,
            s.count,
            s.by,
            s.source,
            trials.len(),
            plan::plan(&spec).len()
        );
    }
    if !args.quiet {
        let recordings = trials.iter().filter(|t| t.recording).count();
        eprintln!(
            "jbench: {} ({} x {} x {}{}); results in {}",
            count(trials.len() as u64, "trial"),
            count(spec.configs.len() as u64, "configuration"),
            count(spec.workloads.len() as u64, "workload"),
            repetitions(&spec),
            if recordings > 0 {
                format!(
                    ", plus {} with the write log on, then the crash lab: up to {} each",
                    count(recordings as u64, "crash recording"),
                    count(spec.crash.states, "state")
                )
            } else {
                String::new()
            },
            dir.display()
        );
    }
    let outcome = {
        let mut exec: Box<dyn Executor> = match args.executor {
            ExecutorKind::Rig => {
                Box::new(session.rig_executor(args.destroy.clone(), args.verbose)?)
            }
            ExecutorKind::Scripted => Box::new(ScriptedExecutor),
        };
        session.execute(exec.as_mut(), &trials)?
    };
    let lab = if spec.crash.requested && real && !outcome.interrupted {
        let records = session.records()?;
        let recordings: Vec<&TrialRecord> = records.iter().filter(|r| r.crash_recording).collect();
        session.crash_lab(
            &recordings,
            &spec.crash,
            spec.crash.effective_seed(spec.seed),
        )?
    } else {
        if spec.crash.requested && !real {
            eprintln!(
                "jbench: the scripted executor records no writes: the crash lab does not run"
            );
        }
        CampaignOutcome::default()
    };
    let interrupted = outcome.interrupted || lab.interrupted;
    if let (Some(s), false) = (&shard, interrupted) {
        if lab.failed.is_empty() {
            s.seal(&dir, &spec, &trials)?;
        } else {
            eprintln!(
                "jbench: shard {}/{} not sealed: the crash lab failed on {}; resume it to try again",
                s.index,
                s.count,
                lab.failed
                    .iter()
                    .map(|(c, w)| format!("{c} / {w}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if args.resume.is_some() {
        // A merged directory: the trials run here are this machine's, which may not
        // be the shards' (merge.json; nothing happens to an ordinary directory).
        let here = Fingerprint::of_spec(&spec);
        crate::results::merged::record_local_trials(&dir, &session.records()?, &here)?;
    }
    let (results, opts) = session.finish()?;
    // The run's status says what happened to the trials; a closed or full standard
    // output must not hide it (the results are on disk either way).
    let printed = print_run_report(&results, &opts);
    let code = run_status(&args, &dir, &results.records, &outcome, interrupted)
        .or_else(|| crash_status(&lab.failed, &results.crash))
        .unwrap_or(ExitCode::SUCCESS);
    match printed {
        Ok(()) => Ok(code),
        Err(e) if code == ExitCode::SUCCESS => Err(e),
        Err(e) => {
            if !is_broken_pipe(&e) {
                eprintln!("jbench: error: {e:#}");
            }
            Ok(code)
        }
    }
}

/// `3 repetitions`, or `3..10 repetitions, adaptive to a rate CV of 3.0%`.
fn repetitions(spec: &spec::Spec) -> String {
    match spec.adaptive {
        Some(a) => format!(
            "{}..{} repetitions, adaptive to a rate CV of {:.1}%",
            a.min,
            a.max,
            a.target_cv * 100.0
        ),
        None => count(spec.repetitions, "repetition"),
    }
}

/// The tables, the HTML report's path and the results directory, on standard output.
pub(crate) fn print_run_report(results: &Results, opts: &ReportOptions) -> Result<()> {
    outln!(
        "{}",
        report::environment::render_results(results, opts, Format::Table)
    );
    let html_path = layout::report_html(&results.dir);
    match report::html::render_results(results, opts)
        .and_then(|page| Ok(std::fs::write(&html_path, page)?))
    {
        Ok(()) => outln!("HTML report: {}", html_path.display()),
        Err(e) => eprintln!(
            "jbench: warning: cannot write {}: {e:#}",
            html_path.display()
        ),
    }
    outln!("results: {}", results.dir.display());
    Ok(())
}

/// 2 when the crash lab failed on a recording, else the crash lab's own statuses
/// (5 lost data, 6 no verdict; `jbench crash` documents them); `None`: all is well.
fn crash_status(failed: &[(String, String)], crash: &[CrashRecord]) -> Option<ExitCode> {
    if !failed.is_empty() {
        eprintln!(
            "jbench: the crash lab failed on {} recording(s); see the messages above",
            failed.len()
        );
        return Some(ExitCode::from(2));
    }
    let found = crate::crash::campaign::unexpected(crash);
    for u in found.lost.iter().chain(&found.hung) {
        eprintln!("jbench: {u}");
    }
    if !found.lost.is_empty() {
        return Some(ExitCode::from(5));
    }
    (!found.hung.is_empty()).then(|| ExitCode::from(6))
}

/// 130 interrupted, 3 every trial failed, 2 some failed, `None` all measured; said on
/// stderr.
fn run_status(
    args: &RunArgs,
    dir: &Path,
    records: &[TrialRecord],
    outcome: &RunOutcome,
    interrupted: bool,
) -> Option<ExitCode> {
    if interrupted {
        let again = match (&args.source.spec, &args.source.preset) {
            (Some(p), _) => p.display().to_string(),
            (None, Some(p)) => format!("--preset {p}"),
            (None, None) => String::new(),
        };
        eprintln!(
            "jbench: interrupted; everything was released. Finish with: jbench run {again} --resume {}",
            dir.display()
        );
        return Some(ExitCode::from(130));
    }
    let timed: Vec<&TrialRecord> = records.iter().filter(|r| !r.crash_recording).collect();
    if !timed.is_empty() && timed.iter().all(|r| !r.is_ok()) {
        eprintln!(
            "jbench: {}; nothing was measured (errors in {}/trials.jsonl)",
            report::every_trial_failed(records).unwrap_or_default(),
            dir.display()
        );
        return Some(ExitCode::from(3));
    }
    if outcome.failed > 0 {
        eprintln!(
            "jbench: {} trial(s) failed; see the `error` field in {}/trials.jsonl",
            outcome.failed,
            dir.display()
        );
        return Some(ExitCode::from(2));
    }
    None
}

/// `jbench run --shard`: the resolved shard of this attempt.
struct Shard {
    index: usize,
    count: usize,
    by: ShardBy,
    source: String,
}

impl Shard {
    fn resolve(arg: &ShardArg, by: ShardBy, spec: &spec::Spec) -> Result<Self> {
        // The adaptive rule adds trials after the plan from the results of every
        // configuration; shards would each add their own, with clashing numbers.
        if spec.adaptive.is_some() {
            anyhow::bail!(
                "--shard cannot run an experiment with adaptive repetitions: the extra rounds depend on every shard's results; give a fixed `repetitions`"
            );
        }
        let (index, source) = shard::resolve_index(arg, |k| std::env::var(k).ok())?;
        Ok(Self {
            index,
            count: arg.count,
            by,
            source,
        })
    }

    /// The shard's trials, with the numbers they have in the whole plan.
    fn trials(&self, spec: &spec::Spec, all: &[plan::Trial]) -> Vec<plan::Trial> {
        shard::assign(spec, all, self.count, self.by)[self.index]
            .iter()
            .map(|&i| all[i])
            .collect()
    }

    /// `results/<name>-shard<I>of<N>-<host>-<pid>-<timestamp>`: every attempt its own
    /// directory, since a scheduler may start one shard twice at once.
    fn default_results_dir(&self, name: &str) -> PathBuf {
        let host: String = nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        PathBuf::from("results").join(format!(
            "{name}-shard{}of{}-{host}-{}-{stamp}",
            self.index,
            self.count,
            std::process::id()
        ))
    }

    /// A sealed directory belongs to the shard its seal names.
    fn check_resumed(&self, dir: &Path) -> Result<()> {
        if let Some(seal) = seal::read_seal(dir)? {
            if (seal.shard, seal.shards, seal.shard_by.as_str())
                != (self.index, self.count, self.by.as_str())
            {
                anyhow::bail!(
                    "{} is the sealed attempt of shard {}/{} by {}, not {}/{} by {}",
                    dir.display(),
                    seal.shard,
                    seal.shards,
                    seal.shard_by,
                    self.index,
                    self.count,
                    self.by
                );
            }
        }
        Ok(())
    }

    /// Records of trials outside the shard mean the directory is another shard's (or a
    /// whole run's): resuming into it would mix them.
    fn check_existing(
        &self,
        dir: &Path,
        trials: &[plan::Trial],
        existing: &[TrialRecord],
    ) -> Result<()> {
        let mine: std::collections::BTreeSet<usize> = trials.iter().map(|t| t.index).collect();
        let foreign: Vec<usize> = existing
            .iter()
            .map(|r| r.trial)
            .filter(|i| !mine.contains(i))
            .collect();
        if !foreign.is_empty() {
            anyhow::bail!(
                "{} holds trials {} that are not in shard {}/{} by {}; resume it with the --shard and --shard-by it was started with",
                dir.display(),
                shard::compact_ranges(&foreign),
                self.index,
                self.count,
                self.by
            );
        }
        Ok(())
    }

    /// Writes the seal when every trial of the shard has a record (ok or failed).
    fn seal(&self, dir: &Path, spec: &spec::Spec, trials: &[plan::Trial]) -> Result<()> {
        let done = crate::results::store::done_indices(&crate::results::store::load_records(dir)?);
        let missing: Vec<usize> = trials
            .iter()
            .map(|t| t.index)
            .filter(|i| !done.contains(i))
            .collect();
        if !missing.is_empty() {
            eprintln!(
                "jbench: shard {}/{} not sealed: trials {} have no record",
                self.index,
                self.count,
                shard::compact_ranges(&missing)
            );
            return Ok(());
        }
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .with_context(|| format!("cannot read {}", dir.join(name).display()))
        };
        let spec_sha256 = sha256_hex(&read(layout::SPEC)?);
        let trials_sha256 = sha256_hex(&read(layout::TRIALS)?);
        let crash_file = layout::crash_file(dir);
        let crash_sha256 = if crash_file.is_file() {
            Some(sha256_hex(&read(layout::CRASH)?))
        } else {
            None
        };
        // A resumed attempt that was already sealed over these same bytes keeps its
        // seal (and its time).
        if let Some(old) = seal::read_seal(dir)? {
            if old.trials_sha256 == trials_sha256
                && old.crash_sha256 == crash_sha256
                && seal::verify(dir, &old).is_ok()
            {
                return Ok(());
            }
        }
        let scheduler = SCHEDULER_VARS
            .iter()
            .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
            .collect();
        let sealed = seal::Seal {
            seal_version: seal::SEAL_VERSION,
            shard: self.index,
            shards: self.count,
            shard_by: self.by.as_str().to_string(),
            spec_sha256,
            jbench_version: env!("CARGO_PKG_VERSION").to_string(),
            schema_version: crate::results::record::SCHEMA_VERSION,
            trials: trials.iter().map(|t| t.index).collect(),
            trials_sha256,
            crash_sha256,
            machine: Fingerprint::of_spec(spec),
            index_source: self.source.clone(),
            sealed_at: chrono::Local::now().to_rfc3339(),
            scheduler,
        };
        seal::write_seal(dir, &sealed)?;
        eprintln!(
            "jbench: shard {}/{} sealed: {}",
            self.index,
            self.count,
            dir.join(seal::SEAL).display()
        );
        Ok(())
    }
}

/// Scheduler identifiers kept in a seal, so a merge can tell attempts apart (`HOSTNAME`
/// is the pod's name on Kubernetes).
const SCHEDULER_VARS: [&str; 7] = [
    "SLURM_JOB_ID",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_RESTART_COUNT",
    "SLURMD_NODENAME",
    "JOB_COMPLETION_INDEX",
    "HOSTNAME",
];
