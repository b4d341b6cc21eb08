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
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::results::fingerprint::Fingerprint;
use crate::results::layout;
use crate::results::merged::{
    join, write_merge_record, AttemptUsed, DuplicateIgnored, MergeRecord, MERGE_VERSION,
};
use crate::results::record::SCHEMA_VERSION;
use crate::results::store::write_synced;
use crate::scale::seal::{self, Seal, SEAL};

mod read;
use read::{crash_lines, raw_records};

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
        return Err(crate::results::store::newer_schema(
            &first.dir.display().to_string(),
            u64::from(first.seal.schema_version),
        ));
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

fn list_paths(ps: &[PathBuf]) -> String {
    ps.iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
