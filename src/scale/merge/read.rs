//! What a merge takes from each sealed attempt: its trial records as the raw lines it
//! sealed, and its crash states.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use anyhow::{bail, Context, Result};

use super::Attempt;
use crate::results::layout;
use crate::results::record::TrialRecord;
use crate::results::store;

/// The shards' crash states (`crash.jsonl`), one after another in shard order. A state
/// is one (configuration, workload, state number), and a configuration x workload is
/// recorded in one shard only: one in two shards means the attempts are not of one
/// plan. With machines that differ each state's configuration is labelled
/// `<label>@<machine>`, as the trial records are when the report reads them.
pub(super) fn crash_lines(chosen: &[&Attempt], heterogeneous: bool) -> Result<Vec<u8>> {
    use crate::results::crash::load_crash_records;
    let mut out = Vec::new();
    let mut owner: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut seen: BTreeSet<(String, String, u64)> = BTreeSet::new();
    for a in chosen {
        let path = layout::crash_file(&a.dir);
        if !path.is_file() {
            continue;
        }
        for mut r in load_crash_records(&path)? {
            let dir = a.dir.display().to_string();
            let key = (r.config.clone(), r.workload.clone());
            match owner.get(&key) {
                Some(other) if *other != dir => bail!(
                    "the crash states of {} / {} are in two shards ({other} and {dir}); these attempts are not of one plan",
                    r.config,
                    r.workload
                ),
                _ => {
                    owner.insert(key, dir);
                }
            }
            if !seen.insert((r.config.clone(), r.workload.clone(), r.state)) {
                continue; // a resumed lab never writes a state twice; be safe anyway
            }
            if heterogeneous {
                let suffix = format!("@{}", a.seal.machine.id());
                if !r.config.ends_with(&suffix) {
                    r.config.push_str(&suffix);
                }
            }
            out.extend(serde_json::to_vec(&r)?);
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// The attempt's trial records as the raw lines it sealed (so the merged file holds
/// exactly what each machine wrote), with their trial index.
pub(super) fn raw_records(a: &Attempt) -> Result<Vec<(usize, Vec<u8>)>> {
    let path = a.dir.join(layout::TRIALS);
    let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let allowed: BTreeSet<usize> = a.seal.trials.iter().copied().collect();
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (n, _, line) in store::lines(&bytes) {
        let r: TrialRecord = match store::parse_line(&path, n, line)? {
            store::Line::Record(r) => *r,
            store::Line::Bad(e) => bail!("{}:{n}: not a trial record ({e})", path.display()),
        };
        if !allowed.contains(&r.trial) {
            bail!(
                "{}:{n}: trial {} is not one of shard {}'s trials as sealed",
                path.display(),
                r.trial,
                a.seal.shard
            );
        }
        if !seen.insert(r.trial) {
            bail!("{}: trial {} is recorded twice", path.display(), r.trial);
        }
        out.push((r.trial, line.to_vec()));
    }
    Ok(out)
}
