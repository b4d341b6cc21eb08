//! The real file operations: the in-place name buffer, the descriptors, and glibc's
//! stdio buffering reproduced over the engines' shared [`sys`] layer, so PostMark's
//! `buffering` issues the system calls stdio would.

use super::*;

pub use crate::workload::sys::FsOpError;
use crate::workload::sys::{self, SysError};

/// A NUL-terminated path rebuilt in place for every operation, so no operation
/// allocates.
pub(super) struct NameBuf {
    /// `<location dir>/` for each location, as bytes.
    pub(super) prefixes: Vec<Vec<u8>>,
    pub(super) buf: Vec<u8>,
}

impl NameBuf {
    pub(super) fn new(dirs: &[PathBuf]) -> anyhow::Result<Self> {
        let mut prefixes = Vec::with_capacity(dirs.len());
        for d in dirs {
            let mut p = d.as_os_str().as_bytes().to_vec();
            if p.contains(&0) {
                bail!("path {} contains a NUL byte", d.display());
            }
            p.push(b'/');
            prefixes.push(p);
        }
        let longest = prefixes.iter().map(Vec::len).max().unwrap_or(0);
        // `s<u32>/<u32>` and the NUL.
        Ok(NameBuf {
            prefixes,
            buf: Vec::with_capacity(longest + 32),
        })
    }

    #[inline]
    pub(super) fn set(&mut self, slot: &Slot) -> *const libc::c_char {
        self.buf.clear();
        self.buf
            .extend_from_slice(&self.prefixes[slot.location as usize]);
        if let Some(s) = slot.subdir {
            self.buf.push(b's');
            push_decimal(&mut self.buf, s);
            self.buf.push(b'/');
        }
        push_decimal(&mut self.buf, slot.number);
        self.buf.push(0);
        self.buf.as_ptr().cast()
    }

    pub(super) fn path(&self) -> PathBuf {
        let end = self.buf.len().saturating_sub(1);
        PathBuf::from(OsStr::from_bytes(&self.buf[..end]))
    }

    #[cold]
    pub(super) fn error(&self, op: &'static str) -> FsOpError {
        // `last` reads errno before anything else can overwrite it.
        SysError::last(op).at(self.path())
    }
}

#[inline]
pub(super) fn push_decimal(out: &mut Vec<u8>, v: u32) {
    let mut digits = [0u8; 10];
    let mut n = v;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The real file operations.
pub struct SysFiles {
    pub(super) name: NameBuf,
    pub(super) buffered: bool,
    pub(super) read_block: usize,
    pub(super) write_block: usize,
    /// stdio's buffer for reads (writes go straight from the source buffer, whose
    /// bytes are what stdio's buffer would hold).
    pub(super) stdio_buf: Vec<u8>,
    /// PostMark's `read_buffer` of `read` bytes.
    pub(super) user_buf: Vec<u8>,
}

impl SysFiles {
    /// `dirs`: one directory per location, in order (or the working directory).
    pub fn new(cfg: &Postmark, dirs: &[PathBuf]) -> anyhow::Result<Self> {
        Ok(SysFiles {
            name: NameBuf::new(dirs)?,
            buffered: cfg.buffering,
            read_block: cfg.read_block as usize,
            write_block: cfg.write_block as usize,
            stdio_buf: vec![0; STDIO_BUFFER],
            // A read never asks for more than the largest file (appends stop at
            // `high`), so a huge `set read` allocates no more than that.
            user_buf: vec![0; cfg.read_block.min(cfg.size_high) as usize],
        })
    }

    #[inline]
    pub(super) fn open(
        &mut self,
        slot: &Slot,
        flags: libc::c_int,
        mode: libc::c_uint,
    ) -> Result<Fd, FsOpError> {
        let path = self.name.set(slot);
        // SAFETY: `path` points into `self.name.buf`, NUL-terminated, alive for the call.
        let fd = unsafe { libc::open(path, flags | libc::O_CLOEXEC, mode) };
        if fd < 0 {
            Err(self.name.error("open"))
        } else {
            Ok(Fd(fd))
        }
    }

    /// Writes `size` bytes of `source` in PostMark's blocks, through stdio or not.
    pub(super) fn write_data(
        &mut self,
        fd: &Fd,
        source: &[u8],
        size: usize,
    ) -> Result<(), FsOpError> {
        let wb = self.write_block;
        let full = size / wb;
        if self.buffered {
            let mut out = StdioOut::default();
            for b in 0..full {
                out.fwrite(fd, source, b * wb, wb, &self.name)?;
            }
            out.fwrite(fd, source, full * wb, size - full * wb, &self.name)?;
            out.flush(fd, source, &self.name)
        } else {
            for b in 0..full {
                write_all(fd, &source[b * wb..(b + 1) * wb], &self.name)?;
            }
            // PostMark writes the remainder even when it is empty.
            write_all(fd, &source[full * wb..size], &self.name)
        }
    }

    pub(super) fn read_data(&mut self, fd: &Fd, size: usize) -> Result<(), FsOpError> {
        let rb = self.read_block;
        let full = size / rb;
        if self.buffered {
            let mut input = StdioIn::default();
            for _ in 0..full {
                input.fread(
                    fd,
                    &mut self.stdio_buf,
                    &mut self.user_buf[..rb],
                    &self.name,
                )?;
            }
            let rest = &mut self.user_buf[..size - full * rb];
            input.fread(fd, &mut self.stdio_buf, rest, &self.name)
        } else {
            for _ in 0..full {
                sys_read(fd, &mut self.user_buf[..rb], &self.name)?;
            }
            sys_read(fd, &mut self.user_buf[..size - full * rb], &self.name)?;
            Ok(())
        }
    }
}

/// Closes on drop, so an error mid-file does not leak the descriptor; the normal
/// path closes explicitly to check the result.
pub(super) struct Fd(libc::c_int);

impl Fd {
    pub(super) fn close(self, name: &NameBuf) -> Result<(), FsOpError> {
        let fd = self.0;
        std::mem::forget(self);
        // SAFETY: `fd` is open and owned here; forgotten above so never closed twice.
        if unsafe { libc::close(fd) } == 0 {
            Ok(())
        } else {
            Err(name.error("close"))
        }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: only reached on error paths, with `self.0` still open.
        unsafe { libc::close(self.0) };
    }
}

/// One `write` as PostMark or stdio issues it (even of nothing), resumed after short
/// writes and EINTR as stdio does.
#[inline]
pub(super) fn write_all(fd: &Fd, data: &[u8], name: &NameBuf) -> Result<(), FsOpError> {
    match sys::write_at_least_once(fd.0, data) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.at(name.path())),
    }
}

#[inline]
pub(super) fn sys_read(fd: &Fd, buf: &mut [u8], name: &NameBuf) -> Result<usize, FsOpError> {
    sys::read_once(fd.0, buf).map_err(|e| e.at(name.path()))
}

/// The write side of a glibc `FILE` (`_IO_new_file_xsputn`): data is copied into
/// the 4096-byte buffer until full; a write that overflows it flushes the buffer,
/// then writes the whole blocks of the rest directly and buffers the tail. Since
/// PostMark's writes take consecutive bytes of the source buffer, the buffer's
/// contents are always a range of the source, so the engine writes from there
/// without copying.
#[derive(Default)]
pub(super) struct StdioOut {
    /// Source offset of the buffered bytes, and how many there are.
    pub(super) start: usize,
    pub(super) fill: usize,
    /// glibc allocates the buffer on the first write that does not fit.
    pub(super) allocated: bool,
}

impl StdioOut {
    pub(super) fn fwrite(
        &mut self,
        fd: &Fd,
        source: &[u8],
        at: usize,
        n: usize,
        name: &NameBuf,
    ) -> Result<(), FsOpError> {
        if n == 0 {
            return Ok(());
        }
        let space = if self.allocated {
            STDIO_BUFFER - self.fill
        } else {
            0
        };
        let copied = space.min(n);
        if self.fill == 0 {
            self.start = at;
        }
        self.fill += copied;
        let mut pos = at + copied;
        let mut to_do = n - copied;
        if to_do == 0 {
            return Ok(());
        }
        self.flush(fd, source, name)?;
        self.allocated = true;
        let direct = to_do - to_do % STDIO_BUFFER;
        if direct > 0 {
            write_all(fd, &source[pos..pos + direct], name)?;
            pos += direct;
            to_do -= direct;
        }
        self.start = pos;
        self.fill = to_do;
        Ok(())
    }

    /// `fflush`/`fclose`: whatever is buffered, in one call.
    pub(super) fn flush(
        &mut self,
        fd: &Fd,
        source: &[u8],
        name: &NameBuf,
    ) -> Result<(), FsOpError> {
        if self.fill > 0 {
            write_all(fd, &source[self.start..self.start + self.fill], name)?;
            self.fill = 0;
        }
        Ok(())
    }
}

/// The read side of a glibc `FILE` (`_IO_file_xsgetn`): requests smaller than the
/// buffer are served from it, refilled with 4096-byte `read`s; larger ones read
/// their whole blocks directly into the caller's buffer.
#[derive(Default)]
pub(super) struct StdioIn {
    /// Unread bytes left in the stdio buffer.
    pub(super) have: usize,
    pub(super) eof: bool,
}

impl StdioIn {
    pub(super) fn fread(
        &mut self,
        fd: &Fd,
        stdio: &mut [u8],
        user: &mut [u8],
        name: &NameBuf,
    ) -> Result<(), FsOpError> {
        let mut want = user.len();
        while want > 0 && !self.eof {
            if want <= self.have {
                self.have -= want;
                return Ok(());
            }
            want -= self.have;
            self.have = 0;
            let got = if want < STDIO_BUFFER {
                let got = sys_read(fd, stdio, name)?;
                self.have = got;
                got
            } else {
                let count = want - want % STDIO_BUFFER;
                let got = sys_read(fd, &mut user[..count], name)?;
                want -= got;
                got
            };
            self.eof = got == 0;
        }
        Ok(())
    }
}

impl SysFiles {
    /// `unlink` for clean-up: a file that is not there is not an error.
    pub(super) fn remove_quietly(&mut self, slot: &Slot) -> Result<(), FsOpError> {
        let path = self.name.set(slot);
        // SAFETY: as in `open`.
        if unsafe { libc::unlink(path) } != 0 && Errno::last() != Errno::ENOENT {
            return Err(self.name.error("unlink"));
        }
        Ok(())
    }
}

impl FileOps for SysFiles {
    fn create(&mut self, source: &[u8], slot: &Slot) -> anyhow::Result<()> {
        let (flags, mode) = if self.buffered {
            (libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o666) // fopen "w"
        } else {
            (libc::O_RDWR | libc::O_CREAT, 0o644)
        };
        let fd = self.open(slot, flags, mode)?;
        self.write_data(&fd, source, slot.size as usize)?;
        Ok(fd.close(&self.name)?)
    }

    fn read(&mut self, slot: &Slot) -> anyhow::Result<()> {
        let fd = self.open(slot, libc::O_RDONLY, 0)?;
        self.read_data(&fd, slot.size as usize)?;
        Ok(fd.close(&self.name)?)
    }

    fn append(&mut self, source: &[u8], slot: &Slot, block: u32) -> anyhow::Result<()> {
        let (flags, mode) = if self.buffered {
            (libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND, 0o666) // fopen "a"
        } else {
            (libc::O_RDWR | libc::O_APPEND, 0o644)
        };
        let fd = self.open(slot, flags, mode)?;
        self.write_data(&fd, source, block as usize)?;
        Ok(fd.close(&self.name)?)
    }

    fn delete(&mut self, slot: &Slot) -> anyhow::Result<()> {
        let path = self.name.set(slot);
        // SAFETY: as in `open`.
        if unsafe { libc::unlink(path) } != 0 {
            return Err(self.name.error("unlink").into());
        }
        Ok(())
    }
}
