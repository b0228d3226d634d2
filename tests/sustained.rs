//! An open loop is judged by its latency from the schedule and by whether it sustained the
//! asked rate (achieved / asked), reads and writes apart — not by the IOPS its schedule fixes.
//! On a loop device throttled by a cgroup (v1 blkio or v2 io.max) below the asked read rate, a replay and a
//! `--rate` run must read as not sustained in every output (`iolab compare` text, Markdown,
//! JSON and CSV, the HTML report, `run --json`), and the same runs unthrottled as sustained.

mod common;

use std::path::Path;

use common::throttle::Throttled;
use common::{Iolab, LoopDev, disk_tmpdir, require_root, require_throttle, test_db};
use iolab::trace::{Op, TraceHeader, TraceIo, TraceWriter};

/// A 3 s trace at 2000 IOPS, Poisson: 70% 4k reads, 30% 4k writes at random offsets below
/// 64 MiB, each recorded as taking 100 us. Replayed with its reads throttled to 500 a second
/// it takes about 8 s: it issues every IO, late.
fn trace(path: &Path) {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut w = TraceWriter::create(path).unwrap();
    w.process_index("db");
    let mut t = 0.0f64;
    let end = 3e9;
    loop {
        let u = ((next() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        t += -u.ln() * 1e9 / 2000.0;
        if t >= end {
            break;
        }
        let op = if next() % 10 < 7 { Op::Read } else { Op::Write };
        w.push(&TraceIo {
            issue_ns: t as u64,
            offset: next() % 16384 * 4096,
            latency_ns: 100_000,
            len: 4096,
            op,
            flags: 0,
            process: 0,
        })
        .unwrap();
    }
    w.finish(TraceHeader {
        source: "test".into(),
        duration_ns: end as u64,
        ..Default::default()
    })
    .unwrap();
}

/// The stored runs of one open loop, `fast` (unthrottled) and `slow` (reads throttled), read
/// back by `iolab compare` in `format`.
fn compare(fast: &str, slow: &str, format: &str) -> String {
    let o = Iolab::new()
        .args(["compare", fast, slow, "--format", format])
        .run();
    o.success();
    o.stdout.clone()
}

/// The sustained shares of run column `i` in a JSON comparison's one open loop.
fn shares(c: &serde_json::Value, i: usize) -> (Option<f64>, Option<f64>, bool) {
    let s = &c["open_loops"][0]["sustained"][i];
    (
        s["read"].as_f64(),
        s["write"].as_f64(),
        s["kept_up"].as_bool().unwrap(),
    )
}

/// Checks every output of the comparison of `fast` and `slow`, whose workload `name` reads
/// (and, when `writes`, writes) on a schedule: judged by latency from the schedule, `fast`
/// sustained, `slow` short of its asked reads and marked so.
fn judged_by_schedule(fast: &str, slow: &str, name: &str, writes: bool) {
    let c = common::json(&compare(fast, slow, "json"));
    let ol = &c["open_loops"][0];
    assert_eq!(ol["workload"], name, "{c:#}");
    assert_eq!(ol["kind"], "schedule_latency", "{c:#}");
    let keys: Vec<&str> = ol["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    let mut want = vec!["read.sched_p99_us", "read.sched_p99_9_us", "read.sustained"];
    if writes {
        want.extend([
            "write.sched_p99_us",
            "write.sched_p99_9_us",
            "write.sustained",
        ]);
    }
    assert_eq!(keys, want, "{c:#}");
    // The headline rows lead the workload's rows; the p99 from the schedule is lower-better.
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows[0]["metric"], "read.sched_p99_us");
    assert_eq!(rows[0]["higher_is_better"], false);
    let (r, w, ok) = shares(&c, 0);
    assert!(ok, "{fast} kept up: {c:#}");
    assert!(r.unwrap() >= 0.95 && r.unwrap() <= 1.05, "{r:?}");
    if writes {
        assert!(w.unwrap() >= 0.95 && w.unwrap() <= 1.05, "{w:?}");
    } else {
        assert!(w.is_none());
    }
    let (r, _, ok) = shares(&c, 1);
    assert!(!ok, "{slow} did not keep up: {c:#}");
    // Reads throttled to 500 a second against 1400 or 2000 asked.
    assert!(r.unwrap() < 0.5, "{slow} reads {r:?}");
    // Latency from the schedule grows with the backlog: the throttled run's p99 is higher,
    // and its ratio reads so (above 1: slower).
    let p99 = &rows[0]["cells"][1];
    assert!(p99["ratio"]["value"].as_f64().unwrap() > 2.0, "{p99:#}");
    let notes: Vec<&str> = c["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with(&format!("rate not sustained: {slow} / {name}"))),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.contains(&format!("{fast} / "))),
        "{notes:?}"
    );

    let text = compare(fast, slow, "text");
    let row = text
        .lines()
        .find(|l| l.contains("read sustained (achieved/asked IOPS)"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("NOT SUSTAINED"), "{row}");
    assert_eq!(
        row.matches("NOT SUSTAINED").count(),
        1,
        "only {slow}: {row}"
    );
    assert!(
        text.contains("read p99.9 latency from schedule (µs)"),
        "{text}"
    );
    assert!(text.contains("open loop (") && text.contains("judged by latency from schedule"));
    let md = compare(fast, slow, "md");
    assert!(
        md.lines()
            .any(|l| l.contains("read sustained") && l.contains("NOT SUSTAINED")),
        "{md}"
    );
    let csv = compare(fast, slow, "csv");
    let cell = |run: &str| -> f64 {
        let l = csv
            .lines()
            .find(|l| {
                l.starts_with(&format!("{name},read.sustained,")) && l.contains(&format!(",{run},"))
            })
            .unwrap_or_else(|| panic!("{run} in {csv}"));
        l.split(',').nth(8).unwrap().parse().unwrap()
    };
    assert!(cell(fast) >= 0.95 && cell(slow) < 0.5, "{csv}");
}

/// The HTML report of the two runs marks the throttled one beside its headline and says why.
fn reported(fast: &str, slow: &str, dir: &Path) {
    let html = dir.join(format!("{slow}.html"));
    Iolab::new()
        .args(["report", fast, slow, "-o"])
        .arg(&html)
        .run()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("p99 latency from schedule"), "headline named");
    assert!(
        page.contains("<strong class=\"bad\" title=\"achieved/asked IOPS: the rate was not sustained\">sustained 0."),
        "the throttled run is marked"
    );
    assert!(page.contains("rate not sustained: "), "and noted");
}

/// `iolab run` of `args` on `dev` stored as `label`, one trial; throttled when `cg` is given.
fn run(cg: Option<&Throttled>, dev: &LoopDev, label: &str, args: &[&str]) -> serde_json::Value {
    let db = test_db();
    let mut all = vec![
        "run",
        dev.path(),
        "--label",
        label,
        "--repeat",
        "1",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = match cg {
        Some(cg) => cg.iolab(&all),
        None => Iolab::new().args(&all).run(),
    };
    o.success().json()
}

/// A replay and a `--rate` run, each unthrottled and with its reads throttled to 500 IOPS
/// below the asked rate: every output judges them by latency from the schedule and marks the
/// throttled ones not sustained (reads and writes apart), the unthrottled ones sustained.
#[test]
fn a_rate_the_device_cannot_keep_is_reported_not_sustained() {
    require_root!();
    require_throttle!();
    let dir = disk_tmpdir("iolab-sustained");
    let t = dir.path().join("db.trace");
    trace(&t);
    let dev = LoopDev::new("sustained", 128 << 20);
    let cg = Throttled::new("sustained", &dev);
    cg.limit("read_iops", 500);
    let tag = std::process::id();
    let (fast, slow) = (format!("replay-fast-{tag}"), format!("replay-slow-{tag}"));
    let replay = ["--replay", t.to_str().unwrap(), "--destroy", dev.path()];
    let j = run(None, &dev, &fast, &replay);
    let s = &j["summary"][0]["open_loop"];
    assert!(s["read_sustained"].as_f64().unwrap() >= 0.95, "{s:#}");
    assert!(s["write_sustained"].as_f64().unwrap() >= 0.95, "{s:#}");
    let j = run(Some(&cg), &dev, &slow, &replay);
    let s = &j["summary"][0]["open_loop"];
    assert!(s["read_sustained"].as_f64().unwrap() < 0.5, "{s:#}");
    // It issued every IO, late: the replay took longer than the recording, and says so.
    assert_eq!(s["sustained"], false, "{s:#}");
    let name = j["summary"][0]["workload"].as_str().unwrap().to_string();
    judged_by_schedule(&fast, &slow, &name, true);
    reported(&fast, &slow, dir.path());

    let (fast, slow) = (format!("rate-fast-{tag}"), format!("rate-slow-{tag}"));
    let rate = [
        "--pattern",
        "randread",
        "--bs",
        "4k",
        "--qd",
        "16",
        "--size",
        "64MiB",
        "--rate",
        "2000",
    ];
    run(None, &dev, &fast, &rate);
    let j = run(Some(&cg), &dev, &slow, &rate);
    let name = j["summary"][0]["workload"].as_str().unwrap().to_string();
    judged_by_schedule(&fast, &slow, &name, false);
}
