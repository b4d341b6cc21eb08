//! Sparse image files, created through the session directory's descriptor and removed
//! on drop.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::rig::mounts::{self, MountEntry};
use crate::rig::session::{self, SessionDir};

/// Refuses an image whose directory lies on a file system jbench itself is testing
/// (mounted inside a session directory) or serving (the device daemon's FUSE mount):
/// its I/O would be measured twice, or deadlock on itself.
pub fn check_backing_dir(path: &Path) -> Result<()> {
    let dir = path.parent().unwrap_or(path);
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match backing_dir_problem(&dir, &mounts::mounts(), &|t| {
        session::session_of(t).is_some()
    }) {
        Some(problem) => anyhow::bail!("{problem}"),
        None => Ok(()),
    }
}

/// Why `dir` cannot hold images, given the mount table and a test for "this mount
/// point is inside a jbench session directory".
pub fn backing_dir_problem(
    dir: &Path,
    mounts: &[MountEntry],
    in_session: &dyn Fn(&Path) -> bool,
) -> Option<String> {
    let m = mounts
        .iter()
        .filter(|m| dir.starts_with(&m.target))
        .max_by_key(|m| m.target.components().count())?;
    let emulated = m.source == crate::emu::daemon::SUBTYPE;
    if emulated || (m.target != Path::new("/") && in_session(&m.target)) {
        return Some(format!(
            "{} is on {} mounted on {}, a file system jbench is testing or serving; image files \
             must not live on it. Point work_dir, second_disk_dir or ramdisk_dir elsewhere.",
            dir.display(),
            m.source,
            m.target.display()
        ));
    }
    None
}

/// An image file jbench created, with the descriptor it was created through: the
/// loop device is attached to that very file (see [`crate::rig::loopdev`]), not to
/// whatever its path names later.
#[derive(Debug)]
pub struct ImageFile {
    path: PathBuf,
    name: String,
    /// The directory the image was created in, to remove it from there.
    dir: OwnedFd,
    file: File,
    released: bool,
}

impl ImageFile {
    /// Creates sparse image `name` of `size` bytes in session directory `dir`;
    /// refuses to reuse an existing file or to follow a symbolic link.
    pub fn create(dir: &SessionDir, name: &str, size: u64) -> Result<Self> {
        let path = dir.join(name);
        check_backing_dir(&path)?;
        let file = dir.create_file(name)?;
        let image = Self {
            path,
            name: name.to_string(),
            dir: dir.dir_fd().try_clone_to_owned()?,
            file,
            released: false,
        };
        image.file.set_len(size).with_context(|| {
            format!("cannot size image {} to {size} bytes", image.path.display())
        })?;
        Ok(image)
    }

    /// Like [`Self::create`], with every byte allocated (on tmpfs: the memory taken
    /// now, not as the journal fills).
    pub fn create_allocated(dir: &SessionDir, name: &str, size: u64) -> Result<Self> {
        let image = Self::create(dir, name, size)?;
        nix::fcntl::fallocate(
            image.file.as_raw_fd(),
            nix::fcntl::FallocateFlags::empty(),
            0,
            size as i64,
        )
        .with_context(|| format!("cannot allocate {size} bytes for {}", image.path.display()))?;
        Ok(image)
    }

    /// Removes the file from the directory it was created in; a file already gone is
    /// fine.
    pub fn release(&mut self) -> Result<()> {
        if self.released {
            return Ok(());
        }
        match nix::unistd::unlinkat(
            Some(self.dir.as_raw_fd()),
            self.name.as_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        ) {
            Ok(()) | Err(nix::errno::Errno::ENOENT) => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot remove image {}", self.path.display()))
            }
        }
        self.released = true;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open image, as created.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for ImageFile {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(source: &str, target: &str, fstype: &str) -> MountEntry {
        MountEntry {
            source: source.to_string(),
            target: PathBuf::from(target),
            fstype: fstype.to_string(),
            options: vec!["rw".to_string()],
        }
    }

    /// A machine with a root file system, /var/tmp on a disk of its own, a session whose
    /// test file system and device daemon are mounted inside it, and a disk mounted
    /// inside the session's file system.
    fn table() -> Vec<MountEntry> {
        vec![
            mount("/dev/vda", "/", "ext4"),
            mount("/dev/vdb", "/var/tmp", "ext4"),
            mount(
                crate::emu::daemon::SUBTYPE,
                "/var/tmp/w/jbench-1-0/emu",
                "fuse",
            ),
            mount("/dev/loop3", "/var/tmp/w/jbench-1-0/mnt", "ext4"),
            mount("/dev/sdc1", "/var/tmp/w/jbench-1-0/mnt/data", "xfs"),
        ]
    }

    /// Only the test file system's mount point is inside a session.
    fn in_session(target: &Path) -> bool {
        target == Path::new("/var/tmp/w/jbench-1-0/mnt")
    }

    fn problem(dir: &str) -> Option<String> {
        backing_dir_problem(Path::new(dir), &table(), &in_session)
    }

    #[test]
    fn a_directory_on_an_ordinary_file_system_is_fine() {
        assert_eq!(problem("/"), None);
        assert_eq!(problem("/home/me/images"), None);
        assert_eq!(problem("/var/tmp/w"), None);
        // The session directory itself is on /var/tmp, not on anything it mounts.
        assert_eq!(problem("/var/tmp/w/jbench-1-0"), None);
        // Mount points match whole components: `mnt2` is not under `mnt`.
        assert_eq!(problem("/var/tmp/w/jbench-1-0/mnt2"), None);
        assert_eq!(problem("/var/tmp/w/jbench-1-0/emulator"), None);
        // No mount table at all: nothing to object to.
        assert_eq!(
            backing_dir_problem(Path::new("/var/tmp/w"), &[], &in_session),
            None
        );
    }

    #[test]
    fn the_root_file_system_is_never_a_session_mount() {
        let everything_in_session = |_: &Path| true;
        assert_eq!(
            backing_dir_problem(
                Path::new("/srv/images"),
                &[mount("/dev/vda", "/", "ext4")],
                &everything_in_session
            ),
            None
        );
        // Any other mount the test says is in a session is refused.
        assert!(backing_dir_problem(
            Path::new("/var/tmp/x"),
            &[
                mount("/dev/vda", "/", "ext4"),
                mount("/dev/vdb", "/var/tmp", "ext4")
            ],
            &everything_in_session
        )
        .is_some());
    }

    #[test]
    fn the_device_daemons_fuse_mount_is_refused() {
        for dir in [
            "/var/tmp/w/jbench-1-0/emu",
            "/var/tmp/w/jbench-1-0/emu/sub/dir",
        ] {
            let p = problem(dir).unwrap_or_else(|| panic!("{dir} is refused"));
            assert!(p.contains(crate::emu::daemon::SUBTYPE), "{p}");
            assert!(p.contains("/var/tmp/w/jbench-1-0/emu"), "{p}");
            assert!(p.starts_with(dir), "names the directory: {p}");
            assert!(p.contains("work_dir"), "says what to change: {p}");
        }
        // Wherever the daemon's mount is, not only inside a session directory.
        let mounts = [
            mount("/dev/vda", "/", "ext4"),
            mount(crate::emu::daemon::SUBTYPE, "/mnt/elsewhere", "fuse"),
        ];
        assert!(
            backing_dir_problem(Path::new("/mnt/elsewhere/x"), &mounts, &|_: &Path| false)
                .is_some()
        );
    }

    #[test]
    fn a_file_system_mounted_inside_a_session_is_refused() {
        for dir in ["/var/tmp/w/jbench-1-0/mnt", "/var/tmp/w/jbench-1-0/mnt/a/b"] {
            let p = problem(dir).unwrap_or_else(|| panic!("{dir} is refused"));
            assert!(p.contains("/dev/loop3"), "names the device: {p}");
            assert!(p.contains("mounted on /var/tmp/w/jbench-1-0/mnt"), "{p}");
        }
    }

    #[test]
    fn the_longest_matching_mount_decides() {
        // An ordinary disk mounted inside the session's file system: its own mount
        // point is not a session mount, so images may live on it.
        assert_eq!(problem("/var/tmp/w/jbench-1-0/mnt/data"), None);
        assert_eq!(problem("/var/tmp/w/jbench-1-0/mnt/data/images"), None);
        // The other way round: the daemon's mount inside an ordinary one is refused,
        // whatever order the table lists them in.
        let mut mounts = vec![
            mount(crate::emu::daemon::SUBTYPE, "/srv/a/b", "fuse"),
            mount("/dev/vdb", "/srv", "ext4"),
            mount("/dev/vda", "/", "ext4"),
        ];
        for _ in 0..2 {
            let none = |_: &Path| false;
            assert!(backing_dir_problem(Path::new("/srv/a/b/c"), &mounts, &none).is_some());
            assert_eq!(
                backing_dir_problem(Path::new("/srv/a"), &mounts, &none),
                None
            );
            mounts.reverse();
        }
    }
}
