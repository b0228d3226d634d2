use super::*;
use crate::trace::{NO_COMPLETION, TraceHeader, TraceIo};

fn io(t: u64, op: Op, offset: u64, len: u32, lat: u64) -> TraceIo {
    TraceIo {
        issue_ns: t,
        offset,
        latency_ns: lat,
        len,
        op,
        flags: 0,
        process: 0,
    }
}

fn trace(ios: Vec<TraceIo>, duration_ns: u64) -> Trace {
    Trace {
        header: TraceHeader {
            duration_ns,
            processes: vec!["db".into()],
            ..Default::default()
        },
        ios,
    }
}

#[test]
fn mix_and_size_histograms_are_exact() {
    let mut ios = Vec::new();
    for k in 0..100u64 {
        let op = if k % 10 < 7 { Op::Read } else { Op::Write };
        let len = if k % 2 == 0 { 8192 } else { 131_072 };
        ios.push(io(k * 1000, op, k * 1_000_000, len, 500));
    }
    ios.push(io(100_000, Op::Flush, 0, 0, 100));
    let m = Model::of(&trace(ios, 1_000_000));
    assert_eq!(m.count(Op::Read), 70);
    assert_eq!(m.count(Op::Write), 30);
    assert_eq!(m.count(Op::Flush), 1);
    assert!((m.read_pct_of_data() - 70.0).abs() < 1e-9);
    let reads = m.sizes.iter().find(|s| s.op == Op::Read).unwrap();
    assert_eq!(reads.sizes.len(), 2);
    assert_eq!(reads.sizes.iter().map(|s| s.count).sum::<u64>(), 70);
    // Reads are k % 10 < 7, their 8k IOs the even k: k % 10 in {0, 2, 4, 6}.
    assert_eq!(
        reads.sizes.iter().find(|s| s.size == 8192).unwrap().count,
        40
    );
    let s = m.summary();
    assert!(s.starts_with("70% reads, "), "{s}");
    assert!(
        s.contains("8k and 128k peaks") || s.contains("128k and 8k peaks"),
        "{s}"
    );
    assert!(m.table().contains("flush"), "{}", m.table());
}

#[test]
fn sequential_streams_count_even_when_interleaved() {
    let mut ios = Vec::new();
    // Two streams, alternating: every IO after each stream's first continues it.
    for k in 0..50u64 {
        ios.push(io(2 * k * 100, Op::Read, k * 4096, 4096, 50));
        ios.push(io(
            (2 * k + 1) * 100,
            Op::Write,
            (1 << 30) + k * 4096,
            4096,
            50,
        ));
    }
    let m = Model::of(&trace(ios, 10_000));
    assert!(
        (m.sequential.sequential_pct - 98.0).abs() < 1e-9,
        "{:?}",
        m.sequential
    );
    assert_eq!(m.sequential.runs, 2);
    assert_eq!(m.sequential.max_run_ios, 50);
    // Random offsets far apart: nothing sequential, every jump recorded.
    let r: Vec<TraceIo> = (0..50u64)
        .map(|k| {
            io(
                k,
                Op::Read,
                (k * 7919 % 50) * (1 << 20),
                4096,
                NO_COMPLETION,
            )
        })
        .collect();
    let m = Model::of(&trace(r, 100));
    assert_eq!(m.sequential.sequential_pct, 0.0);
    assert!((m.sequential.jumps.iter().map(|j| j.1).sum::<f64>() - 100.0).abs() < 1e-9);
    assert!(m.in_flight.is_none(), "no completions, no in-flight");
}

#[test]
fn footprint_merges_overlapping_ranges() {
    let ios = vec![
        io(0, Op::Read, 0, 8192, 1),
        io(1, Op::Write, 4096, 8192, 1),
        io(2, Op::Read, 1 << 20, 4096, 1),
    ];
    let m = Model::of(&trace(ios, 10));
    assert_eq!(m.footprint.bytes, 12288 + 4096);
    assert_eq!(m.footprint.read_bytes, 8192 + 4096);
    assert_eq!(m.footprint.write_bytes, 8192);
    assert_eq!((m.footprint.start, m.footprint.end), (0, (1 << 20) + 4096));
}

#[test]
fn in_flight_is_time_weighted() {
    // Two IOs always in flight for 1 s: each lasts 1 ms and the next starts as it ends.
    let mut ios = Vec::new();
    for k in 0..1000u64 {
        ios.push(io(k * 1_000_000, Op::Read, 0, 4096, 1_000_000));
        ios.push(io(k * 1_000_000, Op::Read, 8192, 4096, 1_000_000));
    }
    let m = Model::of(&trace(ios, 1_000_000_000));
    let f = m.in_flight.unwrap();
    assert!((f.mean - 2.0).abs() < 0.01, "{f:?}");
    assert_eq!((f.p50, f.p99, f.max), (2, 2, 2));
    assert!((f.per_second[0] - 2.0).abs() < 0.01);
}

#[test]
fn clockwork_arrivals_have_no_dispersion_and_bursts_do() {
    let steady: Vec<TraceIo> = (0..10_000u64)
        .map(|k| io(k * 1_000_000, Op::Read, 0, 4096, 10))
        .collect();
    let m = Model::of(&trace(steady, 10_000_000_000));
    let idc100 = m.arrivals.idc.iter().find(|x| x.0 == 100).unwrap().1;
    assert!(idc100 < 0.05, "{idc100}");
    assert!(m.arrivals.gap_cv < 1e-9);
    assert!(m.summary().contains("steady"), "{}", m.summary());
    // All of every second's IOs in its first 10 ms.
    let bursty: Vec<TraceIo> = (0..10_000u64)
        .map(|k| {
            io(
                (k / 1000) * 1_000_000_000 + (k % 1000) * 10_000,
                Op::Read,
                0,
                4096,
                10,
            )
        })
        .collect();
    let m = Model::of(&trace(bursty, 10_000_000_000));
    let idc100 = m.arrivals.idc.iter().find(|x| x.0 == 100).unwrap().1;
    assert!(idc100 > 100.0, "{idc100}");
    assert!(m.summary().contains("bursty"), "{}", m.summary());
}
