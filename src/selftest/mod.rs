//! jbench measuring itself: what its own parts cost and whether they keep their word.
//!
//! - this module, `jbench selftest overhead`: how much the fdtree engine costs on top
//!   of the system calls it issues;
//! - `monitor`: what the sampler costs a workload;
//! - `bench`: one emulated disk served on its own for the device tools;
//! - `calibrate` (`jbench device calibrate`): an emulated disk's timing against its
//!   model; `floor` (`jbench device floor`): what the emulation path costs per request;
//!   `stress` (`jbench device stress`): whether the daemon answers on time under many
//!   writers.
//!
//! The overhead test:
//! The engine and a bare loop of the same system calls, on the same paths and in the
//! same order, build and remove the same tree on tmpfs, where the file system is as
//! fast as it gets and any overhead of the engine shows most. The runs alternate,
//! round after round, and the median of each phase is compared, so that slow drift of
//! the machine falls on both sides alike.

pub mod bench;
pub mod calibrate;
pub mod floor;
pub mod monitor;
pub mod stress;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};

use crate::workload::fdtree::{root_name, Fdtree, Phase};
use crate::workload::RunControl;

/// Engine throughput below this fraction of the bare loop's is a defect.
pub const TARGET_RATIO: f64 = 0.95;

#[derive(Debug, Clone, PartialEq)]
pub struct OverheadOptions {
    /// Where the scratch directory is made; tmpfs, so the device does not hide the
    /// engine's cost.
    pub dir: PathBuf,
    pub tree: Fdtree,
    /// Engine runs and bare runs, each; at least 1.
    pub rounds: u32,
}

impl Default for OverheadOptions {
    /// 22,621 directories and as many one-block files: on tmpfs even the directory
    /// phases last a tenth of a second, long enough to average out the scheduler's
    /// slices given to other work, and the whole test takes about ten seconds.
    fn default() -> Self {
        OverheadOptions {
            dir: PathBuf::from("/dev/shm"),
            tree: Fdtree::new(12, 1, 1, 4),
            rounds: 5,
        }
    }
}

/// Rates of one phase, one per round, for both contenders.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseOverhead {
    pub phase: Phase,
    /// Operations per second of the engine, in round order.
    pub engine: Vec<f64>,
    /// Operations per second of the bare loop, in round order.
    pub raw: Vec<f64>,
}

impl PhaseOverhead {
    pub fn engine_median(&self) -> f64 {
        median(&self.engine)
    }

    pub fn raw_median(&self) -> f64 {
        median(&self.raw)
    }

    /// Engine over bare loop in each round, from figures measured moments apart.
    pub fn paired_ratios(&self) -> Vec<f64> {
        self.engine
            .iter()
            .zip(&self.raw)
            .map(|(&e, &r)| if r > 0.0 { e / r } else { 0.0 })
            .collect()
    }

    /// Median of the per-round ratios; 1.0 means no overhead. Pairing first and
    /// taking the median after removes most of the load that moves both figures.
    pub fn ratio(&self) -> f64 {
        median(&self.paired_ratios())
    }

    pub fn target_met(&self) -> bool {
        self.ratio() >= TARGET_RATIO
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OverheadReport {
    pub dir: PathBuf,
    pub tree: Fdtree,
    pub rounds: u32,
    /// In the order the phases run.
    pub phases: Vec<PhaseOverhead>,
}

impl OverheadReport {
    pub fn target_met(&self) -> bool {
        self.phases.iter().all(PhaseOverhead::target_met)
    }
}

/// Builds and removes `opts.tree` under a fresh directory in `opts.dir`, once with
/// the engine and once with the bare loop per round, for `opts.rounds` rounds after
/// one uncounted warm-up round. The directory is removed afterwards whatever happens.
///
/// The two contenders keep separate trees and take turns phase by phase (engine
/// `dir_create`, bare `dir_create`, engine `file_create`, ...), so the two figures
/// compared are measured a fraction of a second apart: on a shared machine, load
/// comes and goes on a scale of seconds, and whole-run alternation let it fall on
/// one side only.
pub fn run_overhead(opts: &OverheadOptions) -> anyhow::Result<OverheadReport> {
    if opts.rounds == 0 {
        bail!("selftest overhead: rounds must be at least 1");
    }
    opts.tree.validate()?;
    let scratch = Scratch::create(&opts.dir)?;
    // Same-length names, so both contenders hand the kernel paths of equal length.
    let engine_dir = scratch.subdir("e")?;
    let raw_dir = scratch.subdir("r")?;
    let mut phases: Vec<PhaseOverhead> = Phase::ALL
        .iter()
        .map(|&phase| PhaseOverhead {
            phase,
            engine: Vec::new(),
            raw: Vec::new(),
        })
        .collect();
    // The first round grows the kernel's inode and dentry caches; it is not counted.
    round(&opts.tree, &engine_dir, &raw_dir, true, &mut [])?;
    for n in 0..opts.rounds {
        // Swapping who goes first each round cancels any advantage of going second
        // (warm caches, freed pages, CPU frequency).
        round(&opts.tree, &engine_dir, &raw_dir, n % 2 == 0, &mut phases)?;
    }
    scratch.remove()?;
    Ok(OverheadReport {
        dir: opts.dir.clone(),
        tree: opts.tree,
        rounds: opts.rounds,
        phases,
    })
}

/// One full tree life cycle per contender; rates are appended to `out` (an empty
/// slice for the warm-up).
fn round(
    tree: &Fdtree,
    engine_dir: &Path,
    raw_dir: &Path,
    engine_first: bool,
    out: &mut [PhaseOverhead],
) -> anyhow::Result<()> {
    let ctl = RunControl::new();
    let mut raw = RawTree::new(tree, &raw_dir.join(root_name()))?;
    for (i, phase) in Phase::ALL.into_iter().enumerate() {
        let ops = ops_of(tree, phase) as f64;
        for engine_turn in [engine_first, !engine_first] {
            let seconds = if engine_turn {
                let results = tree
                    .run_phases(engine_dir, &[phase], &ctl)
                    .context("engine run")?;
                results[0].seconds
            } else {
                raw.run(phase)?
            };
            if let Some(entry) = out.get_mut(i) {
                let rates = if engine_turn {
                    &mut entry.engine
                } else {
                    &mut entry.raw
                };
                rates.push(ops / seconds);
            }
        }
    }
    Ok(())
}

fn ops_of(tree: &Fdtree, phase: Phase) -> u64 {
    match phase {
        Phase::DirCreate | Phase::DirRemove => tree.dir_count(),
        Phase::FileCreate | Phase::FileRemove => tree.file_count(),
    }
}

/// The baseline: fdtree.bash's four recursions written as plainly as possible over a
/// fixed path buffer, with nothing but the system calls and their return checks.
/// Deliberately shares no code with the engine.
struct RawTree {
    dirs: u32,
    files: u32,
    blocks: u32,
    levels: u32,
    buf: Box<[u8; 8192]>,
    len: usize,
}

static RAW_ZEROS: [u8; 4096] = [0; 4096];

impl RawTree {
    fn new(tree: &Fdtree, root: &Path) -> anyhow::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = root.as_os_str().as_bytes();
        if bytes.len() >= 4096 || bytes.contains(&0) {
            bail!("unusable root path {}", root.display());
        }
        let mut buf = Box::new([0u8; 8192]);
        buf[..bytes.len()].copy_from_slice(bytes);
        Ok(RawTree {
            dirs: tree.dirs,
            files: tree.files,
            blocks: tree.blocks,
            levels: tree.levels,
            buf,
            len: bytes.len(),
        })
    }

    /// Seconds one phase took.
    fn run(&mut self, phase: Phase) -> anyhow::Result<f64> {
        let body = match phase {
            Phase::DirCreate => RawTree::dir_create,
            Phase::FileCreate => RawTree::file_create,
            Phase::FileRemove => RawTree::file_remove,
            Phase::DirRemove => RawTree::dir_remove,
        };
        let started = Instant::now();
        body(self).with_context(|| format!("bare loop: {}", self.path_display()))?;
        Ok(started.elapsed().as_secs_f64())
    }

    fn path_display(&self) -> String {
        String::from_utf8_lossy(&self.buf[..self.len]).into_owned()
    }

    fn ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }

    /// Appends `/L<nl><kind><n>` (NUL-terminated); returns the length to go back to.
    fn enter(&mut self, nl: u32, kind: u8, n: u32) -> usize {
        let old = self.len;
        let mut at = old;
        self.buf[at] = b'/';
        self.buf[at + 1] = b'L';
        at = put_decimal(&mut self.buf[..], at + 2, nl);
        self.buf[at] = kind;
        at = put_decimal(&mut self.buf[..], at + 1, n);
        self.buf[at] = 0;
        self.len = at;
        old
    }

    fn leave(&mut self, old: usize) {
        self.len = old;
        self.buf[old] = 0;
    }

    fn dir_create(&mut self) -> io::Result<()> {
        // SAFETY: `self.ptr()` is the NUL-terminated path buffer, which outlives the call.
        check(unsafe { libc::mkdir(self.ptr(), 0o777) })?;
        self.create_dirs(self.levels)
    }

    fn create_dirs(&mut self, nl: u32) -> io::Result<()> {
        if nl == 0 {
            return Ok(());
        }
        for nd in (1..=self.dirs).rev() {
            let old = self.enter(nl, b'D', nd);
            // SAFETY: `self.ptr()` is the NUL-terminated path buffer, which outlives the call.
            check(unsafe { libc::mkdir(self.ptr(), 0o777) })?;
            self.leave(old);
        }
        for nd in (1..=self.dirs).rev() {
            let old = self.enter(nl, b'D', nd);
            self.create_dirs(nl - 1)?;
            self.leave(old);
        }
        Ok(())
    }

    fn file_create(&mut self) -> io::Result<()> {
        self.create_files(self.levels)
    }

    fn create_files(&mut self, nl: u32) -> io::Result<()> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
        for nf in (1..=self.files).rev() {
            let old = self.enter(nl, b'F', nf);
            // SAFETY: `self.ptr()` is the NUL-terminated path buffer, which outlives the call.
            let fd = unsafe { libc::open(self.ptr(), flags, 0o666 as libc::c_uint) };
            check(fd)?;
            for _ in 0..self.blocks {
                // SAFETY: `fd` is the file just opened; RAW_ZEROS is a static buffer of the length passed.
                let n = unsafe { libc::write(fd, RAW_ZEROS.as_ptr().cast(), RAW_ZEROS.len()) };
                if n != RAW_ZEROS.len() as isize {
                    // Captured before close() can overwrite errno.
                    let err = if n < 0 {
                        io::Error::last_os_error()
                    } else {
                        io::Error::other("short write")
                    };
                    // SAFETY: `fd` is the file this loop opened, closed once.
                    unsafe { libc::close(fd) };
                    return Err(err);
                }
            }
            // SAFETY: `fd` is the file this loop opened, closed once.
            check(unsafe { libc::close(fd) })?;
            self.leave(old);
        }
        if nl > 0 {
            for nd in (1..=self.dirs).rev() {
                let old = self.enter(nl, b'D', nd);
                self.create_files(nl - 1)?;
                self.leave(old);
            }
        }
        Ok(())
    }

    fn file_remove(&mut self) -> io::Result<()> {
        self.remove_files(self.levels)
    }

    fn remove_files(&mut self, nl: u32) -> io::Result<()> {
        for nf in (1..=self.files).rev() {
            let old = self.enter(nl, b'F', nf);
            // SAFETY: `self.ptr()` is the NUL-terminated path buffer, which outlives the call.
            check(unsafe { libc::unlink(self.ptr()) })?;
            self.leave(old);
        }
        if nl > 0 {
            for nd in (1..=self.dirs).rev() {
                let old = self.enter(nl, b'D', nd);
                self.remove_files(nl - 1)?;
                self.leave(old);
            }
        }
        Ok(())
    }

    fn dir_remove(&mut self) -> io::Result<()> {
        self.remove_dirs(self.levels)?;
        // SAFETY: `self.ptr()` is the NUL-terminated path buffer, which outlives the call.
        check(unsafe { libc::rmdir(self.ptr()) })
    }

    fn remove_dirs(&mut self, nl: u32) -> io::Result<()> {
        if nl > 1 {
            for nd in (1..=self.dirs).rev() {
                let old = self.enter(nl, b'D', nd);
                self.remove_dirs(nl - 1)?;
                self.leave(old);
            }
        }
        if nl > 0 {
            for nd in (1..=self.dirs).rev() {
                let old = self.enter(nl, b'D', nd);
                // SAFETY: `self.ptr()` is the NUL-terminated path buffer, which outlives the call.
                check(unsafe { libc::rmdir(self.ptr()) })?;
                self.leave(old);
            }
        }
        Ok(())
    }
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `v` in decimal at `buf[at..]`; returns the index after the last digit.
fn put_decimal(buf: &mut [u8], at: usize, v: u32) -> usize {
    let digits = v.checked_ilog10().map_or(1, |l| l as usize + 1);
    let mut rest = v;
    for i in (0..digits).rev() {
        buf[at + i] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    at + digits
}

/// A uniquely named directory removed on drop, so that a failed or panicking
/// self-test leaves nothing in `/dev/shm`, where it would hold memory.
struct Scratch {
    path: Option<PathBuf>,
}

impl Scratch {
    fn create(parent: &Path) -> anyhow::Result<Self> {
        let pid = std::process::id();
        for attempt in 0..1000u32 {
            let path = parent.join(format!("jbench-overhead.{pid}.{attempt}"));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Scratch { path: Some(path) }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("mkdir {}", path.display()));
                }
            }
        }
        bail!("no free scratch directory name under {}", parent.display())
    }

    fn path(&self) -> &Path {
        self.path.as_deref().expect("scratch directory in use")
    }

    fn subdir(&self, name: &str) -> anyhow::Result<PathBuf> {
        let path = self.path().join(name);
        std::fs::create_dir(&path).with_context(|| format!("mkdir {}", path.display()))?;
        Ok(path)
    }

    /// Removes the directory, reporting failure (drop can only ignore it).
    fn remove(mut self) -> anyhow::Result<()> {
        let path = self.path.take().expect("scratch directory in use");
        std::fs::remove_dir_all(&path).with_context(|| format!("remove {}", path.display()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

fn min_max(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max)
}

/// (max - min) / median, in percent: how far apart the rounds were.
fn spread_pct(values: &[f64]) -> f64 {
    let mid = median(values);
    if mid <= 0.0 {
        return 0.0;
    }
    let (min, max) = min_max(values);
    (max - min) / mid * 100.0
}

impl fmt::Display for OverheadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "selftest overhead: fdtree {} ({} dirs, {} files) in {}, {} rounds each",
            self.tree,
            self.tree.dir_count(),
            self.tree.file_count(),
            self.dir.display(),
            self.rounds
        )?;
        writeln!(
            f,
            "{:<12} {:>13} {:>13} {:>10} {:>13} {:>8} {:>8}  target",
            "phase", "engine ops/s", "raw ops/s", "engine/raw", "ratio range", "engine", "raw",
        )?;
        writeln!(
            f,
            "             {:>13} {:>13} {:>10} {:>13} {:>8} {:>8}",
            "(median)", "(median)", "(median)", "(min-max)", "spread", "spread"
        )?;
        for p in &self.phases {
            let ratios = p.paired_ratios();
            let (lo, hi) = min_max(&ratios);
            writeln!(
                f,
                "{:<12} {:>13.0} {:>13.0} {:>10.3} {:>6.3}-{:<6.3} {:>7.1}% {:>7.1}%  {}",
                p.phase.name(),
                p.engine_median(),
                p.raw_median(),
                p.ratio(),
                lo,
                hi,
                spread_pct(&p.engine),
                spread_pct(&p.raw),
                if p.target_met() { "met" } else { "NOT MET" }
            )?;
        }
        let missed: Vec<&str> = self
            .phases
            .iter()
            .filter(|p| !p.target_met())
            .map(|p| p.phase.name())
            .collect();
        if missed.is_empty() {
            writeln!(
                f,
                "target engine >= {TARGET_RATIO} x raw: met in every phase"
            )
        } else {
            writeln!(
                f,
                "target engine >= {TARGET_RATIO} x raw: NOT met in {}",
                missed.join(", ")
            )
        }?;
        writeln!(
            f,
            "(engine/raw: median of per-round ratios; spread: (max - min) / median of the \
             rates over the rounds)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_report_covers_every_phase() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OverheadOptions {
            dir: dir.path().to_path_buf(),
            tree: Fdtree::new(2, 3, 1, 2),
            rounds: 2,
        };
        let report = run_overhead(&opts).unwrap();
        let names: Vec<&str> = report.phases.iter().map(|p| p.phase.name()).collect();
        assert_eq!(
            names,
            ["dir_create", "file_create", "file_remove", "dir_remove"]
        );
        for p in &report.phases {
            assert_eq!((p.engine.len(), p.raw.len()), (2, 2));
            assert!(p.engine.iter().chain(&p.raw).all(|&r| r > 0.0), "{p:?}");
            assert!(p.ratio() > 0.0);
        }
        let text = report.to_string();
        for name in names {
            assert!(text.contains(name), "{text}");
        }
        assert!(text.contains("target engine >= 0.95 x raw"), "{text}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "scratch left"
        );
    }

    #[test]
    fn bare_loop_builds_the_engines_tree() {
        use crate::workload::fdtree::plan_ops;
        let dir = tempfile::tempdir().unwrap();
        let tree = Fdtree::new(2, 2, 2, 2);
        let root = root_name();
        let mut raw = RawTree::new(&tree, &dir.path().join(&root)).unwrap();
        raw.dir_create().unwrap();
        raw.file_create().unwrap();
        for (_, rel) in plan_ops(&tree, Phase::FileCreate, &root).unwrap() {
            let len = std::fs::metadata(dir.path().join(&rel)).unwrap().len();
            assert_eq!(len, 2 * 4096, "{rel}");
        }
        raw.file_remove().unwrap();
        raw.dir_remove().unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn scratch_is_removed_on_drop_with_contents() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(dir.path()).unwrap();
        let inner = scratch.path().join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(inner.join("f"), b"x").unwrap();
        let second = Scratch::create(dir.path()).unwrap();
        assert_ne!(scratch.path(), second.path());
        drop(scratch);
        drop(second);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(spread_pct(&[90.0, 100.0, 110.0]), 20.0);
        assert_eq!(median(&[]), 0.0);
    }

    /// The figures to quote: run in release on the machine under test with
    /// `cargo test --release -- --ignored overhead --nocapture`
    /// (`JBENCH_OVERHEAD_ROUNDS=n` for more rounds on a noisy machine).
    #[test]
    #[ignore = "measures this machine; run explicitly in release"]
    fn overhead_on_this_machine() {
        let mut opts = OverheadOptions::default();
        if let Ok(rounds) = std::env::var("JBENCH_OVERHEAD_ROUNDS") {
            opts.rounds = rounds.parse().expect("JBENCH_OVERHEAD_ROUNDS: a number");
        }
        let report = run_overhead(&opts).unwrap();
        println!("{report}");
    }
}
