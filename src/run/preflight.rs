//! Checks made before anything is provisioned, so a run fails in its first second
//! rather than hours in: privileges, tools, space, directories, real devices.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::experiment::config::Placement;
use crate::experiment::spec::Spec;
use crate::rig::cmd;
use crate::rig::safety;
use crate::trust;
use crate::units::format_size;
use crate::workload::sys::{existing_ancestor, free_bytes};

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
    check_dirs_trusted(spec)?;
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
                let need = crate::experiment::spec::needed_bytes(&sized, w.engine.as_ref());
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
            warnings.extend(check_ramdisk(c)?);
        }
    }
    warnings.extend(check_image_dir(spec)?);
    check_fuse(spec, Path::new(DEV_FUSE))?;
    if spec.configs.iter().any(|c| c.memory_limit.is_some()) {
        crate::rig::memcg::check_available()
            .map_err(|e| anyhow::anyhow!("memory_limit needs a memory cgroup: {e:#}"))?;
    }
    if spec
        .configs
        .iter()
        .any(|c| c.fs_type == crate::experiment::config::FsType::Xfs)
        && !cmd::available("mkfs.xfs")
    {
        bail!("XFS configurations need mkfs.xfs and xfs_info (Debian/Ubuntu: apt-get install xfsprogs)");
    }
    check_work_dir_parent(&spec.work_dir, spec.create_work_dir)?;
    warnings.extend(check_work_dir(&spec.work_dir)?);
    check_work_dir_space(spec)?;
    check_memory(spec, mem_available()?)?;
    warnings.extend(crate::experiment::plan::size_warnings(spec));
    Ok(warnings)
}

/// The device every emulated disk's daemon serves its requests through.
pub const DEV_FUSE: &str = "/dev/fuse";

/// Refuses a spec with emulated disks (`device_model`) when `dev_fuse` cannot be opened,
/// pointing at the host-disk preset, which needs no FUSE. Opening it loads the module
/// where the kernel can (its node triggers the autoload), so only a real lack fails.
pub fn check_fuse(spec: &Spec, dev_fuse: &Path) -> Result<()> {
    let emulated = spec
        .configs
        .iter()
        .any(|c| c.fs_model.is_some() || c.journal_model.is_some());
    if !emulated {
        return Ok(());
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dev_fuse)
    {
        Ok(_) => Ok(()),
        Err(e) => Err(anyhow::anyhow!(fuse_missing_message(
            &spec.name, dev_fuse, &e
        ))),
    }
}

/// What a machine without FUSE is told: what is missing, how to get it, and the preset
/// that measures this machine's own disk without it.
pub fn fuse_missing_message(spec_name: &str, dev_fuse: &Path, err: &std::io::Error) -> String {
    format!(
        "experiment `{spec_name}` runs on emulated disks, and emulated disks need FUSE ({}: {err}): \
         load it with `modprobe fuse` (in a container, pass the device in, e.g. `--device /dev/fuse`), \
         or run `jbench run --preset quick-host` to measure this machine's own disk instead",
        dev_fuse.display()
    )
}

/// The directories a run writes images and session directories in, each with the spec
/// key that names it: `work_dir`, and `second_disk_dir` / `ramdisk_dir` of the
/// configurations that put their journal there.
pub fn spec_dirs(spec: &Spec) -> Vec<(&'static str, PathBuf)> {
    let mut dirs = vec![("work_dir", spec.work_dir.clone())];
    if spec.configs.iter().any(emulated_images) {
        dirs.push(("emulation.image_dir", spec.emulation.image_dir.clone()));
    }
    for c in &spec.configs {
        let used = match c.placement {
            Placement::SecondDisk => c
                .second_disk_dir
                .clone()
                .map(|d| ("journal.second_disk_dir", d)),
            Placement::Ramdisk => Some(("journal.ramdisk_dir", c.ramdisk_dir.clone())),
            _ => None,
        };
        if let Some(d) = used.filter(|d| !dirs.contains(d)) {
            dirs.push(d);
        }
    }
    dirs
}

/// Every directory the run writes in, and its ancestors, must be one no other user can
/// tamper with (see [`trust`]); checked before anything is created.
pub fn check_dirs_trusted(spec: &Spec) -> Result<()> {
    for (key, dir) in spec_dirs(spec) {
        trust::check_trusted_parent(&dir)
            .with_context(|| format!("{key} {} cannot be trusted", dir.display()))?;
    }
    Ok(())
}

/// The results directory (new, `--results` or `--resume`) and its ancestors, likewise.
pub fn check_results_dir_trusted(dir: &Path) -> Result<()> {
    trust::check_trusted_parent(dir)
        .with_context(|| format!("results directory {} cannot be trusted", dir.display()))
}

/// Creates the directories of [`spec_dirs`] that are missing, 0700, each component
/// checked after creation; done after every check has passed.
pub fn create_dirs(spec: &Spec) -> Result<()> {
    for (key, dir) in spec_dirs(spec) {
        trust::create_trusted_dir(&dir)
            .with_context(|| format!("{key} {} cannot be created safely", dir.display()))?;
    }
    Ok(())
}

/// Whether `c` makes an image for an emulated disk in `emulation.image_dir`: an
/// emulated file system, or an emulated second disk with no `second_disk_dir`.
fn emulated_images(c: &crate::experiment::config::Config) -> bool {
    (c.fs_model.is_some() && c.fs_device.is_none())
        || (c.journal_model.is_some()
            && c.placement == Placement::SecondDisk
            && c.second_disk_dir.is_none())
}

/// Emulated disks' images are sparse, so only what a trial writes takes memory; still,
/// a trial that writes more than the image directory holds fails with ENOSPC, so say
/// so when the largest configuration's images exceed it, and say what a directory
/// that is not tmpfs costs.
fn check_image_dir(spec: &Spec) -> Result<Vec<String>> {
    let dir = &spec.emulation.image_dir;
    let need = spec
        .configs
        .iter()
        .filter(|c| emulated_images(c))
        .map(|c| {
            let journal = match c.placement {
                Placement::SameDisk | Placement::SecondDisk => c.journal_size,
                _ => 0,
            };
            c.fs_size + journal
        })
        .max();
    let Some(need) = need else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let free = free_bytes(dir)?;
    if free < need {
        out.push(format!(
            "emulation.image_dir {} has {} free, less than the {} of emulated disk images a trial may fill; a trial that writes more fails with ENOSPC (free memory, remount it larger, or point emulation.image_dir at a disk directory)",
            dir.display(),
            format_size(free),
            format_size(need)
        ));
    }
    if fs_type(dir) != "tmpfs" {
        out.push(format!(
            "emulation.image_dir {} is not on tmpfs: the device daemon's image writes can be held up by the host's dirty-page throttling, which stalls the emulated disk when a workload dirties more than the host's dirty limit (docs/devices.md)",
            dir.display()
        ));
    }
    Ok(out)
}

/// The RAM disk of a `ramdisk` journal is a file of `ramdisk_size` (else the journal's
/// size) in `ramdisk_dir`: it must fit in that tmpfs, or the trial dies of ENOSPC
/// halfway through making the journal.
pub fn check_ramdisk(c: &crate::experiment::config::Config) -> Result<Option<String>> {
    let need = c.ramdisk_size.unwrap_or(c.journal_size);
    let dir = &c.ramdisk_dir;
    let free = free_bytes(dir)?;
    if free < need {
        bail!(
            "journal.ramdisk_dir {} has {} free, less than the {} RAM disk of `{}` (journal.ramdisk_size, else journal.size); lower it, free memory in {}, or remount it larger (mount -o remount,size=... {})",
            dir.display(),
            format_size(free),
            format_size(need),
            c.label,
            dir.display(),
            dir.display()
        );
    }
    Ok((fs_type(dir) != "tmpfs").then(|| {
        format!(
            "journal.ramdisk_dir {} is not on tmpfs; the `ramdisk` journal will not be in RAM",
            dir.display()
        )
    }))
}

/// Directories jbench must never fill with images and session directories.
const SYSTEM_DIRS: [&str; 14] = [
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev",
    "/proc", "/sys", "/run", "/var/lib",
];

/// What a system path is, if `path` is one: `/`, `/var`, or inside a system directory
/// (`/dev/shm`, a tmpfs meant for such files, is allowed).
fn system_path(path: &Path) -> Option<&'static str> {
    if path == Path::new("/") || path == Path::new("/var") {
        return Some("a top-level system directory");
    }
    if path.starts_with("/dev/shm") {
        return None;
    }
    SYSTEM_DIRS
        .iter()
        .any(|d| path.starts_with(d))
        .then_some("inside a system directory")
}

/// `path` with its existing part resolved (symbolic links, `..`), so `/var/tmp/../../etc`
/// or a link into `/usr` is judged by where it leads.
fn resolved(path: &Path) -> PathBuf {
    let base = existing_ancestor(path);
    let rest = path.strip_prefix(base).unwrap_or(Path::new(""));
    std::fs::canonicalize(base)
        .unwrap_or_else(|_| base.to_path_buf())
        .join(rest)
}

/// The work directory must be a directory (or not exist yet), not a system path; on
/// tmpfs it is allowed with a warning of what that does to the figures.
pub fn check_work_dir(dir: &Path) -> Result<Option<String>> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "work_dir {} exists and is not a directory; set work_dir to a directory (it will be created if missing)",
            dir.display()
        );
    }
    let real = resolved(dir);
    for p in [dir, real.as_path()] {
        if let Some(what) = system_path(p) {
            bail!(
                "work_dir {} is {what}{}; jbench fills it with disk images and session directories: use a directory of its own, e.g. /var/tmp/jbench",
                dir.display(),
                if p == dir { String::new() } else { format!(" ({})", p.display()) }
            );
        }
    }
    Ok((fs_type(dir) == "tmpfs").then(|| {
        format!(
            "work_dir {} is on tmpfs: the \"disk\" images are then in RAM, so the figures measure memory, not a disk; their pages cannot be dropped between trials and count against memory_limit and the machine's free memory",
            dir.display()
        )
    }))
}

/// Refuses a `work_dir` that does not exist and whose parent does not either, unless
/// `create`: `/mnt/fastssd/jbench` with nothing mounted at /mnt/fastssd would be made
/// on the root file system and measure the root disk.
pub fn check_work_dir_parent(dir: &Path, create: bool) -> Result<()> {
    if create || dir.exists() {
        return Ok(());
    }
    let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    if parent.exists() {
        return Ok(());
    }
    let nearest = dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    bail!(
        "work_dir {} does not exist, nor does its parent {}: made now, it would land {} — is a disk not mounted, or the path mistyped? Mount the disk or fix work_dir; to create it where it lands, pass --create-work-dir",
        dir.display(),
        parent.display(),
        where_it_lands(nearest)
    )
}

/// "work_dir /var/tmp/jbench is on /dev/vda1 (ext4, mounted at /; disk vda,
/// rotational)", and where emulated disks' images go when that is elsewhere: said
/// before a run starts, so a run never measures a disk nobody named.
pub fn work_dir_line(spec: &Spec) -> String {
    let dir = &spec.work_dir;
    let nearest = dir
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"));
    let mut out = format!(
        "work_dir {} {} {}",
        dir.display(),
        if dir.exists() { "is" } else { "will be made" },
        where_it_lands(nearest)
    );
    let emulated = spec
        .configs
        .iter()
        .any(|c| c.fs_model.is_some() && c.fs_device.is_none());
    let images = &spec.emulation.image_dir;
    if emulated && !images.starts_with(dir) {
        let near = images
            .ancestors()
            .find(|p| p.exists())
            .unwrap_or(Path::new("/"));
        out.push_str(&format!(
            "; emulated disks' images in {} {}",
            images.display(),
            where_it_lands(near)
        ));
    }
    out
}

/// "on /dev/vda1 (ext4, mounted at /)": the device and file system holding `path` (or
/// its nearest existing parent).
pub fn where_it_lands(path: &Path) -> String {
    let loc = crate::results::envinfo::storage::location("work_dir", path);
    if loc.device.is_empty() {
        return "on an unknown device".to_string();
    }
    let disk = loc
        .queue
        .as_ref()
        .map(|q| {
            let kind = match q.rotational {
                Some(true) => ", rotational",
                Some(false) => ", not rotational",
                None => "",
            };
            format!("; disk {}{kind}", q.disk)
        })
        .unwrap_or_default();
    format!(
        "on {} ({}, mounted at {}{disk})",
        loc.device, loc.filesystem, loc.mount_point
    )
}

/// Images are sparse but fill as the workload writes: the work directory must hold
/// the largest trial's data.
fn check_work_dir_space(spec: &Spec) -> Result<()> {
    let image_configs: Vec<_> = spec
        .configs
        .iter()
        .filter(|c| c.fs_device.is_none())
        .collect();
    if image_configs.is_empty() {
        return Ok(());
    }
    let need = image_configs
        .iter()
        .flat_map(|c| {
            spec.workloads
                .iter()
                .map(move |w| crate::experiment::footprint::work_dir_need(c, w.engine.as_ref()))
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

/// RAM disks, zram journals and emulated disks' images on tmpfs are memory the kernel
/// cannot give back: a run that needs more than is available gets killed or swaps
/// mid-trial, so it is refused before the first trial.
pub fn check_memory(spec: &Spec, available: u64) -> Result<()> {
    use crate::experiment::footprint::{image_fill, ram_journal};
    let in_memory = spec.emulation.image_dir.starts_with("/dev/shm")
        || fs_type(&spec.emulation.image_dir) == "tmpfs";
    for c in &spec.configs {
        let images = if in_memory && c.fs_model.is_some() && c.fs_device.is_none() {
            spec.workloads
                .iter()
                .map(|w| image_fill(c, w.engine.as_ref()))
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        let need = ram_journal(c).saturating_add(images);
        if need > available {
            bail!(
                "configuration `{}` holds about {} in memory (RAM-disk journal {}, emulated disk images {} in {}) but only {} is available; lower journal.ramdisk_size or journal.size, or the workload, or set emulation.image_dir to a disk directory",
                c.label,
                crate::units::approx_size(need),
                crate::units::approx_size(ram_journal(c)),
                crate::units::approx_size(images),
                spec.emulation.image_dir.display(),
                crate::units::approx_size(available)
            );
        }
    }
    Ok(())
}

/// `MemAvailable` of /proc/meminfo, in bytes.
pub fn mem_available() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| anyhow::anyhow!("/proc/meminfo has no MemAvailable line"))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory removed when the test ends, passed or not.
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("jbench-preflight-{name}-"))
            .tempdir()
            .unwrap()
    }

    #[test]
    fn emulated_disks_without_fuse_are_refused_naming_quick_host() {
        let dir = scratch("nofuse");
        let missing = dir.path().join("fuse");
        let quick = crate::experiment::spec::parse(
            crate::experiment::presets::find("quick").unwrap(),
            "quick",
        )
        .unwrap();
        let e = check_fuse(&quick, &missing).unwrap_err().to_string();
        for part in [
            "experiment `quick`",
            "emulated disks need FUSE",
            &missing.display().to_string(),
            "modprobe fuse",
            "jbench run --preset quick-host",
            "this machine's own disk",
        ] {
            assert!(e.contains(part), "`{part}` missing from: {e}");
        }
        // The preset the message points at must itself run without FUSE.
        let host = crate::experiment::spec::parse(
            crate::experiment::presets::find("quick-host").unwrap(),
            "quick-host",
        )
        .unwrap();
        check_fuse(&host, &missing).unwrap();
    }

    #[test]
    fn a_work_dir_that_is_a_file_is_refused() {
        let d = scratch("file");
        let file = d.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let e = check_work_dir(&file).unwrap_err().to_string();
        assert!(e.contains("exists and is not a directory"), "{e}");
        assert!(
            check_work_dir(&d.path().join("missing")).is_ok(),
            "created later"
        );
    }

    #[test]
    fn a_work_dir_under_a_missing_parent_is_refused_unless_created() {
        let d = tempfile::tempdir().unwrap();
        let typo = d.path().join("fastssd").join("jbench");
        let e = check_work_dir_parent(&typo, false).unwrap_err().to_string();
        assert!(
            e.contains("nor does its parent")
                && e.contains("--create-work-dir")
                && e.contains(" on "),
            "{e}"
        );
        assert!(check_work_dir_parent(&typo, true).is_ok());
        assert!(check_work_dir_parent(&d.path().join("jbench"), false).is_ok());
        assert!(check_work_dir_parent(d.path(), false).is_ok());
    }

    #[test]
    fn system_paths_are_refused_as_work_dir() {
        for p in [
            "/",
            "/etc",
            "/usr/local/jbench",
            "/bin",
            "/boot/x",
            "/dev",
            "/proc/1",
            "/sys",
            "/run/jbench",
            "/var",
            "/var/tmp/../../etc/jbench",
        ] {
            let e = check_work_dir(Path::new(p)).expect_err(p).to_string();
            assert!(e.contains("system directory"), "{p}: {e}");
            assert!(e.contains("/var/tmp/jbench"), "{p}: {e}");
        }
        assert!(check_work_dir(Path::new("/var/tmp/jbench")).is_ok());
        assert!(check_work_dir(Path::new("/dev/shm/jbench")).is_ok());
    }

    #[test]
    fn a_work_dir_on_tmpfs_is_warned_about_with_its_effect_on_the_figures() {
        assert_eq!(
            fs_type(Path::new("/dev/shm")),
            "tmpfs",
            "this test needs /dev/shm on tmpfs"
        );
        let w = check_work_dir(Path::new("/dev/shm/jbench-work"))
            .unwrap()
            .unwrap();
        assert!(w.contains("on tmpfs"), "{w}");
        assert!(w.contains("measure memory, not a disk"), "{w}");
        assert!(w.contains("cannot be dropped"), "{w}");
    }

    #[test]
    fn a_ram_disk_larger_than_its_tmpfs_is_refused() {
        let text = "[journal]\nplacement = \"ramdisk\"\nramdisk_size = \"16T\"\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "x").unwrap();
        let e = check_ramdisk(&spec.configs[0]).unwrap_err().to_string();
        assert!(e.contains("less than the 16T RAM disk"), "{e}");
        assert!(e.contains("journal.ramdisk_size"), "{e}");
        let small = crate::experiment::spec::parse(&text.replace("16T", "16M"), "x").unwrap();
        assert!(check_ramdisk(&small.configs[0]).is_ok());
    }

    #[test]
    fn a_run_that_needs_more_memory_than_is_available_is_refused() {
        let text = "[filesystem]\nsize = \"1G\"\ndevice_model = \"hdd-7200\"\n[journal]\nplacement = \"ramdisk\"\nsize = \"64M\"\nramdisk_size = \"2G\"\n[[workload]]\nkind = \"fdtree\"\ndirs = 2\nlevels = 2\n";
        let spec = crate::experiment::spec::parse(text, "x").unwrap();
        let e = check_memory(&spec, 1 << 30).unwrap_err().to_string();
        assert!(
            e.contains("holds about 2.0G in memory") && e.contains("only 1.0G is available"),
            "{e}"
        );
        // The RAM disk and the emulated images (about 40M for this tree) fit in 3G.
        assert!(check_memory(&spec, 3 << 30).is_ok());
        assert!(mem_available().unwrap() > 0);
    }
}
