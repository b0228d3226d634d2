//! `iolab run` keeps every run in the store: read back by label, interrupted by Ctrl-C with its
//! finished trials kept and exit 130, killed with SIGKILL and shown as incomplete.

mod common;

use common::*;
use std::time::{Duration, Instant};

fn tmpdir() -> tempfile::TempDir {
    disk_tmpdir("iolab-runstore-test")
}

#[test]
fn a_run_is_stored_and_read_back_by_label() {
    let d = tmpdir();
    let db = d.path().join("r.db");
    let work = d.path().join("w");
    std::fs::create_dir(&work).unwrap();
    Iolab::new()
        .db(&db)
        .args([
            "run",
            work.to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "200ms",
            "--repeat",
            "2",
            "--label",
            "first",
            "--note",
            "hello",
        ])
        .run()
        .success()
        .stdout_has("saved as run");
    let (code, so, se) = Iolab::new()
        .db(&db)
        .args(["show", "first", "--json"])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    // `show --json` prints the run record itself.
    let run = json(&so);
    assert_eq!(run["label"], "first");
    assert_eq!(run["note"], "hello");
    assert_eq!(run["status"], "complete");
    assert_eq!(run["workloads"][0]["trials"].as_array().unwrap().len(), 2);
    Iolab::new()
        .db(&db)
        .args(["list", "--json"])
        .run()
        .success()
        .stdout_has("first");
}

#[test]
fn ctrl_c_keeps_finished_trials_marks_interrupted_and_exits_130() {
    let d = tmpdir();
    let db = d.path().join("r.db");
    let work = d.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut c = Iolab::new()
        .db(&db)
        .args([
            "run",
            work.to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "700ms",
            "--repeat",
            "20",
            "--label",
            "cc",
        ])
        .command();
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "stopped promptly");
    Out::new("iolab run (SIGINT)".into(), o)
        .code(130)
        .stderr_has("interrupted");
    let (code, so, se) = Iolab::new()
        .db(&db)
        .args(["show", "cc", "--json"])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    // `show --json` prints the run record itself.
    let run = json(&so);
    assert_eq!(run["status"], "interrupted");
    let n = run["workloads"][0]["trials"].as_array().unwrap().len();
    assert!((1..20).contains(&n), "{n} finished trials kept");
    assert_eq!(
        std::fs::read_dir(&work).unwrap().count(),
        0,
        "test file removed"
    );
}

#[test]
fn sigkill_leaves_a_consistent_store_and_an_incomplete_run() {
    let d = tmpdir();
    let db = d.path().join("r.db");
    let work = d.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let mut c = Iolab::new()
        .db(&db)
        .args([
            "run",
            work.to_str().unwrap(),
            "--pattern",
            "randread",
            "--size",
            "8MiB",
            "--time",
            "500ms",
            "--repeat",
            "20",
            "--label",
            "killed",
        ])
        .command();
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(2200));
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, so, se) = Iolab::new()
        .db(&db)
        .args(["show", "killed", "--json"])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    // `show --json` prints the run record itself.
    let run = json(&so);
    assert_eq!(run["status"], "incomplete");
    assert!(!run["workloads"][0]["trials"].as_array().unwrap().is_empty());
}

#[test]
fn until_stable_reports_how_many_trials_it_took() {
    let d = tmpdir();
    let db = d.path().join("r.db");
    let j = Iolab::new()
        .db(&db)
        .args([
            "run",
            "--engine",
            "null",
            "--pattern",
            "randread",
            "--io-size",
            "64MiB",
            "--until-stable",
            "20",
            "--max-repeat",
            "8",
            "--json",
        ])
        .run()
        .success()
        .json();
    let n = j["run"]["workloads"][0]["trials"].as_array().unwrap().len();
    assert!((3..=8).contains(&n), "{n}");
    let notes = j["run"]["notes"].to_string();
    assert!(notes.contains("trials"), "{notes}");
}

#[test]
fn no_save_keeps_nothing_and_a_bad_label_is_refused() {
    let d = tmpdir();
    let db = d.path().join("r.db");
    Iolab::new()
        .db(&db)
        .args([
            "run",
            "--engine",
            "null",
            "--pattern",
            "randread",
            "--io-size",
            "4MiB",
            "--repeat",
            "1",
            "--no-save",
        ])
        .run()
        .success();
    assert!(!db.exists(), "nothing stored");
    Iolab::new()
        .db(&db)
        .args([
            "run",
            "--engine",
            "null",
            "--pattern",
            "randread",
            "--io-size",
            "4MiB",
            "--label",
            "last",
        ])
        .run()
        .code(2)
        .stderr_has("--label");
}

#[test]
fn plan_takes_disk_speeds_from_a_stored_run() {
    let d = tmpdir();
    let db = d.path().join("r.db");
    let work = d.path().join("w");
    std::fs::create_dir(&work).unwrap();
    Iolab::new()
        .db(&db)
        .args([
            "run",
            work.to_str().unwrap(),
            "--quick",
            "--size",
            "16MiB",
            "--time",
            "200ms",
            "--label",
            "onedisk",
        ])
        .run()
        .success();
    let j = Iolab::new()
        .db(&db)
        .args([
            "plan",
            "--disks",
            "6",
            "--disk-size",
            "1TB",
            "--layouts",
            "raid0,raid6",
            "--disk-from",
            "onedisk",
            "--format",
            "json",
        ])
        .run()
        .success()
        .json();
    let r0 = &j["layouts"][0];
    assert!(r0["seq_read_mbps"].as_f64().unwrap() > 0.0);
    // Six disks striped read three times what two do (no cap given).
    let (code, so2, se) = Iolab::new()
        .db(&db)
        .args([
            "plan",
            "--disks",
            "2",
            "--disk-size",
            "1TB",
            "--layouts",
            "raid0",
            "--disk-from",
            "onedisk",
            "--format",
            "json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{se}");
    let two = json(&so2)["layouts"][0]["seq_read_mbps"].as_f64().unwrap();
    let six = r0["seq_read_mbps"].as_f64().unwrap();
    assert!((six / two - 3.0).abs() < 0.01, "{six} vs {two}");
    Iolab::new()
        .db(&db)
        .args([
            "plan",
            "--disks",
            "6",
            "--disk-size",
            "1TB",
            "--layouts",
            "raid6",
            "--disk-from",
            "nosuchrun",
        ])
        .run()
        .code(2);
}
