//! Provisioning: images, loop and zram devices, the file system with its journal, the
//! mount; each resource a guard released in reverse order on drop, so a failure, a
//! panic or Ctrl-C leaves nothing attached.

pub mod cmd;
pub mod dirty;
pub mod emulated;
pub mod ext4;
pub mod holders;
pub mod host_settings;
pub mod image;
pub mod loopdev;
pub mod memcg;
pub mod mounts;
pub mod safety;
pub mod session;
pub mod verify;
pub mod writeback;
pub mod xfs;
pub mod zram;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::emu::daemon::DiskSpec;
use crate::emu::EmulationOptions;
use crate::experiment::config::DeviceModelSpec;
use crate::experiment::config::{Config, FsType, Placement};
use crate::rig::verify::Verified;
use crate::units::format_size;
use emulated::DeviceDaemon;
use image::ImageFile;
use loopdev::LoopDevice;
use mounts::Mount;
use session::SessionDir;
use zram::ZramDevice;

/// The session directories of one jbench process: the main one under `work_dir`, and
/// one in each other directory a configuration uses (second disk, tmpfs).
#[derive(Debug)]
pub struct Workspace {
    main: SessionDir,
    others: BTreeMap<PathBuf, SessionDir>,
}

impl Workspace {
    pub fn new(work_dir: &Path) -> Result<Self> {
        Ok(Self {
            main: SessionDir::create(work_dir)?,
            others: BTreeMap::new(),
        })
    }

    /// Fails unless every session directory is still the one jbench created.
    pub fn check_unchanged(&self) -> Result<()> {
        self.main.check_unchanged()?;
        self.others
            .values()
            .try_for_each(SessionDir::check_unchanged)
    }

    /// The session directory inside `parent`, made on first use.
    fn dir_in(&mut self, parent: &Path) -> Result<&SessionDir> {
        if !self.others.contains_key(parent) {
            let dir = SessionDir::create(parent)?;
            self.others.insert(parent.to_path_buf(), dir);
        }
        Ok(&self.others[parent])
    }
}

/// Where everything of one trial is: printed at the start of a configuration and kept
/// in the trial record.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Layout {
    pub placement: String,
    pub fs_device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_image: Option<String>,
    pub fs_offset: u64,
    pub fs_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_image: Option<String>,
    pub journal_offset: u64,
    pub journal_bytes: u64,
    pub mount_point: String,
    pub mount_options: String,
    /// Size of the whole RAM disk a `ramdisk` journal region lives on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramdisk_bytes: Option<u64>,
    /// Emulated disks: which image each serves, with which model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub emulated_disks: Vec<EmulatedDisk>,
    /// A second file system (`filesystem.second_size`): its device, image and mount
    /// point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_fs_device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_fs_image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_mount_point: Option<String>,
    /// The device daemon's process id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_daemon_pid: Option<u32>,
}

/// One emulated disk of a trial, as the layout records it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EmulatedDisk {
    /// `fs`, `journal` or `second`.
    pub name: String,
    /// The spec's model name (a built-in or a `[models]` entry).
    pub model: String,
    /// The built-in model it is made from.
    pub base_model: String,
    pub image: String,
    /// The daemon's file the loop devices are attached to.
    pub served_as: String,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let image = |img: &Option<String>, off: u64, len: u64| match img {
            Some(i) => format!(" = {i} [{} .. +{}]", format_size(off), format_size(len)),
            None => format!(" ({})", format_size(len)),
        };
        write!(
            f,
            "file system {}{}",
            self.fs_device,
            image(&self.fs_image, self.fs_offset, self.fs_bytes)
        )?;
        match &self.journal_device {
            Some(j) => write!(
                f,
                "; journal {}{}",
                j,
                image(&self.journal_image, self.journal_offset, self.journal_bytes)
            )?,
            None => write!(
                f,
                "; journal internal ({})",
                format_size(self.journal_bytes)
            )?,
        }
        write!(
            f,
            "; mounted on {} -o {}",
            self.mount_point, self.mount_options
        )?;
        if let (Some(dev), Some(mnt)) = (&self.second_fs_device, &self.second_mount_point) {
            write!(f, "; second file system {dev} mounted on {mnt}")?;
        }
        for d in &self.emulated_disks {
            write!(f, "; {} disk emulated as {}", d.name, d.model)?;
        }
        Ok(())
    }
}

enum Guard {
    Image(ImageFile),
    Loop(LoopDevice),
    Zram(ZramDevice, PathBuf),
    Mount(Mount),
    Daemon(DeviceDaemon),
}

impl Guard {
    fn release(&mut self) -> Result<()> {
        match self {
            Guard::Image(i) => i.release(),
            Guard::Loop(l) => l.release(),
            Guard::Zram(z, ledger_dir) => {
                z.release()?;
                session::forget_zram(ledger_dir, z.index());
                Ok(())
            }
            Guard::Mount(m) => m.release(),
            Guard::Daemon(d) => d.release(),
        }
    }
}

/// A provisioned, mounted and verified file system for one trial.
pub struct Rig {
    guards: Vec<Guard>,
    pub fs_device: PathBuf,
    pub journal_device: Option<PathBuf>,
    pub mount_point: PathBuf,
    /// The second file system's device and mount point, when the configuration has one.
    pub second_device: Option<PathBuf>,
    pub second_mount: Option<PathBuf>,
    pub layout: Layout,
    pub verified: Verified,
}

impl Rig {
    fn push(&mut self, g: Guard) {
        self.guards.push(g);
    }

    /// The device daemon serving this rig's emulated disks, if any.
    pub fn daemon(&self) -> Option<&DeviceDaemon> {
        self.guards.iter().find_map(|g| match g {
            Guard::Daemon(d) => Some(d),
            _ => None,
        })
    }

    /// Releases everything in reverse order of creation; the first error is returned
    /// but every guard is still tried.
    pub fn teardown(mut self) -> Result<()> {
        self.release_all()
    }

    fn release_all(&mut self) -> Result<()> {
        let mut first: Option<anyhow::Error> = None;
        while let Some(mut g) = self.guards.pop() {
            if let Err(e) = g.release() {
                crate::events::emit(crate::events::Event::TeardownFailed {
                    error: format!("{e:#}"),
                });
                first.get_or_insert(e);
            }
            drop(g);
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.release_all();
    }
}

/// How emulated disks are served, for [`provision_with`].
#[derive(Debug, Clone, Default)]
pub struct EmuSetup {
    pub options: EmulationOptions,
    /// Where the trial's write log goes, when `options.write_log` is on.
    pub write_log: Option<PathBuf>,
}

/// Builds the file system and journal of `config`, mounts it, and verifies that what
/// the kernel and the on-disk superblocks report is what the configuration asked for.
pub fn provision(config: &Config, ws: &mut Workspace, destroy: &[PathBuf]) -> Result<Rig> {
    provision_with(config, ws, destroy, &EmuSetup::default())
}

/// [`provision`], with the emulated disks (if the configuration has any) served as
/// `emu` says.
pub fn provision_with(
    config: &Config,
    ws: &mut Workspace,
    destroy: &[PathBuf],
    emu: &EmuSetup,
) -> Result<Rig> {
    let mount_point = ws.main.join("mnt");
    let mut rig = Rig {
        guards: Vec::new(),
        fs_device: PathBuf::new(),
        journal_device: None,
        mount_point: mount_point.clone(),
        second_device: None,
        second_mount: None,
        layout: Layout {
            placement: config.placement.to_string(),
            mount_point: mount_point.display().to_string(),
            journal_bytes: config.journal_bytes(),
            ..Layout::default()
        },
        verified: Verified::default(),
    };

    let mut disks = Disks::default();
    prepare_fs_device(config, ws, destroy, &mut rig, &mut disks, emu)?;
    prepare_journal_device(config, ws, destroy, &mut rig, &mut disks, emu)?;
    prepare_second_fs(config, ws, &mut rig, &mut disks, emu)?;
    run_after_images_hook(&disks);
    ws.check_unchanged()?;
    attach_regions(ws, &mut rig, &disks, emu)?;

    make_file_system(config, &rig.fs_device, rig.journal_device.as_deref())?;
    let options = mount_options(config, rig.journal_device.as_deref());
    // The mount point is made and mounted on by path, inside the session directory.
    ws.check_unchanged()?;
    let mount = Mount::new(
        &rig.fs_device,
        &mount_point,
        config.fs_type.as_str(),
        &options,
    )?;
    rig.push(Guard::Mount(mount));
    rig.layout.mount_options = options;
    mount_second_fs(config, ws, &mut rig)?;

    rig.verified = verify::verify(
        config,
        &rig.fs_device,
        rig.journal_device.as_deref(),
        &mount_point,
    )
    .context("the file system did not come out as specified; refusing to measure it")?;
    Ok(rig)
}

/// The second file system, made like the first with an internal journal of the same
/// size and mode, and mounted beside it in the session directory.
fn mount_second_fs(config: &Config, ws: &mut Workspace, rig: &mut Rig) -> Result<()> {
    let Some(dev) = rig.second_device.clone() else {
        return Ok(());
    };
    make_file_system(config, &dev, None)
        .with_context(|| format!("making the second file system on {}", dev.display()))?;
    let mount_point = ws.main.join("mnt2");
    ws.check_unchanged()?;
    let mount = Mount::new(
        &dev,
        &mount_point,
        config.fs_type.as_str(),
        &mount_options(config, None),
    )?;
    rig.push(Guard::Mount(mount));
    rig.layout.second_mount_point = Some(mount_point.display().to_string());
    rig.second_mount = Some(mount_point);
    Ok(())
}

/// mkfs for the configuration's type, with the journal (or log) where it belongs.
fn make_file_system(config: &Config, fs_dev: &Path, journal: Option<&Path>) -> Result<()> {
    if config.fs_type == FsType::Xfs {
        return xfs::make_xfs(fs_dev, journal, config.journal_size, &config.mkfs_options);
    }
    let mut extra = config.mkfs_options.clone();
    if config.fast_commit {
        extra.extend(["-O".to_string(), "fast_commit".to_string()]);
    }
    let journal_arg = match (config.placement, journal) {
        (Placement::None, _) => ext4::JournalArg::None,
        (_, Some(j)) => {
            ext4::make_journal_device(j, config.journal_size)?;
            ext4::JournalArg::External(j)
        }
        (_, None) => ext4::JournalArg::Internal(config.journal_size),
    };
    ext4::make_ext(config.fs_type, fs_dev, journal_arg, &extra)?;
    let pending = ext4::groups_not_zeroed(fs_dev)?;
    if pending > 0 {
        anyhow::bail!(
            "{} block groups of {} still need inode-table zeroing; ext4lazyinit would write during the measurement (check mkfs_options for lazy_itable_init)",
            pending,
            fs_dev.display()
        );
    }
    Ok(())
}

fn mount_options(config: &Config, journal: Option<&Path>) -> String {
    let mut opts = Vec::new();
    match (config.fs_type, journal) {
        (FsType::Xfs, Some(j)) => opts.push(format!("logdev={}", j.display())),
        (FsType::Xfs, None) => {}
        (_, j) => {
            if config.placement != Placement::None {
                opts.push(format!("data={}", config.mode));
            }
            if let Some(j) = j {
                // The journal's device number changes between attachments; the path
                // does not.
                opts.push(format!("journal_path={}", j.display()));
            }
            if let Some(secs) = config.commit_seconds {
                opts.push(format!("commit={secs}"));
            }
        }
    }
    opts.extend(config.mount_options.iter().cloned());
    if opts.is_empty() {
        opts.push("defaults".into());
    }
    opts.join(",")
}

/// A hook run after the images are created and before anything is attached to them.
#[doc(hidden)]
pub type AfterImagesHook = Box<dyn Fn(&[PathBuf]) + Send + Sync>;

static AFTER_IMAGES: std::sync::Mutex<Option<AfterImagesHook>> = std::sync::Mutex::new(None);

/// For tests of what happens when someone changes a session directory between image
/// creation and attachment: `hook` gets the image paths at that moment.
#[doc(hidden)]
pub fn set_after_images_hook(hook: Option<AfterImagesHook>) {
    *AFTER_IMAGES.lock().unwrap_or_else(|p| p.into_inner()) = hook;
}

fn run_after_images_hook(disks: &Disks) {
    let hook = AFTER_IMAGES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(h) = hook.as_ref() {
        let paths: Vec<PathBuf> = disks.images.iter().map(|d| d.path.clone()).collect();
        h(&paths);
    }
}

/// An image file a device is made from, possibly served as an emulated disk.
struct ImageDisk {
    /// `fs`, `journal` or `second`: the daemon's file name.
    name: &'static str,
    path: PathBuf,
    /// The image as created; loop devices and the daemon are given this file.
    file: std::fs::File,
    model: Option<DeviceModelSpec>,
}

/// Which part of which image a loop device covers, and what it becomes.
struct Region {
    disk: usize,
    offset: u64,
    size: u64,
    role: Role,
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    FileSystem,
    Journal,
    SecondFs,
}

#[derive(Default)]
struct Disks {
    images: Vec<ImageDisk>,
    regions: Vec<Region>,
}

impl Disks {
    fn add(&mut self, disk: ImageDisk) -> usize {
        self.images.push(disk);
        self.images.len() - 1
    }
}

fn prepare_fs_device(
    config: &Config,
    ws: &mut Workspace,
    destroy: &[PathBuf],
    rig: &mut Rig,
    disks: &mut Disks,
    emu: &EmuSetup,
) -> Result<()> {
    if let Some(dev) = &config.fs_device {
        safety::check_formattable(dev, destroy)?;
        rig.fs_device = dev.clone();
        rig.layout.fs_device = dev.display().to_string();
        rig.layout.fs_bytes = safety::device_size(dev)?;
        return Ok(());
    }
    let same_disk = config.placement == Placement::SameDisk;
    let image_size = config.fs_size + if same_disk { config.journal_size } else { 0 };
    let (disk, path) = add_image_disk(
        ws,
        rig,
        disks,
        emu,
        ("fs", "disk.img", image_size),
        &config.fs_model,
    )?;
    disks.regions.push(Region {
        disk,
        offset: 0,
        size: config.fs_size,
        role: Role::FileSystem,
    });
    rig.layout.fs_image = Some(path.display().to_string());
    rig.layout.fs_bytes = config.fs_size;
    if same_disk {
        // The journal region starts right after the file system, as partition 2 of
        // the same drive would; on an emulated disk both share one actuator.
        disks.regions.push(Region {
            disk,
            offset: config.fs_size,
            size: config.journal_size,
            role: Role::Journal,
        });
    }
    Ok(())
}

/// A new image of `size` bytes named `file_name`, as disk `name`: in the emulation's
/// image directory when `model` emulates it, in the session directory otherwise.
fn add_image_disk(
    ws: &mut Workspace,
    rig: &mut Rig,
    disks: &mut Disks,
    emu: &EmuSetup,
    (name, file_name, size): (&'static str, &str, u64),
    model: &Option<DeviceModelSpec>,
) -> Result<(usize, PathBuf)> {
    let dir = match model {
        Some(_) => ws.dir_in(&emu.options.image_dir)?,
        None => &ws.main,
    };
    let image = ImageFile::create(dir, file_name, size)?;
    let path = image.path().to_path_buf();
    let file = image.file().try_clone()?;
    rig.push(Guard::Image(image));
    let disk = disks.add(ImageDisk {
        name,
        path: path.clone(),
        file,
        model: model.clone(),
    });
    Ok((disk, path))
}

/// The second file system's image, on a disk of its own (`second`).
fn prepare_second_fs(
    config: &Config,
    ws: &mut Workspace,
    rig: &mut Rig,
    disks: &mut Disks,
    emu: &EmuSetup,
) -> Result<()> {
    let Some(size) = config.second_fs_size else {
        return Ok(());
    };
    let (disk, path) = add_image_disk(
        ws,
        rig,
        disks,
        emu,
        ("second", "second.img", size),
        &config.second_fs_model,
    )?;
    disks.regions.push(Region {
        disk,
        offset: 0,
        size,
        role: Role::SecondFs,
    });
    rig.layout.second_fs_image = Some(path.display().to_string());
    Ok(())
}

fn prepare_journal_device(
    config: &Config,
    ws: &mut Workspace,
    destroy: &[PathBuf],
    rig: &mut Rig,
    disks: &mut Disks,
    emu: &EmuSetup,
) -> Result<()> {
    let size = config.journal_size;
    let mut image_journal = |rig: &mut Rig, dir: &SessionDir, name: &str, total: Option<u64>| {
        let image = match total {
            None => ImageFile::create(dir, name, size)?,
            Some(t) => {
                rig.layout.ramdisk_bytes = Some(t);
                ImageFile::create_allocated(dir, name, t)?
            }
        };
        let path = image.path().to_path_buf();
        let file = image.file().try_clone()?;
        rig.push(Guard::Image(image));
        let disk = disks.add(ImageDisk {
            name: "journal",
            path,
            file,
            model: config.journal_model.clone(),
        });
        disks.regions.push(Region {
            disk,
            offset: 0,
            size,
            role: Role::Journal,
        });
        Ok(())
    };
    match config.placement {
        Placement::None | Placement::Internal | Placement::SameDisk => Ok(()),
        Placement::SecondDisk => {
            let dir = match (&config.second_disk_dir, &config.journal_model) {
                (Some(d), _) => ws.dir_in(d)?,
                (None, Some(_)) => ws.dir_in(&emu.options.image_dir)?,
                (None, None) => &ws.main,
            };
            image_journal(rig, dir, "journal.img", None)
        }
        Placement::Ramdisk => {
            let dir = ws.dir_in(&config.ramdisk_dir)?;
            // Study 3's method: one RAM disk of a fixed size, fully allocated, with the
            // journal on its first `size` bytes, so every journal size takes the same
            // memory from the page cache.
            match config.ramdisk_size {
                None => image_journal(rig, dir, "journal.img", None),
                Some(total) => image_journal(rig, dir, "ramdisk.img", Some(total)),
            }
        }
        Placement::Zram => {
            let ledger_dir = ws.main.path().to_path_buf();
            let z = ZramDevice::add(size, |i| ws.main.note_zram(i))?;
            set_journal(rig, z.path(), None, 0);
            rig.push(Guard::Zram(z, ledger_dir));
            Ok(())
        }
        Placement::Device => {
            let dev = config
                .journal_device
                .as_ref()
                .context("placement \"device\" without journal.device")?;
            safety::check_formattable(dev, destroy)?;
            let have = safety::device_size(dev)?;
            if have < size {
                anyhow::bail!(
                    "journal device {} has {} but journal.size is {}",
                    dev.display(),
                    format_size(have),
                    format_size(size)
                );
            }
            set_journal(rig, dev, None, 0);
            Ok(())
        }
    }
}

/// Starts the device daemon when any image is an emulated disk, then attaches a loop
/// device to every region: over the daemon's file (direct I/O, 4 KiB sectors) for an
/// emulated disk, whose path cost is then measured (`DeviceDaemon::measure_path`),
/// over the image itself otherwise.
fn attach_regions(ws: &mut Workspace, rig: &mut Rig, disks: &Disks, emu: &EmuSetup) -> Result<()> {
    let emulated: Vec<&ImageDisk> = disks.images.iter().filter(|d| d.model.is_some()).collect();
    if !emulated.is_empty() {
        let specs: Vec<DiskSpec> = emulated
            .iter()
            .map(|d| {
                let m = d.model.as_ref().expect("filtered");
                Ok(DiskSpec {
                    name: d.name.to_string(),
                    image: d.path.clone(),
                    model: m.model.clone(),
                    params: m.params.clone(),
                    image_id: Some(crate::file_id::FileId::of(&d.file)?),
                })
            })
            .collect::<Result<_>>()?;
        let cpus = if emu.options.pin_cpus {
            emulated::split_cpus(&emulated::allowed_cpus())
                .map(|(daemon, _)| daemon)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let log = emu.write_log.clone().filter(|_| emu.options.write_log);
        let daemon = DeviceDaemon::start(&ws.main, &specs, &emu.options, cpus, log)?;
        rig.layout.device_daemon_pid = Some(daemon.pid());
        for d in &emulated {
            let m = d.model.as_ref().expect("filtered");
            rig.layout.emulated_disks.push(EmulatedDisk {
                name: d.name.to_string(),
                model: m.name.clone(),
                base_model: m.model.clone(),
                image: d.path.display().to_string(),
                served_as: daemon.disk_file(d.name).display().to_string(),
            });
        }
        rig.push(Guard::Daemon(daemon));
    }
    for r in &disks.regions {
        let disk = &disks.images[r.disk];
        let lo = match (&disk.model, rig.daemon()) {
            (Some(_), Some(d)) => {
                let lo = d.attach_disk(disk.name, r.offset, Some(r.size))?;
                // What the path costs, measured now (timing is off, nothing uses the
                // device yet): the daemon takes it off each deadline, and the trial
                // records it with the disk's counters.
                d.measure_path(disk.name, &lo)?;
                lo
            }
            _ => LoopDevice::attach(&disk.file, &disk.path, r.offset, Some(r.size))?,
        };
        let dev = lo.path().to_path_buf();
        rig.push(Guard::Loop(lo));
        match r.role {
            Role::FileSystem => {
                rig.layout.fs_device = dev.display().to_string();
                rig.fs_device = dev;
            }
            Role::Journal => set_journal(rig, &dev, Some(&disk.path), r.offset),
            Role::SecondFs => {
                rig.layout.second_fs_device = Some(dev.display().to_string());
                rig.second_device = Some(dev);
            }
        }
    }
    Ok(())
}

fn set_journal(rig: &mut Rig, dev: &Path, image: Option<&Path>, offset: u64) {
    rig.journal_device = Some(dev.to_path_buf());
    rig.layout.journal_device = Some(dev.display().to_string());
    rig.layout.journal_image = image.map(|p| p.display().to_string());
    rig.layout.journal_offset = offset;
}
