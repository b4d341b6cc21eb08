//! fdtree 1.0.2 (LLNL's `fdtree.bash`, by Mark Seager and Bill Loewe), re-implemented
//! natively so that its figures can be compared with the published ones.
//!
//! The tree, the names, the order of every operation and the four phases are those of
//! the script; only the process spawning (`mkdir`, `dd`, `rm`, `rmdir` per operation in
//! bash) is gone, so the engine measures the file system rather than `fork`/`exec`.
//!
//! One traversal ([`Fdtree::walk`]) drives both the engine and the tests: the engine
//! hands it a callback that issues the system call, the tests one that records the path.
//!
//! Here: the tree, its counts and limits, the walk and the timed phases; `path.rs` the
//! in-place path buffer, `syscalls.rs` the calls of one operation, `report.rs` the
//! printed blocks.

use std::ffi::OsStr;
use std::fmt::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::sys::{self, SysError};
use super::{Interrupted, PhaseResult, RunControl, Workload};

pub use super::sys::FsOpError;

pub mod kind;
mod path;
pub use path::*;
mod syscalls;
use syscalls::*;
mod report;
pub use report::*;

/// fdtree's `-s` unit: `dd bs=4096`.
pub const BLOCK_SIZE: u64 = 4096;

/// The version whose output [`compat_report`] reproduces.
pub const FDTREE_VERSION: &str = "1.0.2";

/// Longest path the kernel accepts, terminating NUL included.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// `/L<u32>D<u32>` plus the NUL: the most one component can add to a path.
const COMPONENT_MAX: usize = 1 + 1 + 10 + 1 + 10 + 1;

/// Source of every data block; static so that no phase allocates or zeroes memory.
static ZEROS: [u8; BLOCK_SIZE as usize] = [0; BLOCK_SIZE as usize];

/// An fdtree tree: `-d dirs -f files -s blocks -l levels`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fdtree {
    /// `-d`: subdirectories in every non-leaf directory.
    pub dirs: u32,
    /// `-f`: files in every directory, the root and the leaves included.
    pub files: u32,
    /// `-s`: size of every file in 4096-byte blocks.
    pub blocks: u32,
    /// `-l`: levels of subdirectories below the root.
    pub levels: u32,
}

/// The four phases, in the order the script runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    DirCreate,
    FileCreate,
    FileRemove,
    DirRemove,
}

/// One file-system operation of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Mkdir,
    /// `open(O_CREAT|O_TRUNC)`, `blocks` writes of 4096 zero bytes, `close`: what
    /// `dd if=/dev/zero bs=4096 count=blocks of=path` does.
    Create,
    Unlink,
    Rmdir,
}

impl Phase {
    pub const ALL: [Phase; 4] = [
        Phase::DirCreate,
        Phase::FileCreate,
        Phase::FileRemove,
        Phase::DirRemove,
    ];

    /// Stable identifier recorded in results.
    pub fn name(self) -> &'static str {
        match self {
            Phase::DirCreate => "dir_create",
            Phase::FileCreate => "file_create",
            Phase::FileRemove => "file_remove",
            Phase::DirRemove => "dir_remove",
        }
    }

    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    pub fn op_unit(self) -> &'static str {
        match self {
            Phase::DirCreate => "dir creates",
            Phase::FileCreate => "file creates",
            Phase::FileRemove => "file removals",
            Phase::DirRemove => "dir removals",
        }
    }

    /// The unit fdtree prints its rate in, shortened for tables.
    pub fn rate_unit(self) -> &'static str {
        match self {
            Phase::DirCreate => "dirs/s",
            Phase::FileCreate => "files/s",
            Phase::FileRemove | Phase::DirRemove => "removals/s",
        }
    }

    fn touches_dirs(self) -> bool {
        matches!(self, Phase::DirCreate | Phase::DirRemove)
    }
}

impl Fdtree {
    pub fn new(dirs: u32, files: u32, blocks: u32, levels: u32) -> Self {
        Fdtree {
            dirs,
            files,
            blocks,
            levels,
        }
    }

    /// Directories including the root: sum of d^i for i = 0..=l, computed as the
    /// script does (`ndtot = 1 + d * ndtot`, l+1 times). `None` on u64 overflow.
    pub fn dir_count_checked(&self) -> Option<u64> {
        let d = u64::from(self.dirs);
        match d {
            0 => Some(1),
            1 => u64::from(self.levels).checked_add(1),
            // Overflows within 64 rounds for d >= 2, so huge `levels` ends quickly.
            _ => (0..=self.levels).try_fold(0u64, |n, _| n.checked_mul(d)?.checked_add(1)),
        }
    }

    pub fn file_count_checked(&self) -> Option<u64> {
        self.dir_count_checked()?.checked_mul(u64::from(self.files))
    }

    /// KiB the script announces: `4 * nftot * fsize`.
    pub fn data_kib_checked(&self) -> Option<u64> {
        self.file_count_checked()?
            .checked_mul(u64::from(self.blocks))?
            .checked_mul(BLOCK_SIZE / 1024)
    }

    pub fn data_bytes_checked(&self) -> Option<u64> {
        self.data_kib_checked()?.checked_mul(1024)
    }

    /// Saturates at `u64::MAX`; [`Self::validate`] rejects such trees.
    pub fn dir_count(&self) -> u64 {
        self.dir_count_checked().unwrap_or(u64::MAX)
    }

    pub fn file_count(&self) -> u64 {
        self.file_count_checked().unwrap_or(u64::MAX)
    }

    pub fn data_kib(&self) -> u64 {
        self.data_kib_checked().unwrap_or(u64::MAX)
    }

    pub fn data_bytes(&self) -> u64 {
        self.data_bytes_checked().unwrap_or(u64::MAX)
    }

    /// Length of the longest path below the start directory (root name, separators
    /// and the deepest file included), so a tree whose paths the kernel would refuse
    /// is rejected before anything is made. Exact up to PATH_MAX levels; deeper trees
    /// get a figure that is merely far above PATH_MAX, so that a `levels` in the
    /// billions is refused at once instead of summed.
    pub fn deepest_relative_path_len(&self, root_name: &str) -> usize {
        let depth = if self.dirs == 0 { 0 } else { self.levels };
        let dirs: usize = (1..=depth)
            .rev()
            .take(PATH_MAX)
            .map(|nl| 3 + decimal_len(nl) + decimal_len(self.dirs))
            .sum();
        let file_level = self.levels - depth;
        let file = if self.files == 0 {
            0
        } else {
            3 + decimal_len(file_level) + decimal_len(self.files)
        };
        root_name.len() + dirs + file
    }

    /// Rejects trees whose counts overflow or whose paths are too long for the
    /// kernel, so the spec layer can refuse them before provisioning anything.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.data_bytes_checked().is_none()
            || self
                .file_count_checked()
                .and_then(|f| f.checked_add(self.dir_count()))
                .is_none()
        {
            bail!("fdtree {self}: the tree is too large to count (over 2^64 items or bytes)");
        }
        let longest = self.deepest_relative_path_len(&root_name());
        if longest >= PATH_MAX {
            bail!(
                "fdtree {self}: its deepest path is {longest} bytes, more than the kernel's \
                 PATH_MAX of {PATH_MAX}"
            );
        }
        Ok(())
    }

    /// Calls `visit` for every operation of `phase`, in the script's order, with
    /// `path` (which must hold the tree's root) extended to the operation's path.
    /// `path` is back at the root when this returns `Ok`.
    pub fn walk<E, F>(&self, phase: Phase, path: &mut TreePath, visit: &mut F) -> Result<(), E>
    where
        F: FnMut(Op, &TreePath) -> Result<(), E>,
    {
        match phase {
            Phase::DirCreate => {
                visit(Op::Mkdir, path)?;
                self.create_dirs(self.levels, path, visit)
            }
            Phase::FileCreate => self.files_then_subdirs(Op::Create, self.levels, path, visit),
            Phase::FileRemove => self.files_then_subdirs(Op::Unlink, self.levels, path, visit),
            Phase::DirRemove => {
                self.remove_dirs(self.levels, path, visit)?;
                visit(Op::Rmdir, path)
            }
        }
    }

    /// `create_dirs`: every child of this level first, then recursion into each.
    fn create_dirs<E, F>(&self, nl: u32, path: &mut TreePath, visit: &mut F) -> Result<(), E>
    where
        F: FnMut(Op, &TreePath) -> Result<(), E>,
    {
        if nl == 0 {
            return Ok(());
        }
        self.each_subdir(nl, path, &mut |p| visit(Op::Mkdir, p))?;
        self.each_subdir(nl, path, &mut |p| self.create_dirs(nl - 1, p, visit))
    }

    /// `create_files` and `remove_files`: this directory's files `L<nl>F<f>..1`,
    /// then recursion into each subdirectory.
    fn files_then_subdirs<E, F>(
        &self,
        op: Op,
        nl: u32,
        path: &mut TreePath,
        visit: &mut F,
    ) -> Result<(), E>
    where
        F: FnMut(Op, &TreePath) -> Result<(), E>,
    {
        for nf in (1..=self.files).rev() {
            let mark = path.push(nl, b'F', nf);
            visit(op, path)?;
            path.pop(mark);
        }
        if nl == 0 {
            return Ok(());
        }
        self.each_subdir(nl, path, &mut |p| {
            self.files_then_subdirs(op, nl - 1, p, visit)
        })
    }

    /// `remove_dirs`: post-order; all grandchildren go before this level's children,
    /// and at nl == 1 (the parents of the leaves) only the children are removed.
    fn remove_dirs<E, F>(&self, nl: u32, path: &mut TreePath, visit: &mut F) -> Result<(), E>
    where
        F: FnMut(Op, &TreePath) -> Result<(), E>,
    {
        if nl > 1 {
            self.each_subdir(nl, path, &mut |p| self.remove_dirs(nl - 1, p, visit))?;
        }
        if nl > 0 {
            self.each_subdir(nl, path, &mut |p| visit(Op::Rmdir, p))?;
        }
        Ok(())
    }

    /// Runs `body` on `L<nl>D<d>` down to `L<nl>D1`, the script's loop order.
    #[inline]
    fn each_subdir<E>(
        &self,
        nl: u32,
        path: &mut TreePath,
        body: &mut impl FnMut(&mut TreePath) -> Result<(), E>,
    ) -> Result<(), E> {
        for nd in (1..=self.dirs).rev() {
            let mark = path.push(nl, b'D', nd);
            body(path)?;
            path.pop(mark);
        }
        Ok(())
    }

    /// Runs `phases` (in the order given) in `start`, under `start/<root_name()>`.
    /// The script's `-C` (create only) is `[DirCreate, FileCreate]`, its `-R`
    /// (remove only) `[FileRemove, DirRemove]`. On error or interruption the partial
    /// tree is left for the caller, who tears the file system down.
    pub fn run_phases(
        &self,
        start: &Path,
        phases: &[Phase],
        ctl: &RunControl,
    ) -> anyhow::Result<Vec<PhaseResult>> {
        self.validate()?;
        let root = start.join(root_name());
        let root_len = root.as_os_str().len();
        let longest = start.as_os_str().len() + 1 + self.deepest_relative_path_len(&root_name());
        if longest >= PATH_MAX {
            bail!(
                "fdtree {self} in {}: its deepest path would be {longest} bytes, more than \
                 PATH_MAX ({PATH_MAX})",
                start.display()
            );
        }
        let mut path = TreePath::new(&root)?;
        let mut results = Vec::with_capacity(phases.len());
        for &phase in phases {
            let result = self
                .run_phase(phase, start, &mut path, ctl)
                .with_context(|| format!("fdtree phase {}", phase.name()))?;
            debug_assert_eq!(path.as_bytes().len(), root_len);
            results.push(result);
        }
        Ok(results)
    }

    fn run_phase(
        &self,
        phase: Phase,
        start: &Path,
        path: &mut TreePath,
        ctl: &RunControl,
    ) -> anyhow::Result<PhaseResult> {
        let blocks = self.blocks;
        // anyhow::Error is one pointer, so the Ok path through the recursion stays a
        // null check; the error itself is only built when something fails.
        let mut step = |op: Op, p: &TreePath| -> anyhow::Result<()> {
            if ctl.stop_requested() {
                return Err(Interrupted.into());
            }
            apply(op, p, blocks).map_err(anyhow::Error::from)
        };
        ctl.phase_begin(phase.name());
        let started = Instant::now();
        self.walk(phase, path, &mut step)?;
        let seconds = started.elapsed().as_secs_f64();
        // `start`, not the tree's root: the directory-remove phase deletes the root.
        let durable_seconds = ctl.finish_phase(start, started)?;
        ctl.phase_end(phase.name());
        Ok(PhaseResult {
            durable_seconds,
            ..self.phase_result(phase, seconds)
        })
    }

    fn phase_result(&self, phase: Phase, seconds: f64) -> PhaseResult {
        let ops = if phase.touches_dirs() {
            self.dir_count()
        } else {
            self.file_count()
        };
        let bytes = if phase == Phase::FileCreate {
            self.data_bytes()
        } else {
            0
        };
        PhaseResult {
            name: phase.name().to_string(),
            seconds,
            ops,
            bytes,
            op_unit: phase.op_unit().to_string(),
            ..PhaseResult::default()
        }
    }
}

impl fmt::Display for Fdtree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "-d {} -f {} -s {} -l {}",
            self.dirs, self.files, self.blocks, self.levels
        )
    }
}

impl Fdtree {
    /// From a `[[workload]]` table; fdtree.bash's own defaults for absent keys.
    pub fn from_table(t: &toml::Table) -> Result<Self, crate::workload::ParamError> {
        use crate::workload::{reject_unknown, table_u64, ParamError};
        reject_unknown(t, &["dirs", "files", "blocks", "levels"])?;
        let get = |key: &str, default: u32| -> Result<u32, ParamError> {
            let v = table_u64(t, key, default as u64)?;
            u32::try_from(v).map_err(|_| ParamError::new(key, format!("{v} is too large")))
        };
        let tree = Fdtree::new(
            get("dirs", 10)?,
            get("files", 10)?,
            get("blocks", 10)?,
            get("levels", 4)?,
        );
        // Overflowing counts and paths longer than PATH_MAX are refused here, not hours in.
        tree.validate()
            .map_err(|e| ParamError::new("levels", format!("{e:#}")))?;
        Ok(tree)
    }
}

impl Workload for Fdtree {
    fn kind(&self) -> &'static str {
        "fdtree"
    }

    fn params(&self) -> serde_json::Value {
        serde_json::json!({
            "dirs": self.dirs,
            "files": self.files,
            "blocks": self.blocks,
            "levels": self.levels,
        })
    }

    fn default_name(&self) -> String {
        format!(
            "fdtree-d{}-f{}-s{}-l{}",
            self.dirs, self.files, self.blocks, self.levels
        )
    }

    fn phase_names(&self) -> Vec<String> {
        Phase::ALL.iter().map(|p| p.name().to_string()).collect()
    }

    fn peak_data_bytes(&self) -> u64 {
        self.data_bytes()
    }

    fn peak_inodes(&self) -> u64 {
        self.dir_count().saturating_add(self.file_count())
    }

    /// Made and removed in memory; what is written reaches the disk with the
    /// periodic commits and writeback.
    fn work(&self) -> crate::workload::work::Work {
        crate::workload::work::Work {
            bytes_written: self.data_bytes(),
            metadata_ops: self.peak_inodes().saturating_mul(2),
            ..Default::default()
        }
    }

    /// The whole script; on failure or interruption the partial tree is removed, and
    /// a root that already exists is refused, never reused or removed.
    fn run(&self, dir: &Path, ctl: &RunControl) -> anyhow::Result<Vec<PhaseResult>> {
        let root = dir.join(root_name());
        if root.symlink_metadata().is_ok() {
            bail!(
                "{} already exists and fdtree builds its tree under that name; it was left \
                 alone (remove it if an earlier run left it)",
                root.display()
            );
        }
        self.run_phases(dir, &Phase::ALL, ctl).map_err(|e| {
            // A root someone else made between the check and our mkdir is not ours.
            let lost_race = e
                .downcast_ref::<FsOpError>()
                .is_some_and(|f| f.op == "mkdir" && f.path == root);
            if lost_race || root.symlink_metadata().is_err() {
                return e;
            }
            super::after_cleanup(e, "fdtree", dir, super::remove_own_tree(&root))
        })
    }
}

impl Fdtree {
    /// Largest `-l` whose tree can be counted and whose paths fit PATH_MAX with these
    /// `-d -f -s`; `None` when not even `-l 0` does.
    pub fn max_levels(&self) -> Option<u32> {
        let with = |levels| Fdtree { levels, ..*self };
        if with(0).validate().is_err() {
            return None;
        }
        if self.dirs == 0 {
            // No subdirectories: `-l` changes neither counts nor paths.
            return Some(u32::MAX);
        }
        // Counts grow with levels and paths lengthen, so the first failure bounds it;
        // PATH_MAX ends the search within a few hundred levels whatever `-d` is.
        let mut l = 0;
        while l < u32::MAX && with(l + 1).validate().is_ok() {
            l += 1;
        }
        Some(l)
    }

    /// What the command line checks before making anything in `dir`: the tree must be
    /// countable and fit PATH_MAX (refused with the option and its allowed range), and
    /// its size, which grows as `-d` to the power `-l`, is said before it is built.
    pub fn preflight_cli(&self, dir: &Path) -> anyhow::Result<()> {
        super::require_dir(dir)?;
        if let Err(e) = self.validate() {
            let range = match self.max_levels() {
                Some(max) => format!(
                    "with -d {} -f {} -s {}, -l must be 0 to {max}",
                    self.dirs, self.files, self.blocks
                ),
                None => "-f x -s x 4096 bytes must stay below 2^64; lower -f or -s".to_string(),
            };
            bail!("{e:#}; {range}");
        }
        crate::events::emit(crate::events::Event::WorkloadSize {
            note: self.size_note(dir),
        });
        Ok(())
    }

    /// `fdtree -d 10 ...: 11111 directories, 111110 files, 4.2 GiB`, as a warning when
    /// it is large or more than the file system under `dir` has free.
    fn size_note(&self, dir: &Path) -> String {
        let inodes = self.dir_count().saturating_add(self.file_count());
        let mut note = format!(
            "fdtree {self}: {} directories (the sum of {}^i for i from 0 to {}), {} files, {} of data",
            self.dir_count(),
            self.dirs,
            self.levels,
            self.file_count(),
            crate::units::format_size(self.data_bytes())
        );
        let mut large = inodes >= LARGE_INODES || self.data_bytes() >= LARGE_BYTES;
        if let Ok(fs) = nix::sys::statvfs::statvfs(dir) {
            let free_bytes = crate::workload::sys::free_bytes(dir).unwrap_or(u64::MAX);
            let free_inodes: u64 = fs.files_available();
            // tmpfs without an inode limit reports 0 of 0.
            let counts_inodes = fs.files() > 0;
            if self.data_bytes() > free_bytes || (counts_inodes && inodes > free_inodes) {
                large = true;
                note.push_str(&format!(
                    "; {} has {} and {free_inodes} inodes free, so it will fail when full \
                     (and remove what it made)",
                    dir.display(),
                    crate::units::format_size(free_bytes)
                ));
            }
        }
        if large {
            format!("warning: {note}")
        } else {
            note
        }
    }
}

/// Trees from this many inodes, or bytes, on are announced as warnings.
const LARGE_INODES: u64 = 1_000_000;
const LARGE_BYTES: u64 = 1 << 30;

/// The script's root directory name: `LEVEL0.<hostname -s>.<pid>`. The pid keeps
/// concurrent runs on a shared file system apart, as in the original.
pub fn root_name() -> String {
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "localhost".to_string());
    let short = host.split('.').next().unwrap_or_default();
    format!("LEVEL0.{short}.{}", std::process::id())
}

/// Every operation of `phase` with its path, the root being `root`: the order the
/// engine follows, for tests and for showing a plan. Allocates per operation, so it
/// is meant for small trees.
pub fn plan_ops(tree: &Fdtree, phase: Phase, root: &str) -> anyhow::Result<Vec<(Op, String)>> {
    let mut path = TreePath::new(Path::new(root))?;
    let mut ops = Vec::new();
    tree.walk(phase, &mut path, &mut |op, p: &TreePath| {
        ops.push((op, String::from_utf8_lossy(p.as_bytes()).into_owned()));
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap_or_else(|never| match never {});
    Ok(ops)
}

#[cfg(test)]
mod tests;
