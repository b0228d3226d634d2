//! Latency against the kernel's: what iolab reports for an IO must contain what the block
//! layer saw of it (issue to complete, the `block_rq_issue` / `block_rq_complete`
//! tracepoints, recorded by `iolab capture` on the same device during the run), so its
//! percentiles are never below the kernel's, and above them by no more than the submission
//! and completion path: p50 + 25 us and p99 + 50 us at QD 1 (the bar in PRODUCT.md, the
//! figures in docs/accuracy.md). A tool that slept through its completions, or timed its IOs
//! from the wrong place, would be caught here; a faster-looking figure than the kernel's would
//! mean the clock reads are misplaced. On a busy machine a worker that lost its CPU inflates
//! the tail: then the run must say so (its CPU-wait note names the percentile from which the
//! figures may include that wait), and only a bound above that percentile is excused.
//!
//! Its own test binary, so no other test of this suite loads the two CPUs while it measures.

mod common;

use common::capture::{start_capture, stop_capture};
use common::{Iolab, LoopDev, disk_tmpdir, require_root, require_tracefs};
use iolab::trace::Op;

/// The `q` quantile of sorted nanoseconds (nearest rank).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// One QD 1 run of `pattern` on a loop device under capture: (iolab p50, p99), (kernel p50,
/// p99) in ns, and the run's notes.
fn measure(pattern: &str) -> ((u64, u64), (u64, u64), Vec<String>) {
    let dir = disk_tmpdir("iolab-lat-truth");
    let ld = LoopDev::new(&format!("lat-{pattern}"), 256 << 20);
    let out = dir.path().join("lat.trace");
    let child = start_capture(&[ld.path(), "--time", "120s", "-o", out.to_str().unwrap()]);
    let mut args = vec![
        "run",
        ld.path(),
        "--pattern",
        pattern,
        "--bs",
        "4k",
        "--qd",
        "1",
        "--time",
        "3s",
        "--repeat",
        "1",
        "--json",
        "--no-save",
    ];
    if pattern.contains("write") {
        args.extend(["--destroy", ld.path()]);
    }
    let run = Iolab::new().no_db().args(&args).run();
    run.success();
    let trace = stop_capture(child, &out);
    let j = run.json();
    let op = &j["run"]["workloads"][0]["trials"][0]["ops"][0];
    let lat = &j["summary"][0]["ops"][0]["latency"];
    let ours = (
        lat["p50_ns"].as_u64().expect("p50"),
        lat["p99_ns"].as_u64().expect("p99"),
    );
    let want = if pattern.contains("write") {
        Op::Write
    } else {
        Op::Read
    };
    let mut kernel: Vec<u64> = trace
        .ios
        .iter()
        .filter(|io| io.op == want && io.len == 4096)
        .filter_map(|io| io.complete_ns().map(|_| io.latency_ns))
        .collect();
    kernel.sort_unstable();
    let counted = op["count"].as_u64().expect("count");
    assert!(
        kernel.len() as u64 >= counted,
        "the capture saw {} {pattern} IOs, iolab counted {counted}: it missed some",
        kernel.len()
    );
    let notes = j["run"]["notes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    (
        ours,
        (quantile(&kernel, 0.50), quantile(&kernel, 0.99)),
        notes,
    )
}

/// The percentile from which the run's CPU-wait note says latencies may include a worker's
/// wait for a CPU ("... latencies from p77.1 up may include that wait ..."), if it has one.
fn cpu_wait_from(notes: &[String]) -> Option<f64> {
    notes.iter().find_map(|n| {
        let rest = n.split("latencies from p").nth(1)?;
        rest.split(' ').next()?.parse().ok()
    })
}

/// One measurement at a time: the two tests would load each other's CPUs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The bounds one measurement is held to: the message of the first it misses, if any.
fn misses(pattern: &str, m: &((u64, u64), (u64, u64), Vec<String>)) -> Option<String> {
    let ((p50, p99), (k50, k99), notes) = m;
    // Above the kernel's by at most the submission and completion path — unless the run
    // itself says a worker waited for a CPU and from which percentile up that wait may be in
    // the figures: then the tail is the wait's (a busy machine), and the note is the answer.
    let excused = |q: f64| cpu_wait_from(notes).is_some_and(|from| from <= q);
    if *p50 > k50 + 25_000 && !excused(50.0) {
        return Some(format!(
            "{pattern}: iolab's p50 {p50} ns is more than 25 us above the kernel's {k50} and no note says a worker waited for a CPU (notes: {notes:?})"
        ));
    }
    if *p99 > k99 + 50_000 && !excused(99.0) {
        return Some(format!(
            "{pattern}: iolab's p99 {p99} ns is more than 50 us above the kernel's {k99} and no note says a worker waited for a CPU (notes: {notes:?})"
        ));
    }
    None
}

fn check(pattern: &str) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A bound missed once is measured again: the path's length is systematic and shows in
    // both, a stall the run could not see (the hypervisor taking the vCPU: the scheduler's
    // counters do not show it) rarely hits two runs. Never below the kernel holds for both.
    let mut missed = None;
    for attempt in 1..=2 {
        let m = measure(pattern);
        let ((p50, p99), (k50, k99), notes) = &m;
        eprintln!(
            "{pattern} QD 1 (run {attempt}): iolab p50 {:.1} us p99 {:.1} us; kernel p50 {:.1} us p99 {:.1} us; notes {notes:?}",
            *p50 as f64 / 1e3,
            *p99 as f64 / 1e3,
            *k50 as f64 / 1e3,
            *k99 as f64 / 1e3
        );
        // The HDR histogram keeps 3 significant digits: 0.1% of slack below.
        assert!(
            *p50 as f64 >= *k50 as f64 * 0.999 && *p99 as f64 >= *k99 as f64 * 0.999,
            "{pattern}: iolab below the kernel (p50 {p50} vs {k50}, p99 {p99} vs {k99} ns): its clock reads are inside the IO"
        );
        missed = misses(pattern, &m);
        if missed.is_none() {
            return;
        }
    }
    panic!("in both runs; the second: {}", missed.unwrap_or_default());
}

#[test]
fn qd1_reads_are_timed_within_the_path_above_the_block_layer_or_a_cpu_wait_is_named() {
    require_root!();
    require_tracefs!();
    check("randread");
}

#[test]
fn qd1_writes_are_timed_within_the_path_above_the_block_layer_or_a_cpu_wait_is_named() {
    require_root!();
    require_tracefs!();
    check("randwrite");
}
