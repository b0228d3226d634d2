//! Open loops and capacity under a latency target (issue 30): IOs issued at scheduled times,
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

/// The search: a loose target is met up to the throttle (within 5% below it); no rate meets an
/// impossible one, and the run says which rate came closest.
#[test]
fn the_slo_search_finds_the_throttle_and_says_when_nothing_meets() {
    require_root!();
    require_throttle!();
    let dev = LoopDev::new("slo-search", 256 << 20);
    let cg = Throttled::new("slo-search", &dev);
    cg.limit("read_iops", 2000);
    let search = |slo: &str| {
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
            "1s",
            "--json",
            "--no-save",
            "--slo",
            slo,
            "--budget",
            "90s",
        ])
        .success()
        .json()
    };
    let j = search("p99<=200ms");
    let s = &j["summary"][0]["slo"];
    let cap = s["capacity"].as_f64().unwrap_or(0.0);
    assert!(
        (1900.0..=2000.0 * 1.001).contains(&cap),
        "capacity {cap} against a 2000 IOPS throttle: {s}"
    );
    let trials = j["run"]["workloads"][0]["trials"].as_array().unwrap();
    assert!(trials.len() >= 3, "a probe and rates: {}", trials.len());
    assert!(
        trials[0]["open_loop"].is_null(),
        "the first trial finds the peak"
    );
    let j = search("p50<=1ns");
    let s = &j["summary"][0]["slo"];
    assert_eq!(s["verdict"], "none_met", "{s}");
    assert!(s["capacity"].is_null());
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

/// Issue 30: the HTML report draws a stored SLO search's latency-vs-load curve, the capacity
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

    // `compare` shows the capacity of two searches with its ratio (issue 30).
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
