//! The jbd2 (ext3/ext4 journal) blocks of a write log, and what the journal holds at a
//! cut: the committed transactions a replay would walk and the blocks they occupy.
//!
//! jbd2 starts every metadata block of the journal with a big-endian header (magic,
//! block type, transaction id) at a journal-block boundary, and escapes a logged block
//! that would begin with the magic, so the magic at a block start is one of its own.
//! Reading the payloads is the only I/O here ([`scan_log`]); the rest is pure, so the
//! planner (`states`) can rank cuts by journal content without touching the log.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result};

use crate::emu::writelog::{read_payload, RecordKind, RecordMeta};
use crate::results::crash::JournalLive;

pub const JBD2_MAGIC: u32 = 0xC03B_3998;
const DESCRIPTOR: u32 = 1;
const COMMIT: u32 = 2;
const SUPERBLOCK_V1: u32 = 3;
const SUPERBLOCK_V2: u32 = 4;
const REVOKE: u32 = 5;
// Journal superblock v2 `s_feature_incompat` bits that decide a descriptor tag's size.
const INCOMPAT_64BIT: u32 = 0x2;
const INCOMPAT_CSUM_V2: u32 = 0x8;
const INCOMPAT_CSUM_V3: u32 = 0x10;
const TAG_FLAG_SAME_UUID: u16 = 0x2;
const TAG_FLAG_LAST_TAG: u16 = 0x8;

/// jbench makes every ext3/ext4 with 4 KiB blocks (`mke2fs -b 4096`), so its journal
/// blocks are 4 KiB too until a journal superblock says otherwise.
const DEFAULT_JOURNAL_BLOCK: u64 = 4096;

/// A jbd2 block found at a journal-block boundary of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalBlock {
    /// Transaction `tid`'s descriptor, announcing `tags` logged blocks after it.
    Descriptor {
        tid: u32,
        tags: u32,
    },
    Commit {
        tid: u32,
    },
    Revoke {
        tid: u32,
    },
    /// The journal superblock: `tail` is `s_sequence`, the first transaction a replay
    /// expects; `None` when `s_start` is 0, a clean journal that no replay reads.
    Superblock {
        tail: Option<u32>,
    },
}

/// One jbd2 block of a write: `at` bytes from the write's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalHit {
    pub at: u64,
    pub block: JournalBlock,
}

/// A write record that carries jbd2 blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteNote {
    pub seq: u64,
    /// 4 KiB blocks the write carried (all of them, logged data included).
    pub blocks: u64,
    pub hits: Vec<JournalHit>,
}

/// The writes of a log that carry jbd2 blocks, in log order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalNotes {
    pub writes: Vec<WriteNote>,
}

impl JournalNotes {
    /// The log holds no jbd2 block at all (XFS, or a file system that journalled
    /// nothing).
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }
}

/// Reads the payload of every write of the log at `path` and notes its jbd2 blocks.
/// `recs` are the log's records in order (metadata only; the planner's records hold
/// theirs).
pub fn scan_log<'a>(
    path: &Path,
    recs: impl IntoIterator<Item = &'a RecordMeta>,
) -> Result<JournalNotes> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open the write log {}", path.display()))?;
    let mut scanner = Scanner::default();
    let mut out = JournalNotes::default();
    for r in recs.into_iter().filter(|r| r.kind == RecordKind::Write) {
        let payload = read_payload(&file, r)?;
        let hits = scanner.scan(r.offset, &payload);
        if !hits.is_empty() {
            out.writes.push(WriteNote {
                seq: r.seq,
                blocks: r.len.div_ceil(DEFAULT_JOURNAL_BLOCK),
                hits,
            });
        }
    }
    Ok(out)
}

/// The jbd2 blocks of writes read in log order: a superblock's block size and
/// features apply to the descriptors written after it.
#[derive(Debug, Clone)]
pub struct Scanner {
    block: u64,
    incompat: u32,
}

impl Default for Scanner {
    fn default() -> Self {
        // ext4's default journal (64bit, checksum v3) until a superblock is seen:
        // mkfs writes one before any descriptor in every log jbench records.
        Self {
            block: DEFAULT_JOURNAL_BLOCK,
            incompat: INCOMPAT_64BIT | INCOMPAT_CSUM_V3,
        }
    }
}

impl Scanner {
    /// The jbd2 blocks of a write of `payload` at disk byte `offset`.
    pub fn scan(&mut self, offset: u64, payload: &[u8]) -> Vec<JournalHit> {
        let mut out = Vec::new();
        let mut at = offset.next_multiple_of(self.block) - offset;
        while at + 12 <= payload.len() as u64 {
            let end = (at + self.block).min(payload.len() as u64);
            let b = &payload[at as usize..end as usize];
            if let Some(block) = self.parse(b) {
                out.push(JournalHit { at, block });
            }
            at += self.block;
        }
        out
    }

    fn parse(&mut self, b: &[u8]) -> Option<JournalBlock> {
        if be32(b, 0)? != JBD2_MAGIC {
            return None;
        }
        let tid = be32(b, 8)?;
        match be32(b, 4)? {
            DESCRIPTOR => Some(JournalBlock::Descriptor {
                tid,
                tags: self.count_tags(b),
            }),
            COMMIT => Some(JournalBlock::Commit { tid }),
            REVOKE => Some(JournalBlock::Revoke { tid }),
            kind @ (SUPERBLOCK_V1 | SUPERBLOCK_V2) => {
                let size = be32(b, 12)? as u64;
                if size.is_power_of_two() && (1024..=65536).contains(&size) {
                    self.block = size;
                }
                self.incompat = if kind == SUPERBLOCK_V2 {
                    be32(b, 0x28)?
                } else {
                    0
                };
                let start = be32(b, 28)?;
                let sequence = be32(b, 24)?;
                Some(JournalBlock::Superblock {
                    tail: (start != 0).then_some(sequence),
                })
            }
            _ => None,
        }
    }

    /// Tags of a descriptor block, as the kernel's `count_tags` walks them: a tag per
    /// logged block, each followed by a 16-byte UUID unless it says "same UUID",
    /// until the one marked last.
    fn count_tags(&self, b: &[u8]) -> u32 {
        let csum = self.incompat & (INCOMPAT_CSUM_V2 | INCOMPAT_CSUM_V3) != 0;
        let tag_bytes = if self.incompat & INCOMPAT_CSUM_V3 != 0 {
            16
        } else {
            let base = 12
                + if self.incompat & INCOMPAT_CSUM_V2 != 0 {
                    2
                } else {
                    0
                };
            if self.incompat & INCOMPAT_64BIT != 0 {
                base
            } else {
                base - 4
            }
        };
        // The block tail holds the descriptor's checksum.
        let size = (self.block as usize).min(b.len()) - if csum { 4 } else { 0 };
        let mut p = 12usize;
        let mut n = 0;
        while p + tag_bytes <= size {
            // Both tag layouts keep the flags' low 16 bits at byte 6.
            let flags = be16(b, p + 6).unwrap_or(TAG_FLAG_LAST_TAG);
            n += 1;
            p += tag_bytes;
            if flags & TAG_FLAG_SAME_UUID == 0 {
                p += 16;
            }
            if flags & TAG_FLAG_LAST_TAG != 0 {
                break;
            }
        }
        n
    }
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// What the journal holds after a series of its blocks reached the disk, in log order.
///
/// The replay starts at the last superblock's tail and walks the transactions whose
/// commit block it finds, in tid order, stopping at the first without one. A
/// transaction's blocks are counted from its own blocks: each descriptor and the
/// logged blocks its tags announce, each revoke block and the commit block. That is
/// exact for what the log holds; what it cannot see is a committed block overwritten
/// later, which jbd2 never does before the superblock's tail has moved past it (it
/// updates the tail with a FUA write before reusing the space).
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// `None` before any superblock; `Some(None)` for a clean (empty) journal.
    tail: Option<Option<u32>>,
    committed: HashSet<u32>,
    blocks: HashMap<u32, u64>,
}

impl Tracker {
    pub fn apply(&mut self, block: &JournalBlock) {
        match *block {
            JournalBlock::Descriptor { tid, tags } => {
                *self.blocks.entry(tid).or_default() += 1 + tags as u64;
            }
            JournalBlock::Revoke { tid } => *self.blocks.entry(tid).or_default() += 1,
            JournalBlock::Commit { tid } => {
                *self.blocks.entry(tid).or_default() += 1;
                self.committed.insert(tid);
            }
            JournalBlock::Superblock { tail } => {
                self.tail = Some(tail);
                // What the tail passed is never walked again: forget it, so the
                // tracker stays as small as the journal.
                match tail {
                    None => {
                        self.committed.clear();
                        self.blocks.clear();
                    }
                    Some(t) => {
                        self.committed.retain(|&x| !tid_before(x, t));
                        self.blocks.retain(|&x, _| !tid_before(x, t));
                    }
                }
            }
        }
    }

    /// The transactions a replay would walk now, and their blocks.
    pub fn live(&self) -> JournalLive {
        let start = match self.tail {
            Some(None) => return JournalLive::default(),
            Some(Some(t)) => t,
            // No superblock seen: from the oldest commit seen.
            None => match self.committed.iter().min() {
                Some(&t) => t,
                None => return JournalLive::default(),
            },
        };
        let mut live = JournalLive::default();
        let mut t = start;
        while self.committed.contains(&t) {
            live.transactions += 1;
            live.blocks += self.blocks.get(&t).copied().unwrap_or(1);
            t = t.wrapping_add(1);
            if t == start {
                break;
            }
        }
        live
    }
}

/// `a` comes before `b` in jbd2's wrapping tid order.
fn tid_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[cfg(test)]
mod tests;
