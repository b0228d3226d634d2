//! Per-second latency histograms, kept off the IO threads.
//!
//! A worker records each IO's latency into one histogram per operation kind for the second it
//! is in (the same single record per IO as before, into a different histogram). When its first
//! batch of a later second completes, it hands the finished second's histograms and counts to
//! the trial's collector thread (a `Piece`) and carries on with fresh ones from a shared pool:
//! once a second per worker, never per IO. The collector merges the workers' pieces second by
//! second; a second is closed once every worker has moved past it. Closed seconds go to the
//! trial's listener (`iolab agent` streams them to the controller) and leave their p50/p99 on
//! the trial's series; their histograms go back to the pool.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use crate::sample::{IntervalLatency, IntervalSample, LatencyHistogram};

/// Who hears about each closed second of a trial (called on the collector thread, in order of
/// `t`, before the trial returns).
pub type IntervalListener = Arc<dyn Fn(&IntervalSample) + Send + Sync>;

/// What a worker hands over when it leaves a second.
pub(super) struct Piece {
    /// The worker's index.
    pub worker: usize,
    /// The second it leaves.
    pub t: u32,
    /// The second it is in now; `u32::MAX`: it finished.
    pub next: u32,
    /// Operations and bytes it completed in `t` (its series point).
    pub ops: u64,
    /// Bytes.
    pub bytes: u64,
    /// Its histograms of `t`, per op kind, non-empty ones only.
    pub latency: Vec<(&'static str, LatencyHistogram)>,
}

/// Empty histograms for the workers, refilled by the collector (a histogram is ~260 kB:
/// recycling spares the IO threads an allocation and the page faults of a fresh one).
#[derive(Default)]
pub(crate) struct Pool(Mutex<Vec<LatencyHistogram>>);

impl Pool {
    /// An empty histogram.
    pub(crate) fn take(&self) -> LatencyHistogram {
        self.0
            .lock()
            .ok()
            .and_then(|mut v| v.pop())
            .unwrap_or_default()
    }

    fn give(&self, mut h: LatencyHistogram) {
        h.0.reset();
        if let Ok(mut v) = self.0.lock()
            && v.len() < 64
        {
            v.push(h);
        }
    }
}

/// One second being merged.
#[derive(Default)]
struct Open {
    ops: u64,
    bytes: u64,
    latency: Vec<(&'static str, LatencyHistogram)>,
}

/// Per second of the window: p50 and p99 of its data IOs, ns (for the trial's series).
pub(super) type SecondPercentiles = Vec<(u32, u64, u64)>;

/// Runs the collector until every worker's sender is gone; returns each closed second's
/// percentiles.
pub(super) fn collect(
    rx: &Receiver<Piece>,
    workers: usize,
    pool: &Pool,
    listener: Option<&IntervalListener>,
) -> SecondPercentiles {
    let mut pos = vec![0u32; workers];
    let mut open: BTreeMap<u32, Open> = BTreeMap::new();
    let mut next_out = 0u32;
    let mut out = Vec::new();
    let mut close = |upto: u32, open: &mut BTreeMap<u32, Open>, next_out: &mut u32| {
        // Seconds with no piece at all inside the window are real (nothing completed);
        // past the last second with data there is nothing to say.
        let last = open.keys().next_back().copied();
        while *next_out < upto && last.is_some_and(|l| *next_out <= l) {
            let t = *next_out;
            let o = open.remove(&t).unwrap_or_default();
            let s = IntervalSample {
                t,
                ops: o.ops,
                bytes: o.bytes,
                latency: o
                    .latency
                    .into_iter()
                    .map(|(op, histogram)| IntervalLatency {
                        op: op.to_string(),
                        histogram,
                    })
                    .collect(),
            };
            let d = s.data_latency();
            if !d.is_empty() {
                out.push((t, d.percentile(50.0), d.percentile(99.0)));
            }
            if let Some(l) = listener {
                l(&s);
            }
            for l in s.latency {
                pool.give(l.histogram);
            }
            *next_out += 1;
        }
    };
    while let Ok(p) = rx.recv() {
        if let Some(x) = pos.get_mut(p.worker) {
            *x = p.next;
        }
        if p.ops > 0 || !p.latency.is_empty() {
            let o = open.entry(p.t).or_default();
            o.ops += p.ops;
            o.bytes += p.bytes;
            for (op, h) in p.latency {
                match o.latency.iter_mut().find(|(k, _)| *k == op) {
                    Some((_, acc)) => {
                        acc.merge(&h);
                        pool.give(h);
                    }
                    None => o.latency.push((op, h)),
                }
            }
        }
        let upto = pos.iter().copied().min().unwrap_or(u32::MAX);
        close(upto, &mut open, &mut next_out);
    }
    // Every worker is gone (also one that failed before sending anything): close the rest.
    close(u32::MAX, &mut open, &mut next_out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(worker: usize, t: u32, next: u32, lat: &[u64]) -> Piece {
        let mut h = LatencyHistogram::new();
        for &v in lat {
            h.record(v);
        }
        Piece {
            worker,
            t,
            next,
            ops: lat.len() as u64,
            bytes: lat.len() as u64 * 4096,
            latency: if lat.is_empty() {
                vec![]
            } else {
                vec![("read", h)]
            },
        }
    }

    #[test]
    fn seconds_close_once_every_worker_left_them_and_merge_across_workers() {
        let (tx, rx) = std::sync::mpsc::channel();
        let seen: Arc<Mutex<Vec<(u32, u64, u64)>>> = Arc::default();
        let s2 = seen.clone();
        let listener: IntervalListener = Arc::new(move |s: &IntervalSample| {
            s2.lock()
                .expect("lock")
                .push((s.t, s.ops, s.data_latency().len()));
        });
        // Worker 0 skips second 1 (a stall); worker 1 has all three.
        tx.send(piece(0, 0, 2, &[1000, 2000])).expect("send");
        tx.send(piece(1, 0, 1, &[3000])).expect("send");
        tx.send(piece(1, 1, 2, &[4000])).expect("send");
        tx.send(piece(0, 2, u32::MAX, &[5000])).expect("send");
        tx.send(piece(1, 2, u32::MAX, &[])).expect("send");
        drop(tx);
        let pool = Pool::default();
        let pct = collect(&rx, 2, &pool, Some(&listener));
        assert_eq!(
            *seen.lock().expect("lock"),
            [(0, 3, 3), (1, 1, 1), (2, 1, 1)]
        );
        assert_eq!(pct.len(), 3);
        assert_eq!(pct[0].0, 0);
        assert!(pct[0].2 >= 2999 && pct[0].2 <= 3003, "{pct:?}");
    }
}
