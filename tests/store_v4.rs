//! The stored-record proof of the one stack model: a results database written by the iolab of before the
//! one-stack-model reshape (schema v4) — a host lab (btrfs raid1 degraded, rebuilt under load,
//! xfs as baseline, a `[decide]` table), a VM lab (md RAID5 + LVM + ext4, md RAID6 + spare, ZFS
//! raidz1), a power-cut lab and a plain `iolab run` — opens, migrates, reads back as typed
//! layout records, and renders every comparison, report and decision byte for byte as that
//! binary did. The fixture and how each file was made: tests/fixtures/lab-v4/README.md.
//!
//! Rendering needs no root, loop device or VM: these tests run everywhere CI runs.

mod common;

use std::path::{Path, PathBuf};

use iolab::sample::layout_record::Layer;
use iolab::store::Store;

/// The host lab: btrfs raid1 (degraded, during the rebuild, rebuilt), xfs-single, `[decide]`.
const HOST_LAB: &str = "97c38f";
/// The VM lab: md RAID5 + LVM + ext4, md RAID6 + spare, ZFS raidz1.
const VM_LAB: &str = "6202c8";
/// The power-cut lab: md RAID5 cut twice.
const POWER_LAB: &str = "4f354f";
/// The plain `iolab run` on a directory.
const PLAIN_RUN: &str = "811da9fc";

/// Every stack the fixture stores, its layers from the disks up ([`kind`]).
const KINDS: &[&str] = &[
    "btrfs raid1 x2 > fs btrfs",
    "disk > fs xfs",
    "md raid5 x3 chunk 262144 bitmap internal > lvm > fs ext4",
    "md raid5 x4 > fs ext4",
    "md raid6 x5 +spare > fs xfs",
    "zfs raidz1 x3",
];
/// How many layout records the fixture holds; of them rebuilt, verified, power-cut, carrying
/// a `[decide]` table, built in the VM, and lab baselines.
const COUNTS: (usize, usize, usize, usize, usize, usize, usize) = (12, 9, 11, 2, 4, 8, 1);

/// The schema version the fixture was written at.
const FIXTURE_VERSION: i32 = 4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lab-v4")
        .join(name)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A copy of the v4 database in a fresh directory (the fixture itself is never opened).
fn v4_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("lab-v4.db");
    std::fs::copy(fixture("lab-v4.db"), &db).expect("copy the fixture");
    (dir, db)
}

fn user_version(db: &Path) -> i32 {
    let c = rusqlite::Connection::open(db).expect("open");
    c.pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("user_version")
}

/// Drops the one thing that differs between two renderings of the same stored runs: when the
/// report was made (`report made 2026-11-27 12:00:00`, Markdown and HTML).
fn without_made_time(s: &str) -> String {
    const MADE: &str = "report made ";
    const TIME: usize = "2026-11-27 12:00:00".len();
    s.split_inclusive('\n')
        .map(|l| match l.find(MADE) {
            Some(i) => format!(
                "{}{MADE}<time>{}",
                &l[..i],
                &l[(i + MADE.len() + TIME).min(l.len())..]
            ),
            None => l.to_string(),
        })
        .collect()
}

/// What one golden file is: its name in the fixture directory and the iolab arguments that
/// render it (`-o NAME` writes the file, else it is stdout).
type Golden = (&'static str, &'static [&'static str]);

/// Renders each of `golden` with the binary under test on a copy of the fixture, in UTC like
/// the run that made the files, and fails listing every file that differs (with its first
/// differing line).
fn renders_as_before(golden: &[Golden]) {
    let (dir, db) = v4_copy();
    let mut bad = Vec::new();
    for (file, args) in golden {
        let o = common::Iolab::new()
            .db(&db)
            .cwd(dir.path())
            .env("TZ", "UTC")
            .args(*args)
            .run();
        o.success();
        let got = if args.contains(&"-o") {
            read(&dir.path().join(file))
        } else {
            o.stdout.clone()
        };
        let want = read(&fixture(file));
        let (got, want) = (without_made_time(&got), without_made_time(&want));
        if let Some(stem) = file.strip_suffix(".md") {
            bad.extend(charts_differ(
                &dir.path().join(format!("{stem}-charts")),
                stem,
            ));
        }
        if got != want {
            let first = got
                .lines()
                .zip(want.lines())
                .enumerate()
                .find(|(_, (g, w))| g != w)
                .map_or_else(
                    || {
                        format!(
                            "lengths differ: {} vs {} lines",
                            got.lines().count(),
                            want.lines().count()
                        )
                    },
                    |(n, (g, w))| format!("line {}:\n  got:  {g}\n  want: {w}", n + 1),
                );
            bad.push(format!("{file} (iolab {}): {first}", args.join(" ")));
        }
    }
    assert!(bad.is_empty(), "rendered differently:\n{}", bad.join("\n"));
}

/// The names of the charts a Markdown report `stem.md` wrote into `dir` that differ from the
/// fixture's `stem-charts/` (a missing or extra chart included).
fn charts_differ(dir: &Path, stem: &str) -> Vec<String> {
    let names = |d: &Path| -> std::collections::BTreeSet<String> {
        std::fs::read_dir(d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    };
    let want_dir = fixture(&format!("{stem}-charts"));
    let (got, want) = (names(dir), names(&want_dir));
    let mut bad: Vec<String> = got
        .symmetric_difference(&want)
        .map(|n| format!("{stem}-charts/{n}: only in one of the two"))
        .collect();
    for n in got.intersection(&want) {
        if read(&dir.join(n)) != read(&want_dir.join(n)) {
            bad.push(format!("{stem}-charts/{n}: differs"));
        }
    }
    bad
}

/// The host lab's comparison, report and decision render as before.
#[test]
fn a_v4_host_lab_compares_reports_and_decides_the_same() {
    renders_as_before(&[
        ("host-compare.txt", &["compare", "--lab", HOST_LAB]),
        (
            "host-compare.json",
            &["compare", "--lab", HOST_LAB, "--format", "json"],
        ),
        (
            "host-report.md",
            &[
                "report",
                "--lab",
                HOST_LAB,
                "--format",
                "md",
                "-o",
                "host-report.md",
            ],
        ),
        (
            "host-report.html",
            &["report", "--lab", HOST_LAB, "-o", "host-report.html"],
        ),
        ("host-decide.txt", &["decide", HOST_LAB]),
        (
            "host-decide.json",
            &["decide", HOST_LAB, "--format", "json"],
        ),
    ]);
}

/// The VM lab (md, LVM, ZFS) compares and reports as before.
#[test]
fn a_v4_vm_lab_compares_and_reports_the_same() {
    renders_as_before(&[
        ("vm-compare.txt", &["compare", "--lab", VM_LAB]),
        (
            "vm-compare.json",
            &["compare", "--lab", VM_LAB, "--format", "json"],
        ),
        (
            "vm-report.md",
            &[
                "report",
                "--lab",
                VM_LAB,
                "--format",
                "md",
                "-o",
                "vm-report.md",
            ],
        ),
        (
            "vm-report.html",
            &["report", "--lab", VM_LAB, "-o", "vm-report.html"],
        ),
    ]);
}

/// The power-cut lab compares and reports as before.
#[test]
fn a_v4_power_cut_lab_compares_and_reports_the_same() {
    renders_as_before(&[
        ("powercut-compare.txt", &["compare", "--lab", POWER_LAB]),
        (
            "powercut-compare.json",
            &["compare", "--lab", POWER_LAB, "--format", "json"],
        ),
        (
            "powercut-report.md",
            &[
                "report",
                "--lab",
                POWER_LAB,
                "--format",
                "md",
                "-o",
                "powercut-report.md",
            ],
        ),
        (
            "powercut-report.html",
            &["report", "--lab", POWER_LAB, "-o", "powercut-report.html"],
        ),
    ]);
}

/// A plain `iolab run` (no layout record) reports as before.
#[test]
fn a_v4_plain_run_reports_the_same() {
    renders_as_before(&[
        (
            "run-report.md",
            &["report", PLAIN_RUN, "--format", "md", "-o", "run-report.md"],
        ),
        (
            "run-report.html",
            &["report", PLAIN_RUN, "-o", "run-report.html"],
        ),
    ]);
}

/// Ids of every run of the copy that has a layout record.
fn runs_with_layouts(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).expect("open");
    let mut q = c
        .prepare("SELECT id FROM runs WHERE layout IS NOT NULL ORDER BY id")
        .expect("prepare");
    q.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("ids")
}

/// Short name of a layer, for the coverage check.
fn kind(l: &Layer) -> String {
    match l {
        Layer::Disk => "disk".into(),
        Layer::Md {
            level,
            members,
            spares,
            chunk_bytes,
            bitmap,
            ..
        } => format!(
            "md {level} x{members}{}{}{}",
            if *spares > 0 { " +spare" } else { "" },
            chunk_bytes.map_or(String::new(), |c| format!(" chunk {c}")),
            bitmap
                .as_deref()
                .map_or(String::new(), |b| format!(" bitmap {b}")),
        ),
        Layer::Btrfs { data, members, .. } => format!("btrfs {data} x{members}"),
        Layer::Lvm => "lvm".into(),
        Layer::Cache { kind, mode, .. } => format!("cache {kind} {mode}"),
        Layer::Fs { fs, .. } => format!("fs {fs}"),
        Layer::Zfs { vdev, width, .. } => format!("zfs {vdev} x{width}"),
        Layer::Member { kind, .. } => format!("under each member {kind}"),
        Layer::Unknown => "unknown".into(),
    }
}

/// Opening the v4 database brings it to the latest schema, and every stored layout
/// record reads back typed: its layers known (no `Unknown`), no key left over in `other`, and
/// together they cover every layer kind, phase and verdict today's iolab stores.
#[test]
fn every_v4_layout_record_reads_back_typed() {
    let (_dir, db) = v4_copy();
    assert_eq!(
        user_version(&db),
        FIXTURE_VERSION,
        "the fixture is a v4 database"
    );
    let store = Store::open(&db).expect("open and migrate");
    assert_eq!(
        store.schema_version().unwrap(),
        iolab::store::schema::LATEST_VERSION
    );
    let ids = runs_with_layouts(&db);
    let mut kinds = std::collections::BTreeSet::new();
    let mut phases = std::collections::BTreeSet::new();
    let (mut rebuilt, mut verified, mut cut, mut decide, mut vm, mut baseline) = (0, 0, 0, 0, 0, 0);
    for id in &ids {
        let r = store
            .run_layout(id)
            .unwrap_or_else(|e| panic!("run {id}: {e}"))
            .unwrap_or_else(|| panic!("run {id}: no layout"));
        assert!(!r.stack.is_empty(), "run {id}: no layers: {r:?}");
        assert!(
            !r.stack.contains(&Layer::Unknown),
            "run {id}: a layer was not read: {:?}",
            r.stack
        );
        assert!(
            r.other.is_empty(),
            "run {id}: keys left over: {:?}",
            r.other
        );
        let lab = r
            .lab
            .as_deref()
            .unwrap_or_else(|| panic!("run {id}: no lab"));
        assert!(lab.starts_with("lab-v4-"), "run {id}: lab {lab}");
        kinds.insert(r.stack.iter().map(kind).collect::<Vec<_>>().join(" > "));
        phases.insert(format!("{:?}", r.phase.expect("a phase")));
        rebuilt += usize::from(r.rebuild.as_ref().is_some_and(|b| b.seconds > 0.0));
        verified += usize::from(
            r.integrity
                .as_ref()
                .is_some_and(|i| i.verdict == "verified"),
        );
        cut += usize::from(r.power.as_ref().is_some_and(|p| !p.cuts.is_empty()));
        decide += usize::from(r.decide.is_some());
        vm += usize::from(
            r.environment
                .as_deref()
                .is_some_and(|e| e.starts_with("vm")),
        );
        baseline += usize::from(r.lab_baseline);
    }
    let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
    assert_eq!(kinds, KINDS, "the layer kinds stored");
    assert_eq!(
        phases.into_iter().collect::<Vec<_>>(),
        ["Degraded", "Healthy", "Rebuilding"]
    );
    assert_eq!(
        (ids.len(), rebuilt, verified, cut, decide, vm, baseline),
        COUNTS,
        "(layout records, rebuilt, verified, power-cut, with [decide], in the VM, baselines)"
    );
}
