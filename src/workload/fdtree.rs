//! fdtree 1.0.2 (LLNL's `fdtree.bash`, by Mark Seager and Bill Loewe), re-implemented
//! natively so that its figures can be compared with the published ones.
//!
//! The tree, the names, the order of every operation and the four phases are those of
//! the script; only the process spawning (`mkdir`, `dd`, `rm`, `rmdir` per operation in
//! bash) is gone, so the engine measures the file system rather than `fork`/`exec`.
//!
//! One traversal ([`Fdtree::walk`]) drives both the engine and the tests: the engine
//! hands it a callback that issues the system call, the tests one that records the path.

use std::ffi::OsStr;
use std::fmt::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::sys::{self, SysError};
use super::{Interrupted, PhaseResult, RunControl, Workload};

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

pub use super::sys::FsOpError;

/// A NUL-terminated path that grows and shrinks one component at a time, so that
/// every operation of a phase reuses one buffer and hands the kernel a pointer to it
/// without copying or allocating.
#[derive(Debug, Clone)]
pub struct TreePath {
    /// `buf[len]` is the terminating NUL; `buf[..len]` holds no NUL. Always has room
    /// for one more component, so a push writes in place without a length check
    /// per byte or a `memcpy` call.
    buf: Box<[u8]>,
    len: usize,
}

impl TreePath {
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        let bytes = root.as_os_str().as_bytes();
        if bytes.contains(&0) {
            bail!("path {} contains a NUL byte", root.display());
        }
        // Room for the deepest path the kernel accepts, so a valid tree never
        // reallocates mid-phase.
        let mut buf = vec![0u8; bytes.len().max(PATH_MAX) + COMPONENT_MAX].into_boxed_slice();
        buf[..bytes.len()].copy_from_slice(bytes);
        Ok(TreePath {
            buf,
            len: bytes.len(),
        })
    }

    /// The path without its terminating NUL.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn to_path_buf(&self) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(self.as_bytes()))
    }

    fn as_ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }

    /// Appends `/L<level><kind><n>` and returns the mark that [`Self::pop`] restores.
    #[inline]
    fn push(&mut self, level: u32, kind: u8, n: u32) -> usize {
        let mark = self.len;
        let slot: &mut [u8; COMPONENT_MAX] = (&mut self.buf[mark..mark + COMPONENT_MAX])
            .try_into()
            .expect("slot is COMPONENT_MAX long");
        self.len = mark + encode_component(slot, level, kind, n);
        if self.buf.len() - self.len < COMPONENT_MAX {
            self.grow();
        }
        mark
    }

    /// Only trees deeper than PATH_MAX get here (e.g. [`plan_ops`] on a tree that
    /// [`Fdtree::validate`] would refuse); the engine never does.
    #[cold]
    fn grow(&mut self) {
        let mut bigger = vec![0u8; self.buf.len() * 2].into_boxed_slice();
        bigger[..=self.len].copy_from_slice(&self.buf[..=self.len]);
        self.buf = bigger;
    }

    #[inline]
    fn pop(&mut self, mark: usize) {
        self.len = mark;
        self.buf[mark] = 0;
    }
}

/// Writes `/L<level><kind><n>` and a NUL into `out`; returns the length without the
/// NUL.
#[inline]
fn encode_component(out: &mut [u8; COMPONENT_MAX], level: u32, kind: u8, n: u32) -> usize {
    out[0] = b'/';
    out[1] = b'L';
    let at = 2 + encode_u32(tail(out, 2), level);
    out[at] = kind;
    let end = at + 1 + encode_u32(tail(out, at + 1), n);
    out[end] = 0;
    end
}

/// The 10 bytes of `out` from `at`, sized so the digit writes need no bounds checks.
#[inline]
fn tail(out: &mut [u8; COMPONENT_MAX], at: usize) -> &mut [u8; 10] {
    (&mut out[at..at + 10]).try_into().expect("10 bytes")
}

/// Decimal digits of `v` at the start of `out`, written in place from the last.
#[inline]
fn encode_u32(out: &mut [u8; 10], mut v: u32) -> usize {
    let len = decimal_len(v);
    for slot in out[..len].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
    len
}

fn decimal_len(v: u32) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
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

/// Issues the system calls of one operation.
#[inline]
fn apply(op: Op, path: &TreePath, blocks: u32) -> Result<(), FsOpError> {
    // SAFETY (every libc call in this file): `path` is NUL-terminated, holds no
    // interior NUL and outlives the call; ZEROS is a static buffer of the length passed.
    match op {
        Op::Mkdir => check(unsafe { libc::mkdir(path.as_ptr(), 0o777) }, "mkdir", path),
        Op::Create => create_file(path, blocks),
        Op::Unlink => check(unsafe { libc::unlink(path.as_ptr()) }, "unlink", path),
        Op::Rmdir => check(unsafe { libc::rmdir(path.as_ptr()) }, "rmdir", path),
    }
}

#[inline]
fn check(rc: libc::c_int, op: &'static str, path: &TreePath) -> Result<(), FsOpError> {
    sys::check(rc, op).map_err(|e| e.at(path.to_path_buf()))
}

/// What `dd if=/dev/zero bs=4096 count=blocks of=path` does to the file system.
/// O_CLOEXEC changes nothing on disk; it keeps the descriptor out of commands the rig
/// may spawn from another thread meanwhile.
#[inline]
fn create_file(path: &TreePath, blocks: u32) -> Result<(), FsOpError> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666 as libc::c_uint) };
    if fd < 0 {
        return Err(SysError::last("open").at(path.to_path_buf()));
    }
    for _ in 0..blocks {
        // One 4096-byte block; short writes and EINTR are resumed as dd does.
        if let Err(e) = sys::write_all(fd, &ZEROS) {
            unsafe { libc::close(fd) };
            return Err(e.at(path.to_path_buf()));
        }
    }
    check(unsafe { libc::close(fd) }, "close", path)
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

    fn phase_names(&self) -> Vec<&'static str> {
        Phase::ALL.iter().map(|p| p.name()).collect()
    }

    fn peak_data_bytes(&self) -> u64 {
        self.data_bytes()
    }

    fn peak_inodes(&self) -> u64 {
        self.dir_count().saturating_add(self.file_count())
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
                    "with -d {} -f {} -s {}, -l must be 0..={max}",
                    self.dirs, self.files, self.blocks
                ),
                None => "-f x -s x 4096 bytes must stay below 2^64; lower -f or -s".to_string(),
            };
            bail!("{e:#}; {range}");
        }
        eprintln!("jbench: {}", self.size_note(dir));
        Ok(())
    }

    /// `fdtree -d 10 ...: 11111 directories, 111110 files, 4.2 GiB`, as a warning when
    /// it is large or more than the file system under `dir` has free.
    fn size_note(&self, dir: &Path) -> String {
        let inodes = self.dir_count().saturating_add(self.file_count());
        let mut note = format!(
            "fdtree {self}: {} directories (sum of {}^i for i = 0..={}), {} files, {} of data",
            self.dir_count(),
            self.dirs,
            self.levels,
            self.file_count(),
            crate::units::format_size(self.data_bytes())
        );
        let mut large = inodes >= LARGE_INODES || self.data_bytes() >= LARGE_BYTES;
        if let Ok(fs) = nix::sys::statvfs::statvfs(dir) {
            let free_bytes = crate::run::preflight::free_bytes(dir).unwrap_or(u64::MAX);
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

/// The block fdtree 1.0.2 prints (without its `date` lines), for a run in `start`
/// by this process: same labels, whole-second times and integer rates, so figures
/// can be set beside published ones.
pub fn compat_report(tree: &Fdtree, start: &Path, phases: &[PhaseResult]) -> String {
    let base = format!("{}/{}/", start.display(), root_name());
    render_compat(tree, &base, phases)
}

fn render_compat(tree: &Fdtree, base: &str, phases: &[PhaseResult]) -> String {
    let ndtot = tree.dir_count();
    let nftot = tree.file_count();
    let mut out = String::new();
    let _ = write!(
        out,
        "fdtree-{FDTREE_VERSION}: starting at {base}\n\
         \tcreating/deleting {} directory levels with {} directories at each level\n\
         \tfor a total of {ndtot} directories\n\
         \twith {} files of size {}KiB per directory\n\
         \tfor a total of {nftot} files and {}KiB\n",
        tree.levels,
        tree.dirs,
        tree.files,
        u64::from(tree.blocks) * 4,
        tree.data_kib(),
    );
    for (phase, clock) in bash_seconds(phases) {
        let rate = |count: u64| count.checked_div(clock.total).unwrap_or(0);
        let times = format!("{}, {}, {}", clock.tin, clock.tout, clock.total);
        let _ = match phase {
            Phase::DirCreate => write!(
                out,
                "DIRECTORY CREATE TIME IN, OUT, TOTAL = {times}\n\
                 \tDirectory creates per second =  {}\n",
                rate(ndtot)
            ),
            Phase::FileCreate => write!(
                out,
                "FILE CREATE TIME IN, OUT, TOTAL      = {times}\n\
                 \tFile creates per second      =  {}\n\
                 \tKiB per second               =  {}\n",
                rate(nftot),
                rate(tree.data_kib())
            ),
            Phase::FileRemove => write!(
                out,
                "FILE REMOVE TIME IN, OUT, TOTAL      = {times}\n\
                 \tFile removals per second     =  {}\n",
                rate(nftot)
            ),
            Phase::DirRemove => write!(
                out,
                "DIRECTORY REMOVE TIME IN, OUT, TOTAL = {times}\n\
                 \tDirectory removals per second =  {}\n",
                rate(ndtot)
            ),
        };
    }
    out
}

/// Whole-second phase boundaries as bash's `$SECONDS` would have shown them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BashClock {
    tin: u64,
    tout: u64,
    total: u64,
}

/// `$SECONDS` counts whole seconds since the script began, so a phase's TOTAL is the
/// difference of two floors of the running elapsed time, not the floor of its own
/// duration. Phases with unknown names are skipped.
fn bash_seconds(phases: &[PhaseResult]) -> Vec<(Phase, BashClock)> {
    let mut elapsed = 0.0f64;
    let mut out = Vec::with_capacity(phases.len());
    for result in phases {
        let tin = elapsed.floor() as u64;
        elapsed += result.seconds;
        let tout = elapsed.floor() as u64;
        if let Some(phase) = Phase::from_name(&result.name) {
            let total = tout - tin;
            out.push((phase, BashClock { tin, tout, total }));
        }
    }
    out
}

/// Per-phase seconds (ms precision), operations and rates in fdtree's units, from
/// the monotonic clock rather than `$SECONDS`.
pub fn precise_report(tree: &Fdtree, phases: &[PhaseResult]) -> String {
    let mut out = format!(
        "fdtree {tree}: {} directories, {} files, {} KiB\n",
        tree.dir_count(),
        tree.file_count(),
        tree.data_kib()
    );
    let _ = writeln!(
        out,
        "{:<12} {:>10} {:>10} {:>14} {:<10} {:>14}",
        "phase", "seconds", "ops", "rate", "unit", "KiB/s"
    );
    for result in phases {
        let unit = Phase::from_name(&result.name).map_or("ops/s", Phase::rate_unit);
        let kib = if result.bytes > 0 {
            format!("{:.1}", result.kib_per_sec())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<12} {:>10.3} {:>10} {:>14.1} {:<10} {:>14}",
            result.name,
            result.seconds,
            result.ops,
            result.ops_per_sec(),
            unit,
            kib
        );
    }
    out
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
mod tests {
    use super::*;
    use crate::workload::testutil::{snapshot, stop_at, SmallFs};
    use nix::errno::Errno;
    use std::collections::BTreeSet;
    use std::os::unix::fs::MetadataExt;

    fn t(dirs: u32, files: u32, blocks: u32, levels: u32) -> Fdtree {
        Fdtree::new(dirs, files, blocks, levels)
    }

    #[test]
    fn study_scenario_counts() {
        let cases = [
            (t(20, 40, 1, 3), 8_421, 336_840, 1_347_360),
            (t(3, 4, 1, 10), 88_573, 354_292, 1_417_168),
            (t(17, 10, 1000, 2), 307, 3_070, 12_280_000),
            (t(2, 2, 1000, 10), 2_047, 4_094, 16_376_000),
        ];
        for (tree, dirs, files, kib) in cases {
            assert_eq!(tree.dir_count(), dirs, "{tree}");
            assert_eq!(tree.file_count(), files, "{tree}");
            assert_eq!(tree.data_kib(), kib, "{tree}");
            assert_eq!(tree.data_bytes(), kib * 1024, "{tree}");
            assert_eq!(tree.peak_inodes(), dirs + files, "{tree}");
            assert_eq!(tree.peak_data_bytes(), kib * 1024, "{tree}");
            tree.validate().unwrap();
        }
        // The script's own sample header.
        assert_eq!(t(5, 3, 10, 4).dir_count(), 781);
        assert_eq!(t(5, 3, 10, 4).data_kib(), 93_720);
    }

    #[test]
    fn degenerate_trees_count_like_the_script() {
        assert_eq!(t(0, 3, 1, 7).dir_count(), 1);
        assert_eq!(t(1, 3, 1, 7).dir_count(), 8);
        assert_eq!(t(4, 0, 9, 2).file_count(), 0);
        assert_eq!(t(4, 2, 0, 2).data_bytes(), 0);
        assert_eq!(t(9, 9, 9, 0).dir_count(), 1);
    }

    #[test]
    fn absurd_trees_are_rejected() {
        let overflow = t(u32::MAX, 10, 10, 10);
        assert_eq!(overflow.dir_count_checked(), None);
        assert_eq!(overflow.dir_count(), u64::MAX);
        assert!(overflow
            .validate()
            .unwrap_err()
            .to_string()
            .contains("too large"));
        // Counts fit but bytes do not.
        let bytes = t(2, u32::MAX, u32::MAX, 40);
        assert!(bytes.dir_count_checked().is_some());
        assert!(bytes.validate().is_err());
        // Paths longer than PATH_MAX.
        let deep = t(1, 1, 1, 2000);
        assert_eq!(deep.dir_count(), 2001);
        assert!(deep
            .validate()
            .unwrap_err()
            .to_string()
            .contains("PATH_MAX"));
        // Huge `levels` must not loop for ages.
        assert_eq!(t(2, 1, 1, u32::MAX).dir_count_checked(), None);
        assert_eq!(t(0, 1, 1, u32::MAX).dir_count(), 1);
        assert!(t(1, 1, 1, u32::MAX).validate().is_err());
    }

    #[test]
    fn deepest_path_length_is_exact() {
        let tree = t(12, 345, 1, 2);
        let root = "LEVEL0.h.1";
        let deepest = "LEVEL0.h.1/L2D12/L1D12/L0F345";
        assert_eq!(tree.deepest_relative_path_len(root), deepest.len());
        let longest = Phase::ALL
            .iter()
            .flat_map(|&p| plan_ops(&tree, p, root).unwrap())
            .map(|(_, path)| path.len())
            .max()
            .unwrap();
        assert_eq!(longest, deepest.len());
    }

    #[test]
    fn names_and_order_of_a_small_tree() {
        use Op::*;
        let tree = t(2, 2, 1, 2);
        let plan = |phase| plan_ops(&tree, phase, "R").unwrap();
        let own = |v: &[(Op, &str)]| -> Vec<(Op, String)> {
            v.iter().map(|&(o, p)| (o, p.to_string())).collect()
        };
        assert_eq!(
            plan(Phase::DirCreate),
            own(&[
                (Mkdir, "R"),
                (Mkdir, "R/L2D2"),
                (Mkdir, "R/L2D1"),
                (Mkdir, "R/L2D2/L1D2"),
                (Mkdir, "R/L2D2/L1D1"),
                (Mkdir, "R/L2D1/L1D2"),
                (Mkdir, "R/L2D1/L1D1"),
            ])
        );
        let files = [
            "R/L2F2",
            "R/L2F1",
            "R/L2D2/L1F2",
            "R/L2D2/L1F1",
            "R/L2D2/L1D2/L0F2",
            "R/L2D2/L1D2/L0F1",
            "R/L2D2/L1D1/L0F2",
            "R/L2D2/L1D1/L0F1",
            "R/L2D1/L1F2",
            "R/L2D1/L1F1",
            "R/L2D1/L1D2/L0F2",
            "R/L2D1/L1D2/L0F1",
            "R/L2D1/L1D1/L0F2",
            "R/L2D1/L1D1/L0F1",
        ];
        let with = |op, names: &[&'static str]| -> Vec<(Op, &'static str)> {
            names.iter().map(|&n| (op, n)).collect()
        };
        assert_eq!(plan(Phase::FileCreate), own(&with(Create, &files)));
        assert_eq!(plan(Phase::FileRemove), own(&with(Unlink, &files)));
        assert_eq!(
            plan(Phase::DirRemove),
            own(&[
                (Rmdir, "R/L2D2/L1D2"),
                (Rmdir, "R/L2D2/L1D1"),
                (Rmdir, "R/L2D1/L1D2"),
                (Rmdir, "R/L2D1/L1D1"),
                (Rmdir, "R/L2D2"),
                (Rmdir, "R/L2D1"),
                (Rmdir, "R"),
            ])
        );
    }

    #[test]
    fn deeper_removal_goes_grandchildren_first() {
        let removed: Vec<String> = plan_ops(&t(1, 0, 1, 3), Phase::DirRemove, "R")
            .unwrap()
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert_eq!(
            removed,
            ["R/L3D1/L2D1/L1D1", "R/L3D1/L2D1", "R/L3D1", "R"].map(String::from)
        );
    }

    #[test]
    fn walk_visits_exactly_the_counted_operations() {
        for tree in [
            t(2, 2, 1, 2),
            t(3, 4, 1, 4),
            t(0, 5, 1, 3),
            t(1, 0, 1, 6),
            t(11, 1, 1, 1),
        ] {
            for phase in Phase::ALL {
                let ops = plan_ops(&tree, phase, "R").unwrap();
                let expected = tree.phase_result(phase, 1.0).ops;
                assert_eq!(ops.len() as u64, expected, "{tree} {}", phase.name());
                let distinct: BTreeSet<_> = ops.iter().map(|(_, p)| p).collect();
                assert_eq!(distinct.len(), ops.len(), "{tree}: a path visited twice");
            }
        }
    }

    #[test]
    fn component_encoding() {
        let mut buf = [0xffu8; COMPONENT_MAX];
        let n = encode_component(&mut buf, 10, b'D', 4_294_967_295);
        assert_eq!(&buf[..=n], b"/L10D4294967295\0");
        let n = encode_component(&mut buf, 0, b'F', 7);
        assert_eq!(&buf[..=n], b"/L0F7\0");
    }

    #[test]
    fn tree_path_pushes_pops_and_grows_past_path_max() {
        let mut path = TreePath::new(Path::new("R")).unwrap();
        let mark = path.push(3, b'D', 12);
        assert_eq!(path.as_bytes(), b"R/L3D12");
        path.pop(mark);
        assert_eq!(path.as_bytes(), b"R");
        // Only plan_ops on a tree validate() refuses goes this deep.
        let deep = t(1, 1, 1, 2000);
        let files = plan_ops(&deep, Phase::FileCreate, "R").unwrap();
        let deepest = &files.last().unwrap().1;
        assert!(deepest.len() > PATH_MAX);
        assert!(deepest.starts_with("R/L2000D1/L1999D1/"));
        assert!(deepest.ends_with("/L1D1/L0F1"));
    }

    /// Every path below `dir`, relative to it, directories marked with a trailing '/'.
    fn list_tree(dir: &Path) -> BTreeSet<String> {
        fn visit(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if path.is_dir() {
                    out.insert(rel + "/");
                    visit(base, &path, out);
                } else {
                    out.insert(rel);
                }
            }
        }
        let mut out = BTreeSet::new();
        visit(dir, dir, &mut out);
        out
    }

    fn planned_tree(tree: &Fdtree) -> BTreeSet<String> {
        let root = root_name();
        let dirs = plan_ops(tree, Phase::DirCreate, &root).unwrap();
        let files = plan_ops(tree, Phase::FileCreate, &root).unwrap();
        dirs.into_iter()
            .map(|(_, p)| p + "/")
            .chain(files.into_iter().map(|(_, p)| p))
            .collect()
    }

    #[test]
    fn full_run_in_a_tempdir() {
        let dir = tempfile::tempdir().unwrap();
        let tree = t(2, 3, 2, 3);
        let results = tree.run(dir.path(), &RunControl::new()).unwrap();
        let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, tree.phase_names());
        let summary: Vec<(u64, u64, &str)> = results
            .iter()
            .map(|r| (r.ops, r.bytes, r.op_unit.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (15, 0, "dir creates"),
                (45, 45 * 2 * 4096, "file creates"),
                (45, 0, "file removals"),
                (15, 0, "dir removals"),
            ]
        );
        assert!(results.iter().all(|r| r.seconds > 0.0));
        assert!(list_tree(dir.path()).is_empty());
    }

    #[test]
    fn create_phases_leave_the_planned_tree_with_full_files() {
        let dir = tempfile::tempdir().unwrap();
        let tree = t(2, 3, 2, 3);
        let ctl = RunControl::new();
        tree.run_phases(dir.path(), &[Phase::DirCreate, Phase::FileCreate], &ctl)
            .unwrap();
        assert_eq!(list_tree(dir.path()), planned_tree(&tree));
        for (_, rel) in plan_ops(&tree, Phase::FileCreate, &root_name()).unwrap() {
            let path = dir.path().join(&rel);
            assert_eq!(std::fs::metadata(&path).unwrap().size(), 2 * 4096, "{rel}");
            assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0));
        }
        tree.run_phases(dir.path(), &[Phase::FileRemove, Phase::DirRemove], &ctl)
            .unwrap();
        assert!(list_tree(dir.path()).is_empty());
    }

    #[test]
    fn stop_request_interrupts_and_leaves_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let tree = t(2, 2, 1, 2);
        let ctl = RunControl::new();
        ctl.request_stop();
        let err = tree.run(dir.path(), &ctl).unwrap_err();
        assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
        assert!(
            list_tree(dir.path()).is_empty(),
            "nothing made after the stop"
        );

        let ctl = RunControl::new();
        tree.run_phases(dir.path(), &[Phase::DirCreate, Phase::FileCreate], &ctl)
            .unwrap();
        ctl.request_stop();
        let err = tree
            .run_phases(dir.path(), &[Phase::FileRemove, Phase::DirRemove], &ctl)
            .unwrap_err();
        assert!(err.downcast_ref::<Interrupted>().is_some(), "{err:#}");
        assert_eq!(
            list_tree(dir.path()),
            planned_tree(&tree),
            "partial tree kept"
        );
    }

    #[test]
    fn full_disk_removes_the_partial_tree() {
        let Some(fs) = SmallFs::new("fdtree full_disk_removes_the_partial_tree", "1m") else {
            return;
        };
        std::fs::write(fs.path().join("keep"), b"mine").unwrap();
        let before = snapshot(fs.path());
        // 45 files of 64 KiB: 2.8 MiB on a 1 MiB file system.
        let err = t(2, 3, 16, 3)
            .run(fs.path(), &RunControl::new())
            .unwrap_err();
        let os = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(os.errno, Errno::ENOSPC, "{err:#}");
        assert!(format!("{err:#}").contains("was removed"), "{err:#}");
        assert_eq!(snapshot(fs.path()), before);
    }

    #[test]
    fn interrupt_removes_the_partial_tree() {
        for phase in ["file_create", "file_remove", "dir_remove"] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("LEVEL0.other.1")).unwrap();
            let before = snapshot(dir.path());
            let err = t(2, 2, 1, 2).run(dir.path(), &stop_at(phase)).unwrap_err();
            assert!(
                err.downcast_ref::<Interrupted>().is_some(),
                "{phase}: {err:#}"
            );
            assert!(format!("{err:#}").contains("was removed"), "{err:#}");
            assert_eq!(snapshot(dir.path()), before, "{phase}");
        }
    }

    #[test]
    fn an_existing_root_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(root_name());
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("L1F1"), b"not the run's").unwrap();
        let before = snapshot(dir.path());
        let err = t(1, 1, 1, 1)
            .run(dir.path(), &RunControl::new())
            .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err:#}");
        assert_eq!(snapshot(dir.path()), before);
    }

    #[test]
    fn command_line_refuses_overflow_with_the_allowed_levels() {
        let dir = tempfile::tempdir().unwrap();
        let err = t(10, 10, 10, 30).preflight_cli(dir.path()).unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("too large to count"), "{text}");
        // 10^16 directories would pass 2^64 bytes with 10 files of 40 KiB each.
        let max = t(10, 10, 10, 0).max_levels().unwrap();
        assert!(text.contains(&format!("-l must be 0..={max}")), "{text}");
        t(10, 10, 10, max).validate().unwrap();
        assert!(t(10, 10, 10, max + 1).validate().is_err());
        // Deep but narrow: PATH_MAX bounds -l.
        let text = format!(
            "{:#}",
            t(1, 1, 1, 5000).preflight_cli(dir.path()).unwrap_err()
        );
        assert!(
            text.contains("PATH_MAX") && text.contains("-l must be 0..="),
            "{text}"
        );
        // Files alone too large: no -l helps.
        let text = format!(
            "{:#}",
            t(0, u32::MAX, u32::MAX, 0)
                .preflight_cli(dir.path())
                .unwrap_err()
        );
        assert!(text.contains("lower -f or -s"), "{text}");
        let missing = dir.path().join("missing");
        let text = format!("{:#}", t(1, 1, 1, 1).preflight_cli(&missing).unwrap_err());
        assert!(
            text.contains("is not a directory; create it first"),
            "{text}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        t(2, 2, 1, 2).preflight_cli(dir.path()).unwrap();
    }

    #[test]
    fn size_note_gives_counts_and_warns_when_large() {
        let dir = tempfile::tempdir().unwrap();
        let small = t(5, 3, 10, 4).size_note(dir.path());
        assert!(
            small.starts_with("fdtree -d 5 -f 3 -s 10 -l 4: 781 directories"),
            "{small}"
        );
        assert!(small.contains("2343 files"), "{small}");
        let big = t(10, 10, 10, 8).size_note(dir.path());
        assert!(big.starts_with("warning: "), "{big}");
        assert!(big.contains("111111111 directories"), "{big}");
    }

    #[test]
    fn errors_name_the_call_path_and_errno() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = t(1, 1, 1, 1).run(&missing, &RunControl::new()).unwrap_err();
        let fs = err.downcast_ref::<FsOpError>().expect("an FsOpError");
        assert_eq!(fs.errno, Errno::ENOENT);
        let expected = format!(
            "mkdir {}/{}: No such file or directory",
            missing.display(),
            root_name()
        );
        assert_eq!(fs.to_string(), expected);
        assert!(format!("{err:#}").contains(&expected));
        assert!(format!("{err:#}").contains("dir_create"));
    }

    #[test]
    fn workload_metadata() {
        let tree = t(3, 4, 5, 6);
        assert_eq!(tree.kind(), "fdtree");
        assert_eq!(
            tree.params(),
            serde_json::json!({"dirs": 3, "files": 4, "blocks": 5, "levels": 6})
        );
        let back: Fdtree = serde_json::from_value(tree.params()).unwrap();
        assert_eq!(back, tree);
        assert_eq!(
            tree.phase_names(),
            ["dir_create", "file_create", "file_remove", "dir_remove"]
        );
    }

    #[test]
    fn root_name_has_short_host_and_pid() {
        let name = root_name();
        let rest = name.strip_prefix("LEVEL0.").unwrap();
        let (host, pid) = rest.rsplit_once('.').unwrap();
        assert!(!host.contains('.'));
        assert_eq!(pid, std::process::id().to_string());
    }

    fn synthetic(seconds: [f64; 4], tree: &Fdtree) -> Vec<PhaseResult> {
        Phase::ALL
            .iter()
            .zip(seconds)
            .map(|(&p, s)| tree.phase_result(p, s))
            .collect()
    }

    #[test]
    fn compat_block_matches_the_original_layout() {
        let tree = t(5, 3, 10, 4);
        let phases = synthetic([29.5, 134.0, 27.0, 18.0], &tree);
        let expected = "fdtree-1.0.2: starting at ./LEVEL0.host.1234/\n\
            \tcreating/deleting 4 directory levels with 5 directories at each level\n\
            \tfor a total of 781 directories\n\
            \twith 3 files of size 40KiB per directory\n\
            \tfor a total of 2343 files and 93720KiB\n\
            DIRECTORY CREATE TIME IN, OUT, TOTAL = 0, 29, 29\n\
            \tDirectory creates per second =  26\n\
            FILE CREATE TIME IN, OUT, TOTAL      = 29, 163, 134\n\
            \tFile creates per second      =  17\n\
            \tKiB per second               =  699\n\
            FILE REMOVE TIME IN, OUT, TOTAL      = 163, 190, 27\n\
            \tFile removals per second     =  86\n\
            DIRECTORY REMOVE TIME IN, OUT, TOTAL = 190, 208, 18\n\
            \tDirectory removals per second =  43\n";
        assert_eq!(
            render_compat(&tree, "./LEVEL0.host.1234/", &phases),
            expected
        );
        let real = compat_report(&tree, Path::new("."), &phases);
        assert!(real.starts_with(&format!("fdtree-1.0.2: starting at ./{}/\n", root_name())));
    }

    #[test]
    fn compat_times_are_bash_seconds_and_zero_total_gives_zero_rate() {
        let tree = t(5, 3, 10, 4);
        let phases = synthetic([0.4, 0.4, 0.4, 0.4], &tree);
        let report = render_compat(&tree, "x/", &phases);
        // Cumulative 0.4, 0.8, 1.2, 1.6: only the third phase crosses a second.
        assert!(report.contains("DIRECTORY CREATE TIME IN, OUT, TOTAL = 0, 0, 0\n"));
        assert!(report.contains("\tDirectory creates per second =  0\n"));
        assert!(report.contains("FILE CREATE TIME IN, OUT, TOTAL      = 0, 0, 0\n"));
        assert!(report.contains("\tKiB per second               =  0\n"));
        assert!(report.contains("FILE REMOVE TIME IN, OUT, TOTAL      = 0, 1, 1\n"));
        assert!(report.contains("\tFile removals per second     =  2343\n"));
        assert!(report.contains("DIRECTORY REMOVE TIME IN, OUT, TOTAL = 1, 1, 0\n"));
        assert!(report.contains("\tDirectory removals per second =  0\n"));
    }

    #[test]
    fn precise_report_rates_in_fdtree_units() {
        let tree = t(5, 3, 10, 4);
        let phases = synthetic([2.0, 3.0, 1.0, 0.5], &tree);
        let report = precise_report(&tree, &phases);
        let line = |name: &str| {
            report
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            line("dir_create"),
            ["dir_create", "2.000", "781", "390.5", "dirs/s"]
        );
        assert_eq!(
            line("file_create"),
            [
                "file_create",
                "3.000",
                "2343",
                "781.0",
                "files/s",
                "31240.0"
            ]
        );
        assert_eq!(line("file_remove")[3..], ["2343.0", "removals/s"]);
        assert_eq!(line("dir_remove")[3..], ["1562.0", "removals/s"]);
    }
}
