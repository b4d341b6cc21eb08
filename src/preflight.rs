//! Checks made before anything is provisioned, so a run fails in its first second
//! rather than hours in: privileges, tools, space, directories, real devices.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::config::Placement;
use crate::rig::cmd;
use crate::safety;
use crate::spec::Spec;
use crate::units::format_size;

pub const TOOLS: [&str; 7] = [
    "mke2fs", "dumpe2fs", "losetup", "blkid", "blockdev", "mount", "umount",
];

pub fn require_root(what: &str) -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("{what} needs root: it attaches loop devices, makes file systems and mounts them. Run it with sudo.");
    }
    Ok(())
}

/// Everything that can be known to fail before a device is touched. Returns warnings.
pub fn check(spec: &Spec, destroy: &[PathBuf]) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    let missing: Vec<&str> = TOOLS
        .iter()
        .copied()
        .filter(|t| !cmd::available(t))
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing tools: {} (Debian/Ubuntu: apt-get install e2fsprogs util-linux mount)",
            missing.join(", ")
        );
    }
    for d in destroy {
        let named = spec
            .configs
            .iter()
            .any(|c| c.fs_device.as_deref() == Some(d) || c.journal_device.as_deref() == Some(d));
        if !named {
            bail!(
                "--destroy-data-on {} names a device the experiment does not use; refusing to guess what you meant",
                d.display()
            );
        }
    }
    for c in &spec.configs {
        for dev in [&c.fs_device, &c.journal_device].into_iter().flatten() {
            safety::check_formattable(dev, destroy)?;
        }
        if let Some(dev) = &c.fs_device {
            let size = safety::device_size(dev)?;
            for w in &spec.workloads {
                let mut sized = c.clone();
                sized.fs_size = size;
                let need = crate::spec::needed_bytes(&sized, w.engine.as_ref());
                if need > size {
                    bail!(
                        "{} has {} but workload `{}` needs about {}",
                        dev.display(),
                        format_size(size),
                        w.name,
                        format_size(need)
                    );
                }
            }
        }
        if let Some(dev) = &c.journal_device {
            let size = safety::device_size(dev)?;
            if size < c.journal_size {
                bail!(
                    "journal.size {} is bigger than the journal device {} ({})",
                    format_size(c.journal_size),
                    dev.display(),
                    format_size(size)
                );
            }
        }
        if let Some(d) = &c.second_disk_dir {
            if !d.is_dir() {
                bail!(
                    "journal.second_disk_dir {} is not a directory; create it (ideally on another disk) or remove the key",
                    d.display()
                );
            }
        }
        if c.placement == Placement::Ramdisk {
            if fs_type(&c.ramdisk_dir) != "tmpfs" {
                warnings.push(format!(
                    "journal.ramdisk_dir {} is not on tmpfs; the `ramdisk` journal will not be in RAM",
                    c.ramdisk_dir.display()
                ));
            }
            let free = free_bytes(&c.ramdisk_dir)?;
            if free < c.journal_size {
                bail!(
                    "{} has {} free, less than the {} journal",
                    c.ramdisk_dir.display(),
                    format_size(free),
                    format_size(c.journal_size)
                );
            }
        }
    }
    if spec.configs.iter().any(|c| c.memory_limit.is_some()) {
        crate::rig::memcg::check_available()
            .map_err(|e| anyhow::anyhow!("memory_limit needs a memory cgroup: {e:#}"))?;
    }
    if spec
        .configs
        .iter()
        .any(|c| c.fs_type == crate::config::FsType::Xfs)
        && !cmd::available("mkfs.xfs")
    {
        bail!("XFS configurations need mkfs.xfs and xfs_info (Debian/Ubuntu: apt-get install xfsprogs)");
    }
    check_work_dir_space(spec, &mut warnings)?;
    Ok(warnings)
}

/// Images are sparse but fill as the workload writes: the work directory must hold
/// the largest trial's data.
fn check_work_dir_space(spec: &Spec, warnings: &mut Vec<String>) -> Result<()> {
    let image_configs: Vec<_> = spec
        .configs
        .iter()
        .filter(|c| c.fs_device.is_none())
        .collect();
    if image_configs.is_empty() {
        return Ok(());
    }
    if fs_type(&spec.work_dir) == "tmpfs" {
        warnings.push(format!(
            "work_dir {} is on tmpfs: the \"disk\" images will live in RAM",
            spec.work_dir.display()
        ));
    }
    let need = image_configs
        .iter()
        .flat_map(|c| {
            spec.workloads.iter().map(move |w| {
                w.engine.peak_data_bytes()
                    + w.engine.peak_inodes() * 4096
                    + 2 * c.journal_size
                    + (64 << 20)
            })
        })
        .max()
        .unwrap_or(0);
    let free = free_bytes(&spec.work_dir)?;
    if free < need {
        bail!(
            "work_dir {} has {} free, but the largest trial writes about {}; free space or set work_dir elsewhere",
            spec.work_dir.display(),
            format_size(free),
            format_size(need)
        );
    }
    Ok(())
}

fn existing_ancestor(path: &Path) -> &Path {
    path.ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"))
}

pub fn free_bytes(path: &Path) -> Result<u64> {
    let st = nix::sys::statvfs::statvfs(existing_ancestor(path))
        .map_err(|e| anyhow::anyhow!("cannot stat {}: {e}", path.display()))?;
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64)
}

pub fn fs_type(path: &Path) -> String {
    let real = std::fs::canonicalize(existing_ancestor(path)).unwrap_or_default();
    crate::rig::mounts::mounts()
        .into_iter()
        .filter(|m| real.starts_with(&m.target))
        .max_by_key(|m| m.target.components().count())
        .map(|m| m.fstype)
        .unwrap_or_default()
}
