//! Directories jbench writes in must be trusted, as OpenSSH's StrictModes has it: the
//! directory and every ancestor up to `/` owned by root (or by the user jbench runs as)
//! and not writable by group or others, unless root-owned and sticky (`/tmp`,
//! `/var/tmp`, `/dev/shm`). Whoever can write to an ancestor can rename a session
//! directory between the creation of an image and `losetup`, and put a link to a real
//! disk in its place; whoever owns a symbolic link on the way can repoint it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{self, Metadata};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

/// More links than this on one path is a loop (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// Refuses `path` unless it is an existing directory that it and all its ancestors are
/// trusted.
pub fn check_trusted_dir(path: &Path) -> Result<()> {
    match walk(path, Mode::Check)? {
        None => Ok(()),
        Some(missing) => bail!("{} does not exist", missing.display()),
    }
}

/// For a directory jbench is about to create: its nearest existing ancestor and all
/// above must be trusted; what is missing is not looked at.
pub fn check_trusted_parent(path: &Path) -> Result<()> {
    walk(path, Mode::StopAtMissing).map(|_| ())
}

/// Creates each missing component of `path` with mode 0711 (checking it after creation,
/// so one raced in by someone else is refused), after checking all that exists. Others
/// may pass through but not list or write: a workload run as another user (a database
/// server as `postgres`) must reach its mount point below. A directory of ours left
/// at 0700 by an older jbench is opened up the same way.
pub fn create_trusted_dir(path: &Path) -> Result<()> {
    walk(path, Mode::Create)?;
    let meta = lstat(path)?;
    if meta.uid() == euid() && meta.mode() & 0o7777 == 0o700 {
        fs::set_permissions(path, fs::Permissions::from_mode(TRAVERSABLE))
            .with_context(|| format!("cannot set the mode of {}", path.display()))?;
    }
    Ok(())
}

/// Owner everything, others only through (`x`).
pub const TRAVERSABLE: u32 = 0o711;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Check,
    StopAtMissing,
    Create,
}

/// Walks `path` from `/` component by component with `lstat`, following only trusted
/// links. Returns the first missing component when `mode` is `Check`.
fn walk(path: &Path, mode: Mode) -> Result<Option<PathBuf>> {
    let path = absolute(path)?;
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front(&mut pending, &path);
    let mut at = PathBuf::from("/");
    check_meta(&at, &lstat(&at)?)?;
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            // `at` holds no links, so its parent is the real one, already checked.
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let meta = match fs::symlink_metadata(&next) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => match mode {
                Mode::Check => return Ok(Some(next)),
                Mode::StopAtMissing => return Ok(None),
                Mode::Create => {
                    make_dir(&next)?;
                    pending.push_front(name);
                    continue;
                }
            },
            Err(e) => return Err(e).with_context(|| format!("cannot examine {}", next.display())),
        };
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                bail!("{} has too many levels of symbolic links", path.display());
            }
            check_link(&next, &meta)?;
            let target = fs::read_link(&next)
                .with_context(|| format!("cannot read the link {}", next.display()))?;
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            push_front(&mut pending, &target);
            continue;
        }
        if !meta.is_dir() {
            bail!(
                "{} is not a directory; choose a directory for jbench to write in",
                next.display()
            );
        }
        check_meta(&next, &meta)?;
        at = next;
    }
    Ok(None)
}

/// `path`'s components (but `/` and `.`) put before those still to walk.
fn push_front(pending: &mut VecDeque<OsString>, path: &Path) {
    for c in path.components().rev() {
        match c {
            Component::Normal(n) => pending.push_front(n.to_os_string()),
            Component::ParentDir => pending.push_front("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let cwd = std::env::current_dir().context("cannot find the current directory")?;
    Ok(cwd.join(path))
}

fn lstat(path: &Path) -> Result<Metadata> {
    fs::symlink_metadata(path).with_context(|| format!("cannot examine {}", path.display()))
}

fn make_dir(path: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(TRAVERSABLE).create(path) {
        // Someone else's, raced in: the walk examines it like any other.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
        Ok(()) => {}
    }
    // The umask can only take bits away; set the mode exactly.
    fs::set_permissions(path, fs::Permissions::from_mode(TRAVERSABLE))
        .with_context(|| format!("cannot set the mode of {}", path.display()))
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// A directory on the way: trusted owner, and no group/other write unless root's and
/// sticky (then nobody can rename or remove what jbench puts in it).
fn check_meta(dir: &Path, meta: &Metadata) -> Result<()> {
    let mode = meta.mode() & 0o7777;
    let bad_owner = !trusted_owner(meta.uid());
    let sticky_root = meta.uid() == 0 && mode & 0o1000 != 0;
    let bad_mode = mode & 0o022 != 0 && !sticky_root;
    if !bad_owner && !bad_mode {
        return Ok(());
    }
    let mut fixes = Vec::new();
    if bad_owner {
        fixes.push(format!("`chown {}` it", runner_name()));
    }
    if bad_mode {
        fixes.push("`chmod go-w` it".to_string());
    }
    bail!(
        "{} is owned by {} with mode {mode:04o}; jbench runs as {} and will not create files where another user can replace them. {}, or choose another directory.",
        dir.display(),
        owner(meta.uid()),
        runner_name(),
        capitalize(&fixes.join(" and "))
    )
}

/// A link on the way: its own owner counts (its mode does not), since the owner can
/// point it elsewhere at any time.
fn check_link(link: &Path, meta: &Metadata) -> Result<()> {
    if trusted_owner(meta.uid()) {
        return Ok(());
    }
    bail!(
        "{} is a symbolic link owned by {}, who can point it elsewhere at any time; jbench runs as {} and will not follow it. `chown -h {}` it, or choose another directory (the one it leads to, if that one is trusted).",
        link.display(),
        owner(meta.uid()),
        runner_name(),
        runner_name()
    )
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) if f.is_ascii_lowercase() => f.to_ascii_uppercase().to_string() + c.as_str(),
        _ => s.to_string(),
    }
}

/// `nobody (uid 65534)`, or `uid 1234` when the name is unknown.
fn owner(uid: u32) -> String {
    match user_name(uid) {
        Some(n) => format!("{n} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

fn runner_name() -> String {
    let me = euid();
    user_name(me).unwrap_or_else(|| me.to_string())
}

fn user_name(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{chown, lchown, symlink};

    const NOBODY: u32 = 65534;

    /// Whether test `test` runs: these chown to another user, which needs root (under
    /// CI a test that cannot run fails).
    fn root(test: &str) -> bool {
        crate::test_require::require(test, euid() == 0, "needs root to chown")
    }

    /// A root-owned 0700 scratch directory under /var/tmp (root's and sticky).
    fn scratch(name: &str) -> tempfile::TempDir {
        let d = tempfile::Builder::new()
            .prefix(&format!("jbench-trust-{name}-"))
            .tempdir_in("/var/tmp")
            .unwrap();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    fn mkdir(p: &Path, mode: u32, uid: u32) {
        fs::create_dir(p).unwrap();
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
        chown(p, Some(uid), None).unwrap();
    }

    #[test]
    fn a_directory_of_another_user_with_mode_777_is_refused_with_owner_mode_and_fix() {
        if !root("a_directory_of_another_user_with_mode_777_is_refused_with_owner_mode_and_fix") {
            return;
        }
        let s = scratch("nobody");
        let d = s.path().join("work");
        mkdir(&d, 0o777, NOBODY);
        for e in [
            check_trusted_dir(&d).unwrap_err(),
            check_trusted_parent(&d.join("jbench")).unwrap_err(),
            create_trusted_dir(&d.join("jbench")).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains(&format!(
                    "{} is owned by nobody (uid 65534) with mode 0777",
                    d.display()
                )),
                "{e}"
            );
            assert!(e.contains("jbench runs as root and will not create files where another user can replace them"), "{e}");
            assert!(
                e.contains("`chown root` it and `chmod go-w` it, or choose another directory."),
                "{e}"
            );
        }
        assert!(!d.join("jbench").exists(), "nothing created in it");
    }

    #[test]
    fn another_users_directory_is_refused_even_when_not_writable_by_others() {
        if !root("another_users_directory_is_refused_even_when_not_writable_by_others") {
            return;
        }
        let s = scratch("owner");
        let d = s.path().join("d");
        mkdir(&d, 0o755, NOBODY);
        let e = check_trusted_dir(&d).unwrap_err().to_string();
        assert!(
            e.contains("owned by nobody (uid 65534) with mode 0755"),
            "{e}"
        );
        assert!(e.contains("`chown root` it, or choose"), "{e}");
    }

    #[test]
    fn a_group_writable_root_ancestor_without_sticky_bit_is_refused() {
        if !root("a_group_writable_root_ancestor_without_sticky_bit_is_refused") {
            return;
        }
        let s = scratch("group");
        let a = s.path().join("a");
        mkdir(&a, 0o775, 0);
        fs::create_dir(a.join("b")).unwrap();
        let e = check_trusted_dir(&a.join("b")).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{} is owned by root (uid 0) with mode 0775",
                a.display()
            )),
            "{e}"
        );
        assert!(e.contains("`chmod go-w` it, or choose"), "{e}");
        // The same directory with the sticky bit is fine, as /tmp is.
        fs::set_permissions(&a, fs::Permissions::from_mode(0o1777)).unwrap();
        check_trusted_dir(&a.join("b")).unwrap();
    }

    #[test]
    fn a_sticky_directory_of_another_user_is_refused() {
        if !root("a_sticky_directory_of_another_user_is_refused") {
            return;
        }
        let s = scratch("sticky");
        let d = s.path().join("d");
        mkdir(&d, 0o1777, NOBODY);
        assert!(check_trusted_dir(&d).is_err());
    }

    #[test]
    fn root_sticky_system_directories_are_trusted() {
        for d in ["/var/tmp", "/tmp", "/dev/shm"] {
            if Path::new(d).is_dir() {
                check_trusted_dir(Path::new(d)).unwrap();
                check_trusted_parent(&Path::new(d).join("jbench-not-there")).unwrap();
            }
        }
    }

    #[test]
    fn a_link_owned_by_another_user_is_not_followed_and_a_root_link_is() {
        if !root("a_link_owned_by_another_user_is_not_followed_and_a_root_link_is") {
            return;
        }
        let s = scratch("link");
        let real = s.path().join("real");
        mkdir(&real, 0o700, 0);
        let link = s.path().join("link");
        symlink(&real, &link).unwrap();
        check_trusted_dir(&link.join(".")).unwrap();
        check_trusted_parent(&link.join("new")).unwrap();
        lchown(&link, Some(NOBODY), None).unwrap();
        for e in [
            check_trusted_dir(&link).unwrap_err(),
            check_trusted_parent(&link.join("new")).unwrap_err(),
            create_trusted_dir(&link.join("new")).unwrap_err(),
        ] {
            let e = e.to_string();
            assert!(
                e.contains(&format!(
                    "{} is a symbolic link owned by nobody (uid 65534)",
                    link.display()
                )),
                "{e}"
            );
            assert!(e.contains("`chown -h root` it"), "{e}");
        }
        assert!(!real.join("new").exists());
    }

    #[test]
    fn a_trusted_link_into_an_untrusted_directory_is_refused() {
        if !root("a_trusted_link_into_an_untrusted_directory_is_refused") {
            return;
        }
        let s = scratch("into");
        let bad = s.path().join("bad");
        mkdir(&bad, 0o777, NOBODY);
        fs::create_dir(bad.join("inner")).unwrap();
        let link = s.path().join("link");
        symlink("bad/inner", &link).unwrap();
        let e = check_trusted_dir(&link).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{} is owned by nobody", bad.display())),
            "{e}"
        );
    }

    #[test]
    fn created_directories_are_0711_component_by_component() {
        let s = scratch("create");
        let deep = s.path().join("a/b/c");
        create_trusted_dir(&deep).unwrap();
        for p in [s.path().join("a"), s.path().join("a/b"), deep.clone()] {
            assert_eq!(
                fs::metadata(&p).unwrap().mode() & 0o7777,
                0o711,
                "{}",
                p.display()
            );
        }
        create_trusted_dir(&deep).unwrap();
        check_trusted_dir(&deep).unwrap();
    }

    #[test]
    fn a_component_raced_in_by_another_user_is_refused_after_creation() {
        if !root("a_component_raced_in_by_another_user_is_refused_after_creation") {
            return;
        }
        let s = scratch("race");
        // Stands for a directory another user made between the check and the mkdir.
        mkdir(&s.path().join("a"), 0o777, NOBODY);
        let e = create_trusted_dir(&s.path().join("a/b"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("owned by nobody"), "{e}");
    }

    #[test]
    fn relative_paths_dot_dot_and_files_are_handled() {
        let s = scratch("rel");
        let d = s.path().join("d");
        mkdir(&d, 0o700, euid());
        check_trusted_dir(&d.join("../d/.")).unwrap();
        fs::write(d.join("f"), "x").unwrap();
        let e = check_trusted_dir(&d.join("f")).unwrap_err().to_string();
        assert!(e.contains("is not a directory"), "{e}");
        let e = check_trusted_dir(&d.join("missing"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
        check_trusted_dir(Path::new(".")).unwrap();
    }

    #[test]
    fn a_link_loop_is_refused() {
        let s = scratch("loop");
        symlink("b", s.path().join("a")).unwrap();
        symlink("a", s.path().join("b")).unwrap();
        let e = check_trusted_dir(&s.path().join("a"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("too many levels of symbolic links"), "{e}");
    }
}
