//! A trial's own share of the dirty limits when trials run side by side under cgroup
//! v1 (`jbench run --jobs N`).
//!
//! Under v1 the dirty limits are the whole host's (`rig::dirty`): a trial alone gets the
//! limit scaled to its memory limit, S, but N trials under that one limit would share S,
//! each left with what its device's share of the host's writeback gives it — a machine
//! with less memory than the study's. So while N may run, the host's limit is N x S,
//! and each trial's file-system device is held to exactly S of it: the kernel's
//! per-device writeback settings (`/sys/class/bdi/<maj:min>/`) with `min_ratio_fine` =
//! `max_ratio_fine` = 1/N (parts per million of the host's limit; the floor one part less,
//! as the kernel keeps the floors of all devices together below the whole) and `strict_limit`,
//! which makes the kernel throttle a writer against its device's own share, as it would
//! against the host's limit alone. The settings are put back when the trial ends; a
//! record under /run/jbench lets `jbench cleanup` put them back after a jbench that was
//! killed (loop devices are reused, and would carry them into the next run).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};

use crate::rig::host_settings::RESTORE_DIR;

const PREFIX: &str = "bdi-share-";
const WHOLE: u64 = 1_000_000;

/// The per-device settings of one trial's devices, put back on drop.
#[derive(Debug)]
pub struct BdiShare {
    bdis: Vec<PathBuf>,
    record: PathBuf,
}

/// `/sys/class/bdi/<maj:min>` of block device `dev`.
pub fn bdi_of(dev: &Path) -> Result<PathBuf> {
    let rdev = fs::metadata(dev)
        .with_context(|| format!("cannot stat {}", dev.display()))?
        .rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let dir = PathBuf::from(format!("/sys/class/bdi/{major}:{minor}"));
    if !dir.join("strict_limit").exists() {
        anyhow::bail!(
            "{} ({major}:{minor}) has no writeback settings in {} that this kernel lets jbench set (strict_limit, min_ratio_fine); run one trial at a time (--jobs 1)",
            dev.display(),
            dir.display()
        );
    }
    Ok(dir)
}

fn write(bdi: &Path, name: &str, value: u64) -> Result<()> {
    fs::write(bdi.join(name), value.to_string())
        .with_context(|| format!("cannot write {value} to {}", bdi.join(name).display()))
}

/// The kernel's defaults: no floor, the whole limit, no per-device throttling. The
/// floor goes first: the kernel keeps it at or below the cap.
fn reset(bdi: &Path) -> Result<()> {
    write(bdi, "min_ratio_fine", 0)?;
    write(bdi, "max_ratio_fine", WHOLE)?;
    write(bdi, "strict_limit", 0)
}

impl BdiShare {
    /// Holds each of `devices` to 1/`jobs` of the host's dirty limit.
    pub fn apply(devices: &[&Path], jobs: u32) -> Result<Self> {
        let bdis = devices
            .iter()
            .map(|d| bdi_of(d))
            .collect::<Result<Vec<_>>>()?;
        fs::create_dir_all(RESTORE_DIR).with_context(|| format!("cannot create {RESTORE_DIR}"))?;
        // One record per hold: a process may hold several (tests, the A/A check).
        static HOLDS: AtomicUsize = AtomicUsize::new(0);
        let n = HOLDS.fetch_add(1, Ordering::Relaxed);
        let record = Path::new(RESTORE_DIR).join(format!("{PREFIX}{}-{n}.txt", std::process::id()));
        let lines: Vec<String> = bdis.iter().map(|b| b.display().to_string()).collect();
        fs::write(&record, lines.join("\n") + "\n")
            .with_context(|| format!("cannot write {}", record.display()))?;
        let me = Self { bdis, record };
        let share = WHOLE / u64::from(jobs.max(1));
        for b in &me.bdis {
            // The cap first, then the floor up to it, less one part per million: the
            // kernel keeps the floors of all devices together below the whole.
            write(b, "max_ratio_fine", share)?;
            write(b, "min_ratio_fine", share - 1).map_err(|e| {
                e.context(format!(
                    "the kernel refuses a floor of 1/{jobs} of the dirty limit for {}: the floors of all devices together must stay below the whole, and other devices hold theirs (another jbench running trials side by side?); run one such jbench at a time",
                    b.display()
                ))
            })?;
            write(b, "strict_limit", 1)?;
        }
        Ok(me)
    }
}

impl Drop for BdiShare {
    fn drop(&mut self) {
        let mut ok = true;
        for b in &self.bdis {
            if let Err(e) = reset(b) {
                eprintln!("jbench: {e:#}");
                ok = false;
            }
        }
        if ok {
            let _ = fs::remove_file(&self.record);
        }
    }
}

/// Records of devices held by a jbench that is gone, for `jbench cleanup`.
pub fn stale() -> Vec<PathBuf> {
    stale_in(Path::new(RESTORE_DIR))
}

fn stale_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let rest = name.strip_prefix(PREFIX)?.strip_suffix(".txt")?;
            let pid: u32 = rest.split('-').next()?.parse().ok()?;
            (!Path::new(&format!("/proc/{pid}")).exists()).then(|| e.path())
        })
        .collect()
}

/// Puts back the devices `record` names, then removes it.
pub fn restore(record: &Path) -> Result<()> {
    let text =
        fs::read_to_string(record).with_context(|| format!("cannot read {}", record.display()))?;
    for line in text.lines().filter(|l| l.starts_with("/sys/class/bdi/")) {
        let bdi = Path::new(line);
        // A device gone since has nothing left to put back.
        if bdi.exists() {
            reset(bdi)?;
        }
    }
    fs::remove_file(record).with_context(|| format!("cannot remove {}", record.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_records_of_processes_that_are_gone_are_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let live = tmp
            .path()
            .join(format!("{PREFIX}{}-0.txt", std::process::id()));
        let dead = tmp.path().join(format!("{PREFIX}{}-3.txt", u32::MAX - 1));
        let other = tmp.path().join("dirty-limits-1.json");
        for f in [&live, &dead, &other] {
            fs::write(f, "").unwrap();
        }
        assert_eq!(stale_in(tmp.path()), vec![dead]);
    }

    #[test]
    fn a_device_without_writeback_settings_is_refused_with_the_way_out() {
        let e = bdi_of(Path::new("/dev/null")).unwrap_err();
        assert!(format!("{e:#}").contains("--jobs 1"), "{e:#}");
    }
}
