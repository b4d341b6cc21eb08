//! Processes that keep a mount point busy: a working directory, root, executable, open
//! file or mapped file under it. A workload runs in its own process group (so a stop
//! can kill all of it), which also means it outlives a jbench that was killed, and
//! `jbench cleanup` could not unmount the trial's file system while it runs.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// A process holding something under a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: i32,
    /// Its command name (`/proc/PID/comm`).
    pub name: String,
}

fn holds(pid: i32, path: &Path) -> bool {
    let proc = format!("/proc/{pid}");
    let under = |link: &Path| fs::read_link(link).is_ok_and(|t| t.starts_with(path));
    if ["cwd", "root", "exe"]
        .iter()
        .any(|l| under(&Path::new(&proc).join(l)))
    {
        return true;
    }
    if let Ok(fds) = fs::read_dir(format!("{proc}/fd")) {
        if fds.flatten().any(|e| under(&e.path())) {
            return true;
        }
    }
    // A mapped file keeps the file system busy after its descriptor is closed.
    fs::read_to_string(format!("{proc}/maps")).is_ok_and(|maps| {
        maps.lines().any(|l| {
            l.split_whitespace()
                .nth(5)
                .is_some_and(|p| Path::new(p).starts_with(path))
        })
    })
}

/// Every process but this one that holds something under `path`.
pub fn under(path: &Path) -> Vec<Holder> {
    let me = std::process::id() as i32;
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<Holder> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && holds(pid, path))
        .map(|pid| Holder {
            pid,
            name: fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
        })
        .collect();
    out.sort_by_key(|h| h.pid);
    out
}

fn gone(pid: i32) -> bool {
    // A zombie holds nothing: its files are closed and its directory released.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Kills `pid` (SIGKILL) and waits up to 5 s for it to let go.
pub fn kill_holder(pid: i32) -> Result<()> {
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    let until = Instant::now() + Duration::from_secs(5);
    while !gone(pid) {
        if Instant::now() > until {
            bail!("process {pid} survived SIGKILL");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_process_whose_directory_is_under_the_path_is_found_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        fs::create_dir(&inner).unwrap();
        let mut child = Command::new("sleep")
            .arg("60")
            .current_dir(&inner)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !under(dir.path()).iter().any(|h| h.pid == pid) {
            assert!(Instant::now() < deadline, "the sleeper was never found");
            std::thread::sleep(Duration::from_millis(10));
        }
        let found = under(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].name, "sleep");
        // A sibling directory with the same prefix is not under the path.
        let sibling = Path::new(&format!("{}x", dir.path().display())).to_path_buf();
        assert!(under(&sibling).is_empty());
        kill_holder(pid).unwrap();
        child.wait().unwrap();
        assert!(under(dir.path()).is_empty());
    }

    #[test]
    fn an_open_file_under_the_path_counts() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("held");
        fs::write(&file, "x").unwrap();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec 3<{} && exec sleep 60", file.display()))
            .current_dir("/")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !under(dir.path()).iter().any(|h| h.pid == pid) {
            assert!(Instant::now() < deadline, "the open file was never seen");
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_holder(pid).unwrap();
        child.wait().unwrap();
    }
}
