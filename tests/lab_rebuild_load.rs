//! The lab's workloads during the rebuild (`during_rebuild = true`), for real on btrfs
//! raid1 over loop disks: the replace runs on its own thread while the workloads run, the
//! figures are stored as their own phase with their ratio to healthy, the rebuild's time is
//! the time under that load, and the data set still reads back intact. Needs root, loop
//! devices and btrfs; skips with a reason where the machine lacks them.

use serde_json::Value;

mod common;
mod lab_world;
use common::Iolab;
use lab_world::World;

#[test]
fn workloads_run_during_the_rebuild_and_are_stored_as_their_own_phase() {
    lab_world::require_lab!(
        "losetup" => "mount",
        "mkfs.btrfs" => "btrfs-progs",
        "btrfs" => "btrfs-progs",
        "wipefs" => "util-linux",
    );
    let w = World::new("rebuild-load");
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("lab.toml");
    std::fs::write(
        &spec,
        "name = \"rebuild-load\"\n[disks]\nloop = { count = 3, size = \"1GiB\" }\n\
         [[layout]]\nname = \"btrfs-raid1\"\nbtrfs = { data = \"raid1\", metadata = \"raid1\", members = 2 }\n\
         degrade = true\nrebuild = true\nduring_rebuild = true\nfill = \"256MiB\"\n\
         [workloads]\nrepeat = 1\ntime = \"400ms\"\nsize = \"64MiB\"\n\
         [[workloads.workload]]\nname = \"rand-read\"\npattern = \"randread\"\nbs = \"4k\"\nqd = 4\n\
         [[workloads.workload]]\nname = \"seq-write\"\npattern = \"write\"\nbs = \"1m\"\nqd = 4\n",
    )
    .unwrap();
    let (out, v) = w.lab_json(&spec, &[]);
    assert_eq!(out.code, 0, "{}\n{v:#}", out.stderr);
    let l = &v["layouts"][0];
    assert_eq!(l["status"], "ok", "{l:#}");
    let rl = &l["rebuild_load"];
    let ws = rl["workload_seconds"].as_f64().unwrap();
    let rs = rl["rebuild_seconds"].as_f64().unwrap();
    let share = rl["rebuild_share"].as_f64().unwrap();
    assert!(ws > 0.5, "two workloads of 400 ms: {rl:#}");
    assert!(rs > 0.0, "{rl:#}");
    // The rebuild ran while the workloads did: it was still running when they ended, or it
    // ended first and the share says how far into them.
    assert!(share > 0.0 && share <= 1.0, "{rl:#}");
    if share < 1.0 {
        assert!(rs < ws, "{rl:#}");
    }
    assert_eq!(
        l["rebuild"]["seconds"].as_f64(),
        Some(rs),
        "one rebuild, timed once"
    );
    let ratio = rl["perf_ratio"].as_f64().unwrap();
    assert!(ratio > 0.0 && ratio.is_finite(), "{rl:#}");
    assert!(rl["workload_error"].is_null(), "{rl:#}");
    // The data set was read back after the rebuild, intact, and scrubbed.
    assert_eq!(l["integrity"]["verdict"]["kind"], "verified", "{l:#}");
    // Three stored runs: healthy, degraded and during the rebuild, each with its workloads.
    let runs = v["runs"].as_array().unwrap();
    let phases: Vec<&str> = runs.iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["healthy", "degraded", "rebuilding"], "{runs:#?}");
    let lab_id = v["lab_id"].as_str().unwrap();
    let db = w.db.path().join("iolab.db");
    let o = Iolab::new()
        .args(["list", "--lab", lab_id, "--json", "--db"])
        .arg(&db)
        .run();
    o.success();
    let listed: Value = serde_json::from_str(&o.stdout).unwrap();
    let rebuilding = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "btrfs-raid1-rebuilding")
        .unwrap_or_else(|| panic!("no run labelled btrfs-raid1-rebuilding: {listed:#}"));
    let id = rebuilding["id"].as_str().unwrap();
    let o = Iolab::new()
        .args(["show", id, "--json", "--db"])
        .arg(&db)
        .run();
    o.success();
    let shown: Value = serde_json::from_str(&o.stdout).unwrap();
    let run = if shown["run"].is_null() {
        &shown
    } else {
        &shown["run"]
    };
    assert_eq!(run["layout"]["phase"], "rebuilding", "{run:#}");
    assert_eq!(run["layout"]["degraded_of"], "btrfs-raid1");
    assert_eq!(run["layout"]["degraded_ratio"].as_f64(), Some(ratio));
    let trials: usize = run["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["trials"].as_array().unwrap().len())
        .sum();
    assert_eq!(trials, 2, "{run:#}");
    decide_compare_and_report_read_it(lab_id, &db, dir.path());
    w.assert_clean(lab_id);
}

/// The stored lab read back by the other commands: `decide`, `compare` and the HTML report
/// each see the run made during the rebuild.
fn decide_compare_and_report_read_it(lab_id: &str, db: &std::path::Path, dir: &std::path::Path) {
    // `iolab decide` reads the stored run during the rebuild into its REBUILDING figure: the
    // decision's workload over healthy, measured.
    let o = Iolab::new()
        .args(["decide", lab_id, "--format", "json", "--db"])
        .arg(db)
        .run();
    o.success();
    let d: Value = serde_json::from_str(&o.stdout).unwrap();
    let row = common::decision::row(&d, "btrfs-raid1");
    let f = &row["during_rebuild"];
    assert!(f["value"].as_f64().unwrap() > 0.0, "{row:#}");
    assert!(
        f["basis"]
            .as_str()
            .unwrap()
            .contains("during the rebuild over healthy"),
        "{row:#}"
    );
    // `compare` shows the layout's integrity verdict beside its speeds (like any
    // verdict), in the JSON and under the table.
    let o = Iolab::new()
        .args(["compare", "--lab", lab_id, "--format", "json", "--db"])
        .arg(db)
        .run();
    o.success();
    let cmp: Value = serde_json::from_str(&o.stdout).unwrap();
    for r in cmp["runs"].as_array().unwrap() {
        assert_eq!(r["integrity"], "verified", "{r:#}");
        assert!(r.get("power").is_none(), "no power cuts here: {r:#}");
    }
    let o = Iolab::new()
        .args(["compare", "--lab", lab_id, "--db"])
        .arg(db)
        .run();
    o.success();
    assert!(
        o.stdout
            .contains("verdict: btrfs-raid1: integrity verified"),
        "{}",
        o.stdout
    );
    // The HTML report puts the run beside the degraded one, saying which is which.
    let html = dir.join("lab.html");
    let o = Iolab::new()
        .args(["report", "--lab", lab_id, "-o"])
        .arg(&html)
        .args(["--db"])
        .arg(db)
        .run();
    o.success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Degraded and rebuilding vs healthy")
            && page.contains("btrfs-raid1-rebuilding"),
        "{page}"
    );
}

#[test]
fn during_rebuild_without_a_rebuild_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("lab.toml");
    std::fs::write(
        &spec,
        "name = \"x\"\n[disks]\nloop = { count = 2, size = \"1GiB\" }\n\
         [[layout]]\nname = \"r1\"\nbtrfs = { data = \"raid1\", members = 2 }\n\
         degrade = true\nduring_rebuild = true\n\
         [workloads]\nprofiles = [\"quick\"]\n",
    )
    .unwrap();
    let o = Iolab::new()
        .args(["lab", spec.to_str().unwrap(), "--dry-run"])
        .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    let line = o.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains("during_rebuild") && line.contains("rebuild = true"),
        "{line}"
    );
}
