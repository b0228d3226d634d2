//! One trial on many hosts as one result: latency percentiles from the merged HDR histograms
//! (percentiles cannot be averaged: the mean of four hosts' p99s is nobody's p99), throughput
//! over the window in which every host ran, and when the first and the last host finished.
//!
//! Pure functions over samples already measured, so every rule is tested without a host.

use super::outcome::{Outcome, TrialOnHosts};
use super::seconds::SecondFigures;
use crate::sample::{LatencySummary, Note, NoteKind, OpSample, TrialSample};

/// One host's finished trial, placed on the controller's clock.
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    /// When the host's trial clock started, controller clock, Unix ns.
    pub start_ns: u64,
    /// Warm-up before the measured window, ns.
    pub ramp_ns: u64,
    /// What it measured.
    pub sample: &'a TrialSample,
}

impl Placed<'_> {
    /// The measured window on the controller's clock: [begin, end), Unix ns.
    pub fn window(&self) -> (u64, u64) {
        let b = self.start_ns + self.ramp_ns;
        (b, b + self.sample.elapsed_ns)
    }
}

/// The aggregate of one trial over the hosts that finished it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Aggregate {
    /// Hosts whose trial is in the aggregate.
    pub hosts_ok: usize,
    /// Hosts the run started with.
    pub hosts_total: usize,
    /// Per operation kind: counts and bytes summed over hosts, latency histograms merged;
    /// `elapsed_ns` is set so that `ops_per_sec()` is the rate over the common window.
    #[serde(skip)]
    pub ops: Vec<OpSample>,
    /// Per operation kind: rates over the common window and percentiles of the merged
    /// histogram.
    pub figures: Vec<OpFigures>,
    /// Length of the window in which every host ran, ns (0: they never overlapped).
    pub window_ns: u64,
    /// When the first host finished, ns after the start instant.
    pub first_done_ns: u64,
    /// When the last host finished, ns after the start instant.
    pub last_done_ns: u64,
    /// Second by second, every host's streamed second merged: counts summed, percentiles
    /// from the merged per-second histograms.
    pub per_second: Vec<SecondFigures>,
}

/// The figures of one operation kind in the aggregate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OpFigures {
    /// `read`, `write`, `sync`.
    pub op: String,
    /// Operations per second over the common window, all hosts together.
    pub ops_per_sec: f64,
    /// MB/s (10^6 bytes per second) over the common window.
    pub mb_per_sec: f64,
    /// Operations the hosts counted, each in its own measured window: exactly the sum of the
    /// hosts' counts (a count is summed, never estimated).
    pub count: u64,
    /// Bytes those operations moved: exactly the sum of the hosts' bytes.
    pub bytes: u64,
    /// Operations in flight at the hosts' deadlines: drained, their latencies in the merged
    /// histogram, but not in `count` nor in the rates (docs/accuracy.md). `latency.count` is
    /// `count + after_window`.
    pub after_window: u64,
    /// Percentiles of the merged histogram: every counted operation's latency and the
    /// `after_window` ones'.
    pub latency: LatencySummary,
}

/// Ops and bytes a host completed inside `[w0, w1)`, from its per-second series (each second
/// counted in proportion to its overlap with the window).
fn in_window(p: &Placed<'_>, w0: u64, w1: u64) -> (f64, f64) {
    let (b, e) = p.window();
    let s = p.sample;
    let total_ops: u64 = s.series.iter().map(|x| x.ops).sum();
    if s.series.is_empty() || total_ops == 0 {
        // No series: assume an even rate over the host's window.
        let len = e.saturating_sub(b).max(1) as f64;
        let f = w1.min(e).saturating_sub(w0.max(b)) as f64 / len;
        let ops: u64 = s
            .ops
            .iter()
            .filter(|o| o.op != "sync")
            .map(|o| o.count)
            .sum();
        let bytes: u64 = s.ops.iter().map(|o| o.bytes).sum();
        return (ops as f64 * f, bytes as f64 * f);
    }
    let (mut ops, mut bytes) = (0.0, 0.0);
    for pt in &s.series {
        let p0 = b + u64::from(pt.t) * 1_000_000_000;
        let p1 = (p0 + 1_000_000_000).min(e.max(p0 + 1));
        let f = w1.min(p1).saturating_sub(w0.max(p0)) as f64 / (p1 - p0) as f64;
        ops += pt.ops as f64 * f;
        bytes += pt.bytes as f64 * f;
    }
    (ops, bytes)
}

/// Merges the hosts that finished one trial. `planned_ns` is the start instant (controller
/// clock) the hosts were given; `hosts_total` how many hosts the run started with.
pub fn aggregate(placed: &[Placed<'_>], planned_ns: u64, hosts_total: usize) -> Aggregate {
    let w0 = placed.iter().map(|p| p.window().0).max().unwrap_or(0);
    let w1 = placed.iter().map(|p| p.window().1).min().unwrap_or(0);
    let window_ns = w1.saturating_sub(w0);
    let first_done_ns = placed
        .iter()
        .map(|p| p.window().1.saturating_sub(planned_ns))
        .min()
        .unwrap_or(0);
    let last_done_ns = placed
        .iter()
        .map(|p| p.window().1.saturating_sub(planned_ns))
        .max()
        .unwrap_or(0);
    // Each host's share of the window, split over its op kinds in proportion to their counts
    // (the series counts all kinds together).
    let mut ops: Vec<OpSample> = Vec::new();
    let mut rate: Vec<(f64, f64)> = Vec::new();
    for p in placed {
        let (w_ops, w_bytes) = if window_ns > 0 {
            in_window(p, w0, w1)
        } else {
            (0.0, 0.0)
        };
        let all: u64 = p
            .sample
            .ops
            .iter()
            .filter(|o| o.op != "sync")
            .map(|o| o.count)
            .sum();
        let all_bytes: u64 = p.sample.ops.iter().map(|o| o.bytes).sum();
        for o in &p.sample.ops {
            let i = if let Some(i) = ops.iter().position(|x| x.op == o.op) {
                i
            } else {
                ops.push(OpSample::new(&o.op));
                rate.push((0.0, 0.0));
                ops.len() - 1
            };
            ops[i].count += o.count;
            ops[i].bytes += o.bytes;
            ops[i].latency.merge(&o.latency);
            let share = if all > 0 {
                o.count as f64 / all as f64
            } else {
                0.0
            };
            let bshare = if all_bytes > 0 {
                o.bytes as f64 / all_bytes as f64
            } else {
                0.0
            };
            rate[i].0 += w_ops * share;
            rate[i].1 += w_bytes * bshare;
        }
    }
    let secs = window_ns as f64 / 1e9;
    let mut figures = Vec::new();
    for (o, (r_ops, r_bytes)) in ops.iter_mut().zip(rate) {
        let ops_per_sec = if secs > 0.0 { r_ops / secs } else { 0.0 };
        let mb_per_sec = if secs > 0.0 {
            r_bytes / secs / 1e6
        } else {
            0.0
        };
        o.elapsed_ns = if ops_per_sec > 0.0 {
            (o.count as f64 * 1e9 / ops_per_sec) as u64
        } else {
            window_ns
        };
        let latency = o.latency.summary();
        figures.push(OpFigures {
            op: o.op.clone(),
            ops_per_sec,
            mb_per_sec,
            count: o.count,
            bytes: o.bytes,
            after_window: latency.count.saturating_sub(o.count),
            latency,
        });
    }
    Aggregate {
        hosts_ok: placed.len(),
        hosts_total,
        ops,
        figures,
        window_ns,
        first_done_ns,
        last_done_ns,
        per_second: Vec::new(),
    }
}

/// The mean of the hosts' p99s: what averaging tools report, kept only to show it is not the
/// aggregate's p99.
pub fn mean_of_p99s(placed: &[Placed<'_>], op: &str) -> Option<f64> {
    let v: Vec<f64> = placed
        .iter()
        .filter_map(|p| p.sample.ops.iter().find(|o| o.op == op))
        .map(|o| o.latency.percentile(99.0) as f64)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Hosts far below the others: the slow-disk finder's rule ([`crate::disks::outliers`]):
/// a host more than `tolerance` below the median of all hosts' figures is flagged. Returns
/// (host index, percent below the median, the median).
pub fn stragglers(figures: &[f64], tolerance: f64) -> Vec<(usize, f64, f64)> {
    let speeds: Vec<crate::disks::outliers::Speed> = figures
        .iter()
        .enumerate()
        .map(|(i, v)| crate::disks::outliers::Speed {
            device: i.to_string(),
            group: "hosts".into(),
            mb_per_sec: *v,
        })
        .collect();
    let (_, flags) = crate::disks::outliers::slow_flags(&speeds, tolerance);
    flags
        .iter()
        .filter_map(|f| {
            Some((
                f.device.parse().ok()?,
                f.below_pct?,
                f.group_median_mb_per_sec?,
            ))
        })
        .collect()
}

/// One host's row of one trial.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostRow {
    /// As given in `--hosts`.
    pub host: String,
    /// Why it has no figures (failed before finishing the trial).
    pub failed: Option<String>,
    /// The operation the figures are of (the one carrying most of the traffic).
    pub op: String,
    /// Operations of that kind measured (in the window).
    pub count: u64,
    /// Bytes those operations moved.
    pub bytes: u64,
    /// Latencies in its histogram: `count` plus the IOs drained after the deadline, whose
    /// latency is recorded but which stay out of the rate (docs/accuracy.md).
    pub latency_count: u64,
    /// Its rate over the host's own window.
    pub ops_per_sec: f64,
    /// MB/s over the host's own window.
    pub mb_per_sec: f64,
    /// Percentiles of the host's own histogram, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p99_9_ns: u64,
    /// Start minus the planned instant, ns (positive: late).
    pub skew_ns: i64,
    /// When it finished, ns after the planned instant.
    pub done_ns: u64,
    /// When its clock started on its own clock, Unix ns.
    pub agent_start_unix_ns: u64,
    /// Its clock minus the controller's, ns; right to within half of `rtt_ns`, so the true
    /// skew is `skew_ns` give or take that.
    pub clock_offset_ns: i64,
    /// The fastest clock probe's round trip, ns.
    pub rtt_ns: u64,
    /// Percent below the hosts' median (the slow-disk rule), when flagged.
    pub slow_pct: Option<f64>,
}

impl HostRow {
    /// The row of a host that did not finish the trial.
    fn failed(host: String, why: String) -> HostRow {
        HostRow {
            host,
            failed: Some(why),
            op: String::new(),
            count: 0,
            bytes: 0,
            latency_count: 0,
            ops_per_sec: 0.0,
            mb_per_sec: 0.0,
            p50_ns: 0,
            p99_ns: 0,
            p99_9_ns: 0,
            skew_ns: 0,
            done_ns: 0,
            agent_start_unix_ns: 0,
            clock_offset_ns: 0,
            rtt_ns: 0,
            slow_pct: None,
        }
    }
}

/// One trial over the hosts: rows, the aggregate, the skew achieved.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TrialSummary {
    /// Workload name.
    pub workload: String,
    /// Trial number.
    pub trial: u32,
    /// The figure stragglers are judged by: `iops` or `mbps`.
    pub headline: String,
    /// Per host, in `--hosts` order.
    pub hosts: Vec<HostRow>,
    /// All finished hosts together.
    pub aggregate: Aggregate,
    /// The median of the hosts' |skew|, ns.
    pub skew_median_ns: u64,
    /// The largest |skew|, ns.
    pub skew_max_ns: u64,
}

/// Summaries of every trial of a multi-host run.
pub fn summarize(
    outcome: &Outcome,
    suite: &crate::spec::Suite,
    tolerance: f64,
) -> Vec<TrialSummary> {
    let n = outcome.hosts.len();
    let mut out = Vec::new();
    for st in &outcome.trials {
        let Some(w) = suite.workloads.get(st.workload) else {
            continue;
        };
        let ramp_ns = match &w.kind {
            crate::spec::WorkloadKind::Io(io) => io.ramp.as_nanos() as u64,
            _ => 0,
        };
        let placed: Vec<Placed<'_>> = st
            .hosts
            .iter()
            .flatten()
            .map(|h| Placed {
                start_ns: h.start_ns,
                ramp_ns,
                sample: &h.sample,
            })
            .collect();
        let mut agg = aggregate(&placed, st.planned_ns, n);
        agg.per_second.clone_from(&st.seconds);
        let mut headline = "iops".to_string();
        let mut rows: Vec<HostRow> = Vec::new();
        for (i, h) in st.hosts.iter().enumerate() {
            let name = outcome.hosts[i].name.clone();
            let Some(h) = h else {
                let why = outcome.hosts[i]
                    .failed
                    .clone()
                    .unwrap_or_else(|| "did not finish the trial".into());
                rows.push(HostRow::failed(name, why));
                continue;
            };
            if let Some((k, _)) = crate::sample::headline::throughput(w, &h.sample) {
                headline = if k.ends_with("mbps") { "mbps" } else { "iops" }.into();
            }
            rows.push(host_row(name, h, ramp_ns, st.planned_ns));
        }
        let ok: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].failed.is_none())
            .collect();
        mark_stragglers(&mut rows, &ok, &headline, tolerance);
        let mut skews: Vec<u64> = ok.iter().map(|&i| rows[i].skew_ns.unsigned_abs()).collect();
        skews.sort_unstable();
        out.push(TrialSummary {
            workload: w.name.clone(),
            trial: st.trial,
            headline,
            hosts: rows,
            aggregate: agg,
            // The mean of the middle two for an even count; 0 without hosts.
            skew_median_ns: crate::quantile::median_of_sorted(&skews).unwrap_or(0),
            skew_max_ns: skews.last().copied().unwrap_or(0),
        });
    }
    out
}

/// The row of a host that finished the trial: its main op (the busiest one that is not a
/// sync), when it was done after the planned start, its clock.
fn host_row(host: String, h: &super::outcome::HostTrial, ramp_ns: u64, planned_ns: u64) -> HostRow {
    let op = h
        .sample
        .ops
        .iter()
        .filter(|o| o.op != "sync")
        .max_by_key(|o| o.count)
        .or_else(|| h.sample.ops.first());
    let p = Placed {
        start_ns: h.start_ns,
        ramp_ns,
        sample: &h.sample,
    };
    HostRow {
        host,
        failed: None,
        op: op.map(|o| o.op.clone()).unwrap_or_default(),
        count: op.map_or(0, |o| o.count),
        bytes: op.map_or(0, |o| o.bytes),
        latency_count: op.map_or(0, |o| o.latency.len()),
        ops_per_sec: op.map_or(0.0, OpSample::ops_per_sec),
        mb_per_sec: op.map_or(0.0, OpSample::mb_per_sec),
        p50_ns: op.map_or(0, |o| o.latency.percentile(50.0)),
        p99_ns: op.map_or(0, |o| o.latency.percentile(99.0)),
        p99_9_ns: op.map_or(0, |o| o.latency.percentile(99.9)),
        skew_ns: h.skew_ns,
        done_ns: p.window().1.saturating_sub(planned_ns),
        agent_start_unix_ns: h.agent_start_ns,
        clock_offset_ns: h.clock.offset_ns,
        rtt_ns: h.clock.rtt_ns,
        slow_pct: None,
    }
}

/// Marks the finished hosts (`ok`, indices into `rows`) the straggler rule finds below their
/// peers on the trial's headline figure.
fn mark_stragglers(rows: &mut [HostRow], ok: &[usize], headline: &str, tolerance: f64) {
    let figs: Vec<f64> = ok
        .iter()
        .map(|&i| {
            if headline == "mbps" {
                rows[i].mb_per_sec
            } else {
                rows[i].ops_per_sec
            }
        })
        .collect();
    for (k, below, _) in stragglers(&figs, tolerance) {
        rows[ok[k]].slow_pct = Some(below);
    }
}

/// The aggregate of one trial as a trial sample (for the store): merged histograms, counts
/// and bytes summed, the hosts' per-second series summed by second (each second's p50/p99
/// from the merged streamed seconds), `elapsed_ns` the common window.
pub fn aggregate_sample(st: &TrialOnHosts, agg: &Aggregate, name: &str) -> TrialSample {
    // Counts per second from the hosts in the aggregate, so that the series adds up to the
    // aggregate's counts exactly; `with[t]`: how many of them had second `t`.
    let mut series: Vec<crate::sample::SeriesPoint> = Vec::new();
    let mut with: Vec<usize> = Vec::new();
    let mut acct = crate::sample::IoAccounting::default();
    let (mut cu, mut cs) = (0, 0);
    let mut notes = Vec::new();
    // The hosts' spin notes as one over all their waits; of their CPU-wait notes, the worst.
    let mut spun: Option<NoteKind> = None;
    let mut cpu_wait: Option<(u64, &Note)> = None;
    let mut open_loop: Option<crate::sample::OpenLoopSample> = None;
    for h in st.hosts.iter().flatten() {
        if let Some(o) = &h.sample.open_loop {
            open_loop.get_or_insert_with(Default::default).merge(o);
        }
        for p in &h.sample.series {
            let t = p.t as usize;
            if series.len() <= t {
                series.resize(t + 1, crate::sample::SeriesPoint::default());
                with.resize(t + 1, 0);
            }
            series[t].t = p.t;
            series[t].ops += p.ops;
            series[t].bytes += p.bytes;
            with[t] += 1;
        }
        let a = &h.sample.accounting;
        acct.submitted += a.submitted;
        acct.completed += a.completed;
        acct.short += a.short;
        acct.errors += a.errors;
        acct.syncs += a.syncs;
        acct.after_window += a.after_window;
        cu += h.sample.cpu_user_ns;
        cs += h.sample.cpu_sys_ns;
        for n in &h.sample.notes {
            match n.kind {
                NoteKind::Spun { .. } => spun = Some(spun.map_or(n.kind, |s| s.pool(n.kind))),
                NoteKind::CpuWait { share_ppm } => {
                    if cpu_wait.is_none_or(|(worst, _)| share_ppm > worst) {
                        cpu_wait = Some((share_ppm, n));
                    }
                }
                NoteKind::Caveat => {
                    if !notes.contains(n) {
                        notes.push(n.clone());
                    }
                }
            }
        }
    }
    notes.extend(cpu_wait.map(|(_, n)| n.clone()));
    if let Some(NoteKind::Spun {
        found,
        waits,
        compared,
        spin_won,
    }) = spun
    {
        notes.push(Note::spun(found, waits, compared, spin_won));
    }
    // Percentiles from the merged streamed seconds, where a second's merge holds exactly the
    // aggregate's hosts: a host that failed mid-trial streamed seconds it is not counted in.
    for s in agg.per_second.iter().filter(|s| s.latency_count > 0) {
        let t = s.t as usize;
        if let Some(p) = series.get_mut(t)
            && with.get(t) == Some(&s.hosts)
        {
            p.p50_ns = Some(s.p50_ns);
            p.p99_ns = Some(s.p99_ns);
        }
    }
    if agg.hosts_ok < agg.hosts_total {
        notes.push(Note::caveat(format!(
            "aggregate of {} of {} hosts",
            agg.hosts_ok, agg.hosts_total
        )));
    }
    TrialSample {
        workload: name.to_string(),
        trial: st.trial,
        started_unix_ms: st.planned_ns / 1_000_000,
        elapsed_ns: agg.window_ns,
        ops: agg.ops.clone(),
        series,
        accounting: acct,
        cpu_user_ns: cu,
        cpu_sys_ns: cs,
        notes,
        verify: None,
        open_loop,
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
