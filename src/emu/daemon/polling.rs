//! Whether the daemon polls `/dev/fuse` instead of sleeping in it (docs/devices.md,
//! "Polling").
//!
//! A reader asleep in `read(2)` on `/dev/fuse` is woken for each request. One reader
//! that never sleeps (the descriptor non-blocking, fuser retrying on `EAGAIN`) finds
//! the request at once: on the development VM, in alternating pairs of runs, a 4 KiB
//! request's floor went from 15.3 µs to 12.6 µs. It spins, so it is used only where a
//! CPU can be spared:
//!
//! - the daemon has CPUs of its own (pinned apart from the workload);
//! - every image is in memory (tmpfs, ramfs): the one reader never waits on a disk's
//!   image I/O, which would hold every other request back;
//! - no other daemon polls on the same CPU (a lock per CPU in `/run/jbench`): two spinning
//!   readers on one CPU would take turns by the scheduler's slices;
//! - `[emulation] poll` is not false.
//!
//! The poller runs at normal priority, never real-time: a real-time thread that never
//! sleeps would keep the kernel's per-CPU work on that CPU waiting up to the real-time
//! throttle's 950 ms in every second. The completion thread stays real-time and
//! preempts it to send each answer at its deadline.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// Where the per-CPU locks are: jbench's run directory (root's, in memory, gone at
/// reboot; the host settings' restore files are there too).
const LOCK_DIR: &str = "/run/jbench";

/// How the daemon reads requests, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ReadMode {
    /// One reader spinning on a non-blocking descriptor.
    pub polling: bool,
    /// Why it does not poll, when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// The decision and, when polling, the lock that keeps other daemons from polling on
/// the same CPUs (held for the daemon's life).
pub struct Decision {
    pub mode: ReadMode,
    _locks: Vec<File>,
}

fn not(why: impl Into<String>) -> Decision {
    Decision {
        mode: ReadMode {
            polling: false,
            why_not: Some(why.into()),
        },
        _locks: Vec::new(),
    }
}

/// Decides for a daemon pinned to `cpus` (none: not pinned) serving `images`.
pub fn decide(wanted: bool, cpus: &[usize], images: &[&Path]) -> Decision {
    if !wanted {
        return not("[emulation] poll = false");
    }
    if cpus.is_empty() {
        return not("the daemon has no CPU of its own (one CPU, or pin_cpus = false)");
    }
    if let Some(img) = images.iter().find(|p| !in_memory(p)) {
        return not(format!(
            "{} is not in memory: a single reader would wait on its image I/O",
            img.display()
        ));
    }
    let mut locks = Vec::new();
    for &cpu in cpus {
        match lock_cpu(cpu) {
            Ok(Some(f)) => locks.push(f),
            Ok(None) => {
                return not(format!("another device daemon polls on CPU {cpu}"));
            }
            Err(e) => return not(format!("cannot take the polling lock of CPU {cpu}: {e}")),
        }
    }
    Decision {
        mode: ReadMode {
            polling: true,
            why_not: None,
        },
        _locks: locks,
    }
}

/// The file system under `path` keeps its data in memory.
fn in_memory(path: &Path) -> bool {
    use nix::sys::statfs::{statfs, FsType, TMPFS_MAGIC};
    // ramfs (linux/magic.h); nix names tmpfs's only.
    const RAMFS_MAGIC: FsType = FsType(0x8584_58f6);
    let dir = path.parent().unwrap_or(path);
    statfs(dir)
        .map(|s| [TMPFS_MAGIC, RAMFS_MAGIC].contains(&s.filesystem_type()))
        .unwrap_or(false)
}

/// The polling lock of `cpu`, or `None` when another process holds it.
fn lock_cpu(cpu: usize) -> Result<Option<File>> {
    std::fs::create_dir_all(LOCK_DIR)?;
    let path = Path::new(LOCK_DIR).join(format!("daemon-poll-cpu{cpu}.lock"));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)?;
    // SAFETY: flock on a descriptor this function owns.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(Some(f));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e.into())
    }
}

/// Makes the session's descriptor non-blocking: its reader then spins (fuser retries a
/// read that finds nothing).
pub fn make_nonblocking(fd: BorrowedFd) -> Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let raw = fd.as_raw_fd();
    let flags = OFlag::from_bits_truncate(fcntl(raw, FcntlArg::F_GETFL)?);
    fcntl(raw, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_only_pinned_over_memory_and_alone_on_its_cpu() {
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        let img = shm.path().join("a.img");
        std::fs::write(&img, b"").unwrap();
        // sysfs is no memory file system, wherever the checkout or /var/tmp is.
        let on_disk = Path::new("/sys/b.img");

        let off = decide(false, &[1], &[&img]).mode;
        assert!(!off.polling && off.why_not.unwrap().contains("poll = false"));
        let unpinned = decide(true, &[], &[&img]).mode;
        assert!(!unpinned.polling && unpinned.why_not.unwrap().contains("no CPU of its own"));
        let slow = decide(true, &[1], &[&img, on_disk]).mode;
        assert!(
            !slow.polling
                && slow
                    .why_not
                    .as_deref()
                    .unwrap()
                    .contains("b.img is not in memory"),
            "{slow:?}"
        );
        // Only root can take the lock in /run (others are told why not).
        let test = "polls_only_pinned_over_memory_and_alone_on_its_cpu";
        let root = crate::test_require::is_root();
        if crate::test_require::require(test, root, "needs root for the lock in /run/jbench") {
            // A CPU number no machine here has, so no running daemon holds its lock.
            let cpu = 4000 + std::process::id() as usize % 1000;
            let first = decide(true, &[cpu], &[&img]);
            assert!(first.mode.polling, "{:?}", first.mode);
            // Locks are per open file: a second daemon (here a second decision) is
            // refused while the first holds it, and may poll once it is gone.
            let second = decide(true, &[cpu], &[&img]).mode;
            assert_eq!(
                second.why_not.as_deref(),
                Some(format!("another device daemon polls on CPU {cpu}").as_str())
            );
            drop(first);
            assert!(decide(true, &[cpu], &[&img]).mode.polling);
            let _ = std::fs::remove_file(
                Path::new(LOCK_DIR).join(format!("daemon-poll-cpu{cpu}.lock")),
            );
        }
    }
}
