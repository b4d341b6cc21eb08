//! A buffer aligned to 4 KiB, for O_DIRECT requests to the emulated disks' loop
//! devices (calibrate, floor, stress).

/// Alignment O_DIRECT needs on a loop device with 4 KiB sectors.
const ALIGN: usize = 4096;

/// `len` bytes starting at a 4 KiB boundary.
pub struct Aligned {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    pub fn new(len: usize) -> Self {
        let buf = vec![0x5au8; len + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        Self { buf, start, len }
    }

    /// The first `n` bytes (at most the buffer's length).
    pub fn get(&mut self, n: usize) -> &mut [u8] {
        &mut self.buf[self.start..self.start + n.min(self.len)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_start_on_a_4k_boundary_and_never_pass_the_length() {
        let mut a = Aligned::new(8192);
        assert_eq!(a.get(4096).as_ptr() as usize % ALIGN, 0);
        assert_eq!(a.get(1 << 20).len(), 8192);
    }
}
