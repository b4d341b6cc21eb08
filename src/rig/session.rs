//! A session directory holds everything one jbench process creates in one place
//! (images, mount points, a ledger of zram devices), marked and locked so that
//! `jbench cleanup` can tell a killed run's leftovers from a live run's resources.

use std::fs::{self, File};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode};

/// Marker file in every session directory; a live session holds an exclusive flock on it.
pub const MARKER: &str = ".jbench-session";
/// Ledger of zram indices a session added (one per line).
pub const ZRAM_LEDGER: &str = "zram-devices";
/// Where live sessions register their directories, so cleanup finds them even when no
/// loop device points there any more. /run is cleared at boot, as loops and zram are.
pub const REGISTRY: &str = "/run/jbench/sessions";

#[derive(Debug)]
pub struct SessionDir {
    path: PathBuf,
    /// The directory jbench created, whatever its path comes to name later: files are
    /// created relative to it, and [`Self::check_unchanged`] compares the two.
    dir: OwnedFd,
    registry_entry: PathBuf,
    // Holding the open file keeps the flock; dropping it releases the lock.
    _lock: File,
}

impl SessionDir {
    /// Creates `parent/jbench-<pid>-<n>/`, marks it and locks it.
    pub fn create(parent: &Path) -> Result<Self> {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create work directory {}", parent.display()))?;
        // Mount points, loop backing files and /proc/mounts all speak of real paths: a
        // work_dir reached through a (trusted) link must be named as the kernel names it.
        let parent = &fs::canonicalize(parent)
            .with_context(|| format!("cannot resolve work directory {}", parent.display()))?;
        let pid = std::process::id();
        let (path, name) = (0..1000)
            .map(|n| {
                let name = format!("jbench-{pid}-{n}");
                (parent.join(&name), name)
            })
            .find(|(p, _)| {
                // Others pass through to the mount point (a workload's `user`), no more.
                nix::unistd::mkdir(p, Mode::S_IRWXU | Mode::S_IXGRP | Mode::S_IXOTH).is_ok()
            })
            .with_context(|| {
                format!("cannot create a session directory in {}", parent.display())
            })?;
        // Exactly that, whatever the umask took.
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(crate::trust::TRAVERSABLE))
                .with_context(|| format!("cannot set the mode of {}", path.display()))?;
        }
        let dir = open_own_dir(&path)?;
        let mut lock = create_at(dir.as_fd(), &path, MARKER)?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            anyhow::bail!("cannot lock {}", path.join(MARKER).display());
        }
        writeln!(lock, "pid {pid}")?;
        let registry_entry = Path::new(REGISTRY).join(&name);
        if fs::create_dir_all(REGISTRY).is_ok() {
            let _ = fs::write(&registry_entry, path.as_os_str().as_encoded_bytes());
        }
        Ok(Self {
            path,
            dir,
            registry_entry,
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The session directory as created, for `openat` and friends.
    pub fn dir_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Creates file `name` in the session directory, read-write, mode 0600; never
    /// follows a symbolic link and never reuses a file that is already there.
    pub fn create_file(&self, name: &str) -> Result<File> {
        create_at(self.dir.as_fd(), &self.path, name)
    }

    /// Fails unless the session directory's path still names the directory jbench
    /// created: between two steps someone with write access to its parent could have
    /// renamed it and put another directory (with symbolic links) in its place.
    pub fn check_unchanged(&self) -> Result<()> {
        let made = fstat(self.dir.as_raw_fd())?;
        let now = fs::symlink_metadata(&self.path).ok();
        match now {
            Some(m) if m.dev() == made.st_dev as u64 && m.ino() == made.st_ino as u64 => Ok(()),
            _ => anyhow::bail!(
                "the session directory {} was replaced while jbench worked (it was inode {} on \
                 device {}; the path now names {}); refusing to go on. Someone who can write \
                 to {} changed it: use a work_dir only root can write to",
                self.path.display(),
                made.st_ino,
                made.st_dev,
                now.map_or("nothing".to_string(), |m| format!(
                    "inode {} on device {}",
                    m.ino(),
                    m.dev()
                )),
                self.path.parent().unwrap_or(&self.path).display()
            ),
        }
    }

    /// Records a zram index this session added, before anything else can fail.
    pub fn note_zram(&self, index: u32) -> Result<()> {
        let fd = openat(
            Some(self.dir.as_raw_fd()),
            ZRAM_LEDGER,
            OFlag::O_CREAT
                | OFlag::O_APPEND
                | OFlag::O_WRONLY
                | OFlag::O_NOFOLLOW
                | OFlag::O_CLOEXEC,
            Mode::S_IRUSR | Mode::S_IWUSR,
        )
        .with_context(|| format!("cannot open {}", self.join(ZRAM_LEDGER).display()))?;
        // SAFETY: openat returned a new descriptor that nothing else owns.
        let mut f = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        writeln!(f, "{index}")?;
        f.sync_all()?;
        Ok(())
    }
}

/// Opens the directory jbench just made at `path` and checks that it is what mkdir
/// made: a directory (not a symbolic link put there since), owned by this user, mode
/// 0700 (a umask or an ACL default could have changed that).
fn open_own_dir(path: &Path) -> Result<OwnedFd> {
    let fd = nix::fcntl::open(
        path,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open the session directory {}", path.display()))?;
    // SAFETY: open returned a new descriptor that nothing else owns.
    let dir = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let st = fstat(dir.as_raw_fd())?;
    let mode = st.st_mode & 0o7777;
    // The umask may take the others' `x` away; never add more than that.
    if (mode | 0o011) != 0o711 || st.st_uid != nix::unistd::geteuid().as_raw() {
        anyhow::bail!(
            "the session directory {} came out with owner {} and mode {:o}, not this user's \
             and 0711; refusing to put images in it (check the umask and default ACLs of {})",
            path.display(),
            st.st_uid,
            mode,
            path.parent().unwrap_or(path).display()
        );
    }
    Ok(dir)
}

/// Creates `name` relative to directory `dir` (which is `shown` to the user):
/// `O_CREAT|O_EXCL|O_NOFOLLOW`, read-write, mode 0600.
pub fn create_at(dir: BorrowedFd<'_>, shown: &Path, name: &str) -> Result<File> {
    let fd = openat(
        Some(dir.as_raw_fd()),
        name,
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_RDWR | OFlag::O_CLOEXEC,
        Mode::S_IRUSR | Mode::S_IWUSR,
    )
    .with_context(|| {
        format!(
            "cannot create {} (it must not exist yet, not even as a symbolic link)",
            shown.join(name).display()
        )
    })?;
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Removes `index` from the zram ledger of session directory `dir`.
pub fn forget_zram(dir: &Path, index: u32) {
    use std::io::{Read, Seek};
    use std::os::unix::fs::OpenOptionsExt;
    // Never through a symbolic link: the ledger is rewritten in place.
    let Ok(mut f) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(ZRAM_LEDGER))
    else {
        return;
    };
    let mut text = String::new();
    if f.read_to_string(&mut text).is_ok() {
        let rest: Vec<&str> = text
            .lines()
            .filter(|l| l.trim() != index.to_string())
            .collect();
        let _ = f.set_len(0);
        let _ = f.rewind();
        let _ = f.write_all(rest.join("\n").as_bytes());
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        // Everything inside was released by the guards that made it; what is left is
        // the marker and empty directories. A mount still inside means a guard failed:
        // then keep the directory so `jbench cleanup` can find it.
        if still_mounted_under(&self.path) {
            crate::events::emit(crate::events::Event::StillMounted {
                dir: self.path.clone(),
            });
            return;
        }
        // Removing by path would remove whatever was put in the directory's place.
        if let Err(e) = self.check_unchanged() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}; not removing it"),
            });
            let _ = fs::remove_file(&self.registry_entry);
            return;
        }
        if let Err(e) = fs::remove_dir_all(&self.path) {
            crate::events::emit(crate::events::Event::DirectoryKept {
                dir: self.path.clone(),
                error: e.to_string(),
            });
        }
        let _ = fs::remove_file(&self.registry_entry);
    }
}

/// Whether any mount point lies at or below `dir`.
pub fn still_mounted_under(dir: &Path) -> bool {
    crate::rig::mounts::mounts()
        .iter()
        .any(|m| m.target.starts_with(dir))
}

/// Whether a session directory's lock is free, i.e. its process is gone.
pub fn is_stale(dir: &Path) -> bool {
    let Ok(f) = File::open(dir.join(MARKER)) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; released when `f` closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// The session directory containing `path`, if any (the nearest ancestor with a marker).
pub fn session_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|a| a.join(MARKER).is_file())
        .map(Path::to_path_buf)
}
