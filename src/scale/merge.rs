//! `jbench merge`: the sealed attempts of a sharded run into one ordinary results
//! directory, and what a report of such a directory must say (`merge.json`).
//!
//! Rules (docs/scale-out.md):
//! - only sealed attempts count; a directory without `shard.json` did not finish,
//!   whatever it holds, and a seal that no longer matches its directory is an error;
//! - every attempt must come from the same spec, jbench and results schema, cut into
//!   the same shards the same way;
//! - one attempt per shard, chosen deterministically (earliest seal, then directory),
//!   because execution is at-least-once and requeued shards leave duplicates;
//! - missing shards and machines that differ are refused unless asked for, and then
//!   recorded so that every report says so.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::report::ReportOptions;
use crate::results::layout;
use crate::results::record::{TrialRecord, SCHEMA_VERSION};
use crate::scale::fingerprint::Fingerprint;
use crate::scale::seal::{self, Seal, SEAL};

mod read;
use read::{crash_lines, raw_records};

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

/// What [`merge`] is asked to do.
#[derive(Debug, Clone)]
pub struct MergeRequest {
    pub dirs: Vec<PathBuf>,
    pub out: PathBuf,
    pub partial: bool,
    pub allow_heterogeneous: bool,
}

/// What [`merge`] did, for the command's summary.
#[derive(Debug, Clone)]
pub struct MergeOutcome {
    pub record: MergeRecord,
    pub trials: usize,
    /// Directories looked at and passed over, with why (a merged directory, the output).
    pub skipped: Vec<String>,
}

struct Attempt {
    dir: PathBuf,
    seal: Seal,
}

/// What the command-line directories hold: sealed attempts, unsealed ones, and
/// directories passed over.
#[derive(Default)]
struct Found {
    sealed: Vec<Attempt>,
    unsealed: Vec<PathBuf>,
    skipped: Vec<String>,
}

/// Merges the sealed attempts under `req.dirs` into `req.out` (see the module
/// documentation). Writes everything but `summary.csv`, which the report module makes.
pub fn merge(req: &MergeRequest) -> Result<MergeOutcome> {
    let out_canon = req.out.canonicalize().ok();
    let found = find_attempts(&req.dirs, out_canon.as_deref())?;
    if found.sealed.is_empty() {
        bail!(
            "no sealed attempt (a directory with {SEAL}) among {}{}",
            list_paths(&req.dirs),
            if found.unsealed.is_empty() {
                String::new()
            } else {
                format!(
                    "; not sealed (attempts that did not finish): {}",
                    list_paths(&found.unsealed)
                )
            }
        );
    }
    let mut sealed = found.sealed;
    // Deterministic whatever the order of the command line or of read_dir.
    sealed.sort_by(|a, b| {
        (a.seal.shard, sealed_key(&a.seal), &a.dir).cmp(&(
            b.seal.shard,
            sealed_key(&b.seal),
            &b.dir,
        ))
    });
    check_same_run(&sealed)?;
    let first = &sealed[0].seal;
    let shards = first.shards;
    for a in &sealed {
        if a.seal.shard >= shards {
            bail!(
                "{}: shard {} of {shards} does not exist (its seal is inconsistent)",
                a.dir.display(),
                a.seal.shard
            );
        }
    }
    let mut chosen: Vec<&Attempt> = Vec::new();
    let mut duplicates = Vec::new();
    for a in &sealed {
        match chosen.last() {
            Some(c) if c.seal.shard == a.seal.shard => duplicates.push(DuplicateIgnored {
                shard: a.seal.shard,
                dir: a.dir.display().to_string(),
                sealed_at: a.seal.sealed_at.clone(),
                scheduler: a.seal.scheduler.clone(),
            }),
            _ => chosen.push(a),
        }
    }
    let present: BTreeSet<usize> = chosen.iter().map(|a| a.seal.shard).collect();
    let missing_shards: Vec<usize> = (0..shards).filter(|s| !present.contains(s)).collect();
    if !missing_shards.is_empty() && !req.partial {
        bail!(
            "shard{} {} of {shards} {} no sealed attempt{}; run {} again, or merge what there is with --partial (every report then says which shards are missing)",
            if missing_shards.len() == 1 { "" } else { "s" },
            join(&missing_shards),
            if missing_shards.len() == 1 { "has" } else { "have" },
            if found.unsealed.is_empty() {
                String::new()
            } else {
                format!(
                    " (not sealed, attempts that did not finish: {})",
                    list_paths(&found.unsealed)
                )
            },
            if missing_shards.len() == 1 { "it" } else { "them" },
        );
    }
    let mut machines: BTreeMap<String, Fingerprint> = BTreeMap::new();
    for a in &chosen {
        machines
            .entry(a.seal.machine.id())
            .or_insert_with(|| a.seal.machine.clone());
    }
    let heterogeneous = machines.len() > 1;
    if heterogeneous && !req.allow_heterogeneous {
        bail!(
            "the shards ran on machines that differ; their rates must not be pooled into one mean:\n{}\nMerge anyway with --allow-heterogeneous: the report then keeps each machine's trials apart (configurations labelled <label>@<machine>)",
            machine_differences(&chosen)
        );
    }

    // Read everything before writing anything.
    let mut lines: BTreeMap<usize, (Vec<u8>, String)> = BTreeMap::new();
    let mut trial_machine = BTreeMap::new();
    for a in &chosen {
        let id = a.seal.machine.id();
        for (trial, line) in raw_records(a)? {
            if let Some((_, other)) = lines.get(&trial) {
                bail!(
                    "trial {trial} is in two shards ({other} and {}); these attempts are not of one plan",
                    a.dir.display()
                );
            }
            lines.insert(trial, (line, a.dir.display().to_string()));
            trial_machine.insert(trial, id.clone());
        }
    }
    let crash = crash_lines(&chosen, heterogeneous)?;
    let first_dir = &chosen[0].dir;
    let spec_text = fs::read_to_string(first_dir.join(layout::SPEC))
        .with_context(|| format!("cannot read {}", first_dir.join(layout::SPEC).display()))?;
    let spec = crate::experiment::spec::load(&first_dir.join(layout::SPEC))
        .with_context(|| format!("cannot read the experiment of {}", first_dir.display()))?;
    let missing_trials: Vec<usize> = crate::experiment::plan::plan(&spec)
        .iter()
        .map(|t| t.index)
        .filter(|i| !lines.contains_key(i))
        .collect();

    let record = MergeRecord {
        version: MERGE_VERSION,
        shards,
        shard_by: first.shard_by.clone(),
        spec_sha256: first.spec_sha256.clone(),
        jbench_version: first.jbench_version.clone(),
        schema_version: first.schema_version,
        attempts: chosen
            .iter()
            .map(|a| AttemptUsed {
                shard: a.seal.shard,
                dir: a.dir.display().to_string(),
                machine: a.seal.machine.id(),
                sealed_at: a.seal.sealed_at.clone(),
                scheduler: a.seal.scheduler.clone(),
            })
            .collect(),
        duplicates_ignored: duplicates,
        unsealed_ignored: found
            .unsealed
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        partial: !missing_shards.is_empty(),
        missing_shards,
        missing_trials,
        heterogeneous,
        machines,
        trial_machine,
    };

    prepare_out(&req.out)?;
    let out = &req.out;
    write_synced(&out.join(layout::SPEC), spec_text.as_bytes())?;
    copy_file(
        &first_dir.join(layout::ORIGINAL),
        &out.join(layout::ORIGINAL),
    )?;
    if first_dir.join(layout::ENV).is_file() {
        copy_file(&first_dir.join(layout::ENV), &out.join(layout::ENV))?;
    }
    let mut trials = Vec::new();
    for (line, _) in lines.values() {
        trials.extend_from_slice(line);
        trials.push(b'\n');
    }
    write_synced(&out.join(layout::TRIALS), &trials)?;
    if !crash.is_empty() {
        write_synced(&out.join(layout::CRASH), &crash)?;
    }
    for a in &chosen {
        copy_folder(&layout::monitor_dir(&a.dir), &layout::monitor_dir(out))?;
        copy_folder(&layout::write_log_dir(&a.dir), &layout::write_log_dir(out))?;
    }
    write_merge_record(out, &record)?;
    Ok(MergeOutcome {
        record,
        trials: lines.len(),
        skipped: found.skipped,
    })
}

/// Sorts seals by when they were written; an unparsable time sorts by its text, after
/// every parsable one.
fn sealed_key(s: &Seal) -> (Option<chrono::DateTime<chrono::Utc>>, bool, String) {
    match chrono::DateTime::parse_from_rfc3339(&s.sealed_at) {
        Ok(t) => (Some(t.with_timezone(&chrono::Utc)), false, String::new()),
        Err(_) => (None, true, s.sealed_at.clone()),
    }
}

fn find_attempts(dirs: &[PathBuf], out: Option<&Path>) -> Result<Found> {
    let mut found = Found::default();
    let mut seen = BTreeSet::new();
    for d in dirs {
        if !d.is_dir() {
            bail!("{} is not a directory", d.display());
        }
        if looks_like_attempt(d) || d.join(layout::MERGE).exists() {
            classify(d, out, &mut seen, &mut found)?;
            continue;
        }
        let mut subdirs: Vec<PathBuf> = fs::read_dir(d)
            .with_context(|| format!("cannot list {}", d.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        let before = found.sealed.len() + found.unsealed.len();
        for s in subdirs {
            // A folder beside the attempts that is not one (logs, scripts) is no
            // attempt that did not finish.
            if looks_like_attempt(&s) || s.join(layout::MERGE).exists() {
                classify(&s, out, &mut seen, &mut found)?;
            }
        }
        if found.sealed.len() + found.unsealed.len() == before {
            bail!(
                "{} is not an attempt directory and holds none ({SEAL}, {} or {} in it or one level down)",
                d.display(),
                layout::TRIALS,
                layout::SPEC
            );
        }
    }
    Ok(found)
}

fn looks_like_attempt(d: &Path) -> bool {
    [SEAL, layout::TRIALS, layout::SPEC]
        .iter()
        .any(|f| d.join(f).exists())
}

fn classify(
    d: &Path,
    out: Option<&Path>,
    seen: &mut BTreeSet<PathBuf>,
    found: &mut Found,
) -> Result<()> {
    let canon = d.canonicalize().unwrap_or_else(|_| d.to_path_buf());
    if !seen.insert(canon.clone()) {
        return Ok(());
    }
    if Some(canon.as_path()) == out {
        found
            .skipped
            .push(format!("{} (the output directory)", d.display()));
        return Ok(());
    }
    if d.join(layout::MERGE).exists() && !d.join(SEAL).exists() {
        found.skipped.push(format!(
            "{} (a merged directory, not an attempt)",
            d.display()
        ));
        return Ok(());
    }
    match seal::read_seal(d).with_context(|| format!("cannot read the seal of {}", d.display()))? {
        None => found.unsealed.push(d.to_path_buf()),
        Some(s) => {
            seal::verify(d, &s).with_context(|| {
                format!(
                    "{}: the seal ({SEAL}) does not match what the directory holds; it was changed after the shard finished, so none of it can be trusted",
                    d.display()
                )
            })?;
            found.sealed.push(Attempt {
                dir: d.to_path_buf(),
                seal: s,
            });
        }
    }
    Ok(())
}

/// Every seal must describe the same sharded run as the first.
fn check_same_run(sealed: &[Attempt]) -> Result<()> {
    let first = &sealed[0];
    type Field = (&'static str, fn(&Seal) -> String);
    let fields: [Field; 5] = [
        ("spec_sha256", |s| s.spec_sha256.clone()),
        ("jbench_version", |s| s.jbench_version.clone()),
        ("schema_version", |s| s.schema_version.to_string()),
        ("shards", |s| s.shards.to_string()),
        ("shard_by", |s| s.shard_by.clone()),
    ];
    for a in &sealed[1..] {
        for (name, get) in &fields {
            let (x, y) = (get(&first.seal), get(&a.seal));
            if x != y {
                bail!(
                    "the attempts are not of one sharded run: {name} is {x} in {} but {y} in {}; merge the attempts of one run only",
                    first.dir.display(),
                    a.dir.display()
                );
            }
        }
    }
    if first.seal.schema_version > SCHEMA_VERSION {
        bail!(
            "{}: trials of schema_version {}, but this jbench ({}) reads up to {SCHEMA_VERSION}",
            first.dir.display(),
            first.seal.schema_version,
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok(())
}

/// Each machine other than the first chosen attempt's, field by field against it.
fn machine_differences(chosen: &[&Attempt]) -> String {
    let mut by_machine: Vec<(String, &Fingerprint, Vec<&Attempt>)> = Vec::new();
    for a in chosen {
        let id = a.seal.machine.id();
        match by_machine.iter_mut().find(|(m, _, _)| *m == id) {
            Some((_, _, v)) => v.push(a),
            None => by_machine.push((id, &a.seal.machine, vec![a])),
        }
    }
    let describe = |v: &[&Attempt]| {
        v.iter()
            .map(|a| format!("shard {} ({})", a.seal.shard, a.dir.display()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (id0, m0, v0) = &by_machine[0];
    let mut out = Vec::new();
    for (id, m, v) in &by_machine[1..] {
        out.push(format!(
            "  machine {id0} [{}] vs machine {id} [{}]:",
            describe(v0),
            describe(v)
        ));
        for d in m0.differences(m) {
            out.push(format!("    {d}"));
        }
    }
    out.join("\n")
}

fn prepare_out(out: &Path) -> Result<()> {
    if out.exists() {
        let empty = out.is_dir()
            && fs::read_dir(out)
                .with_context(|| format!("cannot list {}", out.display()))?
                .next()
                .is_none();
        if !empty {
            bail!(
                "{} exists and is not empty; merge into a new directory",
                out.display()
            );
        }
    }
    crate::trust::create_trusted_dir(out)
        .with_context(|| format!("cannot create the merged directory {}", out.display()))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()
        .with_context(|| format!("cannot write {}", path.display()))
}

fn copy_file(from: &Path, to: &Path) -> Result<()> {
    let bytes = fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
    write_synced(to, &bytes)
}

/// Copies the regular files of `from` (monitor series, write logs: named by trial, so
/// two attempts never write the same name unless they share a trial).
fn copy_folder(from: &Path, to: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(from) else {
        return Ok(());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    files.sort();
    if files.is_empty() {
        return Ok(());
    }
    crate::trust::create_trusted_dir(to)
        .with_context(|| format!("cannot create {}", to.display()))?;
    for f in files {
        let target = to.join(f.file_name().expect("a file has a name"));
        if target.exists() {
            bail!(
                "{} and another attempt both hold {}",
                from.display(),
                target.file_name().unwrap_or_default().to_string_lossy()
            );
        }
        copy_file(&f, &target)?;
    }
    Ok(())
}

fn write_merge_record(dir: &Path, record: &MergeRecord) -> Result<()> {
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
    fn machine_of(&self, trial: usize) -> &str {
        self.trial_machine
            .get(&trial)
            .map(String::as_str)
            .unwrap_or(UNRECORDED)
    }

    /// Machine ids in the order of the shards that used them (then any others).
    fn machine_order(&self) -> Vec<String> {
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

    /// Makes `records` and `opts` show this merge: relabelled per machine (order and
    /// baseline follow), and the merge's warnings first. Applying it twice changes
    /// nothing more, so a caller may apply it and hand the options on to the HTML page,
    /// which applies it again to the records it reads.
    pub fn apply(&self, records: &mut [TrialRecord], opts: &mut ReportOptions) {
        self.relabel(records);
        if self.heterogeneous {
            let ids = self.machine_order();
            let split = |label: &str| -> Vec<String> {
                if ids.iter().any(|id| label.ends_with(&format!("@{id}"))) {
                    return vec![label.to_string()];
                }
                ids.iter()
                    .map(|id| format!("{label}@{id}"))
                    .filter(|l| records.iter().any(|r| &r.config.label == l))
                    .collect()
            };
            opts.config_order = opts.config_order.iter().flat_map(|l| split(l)).collect();
            if let Some(b) = &opts.baseline {
                if let Some(first) = split(b).into_iter().next() {
                    opts.baseline = Some(first);
                }
            }
        }
        for w in self.warnings(records) {
            if !opts.warnings.contains(&w) {
                opts.warnings.push(w);
            }
        }
    }
}

/// Applies `dir`'s `merge.json` (if it is a merged directory) to the records and
/// options of its report; see [`MergeRecord::apply`].
pub fn apply_dir(dir: &Path, records: &mut [TrialRecord], opts: &mut ReportOptions) -> Result<()> {
    if let Some(m) = read_merge(dir)? {
        m.apply(records, opts);
    }
    Ok(())
}

fn join(xs: &[usize]) -> String {
    xs.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_paths(ps: &[PathBuf]) -> String {
    ps.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::adaptive::tests::rec;

    fn machine(cpu: &str) -> Fingerprint {
        Fingerprint {
            cpu_model: cpu.into(),
            cpus: 4,
            memory_bytes: 8 << 30,
            kernel: "6.1.0".into(),
            virtualization: "none".into(),
            e2fsprogs: "1.47".into(),
            xfsprogs: "6.1".into(),
            work_dir_storage: "ext4 on /dev/sda1".into(),
            jbench_version: "0.1.0".into(),
            ..Default::default()
        }
    }

    fn record(heterogeneous: bool) -> MergeRecord {
        let (a, b) = (machine("A"), machine(if heterogeneous { "B" } else { "A" }));
        MergeRecord {
            version: MERGE_VERSION,
            shards: 3,
            shard_by: "round".into(),
            spec_sha256: "s".into(),
            jbench_version: "0.1.0".into(),
            schema_version: SCHEMA_VERSION,
            attempts: vec![
                AttemptUsed {
                    shard: 0,
                    dir: "r/0".into(),
                    machine: a.id(),
                    sealed_at: String::new(),
                    scheduler: Default::default(),
                },
                AttemptUsed {
                    shard: 1,
                    dir: "r/1".into(),
                    machine: b.id(),
                    sealed_at: String::new(),
                    scheduler: Default::default(),
                },
            ],
            duplicates_ignored: vec![],
            unsealed_ignored: vec![],
            missing_shards: vec![2],
            missing_trials: vec![2, 5],
            partial: true,
            heterogeneous,
            machines: [(a.id(), a.clone()), (b.id(), b.clone())].into(),
            trial_machine: [(0, a.id()), (3, a.id()), (1, b.id()), (4, b.id())].into(),
        }
    }

    fn records() -> Vec<TrialRecord> {
        [0, 1, 3, 4]
            .into_iter()
            .map(|t| rec(t, if t % 2 == 0 { "x" } else { "y" }, "w", 10.0))
            .collect()
    }

    #[test]
    fn heterogeneous_apply_splits_labels_per_machine_once_and_warns() {
        let m = record(true);
        let (a, b) = (machine("A").id(), machine("B").id());
        let mut recs = records();
        let mut opts = ReportOptions {
            config_order: vec!["x".into(), "y".into()],
            baseline: Some("x".into()),
            ..Default::default()
        };
        m.apply(&mut recs, &mut opts);
        let again = (recs.clone(), opts.clone());
        m.apply(&mut recs, &mut opts);
        assert_eq!(
            (recs.clone(), opts.clone()),
            again,
            "applying twice changes nothing"
        );
        assert_eq!(recs[0].config.label, format!("x@{a}"));
        assert_eq!(recs[1].config.label, format!("y@{b}"));
        assert_eq!(opts.baseline, Some(format!("x@{a}")));
        assert_eq!(
            opts.config_order,
            vec![
                format!("x@{a}"),
                format!("x@{b}"),
                format!("y@{a}"),
                format!("y@{b}")
            ]
        );
        assert_eq!(
            opts.warnings[0],
            "partial merge: shard 2 missing (2 trials)"
        );
        assert!(
            opts.warnings[1].starts_with("heterogeneous machines: "),
            "{:?}",
            opts.warnings
        );
        assert!(
            opts.warnings[1].contains(&format!("@{a} (A, 4 CPUs")),
            "{:?}",
            opts.warnings
        );
    }

    #[test]
    fn homogeneous_apply_leaves_the_report_alone_once_complete() {
        let mut m = record(false);
        m.partial = false;
        m.missing_shards.clear();
        m.missing_trials.clear();
        let mut recs = records();
        let before = recs.clone();
        let mut opts = ReportOptions::default();
        m.apply(&mut recs, &mut opts);
        assert_eq!(recs, before);
        assert_eq!(opts, ReportOptions::default());
    }
}
