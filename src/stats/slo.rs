//! Capacity under a latency target: from the trials of an SLO search (open-loop trials at
//! several rates, and the closed-loop trial that found the device's peak), the highest rate
//! that meets every target, its 95% interval, the latency-vs-load curve and its knee.
//!
//! A pure function of stored trials, so the answer is rebuilt from the store by any report,
//! and the search (`runner::slo`) asks the same function which way to go next.
//!
//! Per rate, each trial gives one value per target (its percentile or mean of latency measured
//! from the schedule, reads, writes or both) and the trial's worst *ratio* value/limit
//! (<= 1 meets). A rate meets when most trials at it kept their schedule (no backlog left,
//! nothing shed) and the median worst ratio is <= 1. The capacity is where the ratio curve, piecewise
//! linear in the rate, crosses 1 between the highest rate that meets and the next one tried
//! above it; its interval is where the curves of the ratio's interval bounds (Student's t over
//! the trials at each rate) cross 1. A rate tried once has no spread: its bounds are its value.

use serde::{Deserialize, Serialize};

use super::summary::Summary;
use crate::sample::{LatencyHistogram, OpSample, TrialSample};
use crate::spec::{Slo, SloOp, SloStat, SloTarget};

/// One rate the search tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloPoint {
    /// The asked rate, IOPS (all threads).
    pub rate: f64,
    /// Trials at it.
    pub trials: usize,
    /// IOPS completed (median over trials).
    pub achieved: f64,
    /// Most trials at it (all of one or two, two of three) kept their schedule: as for
    /// latency, the median trial decides, so one trial a stall of the machine left behind at
    /// its end does not fail a rate the others kept.
    pub sustained: bool,
    /// Per target: the latency figure over trials, ns (median, interval).
    pub values: Vec<Summary>,
    /// The worst value/limit ratio over targets, per trial, summarized (<= 1 meets).
    pub ratio: Summary,
    /// Median service time (submission to completion) of the first target's operations, ns.
    pub service_ns: Option<f64>,
    /// Whether the rate meets every target.
    pub meets: bool,
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloVerdict {
    /// The capacity lies between two rates tried.
    Capacity,
    /// Every rate tried met the targets, the device's closed-loop peak among them: the
    /// capacity is the peak.
    MetAtPeak,
    /// Every rate tried met the targets, but the search ended (its budget) before it tried
    /// the peak: the capacity is at least the highest rate tried.
    AtLeast,
    /// No rate tried met the targets.
    NoneMet,
    /// No open-loop trial yet.
    NoTrials,
}

/// The answer of an SLO search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SloCapacity {
    /// The targets, as written.
    pub targets: String,
    /// What the trials say.
    pub verdict: SloVerdict,
    /// The highest sustained rate meeting every target, IOPS.
    pub capacity: Option<f64>,
    /// Its 95% interval, IOPS.
    pub interval: Option<(f64, f64)>,
    /// The closed-loop peak the search started from, IOPS.
    pub peak: Option<f64>,
    /// Where latency starts to climb: the first rate whose worst ratio is twice the lowest
    /// rate's (interpolated), IOPS.
    pub knee: Option<f64>,
    /// Every rate tried, lowest first.
    pub curve: Vec<SloPoint>,
    /// The bracket is this narrow relative to the capacity (0.05: 5%).
    pub bracket: Option<f64>,
    /// Targets a trial had too few IOs to resolve (a p99.9 from under 10,000 IOs).
    pub unresolved: Vec<String>,
}

/// The latency histogram (from the schedule) of the operations a target is about.
fn target_histogram<'a>(t: &'a TrialSample, op: SloOp, service: bool) -> Option<LatencyHistogram> {
    let pick = |o: &'a OpSample| -> Option<&'a LatencyHistogram> {
        if service {
            o.service.as_ref()
        } else {
            Some(&o.latency)
        }
    };
    let mut h: Option<LatencyHistogram> = None;
    for o in &t.ops {
        let wanted = match op {
            SloOp::All => o.op == "read" || o.op == "write",
            SloOp::Read => o.op == "read",
            SloOp::Write => o.op == "write",
        };
        if let (true, Some(x)) = (wanted, pick(o)) {
            h.get_or_insert_with(LatencyHistogram::new).merge(x);
        }
    }
    h.filter(|h| !h.is_empty())
}

/// A target's figure in one trial, ns.
fn target_value(t: &TrialSample, target: &SloTarget) -> Option<f64> {
    let h = target_histogram(t, target.op, false)?;
    Some(match target.stat {
        SloStat::Mean => h.0.mean(),
        SloStat::Percentile(p) => h.percentile(p) as f64,
    })
}

/// Whether a trial holds enough IOs to resolve a target (ten beyond its percentile).
fn resolved(t: &TrialSample, target: &SloTarget) -> bool {
    let n = target_histogram(t, target.op, false).map_or(0, |h| h.len());
    match target.stat {
        SloStat::Mean => n > 0,
        SloStat::Percentile(p) => (n as f64) * (1.0 - p / 100.0) >= 10.0,
    }
}

/// The trial's IOs completed per second (reads and writes).
fn achieved(t: &TrialSample) -> f64 {
    t.ops
        .iter()
        .filter(|o| o.op == "read" || o.op == "write")
        .map(OpSample::ops_per_sec)
        .sum()
}

/// The answer of a stored workload's SLO search (`None` for a workload without targets).
pub fn of_workload(wr: &crate::sample::WorkloadRecord) -> Option<SloCapacity> {
    let crate::spec::WorkloadKind::Io(io) = &wr.workload.kind else {
        return None;
    };
    let slo = io.slo.as_ref()?;
    let in_flight = u64::from(io.queue_depth) * u64::from(io.threads);
    Some(capacity(&wr.trials, slo, in_flight))
}

/// Summarizes the trials of an SLO search.
pub fn capacity(trials: &[TrialSample], slo: &Slo, in_flight: u64) -> SloCapacity {
    let peak = trials
        .iter()
        .filter(|t| t.open_loop.is_none())
        .map(achieved)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let mut unresolved = Vec::new();
    let mut by_rate: Vec<(f64, Vec<&TrialSample>)> = Vec::new();
    for t in trials {
        let Some(ol) = &t.open_loop else { continue };
        let r = ol.asked_iops;
        match by_rate
            .iter_mut()
            .find(|(x, _)| (x - r).abs() <= 1e-6 * r.max(1.0))
        {
            Some((_, v)) => v.push(t),
            None => by_rate.push((r, vec![t])),
        }
        for target in &slo.targets {
            let d = target.describe();
            if !resolved(t, target) && !unresolved.contains(&d) {
                unresolved.push(d);
            }
        }
    }
    by_rate.sort_by(|a, b| a.0.total_cmp(&b.0));
    let curve: Vec<SloPoint> = by_rate
        .into_iter()
        .map(|(rate, ts)| point(rate, &ts, slo, in_flight))
        .collect();
    let mut c = SloCapacity {
        targets: slo.describe(),
        verdict: SloVerdict::NoTrials,
        capacity: None,
        interval: None,
        peak,
        knee: knee(&curve),
        curve,
        bracket: None,
        unresolved,
    };
    decide(&mut c);
    c
}

fn point(rate: f64, ts: &[&TrialSample], slo: &Slo, in_flight: u64) -> SloPoint {
    let kept = ts
        .iter()
        .filter(|t| t.open_loop.as_ref().is_some_and(|o| o.sustained(in_flight)))
        .count();
    let sustained = 2 * kept > ts.len();
    let values: Vec<Summary> = slo
        .targets
        .iter()
        .map(|target| {
            let v: Vec<f64> = ts
                .iter()
                .map(|t| target_value(t, target).unwrap_or(f64::NAN))
                .collect();
            // No IO of the target's kind: it cannot be met.
            Summary::of(&v).unwrap_or_else(|| Summary::of(&[f64::MAX]).expect("a finite value"))
        })
        .collect();
    let ratios: Vec<f64> = ts
        .iter()
        .map(|t| {
            slo.targets
                .iter()
                .map(|target| {
                    target_value(t, target).map_or(f64::MAX, |v| v / target.limit_ns as f64)
                })
                .fold(0.0, f64::max)
        })
        .collect();
    let ratio = Summary::of(&ratios).expect("at least one trial per rate");
    let service_ns = slo.targets.first().and_then(|target| {
        let v: Vec<f64> = ts
            .iter()
            .filter_map(|t| target_histogram(t, target.op, true))
            .map(|h| h.percentile(50.0) as f64)
            .collect();
        Summary::of(&v).map(|s| s.median)
    });
    let ach: Vec<f64> = ts.iter().map(|t| achieved(t)).collect();
    SloPoint {
        rate,
        trials: ts.len(),
        achieved: Summary::of(&ach).map_or(0.0, |s| s.median),
        sustained,
        meets: sustained && ratio.median <= 1.0,
        values,
        ratio,
        service_ns,
    }
}

/// The ratio's bounds at a point: (low, median, high); a single trial's bounds are its value,
/// an unsustained rate's all fail.
fn bounds(p: &SloPoint) -> (f64, f64, f64) {
    if !p.sustained {
        let m = p.ratio.median.max(1.0 + 1e-9);
        return (m, m, m);
    }
    match p.ratio.ci {
        Some(ci) => (
            ci.lo.min(p.ratio.median),
            p.ratio.median,
            ci.hi.max(p.ratio.median),
        ),
        None => (p.ratio.median, p.ratio.median, p.ratio.median),
    }
}

/// Where a piecewise-linear curve through `(rate, y)` first rises above 1, given the rates
/// below it meet; `None` when it never does.
fn crossing(pts: &[(f64, f64)]) -> Option<f64> {
    if pts.first().is_some_and(|p| p.1 > 1.0) {
        return Some(pts[0].0);
    }
    pts.windows(2).find_map(|w| {
        let ((r0, y0), (r1, y1)) = (w[0], w[1]);
        (y0 <= 1.0 && y1 > 1.0).then(|| r0 + (1.0 - y0) / (y1 - y0) * (r1 - r0))
    })
}

fn decide(c: &mut SloCapacity) {
    let curve = &c.curve;
    if curve.is_empty() {
        return;
    }
    let Some(last_ok) = curve.iter().rposition(|p| p.meets) else {
        c.verdict = SloVerdict::NoneMet;
        return;
    };
    let Some(fail) = curve[last_ok + 1..].first() else {
        // "Met at the peak" only when the peak was tried: a search its budget ended below
        // the peak knows a lower bound, not the answer.
        let top = curve[last_ok].rate;
        let at_peak = c.peak.is_some_and(|p| top >= p * (1.0 - 1e-6));
        c.verdict = if at_peak {
            SloVerdict::MetAtPeak
        } else {
            SloVerdict::AtLeast
        };
        c.capacity = Some(top);
        return;
    };
    let ok = &curve[last_ok];
    let (_, ym0, _) = bounds(ok);
    let (_, ym1, _) = bounds(fail);
    // A failing rate the device did not sustain says nothing of where latency crosses the
    // target (its latency has no bound): the capacity is the rate shown to meet it.
    let cap = if !fail.sustained {
        ok.rate
    } else if ym1 > ym0 {
        ok.rate + (1.0 - ym0) / (ym1 - ym0) * (fail.rate - ok.rate)
    } else {
        ok.rate
    };
    let upto: Vec<&SloPoint> = curve[..=last_ok + 1].iter().collect();
    let hi_curve: Vec<(f64, f64)> = upto.iter().map(|p| (p.rate, bounds(p).2)).collect();
    let lo_curve: Vec<(f64, f64)> = upto.iter().map(|p| (p.rate, bounds(p).0)).collect();
    let low = crossing(&hi_curve).unwrap_or(ok.rate).min(cap);
    let high = crossing(&lo_curve).unwrap_or(fail.rate).max(cap);
    c.verdict = SloVerdict::Capacity;
    c.capacity = Some(cap.clamp(ok.rate, fail.rate));
    c.interval = Some((low, high));
    c.bracket = Some((fail.rate - ok.rate) / ok.rate.max(1e-9));
}

/// The first rate whose worst ratio reaches twice the lowest rate's, interpolated.
fn knee(curve: &[SloPoint]) -> Option<f64> {
    let base = curve.first()?.ratio.median;
    if base.is_nan() || base <= 0.0 {
        return None;
    }
    let pts: Vec<(f64, f64)> = curve
        .iter()
        .map(|p| (p.rate, p.ratio.median / (2.0 * base)))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    crossing(&pts).filter(|r| *r > curve[0].rate)
}

impl SloCapacity {
    /// One line a person reads: `capacity at p99<=2ms: 4,810 IOPS (95% 4,700-4,905)`.
    pub fn describe(&self) -> String {
        use crate::units::format_rate;
        match self.verdict {
            SloVerdict::Capacity => {
                let (lo, hi) = self.interval.unwrap_or((f64::NAN, f64::NAN));
                format!(
                    "capacity at {}: {} IOPS (95% interval {}-{})",
                    self.targets,
                    format_rate(self.capacity.unwrap_or(0.0)),
                    format_rate(lo),
                    format_rate(hi)
                )
            }
            SloVerdict::MetAtPeak => format!(
                "{} met at every rate tried, up to {} IOPS (the device's closed-loop peak {})",
                self.targets,
                format_rate(self.capacity.unwrap_or(0.0)),
                self.peak.map_or("?".into(), format_rate)
            ),
            SloVerdict::AtLeast => format!(
                "{} met at every rate tried, up to {} IOPS; the search ended before it tried the device's closed-loop peak ({} IOPS): the capacity is at least {}",
                self.targets,
                format_rate(self.capacity.unwrap_or(0.0)),
                self.peak.map_or("?".into(), format_rate),
                format_rate(self.capacity.unwrap_or(0.0)),
            ),
            SloVerdict::NoneMet => {
                let p = self.curve.first();
                format!(
                    "no rate met {}: the lowest tried, {} IOPS, gave {}{}",
                    self.targets,
                    p.map_or("?".into(), |p| format_rate(p.rate)),
                    p.and_then(|p| p.values.first())
                        .map_or("?".into(), |v| crate::units::format_latency_ns(v.median)),
                    if p.is_some_and(|p| !p.sustained) {
                        " and the device did not keep up with it"
                    } else {
                        ""
                    }
                )
            }
            SloVerdict::NoTrials => format!("no open-loop trial for {}", self.targets),
        }
    }
}

#[cfg(test)]
#[path = "slo_tests.rs"]
mod tests;
