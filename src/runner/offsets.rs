//! Where the next IO goes: sequential through a region (wrapping at its end), or uniform random
//! over the region's blocks, aligned to the block size and deterministic for a seed.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// The byte range one worker thread owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// Length in bytes (a multiple of the block size).
    pub len: u64,
}

/// Splits `[0, size)` into `threads` block-aligned regions for sequential patterns; random
/// patterns share the whole working set (each thread still gets its own seed).
pub fn regions(size: u64, bs: u64, threads: u32, sequential: bool) -> Vec<Region> {
    let blocks = size / bs;
    if !sequential || threads <= 1 {
        return vec![
            Region {
                start: 0,
                len: blocks * bs
            };
            threads.max(1) as usize
        ];
    }
    let t = u64::from(threads);
    (0..t)
        .map(|i| {
            let b0 = blocks * i / t;
            let b1 = blocks * (i + 1) / t;
            Region {
                start: b0 * bs,
                len: (b1 - b0).max(1) * bs,
            }
        })
        .collect()
}

/// Generates offsets for one thread.
pub struct Offsets {
    region: Region,
    bs: u64,
    blocks: u64,
    next: u64,
    random: bool,
    rng: Xoshiro256PlusPlus,
}

/// The seed of thread `i` from the workload seed: distinct per thread, stable across runs.
pub fn thread_seed(seed: u64, thread: u32) -> u64 {
    seed ^ (u64::from(thread) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Offsets {
    /// An offset generator over `region`.
    pub fn new(region: Region, bs: u64, random: bool, seed: u64) -> Offsets {
        Offsets {
            region,
            bs,
            blocks: (region.len / bs).max(1),
            next: 0,
            random,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// The next offset.
    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        let block = if self.random {
            // Lemire's multiply-shift: uniform in [0, blocks) without division.
            ((u128::from(self.rng.next_u64()) * u128::from(self.blocks)) >> 64) as u64
        } else {
            let b = self.next;
            self.next += 1;
            if self.next == self.blocks {
                self.next = 0;
            }
            b
        };
        self.region.start + block * self.bs
    }

    /// The offset a sequential generator gives next, without moving on.
    pub fn peek_sequential(&self) -> u64 {
        self.region.start + self.next * self.bs
    }

    /// A uniform number in [0, 100), for read/write mixes (same stream, so still seeded).
    #[inline]
    pub fn percent(&mut self) -> u32 {
        ((u64::from(self.rng.next_u32()) * 100) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_walks_and_wraps() {
        let mut o = Offsets::new(
            Region {
                start: 8192,
                len: 3 * 4096,
            },
            4096,
            false,
            1,
        );
        let v: Vec<u64> = (0..5).map(|_| o.next_offset()).collect();
        assert_eq!(v, vec![8192, 12288, 16384, 8192, 12288]);
    }

    #[test]
    fn random_is_aligned_in_range_and_deterministic() {
        let r = Region {
            start: 0,
            len: 1 << 20,
        };
        let mut a = Offsets::new(r, 4096, true, 42);
        let mut b = Offsets::new(r, 4096, true, 42);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let x = a.next_offset();
            assert_eq!(x, b.next_offset());
            assert_eq!(x % 4096, 0);
            assert!(x + 4096 <= 1 << 20);
            seen.insert(x);
        }
        // 256 blocks, 10k draws: every block is hit (uniformity, loosely).
        assert_eq!(seen.len(), 256);
        let mut c = Offsets::new(r, 4096, true, 43);
        assert_ne!(
            (0..8).map(|_| c.next_offset()).collect::<Vec<_>>(),
            (0..8).map(|_| a.next_offset()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn regions_cover_the_working_set_without_overlap() {
        let rs = regions(10 * 4096, 4096, 3, true);
        assert_eq!(rs.len(), 3);
        assert_eq!(rs[0].start, 0);
        let total: u64 = rs.iter().map(|r| r.len).sum();
        assert_eq!(total, 10 * 4096);
        for w in rs.windows(2) {
            assert_eq!(w[0].start + w[0].len, w[1].start);
        }
        assert_eq!(
            regions(10 * 4096, 4096, 3, false)[2],
            Region {
                start: 0,
                len: 10 * 4096
            }
        );
    }

    #[test]
    fn percent_is_in_range() {
        let mut o = Offsets::new(
            Region {
                start: 0,
                len: 4096,
            },
            4096,
            true,
            7,
        );
        let n = 100_000;
        let reads = (0..n).filter(|_| o.percent() < 70).count();
        assert!((reads as f64 / f64::from(n) - 0.70).abs() < 0.01, "{reads}");
    }
}
