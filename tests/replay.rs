//! `iolab run --replay` (issue 29): a trace's IOs issued at their recorded times on a real loop
//! device, the replay's own fidelity figures, an as-fast-as-possible replay issuing exactly the
//! recorded IOs (checked by capturing the replay), offsets mapped onto a smaller target only
//! when asked, and the model run in place of the trace.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Iolab, LoopDev, Out, disk_tmpdir, require_root, require_tracefs};
use iolab::sample::LatencyHistogram;
use iolab::trace::{Op, TraceHeader, TraceIo, TraceWriter, read_trace};

/// Writes a trace of `secs` seconds: Poisson arrivals at `iops`, 70% 8k reads and 30% 8k
/// writes at random 8k-aligned offsets below `span`, a flush every 100 IOs, each IO taking
/// 200 us, and a discard (which a replay skips).
fn synthetic_trace(path: &Path, secs: u64, iops: f64, span: u64) -> Vec<TraceIo> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ios = Vec::new();
    let mut t = 0.0f64;
    let end = secs as f64 * 1e9;
    let mut k = 0u64;
    loop {
        let u = ((next() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        t += -u.ln() * 1e9 / iops;
        if t >= end {
            break;
        }
        k += 1;
        let op = if k % 100 == 0 {
            Op::Flush
        } else if next() % 10 < 7 {
            Op::Read
        } else {
            Op::Write
        };
        let blocks = span / 8192;
        ios.push(TraceIo {
            issue_ns: t as u64,
            offset: if op == Op::Flush {
                0
            } else {
                next() % blocks * 8192
            },
            latency_ns: 200_000,
            len: if op == Op::Flush { 0 } else { 8192 },
            op,
            flags: 0,
            process: 0,
        });
    }
    ios.push(TraceIo {
        issue_ns: end as u64 - 1000,
        offset: 0,
        latency_ns: 1000,
        len: 1 << 20,
        op: Op::Discard,
        flags: 0,
        process: 0,
    });
    let mut w = TraceWriter::create(path).unwrap();
    w.process_index("db");
    for io in &ios {
        w.push(io).unwrap();
    }
    w.finish(TraceHeader {
        source: "test".into(),
        duration_ns: end as u64,
        ..Default::default()
    })
    .unwrap();
    ios
}

fn trial(j: &serde_json::Value) -> &serde_json::Value {
    &j["run"]["workloads"][0]["trials"][0]
}

fn replay_note(t: &serde_json::Value) -> String {
    t["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("replay"))
        .unwrap_or_default()
        .to_string()
}

/// A 10 s trace at 2000 IOPS replayed on a loop device takes 10 s within 1%, every IO goes
/// out (flushes too, the discard skipped and counted), the issue-time error's median is under
/// 0.5 ms even on this shared machine (the issue's p99 under 100 us is for a quiet one:
/// bench/replay.sh), and the replay's own note and JSON say all that. Issue 29.
#[test]
fn a_replay_keeps_the_recorded_schedule_and_reports_its_fidelity() {
    require_root!();
    let dir = disk_tmpdir("iolab-replay");
    let ld = LoopDev::new("replay-fidelity", 128 << 20);
    let trace = dir.path().join("t.trace");
    let ios = synthetic_trace(&trace, 10, 2000.0, 64 << 20);
    let planned = ios.iter().filter(|i| i.op != Op::Discard).count() as u64;
    let o = Iolab::new()
        .args([
            "run",
            ld.path(),
            "--destroy",
            ld.path(),
            "--replay",
            trace.to_str().unwrap(),
            "--repeat",
            "1",
            "--no-save",
            "--json",
        ])
        .run();
    o.success();
    let j = o.json();
    let t = trial(&j);
    let ol = &t["open_loop"];
    let rp = &ol["replay"];
    assert_eq!(rp["planned"], planned, "{rp}");
    assert_eq!(rp["skipped"], 1, "the discard");
    assert_eq!(ol["issued"], planned, "every IO went out");
    assert_eq!(rp["map"], "exact");
    let (recorded, replayed) = (
        rp["recorded_ns"].as_f64().unwrap(),
        rp["replayed_ns"].as_f64().unwrap(),
    );
    assert!(
        (replayed / recorded - 1.0).abs() < 0.01,
        "took {replayed} ns against the recorded {recorded}"
    );
    let h: LatencyHistogram = serde_json::from_value(ol["issue_error"].clone()).unwrap();
    assert_eq!(h.len(), planned);
    // The median, not the tail: on this shared 2-core machine other builds delay wake-ups by
    // milliseconds (the p99 is bench/replay.sh's, on a quiet machine).
    assert!(
        h.percentile(50.0) < 500_000,
        "issue-time error p50 {}",
        h.percentile(50.0)
    );
    let count = |op: &str| {
        t["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["op"] == op)
            .map_or(0, |x| x["count"].as_u64().unwrap())
    };
    let want = |op: Op| ios.iter().filter(|i| i.op == op).count() as u64;
    assert_eq!(count("read"), want(Op::Read));
    assert_eq!(count("write"), want(Op::Write));
    assert_eq!(count("sync"), want(Op::Flush));
    let note = replay_note(t);
    assert!(
        note.contains("issue-time error p50") && note.contains("against the recorded"),
        "{note}"
    );
    // Twice as fast: half the time.
    let j = Iolab::new()
        .args([
            "run",
            ld.path(),
            "--destroy",
            ld.path(),
            "--replay",
            trace.to_str().unwrap(),
            "--speed",
            "2",
            "--repeat",
            "1",
            "--no-save",
            "--json",
        ])
        .run()
        .success()
        .json();
    let rp = &trial(&j)["open_loop"]["replay"];
    let replayed = rp["replayed_ns"].as_f64().unwrap();
    assert!(
        (replayed / (recorded / 2.0) - 1.0).abs() < 0.02,
        "at speed 2: {replayed} ns"
    );
}

/// Waits (10 s at most) until capture instance `inst` holds no event its reader has not taken
/// (each CPU's `entries` in `per_cpu/cpuN/stats`: events in the buffer, unread): everything
/// traced so far has then reached the capture, and stopping it loses none of it.
fn wait_drained(inst: &Path) {
    let t0 = Instant::now();
    loop {
        let cpus: Vec<PathBuf> = std::fs::read_dir(inst.join("per_cpu"))
            .expect("the instance's per_cpu directory")
            .flatten()
            .map(|e| e.path().join("stats"))
            .collect();
        let unread: u64 = cpus
            .iter()
            .map(|p| {
                let text = std::fs::read_to_string(p).expect("a CPU's buffer stats");
                text.lines()
                    .find_map(|l| l.strip_prefix("entries:"))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .unwrap_or_else(|| panic!("no entries in {}: {text}", p.display()))
            })
            .sum();
        if !cpus.is_empty() && unread == 0 {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the capture left {unread} events unread on {} CPUs",
            cpus.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An as-fast-as-possible replay issues exactly the recorded IOs — count, offsets, sizes —
/// checked by capturing the replay itself and comparing the two traces; and it takes far less
/// than the recording. Issue 29.
#[test]
fn an_as_fast_as_possible_replay_issues_exactly_the_recorded_ios() {
    require_root!();
    require_tracefs!();
    let dir = disk_tmpdir("iolab-replay");
    let ld = LoopDev::new("replay-afap", 128 << 20);
    let trace = dir.path().join("t.trace");
    let ios = synthetic_trace(&trace, 5, 2000.0, 64 << 20);
    let cap = dir.path().join("replayed.trace");
    let mut c = Iolab::new()
        .args(["capture", ld.path(), "-o", cap.to_str().unwrap(), "--json"])
        .command();
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let inst = common::tracefs().join(format!("instances/iolab-{}", child.id()));
    let complete = inst.join("events/block/block_rq_complete/enable");
    let t0 = Instant::now();
    while std::fs::read_to_string(&complete).map_or(true, |s| s.trim() != "1") {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "capture never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let j = Iolab::new()
        .args([
            "run",
            ld.path(),
            "--destroy",
            ld.path(),
            "--replay",
            trace.to_str().unwrap(),
            "--as-fast-as-possible",
            "--repeat",
            "1",
            "--no-save",
            "--json",
        ])
        .run()
        .success()
        .json();
    // Every IO of the replay is in the capture's hands before it is stopped.
    wait_drained(&inst);
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = Out::new("capture".into(), child.wait_with_output().unwrap());
    assert!(o.code == 0 || o.code == 130, "{}", o.stderr);
    let rp = &trial(&j)["open_loop"]["replay"];
    assert!(
        rp["replayed_ns"].as_f64().unwrap() < 0.5 * rp["recorded_ns"].as_f64().unwrap(),
        "as fast as possible: {rp}"
    );
    let got = read_trace(&cap).unwrap();
    let ours = |name: &str| name.starts_with("iolab") || name.starts_with("iou-");
    let mut replayed: Vec<(Op, u64, u32)> = got
        .ios
        .iter()
        .filter(|i| ours(got.process_name(i)) && i.op.is_data())
        .map(|i| (i.op, i.offset, i.len))
        .collect();
    let mut recorded: Vec<(Op, u64, u32)> = ios
        .iter()
        .filter(|i| i.op.is_data())
        .map(|i| (i.op, i.offset, i.len))
        .collect();
    assert_eq!(replayed.len(), recorded.len(), "as many IOs");
    replayed.sort_unstable();
    recorded.sort_unstable();
    assert!(replayed == recorded, "the same offsets and sizes");
}

/// A trace reaching past the target is refused with one line naming --replay-map; with
/// --replay-map wrap it runs, says so, and every IO lands inside the target.
#[test]
fn a_trace_larger_than_the_target_needs_a_mapping_choice() {
    require_root!();
    let dir = disk_tmpdir("iolab-replay");
    let ld = LoopDev::new("replay-small", 16 << 20);
    let trace = dir.path().join("big.trace");
    synthetic_trace(&trace, 1, 500.0, 256 << 20);
    let o = Iolab::new()
        .args([
            "run",
            ld.path(),
            "--destroy",
            ld.path(),
            "--replay",
            trace.to_str().unwrap(),
            "--repeat",
            "1",
            "--no-save",
        ])
        .run();
    o.code(2).stderr_has("--replay-map");
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    let o = Iolab::new()
        .args([
            "run",
            ld.path(),
            "--destroy",
            ld.path(),
            "--replay",
            trace.to_str().unwrap(),
            "--replay-map",
            "wrap",
            "--repeat",
            "1",
            "--no-save",
            "--json",
        ])
        .run();
    o.success().stderr_has("wrapped");
    let j = o.json();
    assert_eq!(trial(&j)["open_loop"]["replay"]["map"], "wrap");
    // A trace with writes on a device without --destroy: refused like any writer.
    Iolab::new()
        .args([
            "run",
            ld.path(),
            "--replay",
            trace.to_str().unwrap(),
            "--replay-map",
            "wrap",
        ])
        .run()
        .code(2)
        .stderr_has("--destroy");
}

/// `--replay-model` runs the trace's model (a synthetic workload), and a spec file's
/// `replay = "..."` replays like the flag, on a directory target made as large as the trace
/// reaches.
#[test]
fn the_model_and_a_spec_file_replay_run_on_a_directory() {
    let dir = disk_tmpdir("iolab-replay");
    let trace = dir.path().join("t.trace");
    synthetic_trace(&trace, 1, 1000.0, 32 << 20);
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let j = Iolab::new()
        .args([
            "run",
            work.to_str().unwrap(),
            "--replay-model",
            trace.to_str().unwrap(),
            "--time",
            "500ms",
            "--repeat",
            "1",
            "--no-save",
            "--json",
        ])
        .run()
        .success()
        .json();
    let w = &j["run"]["workloads"][0];
    assert_eq!(w["workload"]["name"], "model-t");
    let spec = dir.path().join("r.toml");
    std::fs::write(
        &spec,
        format!(
            "[[workload]]\nname = \"mail\"\nreplay = \"{}\"\nspeed = 4\n",
            trace.display()
        ),
    )
    .unwrap();
    let j = Iolab::new()
        .args([
            "run",
            work.to_str().unwrap(),
            "--spec",
            spec.to_str().unwrap(),
            "--repeat",
            "1",
            "--no-save",
            "--json",
        ])
        .run()
        .success()
        .json();
    let rp = &trial(&j)["open_loop"]["replay"];
    assert_eq!(rp["speed"], 4.0);
    assert_eq!(
        rp["map"], "exact",
        "the test file is as large as the trace reaches"
    );
}

/// A lab spec in `dir` whose workloads replay a 2 s synthetic trace (`mail.trace`, written
/// there too): `disks` and `layout` are its TOML, `{t}` in `workloads` the trace's path.
fn lab_with_trace(dir: &Path, disks: &str, layout: &str, workloads: &str) -> std::path::PathBuf {
    let trace = dir.join("mail.trace");
    synthetic_trace(&trace, 2, 500.0, 64 << 20);
    let spec = dir.join("lab.toml");
    let workloads = workloads.replace("{t}", &trace.display().to_string());
    std::fs::write(
        &spec,
        format!(
            "[disks]\nloop = {{ {disks}, dir = \"{d}\" }}\n[[layout]]\n{layout}\n[workloads]\n{workloads}repeat = 1\n",
            d = dir.display()
        ),
    )
    .unwrap();
    spec
}

/// A lab's `[workloads] replay` and `model` (issue 29): the trace replayed (wrapped into the
/// layout) and its model run on every layout, one column each in the lab's table.
#[test]
fn a_lab_runs_a_trace_and_its_model_on_each_layout() {
    require_root!();
    common::require_tool!("mkfs.ext4", apt = "e2fsprogs");
    let dir = disk_tmpdir("iolab-replay-lab");
    let spec = lab_with_trace(
        dir.path(),
        "count = 1, size = \"256MiB\"",
        "name = \"ext4\"\nfs = \"ext4\"",
        "replay = \"{t}\"\nmodel = \"{t}\"\n",
    );
    let o = Iolab::new()
        .args(["lab", spec.to_str().unwrap(), "--no-save", "--time", "1s"])
        .run();
    o.success()
        .stdout_has("replay-mail IOPS")
        .stdout_has("model-mail IOPS");
}

/// Issue 29: the user's own workload while the layout rebuilds — the lab replays the trace
/// during the replace of a btrfs raid1 member (`during_rebuild = true`), stored as its own
/// phase with its ratio to healthy.
#[test]
fn a_lab_replays_a_trace_while_the_layout_rebuilds() {
    require_root!();
    common::require_tool!("mkfs.btrfs", apt = "btrfs-progs");
    let dir = disk_tmpdir("iolab-replay-rebuild");
    let spec = lab_with_trace(
        dir.path(),
        "count = 3, size = \"512MiB\"",
        "name = \"r1\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\ndegrade = true\nrebuild = true\nduring_rebuild = true\nfill = \"128MiB\"",
        "replay = \"{t}\"\n",
    );
    let o = Iolab::new()
        .args([
            "lab",
            spec.to_str().unwrap(),
            "--no-save",
            "--time",
            "1s",
            "--format",
            "json",
        ])
        .run();
    let v = o.success().json();
    let l = &v["layouts"][0];
    assert_eq!(l["status"], "ok", "{l:#}");
    let rl = &l["rebuild_load"];
    assert!(rl["workload_error"].is_null(), "{rl:#}");
    let ratio = rl["perf_ratio"].as_f64().unwrap();
    assert!(ratio > 0.0 && ratio.is_finite(), "{rl:#}");
    assert!(rl["rebuild_share"].as_f64().unwrap() > 0.0, "{rl:#}");
    assert_eq!(l["integrity"]["verdict"]["kind"], "verified", "{l:#}");
}
