//! PostMark's random stream: the MT19937 generator it ships, seeded and drawn as it
//! does, so that a seed gives the original's sequence of operations.

pub(super) const MT_N: usize = 624;
pub(super) const MT_M: usize = 397;

/// MT19937 as PostMark ships it (the 1999 "integer version" with `sgenrand`).
#[derive(Clone)]
pub struct Mt19937 {
    pub(super) mt: [u32; MT_N],
    pub(super) mti: usize,
}

impl Mt19937 {
    /// The old seeding: each word takes the high halves of two successive Knuth
    /// 69069 LCG states. (`init_genrand`, the 2002 seeding, gives another stream.)
    /// PostMark's `unsigned long` is 64 bits, but only the low 32 ever reach the
    /// state, so 32-bit wrapping arithmetic is exact.
    pub fn sgenrand(seed: u32) -> Self {
        let mut mt = [0u32; MT_N];
        let mut s = seed;
        for word in mt.iter_mut() {
            let high = s & 0xffff_0000;
            s = s.wrapping_mul(69069).wrapping_add(1);
            *word = high | ((s & 0xffff_0000) >> 16);
            s = s.wrapping_mul(69069).wrapping_add(1);
        }
        Mt19937 { mt, mti: MT_N }
    }

    #[inline]
    pub fn genrand(&mut self) -> u32 {
        if self.mti >= MT_N {
            self.refill();
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    #[cold]
    pub(super) fn refill(&mut self) {
        let twist = |a: u32, b: u32, far: u32| {
            let y = (a & 0x8000_0000) | (b & 0x7fff_ffff);
            far ^ (y >> 1) ^ if y & 1 == 1 { 0x9908_b0df } else { 0 }
        };
        for k in 0..MT_N {
            let far = self.mt[(k + MT_M) % MT_N];
            self.mt[k] = twist(self.mt[k], self.mt[(k + 1) % MT_N], far);
        }
        self.mti = 0;
    }

    /// PostMark's `RND(x)`: no draw at all when `x` is 0, which matters for the
    /// stream (e.g. `set size 100 100` draws no sizes).
    #[inline]
    pub fn rnd(&mut self, x: u32) -> u32 {
        if x == 0 {
            0
        } else {
            self.genrand() % x
        }
    }
}
