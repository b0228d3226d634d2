//! Tests of the aggregate (`merge.rs`): merged percentiles, the common window, the counts
//! summed, stragglers judged by what hosts deliver.

use super::*;
use crate::sample::{IoAccounting, SeriesPoint};

fn sample(lat_ns: &[(u64, u64)], secs: u32, ops_per_sec: u64) -> TrialSample {
    let mut op = OpSample::new("read");
    for &(v, n) in lat_ns {
        op.latency.0.record_n(v, n).expect("in range");
        op.count += n;
        op.bytes += n * 4096;
    }
    op.elapsed_ns = u64::from(secs) * 1_000_000_000;
    TrialSample {
        workload: "w".into(),
        trial: 1,
        started_unix_ms: 0,
        elapsed_ns: u64::from(secs) * 1_000_000_000,
        ops: vec![op],
        series: (0..secs)
            .map(|t| SeriesPoint {
                t,
                bytes: ops_per_sec * 4096,
                ops: ops_per_sec,
                ..Default::default()
            })
            .collect(),
        accounting: IoAccounting::default(),
        cpu_user_ns: 0,
        cpu_sys_ns: 0,
        notes: vec![],
        verify: None,
        open_loop: None,
    }
}

#[test]
fn percentiles_come_from_the_merged_histogram_not_the_mean() {
    // Two fast hosts (all 100 us) and a slow one (all 10 ms), equal counts: the merged p99
    // is 10 ms, the mean of the p99s is ~3.4 ms: nobody's latency.
    let fast = sample(&[(100_000, 1000)], 2, 500);
    let slow = sample(&[(10_000_000, 1000)], 2, 500);
    let placed = [
        Placed {
            start_ns: 0,
            ramp_ns: 0,
            sample: &fast,
        },
        Placed {
            start_ns: 0,
            ramp_ns: 0,
            sample: &fast,
        },
        Placed {
            start_ns: 0,
            ramp_ns: 0,
            sample: &slow,
        },
    ];
    let a = aggregate(&placed, 0, 3);
    let f = &a.figures[0];
    assert_eq!(f.latency.count, 3000);
    assert_eq!(a.ops[0].latency.len(), 3000);
    let p99 = a.ops[0].latency.percentile(99.0);
    assert_eq!(f.latency.p99_ns, p99);
    assert!(p99 >= 9_990_000, "{p99}");
    let mean = mean_of_p99s(&placed, "read").expect("p99s");
    assert!((mean - p99 as f64).abs() > 1_000_000.0, "{mean} vs {p99}");
    assert!((f.ops_per_sec - 1500.0).abs() < 1e-6, "{}", f.ops_per_sec);
    assert!((a.ops[0].ops_per_sec() - 1500.0).abs() < 1.0);
}

#[test]
fn throughput_counts_only_the_window_where_all_ran() {
    // Host b starts 1 s late and runs 3 s; host a runs 0..3 s. Common window: 1..3 s.
    let a = sample(&[(1000, 300)], 3, 100);
    let b = sample(&[(1000, 600)], 3, 200);
    let s = 1_000_000_000;
    let placed = [
        Placed {
            start_ns: 10 * s,
            ramp_ns: 0,
            sample: &a,
        },
        Placed {
            start_ns: 11 * s,
            ramp_ns: 0,
            sample: &b,
        },
    ];
    let g = aggregate(&placed, 10 * s, 2);
    assert_eq!(g.window_ns, 2 * s);
    assert!(
        (g.figures[0].ops_per_sec - 300.0).abs() < 1e-6,
        "{:?}",
        g.figures
    );
    assert_eq!(g.first_done_ns, 3 * s);
    assert_eq!(g.last_done_ns, 4 * s);
}

/// A host's trial with `count` reads of `lat_ns` each counted over `secs` seconds and
/// `drained` more in flight at its deadline: their latencies are in its histogram, not in
/// its count.
fn host_trial_at(
    count: u64,
    drained: u64,
    secs: u32,
    lat_ns: u64,
) -> crate::hosts::outcome::HostTrial {
    let mut s = sample(&[(lat_ns, count)], secs, count / u64::from(secs));
    s.ops[0]
        .latency
        .0
        .record_n(lat_ns, drained)
        .expect("in range");
    s.accounting.after_window = drained;
    // The series holds every counted IO once.
    let counted: u64 = s.series.iter().map(|p| p.ops).sum();
    s.series[0].ops += count - counted;
    s.series[0].bytes += (count - counted) * 4096;
    crate::hosts::outcome::HostTrial {
        start_ns: 0,
        skew_ns: 0,
        agent_start_ns: 0,
        clock: crate::hosts::clock::ClockEstimate::default(),
        sample: s,
    }
}

fn host_trial(count: u64, drained: u64, secs: u32) -> crate::hosts::outcome::HostTrial {
    host_trial_at(count, drained, secs, 50_000)
}

/// One randread trial on hosts `h0`, `h1`... that all finished it.
fn one_trial(hosts: Vec<crate::hosts::outcome::HostTrial>) -> (Outcome, crate::spec::Suite) {
    use crate::hosts::outcome::{HostResult, TrialOnHosts};
    let suite = crate::spec::parse_spec(
        "[[workload]]\nname = \"r\"\npattern = \"randread\"\ntime = \"3s\"\n",
        "t.toml",
    )
    .expect("spec");
    let outcome = Outcome {
        hosts: (0..hosts.len())
            .map(|i| HostResult {
                name: format!("h{i}"),
                target: None,
                hostname: None,
                failed: None,
                clock: None,
                notes: vec![],
                system: None,
                target_info: None,
            })
            .collect(),
        trials: vec![TrialOnHosts {
            workload: 0,
            trial: 1,
            planned_ns: 0,
            hosts: hosts.into_iter().map(Some).collect(),
            seconds: vec![],
        }],
        error: None,
        interrupted: false,
        started_unix_ms: 0,
        ended_unix_ms: 0,
        controller_cpu_ns: 0,
    };
    (outcome, suite)
}

/// Two hosts counted 113,943 and 114,015 reads and the aggregate said 227,974,
/// 16 more: the merged histogram's count, which also holds the IOs drained after each
/// host's deadline. The aggregate's count and bytes are the hosts' sums, exactly, in the
/// JSON, the table and the stored run.
#[test]
fn the_aggregate_count_is_exactly_the_hosts_sum_not_the_histograms() {
    let (outcome, suite) = one_trial(vec![host_trial(113_943, 8, 3), host_trial(114_015, 8, 3)]);
    let sum = 113_943 + 114_015;
    let sums = summarize(&outcome, &suite, 0.15);
    let a = &sums[0].aggregate;
    let f = &a.figures[0];
    assert_eq!((f.count, f.bytes), (sum, sum * 4096));
    assert_eq!((f.after_window, f.latency.count), (16, sum + 16));
    let rows: u64 = sums[0].hosts.iter().map(|r| r.count).sum();
    assert_eq!(rows, sum);
    let doc = super::super::render::json(&outcome, &sums, None);
    let j = &doc["trials"][0]["aggregate"]["figures"][0];
    assert_eq!(
        (j["count"].as_u64(), j["bytes"].as_u64()),
        (Some(sum), Some(sum * 4096))
    );
    let table = super::super::render::table(&outcome, &sums);
    let agg_row = table
        .lines()
        .find(|l| l.starts_with("aggregate "))
        .expect("aggregate row");
    assert!(agg_row.contains(" 227958 "), "{table}");
    assert!(table.contains("with the 16 IOs in flight"), "{table}");
    // The stored aggregate run: counts, bytes and the per-second series add up.
    let t = aggregate_sample(&outcome.trials[0], a, "r");
    assert_eq!((t.ops[0].count, t.ops[0].bytes), (sum, sum * 4096));
    assert_eq!(t.series.iter().map(|p| p.ops).sum::<u64>(), sum);
    assert_eq!(t.series.iter().map(|p| p.bytes).sum::<u64>(), sum * 4096);
    assert_eq!(t.accounting.after_window, 16);
}

/// A host is judged by what it delivers (IOPS, or MB/s for large
/// blocks, over its own window), never by latency. Four hosts run the same workload; one
/// has a long tail (p99 100x the others', a stall of its device) but delivers as many IOs:
/// not flagged. One delivering a third of the others' IOs is flagged, alone.
#[test]
fn hosts_are_judged_by_delivered_throughput_not_latency() {
    let tail = {
        let mut t = host_trial_at(29_000, 4, 3, 50_000);
        t.sample.ops[0]
            .latency
            .0
            .record_n(5_000_000, 1_000)
            .expect("in range");
        t.sample.ops[0].count += 1_000;
        t.sample.series[0].ops += 1_000;
        t
    };
    let (outcome, suite) = one_trial(vec![
        host_trial(30_000, 4, 3),
        tail,
        host_trial(30_300, 4, 3),
        host_trial(10_000, 4, 3),
        host_trial(29_700, 4, 3),
    ]);
    let rows = &summarize(&outcome, &suite, 0.15)[0].hosts;
    assert!(rows[1].p99_ns > 50 * rows[0].p99_ns, "{:?}", rows[1]);
    let flagged: Vec<&str> = rows
        .iter()
        .filter(|r| r.slow_pct.is_some())
        .map(|r| r.host.as_str())
        .collect();
    assert_eq!(flagged, ["h3"], "{rows:?}");
    assert!(rows[3].slow_pct.is_some_and(|p| (p - 66.7).abs() < 0.5));
}

#[test]
fn a_straggler_is_flagged_by_the_slow_disk_rule() {
    let flags = stragglers(&[1000.0, 980.0, 400.0, 1010.0], 0.15);
    assert_eq!(flags.len(), 1);
    assert_eq!(flags[0].0, 2);
    assert!(flags[0].1 > 55.0);
    assert!(stragglers(&[1000.0], 0.15).is_empty());
}

/// A host's second `t` as its agent streams it: `n` reads of `lat_ns`.
fn streamed(t: u32, n: u64, lat_ns: u64) -> crate::sample::IntervalSample {
    let mut h = crate::sample::LatencyHistogram::new();
    h.0.record_n(lat_ns, n).expect("in range");
    crate::sample::IntervalSample {
        t,
        ops: n,
        bytes: n * 4096,
        latency: vec![crate::sample::IntervalLatency {
            op: "read".into(),
            histogram: h,
        }],
    }
}

/// With `--on-host-failure continue`, a host that failed mid-trial streamed seconds
/// before it failed; the stored aggregate (of the others) still adds up: its per-second series
/// sums to its count, and a second merged with the failed host's has no percentile (it would
/// be of IOs outside the aggregate).
#[test]
fn a_failed_hosts_seconds_stay_out_of_the_stored_aggregate() {
    let (mut outcome, suite) = one_trial(vec![
        host_trial(3000, 2, 3),
        host_trial(3000, 2, 3),
        host_trial(3000, 2, 3),
    ]);
    let mut m = crate::hosts::seconds::SecondsMerger::new(3);
    for t in 0..3 {
        m.add(0, &streamed(t, 1000, 50_000));
        m.add(2, &streamed(t, 1000, 50_000));
    }
    // Host 1 sent two seconds of slow IOs, then failed.
    m.add(1, &streamed(0, 700, 9_000_000));
    m.add(1, &streamed(1, 700, 9_000_000));
    outcome.trials[0].seconds = m.finish();
    outcome.trials[0].hosts[1] = None;
    outcome.hosts[1].failed = Some("gone".into());
    let sums = summarize(&outcome, &suite, 0.15);
    let a = &sums[0].aggregate;
    assert_eq!((a.hosts_ok, a.figures[0].count), (2, 6000));
    let t = aggregate_sample(&outcome.trials[0], a, "r");
    assert_eq!(t.ops[0].count, 6000);
    assert_eq!(t.series.iter().map(|p| p.ops).sum::<u64>(), 6000);
    let p50: Vec<Option<u64>> = t.series.iter().map(|p| p.p50_ns).collect();
    assert_eq!(p50[..2], [None, None], "{:?}", t.series);
    assert!(p50[2].is_some_and(|v| v < 60_000), "{:?}", t.series);
}
