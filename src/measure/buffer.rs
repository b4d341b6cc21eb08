//! The buffer every O_DIRECT request is made from: the measuring engine's (qualify,
//! calibrate), `device floor`'s, `device stress`'s and the path probe's.

use anyhow::{Context, Result};

/// A buffer for `O_DIRECT` requests of up to `len` bytes, in one transparent huge
/// page when the kernel gives one (2 MiB-aligned, `MADV_HUGEPAGE`): physically
/// contiguous, so a 1 MiB request is a few block segments and the loop device passes
/// it on whole. From scattered 4 KiB pages it would be 256 segments, more than a loop
/// device takes (128), and the daemon would see two 512 KiB requests instead.
pub struct DirectBuf {
    ptr: *mut u8,
    map_len: usize,
    start: usize,
    len: usize,
}

// SAFETY: the mapping is owned by the buffer alone and freed once, on drop.
unsafe impl Send for DirectBuf {}

impl DirectBuf {
    const HUGE: usize = 2 << 20;

    pub fn new(len: usize) -> Result<Self> {
        let map_len = len.div_ceil(Self::HUGE) * Self::HUGE + Self::HUGE;
        // SAFETY: an anonymous private mapping; the pointer is checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("cannot map an I/O buffer");
        }
        let ptr = ptr as *mut u8;
        let start = ptr.align_offset(Self::HUGE);
        // SAFETY: the range lies inside the mapping. Without huge pages the buffer is
        // still page-aligned, which is all O_DIRECT needs.
        unsafe {
            libc::madvise(
                ptr.add(start) as *mut libc::c_void,
                map_len - start,
                libc::MADV_HUGEPAGE,
            );
            std::ptr::write_bytes(ptr.add(start), 0x5a, len);
        }
        Ok(Self {
            ptr,
            map_len,
            start,
            len,
        })
    }

    /// The first `n` bytes (at most the buffer's length).
    pub fn get(&mut self, n: usize) -> &mut [u8] {
        // SAFETY: inside the mapping, which lives as long as `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(self.start), n.min(self.len)) }
    }
}

impl Drop for DirectBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_start_on_a_4k_boundary_and_never_pass_the_length() {
        let mut a = DirectBuf::new(8192).unwrap();
        assert_eq!(a.get(4096).as_ptr() as usize % 4096, 0);
        assert_eq!(a.get(1 << 20).len(), 8192);
        assert!(a.get(8192).iter().all(|&b| b == 0x5a));
    }
}
