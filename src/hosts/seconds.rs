//! A trial's seconds over the hosts: each host streams every second of its measured window
//! (counts and that second's latency histograms); the controller merges them as they arrive,
//! second `t` of every host together (counts summed, percentiles from the merged histograms),
//! and keeps a histogram only for the seconds some host has not sent yet.

use std::collections::BTreeMap;

use crate::sample::{IntervalSample, LatencyHistogram};

/// One second of a trial over the hosts (each host's second `t` of its own window; the
/// windows start together, to within the skew shown).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SecondFigures {
    /// Seconds since the measured window began (this covers [t, t+1)).
    pub t: u32,
    /// Hosts that completed IO in that second.
    pub hosts: usize,
    /// Operations completed in that second, all hosts (all kinds, as a series point).
    pub ops: u64,
    /// Bytes completed in that second, all hosts.
    pub bytes: u64,
    /// `ops` over the second.
    pub ops_per_sec: f64,
    /// `bytes` over the second, in MB/s (10^6 bytes).
    pub mb_per_sec: f64,
    /// Data IOs (reads and writes) in the merged histogram of that second.
    pub latency_count: u64,
    /// Median of the merged histogram of that second's data IOs, ns.
    pub p50_ns: u64,
    /// 99th percentile of the same, ns.
    pub p99_ns: u64,
    /// 99.9th percentile of the same, ns.
    pub p99_9_ns: u64,
}

/// A second some host has not sent yet: counts so far and the merged data-IO histogram.
#[derive(Default)]
struct OpenSecond {
    hosts: usize,
    ops: u64,
    bytes: u64,
    latency: Option<LatencyHistogram>,
}

/// Merges the seconds hosts stream during a trial as they arrive. Only seconds some live host
/// has not sent yet hold a histogram (each ~260 kB in memory): a closed second keeps its
/// figures only, so a long trial on many hosts costs the controller little memory.
#[derive(Default)]
pub struct SecondsMerger {
    open: BTreeMap<u32, OpenSecond>,
    closed: Vec<SecondFigures>,
    /// Per host, the next second it has not sent.
    next: Vec<u32>,
}

impl SecondsMerger {
    /// A merger for a trial on `hosts` hosts.
    pub fn new(hosts: usize) -> SecondsMerger {
        SecondsMerger {
            next: vec![0; hosts],
            ..SecondsMerger::default()
        }
    }

    /// Adds host `host`'s second. A second that was already closed (it can only come from a
    /// host that broke the in-order rule) is dropped rather than double counted.
    pub fn add(&mut self, host: usize, s: &IntervalSample) {
        if self.closed.last().is_some_and(|c| s.t <= c.t) {
            return;
        }
        if let Some(n) = self.next.get_mut(host) {
            *n = (*n).max(s.t.saturating_add(1));
        }
        let o = self.open.entry(s.t).or_default();
        let d = s.data_latency();
        o.hosts += 1;
        o.ops += s.ops;
        o.bytes += s.bytes;
        match &mut o.latency {
            Some(h) => h.merge(&d),
            None => o.latency = Some(d),
        }
    }

    /// The next second host `host` has not sent.
    pub fn next_of(&self, host: usize) -> u32 {
        self.next.get(host).copied().unwrap_or(0)
    }

    /// Closes every open second before `upto` (every host still expected has sent it).
    pub fn close_before(&mut self, upto: u32) {
        while let Some(e) = self.open.first_entry() {
            if *e.key() >= upto {
                break;
            }
            let (t, o) = e.remove_entry();
            let h = o.latency.unwrap_or_default();
            self.closed.push(SecondFigures {
                t,
                hosts: o.hosts,
                ops: o.ops,
                bytes: o.bytes,
                ops_per_sec: o.ops as f64,
                mb_per_sec: o.bytes as f64 / 1e6,
                latency_count: h.len(),
                p50_ns: h.percentile(50.0),
                p99_ns: h.percentile(99.0),
                p99_9_ns: h.percentile(99.9),
            });
        }
    }

    /// Closes the rest and returns every second, in order.
    pub fn finish(mut self) -> Vec<SecondFigures> {
        self.close_before(u32::MAX);
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u32, lat: &[(u64, u64)]) -> IntervalSample {
        let mut h = LatencyHistogram::new();
        let mut n = 0;
        for &(v, k) in lat {
            h.0.record_n(v, k).expect("in range");
            n += k;
        }
        IntervalSample {
            t,
            ops: n,
            bytes: n * 4096,
            latency: vec![crate::sample::IntervalLatency {
                op: "read".into(),
                histogram: h,
            }],
        }
    }

    #[test]
    fn seconds_merge_their_histograms_across_hosts_and_close_when_all_sent() {
        let mut m = SecondsMerger::new(2);
        // Second 0: a fast host and a slow one, 99 IOs each.
        m.add(0, &second(0, &[(100_000, 99)]));
        m.close_before(m.next_of(0).min(m.next_of(1)));
        assert!(m.closed.is_empty(), "host 1 has not sent second 0");
        m.add(1, &second(0, &[(10_000_000, 99)]));
        m.add(0, &second(1, &[(100_000, 10)]));
        m.close_before(m.next_of(0).min(m.next_of(1)));
        assert_eq!(m.closed.len(), 1);
        assert_eq!(m.open.len(), 1, "second 1 stays open for host 1");
        let all = m.finish();
        let s0 = &all[0];
        assert_eq!((s0.t, s0.hosts, s0.ops, s0.latency_count), (0, 2, 198, 198));
        assert!((s0.ops_per_sec - 198.0).abs() < 1e-9);
        // The merged p99 is the slow host's latency; the mean of the two p99s is neither.
        assert!(s0.p99_ns >= 9_990_000, "{s0:?}");
        assert!(s0.p50_ns <= 100_100, "{s0:?}");
        assert_eq!((all[1].t, all[1].hosts, all[1].ops), (1, 1, 10));
    }
}
