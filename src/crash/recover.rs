//! The rig that serves crash states: base images rebuilt from the write log in cut
//! order, a device daemon serving them through a copy-on-write overlay, and loop
//! devices over its disks laid out as in the recorded trial (file system, journal on
//! the same disk or another). Recovery writes only ever reach the overlay; a state is
//! thrown away by clearing it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::state_bytes::{map_image, MappedImage, RegionAt, StateBytes};
use super::states::{LogRec, StatePlan};
use crate::emu::daemon::DiskSpec;
use crate::emu::writelog::{read_payload, write_zeros, LogHeader, LogWriter, RecordKind, Stamp};
use crate::emu::EmulationOptions;
use crate::experiment::config::{Config, FsType, Placement};
use crate::rig::cmd::{self, Ran};
use crate::rig::emulated::DeviceDaemon;
use crate::rig::image::ImageFile;
use crate::rig::loopdev::{self, LoopDevice};
use crate::rig::session::SessionDir;

/// Where a region of the trial's layout lives: a disk of the log and a byte range.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    pub disk: String,
    pub offset: u64,
    pub size: u64,
}

/// The file system's and the journal's regions, as the rig laid them out.
pub fn regions(config: &Config) -> Result<(Region, Option<Region>)> {
    let fs = Region {
        disk: "fs".into(),
        offset: 0,
        size: config.fs_size,
    };
    let journal = match config.placement {
        Placement::None | Placement::Internal => None,
        Placement::SameDisk => Some(Region {
            disk: "fs".into(),
            offset: config.fs_size,
            size: config.journal_size,
        }),
        Placement::SecondDisk | Placement::Ramdisk => Some(Region {
            disk: "journal".into(),
            offset: 0,
            size: config.journal_size,
        }),
        Placement::Zram | Placement::Device => bail!(
            "configuration `{}`: the journal is on a {} device, which the write log does not record; the crash lab needs every disk emulated (`journal.device_model`)",
            config.label,
            config.placement
        ),
    };
    Ok((fs, journal))
}

/// The second file system's region (`filesystem.second_size`): all of its own disk.
pub fn second_region(config: &Config) -> Option<Region> {
    config.second_fs_size.map(|size| Region {
        disk: "second".into(),
        offset: 0,
        size,
    })
}

/// Loop devices over the daemon's disks, detached on drop.
pub struct Attached {
    pub fs: LoopDevice,
    pub journal: Option<LoopDevice>,
    /// The second file system's device, when the configuration has one.
    pub second: Option<LoopDevice>,
    /// The devices held open by the rig. The kernel drops a block device's cache when
    /// its last opener closes it, but anyone may hold it open between two states (udev
    /// probing it, the rig's own descriptors here); held open, the cache lives on and
    /// only [`Attached::drop_caches`] makes the next state's reads reach the daemon.
    held: Vec<File>,
}

impl Attached {
    pub fn fs_path(&self) -> &Path {
        self.fs.path()
    }

    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_ref().map(|j| j.path())
    }

    pub fn second_path(&self) -> Option<&Path> {
        self.second.as_ref().map(|s| s.path())
    }

    fn devices(&self) -> impl Iterator<Item = &LoopDevice> {
        std::iter::once(&self.fs)
            .chain(self.journal.as_ref())
            .chain(self.second.as_ref())
    }

    /// Drops the block caches of the devices: what is read next is what the daemon
    /// serves now. The overlay changes beneath the devices between states (cleared,
    /// reloaded, a disk lost); without this, a state would be judged on pages cached
    /// from the one before. (A mounted file system's own buffers stay: call it
    /// between states, not during one.)
    pub fn drop_caches(&self) -> Result<()> {
        // A page still being read (udev probes a device after an unmount closed it
        // for writing) survives the drop, with the last state's content: wait for
        // udev, then drop until nothing is cached.
        loopdev::settle_udev();
        for (file, dev) in self.held.iter().zip(self.devices()) {
            loopdev::flush_buffers_verified(file, dev.path())?;
        }
        Ok(())
    }

    pub fn release(mut self) -> Result<()> {
        // A held descriptor would keep a detached loop device alive (autoclear).
        self.held.clear();
        let s = self.second.as_mut().map(|j| j.release()).unwrap_or(Ok(()));
        let a = self.journal.as_mut().map(|j| j.release()).unwrap_or(Ok(()));
        let b = self.fs.release();
        s.and(a).and(b)
    }
}

pub struct RecoveryRig {
    // Field order is drop order: the loop devices are detached before the daemon
    // under them stops, the daemon stops before its images are removed, and the
    // session directory goes last.
    /// Attached once per daemon and kept between states: losetup to attach and
    /// detach cost about 10 ms a state.
    attached: Option<Attached>,
    daemon: Option<DeviceDaemon>,
    /// The base images mapped for the user-space verdict, made at its first state.
    maps: Vec<MappedImage>,
    images: Vec<ImageFile>,
    specs: Vec<DiskSpec>,
    header: LogHeader,
    log: File,
    /// Records with `seq <` this are in the base images.
    applied: u64,
    fs: Region,
    journal: Option<Region>,
    second: Option<Region>,
    pub fs_type: FsType,
    /// Mount options without the journal's path.
    options: Vec<String>,
    pub mount_point: PathBuf,
    /// Where the second file system of each state is mounted, when there is one.
    second_mount: Option<PathBuf>,
    pub timeout: Duration,
    state_file: PathBuf,
    session: SessionDir,
}

impl RecoveryRig {
    /// Zeroed base images with the log's disk sizes in a new session directory under
    /// `work_dir`, served by an overlay daemon with the configuration's models.
    pub fn new(
        work_dir: &Path,
        config: &Config,
        header: &LogHeader,
        log_path: &Path,
        timeout: Duration,
    ) -> Result<Self> {
        let (fs, journal) = regions(config)?;
        let second = second_region(config);
        let session = SessionDir::create(work_dir)?;
        let mut images = Vec::new();
        let mut specs = Vec::new();
        for d in &header.disks {
            let model = match d.name.as_str() {
                "fs" => config.fs_model.as_ref(),
                "journal" => config.journal_model.as_ref(),
                "second" => config.second_fs_model.as_ref(),
                _ => None,
            }
            .with_context(|| {
                format!(
                    "the write log has a disk `{}` that configuration `{}` does not emulate; was it recorded with another experiment?",
                    d.name, config.label
                )
            })?;
            let image = ImageFile::create(&session, &format!("base-{}.img", d.name), d.size)?;
            specs.push(DiskSpec {
                name: d.name.clone(),
                image: image.path().to_path_buf(),
                model: model.model.clone(),
                params: model.params.clone(),
                image_id: Some(crate::file_id::FileId::of(image.file())?),
            });
            images.push(image);
        }
        for r in std::iter::once(&fs)
            .chain(journal.as_ref())
            .chain(second.as_ref())
        {
            let Some(d) = header.disks.iter().find(|d| d.name == r.disk) else {
                bail!(
                    "the write log has no disk `{}`, which configuration `{}` puts its {} on",
                    r.disk,
                    config.label,
                    match r.disk.as_str() {
                        "fs" if r.offset == 0 => "file system",
                        "second" => "second file system",
                        _ => "journal",
                    }
                );
            };
            if r.offset + r.size > d.size {
                bail!(
                    "disk `{}` of the write log is {} bytes, too small for configuration `{}`",
                    d.name,
                    d.size,
                    config.label
                );
            }
        }
        let log = File::open(log_path)
            .with_context(|| format!("cannot open the write log {}", log_path.display()))?;
        let mount_point = session.join("mnt");
        std::fs::create_dir_all(&mount_point)?;
        let second_mount = second.as_ref().map(|_| session.join("mnt2"));
        if let Some(m) = &second_mount {
            std::fs::create_dir_all(m)?;
        }
        let state_file = session.join("state.wlog");
        let mut rig = RecoveryRig {
            session,
            attached: None,
            daemon: None,
            maps: Vec::new(),
            images,
            specs,
            header: header.clone(),
            log,
            applied: 0,
            fs,
            journal,
            second,
            fs_type: config.fs_type,
            options: recovery_options(config),
            mount_point,
            second_mount,
            timeout,
            state_file,
        };
        rig.start_daemon()?;
        Ok(rig)
    }

    fn start_daemon(&mut self) -> Result<()> {
        let opts = EmulationOptions {
            write_log: false,
            pin_cpus: false,
            ..EmulationOptions::default()
        };
        self.daemon = Some(DeviceDaemon::start_overlay(
            &self.session,
            &self.specs,
            &opts,
        )?);
        let att = self.attach()?;
        // Timed recoveries take the model's time: the path's cost, measured now
        // (timing off, the overlay empty, nothing mounted), comes off each answer.
        let d = self.daemon();
        d.measure_path(&self.fs.disk, &att.fs)?;
        if let (Some(j), Some(dev)) = (&self.journal, &att.journal) {
            d.measure_path(&j.disk, dev)?;
        }
        if let (Some(r), Some(dev)) = (&self.second, &att.second) {
            d.measure_path(&r.disk, dev)?;
        }
        self.attached = Some(att);
        Ok(())
    }

    /// Detaches the rig's loop devices, then stops the daemon.
    fn stop_daemon(&mut self) -> Result<()> {
        let a = self.attached.take().map_or(Ok(()), Attached::release);
        let d = self.daemon.take().map_or(Ok(()), |mut d| d.release());
        a.and(d)
    }

    pub fn daemon(&self) -> &DeviceDaemon {
        self.daemon.as_ref().expect("started")
    }

    /// A daemon aborted after a hang cannot serve again: start another on the same
    /// bases (recovery never wrote them).
    pub fn restart_daemon(&mut self) -> Result<()> {
        self.stop_daemon()?;
        self.start_daemon()
    }

    pub fn session(&self) -> &Path {
        self.session.path()
    }

    /// Applies records `[applied, upto)` to the base images. Only forward: states come
    /// sorted by base.
    fn advance(&mut self, recs: &[LogRec], upto: u64) -> Result<()> {
        if upto < self.applied {
            bail!(
                "crash states out of order: base {upto} after {}",
                self.applied
            );
        }
        let zeros = vec![0u8; 1 << 20];
        for m in &recs[self.applied as usize..upto as usize] {
            let Some(image) = self.images.get(m.disk as usize) else {
                continue;
            };
            let f = image.file();
            match m.kind {
                RecordKind::Write => f.write_all_at(&read_payload(&self.log, m)?, m.offset)?,
                RecordKind::Zero | RecordKind::Discard => write_zeros(f, &zeros, m.offset, m.len)?,
                RecordKind::Flush | RecordKind::Marker => {}
            }
        }
        self.applied = upto;
        Ok(())
    }

    /// The state `plan` as bytes in memory, for the user-space verdict: the base moved
    /// to `plan.base` as [`Self::load`] would, the daemon's overlay left alone. With
    /// the file system's region and, when it has one, the external journal's.
    pub fn user_state(
        &mut self,
        recs: &[LogRec],
        plan: &StatePlan,
    ) -> Result<(StateBytes, RegionAt, Option<RegionAt>)> {
        self.advance(recs, plan.base)?;
        let names: Vec<String> = self.header.disks.iter().map(|d| d.name.clone()).collect();
        if self.maps.is_empty() {
            self.maps = self
                .images
                .iter()
                .zip(&names)
                .map(|(i, n)| map_image(i.file(), n))
                .collect::<Result<_>>()?;
        }
        let state = StateBytes::build(self.maps.clone(), names, &self.log, recs, plan)?;
        let at = |r: &Region| {
            Some(RegionAt {
                disk: state.disk(&r.disk)?,
                offset: r.offset,
                size: r.size,
            })
        };
        let fs = at(&self.fs).context("the write log has no `fs` disk")?;
        let journal = self.journal.as_ref().and_then(at);
        Ok((state, fs, journal))
    }

    /// Makes the daemon serve `plan`: the base moved to `plan.base`, the state's own
    /// writes in the overlay.
    pub fn load(&mut self, recs: &[LogRec], plan: &StatePlan) -> Result<()> {
        self.clear()?;
        self.advance(recs, plan.base)?;
        self.reload_overlay(recs, plan)
    }

    /// Loads `plan`'s own writes into the (cleared) overlay; the base must already be
    /// at `plan.base`.
    pub fn reload_overlay(&self, recs: &[LogRec], plan: &StatePlan) -> Result<()> {
        if self.applied != plan.base {
            bail!(
                "the base is at {}, not at state base {}",
                self.applied,
                plan.base
            );
        }
        if plan.overlay.is_empty() {
            return Ok(());
        }
        let mut w = LogWriter::create(&self.state_file, &self.header)?;
        for piece in &plan.overlay {
            let m = &recs[piece.seq as usize];
            let stamp = Stamp {
                time_ns: m.time_ns,
                issued: m.issued.unwrap_or(0),
                acked: m.acked.unwrap_or(0),
            };
            let whole = [(0, m.len)];
            let ranges: &[(u64, u64)] = piece.ranges.as_deref().unwrap_or(&whole);
            match m.kind {
                RecordKind::Write => {
                    let data = read_payload(&self.log, m)?;
                    for &(start, len) in ranges {
                        let part = &data[start as usize..(start + len) as usize];
                        w.append(
                            RecordKind::Write,
                            m.disk,
                            m.offset + start,
                            len,
                            part,
                            stamp,
                        )?;
                    }
                }
                kind => {
                    for &(start, len) in ranges {
                        w.append(kind, m.disk, m.offset + start, len, &[], stamp)?;
                    }
                }
            }
        }
        w.flush()?;
        drop(w);
        self.daemon().overlay_load(&self.state_file)
    }

    /// The logical block size of each disk of the log, read from a loop device over
    /// it: the unit a power cut cannot split on that disk.
    pub fn logical_blocks(&self) -> Result<Vec<u64>> {
        let d = self.daemon();
        let mut out = Vec::new();
        for disk in &self.header.disks {
            let dev = d.attach_disk(&disk.name, 0, None)?;
            let size = loopdev::logical_block_size(dev.path());
            let mut dev = dev;
            dev.release()?;
            out.push(size?);
        }
        Ok(out)
    }

    /// Drops the state's writes and recovery's: the next load starts clean.
    pub fn clear(&self) -> Result<()> {
        // Before: anything recovery left dirty in a block cache lands in the overlay
        // being thrown away, not in the next state's. After: nothing cached of this
        // state is read as the next one.
        self.drop_caches()?;
        self.daemon().overlay_clear()?;
        self.drop_caches()
    }

    fn drop_caches(&self) -> Result<()> {
        self.attached.as_ref().map_or(Ok(()), Attached::drop_caches)
    }

    /// The rig's own loop devices over the daemon's disks, their block caches dropped
    /// so they read what the daemon serves now (the overlay may have changed since
    /// they were last read: `overlay_lose`, a reload).
    pub fn attached(&self) -> Result<&Attached> {
        let att = self.attached.as_ref().context(
            "the recovery rig has no loop devices (its daemon failed to restart); start a new rig",
        )?;
        att.drop_caches()?;
        Ok(att)
    }

    /// A new attachment of its own (the rig keeps one: [`Self::attached`]); the
    /// caller releases it.
    pub fn attach(&self) -> Result<Attached> {
        let d = self.daemon();
        let fs = d.attach_disk(&self.fs.disk, self.fs.offset, Some(self.fs.size))?;
        let journal = match &self.journal {
            Some(j) => Some(d.attach_disk(&j.disk, j.offset, Some(j.size))?),
            None => None,
        };
        let second = match &self.second {
            Some(r) => Some(d.attach_disk(&r.disk, r.offset, Some(r.size))?),
            None => None,
        };
        let mut att = Attached {
            fs,
            journal,
            second,
            held: Vec::new(),
        };
        let held = att
            .devices()
            .map(|dev| {
                File::open(dev.path())
                    .with_context(|| format!("cannot open {}", dev.path().display()))
            })
            .collect::<Result<Vec<_>>>()?;
        att.held = held;
        Ok(att)
    }

    /// The configuration's mount options with this attachment's journal device.
    pub fn mount_options(&self, att: &Attached) -> String {
        self.options_with(att.journal_path())
    }

    /// The configuration's mount options with `journal` as the external journal (a
    /// second file system has none).
    fn options_with(&self, journal: Option<&Path>) -> String {
        let mut opts = self.options.clone();
        if let Some(j) = journal {
            opts.insert(
                0,
                match self.fs_type {
                    FsType::Xfs => format!("logdev={}", j.display()),
                    _ => format!("journal_path={}", j.display()),
                },
            );
        }
        if opts.is_empty() {
            opts.push("defaults".into());
        }
        opts.join(",")
    }

    /// Runs a recovery step with the rig's time limit; a step that hangs aborts the
    /// daemon's connection so it returns, and the daemon is restarted before the next
    /// state (the caller sees `timed_out`).
    pub fn step(&self, program: &str, args: &[&str]) -> Result<Ran> {
        let daemon = self.daemon();
        cmd::run_timed(program, args, self.timeout, &mut || daemon.abort())
    }

    /// Mounts the state with mount(2) itself: mount(8) (libmount) spent as long again
    /// as the kernel's mount around it, per state. Timed and aborted like a step. With
    /// a second file system, it is mounted (its own journal replayed) right after the
    /// first, and the two count as one recovery: a restart waits for both.
    pub fn mount(&self, att: &Attached) -> Result<Ran> {
        let first = self.mount_one(att.fs_path(), &self.mount_point, &self.mount_options(att))?;
        let (Some(dev), Some(mnt)) = (att.second_path(), &self.second_mount) else {
            return Ok(first);
        };
        if !first.ok() {
            return Ok(first);
        }
        let second = self.mount_one(dev, mnt, &self.options_with(None))?;
        let seconds = first.seconds + second.seconds;
        if !second.ok() && !second.timed_out {
            // What failed is the second one: the first must not stay mounted for fsck.
            self.unmount()?;
        }
        Ok(Ran {
            seconds,
            output: if second.ok() {
                first.output
            } else {
                format!("{}the second file system: {}", first.output, second.output)
            },
            ..second
        })
    }

    fn mount_one(&self, dev: &Path, mnt: &Path, options: &str) -> Result<Ran> {
        let (flags, data) = split_mount_options(options);
        let dev = dev.to_path_buf();
        let mnt = mnt.to_path_buf();
        let fstype = self.fs_type.as_str().to_string();
        let daemon = self.daemon();
        let (out, seconds) = cmd::call_timed(self.timeout, &mut || daemon.abort(), move || {
            nix::mount::mount(
                Some(dev.as_path()),
                mnt.as_path(),
                Some(fstype.as_str()),
                flags,
                Some(data.as_str()),
            )
            .map_err(|e| (e, dev, mnt, fstype, data))
        })?;
        Ok(match out {
            None => Ran {
                code: None,
                output: String::new(),
                seconds,
                timed_out: true,
            },
            Some(Ok(())) => Ran {
                code: Some(0),
                output: String::new(),
                seconds,
                timed_out: false,
            },
            // 32: mount(8)'s exit status for a mount that failed.
            Some(Err((e, dev, mnt, fstype, data))) => Ran {
                code: Some(32),
                output: format!(
                    "mount(2) of {} ({fstype}, {data}) on {} failed: {e} (the kernel's log says why)\n",
                    dev.display(),
                    mnt.display(),
                ),
                seconds,
                timed_out: false,
            },
        })
    }

    /// Unmounts the second file system (if mounted), then the first (if mounted).
    pub fn unmount(&self) -> Result<()> {
        let mounted = crate::rig::mounts::mounts();
        let is = |p: &Path| mounted.iter().any(|m| m.target == p);
        if let Some(m) = self.second_mount.as_deref().filter(|m| is(m)) {
            crate::rig::mounts::unmount(m)?;
        }
        if is(&self.mount_point) {
            crate::rig::mounts::unmount(&self.mount_point)?;
        }
        Ok(())
    }

    pub fn is_mounted(&self) -> bool {
        crate::rig::mounts::mounts().iter().any(|m| {
            m.target == self.mount_point || Some(m.target.as_path()) == self.second_mount.as_deref()
        })
    }

    /// Where the state's second file system is mounted, when the configuration has one.
    pub fn second_mount(&self) -> Option<&Path> {
        self.second_mount.as_deref()
    }

    /// Releases everything: unmounts, stops the daemon, removes the images and the
    /// session directory.
    pub fn release(mut self) -> Result<()> {
        let mut first = None;
        if self.is_mounted() {
            if let Err(e) = self.unmount() {
                first.get_or_insert(e);
            }
        }
        if let Err(e) = self.stop_daemon() {
            first.get_or_insert(e);
        }
        self.maps.clear();
        for mut i in self.images.drain(..) {
            if let Err(e) = i.release() {
                first.get_or_insert(e);
            }
        }
        let _ = std::fs::remove_file(&self.state_file);
        let _ = std::fs::remove_dir(&self.mount_point);
        if let Some(m) = &self.second_mount {
            let _ = std::fs::remove_dir(m);
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for RecoveryRig {
    fn drop(&mut self) {
        if self.is_mounted() {
            let _ = self.unmount();
        }
        let _ = self.stop_daemon();
    }
}

/// Splits mount(8)-style options into mount(2)'s flags and the file system's own
/// options: the kernel rejects `noatime` and the like in the data string, which
/// mount(8) turns into flags.
fn split_mount_options(opts: &str) -> (nix::mount::MsFlags, String) {
    use nix::mount::MsFlags;
    let mut flags = MsFlags::empty();
    let mut data = Vec::new();
    for o in opts.split(',').filter(|o| !o.is_empty()) {
        match o {
            "defaults" | "rw" | "async" | "atime" | "diratime" | "suid" | "dev" | "exec"
            | "nolazytime" | "auto" | "noauto" | "nouser" => {}
            "ro" => flags |= MsFlags::MS_RDONLY,
            "noatime" => flags |= MsFlags::MS_NOATIME,
            "nodiratime" => flags |= MsFlags::MS_NODIRATIME,
            "relatime" => flags |= MsFlags::MS_RELATIME,
            "strictatime" => flags |= MsFlags::MS_STRICTATIME,
            "lazytime" => flags |= MsFlags::MS_LAZYTIME,
            "sync" => flags |= MsFlags::MS_SYNCHRONOUS,
            "dirsync" => flags |= MsFlags::MS_DIRSYNC,
            "nosuid" => flags |= MsFlags::MS_NOSUID,
            "nodev" => flags |= MsFlags::MS_NODEV,
            "noexec" => flags |= MsFlags::MS_NOEXEC,
            other => data.push(other),
        }
    }
    (flags, data.join(","))
}

/// Mount options for recovery: the trial's data mode, commit interval and mount
/// options (the journal's path is added per attachment).
fn recovery_options(config: &Config) -> Vec<String> {
    let mut opts = Vec::new();
    if config.fs_type.is_ext() && config.placement != Placement::None {
        opts.push(format!("data={}", config.mode));
    }
    opts.extend(config.mount_options.iter().cloned());
    // Rigs side by side serve copies of one file system, with one UUID: XFS refuses
    // to mount a second file system with the UUID of a mounted one ("duplicate UUID -
    // can't mount") unless told not to check.
    if config.fs_type == FsType::Xfs && !opts.iter().any(|o| o == "nouuid") {
        opts.push("nouuid".into());
    }
    opts
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::mount::MsFlags;

    #[test]
    fn generic_mount_options_become_flags_and_the_rest_goes_to_the_file_system() {
        let (flags, data) =
            split_mount_options("journal_path=/dev/loop3,data=ordered,noatime,barrier=0,ro");
        assert_eq!(flags, MsFlags::MS_NOATIME | MsFlags::MS_RDONLY);
        assert_eq!(data, "journal_path=/dev/loop3,data=ordered,barrier=0");
        assert_eq!(
            split_mount_options("defaults"),
            (MsFlags::empty(), String::new())
        );
    }
}
