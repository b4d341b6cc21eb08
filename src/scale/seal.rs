//! The seal of a shard attempt: `shard.json` in its results directory, written
//! atomically (temporary file, fsync, rename) only when every trial of the shard has
//! a record. A directory without it is an attempt that did not finish (killed,
//! requeued, interrupted), whatever it holds: execution is at-least-once, and an
//! existing directory is no proof.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::results::layout::{SPEC, TRIALS};

/// File name of the seal inside an attempt's results directory.
pub const SEAL: &str = "shard.json";
pub const SEAL_VERSION: u32 = 1;

/// What a shard's seal records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seal {
    pub seal_version: u32,
    /// 0-based shard index and the number of shards.
    pub shard: usize,
    pub shards: usize,
    /// `round` or `workload`: the unit kept on one machine.
    pub shard_by: String,
    /// SHA-256 (hex) of the resolved spec (`spec.toml`) the attempt ran.
    pub spec_sha256: String,
    pub jbench_version: String,
    /// `trials.jsonl` schema version.
    pub schema_version: u32,
    /// Plan indices of the shard's trials, ascending.
    pub trials: Vec<usize>,
    /// SHA-256 (hex) of `trials.jsonl` as sealed: a later change breaks the seal.
    pub trials_sha256: String,
    /// SHA-256 (hex) of `crash.jsonl` as sealed, for an experiment with `[crash]`
    /// (the shard's crash states); absent when the shard has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash_sha256: Option<String>,
    /// The machine the attempt ran on.
    pub machine: crate::results::fingerprint::Fingerprint,
    /// Where the shard index came from: `--shard I/N`, `SLURM_ARRAY_TASK_ID`, ...
    pub index_source: String,
    /// Wall-clock time the seal was written (metadata only: durations come from
    /// each machine's own clock, inside the trial records).
    pub sealed_at: String,
    /// Scheduler identifiers seen in the environment (job id, task id, restart
    /// count, pod name), for the merge's list of attempts.
    #[serde(default)]
    pub scheduler: std::collections::BTreeMap<String, String>,
}

/// Writes `dir/shard.json` atomically: a reader sees no seal or the whole one, never
/// part of it, even if the machine dies mid-write.
pub fn write_seal(dir: &Path, seal: &Seal) -> Result<()> {
    let mut json = serde_json::to_vec_pretty(seal)?;
    json.push(b'\n');
    let tmp = dir.join(format!(".{SEAL}.tmp-{}", std::process::id()));
    // A leftover from a killed attempt of this pid would make create_new fail.
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove {}", tmp.display())),
    }
    let write = || -> Result<()> {
        // create_new and O_NOFOLLOW: a link planted at the name is refused, not followed.
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        // rename replaces a link at the seal's name itself, never its target.
        fs::rename(&tmp, dir.join(SEAL))?;
        File::open(dir)?.sync_all()?;
        Ok(())
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        e.context(format!("cannot write {}", dir.join(SEAL).display()))
    })
}

/// The seal of an attempt directory; `None` when it has none (the attempt did not
/// finish, or is still running).
pub fn read_seal(dir: &Path) -> Result<Option<Seal>> {
    let path = dir.join(SEAL);
    let m = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !m.is_file() {
        bail!("{} is not a regular file; a seal is one", path.display());
    }
    let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let seal: Seal = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a shard seal", path.display()))?;
    if seal.seal_version > SEAL_VERSION {
        bail!(
            "{}: seal_version {} is newer than this jbench ({}) reads ({SEAL_VERSION})",
            path.display(),
            seal.seal_version,
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok(Some(seal))
}

/// Checks that `trials.jsonl` and `spec.toml` in `dir` are the bytes `seal` was
/// made over.
pub fn verify(dir: &Path, seal: &Seal) -> Result<()> {
    for (name, want) in [(TRIALS, &seal.trials_sha256), (SPEC, &seal.spec_sha256)] {
        let path = dir.join(name);
        let bytes = fs::read(&path).with_context(|| {
            format!(
                "cannot read {} to check it against its seal",
                path.display()
            )
        })?;
        let got = crate::scale::sha256_hex(&bytes);
        if &got != want {
            bail!(
                "{} changed after the shard was sealed (SHA-256 {got}, the seal in {} says {want})",
                path.display(),
                dir.join(SEAL).display()
            );
        }
    }
    if let Some(want) = &seal.crash_sha256 {
        let path = dir.join(crate::results::layout::CRASH);
        let got = crate::scale::sha256_hex(&fs::read(&path).with_context(|| {
            format!(
                "cannot read {} to check it against its seal",
                path.display()
            )
        })?);
        if &got != want {
            bail!(
                "{} changed after the shard was sealed (SHA-256 {got}, the seal in {} says {want})",
                path.display(),
                dir.join(SEAL).display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fingerprint::Fingerprint;
    use std::os::unix::fs::PermissionsExt;

    fn sealed(dir: &Path) -> Seal {
        fs::write(dir.join(TRIALS), b"{\"trial\":0}\n").unwrap();
        fs::write(dir.join(SPEC), b"name = \"x\"\n").unwrap();
        Seal {
            seal_version: SEAL_VERSION,
            shard: 1,
            shards: 3,
            shard_by: "round".into(),
            spec_sha256: crate::scale::sha256_hex(&fs::read(dir.join(SPEC)).unwrap()),
            jbench_version: "0.1.0".into(),
            schema_version: 1,
            trials: vec![0],
            trials_sha256: crate::scale::sha256_hex(&fs::read(dir.join(TRIALS)).unwrap()),
            crash_sha256: None,
            machine: Fingerprint::collect(dir),
            index_source: "--shard 1/3".into(),
            sealed_at: "2026-01-01T00:00:00+00:00".into(),
            scheduler: [("SLURM_JOB_ID".to_string(), "7".to_string())].into(),
        }
    }

    #[test]
    fn round_trip_and_verify_catches_a_changed_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        assert_eq!(read_seal(dir).unwrap(), None);
        let seal = sealed(dir);
        write_seal(dir, &seal).unwrap();
        let mode = fs::metadata(dir.join(SEAL)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(read_seal(dir).unwrap().as_ref(), Some(&seal));
        verify(dir, &seal).unwrap();
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        // Rewriting replaces it.
        write_seal(dir, &seal).unwrap();

        fs::write(dir.join(TRIALS), b"{\"trial\":0}\n{\"trial\":1}\n").unwrap();
        let e = verify(dir, &seal).unwrap_err().to_string();
        assert!(e.contains(TRIALS) && e.contains("changed"), "{e}");
        fs::write(dir.join(TRIALS), b"{\"trial\":0}\n").unwrap();
        verify(dir, &seal).unwrap();
        fs::write(dir.join(SPEC), b"name = \"y\"\n").unwrap();
        let e = verify(dir, &seal).unwrap_err().to_string();
        assert!(e.contains(SPEC), "{e}");
    }

    #[test]
    fn a_link_at_the_seal_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("attempt");
        fs::create_dir(&dir).unwrap();
        let victim = tmp.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(SEAL)).unwrap();
        assert!(read_seal(&dir).is_err(), "a link is not a seal");
        let seal = sealed(&dir);
        write_seal(&dir, &seal).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        assert_eq!(read_seal(&dir).unwrap(), Some(seal));
    }

    #[test]
    fn garbage_is_not_a_seal() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(SEAL), b"{").unwrap();
        assert!(read_seal(tmp.path()).is_err());
    }
}
