//! A crash state judged in user space: the journal replayed in memory
//! ([`super::jbd2_replay`]), the promised files read by [`super::inode_walk`] (or
//! with `ext4-view` where the walk declines), every promise compared. No device, no
//! mount, no fsck: a few milliseconds where the kernel's path takes tens. The kernel stays the judge of record (docs/crash.md, "The user-space
//! verdict"): every state this path cannot call ok goes to the kernel, so does a
//! sample of those it does, and one disagreement turns it off for the trial.
//!
//! What it covers: ext3 and ext4 with 4 KiB blocks, an internal journal (extent- or
//! block-mapped) or an external one, checksums v3 or none. Anything else (fast
//! commits, orphan inodes the kernel's mount would process, a checksum that fails, a
//! feature `ext4-view` does not read) is a [`Fast::Fallback`] with its reason.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Result};
use sha2::{Digest, Sha256};

use super::inode_walk::{Walk, Walked};
use super::jbd2_replay::{self, crc32c_raw, JournalSource, Replay, Revokes};
use super::oracle::{check_promises, PromisedTree, Promises};
use super::outcome_memo::{OutcomeMemo, Seen};
use super::promise_check::digest_promises;
use super::state_bytes::{RegionAt, StateBytes, BLOCK};

/// The user-space path's conclusion on one state.
#[derive(Debug, Clone, PartialEq)]
pub enum Fast {
    /// Every promise held in the replayed state.
    Ok {
        checked: u64,
        /// Committed transactions the replay walked.
        transactions: u32,
        /// SHA-256 of every byte the load and the promises read: two states with the
        /// same outcome gave the check the same input.
        outcome: [u8; 32],
        /// The state repeated a kept outcome ([`OutcomeMemo`]): its verdict was not
        /// read again.
        repeated: bool,
    },
    /// A promise broke (the kernel decides: every such state is audited).
    Broken { evidence: Vec<String> },
    /// The state is one this path does not judge as the kernel would: why.
    Fallback(String),
}

/// The variable that breaks the path on purpose, to show the audit catches it.
pub const BREAK_VAR: &str = "JBENCH_FAST_VERDICT_BREAK";

/// Whether the replay skips revoke records on purpose (`JBENCH_FAST_VERDICT_BREAK=
/// skip-revokes`): a known-wrong replay for the test that the kernel's audit catches
/// the user-space path when it is wrong. Never set it to judge a run. Read once per
/// process: every state of a run replays alike.
pub fn revokes() -> Revokes {
    static READ: std::sync::OnceLock<Revokes> = std::sync::OnceLock::new();
    *READ.get_or_init(|| match std::env::var(BREAK_VAR) {
        Ok(v) if v.trim() == "skip-revokes" => Revokes::SkippedOnPurpose,
        _ => Revokes::Honoured,
    })
}

const SB_OFFSET: usize = 1024;
const EXT4_MAGIC: u16 = 0xEF53;
const COMPAT_HAS_JOURNAL: u32 = 0x4;
const COMPAT_ORPHAN_FILE: u32 = 0x1000;
const INCOMPAT_RECOVER: u32 = 0x4;
const INCOMPAT_64BIT: u32 = 0x80;
const RO_COMPAT_METADATA_CSUM: u32 = 0x400;
const RO_COMPAT_ORPHAN_PRESENT: u32 = 0x10000;
const EXTENTS_FL: u32 = 0x80000;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// Judges the state: `fs` and, for an external journal, `journal` are its regions.
pub fn judge(
    state: Arc<StateBytes>,
    fs: RegionAt,
    journal: Option<RegionAt>,
    p: &Promises,
) -> Fast {
    judge_once(state, fs, journal, p, None)
}

/// [`judge`], comparing the state with the ok outcomes `memo` keeps first, and keeping
/// its own when it is new.
pub fn judge_once(
    state: Arc<StateBytes>,
    fs: RegionAt,
    journal: Option<RegionAt>,
    p: &Promises,
    memo: Option<&OutcomeMemo>,
) -> Fast {
    match judge_or_fall_back(state, fs, journal, p, memo) {
        Ok(f) => f,
        Err(e) => Fast::Fallback(format!("{e:#}")),
    }
}

fn judge_or_fall_back(
    state: Arc<StateBytes>,
    fs: RegionAt,
    journal: Option<RegionAt>,
    p: &Promises,
    memo: Option<&OutcomeMemo>,
) -> Result<Fast> {
    let block0 = state.region_block(&fs, 0)?;
    let sb = &block0[SB_OFFSET..SB_OFFSET + 1024];
    if le16(sb, 0x38) != EXT4_MAGIC {
        bail!("no ext2/3/4 superblock");
    }
    if 1024u64 << le32(sb, 0x18) != BLOCK {
        bail!("a block size other than 4 KiB");
    }
    let (blocks, transactions) = match replay(&state, fs, journal, sb)? {
        Ok(r) => r,
        Err(corrupt) => return Ok(corrupt),
    };
    let mut first = blocks.get(&0).cloned().unwrap_or(block0);
    unjournal(&mut first)?;
    let outcome = Arc::new(Mutex::new(BTreeSet::new()));
    let reader = Replayed {
        state,
        fs,
        blocks: Arc::new(blocks),
        first: Arc::new(first),
        outcome: outcome.clone(),
    };
    if let Some(seen) = memo.and_then(|m| m.find(p, &mut |b, dst| reader.block_bytes(b, dst))) {
        return Ok(Fast::Ok {
            checked: seen.checked,
            transactions,
            outcome: seen.outcome,
            repeated: true,
        });
    }
    let raw = reader.clone();
    let mut evidence = read_promises(reader, p)?;
    if !evidence.is_empty() {
        evidence.insert(0, "the user-space path found broken promises:".into());
        return Ok(Fast::Broken { evidence });
    }
    let read: Vec<u64> = outcome
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .copied()
        .collect();
    let seen = outcome_of(&raw, read, p)?;
    let outcome = seen.outcome;
    if let Some(m) = memo {
        m.remember(seen);
    }
    Ok(Fast::Ok {
        checked: p.items.len() as u64,
        transactions,
        outcome,
        repeated: false,
    })
}

/// The broken promises of the replayed state: read by the walk where it reads every
/// promised path as the kernel would, else through `ext4-view`.
fn read_promises(reader: Replayed, p: &Promises) -> Result<Vec<String>> {
    let read = |at: u64, dst: &mut [u8]| reader.fill(at, dst).map_err(anyhow::Error::msg);
    let sb = reader.first[SB_OFFSET..SB_OFFSET + 1024].to_vec();
    let paths = p.items.iter().map(|i| i.path.as_str());
    if let Ok(walked) = Walked::resolve(&read, &sb, paths)? {
        // A path through a deleted inode reads as unreadable, with the kernel's reason.
        let (missing, different) = check_promises(&walked, p);
        return Ok(missing.into_iter().chain(different).collect());
    }
    let view = ext4_view::Ext4::load(Box::new(reader.clone()))
        .map_err(|e| anyhow::anyhow!("ext4-view cannot load the replayed state: {e}"))?;
    let (missing, different) = check_promises(&View(view), p);
    let mut evidence: Vec<String> = missing.into_iter().chain(different).collect();
    if evidence.is_empty() {
        let mut walk = Walk::new(&read, &sb);
        for promise in &p.items {
            if let Some(why) = walk.deleted_on_path(&promise.path)? {
                evidence.push(format!("{}: unreadable: {why}", promise.path));
            }
        }
    }
    Ok(evidence)
}

/// The blocks a replay writes (block number, bytes) and the transactions it walked.
type ReplayedBlocks = (BTreeMap<u64, Vec<u8>>, u32);

/// The replay a mount would make of the state's journal (nothing without
/// `needs_recovery`), or the state's verdict when the kernel would refuse the journal.
fn replay(
    state: &StateBytes,
    fs: RegionAt,
    journal: Option<RegionAt>,
    sb: &[u8],
) -> Result<std::result::Result<ReplayedBlocks, Fast>> {
    if le32(sb, 0x5C) & COMPAT_HAS_JOURNAL == 0 || le32(sb, 0x60) & INCOMPAT_RECOVER == 0 {
        // Without RECOVER the kernel skips the log whatever it holds.
        return Ok(Ok((BTreeMap::new(), 0)));
    }
    let mut src: Box<dyn JournalSource + '_> = match journal {
        Some(j) => Box::new(External { state, region: j }),
        None => Box::new(Internal::new(state, fs, sb)?),
    };
    Ok(
        match jbd2_replay::replay_with(src.as_mut(), BLOCK as usize, revokes())? {
            Replay::Clean => Ok((BTreeMap::new(), 0)),
            Replay::Blocks {
                blocks,
                transactions,
            } => Ok((blocks, transactions)),
            Replay::Unsupported(why) => bail!("{why}"),
            Replay::Corrupt(why) => Err(Fast::Broken {
                evidence: vec![
                    "the user-space replay found the journal corrupt:".into(),
                    why,
                ],
            }),
        },
    )
}

/// An ok verdict's outcome: every block `read`, once, in block order, with its bytes
/// (the same blocks with the same bytes are the same input to the load and the
/// comparison), and the promises it was judged under, digested.
fn outcome_of(raw: &Replayed, read: Vec<u64>, p: &Promises) -> Result<Seen> {
    let mut h = Sha256::new();
    let mut blocks = Vec::with_capacity(read.len());
    for b in read {
        let mut buf = vec![0u8; BLOCK as usize].into_boxed_slice();
        raw.block_bytes(b, &mut buf).map_err(anyhow::Error::msg)?;
        h.update(b.to_le_bytes());
        h.update(&buf);
        blocks.push((b, buf));
    }
    digest_promises(&mut h, p);
    Ok(Seen::new(p, blocks, h.finalize().into()))
}

/// The superblock (in block 0) as a journal-less file system's, once replayed: what
/// `ext4-view` then reads without a journal of its own to replay.
fn unjournal(block0: &mut [u8]) -> Result<()> {
    let sb = &mut block0[SB_OFFSET..SB_OFFSET + 1024];
    if le32(sb, 0x64) & RO_COMPAT_METADATA_CSUM != 0
        && crc32c_raw(!0, &sb[..0x3FC]) != le32(sb, 0x3FC)
    {
        // Checked before it is rewritten below: the kernel refuses such a mount.
        bail!("a superblock whose checksum fails");
    }
    if le32(sb, 0xE8) != 0 {
        bail!("orphan inodes, which the kernel's mount processes");
    }
    if le32(sb, 0x5C) & COMPAT_ORPHAN_FILE != 0 && le32(sb, 0x64) & RO_COMPAT_ORPHAN_PRESENT != 0 {
        bail!("orphan-file entries, which the kernel's mount processes");
    }
    let compat = le32(sb, 0x5C) & !COMPAT_HAS_JOURNAL;
    let incompat = le32(sb, 0x60) & !INCOMPAT_RECOVER;
    sb[0x5C..0x60].copy_from_slice(&compat.to_le_bytes());
    sb[0x60..0x64].copy_from_slice(&incompat.to_le_bytes());
    sb[0xE0..0xE4].fill(0);
    if le32(sb, 0x64) & RO_COMPAT_METADATA_CSUM != 0 {
        let c = crc32c_raw(!0, &sb[..0x3FC]);
        sb[0x3FC..0x400].copy_from_slice(&c.to_le_bytes());
    }
    Ok(())
}

/// The state's file system with the replay over it, as the walk and `ext4-view` read
/// it.
#[derive(Clone)]
struct Replayed {
    state: Arc<StateBytes>,
    fs: RegionAt,
    blocks: Arc<BTreeMap<u64, Vec<u8>>>,
    first: Arc<Vec<u8>>,
    /// The blocks read so far, for the outcome's digest.
    outcome: Arc<Mutex<BTreeSet<u64>>>,
}

impl ext4_view::Ext4Read for Replayed {
    fn read(
        &mut self,
        start: u64,
        dst: &mut [u8],
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync + 'static>> {
        self.fill(start, dst)?;
        Ok(())
    }
}

impl Replayed {
    /// `dst` from byte `start` of the replayed file system; its blocks noted for the
    /// outcome.
    fn fill(&self, start: u64, dst: &mut [u8]) -> std::result::Result<(), String> {
        if start + dst.len() as u64 > self.fs.size {
            return Err(format!("read past the file system's end at {start}"));
        }
        let mut done = 0usize;
        let mut seen = self.outcome.lock().unwrap_or_else(|e| e.into_inner());
        while done < dst.len() {
            let at = start + done as u64;
            let block = at / BLOCK;
            let within = (at % BLOCK) as usize;
            let n = (BLOCK as usize - within).min(dst.len() - done);
            let out = &mut dst[done..done + n];
            match (block, self.blocks.get(&block)) {
                (0, _) => out.copy_from_slice(&self.first[within..within + n]),
                (_, Some(b)) => out.copy_from_slice(&b[within..within + n]),
                _ => self
                    .state
                    .read(self.fs.disk, self.fs.offset + at, out)
                    .map_err(|e| format!("{e:#}"))?,
            }
            seen.insert(block);
            done += n;
        }
        Ok(())
    }

    /// Block `b` whole, as the reader sees it.
    fn block_bytes(&self, b: u64, dst: &mut [u8]) -> std::result::Result<(), String> {
        match (b, self.blocks.get(&b)) {
            (0, _) => dst.copy_from_slice(&self.first),
            (_, Some(x)) => dst.copy_from_slice(x),
            _ => self
                .state
                .read(self.fs.disk, self.fs.offset + b * BLOCK, dst)
                .map_err(|e| format!("{e:#}"))?,
        }
        Ok(())
    }
}

/// An external journal: its superblock in block 1 of its device (after the ext2
/// superblock of `mke2fs -O journal_dev`), its blocks numbered from the device's start.
struct External<'a> {
    state: &'a StateBytes,
    region: RegionAt,
}

impl JournalSource for External<'_> {
    fn superblock(&mut self) -> Result<Vec<u8>> {
        self.block(1)
    }
    fn block(&mut self, n: u64) -> Result<Vec<u8>> {
        if (n + 1) * BLOCK > self.region.size {
            bail!("journal block {n} is past the journal device's end");
        }
        self.state.region_block(&self.region, n)
    }
}

/// The journal inside the file system (inode 8), mapped through its extents or, on
/// ext3, its block map.
struct Internal<'a> {
    state: &'a StateBytes,
    fs: RegionAt,
    map: Vec<(u64, u64, u64)>,
}

impl<'a> Internal<'a> {
    fn new(state: &'a StateBytes, fs: RegionAt, sb: &[u8]) -> Result<Self> {
        let journal_ino = le32(sb, 0xE0);
        if journal_ino == 0 {
            bail!("an internal journal without an inode");
        }
        let ipg = le32(sb, 0x28) as u64;
        let inode_size = le16(sb, 0x58) as u64;
        let desc_size = if le32(sb, 0x60) & INCOMPAT_64BIT != 0 {
            le16(sb, 0xFE).max(32) as u64
        } else {
            32
        };
        let index = journal_ino as u64 - 1;
        let group = index / ipg;
        let gdt = state.region_block(&fs, 1 + group * desc_size / BLOCK)?;
        let d = ((group * desc_size) % BLOCK) as usize;
        let mut table = le32(&gdt, d + 8) as u64;
        if desc_size >= 64 {
            table |= (le32(&gdt, d + 0x28) as u64) << 32;
        }
        let at = table * BLOCK + (index % ipg) * inode_size;
        let mut inode = vec![0u8; inode_size as usize];
        state.read(fs.disk, fs.offset + at, &mut inode)?;
        let map = if le32(&inode, 0x20) & EXTENTS_FL != 0 {
            extents(&inode[0x28..0x28 + 60])?
        } else {
            block_map(state, fs, &inode[0x28..0x28 + 60])?
        };
        Ok(Self { state, fs, map })
    }
}

/// A depth-0 extent tree: `(logical, physical, length)` runs.
fn extents(root: &[u8]) -> Result<Vec<(u64, u64, u64)>> {
    if le16(root, 0) != 0xF30A {
        bail!("the journal inode's extent header is not valid");
    }
    if le16(root, 6) != 0 {
        bail!("the journal inode's extent tree is deeper than its inode");
    }
    Ok((0..le16(root, 2) as usize)
        .map(|i| {
            let e = &root[12 + 12 * i..24 + 12 * i];
            let len = (le16(e, 4) as u64) & 0x7FFF;
            let phys = ((le16(e, 6) as u64) << 32) | le32(e, 8) as u64;
            (le32(e, 0) as u64, phys, len)
        })
        .collect())
}

/// ext3's block map: 12 direct blocks, then one indirect and one double-indirect.
fn block_map(state: &StateBytes, fs: RegionAt, i_block: &[u8]) -> Result<Vec<(u64, u64, u64)>> {
    let ptrs = |b: &[u8]| -> Vec<u64> { (0..b.len() / 4).map(|i| le32(b, 4 * i) as u64).collect() };
    let mut phys: Vec<u64> = ptrs(&i_block[..48]);
    let ind = le32(i_block, 48) as u64;
    if ind != 0 {
        phys.extend(ptrs(&state.region_block(&fs, ind)?));
    }
    let dind = le32(i_block, 52) as u64;
    if dind != 0 {
        for p in ptrs(&state.region_block(&fs, dind)?) {
            if p == 0 {
                break;
            }
            phys.extend(ptrs(&state.region_block(&fs, p)?));
        }
    }
    if le32(i_block, 56) != 0 {
        bail!("a journal reaching into triple-indirect blocks");
    }
    Ok(phys
        .into_iter()
        .enumerate()
        .take_while(|(_, p)| *p != 0)
        .map(|(l, p)| (l as u64, p, 1))
        .collect())
}

impl JournalSource for Internal<'_> {
    fn superblock(&mut self) -> Result<Vec<u8>> {
        self.block(0)
    }
    fn block(&mut self, n: u64) -> Result<Vec<u8>> {
        let Some(&(l, p, _)) = self.map.iter().find(|(l, _, len)| n >= *l && n < l + len) else {
            bail!("journal block {n} is not mapped by the journal inode");
        };
        self.state.region_block(&self.fs, p + (n - l))
    }
}

/// The promises' files as `ext4-view` reads them.
struct View(ext4_view::Ext4);

fn io(e: ext4_view::Ext4Error) -> std::io::Error {
    match e {
        ext4_view::Ext4Error::NotFound => std::io::ErrorKind::NotFound.into(),
        e => std::io::Error::other(e.to_string()),
    }
}

impl View {
    fn abs(rel: &str) -> String {
        format!("/{}", rel.trim_start_matches('/'))
    }
}

impl PromisedTree for View {
    fn read(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        self.0.read(Self::abs(rel).as_str()).map_err(io)
    }
    fn exists(&self, rel: &str) -> std::io::Result<()> {
        self.0
            .symlink_metadata(Self::abs(rel).as_str())
            .map(|_| ())
            .map_err(io)
    }
    fn size(&self, rel: &str) -> std::io::Result<u64> {
        self.0
            .metadata(Self::abs(rel).as_str())
            .map(|m| m.len())
            .map_err(io)
    }
    fn read_at(&self, rel: &str, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
        let mut f = self.0.open(Self::abs(rel).as_str()).map_err(io)?;
        f.seek_to(offset).map_err(io)?;
        let mut out = vec![0u8; len as usize];
        let mut done = 0;
        while done < out.len() {
            let n = f.read_bytes(&mut out[done..]).map_err(io)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::oracle::{Expect, Promise};
    use std::process::Command;

    /// An ext4 image (4 KiB blocks, an internal journal) made by mke2fs in a file, with
    /// `files` written by debugfs: no mount, no root.
    fn image(dir: &std::path::Path, files: &[(&str, &[u8])]) -> std::fs::File {
        let img = dir.join("fs.img");
        let ok = Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-b", "4096", "-J", "size=4"])
            .arg(&img)
            .arg("16M")
            .status()
            .expect("mke2fs (e2fsprogs) is installed");
        assert!(ok.success());
        for (name, data) in files {
            let src = dir.join(format!("src-{name}"));
            std::fs::write(&src, data).unwrap();
            let ok = Command::new("debugfs")
                .arg("-w")
                .arg("-R")
                .arg(format!("write {} {name}", src.display()))
                .arg(&img)
                .output()
                .unwrap();
            assert!(ok.status.success(), "{ok:?}");
        }
        std::fs::File::open(&img).unwrap()
    }

    fn promises(items: Vec<(&str, Expect)>) -> Promises {
        Promises {
            items: items
                .into_iter()
                .map(|(p, e)| Promise {
                    path: p.into(),
                    expect: e,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn promises_are_read_back_from_an_image_without_a_mount() {
        let d = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let f = image(d.path(), &[("kept", &data), ("other", b"x")]);
        let state = Arc::new(StateBytes::of_images(vec![f], vec!["fs".into()]).unwrap());
        let fs = RegionAt {
            disk: 0,
            offset: 0,
            size: 16 << 20,
        };
        let judge_with = |items| judge(state.clone(), fs, None, &promises(items));
        let whole = judge_with(vec![("kept", Expect::Bytes(data.clone().into()))]);
        let Fast::Ok {
            checked, outcome, ..
        } = whole
        else {
            panic!("{whole:?}")
        };
        assert_eq!(checked, 1);
        let range = Expect::Range {
            offset: 4096,
            len: 100,
            bytes: Some(data[4096..4196].to_vec().into()),
        };
        assert!(matches!(judge_with(vec![("kept", range)]), Fast::Ok { .. }));
        let again = judge_with(vec![("kept", Expect::Bytes(data.clone().into()))]);
        assert!(
            matches!(again, Fast::Ok { outcome: o, .. } if o == outcome),
            "same input, same outcome"
        );
        let mut wrong = data.clone();
        wrong[5000] ^= 1;
        let broken = judge_with(vec![
            ("kept", Expect::Bytes(wrong.into())),
            ("gone", Expect::Exists),
        ]);
        let Fast::Broken { evidence } = broken else {
            panic!("{broken:?}")
        };
        assert!(
            evidence
                .iter()
                .any(|e| e.contains("kept: ") && e.contains("differs from byte 5000")),
            "{evidence:?}"
        );
        assert!(
            evidence.iter().any(|e| e == "gone: missing"),
            "{evidence:?}"
        );
    }

    #[test]
    fn what_the_path_does_not_read_falls_back_with_its_reason() {
        let d = tempfile::tempdir().unwrap();
        let f = image(d.path(), &[]);
        let state = Arc::new(StateBytes::of_images(vec![f], vec!["fs".into()]).unwrap());
        // Not a file system: nothing where the superblock should be.
        let off = RegionAt {
            disk: 0,
            offset: 8 << 20,
            size: 8 << 20,
        };
        let got = judge(state, off, None, &promises(vec![]));
        assert!(
            matches!(&got, Fast::Fallback(w) if w.contains("superblock")),
            "{got:?}"
        );
    }
}
