//! Steady state by SNIA PTS's rules and preconditioning, on devices whose truth is
//! known: a RAM-backed loop held by its throttle (steady from the start), one whose throttle is tightened
//! from outside mid-run (a cliff that stays: steady only after it, at the new throttle), one
//! whose throttle swings by half every few seconds (never steady), and a precondition that
//! writes the device twice over, refused on a device holding a filesystem without --destroy.

mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::throttle::Throttled;
use common::{Iolab, LoopDev, require_root, require_throttle};

/// The steady-state rounds of a 4k random read, 1 s each, at most `max` rounds.
fn steady_args<'a>(dev: &'a LoopDev, max: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        dev.path(),
        "--pattern",
        "randread",
        "--bs",
        "4k",
        "--qd",
        "8",
        "--size",
        "128MiB",
        "--steady-state",
        "--round",
        "1s",
        "--max-rounds",
        max,
        "--json",
        "--no-save",
    ]
}

/// The workload's summary: its `steady` judgement and its rounds' IOPS.
fn steady(j: &serde_json::Value) -> (&serde_json::Value, Vec<f64>) {
    let s = &j["summary"][0]["steady"];
    let rounds = s["rounds"]
        .as_array()
        .unwrap_or_else(|| panic!("no steady judgement: {j:#}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    (s, rounds)
}

/// One test at a time: each measures rates, which a neighbour's IO would disturb.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Nothing changes on a RAM-backed loop held at 3000 IOPS by its throttle (far below what it
/// could do, so the machine's own noise cannot move the figure): PTS's first window (rounds
/// 1-5) is steady, and the run stops there. (Unthrottled, a RAM loop's rate is the CPU's,
/// which on a busy 2-core machine swings by more than PTS's 20%: not steady, rightly.)
#[test]
fn a_steady_device_is_steady_in_the_minimum_five_rounds() {
    require_root!();
    require_throttle!();
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dev = LoopDev::new("steady-ram", 256 << 20);
    let cg = Throttled::new("steady-ram", &dev);
    cg.limit("read_iops", 3000);
    // Saved this time: `iolab show` judges the stored rounds again.
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("iolab.db");
    let mut args = steady_args(&dev, "10");
    args.retain(|a| *a != "--no-save");
    let j = cg.command().db(&db).args(args).run().success().json();
    let shown = Iolab::new().db(&db).args(["show", "last"]).run();
    shown
        .success()
        .stdout_has("steady at round 5 (rounds 1-5: mean ")
        .stdout_has("(the figures below are that window's rounds)");
    let (s, rounds) = steady(&j);
    eprintln!("rounds (IOPS): {rounds:.0?}; {}", s["window"]);
    assert_eq!(s["steady_at"], 5, "{s:#}");
    assert_eq!(rounds.len(), 5, "{s:#}");
    assert_eq!(
        j["run"]["workloads"][0]["trials"].as_array().map(Vec::len),
        Some(5)
    );
    let w = &s["window"];
    assert!(w["range"].as_f64().unwrap() <= 0.20, "{s:#}");
    assert!(w["excursion"].as_f64().unwrap() <= 0.10, "{s:#}");
}

/// Runs the rounds inside `cg` while `change` alters its throttle from outside, and returns
/// the run's JSON.
fn run_while(
    cg: &Throttled,
    dev: &LoopDev,
    max: &str,
    change: impl FnOnce(&AtomicBool) + Send,
) -> serde_json::Value {
    let done = Arc::new(AtomicBool::new(false));
    let mut cmd = cg.command().no_db().args(steady_args(dev, max)).command();
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn iolab");
    let out = std::thread::scope(|sc| {
        let flag = done.clone();
        sc.spawn(move || change(&flag));
        let out = child.wait_with_output().expect("wait for iolab");
        done.store(true, Ordering::Relaxed);
        out
    });
    assert!(
        out.status.success(),
        "iolab failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// A device that falls from 4000 to 1000 IOPS after ~3.5 s and stays there (as an SSD whose
/// spare area or cache is used up): the rounds before the fall never enter the steady
/// window, which sits wholly after it at the new throttle (within 5%), and the run's figure
/// is that window's, not a median that still holds the fast start.
#[test]
fn a_cliff_that_stays_is_left_out_and_the_steady_figure_is_the_throttle_after_it() {
    require_root!();
    require_throttle!();
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dev = LoopDev::new("steady-cliff", 256 << 20);
    let cg = Throttled::new("steady-cliff", &dev);
    cg.limit("read_iops", 4000);
    let j = run_while(&cg, &dev, "16", |done| {
        std::thread::sleep(Duration::from_millis(3500));
        if !done.load(Ordering::Relaxed) {
            cg.limit("read_iops", 1000);
        }
    });
    let (s, rounds) = steady(&j);
    eprintln!("rounds (IOPS): {rounds:.0?}; {}", s["window"]);
    let fell = rounds
        .iter()
        .position(|&v| v < 1100.0)
        .unwrap_or_else(|| panic!("the throttle never fell: {rounds:?}"));
    assert!(
        rounds[0] > 3500.0,
        "the first round ran at the first throttle: {rounds:?}"
    );
    let at = s["steady_at"]
        .as_u64()
        .unwrap_or_else(|| panic!("never steady after the fall: {s:#}"));
    let w = &s["window"];
    assert!(
        w["first_round"].as_u64().unwrap() > fell as u64,
        "the window starts after the round that fell ({fell} from 0): {s:#}"
    );
    assert_eq!(at, w["last_round"].as_u64().unwrap());
    let mean = w["mean"].as_f64().unwrap();
    assert!((mean / 1000.0 - 1.0).abs() <= 0.05, "{mean} vs 1000: {s:#}");
    // The workload's figures are the window's rounds alone: with rounds like 4000, 4000,
    // 3500, then five at 1000, a median over every round is 1000 too, so it is the rounds
    // the summary counts that tell a window from all of them.
    let per_trial: Vec<f64> = j["summary"][0]["ops"][0]["ops_per_sec"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(
        per_trial.len(),
        5,
        "the figures are the window's five rounds, not all {}: {per_trial:?}",
        rounds.len()
    );
    assert!(
        per_trial.iter().all(|v| (v / 1000.0 - 1.0).abs() <= 0.05),
        "every round of the figure is at the throttle after the fall: {per_trial:?}"
    );
}

/// A device whose throttle swings between 3000 and 1500 IOPS every 2.5 s: every window of five
/// 1 s rounds holds both levels (a range of ~67% of the mean), so the run is never called
/// steady and says so after its last round.
#[test]
fn a_device_swinging_by_half_is_never_called_steady() {
    require_root!();
    require_throttle!();
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dev = LoopDev::new("steady-swing", 256 << 20);
    let cg = Throttled::new("steady-swing", &dev);
    cg.limit("read_iops", 3000);
    let j = run_while(&cg, &dev, "8", |done| {
        let mut high = true;
        while !done.load(Ordering::Relaxed) {
            for _ in 0..25 {
                std::thread::sleep(Duration::from_millis(100));
                if done.load(Ordering::Relaxed) {
                    return;
                }
            }
            high = !high;
            cg.limit("read_iops", if high { 3000 } else { 1500 });
        }
    });
    let (s, rounds) = steady(&j);
    eprintln!("rounds (IOPS): {rounds:.0?}; {}", s["window"]);
    assert_eq!(rounds.len(), 8, "{s:#}");
    assert!(s["steady_at"].is_null(), "{s:#}");
    assert!(s["window"]["range"].as_f64().unwrap() > 0.20, "{s:#}");
    let hi = rounds.iter().copied().fold(0.0, f64::max);
    let lo = rounds.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(hi > 1.5 * lo, "the swing reached the rounds: {rounds:?}");
}

/// `--precondition` writes the whole device twice (128 KiB sequential by default, 4 KiB
/// random when asked) before the workloads, stored as its own workload; a read-only suite
/// with it writes, so a device needs --destroy like any writer.
#[test]
fn a_precondition_writes_the_device_twice_and_is_refused_without_destroy() {
    require_root!();
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dev = LoopDev::new("steady-pre", 64 << 20);
    let args = |kind: &'static str| {
        vec![
            "run",
            dev.path(),
            "--precondition",
            kind,
            "--pattern",
            "randread",
            "--time",
            "1s",
            "--repeat",
            "1",
            "--json",
            "--no-save",
        ]
    };
    let out = Iolab::new().no_db().args(args("seq")).run();
    assert_eq!(out.code, 2, "a read-only suite that preconditions writes");
    out.stderr_has("pass --destroy");
    for (kind, bs) in [("seq", 128 << 10), ("random", 4 << 10)] {
        let j = Iolab::new()
            .no_db()
            .args(args(kind))
            .args(["--destroy", dev.path()])
            .run()
            .success()
            .json();
        let ws = j["run"]["workloads"].as_array().unwrap();
        assert_eq!(ws.len(), 2, "{j:#}");
        assert_eq!(ws[0]["workload"]["name"], "precondition");
        assert!(
            ws[0]["workload"]
                .to_string()
                .contains(&format!("\"block_size\":{bs}")),
            "{kind}: {:#}",
            ws[0]["workload"]
        );
        let t = &ws[0]["trials"].as_array().unwrap()[0];
        let written: u64 = t["ops"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["op"] == "write")
            .map(|o| o["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(written, 2 * (64 << 20), "{kind}: {t:#}");
        assert_eq!(ws[1]["trials"].as_array().map(Vec::len), Some(1));
    }
}
