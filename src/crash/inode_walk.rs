//! A refusal the kernel makes and `ext4-view` does not: a path through a directory
//! entry whose inode is deleted or unallocated. `ext4_lookup` answers it with
//! "deleted inode referenced" and `EFSCORRUPTED`, whatever the inode still holds, so a
//! promised file under such an entry is unreadable after a mount even when its blocks
//! are whole. This walks each promised path over the replayed image's raw inodes and
//! directory blocks and names the first such entry.

use std::collections::HashMap;

use anyhow::{bail, Result};

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

const BLOCK: u64 = 4096;
const ROOT: u32 = 2;
const EXTENTS_FL: u32 = 0x80000;
const INCOMPAT_64BIT: u32 = 0x80;
/// Deepest extent tree followed (ext4's own limit is 5).
const MAX_DEPTH: u16 = 5;

/// Reads `dst.len()` bytes at a byte offset of the replayed file system.
pub type ReadAt<'a> = &'a mut dyn FnMut(u64, &mut [u8]) -> Result<()>;

pub struct Walk<'a> {
    read: ReadAt<'a>,
    /// Each directory read once: its entries by name.
    dirs: HashMap<u32, HashMap<Vec<u8>, u32>>,
    inodes_per_group: u64,
    inode_size: u64,
    desc_size: u64,
}

impl<'a> Walk<'a> {
    /// `sb` is the (replayed) superblock's 1024 bytes.
    pub fn new(read: ReadAt<'a>, sb: &[u8]) -> Self {
        Self {
            read,
            dirs: HashMap::new(),
            inodes_per_group: le32(sb, 0x28) as u64,
            inode_size: le16(sb, 0x58) as u64,
            desc_size: if le32(sb, 0x60) & INCOMPAT_64BIT != 0 {
                le16(sb, 0xFE).max(32) as u64
            } else {
                32
            },
        }
    }

    fn bytes(&mut self, at: u64, len: u64) -> Result<Vec<u8>> {
        let mut b = vec![0u8; len as usize];
        (self.read)(at, &mut b)?;
        Ok(b)
    }

    fn inode(&mut self, ino: u32) -> Result<Vec<u8>> {
        let index = ino as u64 - 1;
        let group = index / self.inodes_per_group;
        let d = self.bytes(BLOCK + group * self.desc_size, self.desc_size)?;
        let mut table = le32(&d, 8) as u64;
        if self.desc_size >= 64 {
            table |= (le32(&d, 0x28) as u64) << 32;
        }
        let at = table * BLOCK + (index % self.inodes_per_group) * self.inode_size;
        self.bytes(at, self.inode_size.min(160))
    }

    /// A directory's data blocks, in order.
    fn blocks(&mut self, inode: &[u8]) -> Result<Vec<u64>> {
        let root = inode[0x28..0x28 + 60].to_vec();
        let mut out = Vec::new();
        if le32(inode, 0x20) & EXTENTS_FL != 0 {
            self.extent_node(&root, MAX_DEPTH, &mut out)?;
        } else {
            out.extend(
                (0..12)
                    .map(|i| le32(&root, 4 * i) as u64)
                    .filter(|b| *b != 0),
            );
            let ind = le32(&root, 48) as u64;
            if ind != 0 {
                let b = self.bytes(ind * BLOCK, BLOCK)?;
                out.extend(
                    (0..1024)
                        .map(|i| le32(&b, 4 * i) as u64)
                        .filter(|b| *b != 0),
                );
            }
        }
        Ok(out)
    }

    fn extent_node(&mut self, node: &[u8], depth_left: u16, out: &mut Vec<u64>) -> Result<()> {
        if le16(node, 0) != 0xF30A || depth_left == 0 {
            bail!("an extent tree that is not valid");
        }
        let entries = le16(node, 2) as usize;
        if 12 + 12 * entries > node.len() {
            bail!("an extent node with more entries than room");
        }
        for i in 0..entries {
            let e = &node[12 + 12 * i..24 + 12 * i];
            if le16(node, 6) == 0 {
                let len = (le16(e, 4) & 0x7FFF) as u64;
                let start = ((le16(e, 6) as u64) << 32) | le32(e, 8) as u64;
                out.extend(start..start + len);
            } else {
                let leaf = ((le16(e, 8) as u64) << 32) | le32(e, 4) as u64;
                let child = self.bytes(leaf * BLOCK, BLOCK)?;
                self.extent_node(&child, depth_left - 1, out)?;
            }
        }
        Ok(())
    }

    /// The inode `name` names in directory `dir_ino` (whose inode is `dir`), from a
    /// linear scan of its blocks made once (the hash tree's own blocks read as empty
    /// entries).
    fn lookup(&mut self, dir_ino: u32, dir: &[u8], name: &str) -> Result<Option<u32>> {
        if !self.dirs.contains_key(&dir_ino) {
            let mut entries = HashMap::new();
            for b in self.blocks(dir)? {
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
            self.dirs.insert(dir_ino, entries);
        }
        Ok(self.dirs[&dir_ino].get(name.as_bytes()).copied())
    }

    /// The first entry on `rel` whose inode the kernel would call deleted, in words;
    /// `None` when there is none (or the path ends early: that is the reader's to say).
    pub fn deleted_on_path(&mut self, rel: &str) -> Result<Option<String>> {
        let mut inode = self.inode(ROOT)?;
        let mut at = ROOT;
        let mut walked = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            let Some(ino) = self.lookup(at, &inode, part)? else {
                return Ok(None);
            };
            at = ino;
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(part);
            inode = self.inode(ino)?;
            let (mode, dtime, links) = (le16(&inode, 0), le32(&inode, 0x14), le16(&inode, 0x1A));
            if links == 0 && (mode == 0 || dtime != 0) {
                return Ok(Some(format!(
                    "`{walked}` names inode {ino}, which is deleted (no links, {}): the kernel's lookup refuses it",
                    if mode == 0 { "no mode" } else { "a deletion time" }
                )));
            }
        }
        Ok(None)
    }
}
