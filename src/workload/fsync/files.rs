//! The run's directory tree, made and opened before any clock starts, and the system
//! calls of one durable file (through the engines' shared [`sys`] layer).

use super::*;

/// `f<n>` (or `d<n>`) and its NUL in a fixed buffer: u64 has at most 20 digits.
pub(super) struct NameBuf {
    pub(super) buf: [u8; 22],
}

impl NameBuf {
    pub(super) fn new(prefix: u8) -> Self {
        let mut buf = [0u8; 22];
        buf[0] = prefix;
        NameBuf { buf }
    }

    #[inline]
    pub(super) fn set(&mut self, mut n: u64) {
        let len = n.checked_ilog10().map_or(1, |l| l as usize + 1);
        for slot in self.buf[1..=len].iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
        self.buf[len + 1] = 0;
    }

    pub(super) fn as_ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }
}

/// open, write `size` bytes, fsync, close: one durable file. Returns the number of
/// write calls. O_EXCL makes a leftover file an error instead of a silent rewrite;
/// O_CLOEXEC keeps the descriptor out of commands the rig may spawn meanwhile.
#[inline]
pub(super) fn create_one(
    dirfd: RawFd,
    name: &NameBuf,
    buffer: &[u8],
    size: u64,
    write_size: u64,
) -> Result<u64, SysError> {
    durable_file(dirfd, name, |fd| write_file(fd, buffer, size, write_size))
}

/// [`create_one`] writing `content` (the whole file) in chunks of `write_size`.
pub(super) fn create_one_with(
    dirfd: RawFd,
    name: &NameBuf,
    content: &[u8],
    write_size: u64,
) -> Result<u64, SysError> {
    durable_file(dirfd, name, |fd| {
        content
            .chunks(write_size.max(1) as usize)
            .try_fold(0u64, |calls, chunk| {
                sys::write_all(fd, chunk).map(|c| calls + c)
            })
    })
}

/// open (exclusive), `write`, fsync, close; the write calls `write` made.
#[inline]
fn durable_file(
    dirfd: RawFd,
    name: &NameBuf,
    write: impl FnOnce(RawFd) -> Result<u64, SysError>,
) -> Result<u64, SysError> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
    // SAFETY: `name` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::openat(dirfd, name.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(SysError::last("open"));
    }
    let written = write(fd)
        // SAFETY: `fd` is the file opened above, still open.
        .and_then(|writes| sys::check(unsafe { libc::fsync(fd) }, "fsync").map(|()| writes));
    // close even after a failure; its own error (e.g. a deferred EIO) counts too.
    // SAFETY: `fd` is the file opened above, closed once.
    let closed = sys::check(unsafe { libc::close(fd) }, "close");
    let writes = written?;
    closed.map(|()| writes)
}

/// `size` bytes in chunks of `write_size` from `buffer`, which holds at least
/// `min(size, write_size)` bytes.
#[inline]
pub(super) fn write_file(
    fd: RawFd,
    buffer: &[u8],
    size: u64,
    write_size: u64,
) -> Result<u64, SysError> {
    let mut left = size;
    let mut calls = 0;
    while left > 0 {
        let chunk = left.min(write_size) as usize;
        calls += sys::write_all(fd, &buffer[..chunk])?;
        left -= chunk as u64;
    }
    Ok(calls)
}

/// The directories of a run, made and opened before any clock starts. Files are
/// opened relative to their directory's descriptor, which `fsync_dir` also syncs.
pub(super) struct Tree {
    pub(super) root: PathBuf,
    pub(super) root_fd: OwnedFd,
    pub(super) threads: Vec<ThreadDirs>,
}

/// One thread's directory `t<n>` and its subdirectories `d<k>`.
pub(super) struct ThreadDirs {
    pub(super) path: PathBuf,
    pub(super) fd: OwnedFd,
    pub(super) subdirs: Vec<OwnedFd>,
}

impl ThreadDirs {
    #[cold]
    pub(super) fn subdir_path(&self, d: usize) -> PathBuf {
        self.path.join(format!("d{d}"))
    }

    #[cold]
    pub(super) fn file_path(&self, d: usize, i: u64) -> PathBuf {
        self.subdir_path(d).join(format!("f{i}"))
    }
}

/// The run's root directory name inside the run directory.
pub fn root_name() -> String {
    format!("jbench-fsync.{}", std::process::id())
}

impl Tree {
    /// The thread directories below `root`, which the caller made.
    pub(super) fn make(root: PathBuf, root_fd: OwnedFd, spec: &FsyncSpec) -> anyhow::Result<Tree> {
        let threads = (0..spec.threads)
            .map(|t| {
                let path = root.join(format!("t{t}"));
                let fd = make_dir(&path)?;
                let subdirs = (0..spec.dirs)
                    .map(|d| make_dir(&path.join(format!("d{d}"))))
                    .collect::<anyhow::Result<_>>()?;
                Ok(ThreadDirs { path, fd, subdirs })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Tree {
            root,
            root_fd,
            threads,
        })
    }

    pub(super) fn syncfs(&self) -> anyhow::Result<()> {
        nix::unistd::syncfs(self.root_fd.as_raw_fd())
            .map_err(|errno| fs_error("syncfs", &self.root, errno))
    }

    /// The thread directories and the root, after the workers removed the rest.
    pub(super) fn remove_root(&self) -> anyhow::Result<()> {
        for t in &self.threads {
            std::fs::remove_dir(&t.path).map_err(|e| io_error("rmdir", &t.path, e))?;
        }
        std::fs::remove_dir(&self.root).map_err(|e| io_error("rmdir", &self.root, e))
    }
}

pub(super) fn make_dir(path: &Path) -> anyhow::Result<OwnedFd> {
    nix::unistd::mkdir(path, nix::sys::stat::Mode::from_bits_truncate(0o755))
        .map_err(|errno| fs_error("mkdir", path, errno))?;
    let dir = std::fs::File::open(path).map_err(|e| io_error("open", path, e))?;
    Ok(dir.into())
}

pub(super) fn fs_error(op: &'static str, path: &Path, errno: Errno) -> anyhow::Error {
    FsOpError::new(op, path, errno).into()
}

pub(super) fn io_error(op: &'static str, path: &Path, e: std::io::Error) -> anyhow::Error {
    FsOpError::from_io(op, path, e)
}

/// Every subdirectory's descriptor stays open for the whole run, so raise the soft
/// RLIMIT_NOFILE (1024 on most systems) to what the tree needs when the hard limit
/// allows it, and say so plainly when it does not.
pub(super) fn ensure_fd_limit(needed: u64) -> anyhow::Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        bail!("getrlimit(RLIMIT_NOFILE): {}", Errno::last().desc());
    }
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max < needed {
        bail!(
            "fsync needs {needed} open descriptors (threads x (dirs + 1)) but RLIMIT_NOFILE's \
             hard limit is {}; use fewer threads or dirs",
            lim.rlim_max
        );
    }
    lim.rlim_cur = needed;
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        bail!(
            "setrlimit(RLIMIT_NOFILE, {needed}): {}",
            Errno::last().desc()
        );
    }
    Ok(())
}
