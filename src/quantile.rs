//! Medians and quantiles of samples: the one home of the ways iolab reads a middle or a tail
//! off a set of values.
//!
//! It stands on the bottom floor because its users span the house: `trace` (a trace's gaps,
//! latencies and in-flight counts) comes before `stats` (trials, cliffs, disks, the planner),
//! and `hosts` (clock offsets, skews) after it. Each way keeps the meaning its callers had,
//! and the names say which:
//! - [`median`] / [`median_of_sorted`]: the middle value, or the mean of the middle two for an
//!   even count (a figure between two measured ones: trials, hosts' skews);
//! - [`upper_middle`]: the middle value, the upper of the two for an even count (always a
//!   value that was measured: the clock offset of the fastest probes);
//! - [`nearest_rank`]: the value at quantile `q` by the nearest-rank rule, the smallest value
//!   with at least `q` of the values at or below it (a trace's p50/p90/p99; its p50 of an even
//!   count is the lower middle);
//! - [`weighted_rank`]: the same rule over values that each stand for a weight (time spent
//!   at each in-flight count).
//!
//! Latency percentiles of a run come from an HDR histogram instead
//! (`sample::LatencyHistogram::percentile`): its values are buckets, never a sorted list.

use std::cmp::Ordering;

/// A value a median can be taken of: it can be ordered and two of it averaged.
pub trait Sample: Copy {
    /// A total order (floats: `total_cmp`, so a NaN cannot stop a sort).
    fn order(a: &Self, b: &Self) -> Ordering;
    /// The mean of two values (integers round as their `midpoint` does).
    fn midpoint(a: Self, b: Self) -> Self;
}

impl Sample for f64 {
    fn order(a: &Self, b: &Self) -> Ordering {
        a.total_cmp(b)
    }
    fn midpoint(a: Self, b: Self) -> Self {
        f64::midpoint(a, b)
    }
}

impl Sample for u64 {
    fn order(a: &Self, b: &Self) -> Ordering {
        a.cmp(b)
    }
    fn midpoint(a: Self, b: Self) -> Self {
        u64::midpoint(a, b)
    }
}

/// The median of `values` in any order: the middle value, or the mean of the middle two for
/// an even count; `None` for none.
pub fn median<T: Sample>(values: &[T]) -> Option<T> {
    let mut v = values.to_vec();
    v.sort_by(T::order);
    median_of_sorted(&v)
}

/// [`median`] of values already sorted ascending.
pub fn median_of_sorted<T: Sample>(sorted: &[T]) -> Option<T> {
    let n = sorted.len();
    match n {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some(T::midpoint(sorted[n / 2 - 1], sorted[n / 2])),
    }
}

/// The middle of values sorted ascending, the upper of the two middle ones for an even count:
/// always one of the values; `None` for none.
pub fn upper_middle<T: Copy>(sorted: &[T]) -> Option<T> {
    sorted.get(sorted.len() / 2).copied()
}

/// The value at quantile `q` (0..=1) of values sorted ascending by the nearest-rank rule: the
/// value at rank ⌈n·q⌉, at least the first; `None` for none.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

/// The nearest-rank rule over weighted values, ascending: the first value at which the
/// weights so far reach `q` of `total`; `None` when they never do (the weights sum to less
/// than `q · total`).
pub fn weighted_rank<T: Copy>(
    weighted: impl IntoIterator<Item = (T, f64)>,
    total: f64,
    q: f64,
) -> Option<T> {
    let want = q * total;
    let mut acc = 0.0;
    for (v, w) in weighted {
        acc += w;
        if acc >= want {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values from a fixed generator: the same on every run, sorted or not as asked.
    fn values(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 10_000
            })
            .collect()
    }

    /// `stats::median` as it was written before it moved here.
    fn old_stats_median(values: &[f64]) -> Option<f64> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => None,
            n if n % 2 == 1 => Some(v[n / 2]),
            n => Some(f64::midpoint(v[n / 2 - 1], v[n / 2])),
        }
    }

    /// The hosts' skew median as `hosts::merge` wrote it (0 for no hosts).
    fn old_skew_median(skews: &[u64]) -> u64 {
        if skews.is_empty() {
            0
        } else if skews.len() % 2 == 1 {
            skews[skews.len() / 2]
        } else {
            u64::midpoint(skews[skews.len() / 2 - 1], skews[skews.len() / 2])
        }
    }

    /// The trace model's `quantile` as it was written.
    fn old_trace_quantile(sorted: &[u64], q: f64) -> u64 {
        if sorted.is_empty() {
            return 0;
        }
        let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[i]
    }

    /// The in-flight `at_quantile` as the trace model wrote it.
    fn old_at_quantile(idle: u64, time_at: &[(u64, u64)], total: f64, max: u64, q: f64) -> u64 {
        let want = q * total;
        let mut acc = idle as f64;
        if acc >= want {
            return 0;
        }
        for (l, ns) in time_at {
            acc += *ns as f64;
            if acc >= want {
                return *l;
            }
        }
        max
    }

    #[test]
    fn each_way_gives_what_its_old_home_gave() {
        for n in 0..40 {
            for seed in 1..6 {
                let v = values(n, seed);
                let mut sorted = v.clone();
                sorted.sort_unstable();
                let f: Vec<f64> = v.iter().map(|x| *x as f64 / 7.0).collect();
                assert_eq!(median(&f), old_stats_median(&f), "{f:?}");
                assert_eq!(
                    median_of_sorted(&sorted).unwrap_or(0),
                    old_skew_median(&sorted)
                );
                let signed: Vec<i64> = sorted.iter().map(|x| *x as i64 - 5000).collect();
                if !signed.is_empty() {
                    assert_eq!(upper_middle(&signed), Some(signed[signed.len() / 2]));
                }
                for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
                    assert_eq!(
                        nearest_rank(&sorted, q).unwrap_or(0),
                        old_trace_quantile(&sorted, q)
                    );
                }
                let idle = v.first().copied().unwrap_or(0);
                let time_at: Vec<(u64, u64)> = sorted
                    .iter()
                    .enumerate()
                    .map(|(i, ns)| (i as u64 + 1, *ns))
                    .collect();
                let max = time_at.len() as u64;
                let total = (idle + time_at.iter().map(|t| t.1).sum::<u64>()) as f64 * 1.01;
                for q in [0.0, 0.5, 0.99, 1.0] {
                    let weighted = std::iter::once((0, idle as f64))
                        .chain(time_at.iter().map(|(l, ns)| (*l, *ns as f64)));
                    assert_eq!(
                        weighted_rank(weighted, total, q).unwrap_or(max),
                        old_at_quantile(idle, &time_at, total, max, q),
                        "q {q}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_ways_differ_where_their_names_say() {
        let even = [1u64, 2, 10, 20];
        assert_eq!(median_of_sorted(&even), Some(6));
        assert_eq!(upper_middle(&even), Some(10));
        assert_eq!(nearest_rank(&even, 0.5), Some(2));
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median::<f64>(&[]), None);
        assert_eq!(upper_middle::<i64>(&[]), None);
        assert_eq!(nearest_rank::<u64>(&[], 0.5), None);
        assert_eq!(weighted_rank([(1, 1.0), (2, 1.0)], 4.0, 0.9), None);
    }
}
