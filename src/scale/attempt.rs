//! One attempt of one shard (`jbench run --shard I/N`): which of the plan's trials it
//! runs, its own results directory, the checks that a resumed directory is this shard's,
//! and the seal that says the attempt finished (docs/scale-out.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::seal;
use super::shard::{ShardArg, ShardBy};
use crate::experiment::plan::Trial;
use crate::experiment::spec::Spec;
use crate::results::fingerprint::{sha256_hex, Fingerprint};
use crate::results::record::TrialRecord;
use crate::results::{layout, store};

/// The resolved shard of this attempt.
pub struct ShardAttempt {
    pub index: usize,
    pub count: usize,
    pub by: ShardBy,
    /// Where the index came from (`--shard`, or the scheduler's variable).
    pub source: String,
}

impl ShardAttempt {
    pub fn resolve(arg: &ShardArg, by: ShardBy, spec: &Spec) -> Result<Self> {
        // The adaptive rule adds trials after the plan from the results of every
        // configuration; shards would each add their own, with clashing numbers.
        if spec.adaptive.is_some() {
            anyhow::bail!(
                "--shard cannot run an experiment with adaptive repetitions: the extra rounds depend on every shard's results; give a fixed `repetitions`"
            );
        }
        let (index, source) = super::shard::resolve_index(arg, |k| std::env::var(k).ok())?;
        Ok(Self {
            index,
            count: arg.count,
            by,
            source,
        })
    }

    /// The shard's trials, with the numbers they have in the whole plan.
    pub fn trials(&self, spec: &Spec, all: &[Trial]) -> Vec<Trial> {
        super::shard::assign(spec, all, self.count, self.by)[self.index]
            .iter()
            .map(|&i| all[i])
            .collect()
    }

    /// `results/<name>-shard<I>of<N>-<host>-<pid>-<timestamp>`: every attempt its own
    /// directory, since a scheduler may start one shard twice at once.
    pub fn default_results_dir(&self, name: &str) -> PathBuf {
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
    pub fn check_resumed(&self, dir: &Path) -> Result<()> {
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
    pub fn check_existing(
        &self,
        dir: &Path,
        trials: &[Trial],
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
                super::shard::compact_ranges(&foreign),
                self.index,
                self.count,
                self.by
            );
        }
        Ok(())
    }

    /// Writes the seal when every trial of the shard has a record (ok or failed).
    pub fn seal(&self, dir: &Path, spec: &Spec, trials: &[Trial]) -> Result<()> {
        let done = store::done_indices(&store::load_records(dir)?);
        let missing: Vec<usize> = trials
            .iter()
            .map(|t| t.index)
            .filter(|i| !done.contains(i))
            .collect();
        if !missing.is_empty() {
            crate::events::emit(crate::events::Event::ShardNotSealed {
                index: self.index,
                count: self.count,
                missing: super::shard::compact_ranges(&missing),
            });
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
        crate::events::emit(crate::events::Event::ShardSealed {
            index: self.index,
            count: self.count,
            seal: dir.join(seal::SEAL),
        });
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
