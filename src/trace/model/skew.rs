//! Access skew: how unevenly IOs spread over the blocks they touch — the hot-spot shares
//! (the hottest 1%, 10%, 20% of the touched blocks get what share of the IOs) and the
//! exponent of a Zipf law fitted to the block access counts.
//!
//! The fit is the maximum-likelihood exponent of a Zipf law truncated to the head of the
//! ranking: the blocks hit at least [`MIN_COUNT`] times, whose empirical rank is close to
//! their true one. The tail, where most blocks are hit once or never, says little about the
//! exponent and would bias a log-log regression towards flatness.

use serde::{Deserialize, Serialize};

/// A block is in the fitted head when it was hit at least this often.
pub const MIN_COUNT: u32 = 8;
/// Fewer head blocks than this: no exponent is claimed.
pub const MIN_HEAD: usize = 8;

/// The share of IOs the hottest part of the footprint gets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HotShare {
    /// The hottest this percent of the touched blocks...
    pub blocks_pct: f64,
    /// ...receive this percent of the IOs.
    pub ios_pct: f64,
}

/// How skewed the accesses are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skew {
    /// Block size the counts are taken at, bytes (the smallest data IO).
    pub unit: u64,
    /// Distinct blocks an IO started at.
    pub blocks: u64,
    /// The hot-spot shares.
    pub hot: Vec<HotShare>,
    /// The fitted Zipf exponent (`None`: too few repeated blocks to say).
    pub zipf_theta: Option<f64>,
    /// Blocks in the fitted head.
    pub fit_blocks: u64,
    /// IOs a uniform random pattern would put on the hottest 10% of the same number of
    /// blocks: what "no skew" looks like at this sample size.
    pub uniform_top10_pct: f64,
}

/// The hot-spot shares and the Zipf fit of access counts (one per block, any order).
pub fn skew(mut counts: Vec<u32>, unit: u64, span_blocks: u64) -> Skew {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = counts.iter().map(|c| u64::from(*c)).sum();
    let hot = [1.0, 10.0, 20.0, 50.0]
        .iter()
        .map(|pct| {
            let k =
                ((counts.len() as f64 * pct / 100.0).ceil() as usize).clamp(1, counts.len().max(1));
            let got: u64 = counts.iter().take(k).map(|c| u64::from(*c)).sum();
            HotShare {
                blocks_pct: *pct,
                ios_pct: if total == 0 {
                    0.0
                } else {
                    100.0 * got as f64 / total as f64
                },
            }
        })
        .collect();
    let head = counts.iter().take_while(|c| **c >= MIN_COUNT).count();
    let zipf_theta = (head >= MIN_HEAD)
        .then(|| fit_zipf(&counts[..head]))
        .flatten();
    Skew {
        unit,
        blocks: counts.len() as u64,
        hot,
        zipf_theta,
        fit_blocks: head as u64,
        uniform_top10_pct: uniform_top_share(total, span_blocks.max(1), 0.10),
    }
}

/// The maximum-likelihood exponent of a Zipf law over ranks 1..=K for the counts of those
/// ranks (highest first): the `s` where the mean log-rank of the IOs equals the law's.
pub fn fit_zipf(counts_desc: &[u32]) -> Option<f64> {
    let k = counts_desc.len();
    if k < 2 {
        return None;
    }
    let n: f64 = counts_desc.iter().map(|c| f64::from(*c)).sum();
    let observed = counts_desc
        .iter()
        .enumerate()
        .map(|(i, c)| f64::from(*c) * ((i + 1) as f64).ln())
        .sum::<f64>()
        / n;
    let logs: Vec<f64> = (1..=k).map(|r| (r as f64).ln()).collect();
    let expected = |s: f64| {
        let (mut num, mut den) = (0.0, 0.0);
        for l in &logs {
            let w = (-s * l).exp();
            num += w * l;
            den += w;
        }
        num / den
    };
    // expected() falls as s grows: bisect.
    let (mut lo, mut hi) = (0.0f64, 8.0f64);
    if observed >= expected(lo) {
        return Some(0.0);
    }
    if observed <= expected(hi) {
        return Some(hi);
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if expected(mid) > observed {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

/// The expected share (percent) of `n` uniform random IOs over `blocks` blocks that land on
/// the hottest `frac` of the blocks they touch, by simulation of the occupancy counts'
/// Poisson law (mean n/blocks per block).
fn uniform_top_share(n: u64, blocks: u64, frac: f64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let lambda = n as f64 / blocks as f64;
    // Counts k >= 1 of touched blocks: P(k) = e^-l l^k / k!; walk k from the top until the
    // hottest `frac` of touched blocks is filled.
    let touched = 1.0 - (-lambda).exp();
    let mut probs = Vec::new();
    let mut p = (-lambda).exp();
    let kmax = (lambda + 12.0 * lambda.sqrt() + 12.0) as u32;
    for k in 1..=kmax {
        p *= lambda / f64::from(k);
        probs.push((k, p));
    }
    let mut need = frac * touched;
    let mut ios = 0.0;
    for (k, p) in probs.iter().rev() {
        if need <= 0.0 {
            break;
        }
        let take = p.min(need);
        ios += take * f64::from(*k);
        need -= take;
    }
    (100.0 * ios / lambda).min(100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::Xoshiro256PlusPlus;
    use rand_xoshiro::rand_core::{Rng, SeedableRng};

    /// Exact Zipf samples over `n` items by the inverse of the cumulative table.
    fn zipf_counts(theta: f64, n: usize, draws: usize, seed: u64) -> Vec<u32> {
        let mut cdf = Vec::with_capacity(n);
        let mut acc = 0.0;
        for r in 1..=n {
            acc += (r as f64).powf(-theta);
            cdf.push(acc);
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut counts = vec![0u32; n];
        for _ in 0..draws {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * acc;
            let i = cdf.partition_point(|c| *c < u).min(n - 1);
            counts[i] += 1;
        }
        counts.into_iter().filter(|c| *c > 0).collect()
    }

    #[test]
    fn the_fit_recovers_zipf_exponents_from_samples() {
        for (theta, draws) in [
            (1.2, 100_000),
            (0.8, 200_000),
            (1.5, 50_000),
            (1.2, 1_000_000),
        ] {
            let s = skew(zipf_counts(theta, 131_072, draws, 7), 8192, 131_072);
            let got = s.zipf_theta.expect("enough repeats to fit");
            assert!(
                (got - theta).abs() < 0.05,
                "theta {theta} draws {draws}: fitted {got}"
            );
        }
    }

    #[test]
    fn uniform_accesses_show_no_skew() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let n = 131_072u64;
        let mut counts = vec![0u32; n as usize];
        for _ in 0..200_000 {
            counts[((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as usize] += 1;
        }
        let counts: Vec<u32> = counts.into_iter().filter(|c| *c > 0).collect();
        let s = skew(counts, 4096, n);
        assert!(s.zipf_theta.is_none_or(|t| t < 0.3), "{s:?}");
        let top10 = s.hot[1].ios_pct;
        assert!(
            (top10 - s.uniform_top10_pct).abs() < 3.0,
            "{top10} vs {}",
            s.uniform_top10_pct
        );
    }

    #[test]
    fn hot_shares_count_the_hottest_blocks() {
        let mut counts = vec![1u32; 90];
        counts.extend([100u32; 10]);
        let s = skew(counts, 4096, 100);
        assert_eq!(s.blocks, 100);
        assert!((s.hot[1].ios_pct - 100.0 * 1000.0 / 1090.0).abs() < 1e-9);
    }
}
