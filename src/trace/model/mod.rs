//! The workload model of a trace: the few numbers that say what a server's IO is like, and
//! that an iolab spec can reproduce ([`super::to_spec`]).
//!
//! - **mix**: reads, writes, flushes, discards, by count and bytes;
//! - **sizes**: per op, the histogram of IO sizes (exact sizes, most frequent first);
//! - **sequentiality**: an IO is sequential when it starts where one of the last
//!   [`STREAMS`] data IOs ended (so interleaved streams each count); run lengths (IOs per
//!   unbroken stream) and the distances the other IOs jump;
//! - **footprint**: the bytes touched at least once, and the span they lie in;
//! - **skew**: hot-spot shares and a Zipf exponent ([`skew`]);
//! - **arrivals**: the gaps between issues and their burstiness — the index of dispersion of
//!   the IO counts per window (variance / mean: 0 for clockwork, 1 for a Poisson stream,
//!   above 1 for bursts);
//! - **in flight**: IOs between issue and completion, time-weighted, and per second;
//! - **latency**: what the device took per op, as recorded.

pub mod skew;
pub mod text;

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::{Op, Trace};

/// How many recent stream ends an IO may continue to count as sequential.
pub const STREAMS: usize = 32;
/// The in-flight series covers at most this many seconds (30 days), and the dispersion
/// windows at most this many windows: a damaged or odd trace cannot make the model allocate
/// without bound.
pub const MAX_SERIES_SECONDS: usize = 30 * 86_400;
const MAX_WINDOWS: u64 = 10_000_000;

/// An op's share of the IOs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpMix {
    /// The op.
    pub op: Op,
    /// IOs.
    pub count: u64,
    /// Percent of all IOs.
    pub pct: f64,
    /// Bytes moved.
    pub bytes: u64,
}

/// One size of an op's size histogram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizeCount {
    /// IO size, bytes.
    pub size: u64,
    /// IOs of that size.
    pub count: u64,
    /// Percent of the op's IOs.
    pub pct: f64,
}

/// An op's size histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSizes {
    /// The op.
    pub op: Op,
    /// Every size seen, most frequent first.
    pub sizes: Vec<SizeCount>,
    /// Mean size, bytes.
    pub mean: f64,
}

/// How sequential the data IOs are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sequentiality {
    /// Percent of data IOs that continue a stream.
    pub sequential_pct: f64,
    /// Streams of more than one IO.
    pub runs: u64,
    /// Mean IOs per stream of more than one IO (0 when none).
    pub mean_run_ios: f64,
    /// The longest stream, IOs.
    pub max_run_ios: u64,
    /// Percent of data IOs in streams of at least 2, 8, 64 IOs.
    pub in_runs_pct: Vec<(u64, f64)>,
    /// Non-sequential IOs by how far they jump from the end of the IO before them:
    /// (`label`, percent of the non-sequential IOs).
    pub jumps: Vec<(String, f64)>,
}

/// What the IOs touched.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    /// Bytes touched at least once (reads and writes).
    pub bytes: u64,
    /// Of them, read at least once.
    pub read_bytes: u64,
    /// Written at least once.
    pub write_bytes: u64,
    /// Lowest offset.
    pub start: u64,
    /// One past the highest byte.
    pub end: u64,
}

/// When IOs arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arrivals {
    /// Mean IOs per second over the trace.
    pub iops: f64,
    /// Mean gap between issues, ns.
    pub mean_gap_ns: f64,
    /// Gap percentiles, ns: p50, p90, p99.
    pub gap_p50_ns: u64,
    /// p90.
    pub gap_p90_ns: u64,
    /// p99.
    pub gap_p99_ns: u64,
    /// Coefficient of variation of the gaps (1 for Poisson arrivals).
    pub gap_cv: f64,
    /// Index of dispersion of the IO counts per window: (window ms, variance / mean).
    pub idc: Vec<(u64, f64)>,
}

/// IOs in flight (issued, not completed), time-weighted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Highest.
    pub max: u64,
    /// Mean per second of the trace.
    pub per_second: Vec<f64>,
}

/// An op's recorded latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpLatency {
    /// The op.
    pub op: Op,
    /// IOs with a completion.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Highest, ns.
    pub max_ns: u64,
}

/// The whole model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// IOs in the trace.
    pub ios: u64,
    /// Its length, seconds.
    pub duration_s: f64,
    /// Per op share.
    pub mix: Vec<OpMix>,
    /// Per op size histograms (data ops and discards).
    pub sizes: Vec<OpSizes>,
    /// Sequentiality of reads and writes.
    pub sequential: Sequentiality,
    /// What was touched.
    pub footprint: Footprint,
    /// Access skew (`None` without data IOs).
    pub skew: Option<skew::Skew>,
    /// Arrivals and burstiness.
    pub arrivals: Arrivals,
    /// In flight (`None` when the trace has no completion times, as a fio iolog).
    pub in_flight: Option<InFlight>,
    /// Recorded latencies per op.
    pub latency: Vec<OpLatency>,
    /// The issuing processes with the most IOs: (name, IOs).
    pub processes: Vec<(String, u64)>,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The value at quantile `q` of sorted values by the nearest-rank rule (a p50 of an even
/// count is the lower middle); 0 for none.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    crate::quantile::nearest_rank(sorted, q).unwrap_or(0)
}

impl Model {
    /// The model of a trace.
    pub fn of(t: &Trace) -> Model {
        let n = t.ios.len() as u64;
        let duration_ns = t
            .header
            .duration_ns
            .max(t.ios.last().map_or(0, |i| i.issue_ns))
            .max(1);
        Model {
            ios: n,
            duration_s: duration_ns as f64 / 1e9,
            mix: mix(t),
            sizes: sizes(t),
            sequential: sequentiality(t),
            footprint: footprint(t),
            skew: access_skew(t),
            arrivals: arrivals(t, duration_ns),
            in_flight: in_flight(t, duration_ns),
            latency: latency(t),
            processes: processes(t),
        }
    }

    /// The share of reads among reads and writes, percent.
    pub fn read_pct_of_data(&self) -> f64 {
        let get = |op| self.mix.iter().find(|m| m.op == op).map_or(0, |m| m.count);
        pct(get(Op::Read), get(Op::Read) + get(Op::Write))
    }

    /// An op's count.
    pub fn count(&self, op: Op) -> u64 {
        self.mix.iter().find(|m| m.op == op).map_or(0, |m| m.count)
    }
}

fn mix(t: &Trace) -> Vec<OpMix> {
    let n = t.ios.len() as u64;
    Op::ALL
        .iter()
        .filter_map(|op| {
            let (count, bytes) = t
                .ios
                .iter()
                .filter(|i| i.op == *op)
                .fold((0u64, 0u64), |(c, b), i| (c + 1, b + u64::from(i.len)));
            (count > 0).then(|| OpMix {
                op: *op,
                count,
                pct: pct(count, n),
                bytes,
            })
        })
        .collect()
}

fn sizes(t: &Trace) -> Vec<OpSizes> {
    [Op::Read, Op::Write, Op::Discard]
        .iter()
        .filter_map(|op| {
            let mut h: BTreeMap<u64, u64> = BTreeMap::new();
            for i in t.ios.iter().filter(|i| i.op == *op) {
                *h.entry(u64::from(i.len)).or_default() += 1;
            }
            let total: u64 = h.values().sum();
            if total == 0 {
                return None;
            }
            let mean = h.iter().map(|(s, c)| *s as f64 * *c as f64).sum::<f64>() / total as f64;
            let mut sizes: Vec<SizeCount> = h
                .into_iter()
                .map(|(size, count)| SizeCount {
                    size,
                    count,
                    pct: pct(count, total),
                })
                .collect();
            sizes.sort_by(|a, b| b.count.cmp(&a.count).then(a.size.cmp(&b.size)));
            Some(OpSizes {
                op: *op,
                sizes,
                mean,
            })
        })
        .collect()
}

fn sequentiality(t: &Trace) -> Sequentiality {
    // Recent stream ends -> the stream's length so far (IOs), most recent last.
    let mut streams: VecDeque<(u64, u64)> = VecDeque::with_capacity(STREAMS + 1);
    let mut finished: Vec<u64> = Vec::new();
    let mut data = 0u64;
    let mut seq = 0u64;
    let mut prev_end: Option<u64> = None;
    let mut jumps: BTreeMap<usize, u64> = BTreeMap::new();
    const LABELS: [&str; 7] = [
        "backward", "< 64KiB", "< 1MiB", "< 16MiB", "< 256MiB", "< 4GiB", ">= 4GiB",
    ];
    for io in t.ios.iter().filter(|i| i.op.is_data() && i.len > 0) {
        data += 1;
        if let Some(k) = streams.iter().rposition(|(end, _)| *end == io.offset) {
            let (_, run) = streams.remove(k).expect("found");
            streams.push_back((io.end(), run + 1));
            seq += 1;
        } else {
            if let Some(pe) = prev_end {
                let b = if io.offset < pe {
                    0
                } else {
                    let d = io.offset - pe;
                    match d {
                        0..65_536 => 1,
                        65_536..1_048_576 => 2,
                        1_048_576..16_777_216 => 3,
                        16_777_216..268_435_456 => 4,
                        268_435_456..4_294_967_296 => 5,
                        _ => 6,
                    }
                };
                *jumps.entry(b).or_default() += 1;
            }
            streams.push_back((io.end(), 1));
            if streams.len() > STREAMS {
                if let Some((_, run)) = streams.pop_front() {
                    finished.push(run);
                }
            }
        }
        prev_end = Some(io.end());
    }
    finished.extend(streams.iter().map(|(_, r)| *r));
    let multi: Vec<u64> = finished.iter().copied().filter(|r| *r > 1).collect();
    let jumped: u64 = jumps.values().sum();
    let in_runs = |min: u64| pct(finished.iter().filter(|r| **r >= min).sum(), data);
    Sequentiality {
        sequential_pct: pct(seq, data),
        runs: multi.len() as u64,
        mean_run_ios: if multi.is_empty() {
            0.0
        } else {
            multi.iter().sum::<u64>() as f64 / multi.len() as f64
        },
        max_run_ios: finished.iter().copied().max().unwrap_or(0),
        in_runs_pct: vec![(2, in_runs(2)), (8, in_runs(8)), (64, in_runs(64))],
        jumps: jumps
            .into_iter()
            .map(|(b, c)| (LABELS[b].to_string(), pct(c, jumped)))
            .collect(),
    }
}

/// Merged byte ranges of the IOs `keep` selects: total bytes.
fn union_bytes(t: &Trace, keep: impl Fn(Op) -> bool) -> u64 {
    let mut r: Vec<(u64, u64)> = t
        .ios
        .iter()
        .filter(|i| keep(i.op) && i.len > 0)
        .map(|i| (i.offset, i.end()))
        .collect();
    r.sort_unstable();
    let mut total = 0u64;
    let mut cur: Option<(u64, u64)> = None;
    for (s, e) in r {
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(s, e)| e - s)
}

fn footprint(t: &Trace) -> Footprint {
    let data = t.ios.iter().filter(|i| i.op.is_data() && i.len > 0);
    let (start, end) = data.fold((u64::MAX, 0u64), |(s, e), i| {
        (s.min(i.offset), e.max(i.end()))
    });
    Footprint {
        bytes: union_bytes(t, Op::is_data),
        read_bytes: union_bytes(t, |o| o == Op::Read),
        write_bytes: union_bytes(t, |o| o == Op::Write),
        start: if start == u64::MAX { 0 } else { start },
        end,
    }
}

fn access_skew(t: &Trace) -> Option<skew::Skew> {
    let data: Vec<_> = t
        .ios
        .iter()
        .filter(|i| i.op.is_data() && i.len > 0)
        .collect();
    let unit = u64::from(data.iter().map(|i| i.len).min()?);
    let mut counts: HashMap<u64, u32> = HashMap::new();
    for i in &data {
        *counts.entry(i.offset / unit).or_default() += 1;
    }
    let fp = footprint(t);
    let span_blocks = (fp.end - fp.start).div_ceil(unit);
    Some(skew::skew(
        counts.into_values().collect(),
        unit,
        span_blocks,
    ))
}

fn arrivals(t: &Trace, duration_ns: u64) -> Arrivals {
    let mut gaps: Vec<u64> = t
        .ios
        .windows(2)
        .map(|w| w[1].issue_ns - w[0].issue_ns)
        .collect();
    let mean = if gaps.is_empty() {
        0.0
    } else {
        gaps.iter().sum::<u64>() as f64 / gaps.len() as f64
    };
    let var = if gaps.len() < 2 {
        0.0
    } else {
        gaps.iter().map(|g| (*g as f64 - mean).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64
    };
    gaps.sort_unstable();
    let idc = [1u64, 10, 100, 1000]
        .iter()
        .filter_map(|ms| {
            let w = ms * 1_000_000;
            if duration_ns / w > MAX_WINDOWS {
                return None;
            }
            let windows = (duration_ns / w) as usize;
            if windows < 10 {
                return None;
            }
            let mut c = vec![0u64; windows];
            for io in &t.ios {
                if let Some(x) = c.get_mut((io.issue_ns / w) as usize) {
                    *x += 1;
                }
            }
            let m = c.iter().sum::<u64>() as f64 / windows as f64;
            let v = c.iter().map(|x| (*x as f64 - m).powi(2)).sum::<f64>() / (windows - 1) as f64;
            (m > 0.0).then_some((*ms, v / m))
        })
        .collect();
    Arrivals {
        iops: t.ios.len() as f64 / (duration_ns as f64 / 1e9),
        mean_gap_ns: mean,
        gap_p50_ns: quantile(&gaps, 0.50),
        gap_p90_ns: quantile(&gaps, 0.90),
        gap_p99_ns: quantile(&gaps, 0.99),
        gap_cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        idc,
    }
}

fn in_flight(t: &Trace, duration_ns: u64) -> Option<InFlight> {
    let mut ev: Vec<(u64, i64)> = Vec::with_capacity(t.ios.len() * 2);
    for io in &t.ios {
        if let Some(c) = io.complete_ns() {
            ev.push((io.issue_ns, 1));
            ev.push((c, -1));
        }
    }
    if ev.is_empty() {
        return None;
    }
    // Completions before issues at one instant: an IO issued as another completes does not
    // overlap it.
    ev.sort_unstable();
    let secs = duration_ns
        .div_ceil(1_000_000_000)
        .min(MAX_SERIES_SECONDS as u64) as usize;
    let mut per_second = vec![0.0f64; secs.max(1)];
    let mut time_at: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut level, mut last, mut max) = (0i64, 0u64, 0u64);
    let mut add = |from: u64, to: u64, level: i64, per_second: &mut Vec<f64>| {
        if to <= from || level <= 0 {
            return;
        }
        *time_at.entry(level as u64).or_default() += to - from;
        let mut a = from;
        let series_end = per_second.len() as u64 * 1_000_000_000;
        while a < to.min(series_end) {
            let s = (a / 1_000_000_000) as usize;
            let b = to.min((s as u64 + 1) * 1_000_000_000);
            if let Some(x) = per_second.get_mut(s) {
                *x += level as f64 * (b - a) as f64 / 1e9;
            }
            a = b;
        }
    };
    for (ts, d) in ev {
        add(last, ts, level, &mut per_second);
        level += d;
        max = max.max(level.max(0) as u64);
        last = ts;
    }
    let total = duration_ns.max(last) as f64;
    let busy: u64 = time_at.values().sum();
    let idle = (total as u64).saturating_sub(busy);
    let weighted = time_at
        .iter()
        .map(|(l, ns)| *l as f64 * *ns as f64)
        .sum::<f64>();
    // The nearest-rank rule over the time spent at each count, idle time at 0 first.
    let at_quantile = |q: f64| {
        let levels =
            std::iter::once((0, idle as f64)).chain(time_at.iter().map(|(l, ns)| (*l, *ns as f64)));
        crate::quantile::weighted_rank(levels, total, q).unwrap_or(max)
    };
    Some(InFlight {
        mean: weighted / total,
        p50: at_quantile(0.50),
        p99: at_quantile(0.99),
        max,
        per_second,
    })
}

fn latency(t: &Trace) -> Vec<OpLatency> {
    Op::ALL
        .iter()
        .filter_map(|op| {
            let mut l: Vec<u64> = t
                .ios
                .iter()
                .filter(|i| i.op == *op)
                .filter_map(|i| i.complete_ns().map(|_| i.latency_ns))
                .collect();
            if l.is_empty() {
                return None;
            }
            l.sort_unstable();
            Some(OpLatency {
                op: *op,
                count: l.len() as u64,
                p50_ns: quantile(&l, 0.50),
                p99_ns: quantile(&l, 0.99),
                max_ns: *l.last().expect("not empty"),
            })
        })
        .collect()
}

fn processes(t: &Trace) -> Vec<(String, u64)> {
    let mut c: HashMap<u16, u64> = HashMap::new();
    for io in &t.ios {
        *c.entry(io.process).or_default() += 1;
    }
    let mut v: Vec<(String, u64)> = c
        .into_iter()
        .map(|(p, n)| {
            (
                t.header
                    .processes
                    .get(usize::from(p))
                    .cloned()
                    .unwrap_or_else(|| "?".into()),
                n,
            )
        })
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(5);
    v
}

#[cfg(test)]
mod tests;
