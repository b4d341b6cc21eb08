//! `merge.json`: what a merged results directory records about the shards it was
//! made of (docs/scale-out.md), and what every report of it must show: per-machine
//! labels when the machines differ, and the merge's warnings. `jbench merge` writes it
//! (`scale::merge`); [`super::open`] applies it to the records it reads.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::results::fingerprint::Fingerprint;
use crate::results::layout;
use crate::results::record::TrialRecord;
use crate::results::store::write_synced;

pub const MERGE_VERSION: u32 = 1;

/// An attempt the merge used for its shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptUsed {
    pub shard: usize,
    pub dir: String,
    /// Key into [`MergeRecord::machines`].
    pub machine: String,
    pub sealed_at: String,
    #[serde(default)]
    pub scheduler: BTreeMap<String, String>,
}

/// A sealed attempt of a shard that another attempt of the same shard won over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplicateIgnored {
    pub shard: usize,
    pub dir: String,
    pub sealed_at: String,
    #[serde(default)]
    pub scheduler: BTreeMap<String, String>,
}

/// `merge.json` of a merged results directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeRecord {
    pub version: u32,
    pub shards: usize,
    pub shard_by: String,
    pub spec_sha256: String,
    pub jbench_version: String,
    pub schema_version: u32,
    /// Ordered by shard.
    pub attempts: Vec<AttemptUsed>,
    #[serde(default)]
    pub duplicates_ignored: Vec<DuplicateIgnored>,
    /// Attempt directories without a seal.
    #[serde(default)]
    pub unsealed_ignored: Vec<String>,
    #[serde(default)]
    pub missing_shards: Vec<usize>,
    /// Plan indices no merged attempt had (the missing shards' trials): the report
    /// counts those still absent, so a `--resume` that ran them ends the warning.
    #[serde(default)]
    pub missing_trials: Vec<usize>,
    pub partial: bool,
    /// More than one machine in [`MergeRecord::machines`].
    pub heterogeneous: bool,
    /// Machine id ([`Fingerprint::id`]) -> fingerprint.
    pub machines: BTreeMap<String, Fingerprint>,
    /// Trial index -> machine id. `--resume` of the merged directory adds the trials
    /// it ran here.
    pub trial_machine: BTreeMap<usize, String>,
}

/// Writes `record` as `dir`'s `merge.json`.
pub fn write_merge_record(dir: &Path, record: &MergeRecord) -> Result<()> {
    let mut text = serde_json::to_vec_pretty(record)?;
    text.push(b'\n');
    // Written whole then renamed: a reader never sees half a merge.json.
    let tmp = dir.join(format!(".{}.tmp", layout::MERGE));
    write_synced(&tmp, &text)?;
    fs::rename(&tmp, dir.join(layout::MERGE))
        .with_context(|| format!("cannot write {}", dir.join(layout::MERGE).display()))
}

/// `merge.json` of `dir`, `None` for a directory that is not a merge.
pub fn read_merge(dir: &Path) -> Result<Option<MergeRecord>> {
    let path = dir.join(layout::MERGE);
    match fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .with_context(|| format!("{} is not a merge record", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// After `jbench run --resume` of a merged directory: the trials it ran here get this
/// machine (`here`), so the report can tell if they must be kept apart from the
/// shards'. Does nothing to a directory that is not a merge.
pub fn record_local_trials(dir: &Path, records: &[TrialRecord], here: &Fingerprint) -> Result<()> {
    let Some(mut m) = read_merge(dir)? else {
        return Ok(());
    };
    let new: Vec<usize> = records
        .iter()
        .map(|r| r.trial)
        .filter(|t| !m.trial_machine.contains_key(t))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    let id = here.id();
    m.machines.entry(id.clone()).or_insert_with(|| here.clone());
    for t in new {
        m.trial_machine.insert(t, id.clone());
    }
    m.heterogeneous = m.machines.len() > 1;
    write_merge_record(dir, &m)
}

const UNRECORDED: &str = "unrecorded";

impl MergeRecord {
    pub fn machine_of(&self, trial: usize) -> &str {
        self.trial_machine
            .get(&trial)
            .map(String::as_str)
            .unwrap_or(UNRECORDED)
    }

    /// Machine ids in the order of the shards that used them (then any others).
    pub fn machine_order(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let ids = self
            .attempts
            .iter()
            .map(|a| a.machine.clone())
            .chain(self.trial_machine.values().cloned())
            .chain(self.machines.keys().cloned())
            .chain(std::iter::once(UNRECORDED.to_string()));
        for id in ids {
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// The warnings every report of this merge carries, given the records it has now.
    pub fn warnings(&self, records: &[TrialRecord]) -> Vec<String> {
        let mut out = Vec::new();
        let have: BTreeSet<usize> = records.iter().map(|r| r.trial).collect();
        let still_missing = self
            .missing_trials
            .iter()
            .filter(|t| !have.contains(t))
            .count();
        if self.partial && still_missing > 0 {
            out.push(format!(
                "partial merge: shard{} {} missing ({still_missing} trial{})",
                if self.missing_shards.len() == 1 {
                    ""
                } else {
                    "s"
                },
                join(&self.missing_shards),
                if still_missing == 1 { "" } else { "s" }
            ));
        }
        if self.heterogeneous {
            let mut ran: Vec<String> = Vec::new();
            for id in self.machine_order() {
                let mine: Vec<&TrialRecord> = records
                    .iter()
                    .filter(|r| self.machine_of(r.trial) == id)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let shards: Vec<usize> = self
                    .attempts
                    .iter()
                    .filter(|a| a.machine == id)
                    .map(|a| a.shard)
                    .collect();
                let mut labels: Vec<&str> = Vec::new();
                for r in &mine {
                    let l = r.config.label.split('@').next().unwrap_or_default();
                    if !labels.contains(&l) {
                        labels.push(l);
                    }
                }
                let what = match self.machines.get(&id) {
                    Some(f) => format!("{}, {} CPUs, kernel {}", f.cpu_model, f.cpus, f.kernel),
                    None => "machine not recorded".to_string(),
                };
                let from = if shards.is_empty() {
                    "run by --resume".to_string()
                } else {
                    format!(
                        "shard{} {}",
                        if shards.len() == 1 { "" } else { "s" },
                        join(&shards)
                    )
                };
                ran.push(format!(
                    "@{id} ({what}) ran {} trial{} ({from}: {})",
                    mine.len(),
                    if mine.len() == 1 { "" } else { "s" },
                    labels.join(", ")
                ));
            }
            out.push(format!(
                "heterogeneous machines: {}. Each configuration is shown per machine as <label>@<machine>; comparisons between labels with different @machine span machines, so machine differences are part of them",
                ran.join("; ")
            ));
        }
        out
    }

    /// Relabels each record `<label>@<machine>` when the machines differ, so no mean
    /// pools two machines' rates. Labels already carrying their machine stay as they are.
    pub fn relabel(&self, records: &mut [TrialRecord]) {
        if !self.heterogeneous {
            return;
        }
        for r in records {
            let suffix = format!("@{}", self.machine_of(r.trial));
            if !r.config.label.ends_with(&suffix) {
                r.config.label.push_str(&suffix);
            }
        }
    }
}

pub(crate) fn join(xs: &[usize]) -> String {
    xs.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
