//! Memory limits for a workload: jbench moves itself into a memory cgroup of its own
//! while a workload runs, so the page cache the workload can use is capped as the
//! studies' 512 MB and 8 GB machines capped it. cgroup v2 (`memory.max`) or v1
//! (`memory.limit_in_bytes`), whichever holds the memory controller.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::rig::dirty::ScaledLimits;
use crate::rig::mounts;

/// Limit and peak use of one trial, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryUse {
    pub limit_bytes: u64,
    pub peak_bytes: u64,
    /// `v1` or `v2`.
    pub cgroup: CgroupVersion,
    /// Under v1, the kernel's dirty limits while the trial ran, scaled to the memory
    /// limit (`rig::dirty`); v2 scales them per cgroup by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_limits: Option<crate::rig::dirty::Applied>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

/// Where the memory controller is and where this process sits in it.
#[derive(Debug, Clone)]
struct Hierarchy {
    version: CgroupVersion,
    /// Mount point of the hierarchy holding the memory controller.
    mount: PathBuf,
    /// This process's cgroup directory in it.
    home: PathBuf,
}

/// Whether this host's memory controller is cgroup v1 (false when it has none).
pub fn is_v1() -> bool {
    hierarchy().is_ok_and(|h| h.version == CgroupVersion::V1)
}

fn hierarchy() -> Result<Hierarchy> {
    let own = fs::read_to_string("/proc/self/cgroup").context("cannot read /proc/self/cgroup")?;
    let all = mounts::mounts();
    let v1 = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        ctrl.split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    });
    if let Some(path) = v1 {
        let m = all
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.iter().any(|o| o == "memory"))
            .context("the memory controller is listed in /proc/self/cgroup but not mounted")?;
        return Ok(Hierarchy {
            version: CgroupVersion::V1,
            home: m.target.join(path.trim_start_matches('/')),
            mount: m.target.clone(),
        });
    }
    let m = all
        .iter()
        .find(|m| m.fstype == "cgroup2")
        .context("no cgroup hierarchy with the memory controller is mounted")?;
    let controllers = fs::read_to_string(m.target.join("cgroup.controllers")).unwrap_or_default();
    if !controllers.split_whitespace().any(|c| c == "memory") {
        bail!(
            "the memory controller is not available in {} (cgroup.controllers: {})",
            m.target.display(),
            controllers.trim()
        );
    }
    let path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap_or("/");
    Ok(Hierarchy {
        version: CgroupVersion::V2,
        home: m.target.join(path.trim_start_matches('/')),
        mount: m.target.clone(),
    })
}

/// Says why memory limits cannot work here, if they cannot.
pub fn check_available() -> Result<()> {
    hierarchy().map(|_| ())
}

/// A memory cgroup this process made; removed on drop (after moving back out).
#[derive(Debug)]
pub struct MemoryLimit {
    h: Hierarchy,
    dir: PathBuf,
    limit: u64,
    entered: bool,
    /// Under v1, the dirty limits scaled to `limit` while the process is inside.
    dirty: Option<ScaledLimits>,
    applied: Option<crate::rig::dirty::Applied>,
}

impl MemoryLimit {
    /// Makes `jbench-<pid>-<n>` with the given limit. Under v1 it is a child of this
    /// process's own cgroup; under v2 a child of the root, which alone may hold both
    /// processes and children with controllers.
    pub fn create(limit: u64) -> Result<Self> {
        let h = hierarchy()?;
        let parent = match h.version {
            CgroupVersion::V1 => h.home.clone(),
            CgroupVersion::V2 => {
                let _ = fs::write(h.mount.join("cgroup.subtree_control"), "+memory");
                h.mount.clone()
            }
        };
        let pid = std::process::id();
        let dir = (0..100)
            .map(|n| parent.join(format!("jbench-{pid}-{n}")))
            .find(|d| fs::create_dir(d).is_ok())
            .with_context(|| format!("cannot create a memory cgroup in {}", parent.display()))?;
        let me = Self {
            h,
            dir,
            limit,
            entered: false,
            dirty: None,
            applied: None,
        };
        let file = match me.h.version {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        };
        fs::write(me.dir.join(file), limit.to_string())
            .with_context(|| format!("cannot set {}", me.dir.join(file).display()))?;
        Ok(me)
    }

    /// Moves this whole process (every thread) into the cgroup; under v1, with the
    /// kernel's dirty limits scaled to the cgroup's (`rig::dirty`).
    pub fn enter(&mut self) -> Result<()> {
        if self.h.version == CgroupVersion::V1 {
            let scaled = ScaledLimits::apply(self.limit)?;
            self.applied = Some(scaled.applied);
            self.dirty = Some(scaled);
        }
        if let Err(e) = move_to(&self.dir) {
            self.dirty = None;
            return Err(e);
        }
        self.entered = true;
        Ok(())
    }

    /// Moves the process back where it was, and puts the host's dirty limits back.
    pub fn leave(&mut self) -> Result<()> {
        if self.entered {
            move_to(&self.h.home)?;
            self.entered = false;
        }
        self.dirty = None;
        Ok(())
    }

    /// Highest memory use charged to the cgroup since it was made.
    pub fn peak(&self) -> Result<u64> {
        let file = match self.h.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        let text = fs::read_to_string(self.dir.join(file))
            .with_context(|| format!("cannot read {}", self.dir.join(file).display()))?;
        text.trim()
            .parse()
            .with_context(|| format!("{} holds `{}`", file, text.trim()))
    }

    pub fn usage(&self) -> MemoryUse {
        MemoryUse {
            limit_bytes: self.limit,
            peak_bytes: self.peak().unwrap_or(0),
            cgroup: self.h.version,
            dirty_limits: self.applied,
        }
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        if let Err(e) = self.leave() {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
        if let Err(e) = remove(&self.dir) {
            crate::events::emit(crate::events::Event::ReleaseFailed {
                error: format!("{e:#}"),
            });
        }
    }
}

fn move_to(dir: &Path) -> Result<()> {
    fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
        .with_context(|| format!("cannot move jbench into the cgroup {}", dir.display()))
}

/// Removes an empty cgroup directory (its files are not real files: rmdir, not
/// remove_dir_all). Right after the last task leaves, the kernel may still report it
/// busy for a moment.
pub fn remove(dir: &Path) -> Result<()> {
    let mut last = None;
    for attempt in 0..20 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(25 * (attempt + 1)));
    }
    Err(last.unwrap()).with_context(|| format!("cannot remove cgroup {}", dir.display()))
}

/// cgroups named `jbench-<pid>-<n>` whose process is gone, for `jbench cleanup`.
pub fn stale_cgroups() -> Vec<PathBuf> {
    let Ok(h) = hierarchy() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for parent in [h.home, h.mount] {
        let Ok(entries) = fs::read_dir(&parent) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("jbench-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid {
                let alive = Path::new(&format!("/proc/{pid}")).exists();
                if !alive && !out.contains(&e.path()) {
                    out.push(e.path());
                }
            }
        }
    }
    out
}
