use super::*;

const B: usize = 4096;

fn header(kind: u32, tid: u32) -> Vec<u8> {
    let mut b = vec![0u8; B];
    b[0..4].copy_from_slice(&JBD2_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&kind.to_be_bytes());
    b[8..12].copy_from_slice(&tid.to_be_bytes());
    b
}

fn superblock(sequence: u32, start: u32, incompat: u32) -> Vec<u8> {
    let mut b = header(SUPERBLOCK_V2, 0);
    b[12..16].copy_from_slice(&4096u32.to_be_bytes());
    b[24..28].copy_from_slice(&sequence.to_be_bytes());
    b[28..32].copy_from_slice(&start.to_be_bytes());
    b[0x28..0x2c].copy_from_slice(&incompat.to_be_bytes());
    b
}

/// A descriptor with `tags` tags of `tag_bytes` each, the first followed by a UUID
/// (as jbd2 writes it), the last marked last.
fn descriptor(tid: u32, tags: usize, tag_bytes: usize) -> Vec<u8> {
    let mut b = header(DESCRIPTOR, tid);
    let mut p = 12;
    for i in 0..tags {
        let mut flags = 0u16;
        if i > 0 {
            flags |= TAG_FLAG_SAME_UUID;
        }
        if i + 1 == tags {
            flags |= TAG_FLAG_LAST_TAG;
        }
        b[p..p + 4].copy_from_slice(&(1000 + i as u32).to_be_bytes());
        b[p + 6..p + 8].copy_from_slice(&flags.to_be_bytes());
        p += tag_bytes + if i == 0 { 16 } else { 0 };
    }
    b
}

fn data(fill: u8) -> Vec<u8> {
    vec![fill; B]
}

fn write(blocks: &[Vec<u8>]) -> Vec<u8> {
    blocks.concat()
}

#[test]
fn blocks_are_found_at_their_offsets_inside_a_multi_block_write() {
    let mut s = Scanner::default();
    let w = write(&[
        descriptor(7, 3, 16),
        data(1),
        data(2),
        data(3),
        header(REVOKE, 7),
        header(COMMIT, 7),
    ]);
    let hits = s.scan(40 * 4096, &w);
    assert_eq!(
        hits,
        [
            JournalHit {
                at: 0,
                block: JournalBlock::Descriptor { tid: 7, tags: 3 }
            },
            JournalHit {
                at: 4 * 4096,
                block: JournalBlock::Revoke { tid: 7 }
            },
            JournalHit {
                at: 5 * 4096,
                block: JournalBlock::Commit { tid: 7 }
            },
        ]
    );
}

#[test]
fn the_magic_off_a_block_start_is_data() {
    let mut s = Scanner::default();
    // The write starts 512 bytes into a block: its first bytes are not a block start,
    // its byte 3584 is.
    let mut w = vec![0u8; 2 * B - 512];
    w[..12].copy_from_slice(&header(COMMIT, 3)[..12]);
    w[3584..3584 + 12].copy_from_slice(&header(COMMIT, 4)[..12]);
    let hits = s.scan(10 * 4096 + 512, &w);
    assert_eq!(
        hits,
        [JournalHit {
            at: 3584,
            block: JournalBlock::Commit { tid: 4 }
        }],
        "the magic at the write's own start, mid-block, is someone's data"
    );
    // Inside a block, even at a 512-byte boundary, the magic is data too.
    let mut d = data(0);
    d[512..524].copy_from_slice(&header(COMMIT, 9)[..12]);
    assert!(s.scan(0, &d).is_empty());
    // A block type jbd2 does not write is no journal block.
    assert!(s.scan(0, &header(9, 1)).is_empty());
}

#[test]
fn the_superblock_sets_the_tag_size_of_later_descriptors() {
    // ext3's journal: no checksums, 32-bit block numbers, 8-byte tags.
    let mut s = Scanner::default();
    let hits = s.scan(0, &superblock(1, 1, 0x1));
    assert_eq!(hits[0].block, JournalBlock::Superblock { tail: Some(1) });
    let hits = s.scan(4096, &descriptor(1, 5, 8));
    assert_eq!(hits[0].block, JournalBlock::Descriptor { tid: 1, tags: 5 });
    // ext4's: checksum v3, 16-byte tags.
    let mut s = Scanner::default();
    s.scan(0, &superblock(1, 1, INCOMPAT_64BIT | INCOMPAT_CSUM_V3));
    let hits = s.scan(4096, &descriptor(2, 40, 16));
    assert_eq!(hits[0].block, JournalBlock::Descriptor { tid: 2, tags: 40 });
    // A clean journal: s_start 0.
    let hits = s.scan(0, &superblock(9, 0, 0));
    assert_eq!(hits[0].block, JournalBlock::Superblock { tail: None });
}

fn track(blocks: &[JournalBlock]) -> JournalLive {
    let mut t = Tracker::default();
    for b in blocks {
        t.apply(b);
    }
    t.live()
}

use JournalBlock::{Commit, Descriptor, Revoke, Superblock};

#[test]
fn the_live_journal_is_the_committed_run_from_the_tail() {
    let mut log = vec![
        Superblock { tail: Some(5) },
        Descriptor { tid: 5, tags: 4 },
        Commit { tid: 5 },
        Descriptor { tid: 6, tags: 2 },
        Revoke { tid: 6 },
        Commit { tid: 6 },
        // Not committed: the replay stops before it.
        Descriptor { tid: 7, tags: 9 },
    ];
    assert_eq!(
        track(&log),
        JournalLive {
            transactions: 2,
            blocks: (1 + 4 + 1) + (1 + 2 + 1 + 1)
        }
    );
    // The tail moves past 5.
    log.push(Superblock { tail: Some(6) });
    assert_eq!(
        track(&log),
        JournalLive {
            transactions: 1,
            blocks: 5
        }
    );
    // A gap ends the walk: 8 committed, 7 not.
    log.push(Descriptor { tid: 8, tags: 1 });
    log.push(Commit { tid: 8 });
    assert_eq!(track(&log).transactions, 1);
    // A clean journal holds nothing, whatever was committed before it.
    log.push(Commit { tid: 7 });
    assert_eq!(track(&log).transactions, 3);
    log.push(Superblock { tail: None });
    assert_eq!(track(&log), JournalLive::default());
    // The next mount's tail, and its first transaction.
    log.push(Superblock { tail: Some(9) });
    log.push(Descriptor { tid: 9, tags: 1 });
    log.push(Commit { tid: 9 });
    assert_eq!(
        track(&log),
        JournalLive {
            transactions: 1,
            blocks: 3
        }
    );
}

#[test]
fn tids_wrap() {
    let live = track(&[
        Superblock {
            tail: Some(u32::MAX),
        },
        Commit { tid: u32::MAX },
        Commit { tid: 0 },
        Superblock {
            tail: Some(u32::MAX),
        },
    ]);
    assert_eq!(live.transactions, 2);
    assert!(tid_before(u32::MAX, 0) && !tid_before(0, u32::MAX));
}

#[test]
fn without_a_superblock_the_walk_starts_at_the_oldest_commit() {
    let live = track(&[Commit { tid: 3 }, Commit { tid: 4 }]);
    assert_eq!(live.transactions, 2);
    assert_eq!(track(&[]), JournalLive::default());
}
