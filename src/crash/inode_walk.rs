//! The promised files read straight from the replayed image's inodes and directory
//! blocks, as the kernel's lookup and read would find them: each directory read once
//! per state, each inode, directory block, group descriptor and extent block checked
//! against its checksum, and nothing read that the check does not need.
//!
//! `ext4-view` resolves every path from the root and reads eight blocks on each
//! cache miss: with 200 promised files in one directory that was 7-18 ms a state, and
//! its read-ahead put blocks the check never needed into the outcome's digest. This
//! walk reads only what a lookup reads. What it does not read as the kernel does (a
//! hashed directory, inline data, encryption, a feature it does not know, any block
//! that fails a check) it declines, and the state goes through `ext4-view` as before
//! ([`Declined`]); the kernel audits either way.
//!
//! It also makes one refusal `ext4-view` does not: a path through a directory entry
//! whose inode is deleted or unallocated. `ext4_lookup` answers it with "deleted
//! inode referenced" and `EFSCORRUPTED`, whatever the inode still holds
//! ([`Walk::deleted_on_path`]).

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;

use super::jbd2_replay::crc32c_raw;
use super::promise_check::PromisedTree;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

const BLOCK: u64 = 4096;
const ROOT: u32 = 2;
const EXTENTS_FL: u32 = 0x80000;
/// Flags of an inode the walk does not read: encrypted, hashed directory, verity,
/// inline data, case-folded.
const DECLINED_FLAGS: u32 = 0x800 | 0x1000 | 0x100000 | 0x10000000 | 0x40000000;
const INCOMPAT_64BIT: u32 = 0x80;
const INCOMPAT_CSUM_SEED: u32 = 0x2000;
/// filetype, extents, 64bit, mmp, flex_bg, csum_seed, large_dir: what the walk reads.
/// `recover` is cleared by the replay; anything else (meta_bg, inline_data, encrypt,
/// casefold, ...) goes to `ext4-view`.
const INCOMPAT_READ: u32 = 0x2 | 0x40 | 0x80 | 0x100 | 0x200 | 0x2000 | 0x4000;
const RO_COMPAT_GDT_CSUM: u32 = 0x10;
const RO_COMPAT_BIGALLOC: u32 = 0x200;
const RO_COMPAT_METADATA_CSUM: u32 = 0x400;
/// Deepest extent tree followed (ext4's own limit is 5).
const MAX_DEPTH: u16 = 5;
const S_IFMT: u16 = 0xF000;
const S_IFDIR: u16 = 0x4000;
const S_IFREG: u16 = 0x8000;
const S_IFLNK: u16 = 0xA000;

/// Reads `dst.len()` bytes at a byte offset of the replayed file system.
pub type ReadAt<'a> = &'a dyn Fn(u64, &mut [u8]) -> Result<()>;

/// Why the walk left a state to `ext4-view`.
#[derive(Debug)]
pub struct Declined(pub String);

fn declined<T>(why: impl Into<String>) -> Result<T> {
    Err(anyhow::Error::msg(why.into()).context(DECLINED))
}
const DECLINED: &str = "the walk declined";

pub struct Walk<'a> {
    read: ReadAt<'a>,
    /// Each directory read once: its entries by name.
    dirs: HashMap<u32, HashMap<Vec<u8>, u32>>,
    inodes_per_group: u64,
    inodes_count: u64,
    blocks_count: u64,
    inode_size: u64,
    desc_size: u64,
    /// The file system's checksum seed, when it has metadata checksums.
    seed: Option<u32>,
}

impl<'a> Walk<'a> {
    /// `sb` is the (replayed) superblock's 1024 bytes.
    pub fn new(read: ReadAt<'a>, sb: &[u8]) -> Self {
        let incompat = le32(sb, 0x60);
        let seed = (le32(sb, 0x64) & RO_COMPAT_METADATA_CSUM != 0).then(|| {
            if incompat & INCOMPAT_CSUM_SEED != 0 {
                le32(sb, 0x270)
            } else {
                crc32c_raw(!0, &sb[0x68..0x78])
            }
        });
        let mut blocks_count = le32(sb, 0x4) as u64;
        if incompat & INCOMPAT_64BIT != 0 {
            blocks_count |= (le32(sb, 0x150) as u64) << 32;
        }
        Self {
            read,
            dirs: HashMap::new(),
            inodes_per_group: le32(sb, 0x28) as u64,
            inodes_count: le32(sb, 0x0) as u64,
            blocks_count,
            inode_size: le16(sb, 0x58) as u64,
            desc_size: if incompat & INCOMPAT_64BIT != 0 {
                le16(sb, 0xFE).max(32) as u64
            } else {
                32
            },
            seed,
        }
    }

    fn bytes(&self, at: u64, len: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; len as usize];
        (self.read)(at, &mut b)?;
        Ok(b)
    }

    fn block(&self, b: u64) -> Result<Vec<u8>> {
        if b == 0 || b >= self.blocks_count {
            return declined(format!("block {b} outside the file system"));
        }
        self.bytes(b * BLOCK, BLOCK)
    }

    fn inode(&self, ino: u32) -> Result<Vec<u8>> {
        if ino == 0 || ino as u64 > self.inodes_count {
            return declined(format!("inode {ino} outside the inode table"));
        }
        let index = ino as u64 - 1;
        let group = index / self.inodes_per_group;
        let d = self.bytes(BLOCK + group * self.desc_size, self.desc_size)?;
        let mut table = le32(&d, 8) as u64;
        if self.desc_size >= 64 {
            table |= (le32(&d, 0x28) as u64) << 32;
        }
        let at = table * BLOCK + (index % self.inodes_per_group) * self.inode_size;
        self.bytes(at, self.inode_size)
    }

    /// The inode's checksum seed (its number and generation over the file system's).
    fn inode_seed(&self, ino: u32, inode: &[u8]) -> Option<u32> {
        self.seed.map(|s| {
            let s = crc32c_raw(s, &ino.to_le_bytes());
            crc32c_raw(s, &inode[0x64..0x68])
        })
    }

    /// Whether inode `ino`'s checksum holds as `ext4_inode_csum_verify` computes it:
    /// every byte with the checksum's own (the low half at 0x7C, the high half at 0x82
    /// when the extra fields reach it) read as zeros.
    fn check_inode(&self, ino: u32, inode: &[u8]) -> Result<()> {
        let Some(seed) = self.inode_seed(ino, inode) else {
            return Ok(());
        };
        let mut zeroed = inode.to_vec();
        zeroed[0x7C..0x7E].fill(0);
        let mut want = le16(inode, 0x7C) as u32;
        let has_hi = inode.len() > 128 && le16(inode, 0x80) >= 4;
        if has_hi {
            zeroed[0x82..0x84].fill(0);
            want |= (le16(inode, 0x82) as u32) << 16;
        }
        let mut got = crc32c_raw(seed, &zeroed);
        if !has_hi {
            got &= 0xFFFF;
        }
        if got != want {
            return declined(format!("inode {ino} fails its checksum"));
        }
        Ok(())
    }

    /// A file's or directory's blocks: (logical, physical, length, unwritten) runs in
    /// logical order, extent blocks checked.
    fn runs(&self, ino: u32, inode: &[u8]) -> Result<Vec<Run>> {
        let root = &inode[0x28..0x28 + 60];
        let mut out = Vec::new();
        if le32(inode, 0x20) & EXTENTS_FL != 0 {
            let seed = self.inode_seed(ino, inode);
            self.extent_node(root, None, seed, &mut out)?;
        } else {
            for i in 0..12u64 {
                push_mapped(&mut out, i, le32(root, 4 * i as usize) as u64);
            }
            let ind = le32(root, 48) as u64;
            if ind != 0 {
                self.indirect(ind, 12, 1, &mut out)?;
            }
            let dind = le32(root, 52) as u64;
            if dind != 0 {
                self.indirect(dind, 12 + 1024, 2, &mut out)?;
            }
            if le32(root, 56) != 0 {
                return declined("a triply indirect block map");
            }
        }
        if out.iter().any(|r| r.phys + r.len > self.blocks_count) {
            return declined(format!("inode {ino} maps blocks outside the file system"));
        }
        Ok(out)
    }

    fn indirect(&self, b: u64, first: u64, levels: u32, out: &mut Vec<Run>) -> Result<()> {
        let block = self.block(b)?;
        let span = 1024u64.pow(levels - 1);
        for i in 0..1024u64 {
            let child = le32(&block, 4 * i as usize) as u64;
            if child == 0 {
                continue;
            }
            let logical = first + i * span;
            if levels == 1 {
                push_mapped(out, logical, child);
            } else {
                self.indirect(child, logical, levels - 1, out)?;
            }
        }
        Ok(())
    }

    fn extent_node(
        &self,
        node: &[u8],
        depth: Option<u16>,
        seed: Option<u32>,
        out: &mut Vec<Run>,
    ) -> Result<()> {
        let (entries, max, node_depth) = (le16(node, 2), le16(node, 4), le16(node, 6));
        if le16(node, 0) != 0xF30A
            || entries > max
            || 12 + 12 * max as usize > node.len()
            || node_depth > MAX_DEPTH
            || depth.is_some_and(|d| d != node_depth)
        {
            return declined("an extent tree that is not valid");
        }
        for i in 0..entries as usize {
            let e = &node[12 + 12 * i..24 + 12 * i];
            if node_depth == 0 {
                let raw = le16(e, 4) as u64;
                let (len, unwritten) = if raw > 32768 {
                    (raw - 32768, true)
                } else {
                    (raw, false)
                };
                out.push(Run {
                    logical: le32(e, 0) as u64,
                    phys: ((le16(e, 6) as u64) << 32) | le32(e, 8) as u64,
                    len,
                    unwritten,
                });
            } else {
                let leaf = ((le16(e, 8) as u64) << 32) | le32(e, 4) as u64;
                let child = self.block(leaf)?;
                if let Some(s) = seed {
                    // The tail follows the node's room for entries (ext4_extent_block_csum).
                    let tail = 12 + 12 * le16(&child, 4) as usize;
                    if tail + 4 > child.len() || crc32c_raw(s, &child[..tail]) != le32(&child, tail)
                    {
                        return declined(format!("extent block {leaf} fails its checksum"));
                    }
                }
                self.extent_node(&child, Some(node_depth - 1), seed, out)?;
            }
        }
        if out
            .windows(2)
            .any(|w| w[0].logical + w[0].len > w[1].logical)
        {
            return declined("extents out of order");
        }
        Ok(())
    }

    /// The inode `name` names in directory `dir_ino` (whose inode is `dir`), from a
    /// linear scan of its blocks made once. `Checked`: the walk's own reading, every
    /// block checked; `Lenient`: beside `ext4-view`, which has checked them (a hashed
    /// directory's index blocks read as empty entries).
    fn lookup(&mut self, dir_ino: u32, dir: &[u8], name: &str, how: Scan) -> Result<Option<u32>> {
        if !self.dirs.contains_key(&dir_ino) {
            let entries = match how {
                Scan::Checked => self.entries(dir_ino, dir)?,
                Scan::Lenient => self.any_entries(dir_ino, dir)?,
            };
            self.dirs.insert(dir_ino, entries);
        }
        Ok(self.dirs[&dir_ino].get(name.as_bytes()).copied())
    }

    fn any_entries(&self, ino: u32, dir: &[u8]) -> Result<HashMap<Vec<u8>, u32>> {
        let mut entries = HashMap::new();
        for run in self.runs(ino, dir)? {
            for b in run.phys..run.phys + run.len {
                let block = self.bytes(b * BLOCK, BLOCK)?;
                let mut at = 0usize;
                while at + 8 <= block.len() {
                    let ino = le32(&block, at);
                    let rec_len = le16(&block, at + 4) as usize;
                    let name_len = block[at + 6] as usize;
                    if rec_len < 8 || at + rec_len > block.len() {
                        break;
                    }
                    if ino != 0 && at + 8 + name_len <= block.len() {
                        entries.insert(block[at + 8..at + 8 + name_len].to_vec(), ino);
                    }
                    at += rec_len;
                }
            }
        }
        Ok(entries)
    }

    /// A linear directory's entries, each block checked as `__ext4_find_entry`
    /// checks it: the checksum in its tail, and every entry well formed.
    fn entries(&self, ino: u32, dir: &[u8]) -> Result<HashMap<Vec<u8>, u32>> {
        if le32(dir, 0x20) & DECLINED_FLAGS != 0 {
            return declined(format!(
                "directory inode {ino} is hashed, inline or encrypted"
            ));
        }
        let seed = self.inode_seed(ino, dir);
        let mut entries = HashMap::new();
        let mut expect = 0u64;
        for run in self.runs(ino, dir)? {
            if run.logical != expect || run.unwritten {
                return declined(format!("directory inode {ino} has a hole"));
            }
            expect += run.len;
            for b in run.phys..run.phys + run.len {
                let block = self.block(b)?;
                if let Some(s) = seed {
                    let t = block.len() - 12;
                    let tail_ok = le32(&block, t) == 0
                        && le16(&block, t + 4) == 12
                        && block[t + 6] == 0
                        && block[t + 7] == 0xDE;
                    if !tail_ok || crc32c_raw(s, &block[..t]) != le32(&block, t + 8) {
                        return declined(format!("directory block {b} fails its checksum"));
                    }
                }
                let mut at = 0usize;
                while at < block.len() {
                    let ino = le32(&block, at) as u64;
                    let rec_len = le16(&block, at + 4) as usize;
                    let name_len = block[at + 6] as usize;
                    if rec_len < 12
                        || !rec_len.is_multiple_of(4)
                        || rec_len < (8 + name_len).next_multiple_of(4)
                        || at + rec_len > block.len()
                        || ino > self.inodes_count
                    {
                        return declined(format!("directory block {b} holds a malformed entry"));
                    }
                    if ino != 0 {
                        entries.insert(block[at + 8..at + 8 + name_len].to_vec(), ino as u32);
                    }
                    at += rec_len;
                }
            }
        }
        Ok(entries)
    }

    /// Where a lookup of `rel` from the root ends. `Checked`: every inode on the way
    /// checked, and a path through anything but a directory declined.
    fn walk_path(&mut self, rel: &str, how: Scan) -> Result<PathEnd> {
        let mut inode = self.inode(ROOT)?;
        if how == Scan::Checked {
            self.check_inode(ROOT, &inode)?;
        }
        let mut at = ROOT;
        let mut walked = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            if how == Scan::Checked && le16(&inode, 0) & S_IFMT != S_IFDIR {
                return declined(format!("`{walked}` is not a directory"));
            }
            let Some(ino) = self.lookup(at, &inode, part, how)? else {
                return Ok(PathEnd::Missing);
            };
            at = ino;
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(part);
            inode = self.inode(ino)?;
            if let Some(why) = deleted(&walked, ino, &inode) {
                return Ok(PathEnd::Deleted(why));
            }
            if how == Scan::Checked {
                self.check_inode(ino, &inode)?;
            }
        }
        Ok(PathEnd::Reached(at, inode))
    }

    /// What `rel` names, as a lookup from the root finds it.
    fn resolve(&mut self, rel: &str) -> Result<Found> {
        let (at, inode) = match self.walk_path(rel, Scan::Checked)? {
            PathEnd::Missing => return Ok(Found::Missing),
            PathEnd::Deleted(why) => return Ok(Found::Deleted(why)),
            PathEnd::Reached(at, inode) => (at, inode),
        };
        match le16(&inode, 0) & S_IFMT {
            S_IFREG => {}
            // `ext4-view` and the kernel follow a link; the walk does not.
            S_IFLNK => return declined(format!("`{rel}` is a symbolic link")),
            _ => return Ok(Found::Other),
        }
        if le32(&inode, 0x20) & DECLINED_FLAGS != 0 {
            return declined(format!("`{rel}` is inline, encrypted or verity"));
        }
        Ok(Found::File {
            size: le32(&inode, 0x4) as u64 | (le32(&inode, 0x6C) as u64) << 32,
            runs: self.runs(at, &inode)?,
        })
    }

    /// The first entry on `rel` whose inode the kernel would call deleted, in words;
    /// `None` when there is none (or the path ends early: that is the reader's to say).
    pub fn deleted_on_path(&mut self, rel: &str) -> Result<Option<String>> {
        Ok(match self.walk_path(rel, Scan::Lenient)? {
            PathEnd::Deleted(why) => Some(why),
            PathEnd::Missing | PathEnd::Reached(..) => None,
        })
    }
}

enum PathEnd {
    /// The inode `rel` names: its number and bytes.
    Reached(u32, Vec<u8>),
    Missing,
    Deleted(String),
}

/// Why the kernel's lookup refuses the inode an entry names, if it does.
fn deleted(walked: &str, ino: u32, inode: &[u8]) -> Option<String> {
    let (mode, dtime, links) = (le16(inode, 0), le32(inode, 0x14), le16(inode, 0x1A));
    (links == 0 && (mode == 0 || dtime != 0)).then(|| {
        format!(
            "`{walked}` names inode {ino}, which is deleted (no links, {}): the kernel's lookup refuses it",
            if mode == 0 { "no mode" } else { "a deletion time" }
        )
    })
}

fn push_mapped(out: &mut Vec<Run>, logical: u64, phys: u64) {
    if phys == 0 {
        return;
    }
    if let Some(last) = out.last_mut() {
        if !last.unwritten && last.logical + last.len == logical && last.phys + last.len == phys {
            last.len += 1;
            return;
        }
    }
    out.push(Run {
        logical,
        phys,
        len: 1,
        unwritten: false,
    });
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scan {
    Checked,
    Lenient,
}

/// Blocks `logical..logical+len` of a file at `phys..`; unwritten ones read as zeros.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Run {
    logical: u64,
    phys: u64,
    len: u64,
    unwritten: bool,
}

#[derive(Debug)]
enum Found {
    File {
        size: u64,
        runs: Vec<Run>,
    },
    /// Not a regular file (a directory, a device, a link): it exists.
    Other,
    Missing,
    Deleted(String),
}

/// Every promised path resolved by the walk, read as [`PromisedTree`].
pub struct Walked<'a> {
    read: ReadAt<'a>,
    found: BTreeMap<String, Found>,
}

impl<'a> Walked<'a> {
    /// Resolves `paths`; `Ok(Err(Declined))` when anything on them is beyond the walk.
    pub fn resolve<'p>(
        read: ReadAt<'a>,
        sb: &[u8],
        paths: impl IntoIterator<Item = &'p str>,
    ) -> Result<std::result::Result<Self, Declined>> {
        let mut walk = Walk::new(read, sb);
        let found = (|| -> Result<BTreeMap<String, Found>> {
            walk.file_system_read_as_the_kernel(sb)?;
            let mut found = BTreeMap::new();
            for p in paths {
                if !found.contains_key(p) {
                    found.insert(p.to_string(), walk.resolve(p)?);
                }
            }
            Ok(found)
        })();
        match found {
            Ok(found) => Ok(Ok(Self { read, found })),
            Err(e) if e.chain().any(|c| c.to_string() == DECLINED) => {
                Ok(Err(Declined(format!("{}", e.root_cause()))))
            }
            Err(e) => Err(e),
        }
    }

    fn file(&self, rel: &str) -> std::io::Result<(u64, &[Run])> {
        match self.found.get(rel) {
            Some(Found::File { size, runs }) => Ok((*size, runs)),
            Some(Found::Missing) => Err(std::io::ErrorKind::NotFound.into()),
            Some(Found::Deleted(why)) => Err(std::io::Error::other(why.clone())),
            Some(Found::Other) => Err(std::io::Error::other("not a regular file")),
            None => Err(std::io::Error::other("a path the walk did not resolve")),
        }
    }

    fn bytes(&self, runs: &[Run], offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
        let mut out = vec![0u8; len as usize];
        let mut done = 0u64;
        while done < len {
            let at = offset + done;
            let (lb, within) = (at / BLOCK, at % BLOCK);
            let n = (BLOCK - within).min(len - done);
            let dst = &mut out[done as usize..(done + n) as usize];
            let i = runs.partition_point(|r| r.logical + r.len <= lb);
            if let Some(r) = runs.get(i).filter(|r| r.logical <= lb && !r.unwritten) {
                let phys = r.phys + (lb - r.logical);
                (self.read)(phys * BLOCK + within, dst).map_err(std::io::Error::other)?;
            }
            done += n;
        }
        Ok(out)
    }
}

impl Walk<'_> {
    /// Declines a file system whose features or group descriptors the walk does not
    /// read as the kernel's mount would (the mount checks every descriptor).
    fn file_system_read_as_the_kernel(&self, sb: &[u8]) -> Result<()> {
        let (incompat, ro) = (le32(sb, 0x60), le32(sb, 0x64));
        if incompat & !INCOMPAT_READ != 0 {
            return declined(format!("incompatible features {incompat:#x}"));
        }
        if ro & RO_COMPAT_BIGALLOC != 0
            || (ro & RO_COMPAT_GDT_CSUM != 0 && ro & RO_COMPAT_METADATA_CSUM == 0)
        {
            return declined("bigalloc or crc16 group descriptors");
        }
        if le32(sb, 0x14) != 0 || self.inodes_per_group == 0 || self.inode_size < 128 {
            return declined("not a 4 KiB-block layout the walk knows");
        }
        let Some(seed) = self.seed else {
            return Ok(());
        };
        let per_group = le32(sb, 0x20) as u64;
        let groups = self.blocks_count.div_ceil(per_group.max(1));
        let table = self.bytes(BLOCK, groups * self.desc_size)?;
        for g in 0..groups {
            let d = &table[(g * self.desc_size) as usize..((g + 1) * self.desc_size) as usize];
            let mut zeroed = d.to_vec();
            zeroed[0x1E..0x20].fill(0);
            let c = crc32c_raw(crc32c_raw(seed, &(g as u32).to_le_bytes()), &zeroed);
            if c & 0xFFFF != le16(d, 0x1E) as u32 {
                return declined(format!("group descriptor {g} fails its checksum"));
            }
        }
        Ok(())
    }
}

impl PromisedTree for Walked<'_> {
    fn read(&self, rel: &str) -> std::io::Result<Vec<u8>> {
        let (size, runs) = self.file(rel)?;
        self.bytes(runs, 0, size)
    }
    fn exists(&self, rel: &str) -> std::io::Result<()> {
        match self.found.get(rel) {
            Some(Found::File { .. } | Found::Other) => Ok(()),
            _ => self.file(rel).map(|_| ()),
        }
    }
    fn size(&self, rel: &str) -> std::io::Result<u64> {
        self.file(rel).map(|(size, _)| size)
    }
    fn read_at(&self, rel: &str, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
        let (size, runs) = self.file(rel)?;
        if offset + len > size {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.bytes(runs, offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;
    use std::process::Command;

    fn run(cmd: &mut Command) {
        let out = cmd.output().expect("e2fsprogs is installed");
        assert!(out.status.success(), "{cmd:?}: {out:?}");
    }

    /// A 16 MiB image of `fs_type` (4 KiB blocks) made by mke2fs, with `files` written
    /// by debugfs (it leaves runs of zero blocks as holes): no mount, no root.
    fn image(
        dir: &std::path::Path,
        fs_type: &str,
        files: &[(&str, Vec<u8>)],
    ) -> std::path::PathBuf {
        let img = dir.join(format!("{fs_type}.img"));
        run(Command::new("mke2fs")
            .args(["-q", "-F", "-t", fs_type, "-b", "4096"])
            .arg(&img)
            .arg("16M"));
        for (name, data) in files {
            let src = dir.join(format!("src-{name}"));
            std::fs::write(&src, data).unwrap();
            run(Command::new("debugfs")
                .arg("-w")
                .arg("-R")
                .arg(format!("write {} {name}", src.display()))
                .arg(&img));
        }
        img
    }

    fn debugfs(img: &std::path::Path, request: &str) -> String {
        let out = Command::new("debugfs")
            .args(["-w", "-R", request])
            .arg(img)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn files() -> Vec<(&'static str, Vec<u8>)> {
        let pattern = |n: usize| (0..n).map(|i| (i % 251) as u8 + 1).collect::<Vec<u8>>();
        let mut holed = pattern(300 << 10);
        holed[64 << 10..192 << 10].fill(0);
        vec![
            ("small", b"a few bytes".to_vec()),
            ("empty", Vec::new()),
            ("large", pattern(1 << 20)),
            ("holed", holed),
        ]
    }

    /// What the walk makes of `img`, or why it declined.
    fn walked(
        img: &std::path::Path,
        paths: &[&str],
        check: impl FnOnce(&Walked<'_>),
    ) -> std::result::Result<(), String> {
        let f = std::fs::File::open(img).unwrap();
        let read = |at: u64, dst: &mut [u8]| -> Result<()> { Ok(f.read_exact_at(dst, at)?) };
        let mut sb = vec![0u8; 1024];
        f.read_exact_at(&mut sb, 1024).unwrap();
        match Walked::resolve(&read, &sb, paths.iter().copied()).unwrap() {
            Ok(w) => {
                check(&w);
                Ok(())
            }
            Err(Declined(why)) => Err(why),
        }
    }

    #[test]
    fn the_walk_reads_what_ext4_view_reads_from_ext4_and_from_block_mapped_ext3() {
        let d = tempfile::tempdir().unwrap();
        for fs_type in ["ext4", "ext3"] {
            let img = image(d.path(), fs_type, &files());
            let view = ext4_view::Ext4::load(Box::new(std::fs::read(&img).unwrap())).unwrap();
            let names = ["small", "empty", "large", "holed", "gone", "lost+found"];
            walked(&img, &names, |w| {
                for (name, data) in files() {
                    let abs = format!("/{name}");
                    assert_eq!(w.read(name).unwrap(), view.read(abs.as_str()).unwrap());
                    assert_eq!(w.read(name).unwrap(), data, "{fs_type} {name}");
                    assert_eq!(w.size(name).unwrap(), data.len() as u64);
                }
                assert_eq!(
                    w.read_at("holed", (64 << 10) - 2, 4).unwrap(),
                    [
                        (((64 << 10) - 2) % 251) as u8 + 1,
                        (((64 << 10) - 1) % 251) as u8 + 1,
                        0,
                        0
                    ]
                );
                assert_eq!(
                    w.read_at("small", 5, 100).unwrap_err().kind(),
                    std::io::ErrorKind::UnexpectedEof
                );
                assert_eq!(
                    w.read("gone").unwrap_err().kind(),
                    std::io::ErrorKind::NotFound
                );
                assert!(w.exists("lost+found").is_ok(), "a directory exists");
            })
            .unwrap_or_else(|why| panic!("{fs_type}: the walk declined: {why}"));
        }
    }

    #[test]
    fn an_inode_or_directory_block_failing_its_checksum_is_declined() {
        let d = tempfile::tempdir().unwrap();
        let img = image(d.path(), "ext4", &files());
        // Byte 8 of the inode is its access time: only the checksum notices a change.
        let imap = debugfs(&img, "imap small");
        let word = |after: &str| -> u64 {
            let at = imap.find(after).unwrap() + after.len();
            let w = imap[at..].split_whitespace().next().unwrap();
            let w = w.trim_end_matches(',');
            match w.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap(),
                None => w.parse().unwrap(),
            }
        };
        let at = word("located at block ") * BLOCK + word("offset ") + 8;
        let flip = |at: u64| {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&img)
                .unwrap();
            let mut b = [0u8];
            f.read_exact_at(&mut b, at).unwrap();
            f.write_all_at(&[b[0] ^ 1], at).unwrap();
        };
        flip(at);
        let why = walked(&img, &["small"], |_| {}).unwrap_err();
        assert!(why.contains("fails its checksum"), "{why}");
        assert!(
            walked(&img, &["large"], |_| {}).is_ok(),
            "other inodes still read"
        );
        flip(at);
        // The root directory's first block: a byte of the `small` entry's name.
        let root: u64 = debugfs(&img, "blocks /").trim().parse().unwrap();
        let f = std::fs::File::open(&img).unwrap();
        let mut block = vec![0u8; BLOCK as usize];
        f.read_exact_at(&mut block, root * BLOCK).unwrap();
        let name = block.windows(5).position(|w| w == b"small").unwrap() as u64;
        flip(root * BLOCK + name);
        let why = walked(&img, &["large"], |_| {}).unwrap_err();
        assert!(
            why.contains("directory block") && why.contains("checksum"),
            "{why}"
        );
    }

    #[test]
    fn a_path_through_a_deleted_inode_is_unreadable_with_the_kernels_reason() {
        let d = tempfile::tempdir().unwrap();
        let img = image(d.path(), "ext4", &files());
        // The entry stays; its inode is zeroed: no mode, no links.
        debugfs(&img, "clri small");
        walked(&img, &["small", "large"], |w| {
            let e = w.read("small").unwrap_err();
            assert!(e.to_string().contains("which is deleted"), "{e}");
            assert!(w.exists("small").is_err());
            assert!(w.read("large").is_ok());
        })
        .unwrap();
    }

    #[test]
    fn a_hashed_directory_is_left_to_ext4_view() {
        let d = tempfile::tempdir().unwrap();
        let img = image(d.path(), "ext4", &files());
        debugfs(&img, "mkdir sub");
        assert!(walked(&img, &["sub"], |_| {}).is_ok());
        // EXT4_INDEX_FL | EXT4_EXTENTS_FL; debugfs recomputes the inode's checksum.
        debugfs(&img, "set_inode_field sub flags 0x81000");
        let why = walked(&img, &["sub/x"], |_| {}).unwrap_err();
        assert!(why.contains("hashed"), "{why}");
    }
}
