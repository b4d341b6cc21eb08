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

use super::states::{LogRec, StatePlan};
use crate::emu::daemon::DiskSpec;
use crate::emu::host::DeviceDaemon;
use crate::emu::writelog::{read_payload, write_zeros, LogHeader, LogWriter, RecordKind, Stamp};
use crate::emu::EmulationOptions;
use crate::experiment::config::{Config, FsType, Placement};
use crate::rig::cmd::{self, Ran};
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

/// Loop devices of one state, detached on drop.
pub struct Attached {
    pub fs: LoopDevice,
    pub journal: Option<LoopDevice>,
}

impl Attached {
    pub fn fs_path(&self) -> &Path {
        self.fs.path()
    }

    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_ref().map(|j| j.path())
    }

    pub fn release(mut self) -> Result<()> {
        let a = self.journal.as_mut().map(|j| j.release()).unwrap_or(Ok(()));
        let b = self.fs.release();
        a.and(b)
    }
}

pub struct RecoveryRig {
    // Field order is drop order: the daemon stops before its images are removed, and
    // the session directory goes last.
    daemon: Option<DeviceDaemon>,
    images: Vec<ImageFile>,
    specs: Vec<DiskSpec>,
    header: LogHeader,
    log: File,
    /// Records with `seq <` this are in the base images.
    applied: u64,
    fs: Region,
    journal: Option<Region>,
    pub fs_type: FsType,
    /// Mount options without the journal's path.
    options: Vec<String>,
    pub mount_point: PathBuf,
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
        let session = SessionDir::create(work_dir)?;
        let mut images = Vec::new();
        let mut specs = Vec::new();
        for d in &header.disks {
            let model = match d.name.as_str() {
                "fs" => config.fs_model.as_ref(),
                "journal" => config.journal_model.as_ref(),
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
                image_id: Some(loopdev::FileId::of(image.file())?),
            });
            images.push(image);
        }
        for r in std::iter::once(&fs).chain(journal.as_ref()) {
            let Some(d) = header.disks.iter().find(|d| d.name == r.disk) else {
                bail!(
                    "the write log has no disk `{}`, which configuration `{}` puts its {} on",
                    r.disk,
                    config.label,
                    if r.offset == 0 && r.disk == "fs" {
                        "file system"
                    } else {
                        "journal"
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
        let state_file = session.join("state.wlog");
        let mut rig = RecoveryRig {
            session,
            daemon: None,
            images,
            specs,
            header: header.clone(),
            log,
            applied: 0,
            fs,
            journal,
            fs_type: config.fs_type,
            options: recovery_options(config),
            mount_point,
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
        Ok(())
    }

    pub fn daemon(&self) -> &DeviceDaemon {
        self.daemon.as_ref().expect("started")
    }

    /// A daemon aborted after a hang cannot serve again: start another on the same
    /// bases (recovery never wrote them).
    pub fn restart_daemon(&mut self) -> Result<()> {
        if let Some(mut d) = self.daemon.take() {
            d.release()?;
        }
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

    /// Makes the daemon serve `plan`: the base moved to `plan.base`, the state's own
    /// writes in the overlay.
    pub fn load(&mut self, recs: &[LogRec], plan: &StatePlan) -> Result<()> {
        self.daemon().overlay_clear()?;
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
                        w.append(RecordKind::Write, m.disk, m.offset + start, len, part, stamp)?;
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
        self.daemon().overlay_clear()
    }

    pub fn attach(&self) -> Result<Attached> {
        let d = self.daemon();
        let fs = d.attach_disk(&self.fs.disk, self.fs.offset, Some(self.fs.size))?;
        let journal = match &self.journal {
            Some(j) => Some(d.attach_disk(&j.disk, j.offset, Some(j.size))?),
            None => None,
        };
        Ok(Attached { fs, journal })
    }

    /// The configuration's mount options with this attachment's journal device.
    pub fn mount_options(&self, att: &Attached) -> String {
        let mut opts = self.options.clone();
        if let Some(j) = att.journal_path() {
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

    pub fn mount(&self, att: &Attached) -> Result<Ran> {
        let opts = self.mount_options(att);
        let dev = att.fs_path().display().to_string();
        let mnt = self.mount_point.display().to_string();
        self.step(
            "mount",
            &["-t", self.fs_type.as_str(), "-o", &opts, &dev, &mnt],
        )
    }

    pub fn unmount(&self) -> Result<()> {
        crate::rig::mounts::unmount(&self.mount_point)
    }

    pub fn is_mounted(&self) -> bool {
        crate::rig::mounts::mounts()
            .iter()
            .any(|m| m.target == self.mount_point)
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
        if let Some(mut d) = self.daemon.take() {
            if let Err(e) = d.release() {
                first.get_or_insert(e);
            }
        }
        for mut i in self.images.drain(..) {
            if let Err(e) = i.release() {
                first.get_or_insert(e);
            }
        }
        let _ = std::fs::remove_file(&self.state_file);
        let _ = std::fs::remove_dir(&self.mount_point);
        first.map_or(Ok(()), Err)
    }
}

impl Drop for RecoveryRig {
    fn drop(&mut self) {
        if self.is_mounted() {
            let _ = self.unmount();
        }
        if let Some(mut d) = self.daemon.take() {
            let _ = d.release();
        }
    }
}

/// Mount options for recovery: the trial's data mode, commit interval and mount
/// options (the journal's path is added per attachment).
fn recovery_options(config: &Config) -> Vec<String> {
    let mut opts = Vec::new();
    if config.fs_type.is_ext() && config.placement != Placement::None {
        opts.push(format!("data={}", config.mode));
    }
    opts.extend(config.mount_options.iter().cloned());
    opts
}
