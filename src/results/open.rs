//! The one reader of a results directory. Every command that reads a run's results
//! (`report`, `compare`, `merge`, the end of `run` and `crash`, the HTML page) reads
//! them here, so each sees the same thing: the stored experiment, the trial records
//! already relabelled per machine when `merge.json` says the machines differ, the
//! crash lab's states, the machine's description and the merge record itself.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::crash::{load_crash_records, CrashRecord};
use super::envinfo::Environment;
use super::layout;
use super::merged::{read_merge, MergeRecord};
use super::record::TrialRecord;
use super::store::load_records;
use crate::experiment::spec::{self, Spec};

/// A results directory as read by [`open`].
#[derive(Debug, Clone)]
pub struct Results {
    pub dir: PathBuf,
    /// The experiment stored in `spec.toml`.
    pub spec: Spec,
    /// `trials.jsonl`, labelled `<label>@<machine>` where the merge's machines differ.
    pub records: Vec<TrialRecord>,
    /// `crash.jsonl`; empty when the crash lab did not run.
    pub crash: Vec<CrashRecord>,
    /// `env.json` as written; `None` when it is missing or unreadable (a report still
    /// renders without it).
    pub env: Option<serde_json::Value>,
    /// `merge.json`, for a directory `jbench merge` made.
    pub merge: Option<MergeRecord>,
}

impl Results {
    /// `env.json` as its typed description, when it has one.
    pub fn environment(&self) -> Option<Environment> {
        serde_json::from_value(self.env.clone()?).ok()
    }
}

/// Reads results directory `dir` whole.
pub fn open(dir: &Path) -> Result<Results> {
    let Trials { mut records, merge } = read_trials(dir)?;
    let crash = load_crash_records(&layout::crash_file(dir))?;
    mark_recordings(&mut records, &crash);
    Ok(Results {
        dir: dir.to_path_buf(),
        spec: read_spec(dir)?,
        records,
        crash,
        env: std::fs::read_to_string(dir.join(layout::ENV))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok()),
        merge,
    })
}

/// Marks as a crash recording each record that crash states were cut from: its write
/// log was on, so its times are not the configuration's. Every recording is marked so
/// when it is recorded; this catches the records of a results directory that `jbench
/// crash` wrote before it marked its recordings, whose one write-logged trial per
/// configuration would otherwise be ranked for speed.
pub(crate) fn mark_recordings(records: &mut [TrialRecord], crash: &[CrashRecord]) {
    for r in records.iter_mut().filter(|r| !r.crash_recording) {
        r.crash_recording = crash
            .iter()
            .any(|c| c.trial == r.trial && c.workload == r.workload.name);
    }
}

/// The trial records of a directory and its merge record, for a reader that can do
/// without the rest (`jbench compare` reads a run whose `spec.toml` is unreadable).
pub struct Trials {
    /// Relabelled per machine as in [`Results::records`].
    pub records: Vec<TrialRecord>,
    pub merge: Option<MergeRecord>,
}

/// `dir`'s trials as [`open`] reads them.
pub fn read_trials(dir: &Path) -> Result<Trials> {
    let mut records = load_records(dir)?;
    let merge = read_merge(dir)?;
    if let Some(m) = &merge {
        m.relabel(&mut records);
    }
    Ok(Trials { records, merge })
}

/// The experiment stored in `dir`.
pub fn read_spec(dir: &Path) -> Result<Spec> {
    let path = dir.join(layout::SPEC);
    spec::load(&path)
        .with_context(|| format!("cannot read the experiment stored in {}", path.display()))
}
