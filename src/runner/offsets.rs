//! Where the next IO goes and how long it is: sequential through a region (wrapping at its
//! end; with holes, fio's `rw=write:112k`, see `spec::holes`), or random over the region's
//! blocks — uniform, or skewed by a [`Distribution`] (zipf, pareto, normal, zoned hot spots) —
//! with sizes from a block-size mix ([`BsSplit`]), aligned to the smallest size and
//! deterministic for a seed.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

use crate::spec::holes::hole_next;
use crate::spec::{BsSplit, Distribution, SizeShare};

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
    sampler: Sampler,
    /// Sizes of reads and writes (`None`: every IO is `bs`).
    sizes: Option<(SizePick, SizePick)>,
    /// Bytes skipped after each sequential IO (0: none; see [`hole_next`]).
    skip: i64,
    /// With holes: the next IO's byte offset in the region.
    pos: u64,
}

/// The seed of thread `i` from the workload seed: distinct per thread, stable across runs.
pub fn thread_seed(seed: u64, thread: u32) -> u64 {
    seed ^ (u64::from(thread) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Offsets {
    /// An offset generator over `region` for IOs of `bs` bytes, uniform when random.
    pub fn new(region: Region, bs: u64, random: bool, seed: u64) -> Offsets {
        Offsets::with_access(region, bs, random, seed, &Distribution::Uniform, None)
    }

    /// An offset generator over `region`, random ones drawn from `dist`, sizes from `split`
    /// (offsets then aligned to its smallest size, `bs` otherwise).
    pub fn with_access(
        region: Region,
        bs: u64,
        random: bool,
        seed: u64,
        dist: &Distribution,
        split: Option<&BsSplit>,
    ) -> Offsets {
        let unit = split.map_or(bs, BsSplit::min_size).max(1);
        let blocks = (region.len / unit).max(1);
        Offsets {
            region,
            bs: unit,
            blocks,
            next: 0,
            random,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            sampler: Sampler::new(dist, blocks),
            sizes: split.map(|s| (SizePick::new(&s.read), SizePick::new(&s.write))),
            skip: 0,
            pos: 0,
        }
    }

    /// The same generator leaving `skip` bytes after each sequential IO (negative: stepping
    /// back); one block size only (the spec refuses holes with a size mix).
    #[must_use]
    pub fn with_skip(mut self, skip: i64) -> Offsets {
        if !self.random && self.sizes.is_none() {
            self.skip = skip;
        }
        self
    }

    /// The same generator continuing a sequential stream at block `cursor` (a steady-state
    /// round goes on where the last one stopped: restarting at the first block would rewrite
    /// what a cache in front of the device still holds). Random and holed streams are left
    /// as they are.
    #[must_use]
    pub fn resume(mut self, cursor: u64) -> Offsets {
        if !self.random && self.skip == 0 {
            self.next = cursor % self.blocks;
        }
        self
    }

    /// The block a sequential stream gives next (see [`Offsets::resume`]).
    pub fn cursor(&self) -> u64 {
        self.next
    }

    /// The next IO's offset and length, for a read (`true`) or a write.
    #[inline]
    pub fn next_io(&mut self, is_read: bool) -> (u64, u32) {
        let len = match &self.sizes {
            None => self.bs,
            Some((r, w)) => {
                let u = self.rng.next_u32();
                if is_read { r.pick(u) } else { w.pick(u) }
            }
        };
        if len == self.bs {
            return (self.next_offset(), len as u32);
        }
        let len = len.min(self.region.len);
        let off = if self.random {
            let b = self.sampler.draw(&mut self.rng);
            (b * self.bs).min((self.region.len - len) / self.bs * self.bs)
        } else {
            if (self.next * self.bs).saturating_add(len) > self.region.len {
                self.next = 0;
            }
            let o = self.next * self.bs;
            self.next += len.div_ceil(self.bs);
            if self.next >= self.blocks {
                self.next = 0;
            }
            o
        };
        (self.region.start + off, len as u32)
    }

    /// The next offset.
    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        if self.skip != 0 && !self.random {
            let o = self.pos;
            self.pos = hole_next(self.pos, self.bs, self.skip, self.region.len);
            return self.region.start + o;
        }
        let block = if self.random {
            self.sampler.draw(&mut self.rng)
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
        if self.skip != 0 {
            return self.region.start + self.pos;
        }
        self.region.start + self.next * self.bs
    }

    /// A uniform number in [0, 100), for read/write mixes (same stream, so still seeded).
    #[inline]
    pub fn percent(&mut self) -> u32 {
        ((u64::from(self.rng.next_u32()) * 100) >> 32) as u32
    }
}

/// Picks a size from a mix by a uniform u32.
struct SizePick {
    /// (cumulative share scaled to 2^32, size), ascending.
    cum: Vec<(u64, u64)>,
}

impl SizePick {
    fn new(shares: &[SizeShare]) -> SizePick {
        let total: u64 = shares.iter().map(|s| u64::from(s.pct)).sum::<u64>().max(1);
        let mut acc = 0u64;
        let cum = shares
            .iter()
            .map(|s| {
                acc += u64::from(s.pct);
                ((acc << 32) / total, s.size)
            })
            .collect();
        SizePick { cum }
    }

    #[inline]
    fn pick(&self, u: u32) -> u64 {
        let u = u64::from(u);
        self.cum
            .iter()
            .find(|(c, _)| u < *c)
            .or(self.cum.last())
            .map_or(4096, |(_, s)| *s)
    }
}

/// Draws block indices in `[0, n)` from a distribution.
enum Sampler {
    /// Lemire's multiply-shift: uniform without division.
    Uniform {
        n: u64,
    },
    /// Popularity ranks scattered over the blocks by a multiplicative bijection, so the hot
    /// blocks are not all at the start.
    Zipf {
        z: Zipf,
        scatter: Scatter,
    },
    Pareto {
        n: u64,
        pow: f64,
        scatter: Scatter,
    },
    Normal {
        n: u64,
        sd: f64,
    },
    /// (cumulative share of the IOs, first block, blocks) per zone.
    Zoned {
        zones: Vec<(f64, u64, u64)>,
    },
}

/// A bijection of `[0, n)`: `i -> i * p mod n` with `p` coprime to `n`.
#[derive(Clone, Copy)]
struct Scatter {
    n: u64,
    p: u64,
}

impl Scatter {
    fn new(n: u64) -> Scatter {
        fn gcd(a: u64, b: u64) -> u64 {
            if b == 0 { a } else { gcd(b, a % b) }
        }
        let n = n.max(1);
        // Near n times the golden ratio's fraction: neighbouring ranks land far apart.
        let mut p = (((n as f64 * 0.618_033_988_75) as u64) | 1) % n;
        while p != 0 && gcd(p, n) != 1 {
            p += 1;
            if p >= n {
                p = 0;
            }
        }
        Scatter { n, p: p.max(1) }
    }

    #[inline]
    fn map(self, i: u64) -> u64 {
        ((u128::from(i) * u128::from(self.p)) % u128::from(self.n)) as u64
    }
}

/// A uniform f64 in [0, 1) from 53 random bits.
#[inline]
fn unit(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl Sampler {
    fn new(d: &Distribution, n: u64) -> Sampler {
        let n = n.max(1);
        match d {
            Distribution::Uniform => Sampler::Uniform { n },
            Distribution::Zipf { theta } => Sampler::Zipf {
                z: Zipf::new(n, *theta),
                scatter: Scatter::new(n),
            },
            Distribution::Pareto { h } => Sampler::Pareto {
                n,
                pow: h.ln() / (1.0 - h).ln(),
                scatter: Scatter::new(n),
            },
            Distribution::Normal { dev_pct } => Sampler::Normal {
                n,
                sd: (dev_pct / 100.0 * n as f64).max(1e-9),
            },
            Distribution::Zoned { zones } => {
                let total_size: f64 = zones.iter().map(|z| z.size_pct).sum::<f64>().max(1e-9);
                let total_access: f64 = zones.iter().map(|z| z.access_pct).sum::<f64>().max(1e-9);
                let (mut acc, mut size_acc, mut first) = (0.0, 0.0, 0u64);
                let mut out = Vec::new();
                for z in zones {
                    acc += z.access_pct / total_access;
                    size_acc += z.size_pct / total_size;
                    let end = ((size_acc * n as f64).round() as u64).clamp(first, n);
                    out.push((acc, first, (end - first).max(1)));
                    first = end.min(n - 1);
                }
                Sampler::Zoned { zones: out }
            }
        }
    }

    #[inline]
    fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        match self {
            Sampler::Uniform { n } => ((u128::from(rng.next_u64()) * u128::from(*n)) >> 64) as u64,
            Sampler::Zipf { z, scatter } => scatter.map(z.sample(rng) - 1),
            Sampler::Pareto { n, pow, scatter } => {
                let r = ((n - 1) as f64 * unit(rng).powf(*pow)) as u64;
                scatter.map(r.min(n - 1))
            }
            Sampler::Normal { n, sd } => {
                let mid = *n as f64 / 2.0;
                for _ in 0..64 {
                    // Box-Muller.
                    let (u1, u2) = (1.0 - unit(rng), unit(rng));
                    let g = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    let x = mid + g * sd;
                    if x >= 0.0 && x < *n as f64 {
                        return x as u64;
                    }
                }
                (mid as u64).min(n - 1)
            }
            Sampler::Zoned { zones } => {
                let u = unit(rng);
                let (_, first, len) = zones
                    .iter()
                    .find(|z| u < z.0)
                    .or(zones.last())
                    .copied()
                    .unwrap_or((1.0, 0, 1));
                first + ((u128::from(rng.next_u64()) * u128::from(len)) >> 64) as u64
            }
        }
    }
}

/// Zipf ranks `1..=n` with exponent `s` > 0 by rejection-inversion (Hörmann and Derflinger,
/// "Rejection-inversion to generate variates from monotone discrete distributions", 1996):
/// exact for any exponent (1 included), O(1) per draw, no table.
struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(n as f64 + 0.5);
        z.cut = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// The integral of h.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }

    fn big_h_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }

    fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        loop {
            let u = self.h_n + unit(rng) * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// ln(1 + x) / x, exact near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, exact near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
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

    /// A steady-state round goes on where the last stopped: the cursor a stream ends at
    /// is where the resumed one starts (wrapping at the region's end); random streams draw
    /// as before.
    #[test]
    fn a_resumed_sequential_stream_continues_at_its_cursor() {
        let r = Region {
            start: 8192,
            len: 4 * 4096,
        };
        let mut a = Offsets::new(r, 4096, false, 1);
        a.next_offset();
        a.next_offset();
        a.next_offset();
        assert_eq!(a.cursor(), 3);
        let mut b = Offsets::new(r, 4096, false, 1).resume(a.cursor());
        let v: Vec<u64> = (0..3).map(|_| (b.next_offset() - 8192) / 4096).collect();
        assert_eq!(v, [3, 0, 1]);
        assert_eq!(Offsets::new(r, 4096, false, 1).resume(9).cursor(), 1);
        let mut x = Offsets::new(r, 4096, true, 7);
        let mut y = Offsets::new(r, 4096, true, 7).resume(2);
        assert!((0..8).all(|_| x.next_offset() == y.next_offset()));
    }

    /// fio's `rw=write:112k` with `bs=16k` on 1 MiB (its log: 0, 128k, ... 896k, 0), here in a
    /// region that starts at 8k; the verify path peeks at the same next offset.
    #[test]
    fn holes_skip_after_each_io_and_wrap_as_fio() {
        let r = Region {
            start: 8192,
            len: 1 << 20,
        };
        let mut o = Offsets::new(r, 16 << 10, false, 1).with_skip(112 << 10);
        let v: Vec<u64> = (0..9)
            .map(|_| {
                let peek = o.peek_sequential();
                let x = o.next_offset();
                assert_eq!(peek, x);
                (x - 8192) >> 10
            })
            .collect();
        assert_eq!(v, [0, 128, 256, 384, 512, 640, 768, 896, 0]);
        // next_io gives the same offsets with the block's length.
        let mut o = Offsets::new(r, 16 << 10, false, 1).with_skip(-32 << 10);
        assert_eq!(o.next_io(false), (8192, 16 << 10));
        assert_eq!(o.next_io(false), (8192 + (1 << 20) - (32 << 10), 16 << 10));
        // Random offsets have no holes.
        let mut o = Offsets::new(r, 4096, true, 1).with_skip(4096);
        assert!((0..100).all(|_| o.next_offset() % 4096 == 0));
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

    fn counts(d: &Distribution, blocks: u64, draws: usize) -> Vec<u32> {
        let r = Region {
            start: 0,
            len: blocks * 4096,
        };
        let mut o = Offsets::with_access(r, 4096, true, 11, d, None);
        let mut c = vec![0u32; blocks as usize];
        for _ in 0..draws {
            let x = o.next_offset();
            assert!(x % 4096 == 0 && x < blocks * 4096);
            c[(x / 4096) as usize] += 1;
        }
        c
    }

    #[test]
    fn zipf_offsets_follow_the_law_and_are_scattered() {
        let c = counts(&Distribution::Zipf { theta: 1.2 }, 65_536, 400_000);
        let mut sorted = c.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        // P(rank 1) / P(rank 2) = 2^1.2 = 2.30.
        let ratio = f64::from(sorted[0]) / f64::from(sorted[1]);
        assert!((ratio - 2.3).abs() < 0.3, "rank 1 / rank 2 = {ratio}");
        // The hottest block is not block 0 and the second is not its neighbour.
        let hot = c.iter().position(|x| *x == sorted[0]).unwrap();
        let second = c.iter().position(|x| *x == sorted[1]).unwrap();
        assert!(hot.abs_diff(second) > 1, "{hot} {second}");
        // Exponent 1 works too (the sampler's special case).
        let c1 = counts(&Distribution::Zipf { theta: 1.0 }, 1024, 100_000);
        let mut s1 = c1.clone();
        s1.sort_unstable_by(|a, b| b.cmp(a));
        let r1 = f64::from(s1[0]) / f64::from(s1[3]);
        assert!((r1 - 4.0).abs() < 0.6, "rank 1 / rank 4 = {r1}");
    }

    #[test]
    fn zoned_pareto_and_normal_put_their_mass_where_they_say() {
        let c = counts(
            &Distribution::Zoned {
                zones: vec![
                    crate::spec::Zone {
                        access_pct: 60.0,
                        size_pct: 10.0,
                    },
                    crate::spec::Zone {
                        access_pct: 40.0,
                        size_pct: 90.0,
                    },
                ],
            },
            1000,
            100_000,
        );
        let first: u32 = c[..100].iter().sum();
        assert!((f64::from(first) / 1e5 - 0.6).abs() < 0.01, "{first}");
        let c = counts(&Distribution::Pareto { h: 0.8 }, 10_000, 100_000);
        let mut s = c.clone();
        s.sort_unstable_by(|a, b| b.cmp(a));
        let top20: u32 = s[..2000].iter().sum();
        assert!(
            f64::from(top20) / 1e5 > 0.7,
            "pareto 0.8: top 20% get {top20}"
        );
        let c = counts(&Distribution::Normal { dev_pct: 5.0 }, 1000, 100_000);
        let mid: u32 = c[450..550].iter().sum();
        assert!(
            (f64::from(mid) / 1e5 - 0.68).abs() < 0.02,
            "within one sd: {mid}"
        );
    }

    #[test]
    fn a_size_mix_draws_its_shares_and_stays_in_the_region() {
        let split = BsSplit::parse("8k/50:128k/50,4k/100").unwrap();
        let r = Region {
            start: 1 << 20,
            len: 64 << 20,
        };
        let mut o = Offsets::with_access(r, 131_072, true, 3, &Distribution::Uniform, Some(&split));
        let mut big = 0;
        for _ in 0..10_000 {
            let (off, len) = o.next_io(true);
            assert!(len == 8192 || len == 131_072);
            assert_eq!(off % 4096, 0);
            assert!(off >= r.start && off + u64::from(len) <= r.start + r.len);
            big += u32::from(len == 131_072);
        }
        assert!((f64::from(big) / 1e4 - 0.5).abs() < 0.02, "{big}");
        assert_eq!(o.next_io(false).1, 4096);
        let mut seq =
            Offsets::with_access(r, 131_072, false, 3, &Distribution::Uniform, Some(&split));
        let (a, la) = seq.next_io(true);
        let (b, _) = seq.next_io(true);
        assert_eq!(b, a + u64::from(la), "sequential IOs follow each other");
    }
}
