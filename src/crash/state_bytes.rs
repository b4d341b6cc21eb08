//! A crash state as bytes, read in user space: the rig's base images (every record
//! before the state's base applied) under the state's own writes, kept in memory. What
//! the device daemon serves a mount, without the daemon, a loop device or a mount.
//!
//! The base images are read through shared mappings the rig keeps for its life: a read
//! is a copy, not a system call (a state's check reads hundreds of blocks, and a
//! `pread` of one block cost more than copying it). The rig moves its base forward with
//! `pwrite` to the same files, which the mappings see: one page cache under both.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use memmap2::Mmap;

use super::states::{LogRec, StatePlan};
use crate::emu::writelog::{read_payload, RecordKind};

/// The overlay's unit: the emulated disks' logical block.
pub const BLOCK: u64 = 4096;

/// A base image mapped for reading, shared by the states built over it.
pub type MappedImage = Arc<Mmap>;

/// Maps `file` (a base image) for reading. Its length must not shrink while mapped: the
/// rig's images keep their disk's size until the rig removes them, after the mappings.
pub fn map_image(file: &File, name: &str) -> Result<MappedImage> {
    // SAFETY: the image is the rig's own file, never truncated while mapped (see
    // above); writes to it through `pwrite` are coherent with a shared mapping.
    let map = unsafe { Mmap::map(file) }
        .with_context(|| format!("cannot map base image `{name}` for reading"))?;
    Ok(Arc::new(map))
}

pub struct StateBytes {
    /// Base images by the log's disk number.
    images: Vec<MappedImage>,
    names: Vec<String>,
    /// The state's writes over the base, by (disk, block).
    overlay: HashMap<(u8, u64), Arc<[u8]>>,
}

impl StateBytes {
    /// `images` at `plan.base`; the plan's pieces read from `log`.
    pub fn build(
        images: Vec<MappedImage>,
        names: Vec<String>,
        log: &File,
        recs: &[LogRec],
        plan: &StatePlan,
    ) -> Result<Self> {
        let mut s = Self {
            images,
            names,
            overlay: HashMap::new(),
        };
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
    pub fn of_images(images: Vec<File>, names: Vec<String>) -> Result<Self> {
        let images = images
            .iter()
            .zip(&names)
            .map(|(f, n)| map_image(f, n))
            .collect::<Result<_>>()?;
        Ok(Self {
            images,
            names,
            overlay: HashMap::new(),
        })
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
        self.base(disk, block * BLOCK, &mut buf)?;
        Ok(buf)
    }

    /// `dst` from byte `at` of base image `disk`.
    fn base(&self, disk: u8, at: u64, dst: &mut [u8]) -> Result<()> {
        let image = &self.images[disk as usize];
        let end = at as usize + dst.len();
        if end > image.len() {
            bail!(
                "cannot read base image `{}` at {at}: it ends at {}",
                self.names[disk as usize],
                image.len()
            );
        }
        dst.copy_from_slice(&image[at as usize..end]);
        Ok(())
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
                None => self.base(disk, at, &mut dst[done..done + n])?,
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
