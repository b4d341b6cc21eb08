//! jbd2's recovery in user space: the blocks a mount's journal replay would write,
//! computed from a crash state's journal without a device or a mount.
//!
//! It follows the kernel's three passes (fs/jbd2/recovery.c): scan from the journal
//! superblock's `s_start` for transactions whose descriptor, data and commit blocks
//! carry the expected sequence; collect the revoke records of the committed ones; then
//! write each committed transaction's logged blocks in order, skipping a block revoked
//! by the same or a later transaction. Where the kernel's behaviour depends on more
//! than that (a descriptor, revoke or commit block whose checksum does not match, fast
//! commits, checksum v1/v2, a block size other than the file system's), this module
//! does not guess: it says so ([`Replay::Unsupported`]) and the state goes to the
//! kernel. A committed transaction's logged block whose checksum fails is the
//! kernel's refusal of the journal ([`Replay::Corrupt`]).

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;

const MAGIC: u32 = 0xC03B_3998;
const DESCRIPTOR: u32 = 1;
const COMMIT: u32 = 2;
const SUPERBLOCK_V1: u32 = 3;
const SUPERBLOCK_V2: u32 = 4;
const REVOKE: u32 = 5;

const COMPAT_CHECKSUM: u32 = 0x1;
const INCOMPAT_REVOKE: u32 = 0x1;
const INCOMPAT_64BIT: u32 = 0x2;
const INCOMPAT_ASYNC_COMMIT: u32 = 0x4;
const INCOMPAT_CSUM_V2: u32 = 0x8;
const INCOMPAT_CSUM_V3: u32 = 0x10;
const INCOMPAT_FAST_COMMIT: u32 = 0x20;
/// Asynchronous commits change only when the commit block is written (with the
/// transaction, not after it is durable): the kernel's scan and replay are the same,
/// and what a commit written ahead of its blocks leaves is caught by the blocks' v3
/// checksums ([`Replay::Corrupt`]).
const KNOWN_INCOMPAT: u32 =
    INCOMPAT_REVOKE | INCOMPAT_64BIT | INCOMPAT_CSUM_V3 | INCOMPAT_ASYNC_COMMIT;

const FLAG_ESCAPE: u32 = 0x1;
const FLAG_SAME_UUID: u32 = 0x2;
const FLAG_LAST_TAG: u32 = 0x8;

/// Where a journal's blocks are: its superblock, and block `n` of its numbering.
pub trait JournalSource {
    fn superblock(&mut self) -> Result<Vec<u8>>;
    fn block(&mut self, n: u64) -> Result<Vec<u8>>;
}

/// What a mount's replay would do to the file system.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// The journal is clean (`s_start` 0): nothing to replay.
    Clean,
    /// The blocks the replay writes (file-system block number, its bytes, last writer
    /// wins), and how many committed transactions it walked.
    Blocks {
        blocks: BTreeMap<u64, Vec<u8>>,
        transactions: u32,
    },
    /// A journal this module does not replay as the kernel would: why.
    Unsupported(String),
    /// A journal the kernel's recovery reports as corrupt, which fails the mount: why.
    /// A committed transaction's logged block that fails its v2/v3 checksum is one
    /// (the kernel skips writing it and ends the recovery with `EFSBADCRC`): what a
    /// multi-block journal write persisted in part leaves.
    Corrupt(String),
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// The kernel's `crc32c(seed, data)`: CRC-32C from register `seed`, no final inversion.
pub fn crc32c_raw(seed: u32, data: &[u8]) -> u32 {
    !crc32c::crc32c_append(!seed, data)
}

struct Sb {
    block_size: usize,
    maxlen: u64,
    first: u64,
    sequence: u32,
    start: u64,
    incompat: u32,
    /// CRC-32C of the UUID: the seed of every v3 checksum.
    seed: u32,
}

impl Sb {
    fn tag_bytes(&self) -> usize {
        if self.incompat & INCOMPAT_CSUM_V3 != 0 {
            16
        } else if self.incompat & INCOMPAT_64BIT != 0 {
            12
        } else {
            8
        }
    }

    fn csum(&self) -> bool {
        self.incompat & INCOMPAT_CSUM_V3 != 0
    }

    fn wrap(&self, pos: u64) -> u64 {
        if pos >= self.maxlen {
            pos - (self.maxlen - self.first)
        } else {
            pos
        }
    }
}

fn parse_sb(b: &[u8], fs_block: usize) -> std::result::Result<Option<Sb>, String> {
    if b.len() < 1024 || be32(b, 0) != MAGIC {
        return Err("no jbd2 superblock where the journal should start".into());
    }
    let kind = be32(b, 4);
    if kind != SUPERBLOCK_V1 && kind != SUPERBLOCK_V2 {
        return Err(format!("journal superblock of unknown type {kind}"));
    }
    let block_size = be32(b, 0x0C) as usize;
    if block_size != fs_block || block_size != b.len() {
        return Err(format!(
            "journal block size {block_size}, file-system block size {fs_block}"
        ));
    }
    let (compat, incompat) = if kind == SUPERBLOCK_V2 {
        (be32(b, 0x24), be32(b, 0x28))
    } else {
        (0, 0)
    };
    if compat & COMPAT_CHECKSUM != 0 || incompat & INCOMPAT_CSUM_V2 != 0 {
        return Err("journal checksums v1/v2 (only v3 or none are replayed here)".into());
    }
    if incompat & INCOMPAT_FAST_COMMIT != 0 {
        return Err("fast commits (the kernel replays them after the journal)".into());
    }
    if incompat & !KNOWN_INCOMPAT != 0 {
        return Err(format!("journal features {incompat:#x}"));
    }
    let start = be32(b, 0x1C) as u64;
    if start == 0 {
        return Ok(None);
    }
    let sb = Sb {
        block_size,
        maxlen: be32(b, 0x10) as u64,
        first: be32(b, 0x14) as u64,
        sequence: be32(b, 0x18),
        start,
        incompat,
        seed: crc32c_raw(!0, &b[0x30..0x40]),
    };
    if sb.first == 0 || sb.first >= sb.maxlen || start < sb.first || start >= sb.maxlen {
        return Err(format!(
            "journal superblock out of range (first {}, start {start}, length {})",
            sb.first, sb.maxlen
        ));
    }
    Ok(Some(sb))
}

/// One logged block of a transaction: where its copy is in the journal, where it goes.
struct Tag {
    at: u64,
    target: u64,
    escaped: bool,
    csum: u32,
}

/// Reads a descriptor's tags; `None` when the tags run past the block.
fn tags(sb: &Sb, b: &[u8], first_data: u64) -> Option<Vec<Tag>> {
    let size = sb.tag_bytes();
    let end = b.len() - if sb.csum() { 4 } else { 0 };
    let mut at = 12;
    let mut out = Vec::new();
    let mut pos = first_data;
    loop {
        if at + size > end {
            return None;
        }
        let lo = be32(b, at) as u64;
        let (flags, hi, csum) = if sb.csum() {
            (be32(b, at + 4), be32(b, at + 8) as u64, be32(b, at + 12))
        } else {
            let flags = u16::from_be_bytes([b[at + 6], b[at + 7]]) as u32;
            let hi = if sb.incompat & INCOMPAT_64BIT != 0 {
                be32(b, at + 8) as u64
            } else {
                0
            };
            (flags, hi, 0)
        };
        out.push(Tag {
            at: pos,
            target: (hi << 32) | lo,
            escaped: flags & FLAG_ESCAPE != 0,
            csum,
        });
        pos = sb.wrap(pos + 1);
        at += size;
        if flags & FLAG_SAME_UUID == 0 {
            at += 16;
        }
        if flags & FLAG_LAST_TAG != 0 {
            return Some(out);
        }
    }
}

/// A block's v2/v3 tail checksum (descriptor and revoke blocks).
fn tail_ok(sb: &Sb, b: &[u8]) -> bool {
    let n = b.len();
    let mut copy = b.to_vec();
    copy[n - 4..].fill(0);
    crc32c_raw(sb.seed, &copy) == be32(b, n - 4)
}

fn commit_ok(sb: &Sb, b: &[u8]) -> bool {
    let mut copy = b.to_vec();
    copy[16..20].fill(0);
    crc32c_raw(sb.seed, &copy) == be32(b, 16)
}

/// Whether a replay honours revoke records. Only the test of the audit skips them: a
/// replay broken on purpose, which the kernel must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revokes {
    Honoured,
    SkippedOnPurpose,
}

/// The replay a mount would make of the journal in `src`, whose file system has
/// blocks of `fs_block` bytes.
pub fn replay(src: &mut dyn JournalSource, fs_block: usize) -> Result<Replay> {
    replay_with(src, fs_block, Revokes::Honoured)
}

/// [`replay`], with revoke records honoured or (to test the audit) skipped.
pub fn replay_with(
    src: &mut dyn JournalSource,
    fs_block: usize,
    revokes: Revokes,
) -> Result<Replay> {
    let sb = match parse_sb(&src.superblock()?, fs_block) {
        Ok(None) => return Ok(Replay::Clean),
        Ok(Some(sb)) => sb,
        Err(why) => return Ok(Replay::Unsupported(why)),
    };
    let Scanned { committed, revoked } = match scan(src, &sb)? {
        Ok(s) => s,
        Err(why) => return Ok(Replay::Unsupported(why)),
    };
    // Pass 3: replay in order, a later copy of a block over an earlier one.
    let mut blocks = BTreeMap::new();
    for (t, tags) in &committed {
        for tag in tags {
            if revokes == Revokes::Honoured && revoked.get(&tag.target).is_some_and(|r| r >= t) {
                continue;
            }
            let mut data = src.block(tag.at)?;
            if sb.csum() {
                let seq = crc32c_raw(sb.seed, &t.to_be_bytes());
                if crc32c_raw(seq, &data) != tag.csum {
                    return Ok(Replay::Corrupt(format!(
                        "a logged block of committed transaction {t} (for block {}, at journal block {}) fails its checksum: the kernel's recovery refuses the journal",
                        tag.target, tag.at
                    )));
                }
            }
            if tag.escaped {
                data[..4].copy_from_slice(&MAGIC.to_be_bytes());
            }
            blocks.insert(tag.target, data);
        }
    }
    Ok(Replay::Blocks {
        blocks,
        transactions: committed.len() as u32,
    })
}

/// What the scan found: the committed transactions' tags in order, and the latest
/// transaction that revoked each block.
struct Scanned {
    committed: Vec<(u32, Vec<Tag>)>,
    revoked: HashMap<u64, u32>,
}

/// Passes 1 (scan) and 2 (revoke records) in one walk: a transaction's tags and
/// revokes count only once its commit block is found. `Err(why)` inside: a log this
/// module does not follow as the kernel would.
fn scan(src: &mut dyn JournalSource, sb: &Sb) -> Result<std::result::Result<Scanned, String>> {
    let mut out = Scanned {
        committed: Vec::new(),
        revoked: HashMap::new(),
    };
    let mut tid = sb.sequence;
    let mut pos = sb.start;
    let mut pending: Vec<Tag> = Vec::new();
    let mut pending_revokes: Vec<u64> = Vec::new();
    let mut walked = 0u64;
    while walked < sb.maxlen {
        let b = src.block(pos)?;
        if b.len() != sb.block_size || be32(&b, 0) != MAGIC || be32(&b, 8) != tid {
            break;
        }
        let kind = be32(&b, 4);
        let sum_ok = match kind {
            DESCRIPTOR | REVOKE => !sb.csum() || tail_ok(sb, &b),
            COMMIT => !sb.csum() || commit_ok(sb, &b),
            _ => break,
        };
        if !sum_ok {
            // For a commit block, the kernel ends the scan and marks the file system
            // as having a corrupt transaction: its call, not this module's.
            return Ok(Err(format!(
                "{} block of transaction {tid} fails its checksum",
                ["descriptor", "commit", "", "", "revoke"][kind as usize - 1]
            )));
        }
        let used = match kind {
            DESCRIPTOR => {
                let Some(t) = tags(sb, &b, sb.wrap(pos + 1)) else {
                    return Ok(Err(format!(
                        "descriptor of transaction {tid} has no last tag"
                    )));
                };
                let n = t.len() as u64;
                pending.extend(t);
                1 + n
            }
            REVOKE => {
                pending_revokes.extend(revokes(sb, &b));
                1
            }
            _ => {
                for r in pending_revokes.drain(..) {
                    let e = out.revoked.entry(r).or_insert(tid);
                    *e = (*e).max(tid);
                }
                out.committed.push((tid, std::mem::take(&mut pending)));
                tid = tid.wrapping_add(1);
                1
            }
        };
        pos = sb.wrap(pos + used);
        walked += used;
    }
    Ok(Ok(out))
}

/// The block numbers a revoke block lists.
fn revokes(sb: &Sb, b: &[u8]) -> Vec<u64> {
    let rec = if sb.incompat & INCOMPAT_64BIT != 0 {
        8
    } else {
        4
    };
    let used = (be32(b, 12) as usize).min(b.len());
    (16..used)
        .step_by(rec)
        .take_while(|at| at + rec <= used)
        .map(|at| {
            if rec == 8 {
                u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
            } else {
                be32(b, at) as u64
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: usize = 1024;

    /// A journal in memory: blocks by number, the superblock at 0.
    struct Mem(HashMap<u64, Vec<u8>>);

    impl JournalSource for Mem {
        fn superblock(&mut self) -> Result<Vec<u8>> {
            self.block(0)
        }
        fn block(&mut self, n: u64) -> Result<Vec<u8>> {
            Ok(self.0.get(&n).cloned().unwrap_or_else(|| vec![0; BS]))
        }
    }

    fn header(kind: u32, tid: u32) -> Vec<u8> {
        let mut b = vec![0u8; BS];
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&kind.to_be_bytes());
        b[8..12].copy_from_slice(&tid.to_be_bytes());
        b
    }

    fn put(b: &mut [u8], at: usize, v: u32) {
        b[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    /// A v2 superblock, checksums v3 and 64-bit, journal blocks 1..maxlen.
    fn sb(maxlen: u32, sequence: u32, start: u32) -> Vec<u8> {
        let mut b = header(SUPERBLOCK_V2, 0);
        put(&mut b, 0x0C, BS as u32);
        put(&mut b, 0x10, maxlen);
        put(&mut b, 0x14, 1);
        put(&mut b, 0x18, sequence);
        put(&mut b, 0x1C, start);
        put(
            &mut b,
            0x28,
            INCOMPAT_REVOKE | INCOMPAT_64BIT | INCOMPAT_CSUM_V3,
        );
        b[0x30..0x40].copy_from_slice(&[7u8; 16]);
        b
    }

    fn seed() -> u32 {
        crc32c_raw(!0, &[7u8; 16])
    }

    fn seal_tail(b: &mut [u8]) {
        let n = b.len();
        b[n - 4..].fill(0);
        let c = crc32c_raw(seed(), b);
        put(b, n - 4, c);
    }

    /// Transaction `tid` at `pos`: a descriptor, its data blocks (`(target, fill)`),
    /// and a commit block when `commit`. Returns the position after it.
    fn txn(j: &mut Mem, maxlen: u64, pos: u64, tid: u32, data: &[(u64, u8)], commit: bool) -> u64 {
        let wrap = |p: u64| if p >= maxlen { p - (maxlen - 1) } else { p };
        let mut d = header(DESCRIPTOR, tid);
        let mut at = 12;
        for (i, (target, fill)) in data.iter().enumerate() {
            let mut block = vec![*fill; BS];
            if *fill == 0xC0 {
                // Starts with the magic once escaped.
                block[..4].copy_from_slice(&[0, 0, 0, 0]);
            }
            // The tag's checksum is of the copy as logged (escaped), as jbd2 computes it.
            let s = crc32c_raw(seed(), &tid.to_be_bytes());
            let mut flags = if i == 0 { 0 } else { FLAG_SAME_UUID };
            if *fill == 0xC0 {
                flags |= FLAG_ESCAPE;
            }
            if i + 1 == data.len() {
                flags |= FLAG_LAST_TAG;
            }
            put(&mut d, at, *target as u32);
            put(&mut d, at + 4, flags);
            put(&mut d, at + 8, (*target >> 32) as u32);
            put(&mut d, at + 12, crc32c_raw(s, &block));
            at += 16 + if i == 0 { 16 } else { 0 };
            j.0.insert(wrap(pos + 1 + i as u64), block);
        }
        seal_tail(&mut d);
        j.0.insert(pos, d);
        let mut next = wrap(pos + 1 + data.len() as u64);
        if commit {
            let mut c = header(COMMIT, tid);
            let v = crc32c_raw(seed(), &c);
            put(&mut c, 16, v);
            j.0.insert(next, c);
            next = wrap(next + 1);
        }
        next
    }

    fn blocks(r: Replay) -> BTreeMap<u64, u8> {
        match r {
            Replay::Blocks { blocks, .. } => blocks.into_iter().map(|(k, v)| (k, v[100])).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn committed_transactions_replay_in_order_and_the_uncommitted_one_does_not() {
        let mut j = Mem(HashMap::new());
        j.0.insert(0, sb(64, 5, 3));
        let p = txn(&mut j, 64, 3, 5, &[(100, 1), (101, 2)], true);
        let p = txn(&mut j, 64, p, 6, &[(100, 3)], true);
        txn(&mut j, 64, p, 7, &[(102, 4)], false);
        let got = blocks(replay(&mut j, BS).unwrap());
        assert_eq!(got, BTreeMap::from([(100, 3), (101, 2)]));
    }

    #[test]
    fn a_revoke_hides_earlier_copies_of_its_block_only() {
        let mut j = Mem(HashMap::new());
        j.0.insert(0, sb(64, 1, 1));
        let p = txn(&mut j, 64, 1, 1, &[(200, 1), (201, 1)], true);
        // Transaction 2: revokes 200, then commits; transaction 3 logs 200 again.
        let mut r = header(REVOKE, 2);
        put(&mut r, 12, 16 + 8);
        r[16..24].copy_from_slice(&200u64.to_be_bytes());
        seal_tail(&mut r);
        j.0.insert(p, r);
        let mut c = header(COMMIT, 2);
        let v = crc32c_raw(seed(), &c);
        put(&mut c, 16, v);
        j.0.insert(p + 1, c);
        let got = blocks(replay(&mut j, BS).unwrap());
        assert_eq!(
            got,
            BTreeMap::from([(201, 1)]),
            "200 revoked by a later transaction"
        );
        let broken = blocks(replay_with(&mut j, BS, Revokes::SkippedOnPurpose).unwrap());
        assert_eq!(
            broken,
            BTreeMap::from([(200, 1), (201, 1)]),
            "the replay broken on purpose writes the revoked copy"
        );
        txn(&mut j, 64, p + 2, 3, &[(200, 9)], true);
        let got = blocks(replay(&mut j, BS).unwrap());
        assert_eq!(
            got,
            BTreeMap::from([(200, 9), (201, 1)]),
            "logged again after the revoke"
        );
    }

    #[test]
    fn the_log_wraps_and_escaped_blocks_get_their_magic_back() {
        let mut j = Mem(HashMap::new());
        // Blocks 1..8: the transaction starts at 6 and wraps to 1.
        j.0.insert(0, sb(8, 9, 6));
        txn(&mut j, 8, 6, 9, &[(300, 5), (301, 0xC0), (302, 6)], true);
        let r = replay(&mut j, BS).unwrap();
        let Replay::Blocks {
            blocks,
            transactions,
        } = r
        else {
            panic!()
        };
        assert_eq!(transactions, 1);
        assert_eq!(blocks[&301][..4], MAGIC.to_be_bytes());
        assert_eq!((blocks[&300][9], blocks[&302][9]), (5, 6));
    }

    #[test]
    fn a_logged_block_failing_its_checksum_is_corrupt_and_a_clean_journal_replays_nothing() {
        let mut j = Mem(HashMap::new());
        j.0.insert(0, sb(64, 1, 0));
        assert_eq!(replay(&mut j, BS).unwrap(), Replay::Clean);
        j.0.insert(0, sb(64, 1, 1));
        txn(&mut j, 64, 1, 1, &[(10, 1)], true);
        j.0.get_mut(&2).unwrap()[50] ^= 1; // the logged copy
        assert!(
            matches!(replay(&mut j, BS).unwrap(), Replay::Corrupt(w) if w.contains("block 10, at journal block 2) fails its checksum"))
        );
        let mut fast = sb(64, 1, 1);
        put(&mut fast, 0x28, INCOMPAT_CSUM_V3 | INCOMPAT_FAST_COMMIT);
        j.0.insert(0, fast);
        assert!(
            matches!(replay(&mut j, BS).unwrap(), Replay::Unsupported(w) if w.contains("fast"))
        );
    }
}
