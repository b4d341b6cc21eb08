//! A copy-on-write overlay over a disk's image, for serving crash states: the image
//! holds the state's base (the log replayed up to a point), the overlay holds the
//! state's own writes and every write recovery makes, and clearing the overlay brings
//! the base back untouched for the next state. Blocks are 4 KiB, the loop devices'
//! sector size; a write that covers part of a block copies the rest from below first.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub(super) const BLOCK: u64 = 4096;

#[derive(Default)]
pub(super) struct Overlay {
    blocks: HashMap<u64, Box<[u8]>>,
    /// The disk reads as zeros beneath the overlay: a RAM disk that came back empty
    /// after the power cut.
    pub(super) lost: bool,
}

impl Overlay {
    pub(super) fn clear(&mut self) {
        self.blocks = HashMap::new();
        self.lost = false;
    }

    #[cfg(test)]
    pub(super) fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Reads `buf.len()` bytes at `offset`: overlay blocks where there are any, the
    /// image (or zeros, when lost) elsewhere.
    pub(super) fn read_at(&self, image: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if self.lost {
            buf.fill(0);
        } else {
            image.read_exact_at(buf, offset)?;
        }
        if self.blocks.is_empty() {
            return Ok(());
        }
        let end = offset + buf.len() as u64;
        let mut b = offset / BLOCK;
        while b * BLOCK < end {
            if let Some(data) = self.blocks.get(&b) {
                let (from, to) = ((b * BLOCK).max(offset), ((b + 1) * BLOCK).min(end));
                buf[(from - offset) as usize..(to - offset) as usize]
                    .copy_from_slice(&data[(from - b * BLOCK) as usize..(to - b * BLOCK) as usize]);
            }
            b += 1;
        }
        Ok(())
    }

    /// Writes `data` at `offset` into the overlay (`None`: zeros of `len` bytes).
    pub(super) fn write_at(
        &mut self,
        image: &File,
        data: Option<&[u8]>,
        offset: u64,
        len: u64,
    ) -> io::Result<()> {
        let end = offset + len;
        let mut b = offset / BLOCK;
        while b * BLOCK < end {
            let (from, to) = ((b * BLOCK).max(offset), ((b + 1) * BLOCK).min(end));
            if !self.blocks.contains_key(&b) {
                let mut fresh = vec![0u8; BLOCK as usize].into_boxed_slice();
                let whole = from == b * BLOCK && to == (b + 1) * BLOCK;
                if !whole && !self.lost {
                    read_block(image, &mut fresh, b * BLOCK)?;
                }
                self.blocks.insert(b, fresh);
            }
            let block = self.blocks.get_mut(&b).expect("inserted");
            let dst = &mut block[(from - b * BLOCK) as usize..(to - b * BLOCK) as usize];
            match data {
                Some(d) => {
                    dst.copy_from_slice(&d[(from - offset) as usize..(to - offset) as usize])
                }
                None => dst.fill(0),
            }
            b += 1;
        }
        Ok(())
    }
}

/// A block of the image; past its end (a disk size that is not a block multiple
/// cannot happen, the daemon refuses those) reads as zeros.
fn read_block(image: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match image.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf[got..].fill(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(bytes: &[u8]) -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        std::fs::write(&path, bytes).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (dir, f)
    }

    #[test]
    fn writes_land_in_the_overlay_and_the_image_is_never_written() {
        let base: Vec<u8> = (0..3 * BLOCK).map(|i| (i % 251) as u8).collect();
        let (_d, img) = image(&base);
        let mut o = Overlay::default();
        // A write across a block boundary, covering neither block whole.
        o.write_at(&img, Some(&[7u8; 100]), BLOCK - 50, 100)
            .unwrap();
        let mut got = vec![0u8; 3 * BLOCK as usize];
        o.read_at(&img, &mut got, 0).unwrap();
        let mut want = base.clone();
        want[(BLOCK - 50) as usize..(BLOCK + 50) as usize].fill(7);
        assert_eq!(got, want);
        let mut on_disk = vec![0u8; 3 * BLOCK as usize];
        img.read_exact_at(&mut on_disk, 0).unwrap();
        assert_eq!(on_disk, base, "the base image changed");
        assert_eq!(o.blocks(), 2);
        // Zeros, then a read of part of a block.
        o.write_at(&img, None, 2 * BLOCK + 10, 20).unwrap();
        let mut part = vec![0u8; 40];
        o.read_at(&img, &mut part, 2 * BLOCK).unwrap();
        assert_eq!(
            &part[..10],
            &base[2 * BLOCK as usize..2 * BLOCK as usize + 10]
        );
        assert!(part[10..30].iter().all(|&b| b == 0));
        assert_eq!(
            &part[30..],
            &base[2 * BLOCK as usize + 30..2 * BLOCK as usize + 40]
        );
        o.clear();
        o.read_at(&img, &mut got, 0).unwrap();
        assert_eq!(got, base, "clearing the overlay brings the base back");
    }

    #[test]
    fn a_lost_disk_reads_zeros_beneath_its_overlay() {
        let (_d, img) = image(&vec![9u8; 2 * BLOCK as usize]);
        let mut o = Overlay {
            lost: true,
            ..Overlay::default()
        };
        o.write_at(&img, Some(&[1u8; 10]), 5, 10).unwrap();
        let mut got = vec![0xffu8; BLOCK as usize];
        o.read_at(&img, &mut got, 0).unwrap();
        assert!(got[..5].iter().all(|&b| b == 0));
        assert!(got[5..15].iter().all(|&b| b == 1));
        assert!(
            got[15..].iter().all(|&b| b == 0),
            "a partial write must not pull in the lost base"
        );
    }
}
