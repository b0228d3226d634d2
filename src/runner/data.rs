//! Content of written blocks: incompressible, and different in every block written, so neither
//! compression nor deduplication flatters a layout (the `dd if=/dev/zero` pitfall).
//!
//! Each slot buffer is filled once with pseudo-random bytes; before every write an 8-byte
//! stamp (a fresh random word) is put at every 4 KiB boundary, which makes each written block
//! unique at a cost of a few stores per IO instead of regenerating the whole block.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// Stamps are this far apart.
pub const STAMP_STRIDE: usize = 4096;

/// Fills buffers and stamps blocks for one thread.
pub struct DataGen {
    rng: Xoshiro256PlusPlus,
    zero: bool,
}

impl DataGen {
    /// A generator; `zero` makes every block zeros and stamping a no-op.
    pub fn new(seed: u64, zero: bool) -> DataGen {
        DataGen {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xD47A),
            zero,
        }
    }

    /// Fills a whole buffer (once per slot).
    pub fn fill(&mut self, buf: &mut [u8]) {
        if self.zero {
            buf.fill(0);
        } else {
            self.rng.fill_bytes(buf);
        }
    }

    /// Makes the first `len` bytes of `buf` a block never written before.
    #[inline]
    pub fn stamp(&mut self, buf: &mut [u8], len: usize) {
        if self.zero {
            return;
        }
        let len = len.min(buf.len());
        let mut off = 0;
        while off + 8 <= len {
            let w = self.rng.next_u64().to_ne_bytes();
            buf[off..off + 8].copy_from_slice(&w);
            off += STAMP_STRIDE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_data_is_not_zero_and_blocks_differ() {
        let mut g = DataGen::new(1, false);
        let mut a = vec![0u8; 8192];
        g.fill(&mut a);
        assert!(a.iter().filter(|b| **b == 0).count() < 8192 / 64);
        let before = a.clone();
        g.stamp(&mut a, 8192);
        assert_ne!(a[..4096], before[..4096]);
        assert_ne!(a[4096..], before[4096..]);
        assert_eq!(a[8..4096], before[8..4096]);
    }

    #[test]
    fn zero_data_stays_zero() {
        let mut g = DataGen::new(1, true);
        let mut a = vec![1u8; 4096];
        g.fill(&mut a);
        g.stamp(&mut a, 4096);
        assert!(a.iter().all(|b| *b == 0));
    }
}
