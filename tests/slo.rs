//! Open loops and capacity under a latency target: IOs issued at scheduled times,
//! latency counted from the schedule, a rate the device cannot sustain said so, and the
//! highest rate meeting a target found on a loop device throttled to a known rate.

mod common;

use common::throttle::Throttled;
use common::{Iolab, LoopDev, disk_tmpdir, require_root, require_throttle};

fn trial(j: &serde_json::Value) -> &serde_json::Value {
    &j["run"]["workloads"][0]["trials"][0]
}

fn notes(t: &serde_json::Value) -> Vec<String> {
    t["notes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect()
}

/// The schedule itself, without a device: the null engine completes at once, so every IO
/// the schedule asks for in the window completes in it.
#[test]
fn an_open_loop_issues_exactly_the_scheduled_ios() {
    let d = disk_tmpdir("iolab-slo");
    for arrivals in ["fixed", "poisson"] {
        let j = Iolab::new()
            .args([
                "run",
                d.path().to_str().unwrap(),
                "--engine",
                "null",
                "--pattern",
                "randread",
                "--qd",
                "8",
                "--threads",
                "2",
                "--rate",
                "5000",
                "--arrivals",
                arrivals,
                "--time",
                "1s",
                "--repeat",
                "1",
                "--json",
                "--no-save",
            ])
            .run()
            .success()
            .json();
        let t = trial(&j);
        let ol = &t["open_loop"];
        assert_eq!(ol["asked_iops"], 5000.0, "{arrivals}");
        assert_eq!(ol["arrivals"], arrivals);
        let scheduled = ol["scheduled"].as_u64().unwrap();
        if arrivals == "fixed" {
            assert_eq!(scheduled, 5000, "fixed: exactly rate x window");
        } else {
            // Poisson: 5000 +- 4 standard deviations (sqrt(5000) = 71).
            assert!((4716..=5284).contains(&scheduled), "poisson: {scheduled}");
        }
        let count = t["ops"][0]["count"].as_u64().unwrap();
        assert!(
            count + ol["backlog_at_end"].as_u64().unwrap() >= scheduled - 16,
            "{arrivals}: {count} completed of {scheduled} scheduled"
        );
        assert_eq!(ol["shed"], 0);
        assert!(
            t["ops"][0]["service"].is_string(),
            "service-time histogram kept"
        );
    }
}

/// Against a 2000 IOPS throttle: half of it is sustained at the asked rate exactly; twice it
/// is not, and the run says so instead of reporting the throttle as the asked rate.
#[test]
fn a_throttled_device_sustains_half_its_rate_and_not_twice_it() {
    require_root!();
    require_throttle!();
    let dev = LoopDev::new("slo-rate", 256 << 20);
    let cg = Throttled::new("slo-rate", &dev);
    cg.limit("read_iops", 2000);
    let run = |rate: &str| {
        cg.iolab(&[
            "run",
            dev.path(),
            "--pattern",
            "randread",
            "--bs",
            "4k",
            "--qd",
            "16",
            "--size",
            "128MiB",
            "--time",
            "2s",
            "--repeat",
            "1",
            "--json",
            "--no-save",
            "--rate",
            rate,
        ])
        .success()
        .json()
    };
    let j = run("1000");
    let t = trial(&j);
    let iops = t["ops"][0]["count"].as_f64().unwrap() * 1e9 / t["elapsed_ns"].as_f64().unwrap();
    assert!((iops - 1000.0).abs() <= 10.0, "1000 asked, {iops} done");
    assert!(
        !notes(t).iter().any(|n| n.starts_with("rate not sustained")),
        "{:?}",
        notes(t)
    );
    let j = run("4000");
    let t = trial(&j);
    let iops = t["ops"][0]["count"].as_f64().unwrap() * 1e9 / t["elapsed_ns"].as_f64().unwrap();
    assert!(
        (iops - 2000.0).abs() <= 40.0,
        "the throttle's 2000, got {iops}"
    );
    let n = notes(t);
    assert!(
        n.iter()
            .any(|n| n.starts_with("rate not sustained") && n.contains("asked 4000 IOPS")),
        "{n:?}"
    );
    // Latency from the schedule grows with the backlog: far above the service time.
    let lat = &j["summary"][0]["ops"][0]["latency"];
    assert!(lat["p50_ns"].as_u64().unwrap() > 100_000_000, "{lat}");
}

/// The search's trials from the run's JSON: (longest trial, first start to last end), s.
fn search_span(j: &serde_json::Value) -> (f64, f64) {
    let trials = j["run"]["workloads"][0]["trials"].as_array().unwrap();
    let start = |t: &serde_json::Value| t["started_unix_ms"].as_f64().unwrap() / 1e3;
    let len = |t: &serde_json::Value| t["elapsed_ns"].as_f64().unwrap() / 1e9;
    let longest = trials.iter().map(len).fold(0.0, f64::max);
    let (first, last) = (&trials[0], &trials[trials.len() - 1]);
    (longest, start(last) + len(last) - start(first))
}

/// An SLO search inside the throttle's cgroup: its JSON and its wall time, s.
fn timed_search(cg: &Throttled, dev: &LoopDev, args: &[&str]) -> (serde_json::Value, f64) {
    let mut all = vec![
        "run",
        dev.path(),
        "--pattern",
        "randread",
        "--bs",
        "4k",
        "--json",
        "--no-save",
    ];
    all.extend_from_slice(args);
    let t0 = std::time::Instant::now();
    let out = cg.iolab(&all);
    let wall = t0.elapsed().as_secs_f64();
    (out.success().json(), wall)
}

/// Asserts the search ended inside its budget, but for one trial: its trials from the first
/// one's start to the last one's end, and the whole process (start-up and the device's
/// description included: a few seconds more at most).
fn assert_inside(budget: f64, j: &serde_json::Value, wall: f64) {
    let (longest, span) = search_span(j);
    assert!(
        span <= budget + longest + 1.0,
        "the trials took {span:.1} s against a {budget} s budget (longest trial {longest:.1} s)"
    );
    assert!(
        wall <= budget + longest + 10.0,
        "the search took {wall:.1} s against a {budget} s budget (longest trial {longest:.1} s)"
    );
}

/// The search: a loose target is met up to the throttle (within 5% of it) inside the budget
/// (+ one trial); no rate meets an impossible one, and the run says which rate came closest.
#[test]
fn the_slo_search_finds_the_throttle_and_says_when_nothing_meets() {
    require_root!();
    require_throttle!();
    let dev = LoopDev::new("slo-search", 256 << 20);
    let cg = Throttled::new("slo-search", &dev);
    cg.limit("read_iops", 2000);
    let search = |slo: &str| {
        timed_search(
            &cg,
            &dev,
            &[
                "--qd", "16", "--size", "128MiB", "--time", "1s", "--slo", slo, "--budget", "90s",
            ],
        )
    };
    let (j, wall) = search("p99<=200ms");
    let s = &j["summary"][0]["slo"];
    let cap = s["capacity"].as_f64().unwrap_or(0.0);
    assert!(
        (1900.0..=2100.0).contains(&cap),
        "capacity {cap} against a 2000 IOPS throttle: {s}"
    );
    assert_inside(90.0, &j, wall);
    let trials = j["run"]["workloads"][0]["trials"].as_array().unwrap();
    assert!(trials.len() >= 3, "a probe and rates: {}", trials.len());
    assert!(
        trials[0]["open_loop"].is_null(),
        "the first trial finds the peak"
    );
    let (j, wall) = search("p50<=1ns");
    let s = &j["summary"][0]["slo"];
    assert_eq!(s["verdict"], "none_met", "{s}");
    assert!(s["capacity"].is_null());
    assert_inside(90.0, &j, wall);
}

/// The search as a user starts it, without `--time` (trials ran one pass over the
/// whole device each, a tenth of the peak for many minutes, and the answer was that tenth,
/// "met at the peak"): at QD 16 and QD 32 against a 3000 IOPS throttle, the answer within 5%
/// of the throttle, inside a 45 s budget (+ one trial). The target is loose because on a
/// machine whose CPUs are busy the issuing thread wakes late: measured with two cores under
/// a load of 12-17, the latency from schedule at 300 IOPS had a p99 of 25-270 ms, unthrottled
/// (the issue error alone 11-268 ms; worst at QD 1, which also keeps a QD 1 closed loop below
/// the throttle, at 2170-2740 IOPS: its truth is the CPU's, not the throttle's).
#[test]
fn the_slo_search_without_a_run_time_answers_the_throttle_inside_its_budget() {
    require_root!();
    require_throttle!();
    let dev = LoopDev::new("slo-untimed", 512 << 20);
    let cg = Throttled::new("slo-untimed", &dev);
    cg.limit("read_iops", 3000);
    for qd in ["16", "32"] {
        let (j, wall) = timed_search(
            &cg,
            &dev,
            &["--qd", qd, "--slo", "p99<=500ms", "--budget", "45s"],
        );
        let s = &j["summary"][0]["slo"];
        let cap = s["capacity"].as_f64().unwrap_or(0.0);
        assert!(
            (2850.0..=3150.0).contains(&cap),
            "QD {qd}: capacity {cap} against a 3000 IOPS throttle: {s}"
        );
        let verdict = s["verdict"].as_str().unwrap();
        if verdict == "met_at_peak" {
            assert_eq!(
                s["capacity"], s["peak"],
                "QD {qd}: met at the peak is the peak: {s}"
            );
        } else {
            assert_eq!(verdict, "capacity", "QD {qd}: {s}");
        }
        assert_inside(45.0, &j, wall);
    }
}

#[test]
fn bad_open_loop_and_slo_input_is_one_line_and_exit_2() {
    let d = disk_tmpdir("iolab-slo-bad");
    let dir = d.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--rate", "0"], "rate"),
        (&["--rate", "fast"], "not a rate"),
        (&["--arrivals", "poisson"], "give a rate"),
        (&["--slo", "p99"], "<="),
        (&["--slo", "p99.9999<=1ms"], "at most 99.99"),
        (&["--slo", "p99<=1ms", "--rate", "100"], "chooses the rates"),
        (&["--slo", "p99<=1ms", "--budget", "0s"], "budget"),
        (&["--slo", "p99<=1ms", "--slo-precision", "2"], "precision"),
        (&["--pattern", "smallfile", "--rate", "100"], "block IO"),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", dir, "--time", "1s", "--no-save"];
        args.extend_from_slice(extra);
        let (code, so, se) = Iolab::new().args(args).run().parts();
        assert_eq!(code, 2, "{extra:?}: {se}");
        let err: Vec<&str> = se
            .lines()
            .filter(|l| l.starts_with("iolab: error"))
            .collect();
        assert_eq!(err.len(), 1, "{extra:?}: {se}");
        assert!(err[0].contains(needle), "{extra:?}: {se}");
        assert!(so.is_empty(), "{extra:?}");
    }
}

/// An open-loop run is stored with its schedule record and service times, and reads back.
#[test]
fn open_loop_trials_are_stored_and_read_back() {
    let d = disk_tmpdir("iolab-slo-store");
    let db = d.path().join("s.db");
    Iolab::new()
        .db(&db)
        .args([
            "run",
            d.path().to_str().unwrap(),
            "--engine",
            "null",
            "--rate",
            "1000",
            "--time",
            "500ms",
            "--repeat",
            "1",
            "--label",
            "ol",
        ])
        .run()
        .success();
    let j = Iolab::new()
        .db(&db)
        .args(["export", "ol"])
        .run()
        .success()
        .json();
    let t = &j["runs"][0]["workloads"][0]["trials"][0];
    assert_eq!(t["open_loop"]["asked_iops"], 1000.0, "{t}");
    assert!(t["ops"][0]["service"].is_string());
}

/// The HTML report draws a stored SLO search's latency-vs-load curve, the capacity
/// marked (the null engine: no device needed).
#[test]
fn the_html_report_draws_the_slo_curve() {
    let d = disk_tmpdir("iolab-slo-html");
    let db = d.path().join("db");
    // One SLO search on the null engine, stored; `extra` adds flags.
    let search = |extra: &[&str]| {
        Iolab::new()
            .db(&db)
            .args([
                "run",
                d.path().to_str().unwrap(),
                "--engine",
                "null",
                "--pattern",
                "randread",
                "--qd",
                "4",
                "--time",
                "200ms",
                "--slo",
                "p99<=1s",
                "--slo-precision",
                "0.5",
                "--budget",
                "30s",
            ])
            .args(extra)
            .run()
    };
    let out = search(&[]);
    out.success();
    assert!(out.stdout.contains("rate"), "{}", out.stdout);
    let html = d.path().join("r.html");
    Iolab::new()
        .db(&db)
        .args(["report", "last", "-o", html.to_str().unwrap()])
        .run()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    let caption = "latency (from schedule) against offered load, p99&lt;=1s; capacity marked";
    assert!(page.contains(caption), "no SLO chart in the report");
    assert!(page.contains("offered IOPS (log)"), "no load axis");

    // `compare` shows the capacity of two searches with its ratio.
    search(&["--label", "second"]).success();
    let cmp = Iolab::new()
        .db(&db)
        .args(["compare", "last~1", "last", "--format", "json"])
        .run();
    cmp.success();
    let v: serde_json::Value = serde_json::from_str(&cmp.stdout).unwrap();
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "slo.capacity_iops")
        .unwrap_or_else(|| panic!("no capacity row: {v:#}"));
    assert_eq!(
        row["label"], "slo capacity at the latency target (IOPS)",
        "{row:#}"
    );
    // A cell where the search found a capacity (the null engine's tail is erratic: a search
    // may meet nothing); where both did, the second carries its ratio to the first.
    let cells = row["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{row:#}");
    assert!(cells.iter().any(|c| !c.is_null()), "{row:#}");
    for c in cells.iter().filter(|c| !c.is_null()) {
        assert!(c["summary"]["median"].as_f64().unwrap() > 0.0, "{row:#}");
    }
    if cells.iter().all(|c| !c.is_null()) {
        assert!(
            cells[1]["ratio"]["value"].as_f64().unwrap() > 0.0,
            "{row:#}"
        );
    }
    let text = Iolab::new()
        .db(&db)
        .args(["compare", "last~1", "last"])
        .run();
    text.success();
    assert!(
        text.stdout.contains("capacity at the latency target"),
        "{}",
        text.stdout
    );
}
