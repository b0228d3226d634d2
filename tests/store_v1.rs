//! A results database written by the previous release (schema v1, free-form layout JSON) opens,
//! migrates to v2, and reports the same figures the previous release printed for it.
//! The fixture and how it was made: tests/fixtures/lab-v1/README.md.

mod common;

use std::path::{Path, PathBuf};

use iolab::lab::Phase;
use iolab::sample::layout_record::Layer;
use iolab::store::Store;

const LAB: &str = "d699e4";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lab-v1")
        .join(name)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A copy of the v1 database in a fresh directory (the fixture itself is never opened).
fn v1_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("lab-v1.db");
    std::fs::copy(fixture("lab-v1.db"), &db).expect("copy the fixture");
    (dir, db)
}

fn user_version(db: &Path) -> i32 {
    let c = rusqlite::Connection::open(db).expect("open");
    c.pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("user_version")
}

/// iolab in `dir` on `db`, in UTC like the run that made the expected output.
fn iolab_in(dir: &Path, db: &Path, args: &[&str]) -> String {
    let o = common::Iolab::new()
        .db(db)
        .cwd(dir)
        .env("TZ", "UTC")
        .args(args)
        .run();
    o.success();
    o.stdout.clone()
}

/// Drops the one thing that differs between two reports of the same runs: when it was made.
fn without_made_time(s: &str) -> String {
    s.lines()
        .map(|l| match l.find("report made ") {
            Some(i) => format!("{}report made <time>{}", &l[..i], &l[i + 31..]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_v1_lab_database_migrates_and_compares_the_same() {
    let (dir, db) = v1_copy();
    assert_eq!(user_version(&db), 1, "the fixture is a v1 database");
    let text = iolab_in(dir.path(), &db, &["compare", "--lab", LAB]);
    assert_eq!(
        user_version(&db),
        iolab::store::schema::LATEST_VERSION,
        "opening migrated it"
    );
    assert_eq!(text, read(&fixture("compare.txt")));
    let json = iolab_in(
        dir.path(),
        &db,
        &["compare", "--lab", LAB, "--format", "json"],
    );
    let got: serde_json::Value = serde_json::from_str(&json).expect("compare json");
    let want: serde_json::Value =
        serde_json::from_str(&read(&fixture("compare.json"))).expect("fixture json");
    assert_eq!(got, want);
}

#[test]
fn a_v1_lab_database_reports_the_same() {
    let (dir, db) = v1_copy();
    for (file, format) in [("report.md", "md"), ("report.html", "html")] {
        iolab_in(
            dir.path(),
            &db,
            &["report", "--lab", LAB, "--format", format, "-o", file],
        );
        let got = read(&dir.path().join(file));
        assert!(got.contains("report made "), "{file}: the time was found");
        assert_eq!(
            without_made_time(&got),
            without_made_time(&read(&fixture(file))),
            "{file}"
        );
    }
}

#[test]
fn v1_layouts_become_typed_records() {
    let (_dir, db) = v1_copy();
    let store = Store::open(&db).expect("open and migrate");
    assert_eq!(
        store.schema_version().unwrap(),
        iolab::store::schema::LATEST_VERSION
    );
    let rec = |id: &str| store.run_layout(id).unwrap().expect("a layout");

    let healthy = rec("9364a808");
    assert_eq!(
        healthy.name.as_deref(),
        Some("btrfs-raid1-degraded-rebuild")
    );
    assert_eq!(healthy.phase, Some(Phase::Healthy));
    assert_eq!(healthy.capacity.usable_bytes, Some(474_808_320));
    assert_eq!(healthy.capacity.expected_usable_bytes, Some(512 << 20));
    assert!(matches!(&healthy.stack[0], Layer::Btrfs { data, members: 2, .. } if data == "raid1"));
    let rb = healthy.rebuild.as_ref().expect("rebuild");
    assert!(rb.seconds > 0.0 && rb.bytes == Some(62_062_592));
    assert_eq!(healthy.integrity.as_ref().unwrap().verdict, "verified");
    assert!(!healthy.lab_baseline && healthy.degraded_ratio.is_none());

    let degraded = rec("ab982806");
    assert_eq!(degraded.phase, Some(Phase::Degraded));
    assert_eq!(
        degraded.degraded_of.as_deref(),
        Some("btrfs-raid1-degraded-rebuild")
    );
    let ratio = degraded.degraded_ratio.expect("degraded ratio");
    assert!((ratio - 1.0975).abs() < 1e-3, "{ratio}");

    let base = rec("bd761ef3");
    assert!(base.lab_baseline);
    assert_eq!(base.stack[0], Layer::Disk);
    for r in [&healthy, &degraded, &base] {
        assert!(r.other.is_empty(), "every v1 key was mapped: {:?}", r.other);
        assert_eq!(r.lab.as_deref(), Some("lab-v1-fixture"));
    }
}
