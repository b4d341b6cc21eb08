//! The system calls every engine makes the same way, and the error they all report.
//!
//! The engines time loops of raw `libc` calls, so this layer adds nothing to a call
//! that succeeds: no allocation, no formatting, no dynamic dispatch. A failure is
//! first a [`SysError`] (the call and its errno, two words), and only becomes an
//! [`FsOpError`] naming the path when the engine, on that cold path, builds the path.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;

/// A failed system call, naming the call, the path and the errno so that the report
/// says e.g. `mkdir /mnt/x/LEVEL0.h.1/L3D2: No space left on device`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op} {}: {}", path.display(), errno.desc())]
pub struct FsOpError {
    pub op: &'static str,
    pub path: PathBuf,
    pub errno: Errno,
}

impl FsOpError {
    #[cold]
    pub fn new(op: &'static str, path: &Path, errno: Errno) -> Self {
        FsOpError {
            op,
            path: path.to_path_buf(),
            errno,
        }
    }

    /// From a `std::io::Error` of a call made through the standard library: an OS
    /// error keeps its errno; anything else keeps its own words.
    #[cold]
    pub fn from_io(op: &'static str, path: &Path, e: std::io::Error) -> anyhow::Error {
        match e.raw_os_error() {
            Some(raw) => FsOpError::new(op, path, Errno::from_raw(raw)).into(),
            None => anyhow::anyhow!("{op} {}: {e}", path.display()),
        }
    }
}

/// A failed system call before its path is known: the path is built only on
/// failure, so the timed loops format nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SysError {
    pub op: &'static str,
    pub errno: Errno,
}

impl SysError {
    /// Captures `errno` right after the failed call; must run before anything else
    /// that could overwrite it.
    #[cold]
    pub fn last(op: &'static str) -> Self {
        SysError {
            op,
            errno: Errno::last(),
        }
    }

    /// The error with the path of the file the call was about.
    #[cold]
    pub fn at(self, path: PathBuf) -> FsOpError {
        FsOpError {
            op: self.op,
            path,
            errno: self.errno,
        }
    }
}

/// A call that returns 0 on success and -1 with `errno` on failure.
#[inline]
pub fn check(rc: libc::c_int, op: &'static str) -> Result<(), SysError> {
    if rc == 0 {
        Ok(())
    } else {
        Err(SysError::last(op))
    }
}

/// Writes all of `data` to `fd`, resuming short writes and retrying EINTR as `dd`
/// and stdio do; returns the number of `write` calls made (retries included). No
/// call is made for empty `data`.
#[inline]
pub fn write_all(fd: RawFd, data: &[u8]) -> Result<u64, SysError> {
    if data.is_empty() {
        return Ok(0);
    }
    write_at_least_once(fd, data)
}

/// [`write_all`], except that empty `data` is still one zero-length `write`, as
/// PostMark and stdio issue it.
#[inline]
pub fn write_at_least_once(fd: RawFd, data: &[u8]) -> Result<u64, SysError> {
    write_loop(data, |rest| {
        // SAFETY: `rest` is a live slice of the length passed.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n < 0 {
            Err(Errno::last())
        } else {
            Ok(n as usize)
        }
    })
}

/// The loop behind [`write_all`], with the `write` call passed in (statically, so it
/// inlines) so that its short writes and EINTR can be tested.
#[inline]
fn write_loop(
    mut data: &[u8],
    mut write: impl FnMut(&[u8]) -> Result<usize, Errno>,
) -> Result<u64, SysError> {
    let mut calls = 0;
    loop {
        calls += 1;
        match write(data) {
            Ok(n) => {
                data = &data[n..];
                if data.is_empty() {
                    return Ok(calls);
                }
                if n == 0 {
                    // A regular file accepting nothing is out of space without saying so.
                    return Err(SysError {
                        op: "write",
                        errno: Errno::ENOSPC,
                    });
                }
            }
            Err(Errno::EINTR) => {}
            Err(errno) => return Err(SysError { op: "write", errno }),
        }
    }
}

/// One `read` into `buf`, retried on EINTR; returns the bytes read (0 at end of
/// file).
#[inline]
pub fn read_once(fd: RawFd, buf: &mut [u8]) -> Result<usize, SysError> {
    loop {
        // SAFETY: `buf` is a live, writable slice of the length passed.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let errno = Errno::last();
        if errno != Errno::EINTR {
            return Err(SysError { op: "read", errno });
        }
    }
}

/// The nearest ancestor of `path` that exists (`/` at worst): what a directory not
/// made yet will be on.
pub fn existing_ancestor(path: &Path) -> &Path {
    path.ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("/"))
}

/// Bytes free to an unprivileged writer on the file system `path` is (or will be) on.
pub fn free_bytes(path: &Path) -> anyhow::Result<u64> {
    let st = nix::sys::statvfs::statvfs(existing_ancestor(path))
        .map_err(|e| anyhow::anyhow!("cannot stat {}: {e}", path.display()))?;
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `write` that answers from a script: `Ok(n)` accepts at most `n` bytes,
    /// `Err` fails with that errno. Records what each call was offered.
    fn scripted(
        script: &[Result<usize, Errno>],
        out: &mut Vec<u8>,
        offered: &mut Vec<usize>,
    ) -> Result<u64, SysError> {
        let data: Vec<u8> = (0..=255).collect();
        let mut steps = script.iter();
        write_loop(&data[..10], |rest| {
            offered.push(rest.len());
            match *steps
                .next()
                .expect("the loop called write more than scripted")
            {
                Ok(n) => {
                    let n = n.min(rest.len());
                    out.extend_from_slice(&rest[..n]);
                    Ok(n)
                }
                Err(e) => Err(e),
            }
        })
    }

    #[test]
    fn short_writes_and_eintr_are_resumed_until_all_is_written() {
        let (mut out, mut offered) = (Vec::new(), Vec::new());
        let script = [Ok(3), Err(Errno::EINTR), Ok(4), Err(Errno::EINTR), Ok(100)];
        let calls = scripted(&script, &mut out, &mut offered).unwrap();
        assert_eq!(
            out,
            (0..10).collect::<Vec<u8>>(),
            "every byte once, in order"
        );
        assert_eq!(offered, [10, 7, 7, 3, 3], "each call is offered the rest");
        assert_eq!(calls, 5, "retries count as calls");
    }

    #[test]
    fn a_write_that_accepts_nothing_is_enospc_with_the_engines_text() {
        let (mut out, mut offered) = (Vec::new(), Vec::new());
        let err = scripted(&[Ok(6), Ok(0)], &mut out, &mut offered).unwrap_err();
        assert_eq!(
            err,
            SysError {
                op: "write",
                errno: Errno::ENOSPC
            }
        );
        assert_eq!(
            err.at(PathBuf::from("/mnt/x/L0F1")).to_string(),
            "write /mnt/x/L0F1: No space left on device"
        );
    }

    #[test]
    fn other_errors_stop_the_loop_with_their_errno() {
        let (mut out, mut offered) = (Vec::new(), Vec::new());
        let err = scripted(&[Ok(2), Err(Errno::EIO)], &mut out, &mut offered).unwrap_err();
        assert_eq!(err.errno, Errno::EIO);
        assert_eq!(offered, [10, 8]);
    }

    #[test]
    fn real_descriptors_report_enospc_and_empty_writes_as_each_engine_needs() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&full);
        let err = write_all(fd, &[0; 4096]).unwrap_err();
        assert_eq!(
            err.at(PathBuf::from("/dev/full")).to_string(),
            "write /dev/full: No space left on device"
        );
        // No call at all for nothing to write, one call (which /dev/full refuses)
        // for PostMark's empty remainder.
        assert_eq!(write_all(fd, &[]), Ok(0));
        assert_eq!(
            write_at_least_once(fd, &[]).unwrap_err().errno,
            Errno::ENOSPC
        );

        let file = tempfile::tempfile().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        assert_eq!(write_all(fd, b"abc"), Ok(1));
        assert_eq!(write_at_least_once(fd, &[]), Ok(1));
        assert_eq!(
            std::fs::read(format!("/proc/self/fd/{fd}")).unwrap(),
            b"abc"
        );
    }
}
