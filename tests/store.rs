//! The results store on real SQLite files in temporary directories: round trips, migrations,
//! concurrent writer processes, SIGKILL and Ctrl-C mid-run, damaged and foreign files, the
//! statistics against hand-computed values, and `iolab list/show/export/rm/compare` run as the
//! real binary.
//!
//! The concurrency and SIGKILL tests re-execute this test binary as child processes (the
//! harness in tests/common/records.rs): the `child_role` test does nothing unless
//! `IOLAB_STORE_CHILD` names a role.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use iolab::sample::{RunRecord, RunStatus};
use iolab::spec::WorkloadKind;
use iolab::stats;
use iolab::store::{RunFilter, Store, StoreError};

use common::Iolab;

use common::records::*;

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("iolab-store-test")
        .tempdir()
        .unwrap()
}

fn integrity_ok(path: &Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    let r: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(r, "ok");
    let fk: i64 = c
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk, 0, "dangling rows");
}

// ---------------------------------------------------------------------------------------------
// Round trip, migrations, ids and references

#[test]
fn a_full_run_round_trips_bit_for_bit() {
    let dir = tmp();
    let path = dir.path().join("nested/dirs/iolab.db");
    let mut store = Store::open(&path).unwrap();
    let rec = record(Some("raid6"), &[1000.0, 1100.0, 900.0]);
    let id = store_like_run_loop(&mut store, &rec);
    assert_eq!(id.len(), iolab::store::ID_LEN);
    assert!(
        id.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    drop(store);

    let store = Store::open(&path).unwrap();
    let back = store.load_run(&id).unwrap();
    let mut want = rec.clone();
    want.id = id.clone();
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&want).unwrap()
    );
    // The histograms themselves, not just their serialized form.
    let t = &back.workloads[0].trials[2];
    assert_eq!(
        t.ops[0].latency.summary(),
        rec.workloads[0].trials[2].ops[0].latency.summary()
    );
    assert_eq!(t.ops[1].latency.len(), 500);

    // The metrics table is queryable with plain SQL, and the view joins it up.
    let c = rusqlite::Connection::open(&path).unwrap();
    let v: f64 = c
        .query_row(
            "SELECT value FROM trial_metrics WHERE run_id = ?1 AND workload = 'db-8k'
             AND trial = 2 AND metric = 'read.iops'",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    assert!((v - 1100.0).abs() < 1e-9);
    let (model, level): (String, String) = c
        .query_row(
            "SELECT model, raid_level FROM devices WHERE run_id = ?1 AND position = 1",
            [&id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((model.as_str(), level.as_str()), ("WDC WD20EARS", "raid6"));
    integrity_ok(&path);
}

#[test]
fn save_run_keeps_status_and_begin_run_keeps_given_trials() {
    let dir = tmp();
    let mut store = Store::open(&dir.path().join("a.db")).unwrap();
    let mut rec = record(None, &[10.0, 11.0]);
    rec.status = RunStatus::Failed;
    rec.error = Some("disk full".into());
    let id = store.save_run(&rec).unwrap();
    let back = store.load_run(&id).unwrap();
    assert_eq!(back.status, RunStatus::Failed);
    assert_eq!(back.error.as_deref(), Some("disk full"));
    assert_eq!(back.workloads[0].trials.len(), 2);
    // An imported id is kept, and a second import of the same id is refused.
    rec.id = "0badc0de".into();
    assert_eq!(store.save_run(&rec).unwrap(), "0badc0de");
    assert!(matches!(
        store.save_run(&rec),
        Err(StoreError::DuplicateId(_))
    ));
    // A trial for a run that does not exist is refused, not stored as an orphan.
    let w = io_workload("x");
    assert!(matches!(
        store.add_trial("ffffffff", 0, &w, &io_trial("x", 1, 1.0)),
        Err(StoreError::UnknownRun(_))
    ));
    // A label that could never be referred to is refused.
    rec.id.clear();
    rec.label = Some("last".into());
    assert!(store.save_run(&rec).unwrap_err().is_usage());
}

/// A placeholder gives way to the result in one transaction: after `save_run_replacing` the
/// placeholder and its workloads are gone and the result is there; a failed replace (the
/// result's id is taken) keeps the placeholder.
#[test]
fn save_run_replacing_swaps_a_placeholder_for_the_result() {
    let dir = tmp();
    let path = dir.path().join("a.db");
    let mut store = Store::open(&path).unwrap();
    let mut pending = record(Some("group"), &[]);
    pending.status = RunStatus::Running;
    let placeholder = store.begin_run(&pending).unwrap();
    let result = record(Some("group"), &[10.0, 11.0]);
    let id = store.save_run_replacing(&result, &placeholder).unwrap();
    assert!(matches!(
        store.load_run(&placeholder),
        Err(StoreError::UnknownRun(_))
    ));
    let back = store.load_run(&id).unwrap();
    assert_eq!(back.workloads[0].trials.len(), 2);
    let ph2 = store.begin_run(&pending).unwrap();
    let mut taken = result.clone();
    taken.id = id.clone();
    assert!(matches!(
        store.save_run_replacing(&taken, &ph2),
        Err(StoreError::DuplicateId(_))
    ));
    assert!(
        store.load_run(&ph2).is_ok(),
        "a failed replace kept the placeholder"
    );
    integrity_ok(&path);
}

#[test]
fn a_new_database_is_created_at_the_latest_schema_and_reopens() {
    let dir = tmp();
    // Absent file, zero-length file, and an empty SQLite database all become ours.
    let absent = dir.path().join("absent.db");
    let zero = dir.path().join("zero.db");
    std::fs::write(&zero, b"").unwrap();
    let empty = dir.path().join("empty.db");
    rusqlite::Connection::open(&empty)
        .unwrap()
        .execute_batch("PRAGMA user_version = 0;")
        .unwrap();
    for p in [&absent, &zero, &empty] {
        let s = Store::open(p).unwrap();
        assert_eq!(s.schema_version().unwrap(), iolab::store::LATEST_VERSION);
        drop(s);
        let c = rusqlite::Connection::open(p).unwrap();
        let app: i32 = c
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        assert_eq!(app, iolab::store::APPLICATION_ID);
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let tables: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 6);
        drop(c);
        // Reopening migrates nothing and loses nothing.
        let mut s = Store::open(p).unwrap();
        let id = s.save_run(&record(None, &[1.0])).unwrap();
        drop(s);
        let s = Store::open(p).unwrap();
        assert_eq!(s.list(&RunFilter::default()).unwrap()[0].id, id);
    }
    // Read-only commands do not create a database.
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        Store::open_existing(&missing),
        Err(StoreError::Missing(_))
    ));
    assert!(!missing.exists());
}

#[test]
fn runs_are_found_by_id_prefix_label_and_last() {
    let dir = tmp();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let mut ids = Vec::new();
    for (i, (label, id)) in [
        (Some("raid5"), "abc11111"),
        (Some("raid6"), "abc22222"),
        (Some("raid5"), "d0000001"),
        (None, "e0000001"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = record(label, &[1.0]);
        r.id = id.to_string();
        r.started_unix_ms += i as u64 * 1000;
        ids.push(store.save_run(&r).unwrap());
    }
    assert_eq!(store.resolve("abc22222").unwrap(), "abc22222");
    assert_eq!(store.resolve("ABC2").unwrap(), "abc22222");
    assert_eq!(store.resolve("d").unwrap(), "d0000001");
    // The newest run with a label wins.
    assert_eq!(store.resolve("raid5").unwrap(), "d0000001");
    assert_eq!(store.resolve("raid6").unwrap(), "abc22222");
    assert_eq!(store.resolve("last").unwrap(), "e0000001");
    assert_eq!(store.resolve("last~1").unwrap(), "d0000001");
    assert_eq!(store.resolve("last~3").unwrap(), "abc11111");
    let e = store.resolve("last~4").unwrap_err();
    assert!(matches!(e, StoreError::UnknownRun(_)) && e.is_usage());
    let e = store.resolve("abc").unwrap_err();
    assert!(e.is_usage());
    let msg = e.to_string();
    assert!(
        msg.contains("matches 2 runs") && msg.contains("abc11111 raid5"),
        "{msg}"
    );
    assert!(matches!(
        store.resolve("zzz"),
        Err(StoreError::UnknownRun(_))
    ));
    // List: newest first, filters.
    let all = store.list(&RunFilter::default()).unwrap();
    let order: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(order, ["e0000001", "d0000001", "abc22222", "abc11111"]);
    assert_eq!(all[0].workloads, 2);
    assert_eq!(all[0].trials, 2);
    let f = RunFilter {
        label: Some("raid5".into()),
        ..RunFilter::default()
    };
    assert_eq!(store.list(&f).unwrap().len(), 2);
    let f = RunFilter {
        target: Some("array".into()),
        host: Some("flurry".into()),
        limit: Some(3),
        ..RunFilter::default()
    };
    assert_eq!(store.list(&f).unwrap().len(), 3);
    let f = RunFilter {
        host: Some("elsewhere".into()),
        ..RunFilter::default()
    };
    assert!(store.list(&f).unwrap().is_empty());
    // Delete removes the run and every row hanging off it.
    assert!(store.delete("abc11111").unwrap());
    assert!(!store.delete("abc11111").unwrap());
    assert_eq!(store.resolve("abc").unwrap(), "abc22222");
    drop(store);
    let c = rusqlite::Connection::open(dir.path().join("r.db")).unwrap();
    let orphans: i64 = c
        .query_row(
            "SELECT (SELECT count(*) FROM trials WHERE run_id = 'abc11111')
                  + (SELECT count(*) FROM workloads WHERE run_id = 'abc11111')
                  + (SELECT count(*) FROM devices WHERE run_id = 'abc11111')
                  + (SELECT count(*) FROM ops WHERE trial_id NOT IN (SELECT id FROM trials))
                  + (SELECT count(*) FROM metrics WHERE trial_id NOT IN (SELECT id FROM trials))",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}

// ---------------------------------------------------------------------------------------------
// Interrupted and killed runs

#[test]
fn an_interrupted_run_keeps_its_finished_trials() {
    let dir = tmp();
    let path = dir.path().join("i.db");
    let mut store = Store::open(&path).unwrap();
    let mut rec = record(Some("ctrl-c"), &[]);
    for w in &mut rec.workloads {
        w.trials.clear();
    }
    let id = store.begin_run(&rec).unwrap();
    // While the run is going it reads as running (its process, this one, is alive).
    assert_eq!(store.load_run(&id).unwrap().status, RunStatus::Running);
    let w = rec.workloads[0].workload.clone();
    store
        .add_trial(&id, 0, &w, &io_trial(&w.name, 1, 500.0))
        .unwrap();
    store
        .add_trial(&id, 0, &w, &io_trial(&w.name, 2, 510.0))
        .unwrap();
    // Ctrl-C: the run loop stops and records why.
    store
        .finish_run(
            &id,
            RunStatus::Interrupted,
            1_700_000_050_000,
            &["interrupted by Ctrl-C after 2 trials".to_string()],
            None,
        )
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    let back = store.load_run(&id).unwrap();
    assert_eq!(back.status, RunStatus::Interrupted);
    assert_eq!(back.ended_unix_ms, Some(1_700_000_050_000));
    assert_eq!(back.workloads[0].trials.len(), 2);
    assert!(back.workloads[1].trials.is_empty());
    assert_eq!(back.notes, ["interrupted by Ctrl-C after 2 trials"]);
    let l = store.list(&RunFilter::default()).unwrap();
    assert_eq!(l[0].status, RunStatus::Interrupted);
    assert_eq!(l[0].trials, 2);
    let mut store = store;
    assert!(matches!(
        store.finish_run("nope", RunStatus::Complete, 0, &[], None),
        Err(StoreError::UnknownRun(_))
    ));
}

/// Not a test: the body of the child processes. Runs only when re-executed with a role.
#[test]
#[ignore = "child process of the concurrency and SIGKILL tests"]
fn child_role() {
    let Some((role, db)) = common::records::child_role() else {
        return;
    };
    let db = PathBuf::from(db);
    let mut store = Store::open(&db).unwrap();
    match role.as_str() {
        "writer-a" | "writer-b" => write_runs(&mut store, &role, 15),
        "killed" => {
            let mut rec = record(Some("killed"), &[]);
            for w in &mut rec.workloads {
                w.trials.clear();
            }
            let id = store.begin_run(&rec).unwrap();
            let w = rec.workloads[0].workload.clone();
            // Keep committing trials until killed; give up after a minute so an orphan
            // (parent gone) cannot fill the disk.
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            for t in 1.. {
                if std::time::Instant::now() > deadline {
                    break;
                }
                store
                    .add_trial(&id, 0, &w, &io_trial(&w.name, t, 1000.0))
                    .unwrap();
                if t == 3 {
                    println!("READY {id}");
                }
            }
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn two_writer_processes_both_succeed() {
    let dir = tmp();
    // Both start on a database that does not exist yet: creating it is part of the race.
    let db = dir.path().join("shared/iolab.db");
    let a = spawn_child("child_role", "writer-a", &db);
    let b = spawn_child("child_role", "writer-b", &db);
    for c in [a, b] {
        let out = c.wait_with_output().unwrap();
        let so = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && so.contains("CHILD DONE"),
            "child failed: {}\n{}",
            so,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = Store::open(&db).unwrap();
    for role in ["writer-a", "writer-b"] {
        let runs = store
            .list(&RunFilter {
                label: Some(role.into()),
                ..RunFilter::default()
            })
            .unwrap();
        assert_eq!(runs.len(), 15, "{role}");
        for r in &runs {
            assert_eq!(r.status, RunStatus::Complete);
            assert_eq!(r.trials, 3);
        }
    }
    integrity_ok(&db);
}

#[test]
fn a_run_killed_with_sigkill_reads_back_incomplete_with_its_trials() {
    let dir = tmp();
    let db = dir.path().join("k.db");
    let mut child = spawn_child("child_role", "killed", &db);
    // Whatever happens below, the child does not outlive a minute of waiting.
    let (done, watchdog) = std::sync::mpsc::channel::<()>();
    let pid = child.id().to_string();
    let guard = std::thread::spawn(move || {
        if watchdog.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = Command::new("kill").args(["-9", &pid]).status();
        }
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let id = loop {
        let line = lines.next().expect("child exited before READY").unwrap();
        // libtest prints "test child_role ... " on the same line.
        if let Some(i) = line.find("READY ") {
            break line[i + 6..].trim().to_string();
        }
    };
    // The child is committing trials in a tight loop: SIGKILL lands wherever it lands,
    // often in the middle of a transaction.
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    let _ = done.send(());
    guard.join().unwrap();
    assert!(!status.success());

    integrity_ok(&db);
    let store = Store::open(&db).unwrap();
    let rec = store.load_run(&id).unwrap();
    assert_eq!(rec.status, RunStatus::Incomplete);
    assert_eq!(rec.ended_unix_ms, None);
    let trials = &rec.workloads[0].trials;
    assert!(trials.len() >= 3, "{} trials", trials.len());
    // Every committed trial is whole: numbered 1..n with both ops and their histograms.
    for (i, t) in trials.iter().enumerate() {
        assert_eq!(t.trial, i as u32 + 1);
        assert_eq!(t.ops.len(), 2);
        assert_eq!(t.ops[0].latency.len(), 500);
    }
    let l = store.list(&RunFilter::default()).unwrap();
    assert_eq!(l[0].status, RunStatus::Incomplete);
}

// ---------------------------------------------------------------------------------------------
// Files that are not ours

fn fingerprint(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn foreign_damaged_and_newer_files_are_refused_untouched() {
    let dir = tmp();

    // Not SQLite at all.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "my notes about raid6, not a database\n".repeat(50)).unwrap();
    let before = fingerprint(&text);
    let e = Store::open(&text).unwrap_err();
    assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
    assert!(e.to_string().contains("not an iolab results database"));
    assert_eq!(fingerprint(&text), before);

    // Another program's SQLite database.
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch(
            "CREATE TABLE photos (id INTEGER, name TEXT); INSERT INTO photos VALUES (1, 'x');",
        )
        .unwrap();
    let before = fingerprint(&other);
    let e = Store::open(&other).unwrap_err();
    assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
    assert_eq!(fingerprint(&other), before);
    // ... and one that says whose it is.
    let tagged = dir.path().join("tagged.db");
    rusqlite::Connection::open(&tagged)
        .unwrap()
        .execute_batch("PRAGMA application_id = 1234;")
        .unwrap();
    let before = fingerprint(&tagged);
    assert!(matches!(
        Store::open(&tagged),
        Err(StoreError::Foreign { .. })
    ));
    assert_eq!(fingerprint(&tagged), before);

    // Written by a newer iolab.
    let newer = dir.path().join("newer.db");
    let mut s = Store::open(&newer).unwrap();
    s.save_run(&record(None, &[1.0])).unwrap();
    drop(s);
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.execute_batch("PRAGMA user_version = 99;").unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    }
    let before = fingerprint(&newer);
    let e = Store::open(&newer).unwrap_err();
    assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e}");
    assert!(e.to_string().contains("upgrade iolab"));
    assert_eq!(fingerprint(&newer), before);

    // Truncated to less than a header.
    let short = dir.path().join("short.db");
    std::fs::write(&short, b"SQLite format 3\0\x10\x00").unwrap();
    assert!(matches!(
        Store::open(&short),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn a_damaged_database_gives_an_error_not_a_panic() {
    let dir = tmp();
    let path = dir.path().join("d.db");
    let mut s = Store::open(&path).unwrap();
    for i in 0..30 {
        let mut r = record(Some(&format!("run{i}")), &[1.0, 2.0, 3.0]);
        r.started_unix_ms += i;
        s.save_run(&r).unwrap();
    }
    drop(s);
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    }
    // Scribble over everything after the first two pages (schema and header survive).
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 4 * page, "{} bytes", bytes.len());
    for b in &mut bytes[2 * page..] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let result = Store::open(&path).and_then(|s| {
        let runs = s.list(&RunFilter::default())?;
        for r in &runs {
            s.load_run(&r.id)?;
        }
        Ok(runs.len())
    });
    let e = result.expect_err("a scribbled database must not read back cleanly");
    assert!(
        matches!(e, StoreError::Corrupt { .. } | StoreError::BadData { .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "{msg}");
}

// ---------------------------------------------------------------------------------------------
// Statistics against known values

#[test]
fn statistics_match_values_computed_by_hand() {
    // Five trials of a sequential write, MB/s: 480 500 510 490 520.
    // mean = 2500/5 = 500; deviations -20 0 10 -10 20, squares 400 0 100 100 400 = 1000;
    // sd = sqrt(1000/4) = 15.8113883; median 500; cv = 0.0316228;
    // t(0.975, 4) = 2.7764451; half-width = 2.7764451 * 15.8113883 / sqrt(5) = 19.6325;
    // interval [480.3675, 519.6325].
    let s = stats::Summary::of(&[480.0, 500.0, 510.0, 490.0, 520.0]).unwrap();
    assert_eq!(s.n, 5);
    assert!((s.mean - 500.0).abs() < 1e-12);
    assert!((s.median - 500.0).abs() < 1e-12);
    assert!((s.sd - 15.811_388_3).abs() < 1e-6);
    assert!((s.cv - 0.031_622_8).abs() < 1e-6);
    let ci = s.ci.unwrap();
    assert_eq!(ci.method.name(), "t");
    assert!((ci.lo - 480.367_5).abs() < 1e-3, "{}", ci.lo);
    assert!((ci.hi - 519.632_5).abs() < 1e-3, "{}", ci.hi);
    assert!(!s.high_cv());
    assert!(stats::is_stable(&[480.0, 500.0, 510.0, 490.0, 520.0], 4.0));
    assert!(!stats::is_stable(&[480.0, 500.0, 510.0, 490.0, 520.0], 3.9));

    // Cliff: 6 s at 1000 creates/s, then 400/s to the end.
    let c = stats::detect_cliffs(
        &meta_trial(
            1,
            0,
            &[1000, 1000, 990, 1010, 1000, 1000, 400, 400, 420, 380],
        )
        .series,
    );
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].at_s, c[0].duration_s), (6, 4));
    assert!((c[0].drop - 0.6).abs() < 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Comparisons on constructed samples, and the commands as users run them

/// Three runs whose read IOPS are known: raid5 100/102/98, raid6 300/306/294 (3.00x, clearly
/// significant), noisy 104/114/94 (1.04x, not significant). Returns (db path, ids).
fn three_runs(dir: &Path) -> (PathBuf, [String; 3]) {
    let db = dir.join("cmp.db");
    let mut s = Store::open(&db).unwrap();
    let mk = |label: &str, iops: &[f64], at: u64| {
        let mut r = record(Some(label), iops);
        r.started_unix_ms += at;
        r
    };
    let a = s.save_run(&mk("raid5", &[100.0, 102.0, 98.0], 0)).unwrap();
    let b = s
        .save_run(&mk("raid6", &[300.0, 306.0, 294.0], 1000))
        .unwrap();
    let c = s
        .save_run(&mk("noisy", &[104.0, 114.0, 94.0], 2000))
        .unwrap();
    (db, [a, b, c])
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, end to end, reads best as one story
fn compare_gives_known_ratios_and_marks_what_is_not_significant() {
    use iolab::report::compare::{CompareOptions, build};
    let dir = tmp();
    let (db, [a, b, c]) = three_runs(dir.path());
    let store = Store::open(&db).unwrap();
    let runs: Vec<RunRecord> = [&a, &b, &c]
        .iter()
        .map(|id| store.load_run(id).unwrap())
        .collect();
    let cmp = build(&runs, &CompareOptions::default());
    assert_eq!(cmp.baseline, 0);
    let headers: Vec<&str> = cmp.runs.iter().map(|r| r.header.as_str()).collect();
    assert_eq!(headers, ["raid5", "raid6", "noisy"]);
    let row = cmp
        .rows
        .iter()
        .find(|r| r.workload == "db-8k" && r.metric == "read.iops")
        .unwrap();
    let base = row.cells[0].as_ref().unwrap();
    assert!((base.summary.median - 100.0).abs() < 1e-9);
    assert!(base.ratio.is_none());
    // 3.00x with the interval worked out in stats::ratio's tests: [2.867020, 3.139148].
    let r6 = row.cells[1].as_ref().unwrap().ratio.unwrap();
    assert!((r6.value - 3.0).abs() < 1e-9);
    let ci = r6.ci.unwrap();
    assert!((ci.lo - 2.867_020).abs() < 1e-5 && (ci.hi - 3.139_148).abs() < 1e-5);
    assert_eq!(r6.significant, Some(true));
    let noisy = row.cells[2].as_ref().unwrap();
    assert!((noisy.ratio.unwrap().value - 1.04).abs() < 1e-9);
    assert_eq!(noisy.ratio.unwrap().significant, Some(false));
    assert!(noisy.high_cv, "cv 9.6% is above 5%");
    // Latency rows say lower is better; the single-trial workload has no interval.
    assert!(
        cmp.rows
            .iter()
            .any(|r| r.metric == "read.lat_p99_us" && !r.higher_is_better)
    );
    let mail = cmp.rows.iter().find(|r| r.metric == "create.ops").unwrap();
    assert!(
        mail.cells[1]
            .as_ref()
            .unwrap()
            .ratio
            .unwrap()
            .significant
            .is_none()
    );

    // The same through the binary, in every format, with another baseline.
    let (code, out, err) = Iolab::new()
        .db(&db)
        .args([
            "compare",
            "raid5",
            "raid6",
            "noisy",
            "--metric",
            "read.iops",
        ])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    assert!(out.contains("100.0 ± 5.0"), "{out}");
    assert!(out.contains("3.00x [2.87, 3.14]"), "{out}");
    assert!(out.contains("1.04x [") && out.contains("] ~"), "{out}");
    assert!(out.contains("~ not significant"), "{out}");
    assert!(out.contains("! trials disagree"), "{out}");
    assert!(out.contains("read IOPS"), "rows are labelled: {out}");
    assert!(!out.contains("write IOPS"), "--metric filters rows: {out}");

    let (code, out, _) = Iolab::new()
        .db(&db)
        .args([
            "compare",
            &b[..4],
            "--baseline",
            "raid5",
            "--format",
            "json",
        ])
        .run()
        .parts();
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["runs"][0]["header"], "raid5");
    assert_eq!(j["runs"][0]["baseline"], true);
    assert_eq!(j["ci_method"], "t");
    assert_eq!(j["ratio_method"], "delta-log-t");
    let row = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "read.iops")
        .unwrap();
    assert!((row["cells"][1]["ratio"]["value"].as_f64().unwrap() - 3.0).abs() < 1e-9);
    assert_eq!(row["cells"][1]["ratio"]["significant"], true);

    let (code, out, _) = Iolab::new()
        .db(&db)
        .args([
            "compare",
            "raid6",
            "noisy",
            "--baseline",
            "raid5",
            "--format",
            "csv",
            "--metric",
            "iops",
        ])
        .run()
        .parts();
    assert_eq!(code, 0);
    let line = out
        .lines()
        .find(|l| l.starts_with("db-8k,read.iops,IOPS,true,") && l.contains(",noisy,"))
        .unwrap();
    assert!(
        line.ends_with(",delta-log-t,false,true,read IOPS"),
        "{line}"
    );
    assert_eq!(
        out.lines().next().unwrap().split(',').count(),
        line.split(',').count()
    );

    let (code, out, _) = Iolab::new()
        .db(&db)
        .args([
            "compare",
            "raid5",
            "raid6",
            "--format",
            "md",
            "--metric",
            "read.iops",
        ])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(
        out.starts_with("| workload | metric | raid5 (baseline) | raid6 | raid6 vs raid5 |"),
        "{out}"
    );
    assert!(out.contains("|:--|:--|--:|--:|--:|"), "{out}");
    assert!(
        out.contains("| db-8k | read IOPS | 100.0 ± 5.0 | 300 ± 15 | 3.00x [2.87, 3.14] |"),
        "{out}"
    );

    // One run alone is not a comparison.
    Iolab::new()
        .db(&db)
        .args(["compare", "raid5"])
        .run()
        .code(2);
    let _ = (a, c);
}

#[test]
fn compare_and_show_report_cliffs_and_differing_workloads() {
    let dir = tmp();
    let db = dir.path().join("c.db");
    let mut s = Store::open(&db).unwrap();
    let base = s
        .save_run(&record(Some("ssd-a"), &[1000.0, 1000.0]))
        .unwrap();
    let mut r = record(Some("ssd-b"), &[900.0, 950.0]);
    // The small-file workload of ssd-b ran with more files, and its trial hit a cliff.
    if let WorkloadKind::SmallFiles(w) = &mut r.workloads[1].workload.kind {
        w.files = 4096;
    }
    r.workloads[1].trials = vec![meta_trial(
        1,
        700,
        &[1000, 1000, 1000, 1000, 300, 300, 300, 300],
    )];
    r.status = RunStatus::Interrupted;
    let other = s.save_run(&r).unwrap();
    drop(s);
    let (code, out, err) = Iolab::new()
        .db(&db)
        .args(["compare", "ssd-a", "ssd-b"])
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("cliff: ssd-b / mail trial 1: throughput fell 70% at 4s for 4s (from 1000.0 to 300.0 ops/s)"), "{out}");
    assert!(
        out.contains("note: workload 'mail' differs: ssd-a ran `smallfile files=2048"),
        "{out}"
    );
    assert!(out.contains("note: ssd-b was interrupted"), "{out}");

    let (code, out, err) = Iolab::new().db(&db).args(["show", &other]).run().parts();
    assert_eq!(code, 0, "{err}");
    println!("{out}");
    for want in [
        "interrupted",
        "WDC WD20EARS",
        "WD-WCAZA1234567",
        "80.00A80",
        "raid6 chunk 512KiB",
        "rw,noatime,inode64",
        "6.8.0-test",
        "Xeon E5-2650",
        "bitmap on, 2 hot spares",
        "median ± 95% CI (t)",
        "cliff: throughput fell 70% at 4s",
        "note (trial 1): trial 1 note",
        "working set fits in RAM",
        "randrw bs=8KiB qd=128",
    ] {
        assert!(out.contains(want), "show lacks {want:?}:\n{out}");
    }
    // `show` defaults to the newest run; --json is the stored record.
    let (code, out, _) = Iolab::new().db(&db).args(["show", "--json"]).run().parts();
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["id"], other.as_str());
    let _ = base;
}

#[test]
fn list_export_and_rm_work_on_real_files() {
    let dir = tmp();
    let (db, [a, b, c]) = three_runs(dir.path());

    let (code, out, _) = Iolab::new().db(&db).args(["list", "--json"]).run().parts();
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = j
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [c.as_str(), b.as_str(), a.as_str()], "newest first");
    assert_eq!(j[0]["status"], "complete");
    let (code, out, _) = Iolab::new()
        .db(&db)
        .args(["list", "--label", "raid6"])
        .run()
        .parts();
    assert_eq!(code, 0);
    assert!(out.contains(&b) && !out.contains(&a), "{out}");
    assert!(out.lines().next().unwrap().starts_with("id "), "{out}");

    let (code, out, _) = Iolab::new()
        .db(&db)
        .args(["export", "raid5", "last", "--format", "json"])
        .run()
        .parts();
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["format"], "iolab-runs/1");
    assert_eq!(j["runs"][0]["id"], a.as_str());
    assert_eq!(j["runs"][1]["id"], c.as_str());
    // The export is the stored record: it reads back as a RunRecord with its histograms.
    let rec: RunRecord = serde_json::from_value(j["runs"][0].clone()).unwrap();
    assert_eq!(rec.workloads[0].trials[0].ops[0].latency.len(), 500);

    let csv = dir.path().join("out.csv");
    Iolab::new()
        .db(&db)
        .args(["export", &a, "--format", "csv", "-o", csv.to_str().unwrap()])
        .run()
        .success();
    let text = std::fs::read_to_string(&csv).unwrap();
    let rec = Store::open(&db).unwrap().load_run(&a).unwrap();
    let want: usize = rec
        .workloads
        .iter()
        .flat_map(|w| &w.trials)
        .map(|t| t.metrics().len())
        .sum();
    assert_eq!(text.lines().count(), want + 1);
    assert!(
        text.contains(",db-8k,randrw bs=8KiB qd=128 threads=4 read=70%"),
        "{text}"
    );

    // rm: a bad reference deletes nothing; then delete two.
    Iolab::new()
        .db(&db)
        .args(["rm", "raid5", "nosuchrun"])
        .run()
        .code(2)
        .stderr_has("no run matches 'nosuchrun'");
    assert_eq!(
        Store::open(&db)
            .unwrap()
            .list(&RunFilter::default())
            .unwrap()
            .len(),
        3
    );
    Iolab::new()
        .db(&db)
        .args(["rm", "raid5", &c])
        .run()
        .success()
        .stdout_has(&format!("removed {a} (raid5)"));
    let left = Store::open(&db)
        .unwrap()
        .list(&RunFilter::default())
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, b);
}

/// Two labs of two runs each (the older lab `0a1b2c`, the newer `9f8e7d`) and a run of no
/// lab after them, oldest first; returns the database and the run ids in that order.
fn two_labs(dir: &Path) -> (PathBuf, Vec<String>) {
    let db = dir.join("labs.db");
    let mut s = Store::open(&db).unwrap();
    let mut ids = Vec::new();
    for (i, (lab, label)) in [
        (Some("0a1b2c"), "old-raid5"),
        (Some("0a1b2c"), "old-raid6"),
        (Some("9f8e7d"), "new-raid5"),
        (Some("9f8e7d"), "new-raid6"),
        (None, "plain"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = record(Some(label), &[100.0 + i as f64, 102.0, 98.0]);
        r.started_unix_ms += 1000 * i as u64;
        r.lab_id = lab.map(str::to_string);
        ids.push(s.save_run(&r).unwrap());
    }
    (db, ids)
}

/// `last` was not the same word everywhere (`decide last` took the newest lab,
/// `report --lab last` looked for a lab called `last`). Every command that takes a run or a
/// lab takes `last` and `last~N`, and a reference that names nothing is named as unknown.
#[test]
#[allow(clippy::too_many_lines)] // one table of commands, each with what it must answer
fn last_and_last_n_mean_the_same_in_every_command_and_unknown_ids_are_named() {
    let dir = tmp();
    let (db, ids) = two_labs(dir.path());
    let iolab = || Iolab::new().db(&db).cwd(dir.path());
    let ok = |args: &[&str]| -> String {
        let (code, out, err) = iolab().args(args).run().parts();
        assert_eq!(code, 0, "{args:?}: {err}");
        out
    };
    // Runs: `last` is the newest run, `last~N` the one N before it.
    let shown = |r: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(&ok(&["show", r, "--json"])).unwrap();
        v["id"].as_str().unwrap().to_string()
    };
    assert_eq!(shown("last"), ids[4]);
    assert_eq!(shown("last~1"), ids[3]);
    assert_eq!(shown("last~4"), ids[0]);
    let exported: serde_json::Value =
        serde_json::from_str(&ok(&["export", "last~2", "last"])).unwrap();
    let got: Vec<&str> = exported["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[2].as_str(), ids[4].as_str()]);
    let cmp: serde_json::Value =
        serde_json::from_str(&ok(&["compare", "last~1", "last", "--format", "json"])).unwrap();
    let cols: Vec<&str> = cmp["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(cols, [ids[3].as_str(), ids[4].as_str()]);
    let html = dir.path().join("r.html");
    let html = html.to_str().unwrap();
    assert!(ok(&["report", "last~1", "last", "-o", html]).contains("(2 runs"));

    // Labs: `last` is the lab of the newest lab run, `last~1` the one before, a prefix works.
    let lab_cols = |lab: &str| -> Vec<String> {
        let v: serde_json::Value =
            serde_json::from_str(&ok(&["compare", "--lab", lab, "--format", "json"])).unwrap();
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(lab_cols("last"), [ids[2].clone(), ids[3].clone()]);
    assert_eq!(lab_cols("last~1"), [ids[0].clone(), ids[1].clone()]);
    assert_eq!(lab_cols("9f"), lab_cols("9f8e7d"));
    let listed = |lab: &str| -> Vec<String> {
        let v: serde_json::Value =
            serde_json::from_str(&ok(&["list", "--lab", lab, "--json"])).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed("last"), [ids[3].clone(), ids[2].clone()]);
    assert_eq!(listed("last~1"), [ids[1].clone(), ids[0].clone()]);
    assert!(ok(&["report", "--lab", "last", "-o", html]).contains("(2 runs"));
    let pushed: serde_json::Value = serde_json::from_str(&ok(&[
        "store",
        "push",
        "--to",
        dir.path().join("team.db").to_str().unwrap(),
        "--lab",
        "last~1",
        "--json",
    ]))
    .unwrap();
    let mut copied: Vec<&str> = pushed["copied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    copied.sort_unstable();
    let mut old = [ids[0].as_str(), ids[1].as_str()];
    old.sort_unstable();
    assert_eq!(copied, old);
    let plan = |lab: &'static str| {
        vec![
            "plan",
            "--from-lab",
            lab,
            "--disks",
            "6",
            "--disk-size",
            "4TB",
            "--layouts",
            "raid6",
        ]
    };
    // `decide` and `plan --from-lab` resolve the same way: the lab they name in what they
    // answer is the one `last~1` means (these records have no single-disk layout to plan from).
    let (_, _, err) = iolab().args(plan("last~1")).run().parts();
    assert!(err.contains("--from-lab 0a1b2c"), "{err}");
    let (_, out, err) = iolab()
        .args(["decide", "last~1", "--format", "json"])
        .run()
        .parts();
    assert!(
        !err.contains("no lab matches") && (out.contains("0a1b2c") || err.contains("0a1b2c")),
        "{out}{err}"
    );

    // Unknown references are named as unknown, exit 2, one line, in every command.
    let unknown_run = "no run matches 'zzz'";
    let unknown_lab = "no lab matches 'zzz'; give a lab id, a unique prefix of it, `last` or `last~N` (2 labs are stored";
    let past_the_labs = "no lab matches 'last~2'; give a lab id";
    for (args, want) in [
        (vec!["show", "zzz"], unknown_run),
        (vec!["export", "zzz"], unknown_run),
        (vec!["rm", "zzz"], unknown_run),
        (vec!["compare", "last", "zzz"], unknown_run),
        (vec!["report", "zzz", "-o", html], unknown_run),
        (vec!["show", "last~5"], "no run matches 'last~5'"),
        (vec!["compare", "--lab", "zzz"], unknown_lab),
        (vec!["report", "--lab", "zzz", "-o", html], unknown_lab),
        (vec!["list", "--lab", "zzz"], unknown_lab),
        (vec!["decide", "zzz"], unknown_lab),
        (plan("zzz"), unknown_lab),
        (
            vec!["store", "push", "--to", html, "--lab", "zzz"],
            unknown_lab,
        ),
        (vec!["compare", "--lab", "last~2"], past_the_labs),
        (vec!["decide", "last~2"], past_the_labs),
    ] {
        let (code, _, err) = iolab().args(&args).run().parts();
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    // `rm` takes them too, and deletes only what they name.
    assert!(ok(&["rm", "last~1"]).contains(&format!("removed {}", ids[3])));
    assert_eq!(shown("last~1"), ids[2]);
}

#[test]
fn bad_references_and_bad_files_are_one_line_errors() {
    let dir = tmp();
    let (db, _) = three_runs(dir.path());
    for (args, code, want) in [
        (vec!["show", "nosuchrun"], 2, "no run matches 'nosuchrun'"),
        (vec!["show", "last~9"], 2, "no run matches 'last~9'"),
        (vec!["compare", "raid5", "zzz"], 2, "no run matches 'zzz'"),
        (
            vec!["export", "raid6", "--format", "xml"],
            2,
            "invalid value 'xml'",
        ),
    ] {
        let (c, _, err) = Iolab::new().db(&db).args(&args).run().parts();
        assert_eq!(c, code, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // An ambiguous prefix: make two ids share two first digits no random id here has.
    let mut s = Store::open(&db).unwrap();
    let taken: Vec<String> = s
        .list(&Default::default())
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let prefix = (0..=255u8)
        .map(|b| format!("{b:02x}"))
        .find(|p| !taken.iter().any(|id| id.starts_with(p.as_str())))
        .expect("a free two-digit prefix");
    for n in 1..=2 {
        let mut r = record(None, &[1.0]);
        r.id = format!("{prefix}00000{n}");
        s.save_run(&r).unwrap();
    }
    drop(s);
    let (c, _, err) = Iolab::new().db(&db).args(["show", &prefix]).run().parts();
    assert_eq!(c, 2);
    assert!(
        err.contains(&format!("'{prefix}' matches 2 runs")) && err.lines().count() == 1,
        "{err}"
    );

    // A file that is not a database, and a damaged one: exit 1, one line, file untouched.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 10_000]).unwrap();
    let (c, _, err) = Iolab::new().db(&junk).args(["list"]).run().parts();
    assert_eq!(c, 1);
    assert!(
        err.starts_with("iolab: error: ") && err.contains("not an iolab results database"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(&junk).unwrap(), vec![7u8; 10_000]);

    // No database yet: list says so and creates nothing; show is a usage error.
    let none = dir.path().join("none/iolab.db");
    Iolab::new()
        .db(&none)
        .args(["list"])
        .run()
        .success()
        .stdout_has("no runs stored yet");
    Iolab::new().db(&none).args(["show", "last"]).run().code(2);
    assert!(!none.exists() && !none.parent().unwrap().exists());
}

#[test]
fn the_default_database_lives_in_the_xdg_data_directory() {
    let dir = tmp();
    let data = dir.path().join("xdg-data");
    let db = data.join("iolab/iolab.db");
    let mut s = Store::open(&db).unwrap();
    let id = s.save_run(&record(Some("xdg"), &[5.0])).unwrap();
    drop(s);
    Iolab::new()
        .no_db()
        .env("XDG_DATA_HOME", &data)
        .args(["list", "--json"])
        .run()
        .success()
        .stdout_has(&id);
    // Without XDG_DATA_HOME: ~/.local/share.
    let home = dir.path().join("home");
    Iolab::new()
        .no_db()
        .env_remove("XDG_DATA_HOME")
        .env("HOME", &home)
        .args(["list"])
        .run()
        .success()
        .stdout_has(&format!("{}/.local/share/iolab/iolab.db", home.display()));
}
