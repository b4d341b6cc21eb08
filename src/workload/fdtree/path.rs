//! The tree's path buffer: one NUL-terminated path that every operation of a phase
//! extends and shortens in place, so the timed loop neither copies nor allocates.

use super::*;

/// A NUL-terminated path that grows and shrinks one component at a time, so that
/// every operation of a phase reuses one buffer and hands the kernel a pointer to it
/// without copying or allocating.
#[derive(Debug, Clone)]
pub struct TreePath {
    /// `buf[len]` is the terminating NUL; `buf[..len]` holds no NUL. Always has room
    /// for one more component, so a push writes in place without a length check
    /// per byte or a `memcpy` call.
    pub(super) buf: Box<[u8]>,
    pub(super) len: usize,
}

impl TreePath {
    pub fn new(root: &Path) -> anyhow::Result<Self> {
        let bytes = root.as_os_str().as_bytes();
        if bytes.contains(&0) {
            bail!("path {} contains a NUL byte", root.display());
        }
        // Room for the deepest path the kernel accepts, so a valid tree never
        // reallocates mid-phase.
        let mut buf = vec![0u8; bytes.len().max(PATH_MAX) + COMPONENT_MAX].into_boxed_slice();
        buf[..bytes.len()].copy_from_slice(bytes);
        Ok(TreePath {
            buf,
            len: bytes.len(),
        })
    }

    /// The path without its terminating NUL.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn to_path_buf(&self) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(self.as_bytes()))
    }

    pub(super) fn as_ptr(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }

    /// Appends `/L<level><kind><n>` and returns the mark that [`Self::pop`] restores.
    #[inline]
    pub(super) fn push(&mut self, level: u32, kind: u8, n: u32) -> usize {
        let mark = self.len;
        let slot: &mut [u8; COMPONENT_MAX] = (&mut self.buf[mark..mark + COMPONENT_MAX])
            .try_into()
            .expect("slot is COMPONENT_MAX long");
        self.len = mark + encode_component(slot, level, kind, n);
        if self.buf.len() - self.len < COMPONENT_MAX {
            self.grow();
        }
        mark
    }

    /// Only trees deeper than PATH_MAX get here (e.g. [`plan_ops`] on a tree that
    /// [`Fdtree::validate`] would refuse); the engine never does.
    #[cold]
    pub(super) fn grow(&mut self) {
        let mut bigger = vec![0u8; self.buf.len() * 2].into_boxed_slice();
        bigger[..=self.len].copy_from_slice(&self.buf[..=self.len]);
        self.buf = bigger;
    }

    #[inline]
    pub(super) fn pop(&mut self, mark: usize) {
        self.len = mark;
        self.buf[mark] = 0;
    }
}

/// Writes `/L<level><kind><n>` and a NUL into `out`; returns the length without the
/// NUL.
#[inline]
pub(super) fn encode_component(
    out: &mut [u8; COMPONENT_MAX],
    level: u32,
    kind: u8,
    n: u32,
) -> usize {
    out[0] = b'/';
    out[1] = b'L';
    let at = 2 + encode_u32(tail(out, 2), level);
    out[at] = kind;
    let end = at + 1 + encode_u32(tail(out, at + 1), n);
    out[end] = 0;
    end
}

/// The 10 bytes of `out` from `at`, sized so the digit writes need no bounds checks.
#[inline]
pub(super) fn tail(out: &mut [u8; COMPONENT_MAX], at: usize) -> &mut [u8; 10] {
    (&mut out[at..at + 10]).try_into().expect("10 bytes")
}

/// Decimal digits of `v` at the start of `out`, written in place from the last.
#[inline]
pub(super) fn encode_u32(out: &mut [u8; 10], mut v: u32) -> usize {
    let len = decimal_len(v);
    for slot in out[..len].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
    len
}

pub(super) fn decimal_len(v: u32) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}
