//! A crash state as bytes, read in user space: the rig's base images (every record
//! before the state's base applied) under the state's own writes, kept in memory. What
//! the device daemon serves a mount, without the daemon, a loop device or a mount.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::states::{LogRec, StatePlan};
use crate::emu::writelog::{read_payload, RecordKind};

/// The overlay's unit: the emulated disks' logical block.
pub const BLOCK: u64 = 4096;

pub struct StateBytes {
    /// Base images by the log's disk number.
    images: Vec<File>,
    names: Vec<String>,
    /// The state's writes over the base, by (disk, block).
    overlay: HashMap<(u8, u64), Arc<[u8]>>,
}

impl StateBytes {
    /// `images` at `plan.base`; the plan's pieces read from `log`.
    pub fn build(
        images: Vec<File>,
        names: Vec<String>,
        log: &File,
        recs: &[LogRec],
        plan: &StatePlan,
    ) -> Result<Self> {
        let mut s = Self::of_images(images, names);
        for piece in &plan.overlay {
            let m = &recs[piece.seq as usize];
            if (m.disk as usize) >= s.images.len() {
                continue;
            }
            let whole = [(0, m.len)];
            let ranges: &[(u64, u64)] = piece.ranges.as_deref().unwrap_or(&whole);
            let data = match m.kind {
                RecordKind::Write => Some(read_payload(log, m)?),
                RecordKind::Zero | RecordKind::Discard => None,
                RecordKind::Flush | RecordKind::Marker => continue,
            };
            for &(start, len) in ranges {
                s.write(
                    m.disk,
                    m.offset + start,
                    len,
                    data.as_deref()
                        .map(|d| &d[start as usize..(start + len) as usize]),
                )?;
            }
        }
        Ok(s)
    }

    /// Images as they are, with no state's writes over them.
    pub fn of_images(images: Vec<File>, names: Vec<String>) -> Self {
        Self {
            images,
            names,
            overlay: HashMap::new(),
        }
    }

    /// `len` bytes at `offset` of `disk`: `data`, or zeros.
    fn write(&mut self, disk: u8, offset: u64, len: u64, data: Option<&[u8]>) -> Result<()> {
        let mut at = offset;
        while at < offset + len {
            let block = at / BLOCK;
            let within = (at % BLOCK) as usize;
            let n = ((BLOCK as usize - within) as u64).min(offset + len - at) as usize;
            let mut buf = match self.overlay.get(&(disk, block)) {
                Some(b) => b.to_vec(),
                None if within == 0 && n == BLOCK as usize => vec![0u8; BLOCK as usize],
                None => self.base_block(disk, block)?,
            };
            match data {
                Some(d) => {
                    let from = (at - offset) as usize;
                    buf[within..within + n].copy_from_slice(&d[from..from + n]);
                }
                None => buf[within..within + n].fill(0),
            }
            self.overlay.insert((disk, block), buf.into());
            at += n as u64;
        }
        Ok(())
    }

    fn base_block(&self, disk: u8, block: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; BLOCK as usize];
        self.images[disk as usize]
            .read_exact_at(&mut buf, block * BLOCK)
            .with_context(|| {
                format!(
                    "cannot read block {block} of base image `{}`",
                    self.names[disk as usize]
                )
            })?;
        Ok(buf)
    }

    /// The disk numbered as the log's header names `name`.
    pub fn disk(&self, name: &str) -> Option<u8> {
        self.names.iter().position(|n| n == name).map(|i| i as u8)
    }

    /// Fills `dst` from byte `offset` of `disk` as the state holds it.
    pub fn read(&self, disk: u8, offset: u64, dst: &mut [u8]) -> Result<()> {
        let mut done = 0usize;
        while done < dst.len() {
            let at = offset + done as u64;
            let block = at / BLOCK;
            let within = (at % BLOCK) as usize;
            let n = (BLOCK as usize - within).min(dst.len() - done);
            match self.overlay.get(&(disk, block)) {
                Some(b) => dst[done..done + n].copy_from_slice(&b[within..within + n]),
                None => self.images[disk as usize]
                    .read_exact_at(&mut dst[done..done + n], at)
                    .with_context(|| {
                        format!(
                            "cannot read base image `{}` at {at}",
                            self.names[disk as usize]
                        )
                    })?,
            }
            done += n;
        }
        Ok(())
    }

    /// Block `n` (of [`BLOCK`] bytes) of `region`.
    pub fn region_block(&self, region: &RegionAt, n: u64) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; BLOCK as usize];
        self.read(region.disk, region.offset + n * BLOCK, &mut buf)?;
        Ok(buf)
    }
}

/// A region of the layout by disk number.
#[derive(Debug, Clone, Copy)]
pub struct RegionAt {
    pub disk: u8,
    pub offset: u64,
    pub size: u64,
}
