//! Content of written blocks: incompressible, and different in every block written, so neither
//! compression nor deduplication flatters a layout (the `dd if=/dev/zero` pitfall).
//!
//! Regenerating every block with a PRNG would cost a core at disk speeds, and even copying it
//! from a random pool costs a memcpy per byte written. Instead each thread keeps a page-aligned
//! pool of random bytes (4 MiB or one block per IO slot, generated once, registered with the
//! ring) and every write is issued straight from a random 4 KiB-aligned place in it, after a
//! fresh random word is stamped at every 4 KiB boundary of that place.
//!
//! The pool is cut into one lane per IO slot and a slot's write comes from its own lane, so a
//! place is never restamped while an earlier write from it is still in flight. That matters:
//! btrfs checksums an O_DIRECT write from the user's pages and the device reads them later, so
//! bytes changed in between are stored under a checksum they do not match, and every later
//! read of them fails with EIO (seen in the VM lab: raid1c3, all copies "corrupt"). Blocks are therefore random, never repeat
//! within a compression window (unlike fio's default of reusing one buffer per IO slot), and no
//! two 4 KiB blocks are equal, which defeats deduplication; the cost is a few stores per 4 KiB.
//!
//! Verify mode needs each block's exact bytes for its checksum, so there the block is copied
//! into the IO slot's own buffer first ([`DataGen::refresh`]).

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::engine::BufferPool;

/// Stamps are this far apart, and blocks start on this boundary of the pool.
pub const STAMP_STRIDE: usize = 4096;
/// Random bytes each writing thread keeps (plus one block).
pub const POOL_BYTES: usize = 4 << 20;

/// Fills and refreshes write buffers for one thread.
pub struct DataGen {
    rng: Xoshiro256PlusPlus,
    zero: bool,
    pool: Option<BufferPool>,
}

impl DataGen {
    /// A generator for blocks of `block` bytes written from up to `lanes` IO slots at once;
    /// `zero` makes every block zeros (and keeps no pool: read-only workloads pass it too).
    pub fn new(seed: u64, zero: bool, block: usize, lanes: usize) -> DataGen {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xD47A);
        let lane = block.div_ceil(STAMP_STRIDE) * STAMP_STRIDE;
        let pool = if zero {
            None
        } else {
            BufferPool::new(POOL_BYTES.max(lane * lanes.max(1)) + 64 * 1024, 1)
                .ok()
                .map(|mut p| {
                    rng.fill_bytes(p.slot_mut(0));
                    p
                })
        };
        DataGen { rng, zero, pool }
    }

    /// Hands the pool to an engine, which issues writes straight from it (`None` for zero
    /// data). Afterwards [`DataGen::fresh_block`] is given the pool back as a slice.
    pub fn take_pool(&mut self) -> Option<BufferPool> {
        self.pool.take()
    }

    /// Picks a fresh block of `len` bytes in lane `lane` of `lanes` of `pool` (a random 4
    /// KiB-aligned place), stamps it, and returns where it starts: the write is issued from
    /// there. Only the IO slot owning the lane writes from it, so no write in flight sees its
    /// bytes change.
    #[inline]
    pub fn fresh_block(&mut self, pool: &mut [u8], len: usize, lane: usize, lanes: usize) -> usize {
        let lanes = lanes.max(1);
        let width = pool.len() / lanes / STAMP_STRIDE * STAMP_STRIDE;
        let base = (lane % lanes) * width;
        let len = len.min(width);
        let places = (width - len) / STAMP_STRIDE + 1;
        let at = base
            + ((u128::from(self.rng.next_u64()) * places as u128) >> 64) as usize * STAMP_STRIDE;
        if !self.zero {
            let region = &mut pool[at..at + len];
            let mut off = 0;
            while off + 8 <= len {
                region[off..off + 8].copy_from_slice(&self.rng.next_u64().to_ne_bytes());
                off += STAMP_STRIDE;
            }
        }
        at
    }

    /// Makes the first `len` bytes of `buf` a block never written before: copied from a random
    /// place of the pool, then stamped (for writes that must own their bytes).
    #[inline]
    pub fn refresh(&mut self, buf: &mut [u8], len: usize) {
        if self.zero {
            return;
        }
        let Some(pool) = self.pool.as_ref() else {
            return;
        };
        let src = pool.slot(0);
        let len = len.min(buf.len()).min(src.len());
        let span = (src.len() - len) / 8;
        let from = ((u128::from(self.rng.next_u64()) * span as u128) >> 64) as usize * 8;
        buf[..len].copy_from_slice(&src[from..from + len]);
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
        let mut g = DataGen::new(1, false, 8192, 1);
        let mut a = vec![0u8; 8192];
        g.refresh(&mut a, 8192);
        assert!(a.iter().filter(|b| **b == 0).count() < 8192 / 64);
        let before = a.clone();
        g.refresh(&mut a, 8192);
        // Refreshed content is a different random block, not the old one with a stamp.
        let same = a.iter().zip(&before).filter(|(x, y)| x == y).count();
        assert!(same < 8192 / 64, "{same} bytes unchanged");
    }

    #[test]
    fn fresh_blocks_are_aligned_inside_the_pool_and_stamped() {
        let mut g = DataGen::new(3, false, 1 << 20, 1);
        let mut pool = g.take_pool().expect("random data has a pool");
        let pool = pool.slot_mut(0);
        let size = pool.len();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let at = g.fresh_block(pool, 1 << 20, 0, 1);
            assert_eq!(at % 4096, 0);
            assert!(at + (1 << 20) <= size);
            seen.insert(at);
        }
        assert!(seen.len() > 100, "places vary: {}", seen.len());
        // Two blocks from the same place differ: the stamps are fresh.
        let at = g.fresh_block(pool, 4096, 0, 1);
        let a = pool[at..at + 4096].to_vec();
        let mut b = a.clone();
        g.stamp(&mut b, 4096);
        assert_ne!(a[..8], b[..8]);
    }

    #[test]
    fn each_slot_writes_from_its_own_lane() {
        // 32 slots of 1 MiB: the pool holds a lane per slot, and no two slots' places overlap.
        let (bs, qd) = (1usize << 20, 32usize);
        let mut g = DataGen::new(5, false, bs, qd);
        let mut pool = g.take_pool().expect("random data has a pool");
        let pool = pool.slot_mut(0);
        assert!(pool.len() >= bs * qd, "{}", pool.len());
        for _ in 0..20 {
            let mut spans: Vec<(usize, usize)> = (0..qd)
                .map(|slot| {
                    let at = g.fresh_block(pool, bs, slot, qd);
                    (at, at + bs)
                })
                .collect();
            spans.sort_unstable();
            assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
            assert!(spans.last().is_some_and(|s| s.1 <= pool.len()));
        }
        // Small blocks at QD 4 still move around inside their lane (1 MiB each).
        let mut g = DataGen::new(6, false, 4096, 4);
        let mut p = g.take_pool().expect("pool");
        let p = p.slot_mut(0);
        let lane = p.len() / 4 / STAMP_STRIDE * STAMP_STRIDE;
        let places: std::collections::HashSet<usize> =
            (0..100).map(|_| g.fresh_block(p, 4096, 2, 4)).collect();
        assert!(places.len() > 50, "{}", places.len());
        assert!(
            places
                .iter()
                .all(|&a| a >= 2 * lane && a + 4096 <= 3 * lane)
        );
    }

    #[test]
    fn zero_data_stays_zero() {
        let mut g = DataGen::new(1, true, 4096, 1);
        let mut a = vec![0u8; 4096];
        g.refresh(&mut a, 4096);
        assert!(a.iter().all(|b| *b == 0));
        assert!(g.take_pool().is_none());
    }
}
