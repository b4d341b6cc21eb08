//! What each logged block of a recording is: the journal, file-system metadata, a
//! directory, or the data of which file at which offset. Read once per recording from
//! the file system as the log leaves it at its end (every write applied to a sparse
//! copy of the disk, then `debugfs`: `icheck` for the block's owner, `ncheck` for its
//! path, `stat` for where in the file it sits), and kept beside the log as
//! `trial-N.blocks.json`, so the planner and the report read the same labels.
//!
//! The labels are the end's: a block freed before the end (a temporary file, a
//! removed one) is `unowned` there, and a block that changed owner during the run is
//! labelled by its last. Only ext3/ext4 is read (debugfs is e2fsprogs'); an XFS
//! recording has no labels, which the map says.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::states::{blocks_of, BlockOfFile, DiskTraits, FileWrites, LogRec, DEFAULT_BLOCK};
use crate::emu::writelog::{read_payload, write_zeros, LogHeader, RecordKind};
use crate::experiment::config::{Config, Placement};
use crate::rig::image::ImageFile;
use crate::rig::session::SessionDir;

/// Bumped when the labels' meaning changes: an older map is read again, not trusted.
pub const BLOCK_MAP_VERSION: u32 = 2;

/// The block size jbench makes every ext3/ext4 with, and the unit of the map.
pub const MAP_BLOCK: u64 = 4096;

/// Phase boundaries at which blocks no file owns at the end are looked up again, at
/// most (each is a rebuild of the disk and a journal replay).
const MAX_EARLIER_CUTS: usize = 4;

/// The ext2/3/4 inode that holds an internal journal.
const JOURNAL_INODE: u64 = 8;

/// Inodes whose place in the file is looked up with `stat`, at most: past it a block
/// is known by its file only (a tree of a million tiny files would make the map the
/// size of the log and say nothing the planner uses: single blocks are never torn).
const MAX_STAT_INODES: usize = 50_000;

/// What one block is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "use", rename_all = "kebab-case")]
pub enum BlockUse {
    /// A block of the journal (the internal journal's inode, a journal region or disk).
    Journal,
    /// A block a file owns that is not its data (an extent-tree or indirect block).
    FileMetadata { file: u32 },
    /// A directory's block.
    Directory { file: u32 },
    /// A regular file's data; `offset` is the block's byte offset in the file (`None`:
    /// not looked up).
    Data { file: u32, offset: Option<u64> },
    /// No file owns it at the end: file-system metadata (bitmaps, inode tables, the
    /// superblock and its copies), or a block freed before the end.
    Unowned,
}

/// A run of consecutive blocks of one disk with one use; a data run's offsets grow by
/// a block per block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub disk: u8,
    /// The first block (in [`MAP_BLOCK`] units from the disk's start).
    pub block: u64,
    pub count: u64,
    #[serde(flatten)]
    pub what: BlockUse,
}

/// The labels of a recording's logged blocks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockMap {
    pub version: u32,
    /// How the labels were read.
    pub source: String,
    /// Paths relative to their file system's root; the second file system's start
    /// with `second:`.
    pub files: Vec<String>,
    pub runs: Vec<Run>,
    /// What could not be labelled, and why (an XFS disk, a debugfs failure).
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(skip)]
    index: BTreeMap<(u8, u64), usize>,
}

impl BlockMap {
    fn with_index(mut self) -> Self {
        self.index = self
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.disk, r.block), i))
            .collect();
        self
    }

    /// The use of block `block` of disk `disk`, if the map labels it.
    pub fn lookup(&self, disk: u8, block: u64) -> Option<BlockUse> {
        let (_, &i) = self.index.range(..=(disk, block)).next_back()?;
        let r = &self.runs[i];
        if r.disk != disk || block >= r.block + r.count {
            return None;
        }
        Some(match &r.what {
            BlockUse::Data {
                file,
                offset: Some(o),
            } => BlockUse::Data {
                file: *file,
                offset: Some(o + (block - r.block) * MAP_BLOCK),
            },
            w => w.clone(),
        })
    }

    /// Where a recording's map is kept: beside its log.
    pub fn path_for(log: &Path) -> PathBuf {
        let stem = log.file_stem().and_then(|s| s.to_str()).unwrap_or("trial");
        log.with_file_name(format!("{stem}.blocks.json"))
    }

    /// The map kept beside `log`, if one of this version is there.
    pub fn read_beside(log: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(Self::path_for(log)).ok()?;
        let map: BlockMap = serde_json::from_str(&text).ok()?;
        (map.version == BLOCK_MAP_VERSION).then(|| map.with_index())
    }

    fn write_beside(&self, log: &Path) -> Result<()> {
        let path = Self::path_for(log);
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(self)?)
            .with_context(|| format!("cannot write the block labels {}", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .with_context(|| format!("cannot move the block labels to {}", path.display()))
    }
}

/// The writes from record `from` on that hold file data, each logical block with its
/// file and offset, for the planner. The neighbour's files (`neighbour_rate`) are not
/// the application's: no rule spends a state on tearing or syncing them, and no torn
/// state is blamed on them.
pub fn file_writes(map: &BlockMap, recs: &[LogRec], disks: &[DiskTraits], from: u64) -> FileWrites {
    let neighbour = format!("{}/", crate::workload::neighbour::DIR_NAME);
    let theirs: Vec<bool> = map
        .files
        .iter()
        .map(|f| f.starts_with(&neighbour))
        .collect();
    let mut writes = HashMap::new();
    for r in recs.iter().skip(from as usize) {
        if r.kind != RecordKind::Write {
            continue;
        }
        let block = disks
            .get(r.disk as usize)
            .map_or(DEFAULT_BLOCK, |d| d.block);
        let units = blocks_of(&r.meta, block);
        let labels: Vec<BlockOfFile> = units
            .iter()
            .map(|&(start, _)| {
                let at = r.offset + start;
                match map.lookup(r.disk, at / MAP_BLOCK)? {
                    BlockUse::Data { file, .. }
                        if theirs.get(file as usize).copied().unwrap_or(false) =>
                    {
                        None
                    }
                    BlockUse::Data { file, offset } => {
                        Some((file, offset.map(|o| o + at % MAP_BLOCK)))
                    }
                    _ => None,
                }
            })
            .collect();
        if labels.iter().any(|l| l.is_some()) {
            writes.insert(r.seq, labels);
        }
    }
    FileWrites {
        files: map.files.clone(),
        writes,
        ..FileWrites::default()
    }
}

/// The recording's map: read from beside its log, or made and kept there.
pub fn of_recording(
    work_dir: &Path,
    config: &Config,
    header: &LogHeader,
    log: &Path,
    recs: &[LogRec],
    from: u64,
) -> Result<BlockMap> {
    if let Some(map) = BlockMap::read_beside(log) {
        return Ok(map);
    }
    let map = label(work_dir, config, header, log, recs, from)?;
    // A results directory that cannot be written to still gets its labels for this run.
    let _ = map.write_beside(log);
    Ok(map)
}

/// Labels every block written at or after record `from` (the workload's start).
fn label(
    work_dir: &Path,
    config: &Config,
    header: &LogHeader,
    log: &Path,
    recs: &[LogRec],
    from: u64,
) -> Result<BlockMap> {
    let mut map = BlockMap {
        version: BLOCK_MAP_VERSION,
        source: "debugfs (icheck, ncheck, stat) on each file system as the log leaves it, and at the last phase boundaries for blocks no file owns at the end (journal replayed by e2fsck -E journal_only)".into(),
        ..BlockMap::default()
    };
    let written = written_blocks(recs, from);
    // Phase starts and ends after the workload's start, latest first: a file removed
    // in a later phase, or closed and removed once its phase ended (SQLite's -wal),
    // still exists at an earlier one's boundary.
    let mut earlier: Vec<u64> = super::states::Marks::of(recs)
        .map(|m| {
            m.phases
                .iter()
                .chain(&m.ends)
                .map(|(s, _)| *s)
                .filter(|&s| s > from)
                .collect()
        })
        .unwrap_or_default();
    earlier.sort_unstable_by(|a, b| b.cmp(a));
    earlier.dedup();
    earlier.truncate(MAX_EARLIER_CUTS);
    for d in &header.disks {
        let Some(blocks) = written.get(&d.index) else {
            continue;
        };
        let journal_disk = d.name == "journal";
        let fs_disk = matches!(d.name.as_str(), "fs" | "second");
        if journal_disk {
            push_runs(&mut map.runs, d.index, blocks, |_| BlockUse::Journal);
            continue;
        }
        if !fs_disk {
            continue;
        }
        if !config.fs_type.is_ext() {
            map.notes.push(format!(
                "disk `{}`: {} is not labelled (only ext3/ext4 is read, with debugfs)",
                d.name, config.fs_type
            ));
            continue;
        }
        // A same-disk journal sits after the file system on its disk.
        let fs_end = if d.name == "fs" {
            config.fs_size
        } else {
            config.second_fs_size.unwrap_or(d.size)
        };
        let same_disk_journal = d.name == "fs" && config.placement == Placement::SameDisk;
        let (inside, journal): (BTreeSet<u64>, BTreeSet<u64>) = blocks
            .iter()
            .partition(|&&b| b * MAP_BLOCK < fs_end || !same_disk_journal);
        push_runs(&mut map.runs, d.index, &journal, |_| BlockUse::Journal);
        let prefix = if d.name == "second" { "second:" } else { "" };
        // Removed files are looked for again only where the journal can be replayed
        // in the image alone.
        let earlier = if config.placement == Placement::Internal {
            earlier.as_slice()
        } else {
            &[]
        };
        match label_ext(
            work_dir, d.index, d.size, log, recs, &inside, prefix, earlier, &mut map,
        ) {
            Ok(()) => {}
            Err(e) => map
                .notes
                .push(format!("disk `{}`: not labelled: {e:#}", d.name)),
        }
    }
    map.runs.sort_by_key(|r| (r.disk, r.block));
    Ok(map.with_index())
}

/// The blocks each disk's writes touched from record `from` on.
fn written_blocks(recs: &[LogRec], from: u64) -> BTreeMap<u8, BTreeSet<u64>> {
    let mut out: BTreeMap<u8, BTreeSet<u64>> = BTreeMap::new();
    for r in recs.iter().skip(from as usize) {
        if r.kind != RecordKind::Write || r.len == 0 {
            continue;
        }
        let first = r.offset / MAP_BLOCK;
        let last = (r.offset + r.len - 1) / MAP_BLOCK;
        out.entry(r.disk).or_default().extend(first..=last);
    }
    out
}

/// Appends the runs of `blocks` (sorted) labelled by `what`, merging neighbours with
/// the same use (a data run only where the file offsets follow on).
fn push_runs(
    runs: &mut Vec<Run>,
    disk: u8,
    blocks: &BTreeSet<u64>,
    mut what: impl FnMut(u64) -> BlockUse,
) {
    let start = runs.len();
    for &b in blocks {
        let w = what(b);
        if runs.len() > start {
            let last = runs.last_mut().expect("a run");
            if last.block + last.count == b && follows(&last.what, last.count, &w) {
                last.count += 1;
                continue;
            }
        }
        runs.push(Run {
            disk,
            block: b,
            count: 1,
            what: w,
        });
    }
}

/// Whether `next` continues a run of `count` blocks labelled `first`.
fn follows(first: &BlockUse, count: u64, next: &BlockUse) -> bool {
    match (first, next) {
        (
            BlockUse::Data {
                file: a,
                offset: Some(o),
            },
            BlockUse::Data {
                file: b,
                offset: Some(p),
            },
        ) => a == b && *p == o + count * MAP_BLOCK,
        (a, b) => a == b,
    }
}

/// Rebuilds the disk as the log leaves it in a sparse image and labels `blocks` with
/// debugfs; with `earlier` cuts (phase boundaries, latest first), the blocks no file owns
/// at the end are looked up again in the file system as the log leaves it at each cut,
/// its internal journal replayed first: a file the workload removed is known there.
#[allow(clippy::too_many_arguments)]
fn label_ext(
    work_dir: &Path,
    disk: u8,
    size: u64,
    log: &Path,
    recs: &[LogRec],
    blocks: &BTreeSet<u64>,
    prefix: &str,
    earlier: &[u64],
    map: &mut BlockMap,
) -> Result<()> {
    if blocks.is_empty() {
        return Ok(());
    }
    let session = SessionDir::create(work_dir)?;
    let at = |cut: u64| -> Result<ImageFile> {
        let image = ImageFile::create(&session, &format!("labels-{cut}.img"), size)?;
        rebuild(&image, log, recs, disk, cut)?;
        Ok(image)
    };
    let end = at(recs.len() as u64)?;
    let mut uses = owners_of(&session, end.path(), blocks, prefix, &mut map.files)?;
    drop(end);
    let first_write = first_writes(recs, disk, blocks);
    for &cut in earlier {
        let left: BTreeSet<u64> = uses
            .iter()
            .filter(|(b, u)| {
                **u == BlockUse::Unowned && first_write.get(b).is_some_and(|&w| w < cut)
            })
            .map(|(&b, _)| b)
            .collect();
        if left.is_empty() {
            continue;
        }
        let then = at(cut).and_then(|image| {
            replay_journal(image.path())?;
            owners_of(&session, image.path(), &left, prefix, &mut map.files)
        });
        // The end's labels stand without the earlier look.
        let then = match then {
            Ok(t) => t,
            Err(e) => {
                map.notes.push(format!(
                    "blocks no file owns at the end were not looked up at record {cut}: {e:#}"
                ));
                break;
            }
        };
        for (b, u) in then {
            if u != BlockUse::Unowned {
                uses.insert(b, u);
            }
        }
    }
    push_runs(&mut map.runs, disk, blocks, |b| {
        uses.get(&b).cloned().unwrap_or(BlockUse::Unowned)
    });
    Ok(())
}

/// Applies every write of `disk` before record `cut` to `image`.
fn rebuild(image: &ImageFile, log: &Path, recs: &[LogRec], disk: u8, cut: u64) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let log_file = std::fs::File::open(log)
        .with_context(|| format!("cannot open the write log {}", log.display()))?;
    let zeros = vec![0u8; 1 << 20];
    let f = image.file();
    for m in recs.iter().take(cut as usize).filter(|m| m.disk == disk) {
        match m.kind {
            RecordKind::Write => f.write_all_at(&read_payload(&log_file, m)?, m.offset)?,
            RecordKind::Zero | RecordKind::Discard => write_zeros(f, &zeros, m.offset, m.len)?,
            RecordKind::Flush | RecordKind::Marker => {}
        }
    }
    Ok(())
}

/// The record that first wrote each of `blocks` on `disk`.
fn first_writes(recs: &[LogRec], disk: u8, blocks: &BTreeSet<u64>) -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    for r in recs
        .iter()
        .filter(|r| r.disk == disk && r.kind == RecordKind::Write && r.len > 0)
    {
        for b in r.offset / MAP_BLOCK..=(r.offset + r.len - 1) / MAP_BLOCK {
            if blocks.contains(&b) {
                out.entry(b).or_insert(r.seq);
            }
        }
    }
    out
}

/// Replays the internal journal of the file system in `img` (e2fsck's own replay,
/// nothing else checked or repaired), so debugfs reads what a mount would see.
fn replay_journal(img: &Path) -> Result<()> {
    let out = Command::new("e2fsck")
        .args(["-E", "journal_only", "-y"])
        .arg(img)
        .output()
        .context("cannot run e2fsck (e2fsprogs): install e2fsprogs")?;
    // 0: nothing to do; 1: the journal was replayed.
    match out.status.code() {
        Some(0 | 1) => Ok(()),
        _ => bail!(
            "e2fsck -E journal_only exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
    }
}

/// What each of `blocks` is in the file system image `img`, with debugfs; files it
/// names are added to `files` (prefixed with `prefix`).
fn owners_of(
    session: &SessionDir,
    img: &Path,
    blocks: &BTreeSet<u64>,
    prefix: &str,
    files: &mut Vec<String>,
) -> Result<HashMap<u64, BlockUse>> {
    // Who owns each block.
    let owners = parse_icheck(&debugfs(session, img, &batched("icheck", blocks))?);
    let inodes: BTreeSet<u64> = owners
        .values()
        .copied()
        .filter(|&i| i != JOURNAL_INODE)
        .collect();
    // Their paths, and where each block sits in its file.
    let mut paths = HashMap::new();
    let mut layout = HashMap::new();
    if !inodes.is_empty() {
        let mut cmds = batched("ncheck", &inodes);
        for i in inodes.iter().take(MAX_STAT_INODES) {
            cmds.push_str(&format!("stat <{i}>\n"));
        }
        let out = debugfs(session, img, &cmds)?;
        paths = parse_ncheck(&out);
        layout = parse_stats(&out);
    }
    let mut file_ids: HashMap<u64, u32> = HashMap::new();
    let mut file_of = |ino: u64| -> u32 {
        *file_ids.entry(ino).or_insert_with(|| {
            let p = paths
                .get(&ino)
                .cloned()
                .unwrap_or_else(|| format!("<inode {ino}>"));
            files.push(format!("{prefix}{p}"));
            (files.len() - 1) as u32
        })
    };
    let use_of = |b: u64, file_of: &mut dyn FnMut(u64) -> u32| match owners.get(&b) {
        None => BlockUse::Unowned,
        Some(&JOURNAL_INODE) => BlockUse::Journal,
        Some(&ino) => {
            let file = file_of(ino);
            match layout.get(&ino) {
                Some(l) if l.directory => BlockUse::Directory { file },
                // A symlink's or device's block, or a regular file's own extent-tree
                // or indirect block: not data an application reads as pages.
                Some(l) => match l.offset_of(b).filter(|_| l.regular) {
                    Some(o) => BlockUse::Data {
                        file,
                        offset: Some(o),
                    },
                    None => BlockUse::FileMetadata { file },
                },
                None => BlockUse::Data { file, offset: None },
            }
        }
    };
    Ok(blocks
        .iter()
        .map(|&b| (b, use_of(b, &mut file_of)))
        .collect())
}

/// `command` over `args`, 500 to a line (debugfs reads one command a line).
fn batched(command: &str, args: &BTreeSet<u64>) -> String {
    let list: Vec<u64> = args.iter().copied().collect();
    let mut cmds = String::new();
    for chunk in list.chunks(500) {
        cmds.push_str(command);
        for a in chunk {
            cmds.push_str(&format!(" {a}"));
        }
        cmds.push('\n');
    }
    cmds
}

/// Runs debugfs read-only on `img` with `cmds`, returning what it printed.
fn debugfs(session: &SessionDir, img: &Path, cmds: &str) -> Result<String> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = format!(
        "debugfs-{}.cmds",
        CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut f = session.create_file(&name)?;
    f.write_all(cmds.as_bytes())?;
    drop(f);
    let cmd_path = session.join(&name);
    let out = Command::new("debugfs")
        .arg("-f")
        .arg(&cmd_path)
        .arg(img)
        .env("DEBUGFS_PAGER", "__none__")
        .env("PAGER", "cat")
        .output()
        .context("cannot run debugfs (e2fsprogs): install e2fsprogs")?;
    let _ = std::fs::remove_file(&cmd_path);
    if !out.status.success() {
        bail!(
            "debugfs exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `icheck`'s answer: block -> inode, for the blocks some inode owns.
pub(crate) fn parse_icheck(out: &str) -> HashMap<u64, u64> {
    out.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let b = it.next()?.parse().ok()?;
            let i = it.next()?.parse().ok()?;
            Some((b, i))
        })
        .collect()
}

/// `ncheck`'s answer: inode -> its first path (relative to the root).
pub(crate) fn parse_ncheck(out: &str) -> HashMap<u64, String> {
    let mut paths = HashMap::new();
    let mut inside = false;
    for l in out.lines() {
        if l.starts_with("debugfs:") {
            inside = l
                .trim_start_matches("debugfs:")
                .trim()
                .starts_with("ncheck");
            continue;
        }
        if !inside {
            continue;
        }
        let Some((ino, path)) = l.split_once('\t') else {
            continue;
        };
        if let Ok(ino) = ino.trim().parse::<u64>() {
            paths
                .entry(ino)
                .or_insert_with(|| path.trim_start_matches('/').to_string());
        }
    }
    paths
}

/// Where an inode's blocks sit, from `stat`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Layout {
    pub(crate) regular: bool,
    pub(crate) directory: bool,
    /// (first logical block, first physical block, count) of each mapped range.
    pub(crate) ranges: Vec<(u64, u64, u64)>,
}

impl Layout {
    /// The byte offset in the file of physical block `b`, if it holds the file's data.
    pub(crate) fn offset_of(&self, b: u64) -> Option<u64> {
        self.ranges
            .iter()
            .find(|&&(_, p, n)| b >= p && b < p + n)
            .map(|&(l, p, _)| (l + b - p) * MAP_BLOCK)
    }
}

/// Each `stat`'s inode, type and block map (ext4's `EXTENTS:` and ext3's `BLOCKS:`
/// share one form: `(L-M):P-Q` or `(L):P`; `(IND):P`, `(ETB0):P` are the file's own
/// metadata, not its data).
pub(crate) fn parse_stats(out: &str) -> HashMap<u64, Layout> {
    let mut all = HashMap::new();
    let mut cur: Option<(u64, Layout)> = None;
    let mut in_map = false;
    for l in out.lines() {
        if l.starts_with("debugfs:") {
            if let Some((i, lay)) = cur.take() {
                all.insert(i, lay);
            }
            in_map = false;
            continue;
        }
        if let Some(rest) = l.strip_prefix("Inode: ") {
            if let Some((i, lay)) = cur.take() {
                all.insert(i, lay);
            }
            let ino = rest.split_whitespace().next().and_then(|s| s.parse().ok());
            let ty = rest.split("Type:").nth(1).map(|t| t.trim_start());
            if let Some(ino) = ino {
                cur = Some((
                    ino,
                    Layout {
                        regular: ty.is_some_and(|t| t.starts_with("regular")),
                        directory: ty.is_some_and(|t| t.starts_with("directory")),
                        ranges: Vec::new(),
                    },
                ));
            }
            in_map = false;
            continue;
        }
        if l.starts_with("EXTENTS:") || l.starts_with("BLOCKS:") {
            in_map = true;
            continue;
        }
        if !in_map || l.starts_with("TOTAL:") {
            in_map = false;
            continue;
        }
        let Some((_, lay)) = cur.as_mut() else {
            continue;
        };
        for item in l.split(", ") {
            if let Some(r) = parse_range(item.trim()) {
                lay.ranges.push(r);
            }
        }
    }
    if let Some((i, lay)) = cur {
        all.insert(i, lay);
    }
    all
}

/// `(L-M):P-Q` or `(L):P` -> (L, P, count); a label in the parentheses gives `None`.
fn parse_range(item: &str) -> Option<(u64, u64, u64)> {
    let (logical, physical) = item.strip_prefix('(')?.split_once("):")?;
    let physical = physical.split_whitespace().next()?;
    let pair = |s: &str| -> Option<(u64, u64)> {
        match s.split_once('-') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => {
                let v = s.parse().ok()?;
                Some((v, v))
            }
        }
    };
    let (l0, l1) = pair(logical)?;
    let (p0, p1) = pair(physical)?;
    if l1 < l0 || p1 - p0 != l1 - l0 {
        return None;
    }
    Some((l0, p0, l1 - l0 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_maps_of_ext4_and_ext3_give_offsets_and_skip_metadata_blocks() {
        let out = "debugfs: stat <13>\nInode: 13   Type: regular    Mode:  0644   Flags: 0x80000\nEXTENTS:\n(ETB0):500, (0-2):2066-2068, (3):3000\ndebugfs: stat <12>\nInode: 12   Type: directory    Mode:  0755\nEXTENTS:\n(0):10\ndebugfs: stat <14>\nInode: 14   Type: regular    Mode:  0644\nBLOCKS:\n(0-11):100-111, (IND):112, (12-13):113-114\nTOTAL: 15\n";
        let s = parse_stats(out);
        let f = &s[&13];
        assert!(f.regular && !f.directory);
        assert_eq!(f.offset_of(2066), Some(0));
        assert_eq!(f.offset_of(2068), Some(2 * MAP_BLOCK));
        assert_eq!(f.offset_of(3000), Some(3 * MAP_BLOCK));
        assert_eq!(f.offset_of(500), None, "an extent-tree block is not data");
        assert!(s[&12].directory);
        let g = &s[&14];
        assert_eq!(g.offset_of(112), None);
        assert_eq!(g.offset_of(113), Some(12 * MAP_BLOCK));
    }

    #[test]
    fn icheck_and_ncheck_answers_are_read_as_debugfs_prints_them() {
        let out = "debugfs: icheck 1 2 100\nBlock\tInode number\n1\t<block not found>\n2\t7\n100\t13\ndebugfs: ncheck 12 13\nInode\tPathname\n12\t//d\n13\t/d/f\n13\t/d/hardlink\n";
        let owners = parse_icheck(out);
        assert_eq!(owners.get(&1), None);
        assert_eq!(owners[&2], 7);
        assert_eq!(owners[&100], 13);
        let paths = parse_ncheck(out);
        assert_eq!(paths[&12], "d");
        assert_eq!(paths[&13], "d/f");
    }

    #[test]
    fn runs_merge_only_where_the_file_offsets_follow_on_and_lookups_step_through_them() {
        let mut runs = Vec::new();
        let blocks: BTreeSet<u64> = [10, 11, 12, 13, 20].into_iter().collect();
        push_runs(&mut runs, 0, &blocks, |b| match b {
            10 | 11 => BlockUse::Data {
                file: 0,
                offset: Some((b - 10) * MAP_BLOCK),
            },
            // The file goes on elsewhere: a new run.
            12 => BlockUse::Data {
                file: 0,
                offset: Some(9 * MAP_BLOCK),
            },
            13 => BlockUse::Journal,
            _ => BlockUse::Unowned,
        });
        assert_eq!(runs.len(), 4, "{runs:?}");
        let map = BlockMap {
            version: BLOCK_MAP_VERSION,
            files: vec!["f".into()],
            runs,
            ..BlockMap::default()
        }
        .with_index();
        assert_eq!(
            map.lookup(0, 11),
            Some(BlockUse::Data {
                file: 0,
                offset: Some(MAP_BLOCK)
            })
        );
        assert_eq!(
            map.lookup(0, 12),
            Some(BlockUse::Data {
                file: 0,
                offset: Some(9 * MAP_BLOCK)
            })
        );
        assert_eq!(map.lookup(0, 13), Some(BlockUse::Journal));
        assert_eq!(map.lookup(0, 14), None);
        assert_eq!(map.lookup(1, 10), None);
        let back: BlockMap = serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
        assert_eq!(back.with_index().lookup(0, 11), map.lookup(0, 11));
    }
}
