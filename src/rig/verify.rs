//! Reads back what was really built — from the on-disk superblocks (dumpe2fs), the
//! kernel's jbd2 instances and /proc/mounts — and refuses a configuration that did not
//! come out as specified.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::config::Config;
use crate::record::Verified;
use crate::rig::{ext4, mounts};

pub fn verify(
    config: &Config,
    fs_dev: &Path,
    journal_dev: Option<&Path>,
    mount_point: &Path,
) -> Result<Verified> {
    let mut v = Verified::default();
    let sb = ext4::superblock(fs_dev)?;
    if !ext4::features(&sb).iter().any(|f| f == "has_journal") {
        bail!("{} has no journal (has_journal missing)", fs_dev.display());
    }
    v.checks
        .push(format!("dumpe2fs {}: has_journal", fs_dev.display()));

    match journal_dev {
        None => verify_internal(&sb, fs_dev, &mut v)?,
        Some(j) => verify_external(&sb, fs_dev, j, &mut v)?,
    }
    if v.journal_bytes != config.journal_size {
        bail!(
            "journal is {} bytes, not the {} asked for",
            v.journal_bytes,
            config.journal_size
        );
    }
    v.checks.push(format!(
        "journal size {} bytes as specified",
        v.journal_bytes
    ));

    v.mode = mounted_mode(fs_dev, mount_point, &mut v)?;
    if v.mode != config.mode.as_str() {
        bail!(
            "{} is mounted with data={}, not data={}",
            mount_point.display(),
            v.mode,
            config.mode
        );
    }
    Ok(v)
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

fn mounted_mode(fs_dev: &Path, mount_point: &Path, v: &mut Verified) -> Result<String> {
    let all = mounts::mounts();
    let entry = all
        .iter()
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
    let mode = entry
        .options
        .iter()
        .find_map(|o| o.strip_prefix("data="))
        .unwrap_or("ordered")
        .to_string();
    v.checks.push(format!(
        "/proc/mounts: {} on {} {} data={mode}",
        entry.source,
        mount_point.display(),
        entry.fstype
    ));
    Ok(mode)
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
