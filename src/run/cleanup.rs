//! `jbench cleanup`: releases what a killed jbench left behind — mounts, loop devices
//! and zram devices of session directories whose process is gone — and nothing else.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::rig::session::{self, MARKER, REGISTRY, ZRAM_LEDGER};
use crate::rig::{loopdev, mounts, zram};

/// What cleanup found and did.
#[derive(Debug, Default)]
pub struct CleanupReport {
    pub released: Vec<String>,
    pub skipped_live: Vec<PathBuf>,
    /// Session directories another user could have planted or can tamper with, and why.
    pub skipped_untrusted: Vec<(PathBuf, String)>,
    pub errors: Vec<String>,
}

impl CleanupReport {
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Finds session directories: registered ones, those loop devices point into, and
/// those directly inside `extra_dirs` (work directories to scan).
pub fn find_sessions(extra_dirs: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    if let Ok(entries) = fs::read_dir(REGISTRY) {
        for e in entries.flatten() {
            if let Ok(text) = fs::read_to_string(e.path()) {
                let p = PathBuf::from(text.trim());
                if p.join(MARKER).is_file() {
                    found.insert(p);
                } else {
                    // The directory is gone: the registry entry is stale.
                    let _ = fs::remove_file(e.path());
                }
            }
        }
    }
    for (_, backing) in loopdev::attached() {
        if let Some(s) = session::session_of(&backing).or_else(|| orphan_session(&backing)) {
            found.insert(s);
        }
    }
    for m in mounts::mounts() {
        if let Some(s) = session::session_of(&m.target) {
            found.insert(s);
        }
    }
    for dir in extra_dirs {
        if let Ok(entries) = fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.path().join(MARKER).is_file() {
                    found.insert(e.path());
                }
            }
        }
    }
    found
}

/// A backing file whose session directory is already gone: its parent is named like a
/// session directory (`jbench-<pid>-<n>`) and no longer exists, so nobody can be using
/// it through jbench.
fn orphan_session(backing: &Path) -> Option<PathBuf> {
    let parent = backing.parent()?;
    let name = parent.file_name()?.to_str()?;
    let mut parts = name.strip_prefix("jbench-")?.split('-');
    let numeric =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let shaped = numeric(parts.next()) && numeric(parts.next()) && parts.next().is_none();
    (shaped && !parent.exists()).then(|| parent.to_path_buf())
}

/// Puts back host settings that killed jbench processes left changed (one action for
/// all their restore files; a live jbench that shares them puts them back itself).
fn host_settings<T>(
    act: &mut impl FnMut(String, &mut dyn FnMut() -> Result<()>),
    settings: &crate::rig::host_settings::Settings<T>,
    what: &str,
) where
    T: Copy + PartialEq + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let files = settings.stale();
    if files.is_empty() {
        return;
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    act(
        format!(
            "restore the kernel's {what} from {} (left by a jbench that was killed)",
            names.join(", ")
        ),
        &mut || settings.restore_stale().map(|_| ()),
    );
}

/// What this machine's live jbench sessions hold now: their mounts and the loop
/// devices over their files, named as `jbench cleanup` would release them. What a
/// forced exit leaves is said with this.
pub fn held_by_live_sessions() -> Vec<String> {
    let live: Vec<PathBuf> = find_sessions(&[])
        .into_iter()
        .filter(|d| d.exists() && !session::is_stale(d))
        .collect();
    let inside = |p: &Path| live.iter().any(|d| p.starts_with(d));
    let mut out: Vec<String> = mounts::mounts()
        .into_iter()
        .filter(|m| inside(&m.target))
        .map(|m| format!("mount {}", m.target.display()))
        .collect();
    out.extend(
        loopdev::attached()
            .into_iter()
            .filter(|(_, file)| inside(file))
            .map(|(dev, file)| format!("loop device {} ({})", dev.display(), file.display())),
    );
    out
}

/// Releases leftovers of every stale session; with `dry_run`, only says what it would do.
/// Works stage by stage across all stale sessions (mounts, then loops, then zram, then
/// directories), because one session's mount can hold another's loop device (a journal
/// on tmpfs belongs to the tmpfs session directory).
pub fn cleanup(extra_dirs: &[PathBuf], dry_run: bool) -> Result<CleanupReport> {
    let mut report = CleanupReport::default();
    let mut stale = Vec::new();
    for dir in find_sessions(extra_dirs) {
        if let Err(why) = trusted(&dir) {
            report.skipped_untrusted.push((dir, format!("{why:#}")));
        } else if dir.exists() && !session::is_stale(&dir) {
            report.skipped_live.push(dir);
        } else {
            stale.push(dir);
        }
    }
    let inside = |p: &Path| stale.iter().any(|d| p.starts_with(d));
    let mut act = |what: String, f: &mut dyn FnMut() -> Result<()>| {
        if dry_run {
            report.released.push(format!("would {what}"));
            return;
        }
        match f() {
            Ok(()) => report.released.push(what),
            Err(e) => report.errors.push(format!("{what}: {e:#}")),
        }
    };

    // Deepest mounts first, so nested mounts come off before their parents. The device
    // daemon's FUSE mounts come off last: loop devices hold files on them.
    let is_daemon_mount = |m: &mounts::MountEntry| m.source == crate::emu::daemon::SUBTYPE;
    let mut targets: Vec<PathBuf> = mounts::mounts()
        .into_iter()
        .filter(|m| !is_daemon_mount(m))
        .map(|m| m.target)
        .filter(|t| inside(t))
        .collect();
    targets.sort_by_key(|t| std::cmp::Reverse(t.components().count()));
    for t in targets {
        // A workload runs in its own process group, so it outlives a killed jbench and
        // keeps the trial's file system busy: it goes first.
        for h in crate::rig::holders::under(&t) {
            act(
                format!(
                    "kill process {} ({}), which holds {} busy (a workload of the killed run)",
                    h.pid,
                    h.name,
                    t.display()
                ),
                &mut || crate::rig::holders::kill_holder(h.pid),
            );
        }
        act(format!("unmount {}", t.display()), &mut || {
            mounts::unmount(&t)
        });
    }
    for (dev, backing) in loopdev::attached() {
        if inside(&backing) {
            act(
                format!("detach {} ({})", dev.display(), backing.display()),
                &mut || loopdev::detach(&dev, &backing),
            );
        }
    }
    for dir in stale.iter().filter(|d| d.exists()) {
        let ledger = fs::read_to_string(dir.join(ZRAM_LEDGER)).unwrap_or_default();
        for index in ledger.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            act(format!("remove zram{index}"), &mut || zram::remove(index));
        }
    }
    for dir in stale.iter().filter(|d| d.exists()) {
        if let Some(pid) = daemon_of(dir) {
            act(format!("stop device daemon {pid}"), &mut || {
                stop_daemon(pid)
            });
        }
    }
    for m in mounts::mounts().into_iter().filter(is_daemon_mount) {
        if inside(&m.target) {
            act(format!("unmount {}", m.target.display()), &mut || {
                crate::rig::emulated::unmount_fuse(&m.target)
            });
        }
    }
    // The FUSE control file system, when a jbench mounted it and no daemon serves.
    if Path::new(crate::rig::emulated::FUSECTL_MARK).exists()
        && !crate::rig::emulated::daemons_serving()
    {
        act(
            format!("unmount {}", crate::rig::emulated::FUSECTL),
            &mut || crate::rig::emulated::release_fusectl().map(|_| ()),
        );
    }
    host_settings(&mut act, &crate::rig::dirty::SETTINGS, "dirty limits");
    host_settings(
        &mut act,
        &crate::rig::writeback::SETTINGS,
        "writeback settings",
    );
    for cg in crate::rig::memcg::stale_cgroups() {
        act(format!("remove cgroup {}", cg.display()), &mut || {
            crate::rig::memcg::remove(&cg)
        });
    }
    for dir in stale.iter().filter(|d| d.exists()) {
        act(format!("remove {}", dir.display()), &mut || {
            if session::still_mounted_under(dir) {
                anyhow::bail!("still mounted");
            }
            fs::remove_dir_all(dir)?;
            Ok(())
        });
    }
    if !dry_run {
        for dir in &stale {
            remove_registry_entry(dir);
        }
    }
    Ok(report)
}

/// A session directory is acted on only if it and its ancestors pass the checks of a
/// directory jbench writes in: one in a directory another user controls may be a
/// decoy whose "leftovers" are someone else's devices and files. One already gone is
/// judged by what is left of its path.
fn trusted(dir: &Path) -> Result<()> {
    if fs::symlink_metadata(dir).is_ok() {
        crate::trust::check_trusted_dir(dir)
    } else {
        crate::trust::check_trusted_parent(dir)
    }
}

/// The pid of a device daemon a session directory's pid file names, if that process
/// still runs and is that session's daemon (pids are reused).
fn daemon_of(dir: &Path) -> Option<i32> {
    let text = fs::read_to_string(dir.join(crate::rig::emulated::PID_FILE)).ok()?;
    let pid: i32 = text.trim().parse().ok()?;
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let cmdline = String::from_utf8_lossy(&cmdline);
    (cmdline.contains("device-daemon") && cmdline.contains(&*dir.to_string_lossy())).then_some(pid)
}

fn stop_daemon(pid: i32) -> Result<()> {
    use nix::sys::signal::{kill, Signal};
    let pid = nix::unistd::Pid::from_raw(pid);
    let _ = kill(pid, Signal::SIGKILL);
    for _ in 0..200 {
        if kill(pid, None).is_err() {
            return Ok(());
        }
        // An orphan is reaped by init; a zombie whose parent lives on is harmless.
        if crate::rig::emulated::process_state(pid.as_raw() as u32).starts_with("dead") {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    anyhow::bail!("device daemon {pid} did not exit after SIGKILL")
}

fn remove_registry_entry(dir: &Path) {
    if let Ok(entries) = fs::read_dir(REGISTRY) {
        for e in entries.flatten() {
            if fs::read_to_string(e.path())
                .map(|t| Path::new(t.trim()) == dir)
                .unwrap_or(false)
            {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}
