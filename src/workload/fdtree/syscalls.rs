//! The system calls of one tree operation, as the script's `mkdir`, `dd`, `rm` and
//! `rmdir` would make them (through the engines' shared [`sys`] layer).

use super::*;

/// Issues the system calls of one operation.
#[inline]
pub(super) fn apply(op: Op, path: &TreePath, blocks: u32) -> Result<(), FsOpError> {
    match op {
        // SAFETY: `path` is NUL-terminated, holds no interior NUL and outlives the call.
        Op::Mkdir => check(unsafe { libc::mkdir(path.as_ptr(), 0o777) }, "mkdir", path),
        Op::Create => create_file(path, blocks),
        // SAFETY: `path` is NUL-terminated, holds no interior NUL and outlives the call.
        Op::Unlink => check(unsafe { libc::unlink(path.as_ptr()) }, "unlink", path),
        // SAFETY: `path` is NUL-terminated, holds no interior NUL and outlives the call.
        Op::Rmdir => check(unsafe { libc::rmdir(path.as_ptr()) }, "rmdir", path),
    }
}

#[inline]
pub(super) fn check(rc: libc::c_int, op: &'static str, path: &TreePath) -> Result<(), FsOpError> {
    sys::check(rc, op).map_err(|e| e.at(path.to_path_buf()))
}

/// What `dd if=/dev/zero bs=4096 count=blocks of=path` does to the file system.
/// O_CLOEXEC changes nothing on disk; it keeps the descriptor out of commands the rig
/// may spawn from another thread meanwhile.
#[inline]
pub(super) fn create_file(path: &TreePath, blocks: u32) -> Result<(), FsOpError> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
    // SAFETY: `path` is NUL-terminated, holds no interior NUL and outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666 as libc::c_uint) };
    if fd < 0 {
        return Err(SysError::last("open").at(path.to_path_buf()));
    }
    for _ in 0..blocks {
        // One 4096-byte block; short writes and EINTR are resumed as dd does.
        if let Err(e) = sys::write_all(fd, &ZEROS) {
            // SAFETY: `fd` is the file this function opened, closed once.
            unsafe { libc::close(fd) };
            return Err(e.at(path.to_path_buf()));
        }
    }
    // SAFETY: `fd` is the file this function opened, closed once.
    check(unsafe { libc::close(fd) }, "close", path)
}
