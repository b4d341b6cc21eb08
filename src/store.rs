//! The results directory of a run: `spec.toml` (resolved), `spec.original.toml`,
//! `env.json`, `trials.jsonl` (appended and fsync'ed after every trial, so an
//! interrupted run loses nothing) and `summary.csv`.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::record::TrialRecord;
use crate::spec::Spec;

pub const TRIALS: &str = "trials.jsonl";
pub const SPEC: &str = "spec.toml";
pub const ORIGINAL: &str = "spec.original.toml";
pub const ENV: &str = "env.json";
pub const SUMMARY: &str = "summary.csv";

pub struct Store {
    dir: PathBuf,
    trials: File,
}

impl Store {
    /// Starts a new results directory; refuses one that already holds trials.
    pub fn create(dir: &Path, spec: &Spec, original: &str) -> Result<Self> {
        if dir.join(TRIALS).exists() {
            bail!(
                "{} already holds a run; use --resume {} to finish it, or choose another --results directory",
                dir.display(),
                dir.display()
            );
        }
        fs::create_dir_all(dir)
            .with_context(|| format!("cannot create results directory {}", dir.display()))?;
        write_synced(&dir.join(SPEC), spec.resolved.as_bytes())?;
        write_synced(&dir.join(ORIGINAL), original.as_bytes())?;
        let env = serde_json::to_vec_pretty(&crate::envinfo::collect(spec))?;
        write_synced(&dir.join(ENV), &env)?;
        Self::open_trials(dir)
    }

    /// Reopens a results directory for `--resume`; the experiment must be the same one.
    pub fn resume(dir: &Path, spec: &Spec) -> Result<(Self, Vec<TrialRecord>)> {
        let stored = fs::read_to_string(dir.join(SPEC)).with_context(|| {
            format!(
                "{} is not a jbench results directory (no {SPEC})",
                dir.display()
            )
        })?;
        if stored != spec.resolved {
            let diff: Vec<String> = stored
                .lines()
                .zip(spec.resolved.lines())
                .filter(|(a, b)| a != b)
                .take(5)
                .map(|(a, b)| format!("  stored: {a}\n  now:    {b}"))
                .collect();
            bail!(
                "the experiment differs from the one in {}; resuming would mix results.\n{}",
                dir.display(),
                diff.join("\n")
            );
        }
        let records = load_records(dir)?;
        drop_torn_tail(&dir.join(TRIALS))?;
        Ok((Self::open_trials(dir)?, records))
    }

    fn open_trials(dir: &Path) -> Result<Self> {
        let trials = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(TRIALS))
            .with_context(|| format!("cannot open {}", dir.join(TRIALS).display()))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            trials,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one record and forces it to disk before returning.
    pub fn append(&mut self, record: &TrialRecord) -> Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        self.trials
            .write_all(&line)
            .and_then(|_| self.trials.sync_data())
            .with_context(|| format!("cannot write {}", self.dir.join(TRIALS).display()))
    }
}

/// A crash mid-append leaves a last line without its newline; cut it off so the next
/// record starts on a line of its own (load_records already ignored it).
fn drop_torn_tail(path: &Path) -> Result<()> {
    let bytes = fs::read(path).unwrap_or_default();
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let f = OpenOptions::new().write(true).open(path)?;
    f.set_len(keep as u64)?;
    f.sync_all()?;
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

/// Reads `trials.jsonl`. A torn last line (the machine died mid-write) is skipped with
/// a warning; a bad line elsewhere is an error.
pub fn load_records(dir: &Path) -> Result<Vec<TrialRecord>> {
    let path = dir.join(TRIALS);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "{} has no {TRIALS}; is it a jbench results directory?",
                dir.display()
            )
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<TrialRecord>(line) {
            Ok(r) => out.push(r),
            Err(e) if i + 1 == lines.len() && !text.ends_with('\n') => {
                eprintln!(
                    "jbench: ignoring a torn last line of {}: {e}",
                    path.display()
                );
            }
            Err(e) => bail!("{}:{}: not a trial record: {e}", path.display(), i + 1),
        }
    }
    Ok(out)
}

/// Trial indices already recorded (ok or failed): `--resume` skips them.
pub fn done_indices(records: &[TrialRecord]) -> BTreeSet<usize> {
    records.iter().map(|r| r.trial).collect()
}

/// Writes `summary.csv` beside the trials.
pub fn write_summary(dir: &Path, csv: &str) -> Result<()> {
    write_synced(&dir.join(SUMMARY), csv.as_bytes())
}
