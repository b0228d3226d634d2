//! The figure a workload is judged by, in one place so that the runner (`--until-stable`),
//! the lab (degraded and rebuild ratios, its table) and every report agree on it.
//!
//! A closed loop is judged by what it moved: MB/s for sequential and large blocks, IOPS for
//! random, ops/s for small files. An open loop (`--rate`, a trace replayed at its recorded
//! times, a trace's model) is not: its schedule fixes the IOPS (a replay on raid1 and on raid5
//! does the same 2487 reads a second as long as both keep up), so its throughput says nothing
//! about the layout. It is judged by its latency from the schedule — from each IO's due time
//! to its completion, what a client waiting for it saw — at p99 and p99.9 (lower is better),
//! and by whether the asked rate was sustained (achieved / asked), reads and writes apart.

use serde::{Deserialize, Serialize};

use super::{Metric, OpSample, TrialSample, Unit};
use crate::spec::{Workload, WorkloadKind};

/// A run whose achieved rate falls more than 5% short of the asked rate did not sustain it:
/// its latency from the schedule then grows with the backlog, and every report marks it.
pub const SUSTAINED_MIN: f64 = 0.95;

/// The figure of an open loop's p99 latency from the schedule (`read.sched_p99_us`).
pub const SCHED_P99: &str = "sched_p99_us";
/// The figure of its p99.9 latency from the schedule.
pub const SCHED_P99_9: &str = "sched_p99_9_us";
/// The figure of its achieved over asked rate.
pub const SUSTAINED: &str = "sustained";

/// What kind of figure a workload is judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadlineKind {
    /// MB/s, IOPS or ops/s: higher is better.
    Throughput,
    /// An open loop: p99 and p99.9 latency from the schedule (lower is better), with the share
    /// of the asked rate sustained, reads and writes apart.
    ScheduleLatency,
}

impl HeadlineKind {
    /// Whether a larger headline means a better result.
    pub fn higher_is_better(self) -> bool {
        self == HeadlineKind::Throughput
    }
}

/// What `w` is judged by: latency from the schedule for an open loop (a rate, or a replay at
/// its recorded times), throughput otherwise. An SLO search's answer is its capacity, and an
/// as-fast-as-possible replay has no schedule: both are throughput here.
pub fn kind(w: &Workload) -> HeadlineKind {
    match &w.kind {
        WorkloadKind::Io(io)
            if io.slo.is_none()
                && (io.open_loop.is_some()
                    || io.replay.as_ref().is_some_and(|r| !r.as_fast_as_possible)) =>
        {
            HeadlineKind::ScheduleLatency
        }
        _ => HeadlineKind::Throughput,
    }
}

/// The op carrying most of a trial's traffic (reads in a 70/30 mix).
fn main_op(t: &TrialSample) -> Option<&OpSample> {
    t.ops
        .iter()
        .filter(|o| o.op != "sync")
        .max_by_key(|o| o.count)
}

/// The figure a workload is judged by, as (metric name, value): for an open loop the p99
/// latency from the schedule of the op carrying most of the traffic (`read.sched_p99_us`,
/// lower is better), otherwise its [`throughput`].
pub fn headline(w: &Workload, t: &TrialSample) -> Option<(String, f64)> {
    match kind(w) {
        HeadlineKind::Throughput => throughput(w, t),
        HeadlineKind::ScheduleLatency => {
            let op = main_op(t).filter(|o| !o.latency.is_empty())?;
            Some((
                format!("{}.{SCHED_P99}", op.op),
                op.latency.percentile(99.0) as f64 / 1e3,
            ))
        }
    }
}

/// What a workload moved: MB/s for sequential and large blocks, IOPS for random, ops/s for
/// small files, as (metric name, value). The headline of a closed loop; of an open loop,
/// what its schedule fixed.
pub fn throughput(w: &Workload, t: &TrialSample) -> Option<(String, f64)> {
    match &w.kind {
        WorkloadKind::Io(io) => {
            let op = main_op(t)?;
            Some(if io.headline_is_bandwidth() {
                (format!("{}.mbps", op.op), op.mb_per_sec())
            } else {
                (format!("{}.iops", op.op), op.ops_per_sec())
            })
        }
        _ => t
            .ops
            .first()
            .map(|o| (format!("{}.ops", o.op), o.ops_per_sec())),
    }
}

/// The metric keys an open-loop workload is judged by, reads then writes, each op's p99 and
/// p99.9 latency from the schedule and its sustained share: what the lab table and the
/// reports show for it.
pub fn schedule_keys(op: &str) -> [String; 3] {
    [
        format!("{op}.{SCHED_P99}"),
        format!("{op}.{SCHED_P99_9}"),
        format!("{op}.{SUSTAINED}"),
    ]
}

/// Whether a metric key is an open loop's sustained share (`write.sustained`).
pub fn is_sustained_key(key: &str) -> bool {
    key.rsplit_once('.').is_some_and(|(_, f)| f == SUSTAINED)
}

/// Whether a sustained share means the asked rate was not kept up with.
pub fn short_of_rate(sustained: f64) -> bool {
    sustained < SUSTAINED_MIN
}

/// Achieved over asked IOPS of `op` (`read` or `write`) in an open-loop trial; `None` in a
/// closed loop, an as-fast-as-possible replay, or when nothing of that op was asked.
///
/// A record made before the asked rate was kept per op holds only the total: the op is then
/// held against the total shared out as the IOs it completed were (reads and writes then
/// read the same; a replay's total counts its flushes).
pub fn sustained(t: &TrialSample, op: &str) -> Option<f64> {
    let ol = t.open_loop.as_ref().filter(|o| o.from_schedule())?;
    let o = t.op(op)?;
    let asked = match (&ol.asked_by_op, op) {
        (Some(a), "read") => a.read_iops,
        (Some(a), "write") => a.write_iops,
        (Some(_), _) => return None,
        (None, _) => {
            let replay = ol.replay.is_some();
            let done: u64 = t
                .ops
                .iter()
                .filter(|x| x.op != "sync" || replay)
                .map(|x| x.count)
                .sum();
            ol.asked_iops * o.count as f64 / done.max(1) as f64
        }
    };
    (asked > 0.0 && asked.is_finite()).then(|| o.ops_per_sec() / asked)
}

/// An open-loop data op's figures beside its IOPS and MB/s: its sustained share, its latency
/// from the schedule (p50, p99, p99.9, mean) and its service time (p50, p99).
pub(super) fn schedule_metrics(t: &TrialSample, o: &OpSample) -> Vec<Metric> {
    let mut out = Vec::new();
    if let Some(s) = sustained(t, &o.op) {
        out.push(Metric::new(
            format!("{}.{SUSTAINED}", o.op),
            s,
            Unit::Fraction,
        ));
    }
    let us = |ns: u64| ns as f64 / 1e3;
    if !o.latency.is_empty() {
        let s = o.latency.summary();
        for (fig, v) in [
            ("sched_p50_us", us(s.p50_ns)),
            (SCHED_P99, us(s.p99_ns)),
            (SCHED_P99_9, us(s.p99_9_ns)),
            ("sched_mean_us", s.mean_ns / 1e3),
        ] {
            out.push(Metric::new(format!("{}.{fig}", o.op), v, Unit::Micros));
        }
    }
    if let Some(h) = o.service.as_ref().filter(|h| !h.is_empty()) {
        for (fig, p) in [("svc_p50_us", 50.0), ("svc_p99_us", 99.0)] {
            out.push(Metric::new(
                format!("{}.{fig}", o.op),
                us(h.percentile(p)),
                Unit::Micros,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{AskedByOp, LatencyHistogram, OpenLoopSample};
    use crate::spec::{IoWorkload, OpenLoop, Rate, Replay};

    fn op(name: &str, count: u64, lat_us: u64) -> OpSample {
        let mut o = OpSample::new(name);
        o.count = count;
        o.bytes = count * 4096;
        o.elapsed_ns = 1_000_000_000;
        for i in 0..count {
            // 1% of the IOs ten times as slow: p99 sits on the edge, p99.9 beyond it.
            o.latency.record(if i % 100 == 0 {
                lat_us * 10_000
            } else {
                lat_us * 1000
            });
        }
        let mut s = LatencyHistogram::new();
        s.record(lat_us * 500);
        o.service = Some(s);
        o
    }

    fn trial(ops: Vec<OpSample>, ol: Option<OpenLoopSample>) -> TrialSample {
        TrialSample {
            workload: "w".into(),
            trial: 1,
            elapsed_ns: 1_000_000_000,
            ops,
            open_loop: ol,
            ..TrialSample::default()
        }
    }

    fn workload(io: IoWorkload) -> Workload {
        Workload {
            name: "w".into(),
            drop_caches: false,
            kind: WorkloadKind::Io(io),
        }
    }

    fn rate(iops: f64) -> IoWorkload {
        IoWorkload {
            open_loop: Some(OpenLoop {
                rate: Rate::Iops(iops),
                arrivals: crate::spec::Arrivals::Poisson,
                per_thread: false,
            }),
            pattern: crate::spec::Pattern::RandRw,
            ..IoWorkload::default()
        }
    }

    /// An open loop that asked 1000 IOPS: 800 reads and 200 writes.
    fn asked_800_reads_200_writes() -> OpenLoopSample {
        OpenLoopSample {
            asked_iops: 1000.0,
            asked_by_op: Some(Box::new(AskedByOp {
                read_iops: 800.0,
                write_iops: 200.0,
            })),
            ..OpenLoopSample::default()
        }
    }

    /// An open loop is judged by its p99 latency from the schedule (lower is better), a closed
    /// one by its IOPS; a replay at its recorded times is an open loop, as fast as possible
    /// it is not.
    #[test]
    fn an_open_loop_is_judged_by_its_latency_from_the_schedule() {
        let ol = asked_800_reads_200_writes();
        let t = trial(vec![op("read", 800, 100), op("write", 200, 300)], Some(ol));
        let open = workload(rate(1000.0));
        assert_eq!(kind(&open), HeadlineKind::ScheduleLatency);
        let (m, v) = headline(&open, &t).unwrap();
        assert_eq!(m, "read.sched_p99_us");
        assert!((v - 100.0).abs() < 1.0 || (v - 1000.0).abs() < 10.0, "{v}");
        assert_eq!(throughput(&open, &t).unwrap().0, "read.iops");
        let closed = workload(IoWorkload::default());
        assert_eq!(kind(&closed), HeadlineKind::Throughput);
        assert_eq!(headline(&closed, &t).unwrap().0, "read.iops");
        let replay = |afap| {
            workload(IoWorkload {
                replay: Some(Box::new(Replay {
                    trace: "t".into(),
                    speed: 1.0,
                    as_fast_as_possible: afap,
                    map: crate::spec::OffsetMap::Exact,
                })),
                ..IoWorkload::default()
            })
        };
        assert_eq!(kind(&replay(false)), HeadlineKind::ScheduleLatency);
        assert_eq!(kind(&replay(true)), HeadlineKind::Throughput);
        let mut search = rate(1000.0);
        search.slo = Some(crate::spec::Slo {
            targets: crate::spec::Slo::parse_targets("p99<=2ms").unwrap(),
            budget: None,
            precision: 0.05,
            edge_trials: 3,
            arrivals: crate::spec::Arrivals::Poisson,
        });
        assert_eq!(kind(&workload(search)), HeadlineKind::Throughput);
    }

    /// Sustained is achieved over asked per op: 800 reads asked and done is 1.00, 200 writes
    /// asked and 100 done is 0.50 — marked short; the metrics carry both, the latency from
    /// the schedule at p99.9 and the service time beside it.
    #[test]
    fn sustained_holds_each_op_against_its_own_asked_rate() {
        let ol = asked_800_reads_200_writes();
        let t = trial(vec![op("read", 800, 100), op("write", 100, 300)], Some(ol));
        assert!((sustained(&t, "read").unwrap() - 1.0).abs() < 1e-12);
        assert!((sustained(&t, "write").unwrap() - 0.5).abs() < 1e-12);
        assert!(short_of_rate(0.5) && !short_of_rate(0.97));
        let names: Vec<String> = t.metrics().into_iter().map(|m| m.name).collect();
        for k in schedule_keys("write") {
            assert!(names.contains(&k), "{k} in {names:?}");
        }
        assert!(names.contains(&"read.svc_p99_us".to_string()));
        assert!(
            !names.iter().any(|n| n.contains(".lat_")),
            "an open loop's latency is named from the schedule: {names:?}"
        );
        let m = t.metrics();
        let p999 = m.iter().find(|m| m.name == "write.sched_p99_9_us").unwrap();
        assert!(p999.value > 2000.0, "the slow 1% shows at p99.9: {p999:?}");
        // A record from before the per-op rates: the total shared as the IOs done were.
        let old = OpenLoopSample {
            asked_iops: 1800.0,
            ..OpenLoopSample::default()
        };
        let t = trial(vec![op("read", 800, 100), op("write", 100, 300)], Some(old));
        assert!((sustained(&t, "read").unwrap() - 0.5).abs() < 1e-12);
        assert!((sustained(&t, "write").unwrap() - 0.5).abs() < 1e-12);
        // A closed loop has no sustained share and keeps its latency names.
        let t = trial(vec![op("read", 800, 100)], None);
        assert!(sustained(&t, "read").is_none());
        assert!(t.metrics().iter().any(|m| m.name == "read.lat_p99_us"));
    }
}
