//! Content of written blocks: incompressible, and different in every block written, so neither
//! compression nor deduplication flatters a layout (the `dd if=/dev/zero` pitfall).
//!
//! Regenerating every block with a PRNG would cost a core at disk speeds. Instead each thread
//! keeps a pool of random bytes (4 MiB, generated once); every write copies its block from a
//! random place in the pool (a memcpy, far cheaper than generating) and then stamps a fresh
//! random word at every 4 KiB boundary. Blocks are therefore random, never repeat within a
//! compression window (unlike fio's default of reusing one buffer per IO slot), and no two
//! 4 KiB blocks are equal, which defeats deduplication.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// Stamps are this far apart.
pub const STAMP_STRIDE: usize = 4096;
/// Random bytes each thread keeps to copy blocks from (plus one block).
pub const POOL_BYTES: usize = 4 << 20;

/// Fills and refreshes write buffers for one thread.
pub struct DataGen {
    rng: Xoshiro256PlusPlus,
    zero: bool,
    pool: Vec<u8>,
}

impl DataGen {
    /// A generator for blocks of `block` bytes; `zero` makes every block zeros.
    pub fn new(seed: u64, zero: bool, block: usize) -> DataGen {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xD47A);
        let pool = if zero {
            Vec::new()
        } else {
            let mut p = vec![0u8; POOL_BYTES.max(block) + 64 * 1024];
            rng.fill_bytes(&mut p);
            p
        };
        DataGen { rng, zero, pool }
    }

    /// Makes the first `len` bytes of `buf` a block never written before: copied from a random
    /// place of the pool, then stamped.
    #[inline]
    pub fn refresh(&mut self, buf: &mut [u8], len: usize) {
        if self.zero {
            return;
        }
        let len = len.min(buf.len()).min(self.pool.len());
        let span = (self.pool.len() - len) / 8;
        let from = ((u128::from(self.rng.next_u64()) * span as u128) >> 64) as usize * 8;
        buf[..len].copy_from_slice(&self.pool[from..from + len]);
        self.stamp(buf, len);
    }

    /// Puts a fresh random word at every 4 KiB boundary of the first `len` bytes.
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
        let mut g = DataGen::new(1, false, 8192);
        let mut a = vec![0u8; 8192];
        g.refresh(&mut a, 8192);
        assert!(a.iter().filter(|b| **b == 0).count() < 8192 / 64);
        let before = a.clone();
        g.refresh(&mut a, 8192);
        // Refreshed content is a different random block, not the old one with a stamp.
        let same = a.iter().zip(&before).filter(|(x, y)| x == y).count();
        assert!(same < 8192 / 64, "{same} bytes unchanged");
        let b1 = a.clone();
        g.refresh(&mut a, 8192);
        assert_ne!(a, b1);
    }

    #[test]
    fn zero_data_stays_zero() {
        let mut g = DataGen::new(1, true, 4096);
        let mut a = vec![0u8; 4096];
        g.refresh(&mut a, 4096);
        assert!(a.iter().all(|b| *b == 0));
    }
}
