//! Reads back what was really built — from the on-disk superblocks (dumpe2fs), the
//! kernel's jbd2 instances and /proc/mounts — and refuses a configuration that did not
//! come out as specified.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::experiment::config::{Config, FsType, Placement};
use crate::rig::{ext4, mounts, xfs};

/// What the mounted file system really had, read back from the devices and the kernel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verified {
    /// Journal block device path, or `internal`.
    pub journal_device: String,
    /// Journal size in bytes as the on-disk journal superblock reports it.
    pub journal_bytes: u64,
    /// Data mode from /proc/mounts.
    pub mode: String,
    /// Human-readable evidence, one line per check, e.g.
    /// `dumpe2fs /dev/loop3: Journal UUID 1f.. = journal device UUID`.
    #[serde(default)]
    pub checks: Vec<String>,
}

pub fn verify(
    config: &Config,
    fs_dev: &Path,
    journal_dev: Option<&Path>,
    mount_point: &Path,
) -> Result<Verified> {
    let mut v = Verified::default();
    let entry = mounted(fs_dev, mount_point, config.fs_type.as_str(), &mut v)?;
    if config.fs_type == FsType::Xfs {
        verify_xfs(fs_dev, journal_dev, mount_point, &entry, &mut v)?;
    } else {
        verify_ext(config, fs_dev, journal_dev, &entry, &mut v)?;
    }
    if v.journal_bytes != config.journal_bytes() {
        bail!(
            "journal is {} bytes, not the {} asked for",
            v.journal_bytes,
            config.journal_bytes()
        );
    }
    if config.placement != Placement::None {
        v.checks.push(format!(
            "journal size {} bytes as specified",
            v.journal_bytes
        ));
    }
    if v.mode != config.mode_label() {
        bail!(
            "{} is mounted with journal mode {}, not {}",
            mount_point.display(),
            v.mode,
            config.mode_label()
        );
    }
    Ok(v)
}

fn verify_ext(
    config: &Config,
    fs_dev: &Path,
    journal_dev: Option<&Path>,
    entry: &mounts::MountEntry,
    v: &mut Verified,
) -> Result<()> {
    let sb = ext4::superblock(fs_dev)?;
    let features = ext4::features(&sb);
    let has_journal = features.iter().any(|f| f == "has_journal");
    if config.placement == Placement::None {
        if has_journal {
            bail!(
                "{} has a journal where none was asked for",
                fs_dev.display()
            );
        }
        v.journal_device = "none".into();
        v.mode = "none".into();
        v.checks
            .push(format!("dumpe2fs {}: no has_journal", fs_dev.display()));
        return Ok(());
    }
    if !has_journal {
        bail!("{} has no journal (has_journal missing)", fs_dev.display());
    }
    v.checks
        .push(format!("dumpe2fs {}: has_journal", fs_dev.display()));
    if config.fast_commit != features.iter().any(|f| f == "fast_commit") {
        bail!(
            "{}: fast_commit is {} but {} was asked for",
            fs_dev.display(),
            if config.fast_commit {
                "missing"
            } else {
                "present"
            },
            config.fast_commit
        );
    }
    if config.fast_commit {
        v.checks
            .push(format!("dumpe2fs {}: fast_commit", fs_dev.display()));
    }
    match journal_dev {
        None => verify_internal(&sb, fs_dev, v)?,
        Some(j) => verify_external(&sb, fs_dev, j, v)?,
    }
    v.mode = entry
        .options
        .iter()
        .find_map(|o| o.strip_prefix("data="))
        .unwrap_or("ordered")
        .to_string();
    if let Some(secs) = config.commit_seconds {
        let want = format!("commit={secs}");
        // The kernel lists commit= only when it differs from its default of 5 s.
        if secs != 5 && !entry.options.contains(&want) {
            bail!(
                "{} is mounted without {want}: {}",
                entry.target.display(),
                entry.options.join(",")
            );
        }
        v.checks.push(format!("/proc/mounts: {want}"));
    }
    Ok(())
}

fn verify_xfs(
    fs_dev: &Path,
    journal_dev: Option<&Path>,
    mount_point: &Path,
    entry: &mounts::MountEntry,
    v: &mut Verified,
) -> Result<()> {
    let log = xfs::log_info(mount_point)?;
    match (journal_dev, &log.device) {
        (None, None) => v.journal_device = "internal".into(),
        (Some(j), Some(d)) if same_device(j, Path::new(d)) => {
            let opt = format!("logdev={}", j.display());
            if !entry.options.contains(&opt) {
                bail!("{} is mounted without {opt}", mount_point.display());
            }
            v.journal_device = j.display().to_string();
            v.checks.push(format!("/proc/mounts: {opt}"));
        }
        (want, have) => bail!(
            "XFS on {} logs to {}, not {}",
            fs_dev.display(),
            have.as_deref().unwrap_or("an internal log"),
            want.map(|p| p.display().to_string())
                .unwrap_or_else(|| "an internal log".into())
        ),
    }
    v.journal_bytes = log.bytes;
    v.mode = "metadata".into();
    v.checks.push(format!(
        "xfs_info {}: log {} of {} bytes",
        mount_point.display(),
        v.journal_device,
        log.bytes
    ));
    Ok(())
}

fn same_device(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

fn verify_internal(
    sb: &std::collections::BTreeMap<String, String>,
    fs_dev: &Path,
    v: &mut Verified,
) -> Result<()> {
    if let Some(dev) = sb.get("Journal device") {
        bail!(
            "{} has an external journal (device {dev}) where an internal one was asked for",
            fs_dev.display()
        );
    }
    let inode = sb.get("Journal inode").map(String::as_str).unwrap_or("");
    if inode.is_empty() {
        bail!("{} reports no journal inode", fs_dev.display());
    }
    v.journal_device = "internal".into();
    v.journal_bytes = ext4::journal_bytes(sb)
        .with_context(|| format!("dumpe2fs {} shows no journal size", fs_dev.display()))?;
    v.checks.push(format!(
        "dumpe2fs {}: internal journal in inode {inode}",
        fs_dev.display()
    ));
    let jbd2 = format!("{}-{inode}", dev_name(fs_dev));
    require_jbd2(&jbd2, v)
}

fn verify_external(
    sb: &std::collections::BTreeMap<String, String>,
    fs_dev: &Path,
    jdev: &Path,
    v: &mut Verified,
) -> Result<()> {
    let jsb = ext4::superblock(jdev)?;
    if !ext4::features(&jsb).iter().any(|f| f == "journal_dev") {
        bail!("{} is not an external journal device", jdev.display());
    }
    let want_uuid = jsb
        .get("Filesystem UUID")
        .with_context(|| format!("{} has no UUID", jdev.display()))?;
    let have_uuid = sb.get("Journal UUID").with_context(|| {
        format!(
            "{} names no journal UUID: its journal is not external",
            fs_dev.display()
        )
    })?;
    if have_uuid != want_uuid {
        bail!(
            "{} uses journal {have_uuid}, but {} is journal {want_uuid}",
            fs_dev.display(),
            jdev.display()
        );
    }
    v.checks.push(format!(
        "dumpe2fs: {} Journal UUID {have_uuid} = {} UUID",
        fs_dev.display(),
        jdev.display()
    ));
    // The recorded device number is the journal's at mkfs time; it must be this one.
    if let (Some(recorded), Ok(rdev)) = (sb.get("Journal device"), device_number(jdev)) {
        let recorded = u64::from_str_radix(recorded.trim_start_matches("0x"), 16).unwrap_or(0);
        if recorded == rdev {
            v.checks.push(format!(
                "dumpe2fs {}: Journal device {recorded:#06x} = {}",
                fs_dev.display(),
                jdev.display()
            ));
        }
    }
    v.journal_device = jdev.display().to_string();
    v.journal_bytes = ext4::journal_bytes(&jsb)
        .with_context(|| format!("dumpe2fs {} shows no journal size", jdev.display()))?;
    require_jbd2(&dev_name(jdev), v)
}

/// The kernel names a jbd2 instance after the device holding the journal (plus the
/// inode for an internal one): its presence proves the mounted file system journals
/// there.
fn require_jbd2(name: &str, v: &mut Verified) -> Result<()> {
    let info = format!("/proc/fs/jbd2/{name}/info");
    if !Path::new(&info).exists() {
        bail!("the kernel has no journal {name} ({info} missing)");
    }
    v.checks.push(format!("kernel journal {info} present"));
    Ok(())
}

/// The /proc/mounts entry of `mount_point`, checked to be `fs_dev` of type `fstype`.
fn mounted(
    fs_dev: &Path,
    mount_point: &Path,
    fstype: &str,
    v: &mut Verified,
) -> Result<mounts::MountEntry> {
    let entry = mounts::mounts()
        .into_iter()
        .rev()
        .find(|m| m.target == mount_point)
        .with_context(|| format!("{} is not in /proc/mounts", mount_point.display()))?;
    if Path::new(&entry.source) != fs_dev {
        bail!(
            "{} is mounted from {}, not {}",
            mount_point.display(),
            entry.source,
            fs_dev.display()
        );
    }
    if entry.fstype != fstype {
        bail!(
            "{} is mounted as {}, not {fstype}",
            mount_point.display(),
            entry.fstype
        );
    }
    v.checks.push(format!(
        "/proc/mounts: {} on {} {} {}",
        entry.source,
        mount_point.display(),
        entry.fstype,
        entry.options.join(",")
    ));
    Ok(entry)
}

fn dev_name(dev: &Path) -> String {
    let real = std::fs::canonicalize(dev).unwrap_or_else(|_| dev.to_path_buf());
    real.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The kernel's old-style encoded device number as dumpe2fs prints it (major << 8 | minor).
fn device_number(dev: &Path) -> Result<u64> {
    let meta = std::fs::metadata(dev)?;
    if !meta.file_type().is_block_device() {
        bail!("{} is not a block device", dev.display());
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev) as u64, libc::minor(rdev) as u64);
    Ok((major << 8) | minor)
}
