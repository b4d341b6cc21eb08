//! Loop devices over image files, attached with `losetup -f --show` and detached on
//! drop. Only devices this process attached are ever detached.
//!
//! A loop device is attached to an open file, not to a path: losetup gets
//! `/proc/self/fd/N` of jbench's descriptor, and the kernel's record of the backing
//! file (`LOOP_GET_STATUS64`) is then checked against that descriptor's device and
//! inode. The kernel records the real path of the opened file, so `losetup -a`,
//! sysfs and `jbench cleanup` still see the image's path.

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::file_id::FileId;
use crate::rig::cmd;

#[derive(Debug)]
pub struct LoopDevice {
    device: PathBuf,
    backing: PathBuf,
    released: bool,
}

impl LoopDevice {
    /// Attaches open `file` (known to the user as `shown`) from `offset` for `size`
    /// bytes (the whole file when `None`).
    pub fn attach(file: &File, shown: &Path, offset: u64, size: Option<u64>) -> Result<Self> {
        Self::attach_with(file, shown, offset, size, false)
    }

    /// Like [`Self::attach`]; with `direct`, the loop device does direct I/O on its
    /// file and has 4096-byte sectors, so every request reaches the file's owner (the
    /// device daemon of an emulated disk) instead of being served by the page cache.
    pub fn attach_with(
        file: &File,
        shown: &Path,
        offset: u64,
        size: Option<u64>,
        direct: bool,
    ) -> Result<Self> {
        Self::attach_expecting(file, FileId::of(file)?, shown, offset, size, direct)
    }

    /// Attaches `file` through its descriptor (`losetup /proc/self/fd/N`), then checks
    /// that the kernel's loop device is backed by file `expected`, detaching it and
    /// refusing otherwise: what is formatted next must be what jbench created, even if
    /// the directory it was created in was swapped in the meantime.
    pub fn attach_expecting(
        file: &File,
        expected: FileId,
        shown: &Path,
        offset: u64,
        size: Option<u64>,
        direct: bool,
    ) -> Result<Self> {
        let mut args = vec![
            "-f".to_string(),
            "--show".into(),
            "--offset".into(),
            offset.to_string(),
        ];
        if let Some(s) = size {
            args.extend(["--sizelimit".into(), s.to_string()]);
        }
        if direct {
            args.extend([
                "--direct-io=on".into(),
                "--sector-size".into(),
                "4096".into(),
            ]);
        }
        let name = losetup_fd(file.as_raw_fd(), &args)
            .with_context(|| format!("cannot attach a loop device to {}", shown.display()))?;
        if !name.starts_with("/dev/loop") {
            anyhow::bail!("losetup printed `{name}` instead of a loop device");
        }
        let device = PathBuf::from(name);
        let backing = backing_file(&device).unwrap_or_else(|| shown.to_path_buf());
        let lo = Self {
            device,
            backing,
            released: false,
        };
        // On a mismatch `lo` is dropped, which detaches it.
        lo.check_backed_by(expected, shown)?;
        Ok(lo)
    }

    /// Fails unless the loop device's backing file is `expected`.
    fn check_backed_by(&self, expected: FileId, shown: &Path) -> Result<()> {
        let got = loop_backing_id(&self.device)?;
        if got != expected {
            anyhow::bail!(
                "loop device {} is backed by inode {} on dev {} ({}), not by the image jbench \
                 created (inode {} on dev {}, {}): the session directory was changed while \
                 jbench worked; refusing to format it",
                self.device.display(),
                got.ino,
                got.dev,
                self.backing.display(),
                expected.ino,
                expected.dev,
                shown.display()
            );
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.device
    }

    /// Writes back and drops the block device's page cache (`BLKFLSBUF`). What the
    /// kernel cached of the device (reads by mount, fsck, the file system's metadata)
    /// is otherwise served again after the file beneath it changed.
    pub fn drop_cache(&self) -> Result<()> {
        flush_buffers(&self.device)
    }

    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        detach(&self.device, &self.backing)?;
        self.released = true;
        Ok(())
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
    }
}

/// Detaches a loop device and waits until the kernel has really let go of it: the
/// detach completes asynchronously once the last opener closes, and a caller that
/// checks right away (or removes the image) must not see it still attached.
pub fn detach(device: &Path, backing: &Path) -> Result<()> {
    let dev = device.to_string_lossy();
    let ours = || backing_file(device).is_some_and(|b| b == backing);
    let mut last = String::new();
    for attempt in 0..10 {
        if !ours() {
            return Ok(());
        }
        match cmd::run("losetup", &["-d", &dev]) {
            Ok(_) => break,
            Err(e) => {
                last = format!("{e:#}");
                std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
            }
        }
    }
    for _ in 0..200 {
        if !ours() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    anyhow::bail!(
        "{} is still attached to {} after detaching it{}; something holds it open (see `fuser -v {}`)",
        device.display(),
        backing.display(),
        if last.is_empty() { String::new() } else { format!(" ({last})") },
        device.display()
    )
}

/// The file behind an attached loop device, from sysfs; `None` when not attached.
/// A deleted backing file reads as `path (deleted)`; the suffix is removed.
pub fn backing_file(device: &Path) -> Option<PathBuf> {
    let name = device.file_name()?.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let text = text.trim_end_matches('\n');
    let text = text.strip_suffix(" (deleted)").unwrap_or(text);
    Some(PathBuf::from(text))
}

/// Every attached loop device with its backing file.
pub fn attached() -> Vec<(PathBuf, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("loop") {
                return None;
            }
            let dev = PathBuf::from(format!("/dev/{name}"));
            backing_file(&dev).map(|b| (dev, b))
        })
        .collect();
    out.sort();
    out
}

/// Runs `losetup ARGS /proc/self/fd/FD` with descriptor `fd` inherited, and returns what
/// it printed (the device). `fd` keeps its number in the child; only its close-on-exec
/// flag is cleared there, so jbench's own descriptor is untouched.
fn losetup_fd(fd: RawFd, args: &[String]) -> Result<String> {
    let mut command = Command::new("losetup");
    command
        .args(args)
        .arg(format!("/proc/self/fd/{fd}"))
        .stdin(Stdio::null())
        // As in `cmd`: a Ctrl-C must not kill losetup half-way.
        .process_group(0);
    // SAFETY: between fork and exec only async-signal-safe fcntl calls are made.
    unsafe {
        command.pre_exec(move || {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command
        .output()
        .context("cannot start `losetup`; is it installed? (Debian: mount, util-linux)")?;
    if !out.status.success() {
        anyhow::bail!(
            "`losetup {} /proc/self/fd/{fd}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `struct loop_info64` of <linux/loop.h>.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;
/// `_IO(0x12, 97)` of <linux/fs.h>.
const BLKFLSBUF: libc::c_ulong = 0x1261;

/// `BLKFLSBUF` on block device `device`: dirty pages written back, clean ones dropped.
pub fn flush_buffers(device: &Path) -> Result<()> {
    let dev = File::open(device).with_context(|| format!("cannot open {}", device.display()))?;
    flush_buffers_of(&dev, device)
}

/// [`flush_buffers`] through an open descriptor of `device`.
pub fn flush_buffers_of(dev: &File, device: &Path) -> Result<()> {
    // SAFETY: BLKFLSBUF takes no argument.
    let rc = unsafe { libc::ioctl(dev.as_raw_fd(), BLKFLSBUF as _, 0) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| {
            format!(
                "cannot drop the block cache of {} (BLKFLSBUF); jbench must run as root",
                device.display()
            )
        });
    }
    Ok(())
}

/// Pages of `device`'s block cache that are resident now: `cachestat(2)` where the
/// kernel has it (6.5 and later; it walks only the pages that are there), else
/// `mincore` over a mapping of the whole device, which costs 14 ms on a 1 GiB device
/// and ran three times per crash state checked by the kernel.
pub fn resident_pages(dev: &File, device: &Path) -> Result<usize> {
    use std::os::unix::fs::FileTypeExt;
    if !dev.metadata()?.file_type().is_block_device() {
        return Ok(0);
    }
    match cached_pages(dev) {
        Some(n) => Ok(n),
        None => resident_pages_by_mincore(dev, device),
    }
}

/// `cachestat(2)` over the whole of `dev`: its pages in the page cache, or `None`
/// where the kernel lacks the call.
fn cached_pages(dev: &File) -> Option<usize> {
    // The generic syscall table's number, the same on every architecture since 6.5.
    const SYS_CACHESTAT: libc::c_long = 451;
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    // len 0: to the end of the file.
    let range = Range { off: 0, len: 0 };
    let mut stat = Stat::default();
    // SAFETY: cachestat reads one range and writes one stat through the pointers, both
    // live for the call; flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            dev.as_raw_fd(),
            &range as *const Range,
            &mut stat as *mut Stat,
            0u32,
        )
    };
    (rc == 0).then_some(stat.nr_cache as usize)
}

/// [`resident_pages`] by `mincore` over a mapping of the whole device, for kernels
/// before `cachestat(2)` (and to check it against).
pub fn resident_pages_by_mincore(dev: &File, device: &Path) -> Result<usize> {
    let size = {
        let mut f = dev;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0))?
    };
    if size == 0 {
        return Ok(0);
    }
    // SAFETY: sysconf reads a constant of the running kernel.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let len = size as usize;
    // SAFETY: a read-only shared mapping of a block device we hold open; it is only
    // passed to mincore and unmapped before returning, never read.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            dev.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot map {} to read its cache", device.display()));
    }
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: `vec` has one byte per page of the mapping.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: unmapping exactly what mmap returned.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return Err(err).with_context(|| format!("mincore of {} failed", device.display()));
    }
    Ok(vec.iter().filter(|b| *b & 1 != 0).count())
}

/// [`flush_buffers_of`] until no page of `device` is left cached. BLKFLSBUF silently
/// keeps pages that are locked or held at that instant (a read still in flight from
/// the last user, a udev probe, a mapping), and a kept page is stale once what the
/// device serves changes: a crash state would be read partly from the one before it
/// (a superblock without `needs_recovery`, an empty journal).
pub fn flush_buffers_verified(dev: &File, device: &Path) -> Result<()> {
    for _ in 0..100 {
        flush_buffers_of(dev, device)?;
        if resident_pages(dev, device)? == 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    anyhow::bail!(
        "{} keeps pages cached after 100 BLKFLSBUF in 1 s: something holds it open or mapped (lsof {})",
        device.display(),
        device.display()
    )
}

/// Waits until udev has handled every event queued so far (its probes read the
/// devices a process just closed for writing), when udev runs here: without its
/// control socket there is no daemon to wait for, and `udevadm settle` would only
/// cost its start (6 ms, three times per crash state checked by the kernel).
pub fn settle_udev() {
    if Path::new("/run/udev/control").exists() && cmd::available("udevadm") {
        let _ = Command::new("udevadm")
            .args(["settle", "--timeout=5"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The device and inode of the file behind loop device `device`, as the kernel has it.
pub fn loop_backing_id(device: &Path) -> Result<FileId> {
    let dev = File::open(device).with_context(|| format!("cannot open {}", device.display()))?;
    // SAFETY: an all-zero loop_info64 is valid; the ioctl fills it.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: LOOP_GET_STATUS64 writes one loop_info64 into the buffer given.
    let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot read the status of {}", device.display()));
    }
    // The kernel encodes lo_device as stat encodes st_dev (new_encode_dev).
    Ok(FileId {
        dev: info.lo_device,
        ino: info.lo_inode,
    })
}

/// The logical block (sector) size of a block device, from the kernel (`BLKSSZGET`).
pub fn logical_block_size(device: &Path) -> Result<u64> {
    // BLKSSZGET = _IO(0x12, 104).
    const BLKSSZGET: libc::c_ulong = 0x1268;
    let dev = File::open(device)
        .with_context(|| format!("cannot open {} to read its sector size", device.display()))?;
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer.
    let rc = unsafe { libc::ioctl(dev.as_raw_fd(), BLKSSZGET as _, &mut size) };
    if rc != 0 || size <= 0 {
        anyhow::bail!(
            "cannot read the sector size of {}: {}",
            device.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(size as u64)
}
